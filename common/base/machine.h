#ifndef MACHINE_H
#define MACHINE_H

#include <stdio.h>

#include "cpu.h"
#include "environment.h"

// Writes the `#` lines that describe this machine and this build at the top of
// a results file: the machine in one line (`# machine:`), then CPU (model
// string and family/model), cores, the ISAs it runs, measured clock and peak
// per ISA and thread count (every count up to the cores, and `threads` when
// it is more), caches, compiler and flags, OpenBLAS's
// configuration and core and the OPENBLAS_* variables env holds (NULL:
// none), isa (the ISA the caller's kernels run on: its context's), the
// commit measured and the run id (env's run_commit and run_id), the date.
void machine_write(FILE *f, const char *stage, int threads, enum isa isa,
                   const struct environment *env);

// Opens a results file (path "-": standard output) and writes the machine
// lines, unless append finds the file already started; *fresh (when not
// NULL) says whether they were written, so whether the caller writes its
// header row. NULL after printing the problem. results_close returns
// status, or 1 when writing failed.
FILE *results_open(const char *path, const char *stage, int threads, enum isa isa,
                   const struct environment *env, int append, int *fresh);
int results_close(FILE *f, const char *path, int status);

#endif
