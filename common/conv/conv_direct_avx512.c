// The direct 3×3 convolution with AVX-512: 16 output columns a vector. The
// masks do the padding: a lane whose tap falls outside the row loads zero
// (a masked-off lane is never read), and the last chunk of a row stores
// only its own lanes. conv_direct.h sits outside the guard so the file is
// never an empty translation unit.
#include "conv_direct.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "lanes_avx512.h"

enum { L = 16 };

// The lanes l < lanes of the chunk at output column q0 whose tap v reads a
// column inside the row: 0 ≤ q0 + l + v − pad < w.
static __mmask16 inside(int q0, int lanes, int v, int pad, int w)
{
    int hi = w - (q0 + v - pad);
    return lanes_between(pad - v - q0, hi < lanes ? hi : lanes);
}

// listing: conv_direct_avx512
// One row u of the two 3×3 filters: the input row at xr (shifted so that
// lane l of tap v reads xr[l + v]) times weights a (first filter) and b
// (second), added onto both output vectors. Each input vector loaded feeds
// two FMAs, one per output channel.
static inline void row_taps(const float *xr, __mmask16 m0, __mmask16 m1, __mmask16 m2,
                            __m512 a0, __m512 a1, __m512 a2, __m512 b0, __m512 b1, __m512 b2,
                            __m512 *acc0, __m512 *acc1)
{
    __m512 x0 = _mm512_maskz_loadu_ps(m0, xr), x1 = _mm512_maskz_loadu_ps(m1, xr + 1),
           x2 = _mm512_maskz_loadu_ps(m2, xr + 2);
    *acc0 = _mm512_fmadd_ps(a2, x2, _mm512_fmadd_ps(a1, x1, _mm512_fmadd_ps(a0, x0, *acc0)));
    *acc1 = _mm512_fmadd_ps(b2, x2, _mm512_fmadd_ps(b1, x1, _mm512_fmadd_ps(b0, x0, *acc1)));
}

// One input channel's share of two output planes, y0 and y1 (oh×ow each),
// with the filters k0 and k1 (3×3 each). The 18 weights stay in registers
// for the whole plane. Per output element the taps are added in the order
// u, v.
static void channel_pair(const float *xc, int h, int w, const float *k0, const float *k1,
                         int pad, float *y0, float *y1)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    __m512 a0 = _mm512_set1_ps(k0[0]), a1 = _mm512_set1_ps(k0[1]), a2 = _mm512_set1_ps(k0[2]);
    __m512 a3 = _mm512_set1_ps(k0[3]), a4 = _mm512_set1_ps(k0[4]), a5 = _mm512_set1_ps(k0[5]);
    __m512 a6 = _mm512_set1_ps(k0[6]), a7 = _mm512_set1_ps(k0[7]), a8 = _mm512_set1_ps(k0[8]);
    __m512 b0 = _mm512_set1_ps(k1[0]), b1 = _mm512_set1_ps(k1[1]), b2 = _mm512_set1_ps(k1[2]);
    __m512 b3 = _mm512_set1_ps(k1[3]), b4 = _mm512_set1_ps(k1[4]), b5 = _mm512_set1_ps(k1[5]);
    __m512 b6 = _mm512_set1_ps(k1[6]), b7 = _mm512_set1_ps(k1[7]), b8 = _mm512_set1_ps(k1[8]);
    for (int q0 = 0; q0 < ow; q0 += L) {
        int lanes = ow - q0 < L ? ow - q0 : L;
        __mmask16 all = (__mmask16)((1u << lanes) - 1);
        __mmask16 m0 = inside(q0, lanes, 0, pad, w), m1 = inside(q0, lanes, 1, pad, w),
                  m2 = inside(q0, lanes, 2, pad, w);
        for (int r = 0; r < oh; r++) {
            long at = (long)r * ow + q0;
            __m512 acc0 = _mm512_maskz_loadu_ps(all, y0 + at);
            __m512 acc1 = _mm512_maskz_loadu_ps(all, y1 + at);
            // Input row r + u − pad, from column q0 − pad. The middle row
            // (u = 1) is always inside the image; the top and bottom ones
            // may be padding, which adds nothing.
            const float *xr = xc + (long)(r + 1 - pad) * w + q0 - pad;
            if (r - pad >= 0)
                row_taps(xr - w, m0, m1, m2, a0, a1, a2, b0, b1, b2, &acc0, &acc1);
            row_taps(xr, m0, m1, m2, a3, a4, a5, b3, b4, b5, &acc0, &acc1);
            if (r + 2 - pad < h)
                row_taps(xr + w, m0, m1, m2, a6, a7, a8, b6, b7, b8, &acc0, &acc1);
            _mm512_mask_storeu_ps(y0 + at, all, acc0);
            _mm512_mask_storeu_ps(y1 + at, all, acc1);
        }
    }
}

// Output channels two at a time, input channels one after another: each
// output element sums its terms in the order ch, u, v. An odd last output
// channel is paired with itself: both halves compute the same values and
// store them to the same place.
void conv_direct_avx512(const float *x, int c, int h, int w, const float *k, int oc, int pad,
                        float *y)
{
    long plane = (long)(h + 2 * pad - 2) * (w + 2 * pad - 2);
    for (int o = 0; o < oc; o += 2)
        for (int ch = 0; ch < c; ch++) {
            int o1 = o + 1 < oc ? o + 1 : o;
            channel_pair(x + (long)ch * h * w, h, w, k + ((long)o * c + ch) * 9,
                         k + ((long)o1 * c + ch) * 9, pad, y + o * plane, y + o1 * plane);
        }
}
// end listing

#endif
