#ifndef BLAS_H
#define BLAS_H

#include "cpu.h"

// OpenBLAS, the peer we measure ourselves against. It is never called from
// our own kernels: only the benchmarks and tests use it.

// C = A·B, row-major; A is m×k (lda ≥ k), B is k×n (ldb ≥ n), C is m×n (ldc ≥ n).
void blas_sgemm(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc);
// The full row-major SGEMM: C = alpha·op(A)·op(B) + beta·C, op(X) = Xᵀ when
// transX is 1 (the same arguments as gemm() in gemm.h).
void blas_gemm(int transa, int transb, int m, int n, int k, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc);
void blas_set_threads(int threads);

// What OpenBLAS says of itself: its build configuration, the name of the
// kernel set it chose for this CPU ("Cooperlake", "Haswell", ...), and the
// ISA those kernels use.
const char *blas_config(void);
const char *blas_core(void);
enum isa blas_isa(void);

#endif
