// The direct 3×3 convolution with NEON: 4 output columns a vector. NEON has
// no masked loads, so a chunk of four columns whose taps all fall inside the
// row takes the vector loop, and the columns at the ends of a row (the
// padding, a last partial chunk) take a scalar one, summing in the same
// order with the same fused multiply-add (fmaf): one rounding a term on
// every path, with gcc (which in ISO C mode keeps s += k * x two roundings)
// and clang (which fuses it) alike. conv_direct.h sits outside the guard so
// the file is never an empty translation unit.
#include "conv_direct.h"

#if defined(__aarch64__)

#include <arm_neon.h>
#include <math.h>

enum { L = 4 };

// Output columns q .. q+n−1 of row r: one input channel's taps, one column
// at a time, skipping those in the padding.
static void columns(const float *xc, int h, int w, const float *k, int pad, int r, int q, int n,
                    float *yr)
{
    for (int j = q; j < q + n; j++) {
        float s = yr[j];
        for (int u = 0; u < 3; u++) {
            int iy = r + u - pad;
            if (iy < 0 || iy >= h)
                continue;
            for (int v = 0; v < 3; v++) {
                int ix = j + v - pad;
                if (ix >= 0 && ix < w)
                    s = fmaf(k[u * 3 + v], xc[(long)iy * w + ix], s);
            }
        }
        yr[j] = s;
    }
}

// One row u of a 3×3 filter: the input row at xr (lane l of tap v reads
// xr[l + v]) times the weights k0, k1, k2, added onto acc.
static inline float32x4_t row_taps(const float *xr, float32x4_t k0, float32x4_t k1,
                                   float32x4_t k2, float32x4_t acc)
{
    acc = vfmaq_f32(acc, k0, vld1q_f32(xr));
    acc = vfmaq_f32(acc, k1, vld1q_f32(xr + 1));
    return vfmaq_f32(acc, k2, vld1q_f32(xr + 2));
}

// One input channel's share of one output plane y (oh×ow) with the filter
// k (3×3), the nine weights in registers. Per output element the taps are
// added in the order u, v.
static void channel(const float *xc, int h, int w, const float *k, int pad, float *y)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    float32x4_t k0 = vdupq_n_f32(k[0]), k1 = vdupq_n_f32(k[1]), k2 = vdupq_n_f32(k[2]);
    float32x4_t k3 = vdupq_n_f32(k[3]), k4 = vdupq_n_f32(k[4]), k5 = vdupq_n_f32(k[5]);
    float32x4_t k6 = vdupq_n_f32(k[6]), k7 = vdupq_n_f32(k[7]), k8 = vdupq_n_f32(k[8]);
    for (int r = 0; r < oh; r++) {
        float *yr = y + (long)r * ow;
        for (int q0 = 0; q0 < ow; q0 += L) {
            // The taps read columns q0 − pad .. q0 + L + 1 − pad.
            if (q0 + L > ow || q0 - pad < 0 || q0 + L + 1 - pad >= w) {
                columns(xc, h, w, k, pad, r, q0, q0 + L > ow ? ow - q0 : L, yr);
                continue;
            }
            float32x4_t acc = vld1q_f32(yr + q0);
            // Input row r + u − pad; the middle one (u = 1) is always inside.
            const float *xr = xc + (long)(r + 1 - pad) * w + q0 - pad;
            if (r - pad >= 0)
                acc = row_taps(xr - w, k0, k1, k2, acc);
            acc = row_taps(xr, k3, k4, k5, acc);
            if (r + 2 - pad < h)
                acc = row_taps(xr + w, k6, k7, k8, acc);
            vst1q_f32(yr + q0, acc);
        }
    }
}

// Output channel after output channel, and within each the input channels
// in order: each output element sums its terms in the order ch, u, v.
void conv_direct_neon(const float *x, int c, int h, int w, const float *k, int oc, int pad,
                      float *y)
{
    long plane = (long)(h + 2 * pad - 2) * (w + 2 * pad - 2);
    for (int o = 0; o < oc; o++)
        for (int ch = 0; ch < c; ch++)
            channel(x + (long)ch * h * w, h, w, k + ((long)o * c + ch) * 9, pad, y + o * plane);
}

#endif
