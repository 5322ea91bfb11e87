// The max-pooling row (pool_row.h) with AVX-512: 16 outputs at a time.
#include <immintrin.h>

#include "pool_row.h"

// The scalar rule for 16 lanes: a is larger than b, or a NaN where b is not.
static __mmask16 beats16(__m512 a, __m512 b)
{
    return _mm512_cmp_ps_mask(a, b, _CMP_NLE_UQ) & _mm512_cmp_ps_mask(b, b, _CMP_ORD_Q);
}

// listing: maxpool_row_avx512
// Two loads bring 32 floats of a row; a permute splits them into the even
// columns (each window's left element) and the odd ones (its right). Then
// the scalar loop's three steps run on 16 windows at once, a masked move in
// place of each if. The last, shorter block loads and stores under a mask.
void maxpool_row_avx512(const float *top, const float *bottom, int w, int ow, int first, float *y,
                        int *where)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int q = 0; q < ow; q += 16) {
        int n = ow - q < 16 ? ow - q : 16;  // outputs in this block
        unsigned m = 2u * (unsigned)n;      // floats of each row they read
        __mmask16 low = (__mmask16)(m >= 16 ? 0xffff : (1u << m) - 1);
        __mmask16 high = (__mmask16)(m <= 16 ? 0 : (1u << (m - 16)) - 1);
        __mmask16 out = (__mmask16)((1u << n) - 1);
        const float *t = top + 2 * q, *b = bottom + 2 * q;
        __m512 t0 = _mm512_maskz_loadu_ps(low, t), t1 = _mm512_maskz_loadu_ps(high, t + 16);
        __m512 b0 = _mm512_maskz_loadu_ps(low, b), b1 = _mm512_maskz_loadu_ps(high, b + 16);
        __m512 best = _mm512_permutex2var_ps(t0, even, t1);
        __m512i k = _mm512_setzero_si512();
        __m512 v = _mm512_permutex2var_ps(t0, odd, t1);
        __mmask16 win = beats16(v, best);
        best = _mm512_mask_mov_ps(best, win, v);
        k = _mm512_mask_mov_epi32(k, win, _mm512_set1_epi32(1));
        v = _mm512_permutex2var_ps(b0, even, b1);
        win = beats16(v, best);
        best = _mm512_mask_mov_ps(best, win, v);
        k = _mm512_mask_mov_epi32(k, win, _mm512_set1_epi32(w));
        v = _mm512_permutex2var_ps(b0, odd, b1);
        win = beats16(v, best);
        best = _mm512_mask_mov_ps(best, win, v);
        k = _mm512_mask_mov_epi32(k, win, _mm512_set1_epi32(w + 1));
        // where = first + 2q + 2·lane + k
        __m512i at = _mm512_add_epi32(_mm512_set1_epi32(first + 2 * q), even);
        _mm512_mask_storeu_ps(y + q, out, best);
        _mm512_mask_storeu_epi32(where + q, out, _mm512_add_epi32(at, k));
    }
}
// end listing
