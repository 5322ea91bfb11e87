// The direct 3×3 convolution with NEON: 4 output columns a vector. NEON has
// no masked loads, so a chunk of four columns whose taps all fall inside the
// row takes the vector loop, and the columns at the ends of a row (the
// padding, a last partial chunk) take the scalar one, summing in the same
// order. conv_direct.h sits outside the guard so the file is never an empty
// translation unit.
#include "conv_direct.h"

#if defined(__aarch64__)

#include <arm_neon.h>

enum { L = 4 };

// Output columns q .. q+n−1 of row r of filter o, one at a time.
static void columns(const float *x, int c, int h, int w, const float *ko, int pad, int r, int q,
                    int n, float *yr)
{
    for (int j = q; j < q + n; j++) {
        float s = yr[j];
        for (int ch = 0; ch < c; ch++)
            for (int u = 0; u < 3; u++) {
                int iy = r + u - pad;
                if (iy < 0 || iy >= h)
                    continue;
                for (int v = 0; v < 3; v++) {
                    int ix = j + v - pad;
                    if (ix >= 0 && ix < w)
                        s += ko[ch * 9 + u * 3 + v] * x[((long)ch * h + iy) * w + ix];
                }
            }
        yr[j] = s;
    }
}

void conv_direct_neon(const float *x, int c, int h, int w, const float *k, int oc, int pad,
                      float *y)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    for (int o = 0; o < oc; o++) {
        const float *ko = k + (long)o * c * 9;
        for (int r = 0; r < oh; r++) {
            float *yr = y + ((long)o * oh + r) * ow;
            int q0 = 0;
            for (; q0 < ow; q0 += L) {
                // Taps read columns q0 − pad .. q0 + L + 1 − pad.
                if (q0 + L > ow || q0 - pad < 0 || q0 + L + 1 - pad >= w) {
                    columns(x, c, h, w, ko, pad, r, q0, q0 + L > ow ? ow - q0 : L, yr);
                    continue;
                }
                float32x4_t acc = vld1q_f32(yr + q0);
                for (int ch = 0; ch < c; ch++)
                    for (int u = 0; u < 3; u++) {
                        int iy = r + u - pad;
                        if (iy < 0 || iy >= h)
                            continue;
                        const float *xr = x + ((long)ch * h + iy) * w + q0 - pad;
                        for (int v = 0; v < 3; v++)
                            acc = vfmaq_n_f32(acc, vld1q_f32(xr + v), ko[ch * 9 + u * 3 + v]);
                    }
                vst1q_f32(yr + q0, acc);
            }
        }
    }
}

#endif
