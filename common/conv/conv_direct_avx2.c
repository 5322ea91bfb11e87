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

void conv_direct_avx2(const float *x, int c, int h, int w, const float *k, int oc, int pad,
                      float *y)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    for (int o = 0; o < oc; o++)
        for (int r = 0; r < oh; r++) {
            float *yr = y + ((long)o * oh + r) * ow;
            for (int q0 = 0; q0 < ow; q0 += L) {
                int lanes = ow - q0 < L ? ow - q0 : L;
                __m256i all = first(lanes);
                __m256i tap[3];
                for (int v = 0; v < 3; v++)
                    tap[v] = inside(q0, lanes, v, pad, w);
                __m256 acc = _mm256_maskload_ps(yr + q0, all);  // the bias
                for (int ch = 0; ch < c; ch++) {
                    const float *kc = k + ((long)o * c + ch) * 9;
                    for (int u = 0; u < 3; u++) {
                        int iy = r + u - pad;
                        if (iy < 0 || iy >= h)
                            continue;
                        const float *xr = x + ((long)ch * h + iy) * w + q0 - pad;
                        for (int v = 0; v < 3; v++) {
                            __m256 xv = _mm256_maskload_ps(xr + v, tap[v]);
                            acc = _mm256_fmadd_ps(_mm256_set1_ps(kc[u * 3 + v]), xv, acc);
                        }
                    }
                }
                _mm256_maskstore_ps(yr + q0, all, acc);
            }
        }
}

#endif
