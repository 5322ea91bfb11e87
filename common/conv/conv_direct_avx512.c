// The direct 3×3 convolution with AVX-512: 16 output columns a vector. The
// masks do the padding: a lane whose tap falls outside the row loads zero
// (a masked-off lane is never read), and the last chunk of a row stores
// only its own lanes. conv_direct.h sits outside the guard so the file is
// never an empty translation unit.
#include "conv_direct.h"

#if defined(__x86_64__)

#include <immintrin.h>

enum { L = 16 };

// The lanes l < lanes of the chunk at output column q0 whose tap v reads a
// column inside the row: 0 ≤ q0 + l + v − pad < w.
static __mmask16 inside(int q0, int lanes, int v, int pad, int w)
{
    int lo = pad - v - q0, hi = w - (q0 + v - pad);
    if (lo < 0)
        lo = 0;
    if (hi > lanes)
        hi = lanes;
    if (hi <= lo)
        return 0;
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

// listing: conv_direct_avx512
void conv_direct_avx512(const float *x, int c, int h, int w, const float *k, int oc, int pad,
                        float *y)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    for (int o = 0; o < oc; o++)
        for (int r = 0; r < oh; r++) {
            float *yr = y + ((long)o * oh + r) * ow;
            for (int q0 = 0; q0 < ow; q0 += L) {
                int lanes = ow - q0 < L ? ow - q0 : L;
                __mmask16 all = (__mmask16)((1u << lanes) - 1);
                __mmask16 tap[3];
                for (int v = 0; v < 3; v++)
                    tap[v] = inside(q0, lanes, v, pad, w);
                __m512 acc = _mm512_maskz_loadu_ps(all, yr + q0);  // the bias
                for (int ch = 0; ch < c; ch++) {
                    const float *kc = k + ((long)o * c + ch) * 9;
                    for (int u = 0; u < 3; u++) {
                        int iy = r + u - pad;
                        if (iy < 0 || iy >= h)
                            continue;
                        // Column q0 + v − pad of input row iy, for lane 0.
                        const float *xr = x + ((long)ch * h + iy) * w + q0 - pad;
                        for (int v = 0; v < 3; v++) {
                            __m512 xv = _mm512_maskz_loadu_ps(tap[v], xr + v);
                            acc = _mm512_fmadd_ps(_mm512_set1_ps(kc[u * 3 + v]), xv, acc);
                        }
                    }
                }
                _mm512_mask_storeu_ps(yr + q0, all, acc);
            }
        }
}
// end listing

#endif
