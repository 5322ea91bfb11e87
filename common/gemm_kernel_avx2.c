// gemm_kernel_avx2.c: AVX2 micro-kernel, 6×16. Build with -mavx2 -mfma.
//
// Why 6×16: two FMA pipes × about 4 cycles of latency need at least 8
// independent accumulators. AVX2 has 16 ymm registers: a 6×16 block of C is
// 6 rows × 2 vectors = 12 accumulators, plus 2 for a row of B and 1 for the
// broadcast of an element of A, 15 in all. 8×16 or 4×24 would need 16 or
// more and spill.

// gemm.h sits outside the guard so the file is never an empty translation unit.
#include "gemm.h"

#if defined(__x86_64__)

#include <immintrin.h>

// All-ones lanes for columns j < n of one 8-float vector (n may be ≤ 0 or > 8).
static __m256i column_mask(int n)
{
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
}

// listing: microkernel_avx2
void gemm_kernel_avx2(int m, int n, int kc, const float *a, const float *b,
                      float *C, int ldc, float alpha, float beta)
{
    enum { MR = GEMM_AVX2_MR, NR = GEMM_AVX2_NR };
    __m256 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        acc[i][0] = _mm256_setzero_ps();
        acc[i][1] = _mm256_setzero_ps();
    }

    // a is MR×kc (a[p*MR + i]); b is kc×NR (b[p*NR + j]), 64-byte aligned.
    for (int p = 0; p < kc; p++) {
        __m256 b0 = _mm256_load_ps(b + 0);
        __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += MR;
        b += NR;
    }

    // C is m×n (m ≤ MR, n ≤ NR); masked loads and stores cover the edges.
    __m256i mask0 = column_mask(n);
    __m256i mask1 = column_mask(n - 8);
    __m256 va = _mm256_set1_ps(alpha);
    __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        if (i >= m)
            break;
        float *c = C + (long)i * ldc;
        __m256 r0 = _mm256_mul_ps(va, acc[i][0]);
        __m256 r1 = _mm256_mul_ps(va, acc[i][1]);
        if (beta != 0.0f) {
            r0 = _mm256_add_ps(r0, _mm256_mul_ps(vb, _mm256_maskload_ps(c, mask0)));
            r1 = _mm256_add_ps(r1, _mm256_mul_ps(vb, _mm256_maskload_ps(c + 8, mask1)));
        }
        _mm256_maskstore_ps(c, mask0, r0);
        _mm256_maskstore_ps(c + 8, mask1, r1);
    }
}
// end listing

#endif
