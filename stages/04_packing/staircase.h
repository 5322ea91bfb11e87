// staircase.h: chapter 4's staircase, the packed GEMM built one step at a
// time so that each gain has a measured cause. Each step computes C = A·B
// (m×n = m×k · k×n, row-major, no transposes) with the blocking of the
// context it is handed, whose micro-kernel steps 3 and 4 run.
//   step 1  the five loops over A and B where they lie, a plain loop inside
//   step 2  the same loops and plain loop, on packed A and B
//   step 3  the ISA's SIMD register micro-kernel, without the prefetch of C
//   step 4  gemm_packed() itself: with the prefetch of C (AVX-512 only)
#ifndef STAIRCASE_H
#define STAIRCASE_H

#include "gemm_parts.h"

void stair_blocked(const struct gemm_context *ctx, int m, int n, int k, const float *A, int lda,
                   const float *B, int ldb, float *C, int ldc);
void stair_packed_loops(const struct gemm_context *ctx, int m, int n, int k, const float *A,
                        int lda, const float *B, int ldb, float *C, int ldc);
void stair_simd_no_prefetch(const struct gemm_context *ctx, int m, int n, int k, const float *A,
                            int lda, const float *B, int ldb, float *C, int ldc);

#endif
