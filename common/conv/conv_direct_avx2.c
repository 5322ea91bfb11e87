// The direct 3×3 convolution with AVX2: 8 output columns a vector. As in the
// AVX-512 kernel, masks do the padding and the end of a row: a masked load
// reads zero (and never touches) a lane outside the row. conv_direct.h sits
// outside the guard so the file is never an empty translation unit.
#include "conv_direct.h"

#if defined(__x86_64__)

#include <immintrin.h>

enum { L = 8 };

// All-ones in lanes 0 .. lanes−1.
static __m256i first(int lanes)
{
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), lane);
}

// All-ones in the lanes l < lanes of the chunk at output column q0 whose
// tap v reads a column inside the row: 0 ≤ q0 + l + v − pad < w.
static __m256i inside(int q0, int lanes, int v, int pad, int w)
{
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i col = _mm256_add_epi32(lane, _mm256_set1_epi32(q0 + v - pad));
    __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(col, _mm256_set1_epi32(-1)),
                                  _mm256_cmpgt_epi32(_mm256_set1_epi32(w), col));
    return _mm256_and_si256(ok, first(lanes));
}

// One row u of a 3×3 filter: the input row at xr (shifted so that lane l of
// tap v reads xr[l + v]) times the weights k0, k1, k2, added onto acc.
static inline __m256 row_taps(const float *xr, __m256i m0, __m256i m1, __m256i m2, __m256 k0,
                              __m256 k1, __m256 k2, __m256 acc)
{
    acc = _mm256_fmadd_ps(k0, _mm256_maskload_ps(xr, m0), acc);
    acc = _mm256_fmadd_ps(k1, _mm256_maskload_ps(xr + 1, m1), acc);
    return _mm256_fmadd_ps(k2, _mm256_maskload_ps(xr + 2, m2), acc);
}

// One input channel's share of one output plane y (oh×ow) with the filter
// k (3×3): the nine weights stay in registers for the whole plane (AVX2 has
// sixteen: nine weights, three masks, the sum and an input vector). Per
// output element the taps are added in the order u, v.
static void channel(const float *xc, int h, int w, const float *k, int pad, float *y)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    __m256 k0 = _mm256_set1_ps(k[0]), k1 = _mm256_set1_ps(k[1]), k2 = _mm256_set1_ps(k[2]);
    __m256 k3 = _mm256_set1_ps(k[3]), k4 = _mm256_set1_ps(k[4]), k5 = _mm256_set1_ps(k[5]);
    __m256 k6 = _mm256_set1_ps(k[6]), k7 = _mm256_set1_ps(k[7]), k8 = _mm256_set1_ps(k[8]);
    for (int q0 = 0; q0 < ow; q0 += L) {
        int lanes = ow - q0 < L ? ow - q0 : L;
        __m256i all = first(lanes);
        __m256i m0 = inside(q0, lanes, 0, pad, w), m1 = inside(q0, lanes, 1, pad, w),
                m2 = inside(q0, lanes, 2, pad, w);
        for (int r = 0; r < oh; r++) {
            float *yr = y + (long)r * ow + q0;
            __m256 acc = _mm256_maskload_ps(yr, all);
            // Input row r + u − pad, from column q0 − pad. The middle row
            // (u = 1) is always inside the image; the top and bottom ones
            // may be padding, which adds nothing.
            const float *xr = xc + (long)(r + 1 - pad) * w + q0 - pad;
            if (r - pad >= 0)
                acc = row_taps(xr - w, m0, m1, m2, k0, k1, k2, acc);
            acc = row_taps(xr, m0, m1, m2, k3, k4, k5, acc);
            if (r + 2 - pad < h)
                acc = row_taps(xr + w, m0, m1, m2, k6, k7, k8, acc);
            _mm256_maskstore_ps(yr, all, acc);
        }
    }
}

// Output channel after output channel, and within each the input channels
// in order: each output element sums its terms in the order ch, u, v.
void conv_direct_avx2(const float *x, int c, int h, int w, const float *k, int oc, int pad,
                      float *y)
{
    long plane = (long)(h + 2 * pad - 2) * (w + 2 * pad - 2);
    for (int o = 0; o < oc; o++)
        for (int ch = 0; ch < c; ch++)
            channel(x + (long)ch * h * w, h, w, k + ((long)o * c + ch) * 9, pad, y + o * plane);
}

#endif
