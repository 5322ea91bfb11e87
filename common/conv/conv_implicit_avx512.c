// The AVX-512 kernel of the implicit GEMM's last, short sliver (see
// conv_kernel8_avx512 in conv_implicit.h). conv_implicit.h sits outside the
// guard so the file is never an empty translation unit.
#include "conv_implicit.h"

#if defined(__x86_64__)

#include <immintrin.h>

// listing: kernel8_avx512
// The book's convolutions have 32 and 64 filters, and the AVX-512 kernel
// takes them 14 at a time: 64 = 4·14 + 8, so the last sliver holds 8 rows
// and 6 rows of zeros, and the 14 × 32 kernel spends 6 of every 70 FMAs (9 %)
// on the zeros. Here the 8 rows alone: 16 accumulators, still twice the 8
// that two FMA pipes of 4 cycles' latency need. Each sum runs in the order
// p = 0, 1, 2, … from zero, and C is then updated as store_block does
// (acc + beta·c), so the bits are the 14 × 32 kernel's.
void conv_kernel8_avx512(int m, int kc, const float *a, const float *b, float *C, long ldc,
                         float beta)
{
    enum { MR = 14, ROWS = 8 };
    __m512 acc[ROWS][2];
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) {
        acc[i][0] = _mm512_setzero_ps();
        acc[i][1] = _mm512_setzero_ps();
    }
    for (int p = 0; p < kc; p++, a += MR, b += 32) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    __m512 vb = _mm512_set1_ps(beta);
    for (int i = 0; i < m; i++) {
        float *c = C + i * ldc;
        __m512 r0 = acc[i][0], r1 = acc[i][1];
        if (beta != 0.0f) {
            r0 = _mm512_add_ps(r0, _mm512_mul_ps(vb, _mm512_loadu_ps(c)));
            r1 = _mm512_add_ps(r1, _mm512_mul_ps(vb, _mm512_loadu_ps(c + 16)));
        }
        _mm512_storeu_ps(c, r0);
        _mm512_storeu_ps(c + 16, r1);
    }
}
// end listing

#endif
