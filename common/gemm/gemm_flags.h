#ifndef GEMM_FLAGS_H
#define GEMM_FLAGS_H

#include "flags.h"

// The GEMM's flags, for the programs (drivers) that read them; the library
// takes a backend (gemm_backend.h), never a flag.
//
// --gemm NAME: *index becomes the backend's index in gemm_backend_all()
// (0, auto, when not given). --gemm A,B for the benchmarks: the indices of
// those named, in order.
struct flag gemm_backend_flag(int *index);
struct flag gemm_backends_flag(struct flag_list *list);

#endif
