// The NEON kernel (AArch64): an 8×12 block of C in 24 q registers.
//
// Why 8×12: AArch64 has 32 128-bit registers of 4 floats. 8 rows of three
// vectors give 24 accumulators (enough to hide the FMA latency on two or
// more pipes), plus 3 for a row of B and 1 for a broadcast of A: 28 of 32.
// simd.h sits outside the guard so the file is never an empty translation unit.
#include "simd.h"

#if defined(__aarch64__)

#include <arm_neon.h>
#include <stddef.h>

enum { MR = 8, NR = 12, V = NR / 4 };

static int min(int a, int b)
{
    return a < b ? a : b;
}

// C[0..mr)[0..nr) = A[0..mr)[0..k) · B[0..k)[0..nr), with mr ≤ MR, nr ≤ NR.
// NEON has no masked loads or stores: a block narrower than NR copies each
// row of B into a zero-padded buffer, and stores C through one. Rows past mr
// re-read row mr-1 of A, so the loops keep their constant bounds; those
// rows' results are not stored. Full blocks take neither detour.
// listing: tile_neon
static void tile(int mr, int nr, int k, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc)
{
    const float *a[MR];
    for (int i = 0; i < MR; i++)
        a[i] = A + (size_t)min(i, mr - 1) * lda;

    float32x4_t c[MR][V];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < V; v++)
            c[i][v] = vdupq_n_f32(0.0f);
    float row[NR] = {0.0f};
    for (int p = 0; p < k; p++) {
        const float *b = B + (size_t)p * ldb;
        if (nr < NR) {
            for (int j = 0; j < nr; j++)
                row[j] = b[j];
            b = row;
        }
        float32x4_t bv[V];
        for (int v = 0; v < V; v++)
            bv[v] = vld1q_f32(b + 4 * v);
        for (int i = 0; i < MR; i++)
            for (int v = 0; v < V; v++)
                c[i][v] = vfmaq_n_f32(c[i][v], bv[v], a[i][p]);
    }
    // The constant bound (with the break) keeps c[][] in registers.
    for (int i = 0; i < MR; i++) {
        if (i >= mr)
            break;
        float *dst = nr < NR ? row : C + (size_t)i * ldc;
        for (int v = 0; v < V; v++)
            vst1q_f32(dst + 4 * v, c[i][v]);
        if (nr < NR)
            for (int j = 0; j < nr; j++)
                C[(size_t)i * ldc + j] = row[j];
    }
}
// end listing

void matmul_simd_neon(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc)
{
    // A k×NR strip of B is read once per block of rows: going down the rows
    // with the strip fixed gives it a chance to stay in the cache.
    for (int j0 = 0; j0 < n; j0 += NR)
        for (int i0 = 0; i0 < m; i0 += MR)
            tile(min(MR, m - i0), min(NR, n - j0), k, A + (size_t)i0 * lda, lda, B + j0, ldb,
                 C + (size_t)i0 * ldc + j0, ldc);
}

#endif
