// The register block of chapter 3 written in plain C, for an MR×NR tile
// that the including file names first:
//
//     enum { MR = 4, NR = 8 };
//     #include "simd_block.h"
//
// common/loops/simd_scalar.c builds it for the baseline instruction set, and
// stages/03_simd/autovec_*.c build the very same code with each ISA's flags,
// to see what the compiler's auto-vectorizer makes of it. The tile size is a
// compile-time constant on purpose: only then can the compiler unroll the i
// and j loops and keep the block of C in registers.
#ifndef SIMD_BLOCK_H
#define SIMD_BLOCK_H

#include <stddef.h>

#include "naive.h"

static int min(int a, int b)
{
    return a < b ? a : b;
}

// One full MR×NR block of C. The bounds are constants, so the compiler can
// unroll the i and j loops and keep c[][] in registers.
// listing: tile_scalar
static void full_tile(int k, const float *A, int lda, const float *B, int ldb, float *C,
                      int ldc)
{
    float c[MR][NR] = {{0.0f}};
    for (int p = 0; p < k; p++) {
        const float *b = B + (size_t)p * ldb;
        for (int i = 0; i < MR; i++) {
            float a = A[(size_t)i * lda + p];
            for (int j = 0; j < NR; j++)
                c[i][j] += a * b[j];
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++)
            C[(size_t)i * ldc + j] = c[i][j];
}
// end listing

// A smaller block at the right or bottom edge: plain dot products, the
// naive loops of chapter 1 on the mr×nr block.
static void edge_tile(int mr, int nr, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc)
{
    matmul_ijk(mr, nr, k, A, lda, B, ldb, C, ldc);
}

// C = A·B tile by tile: full tiles in registers, the ragged edges plainly.
static void block_matmul(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                         float *C, int ldc)
{
    for (int j0 = 0; j0 < n; j0 += NR)
        for (int i0 = 0; i0 < m; i0 += MR) {
            const float *a = A + (size_t)i0 * lda;
            float *c = C + (size_t)i0 * ldc + j0;
            if (m - i0 >= MR && n - j0 >= NR)
                full_tile(k, a, lda, B + j0, ldb, c, ldc);
            else
                edge_tile(min(MR, m - i0), min(NR, n - j0), k, a, lda, B + j0, ldb, c, ldc);
        }
}

#endif
