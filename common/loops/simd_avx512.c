// The AVX-512 kernel: a 14×32 block of C in 28 zmm registers.
//
// Why 14×32: an FMA takes 4 cycles and two can start each cycle, so at
// least 8 independent accumulators must be in flight to keep both pipes
// busy. 32 columns are two 16-lane vectors; 14 rows of two vectors give 28
// accumulators, and the two vectors of B plus one broadcast of A make 31 of
// the 32 zmm registers. Per step of p: 2 loads of B and 14 broadcasts of A
// feed 28 FMAs, few enough loads for the load ports to keep up.
// simd.h sits outside the guard so the file is never an empty translation unit.
#include "simd.h"

#if defined(__x86_64__)

#include <immintrin.h>
#include <stddef.h>

enum { MR = 14, NR = 32 };

static int min(int a, int b)
{
    return a < b ? a : b;
}

// One full MR×NR block: C[0..MR)[0..NR) = A[0..MR)[0..k) · B[0..k)[0..NR).
// The loops over i have constant bounds: the compiler unrolls them and keeps
// c[][] in registers.
// listing: full_tile_avx512
static void full_tile(int k, const float *A, int lda, const float *B, int ldb, float *C,
                      int ldc)
{
    __m512 c[MR][2];
    for (int i = 0; i < MR; i++) {
        c[i][0] = _mm512_setzero_ps();
        c[i][1] = _mm512_setzero_ps();
    }
    // BEGIN SOLUTION task 3.2: for each p, load row p of B (two vectors), then per row i broadcast A[i][p] and FMA
    // stub: (void)k, (void)A, (void)lda, (void)B, (void)ldb;
    for (int p = 0; p < k; p++) {
        const float *b = B + (size_t)p * ldb;
        __m512 b0 = _mm512_loadu_ps(b);
        __m512 b1 = _mm512_loadu_ps(b + 16);
        for (int i = 0; i < MR; i++) {
            __m512 a = _mm512_set1_ps(A[(size_t)i * lda + p]);
            c[i][0] = _mm512_fmadd_ps(a, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(a, b1, c[i][1]);
        }
    }
    // END SOLUTION
    for (int i = 0; i < MR; i++) {
        _mm512_storeu_ps(C + (size_t)i * ldc, c[i][0]);
        _mm512_storeu_ps(C + (size_t)i * ldc + 16, c[i][1]);
    }
}
// end listing

// A block at the right or bottom edge: mr ≤ MR rows, nr ≤ NR columns.
// Masks keep the loads of B and the stores of C inside the nr columns (a
// masked-off lane is neither read nor written, so it cannot fault). Rows
// past mr re-read row mr-1 of A, so the loops keep their constant bounds;
// those rows' results are never stored. Masked loads are slower than plain
// ones on some CPUs (Zen 5 among them), so full blocks do without.
// listing: edge_tile_avx512
static void edge_tile(int mr, int nr, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc)
{
    const float *a[MR];
    for (int i = 0; i < MR; i++)
        a[i] = A + (size_t)min(i, mr - 1) * lda;
    __m512 c[MR][2];
    for (int i = 0; i < MR; i++) {
        c[i][0] = _mm512_setzero_ps();
        c[i][1] = _mm512_setzero_ps();
    }
    // BEGIN SOLUTION task 3.3: masks for the nr columns, then the full tile's loop with masked loads of B and masked stores of the first mr rows
    // stub: (void)mr, (void)nr, (void)k, (void)a, (void)B, (void)ldb, (void)C, (void)ldc, (void)c;
    __mmask16 mask0 = (__mmask16)(nr >= 16 ? 0xFFFF : (1u << nr) - 1);
    __mmask16 mask1 = (__mmask16)(nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (1u << (nr - 16)) - 1);
    for (int p = 0; p < k; p++) {
        const float *b = B + (size_t)p * ldb;
        __m512 b0 = _mm512_maskz_loadu_ps(mask0, b);
        __m512 b1 = _mm512_maskz_loadu_ps(mask1, b + 16);
        for (int i = 0; i < MR; i++) {
            __m512 ai = _mm512_set1_ps(a[i][p]);
            c[i][0] = _mm512_fmadd_ps(ai, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(ai, b1, c[i][1]);
        }
    }
    // The constant bound (with the break) lets the compiler unroll this loop
    // like the others, so c[][] can stay in registers.
    for (int i = 0; i < MR; i++) {
        if (i >= mr)
            break;
        _mm512_mask_storeu_ps(C + (size_t)i * ldc, mask0, c[i][0]);
        _mm512_mask_storeu_ps(C + (size_t)i * ldc + 16, mask1, c[i][1]);
    }
    // END SOLUTION
}
// end listing

// listing: loops_avx512
void matmul_simd_avx512(int m, int n, int k, const float *A, int lda, const float *B,
                        int ldb, float *C, int ldc)
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
// end listing

#endif
