// The AVX2 kernel: a 6×16 block of C in 12 ymm registers.
//
// Why 6×16: an FMA takes 4 cycles and two can start each cycle, so at least
// 8 independent accumulators must be in flight. AVX2 has only 16 ymm
// registers: 6 rows of two 8-lane vectors give 12 accumulators, and the two
// vectors of B plus one broadcast of A make 15. (8×16 would need 19.)
// simd.h sits outside the guard so the file is never an empty translation unit.
#include "simd.h"

#if defined(__x86_64__)

#include <immintrin.h>
#include <stddef.h>

enum { MR = 6, NR = 16 };

static int min(int a, int b)
{
    return a < b ? a : b;
}

// One full MR×NR block: C[0..MR)[0..NR) = A[0..MR)[0..k) · B[0..k)[0..NR).
// listing: full_tile_avx2
static void full_tile(int k, const float *A, int lda, const float *B, int ldb, float *C,
                      int ldc)
{
    __m256 c[MR][2];
    for (int i = 0; i < MR; i++) {
        c[i][0] = _mm256_setzero_ps();
        c[i][1] = _mm256_setzero_ps();
    }
    // BEGIN SOLUTION task 3.1: for each p, load row p of B (two vectors), then per row i broadcast A[i][p] and FMA
    // stub: (void)k, (void)A, (void)lda, (void)B, (void)ldb;
    for (int p = 0; p < k; p++) {
        const float *b = B + (size_t)p * ldb;
        __m256 b0 = _mm256_loadu_ps(b);
        __m256 b1 = _mm256_loadu_ps(b + 8);
        for (int i = 0; i < MR; i++) {
            __m256 a = _mm256_set1_ps(A[(size_t)i * lda + p]);
            c[i][0] = _mm256_fmadd_ps(a, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(a, b1, c[i][1]);
        }
    }
    // END SOLUTION
    for (int i = 0; i < MR; i++) {
        _mm256_storeu_ps(C + (size_t)i * ldc, c[i][0]);
        _mm256_storeu_ps(C + (size_t)i * ldc + 8, c[i][1]);
    }
}
// end listing

// Lane j of the mask is on (all ones) when j < count.
static __m256i first_lanes(int count)
{
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), lane);
}

// A block at the right or bottom edge: mr ≤ MR rows, nr ≤ NR columns.
// Masked loads and stores stay inside the nr columns; rows past mr re-read
// row mr-1 of A (their results are not stored), so the loops keep their
// constant bounds.
// listing: edge_tile_avx2
static void edge_tile(int mr, int nr, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc)
{
    __m256i mask0 = first_lanes(nr), mask1 = first_lanes(nr - 8);
    const float *a[MR];
    for (int i = 0; i < MR; i++)
        a[i] = A + (size_t)min(i, mr - 1) * lda;

    __m256 c[MR][2];
    for (int i = 0; i < MR; i++) {
        c[i][0] = _mm256_setzero_ps();
        c[i][1] = _mm256_setzero_ps();
    }
    for (int p = 0; p < k; p++) {
        const float *b = B + (size_t)p * ldb;
        __m256 b0 = _mm256_maskload_ps(b, mask0);
        __m256 b1 = _mm256_maskload_ps(b + 8, mask1);
        for (int i = 0; i < MR; i++) {
            __m256 ai = _mm256_set1_ps(a[i][p]);
            c[i][0] = _mm256_fmadd_ps(ai, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(ai, b1, c[i][1]);
        }
    }
    // The constant bound (with the break) lets the compiler unroll this loop
    // like the others, so c[][] can stay in registers.
    for (int i = 0; i < MR; i++) {
        if (i >= mr)
            break;
        _mm256_maskstore_ps(C + (size_t)i * ldc, mask0, c[i][0]);
        _mm256_maskstore_ps(C + (size_t)i * ldc + 8, mask1, c[i][1]);
    }
}
// end listing

void matmul_simd_avx2(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc)
{
    // A k×NR strip of B is read once per block of rows: going down the rows
    // with the strip fixed gives it a chance to stay in the cache.
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
