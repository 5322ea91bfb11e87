#ifndef SIMD_H
#define SIMD_H

#include "cpu.h"

// Chapter 3: register blocking with SIMD. Each kernel keeps an MR×NR block
// of C in vector registers while it runs down the whole k dimension, reading
// A and B straight from the matrices (no packing yet: that is chapter 4).
// A is m×k (lda ≥ k), B is k×n (ldb ≥ n), C is m×n (ldc ≥ n), all row-major.
// C is overwritten.

// The kernel below of a given ISA, one this build holds (isa_supported):
// the program's (the widest this CPU runs, unless --isa forced another),
// which its context carries (the GEMM backend "simd" passes its context's).
typedef void matmul_simd_fn(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                            float *C, int ldc);
matmul_simd_fn *matmul_simd_for(enum isa isa);

// One per instruction set. Each is defined only where it compiles: the
// AVX ones on x86-64, the NEON ones on AArch64, the scalar one everywhere.
// Call an x86 one only when isa_supported() says this CPU has its ISA.
void matmul_simd_scalar(int m, int n, int k, const float *A, int lda, const float *B,
                        int ldb, float *C, int ldc);  // 4×8, plain C
void matmul_simd_avx2(int m, int n, int k, const float *A, int lda, const float *B,
                      int ldb, float *C, int ldc);  // 6×16, AVX2 + FMA
void matmul_simd_avx512(int m, int n, int k, const float *A, int lda, const float *B,
                        int ldb, float *C, int ldc);  // 14×32, AVX-512F
void matmul_simd_neon(int m, int n, int k, const float *A, int lda, const float *B,
                      int ldb, float *C, int ldc);  // 8×12, NEON

#endif
