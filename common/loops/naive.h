#ifndef NAIVE_H
#define NAIVE_H

// Chapter 1: C = A·B with three loops, in each of the six possible orders.
// A is m×k (lda ≥ k), B is k×n (ldb ≥ n), C is m×n (ldc ≥ n), all row-major.
void matmul_ijk(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc);
void matmul_ikj(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc);
void matmul_jik(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc);
void matmul_jki(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc);
void matmul_kij(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc);
void matmul_kji(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc);

#endif
