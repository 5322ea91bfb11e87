#ifndef AUTOVEC_H
#define AUTOVEC_H

// Chapter 3's comparison: the register-blocked kernels of common/loops/simd*.c
// written in plain C. A is m×k (lda ≥ k), B is k×n (ldb ≥ n), C is m×n.
// The same register blocks written in plain C and built with each ISA's
// flags at -O3: what the compiler's auto-vectorizer makes of them.
void matmul_auto_avx2(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc);
void matmul_auto_avx512(int m, int n, int k, const float *A, int lda, const float *B,
                        int ldb, float *C, int ldc);
void matmul_auto_neon(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc);

#endif
