// The register block of simd_neon.c (8×12) written in plain C, as in
// simd_scalar.c, and built with the AArch64 defaults (NEON is always there) at -O3: the compiler has to find the
// vectors, the broadcasts and the FMAs by itself. Compare the two in the
// benchmark.
// simd.h sits outside the guard so the file is never an empty translation unit.
#include "autovec.h"

#if defined(__aarch64__)

#include <stddef.h>

enum { MR = 8, NR = 12 };

static int min(int a, int b)
{
    return a < b ? a : b;
}

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

static void edge_tile(int mr, int nr, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc)
{
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float sum = 0.0f;
            for (int p = 0; p < k; p++)
                sum += A[(size_t)i * lda + p] * B[(size_t)p * ldb + j];
            C[(size_t)i * ldc + j] = sum;
        }
}

void matmul_auto_neon(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
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
