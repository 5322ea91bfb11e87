#ifndef MACHINE_H
#define MACHINE_H

#include <stdio.h>

// Writes the `#` lines that describe this machine and this build at the top of
// a results file: CPU, cores, measured clock and peak per ISA and thread
// count (1 and `threads`), caches, compiler and flags, OpenBLAS's
// configuration and core, the ISA the kernels run on, the date.
void machine_write(FILE *f, const char *stage, int threads);

#endif
