// The direct 3×3 convolution with NEON: 4 output columns a vector. NEON has
// no masked loads, so a chunk of four columns whose taps all fall inside the
// row takes the vector loop, and the columns at the ends of a row (the
// padding, a last partial chunk) take a scalar one, summing in the same
// order with the same fused multiply-add (fmaf): one rounding a term on
// every path, with gcc (which in ISO C mode keeps s += k * x two roundings)
// and clang (which fuses it) alike, so that conv_pool_neon below gives the
// same bits. conv_direct.h sits outside the guard so the file is never an
// empty translation unit.
#include "conv_direct.h"

#if defined(__aarch64__)

#include <arm_neon.h>
#include <math.h>
#include <string.h>

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


// listing: conv_pool_neon
// The fused kernel turned round as conv_pool_avx2 is: a vector holds 4
// output channels of one pixel. A block is 16 channels, 4 vectors, so a
// window's four outputs are 16 accumulators, 16 independent chains of FMAs
// (AArch64 has 32 vector registers: the 16 sums, a tap's 4 weight vectors,
// the input). Inside the image a tap loads its four input pixels as one
// vector, and vfmaq_laneq_f32 multiplies the weights by one lane of it.

// The weights of one tap (or the biases) of a block of n ≤ 16 channels; past
// n, zeros, whose sums are never stored. NEON has no masked load: a short
// block, only ever the last, copies its weights through a buffer.
static inline void block_row(const float *kt, int n, float32x4_t wv[4])
{
    if (n == 4 * L) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            wv[j] = vld1q_f32(kt + j * L);
        return;
    }
    float t[4 * L] = {0};
    memcpy(t, kt, sizeof(float) * (size_t)n);
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        wv[j] = vld1q_f32(t + j * L);
}

// One tap at the border: px[at] is the input pixel under output at, NULL in
// the padding, which adds nothing.
static inline void tap(const float *kt, int n, const float *px[4], float32x4_t acc[4][4])
{
    float32x4_t wv[4];
    block_row(kt, n, wv);
#pragma GCC unroll 4
    for (int at = 0; at < 4; at++) {
        if (!px[at])
            continue;
        float32x4_t xb = vdupq_n_f32(*px[at]);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[at][j] = vfmaq_f32(acc[at][j], wv[j], xb);
    }
}

// One tap inside the image: the four pixels p, p + 1, p + w, p + w + 1 are
// the lanes of one vector, two loads of two.
static inline void tap_inside(const float *kt, int n, const float *p, int w,
                              float32x4_t acc[4][4])
{
    float32x4_t wv[4];
    block_row(kt, n, wv);
    float32x4_t xv = vcombine_f32(vld1_f32(p), vld1_f32(p + w));
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        acc[0][j] = vfmaq_laneq_f32(acc[0][j], wv[j], xv, 0);
        acc[1][j] = vfmaq_laneq_f32(acc[1][j], wv[j], xv, 1);
        acc[2][j] = vfmaq_laneq_f32(acc[2][j], wv[j], xv, 2);
        acc[3][j] = vfmaq_laneq_f32(acc[3][j], wv[j], xv, 3);
    }
}

// v where v > 0, else 0, as vec_relu_neon (vmaxq_f32 would pass a NaN on).
static inline float32x4_t relu(float32x4_t v)
{
    uint32x4_t keep = vcgtq_f32(v, vdupq_n_f32(0.0f));
    return vreinterpretq_f32_u32(vandq_u32(keep, vreinterpretq_u32_f32(v)));
}

// The ReLU and the pooling's rule on one vector of channels: the four
// outputs clipped at zero, a later one taking the place of the best only
// when it is larger.
static inline void pool4(float32x4_t acc[4][4], int j, float32x4_t *best, uint32x4_t *k)
{
    *best = relu(acc[0][j]);
    *k = vdupq_n_u32(0);
#pragma GCC unroll 3
    for (int at = 1; at < 4; at++) {
        float32x4_t v = relu(acc[at][j]);
        uint32x4_t win = vcgtq_f32(v, *best);
        *best = vbslq_f32(win, v, *best);
        *k = vbslq_u32(win, vdupq_n_u32((uint32_t)at), *k);
    }
}

// The taps of one window over every input channel, as in conv_pool_avx2:
// its 4×4 input patch starts at row iy = 2r − pad, column ix = 2q − pad.
static inline void window_taps(const float *x, int c, int h, int w, const float *kt, int oc,
                               int n, int iy, int ix, float32x4_t acc[4][4])
{
    if (iy >= 0 && iy + 3 < h && ix >= 0 && ix + 3 < w) {
        const float *patch = x + (long)iy * w + ix;
        for (int ch = 0; ch < c; ch++, patch += (long)h * w)
#pragma GCC unroll 3
            for (int u = 0; u < 3; u++)
#pragma GCC unroll 3
                for (int v = 0; v < 3; v++)
                    tap_inside(kt + ((ch * 3 + u) * 3 + v) * oc, n, patch + u * w + v, w, acc);
        return;
    }
    for (int ch = 0; ch < c; ch++)
        for (int u = 0; u < 3; u++)
            for (int v = 0; v < 3; v++) {
                const float *px[4];
                window_pixels(x, ch, h, w, iy + u, ix + v, px);
                tap(kt + ((ch * 3 + u) * 3 + v) * oc, n, px, acc);
            }
}

void conv_pool_neon(const float *x, int c, int h, int w, const float *kt, const float *bias,
                    int oc, int pad, float *y, unsigned char *code)
{
    int ph = (h + 2 * pad - 2) / 2, pw = (w + 2 * pad - 2) / 2;
    long plane = (long)ph * pw;
    for (int o0 = 0; o0 < oc; o0 += 4 * L) {
        int n = oc - o0 < 4 * L ? oc - o0 : 4 * L;  // channels in this block
        float32x4_t b[4];
        block_row(bias + o0, n, b);
        for (int r = 0; r < ph; r++)
            for (int q = 0; q < pw; q++) {
                float32x4_t acc[4][4];
#pragma GCC unroll 4
                for (int at = 0; at < 4; at++)
#pragma GCC unroll 4
                    for (int j = 0; j < 4; j++)
                        acc[at][j] = b[j];
                window_taps(x, c, h, w, kt + o0, oc, n, 2 * r - pad, 2 * q - pad, acc);
                // Only the pooled maxima and their codes leave the registers.
                float best[4 * L];
                uint32_t k[4 * L];
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    float32x4_t bv;
                    uint32x4_t kv;
                    pool4(acc, j, &bv, &kv);
                    vst1q_f32(best + j * L, bv);
                    vst1q_u32(k + j * L, kv);
                }
                long at = (long)o0 * plane + (long)r * pw + q;
                for (int l = 0; l < n; l++) {
                    y[at + l * plane] = best[l];
                    code[at + l * plane] = (unsigned char)k[l];
                }
            }
    }
}
// end listing

// listing: conv_dw_neon
// conv_dw_avx2's two rows with 4 lanes: for one pair of channels (o, ch),
// nine accumulators, one per tap, and two output rows at a time, so that each
// input row loaded feeds both. Where a vector would reach outside its row
// (the padding, a short last chunk), NEON has no masked load: load_row
// gathers the columns that are there and gives zero for the rest, as
// AVX2's masked load does.

// Columns col .. col + lanes − 1 of a row of w floats, zero outside it.
static inline float32x4_t load_row(const float *row, int col, int lanes, int w)
{
    if (lanes == L && col >= 0 && col + L <= w)
        return vld1q_f32(row + col);
    float t[L] = {0};
    for (int l = 0; l < lanes; l++)
        if (col + l >= 0 && col + l < w)
            t[l] = row[col + l];
    return vld1q_f32(t);
}

// Output rows r and r + 1 (g1 is NULL when r is the last) of the chunk at
// column q0: four input rows, three shifted vectors each, 18 FMAs.
static inline void dw_rows(const float *xc, int h, int w, const float *g0, const float *g1,
                           int ow, int r, int pad, int q0, int lanes, float32x4_t acc[9])
{
    float32x4_t d0 = load_row(g0, q0, lanes, ow);
    float32x4_t d1 = g1 ? load_row(g1, q0, lanes, ow) : vdupq_n_f32(0.0f);
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) {
        int iy = r + u - pad;
        if (iy < 0 || iy >= h || (u == 3 && !g1))
            continue;
        const float *xr = xc + (long)iy * w;
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++) {
            float32x4_t xv = load_row(xr, q0 + v - pad, lanes, w);
            if (u < 3)  // row r, tap (u, v)
                acc[u * 3 + v] = vfmaq_f32(acc[u * 3 + v], d0, xv);
            if (u > 0 && g1)  // row r + 1, tap (u − 1, v)
                acc[(u - 1) * 3 + v] = vfmaq_f32(acc[(u - 1) * 3 + v], d1, xv);
        }
    }
}

void conv_dw_neon(const float *x, int c, int h, int w, const float *dy, long ldy, int oc,
                  int pad, float *dw)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    for (int o = 0; o < oc; o++)
        for (int ch = 0; ch < c; ch++) {
            const float *xc = x + (long)ch * h * w;
            float32x4_t acc[9];
#pragma GCC unroll 9
            for (int t = 0; t < 9; t++)
                acc[t] = vdupq_n_f32(0.0f);
            for (int q0 = 0; q0 < ow; q0 += L) {
                int lanes = ow - q0 < L ? ow - q0 : L;
                const float *g = dy + o * ldy;
                for (int r = 0; r < oh; r += 2)
                    dw_rows(xc, h, w, g + (long)r * ow, r + 1 < oh ? g + (long)(r + 1) * ow : NULL,
                            ow, r, pad, q0, lanes, acc);
            }
            float *d = dw + ((long)o * c + ch) * 9;
            for (int t = 0; t < 9; t++)
                d[t] += vaddvq_f32(acc[t]);
        }
}
// end listing

#endif
