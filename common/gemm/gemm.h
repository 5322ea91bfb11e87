// gemm.h: single-precision matrix multiply, C = alpha·op(A)·op(B) + beta·C.
//
// All matrices are row-major with explicit leading dimensions. op(X) is X or
// its transpose. op(A) is m×k, op(B) is k×n, C is m×n:
//   A is m×k (lda ≥ k) when not transposed, k×m (lda ≥ m) when transposed;
//   B is k×n (ldb ≥ n) when not transposed, n×k (ldb ≥ k) when transposed;
//   C is m×n, ldc ≥ n.
// When beta is 0, C is only written, so it may hold anything (even NaN).
//
// Results do not depend on the number of threads: every element of C is
// summed by one thread, over k, in one fixed order.
#ifndef GEMM_H
#define GEMM_H

#include "gemm_parts.h"

// Front door: picks a small-matrix path or the packed path, and how many
// threads to use, from the shape alone.
void gemm(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
          float alpha, const float *A, int lda, const float *B, int ldb,
          float beta, float *C, int ldc);

// The Goto/BLIS five loops on one thread.
void gemm_packed(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                 float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc);

// The five loops shared by omp_get_max_threads() OpenMP threads.
void gemm_parallel(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                   float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc);

// The same, with an explicit thread count (gemm() uses it to give small
// problems fewer threads than omp_get_max_threads()).
void gemm_parallel_threads(int threads, enum gemm_trans ta, enum gemm_trans tb,
                           int m, int n, int k, float alpha, const float *A,
                           int lda, const float *B, int ldb, float beta,
                           float *C, int ldc);

// Path for small or skinny problems, where packing op(A) would cost more than
// it saves: op(A) is read in place, and op(B) too unless it is transposed
// (then it is packed whole).
void gemm_small(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                float alpha, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc);
void gemm_small_threads(int threads, enum gemm_trans ta, enum gemm_trans tb,
                        int m, int n, int k, float alpha, const float *A,
                        int lda, const float *B, int ldb, float beta, float *C,
                        int ldc);

#endif
