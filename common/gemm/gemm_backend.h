#ifndef GEMM_BACKEND_H
#define GEMM_BACKEND_H

#include "gemm.h"

// Every matrix multiply of the book behind one interface, so a program (the
// training chapters' networks, a benchmark) can be run on any of them:
//   naive     the i-p-j loops of chapter 1         (common/loops/naive.c)
//   tiled     cache blocking, chapter 2            (common/loops/tiled.c)
//   simd      unpacked SIMD register blocks, ch. 3 (common/loops/simd*.c)
//   packed    the five loops on one thread, ch. 4  (common/gemm/gemm_packed.c)
//   parallel  the five loops on all threads, ch. 5 (common/gemm/gemm_parallel.c)
//   auto      gemm(): picks a path and threads from the shape (common/gemm/gemm.c)
//   openblas  the peer we measure against
// Each computes C = alpha·op(A)·op(B) + beta·C with the arguments of gemm(),
// in the context it is handed (the backends of our kernels take their
// micro-kernel, blocking and Strassen rule from it, simd its ISA; naive,
// tiled and OpenBLAS have nothing to take). It returns 0, or -1 when it
// could not get the memory it needed.
typedef int gemm_backend_fn(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb,
                            int m, int n, int k, float alpha, const float *A, int lda,
                            const float *B, int ldb, float beta, float *C, int ldc);

struct gemm_backend {
    const char *name;
    const char *about;
    gemm_backend_fn *run;
    int openmp;  // 1: runs on OpenMP's threads (auto, parallel), which the
                 // step's other passes can share; 0: on one thread, or on
                 // threads of its own (OpenBLAS's pthreads, which OpenMP's
                 // threads spinning after a region of ours keep off the cores)
};

// The backend called name, or NULL.
const struct gemm_backend *gemm_backend_find(const char *name);
// All of them, "auto" first, for listing in a usage message.
const struct gemm_backend *gemm_backend_all(int *count);
// Their names and their lines, in the same order, each list NULL-terminated
// (a flag's choices: gemm_flags.h).
const char *const *gemm_backend_names(void);
const char *const *gemm_backend_abouts(void);

#endif
