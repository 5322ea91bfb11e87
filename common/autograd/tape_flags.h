#ifndef TAPE_FLAGS_H
#define TAPE_FLAGS_H

#include "flags.h"

// The tape's flags, for the programs (drivers) that read them; the library
// takes a struct tape_config (tape.h), never a flag.
//
// --memory arena|planned: *mode becomes an enum memory_mode (the default
// when not given). --memory A,B for the benchmarks: the modes named, in order.
struct flag tape_memory_flag(int *mode);
struct flag tape_memories_flag(struct flag_list *modes);

#endif
