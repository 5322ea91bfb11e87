// The direct 3×3 convolution in plain C (the reference the vector kernels are
// tested against), and the table of it and its vector versions by ISA.
#include <stddef.h>

#include "conv_direct.h"

int conv_direct_takes(int kh, int kw, int stride, int pad)
{
    return kh == 3 && kw == 3 && stride == 1 && (pad == 0 || pad == 1);
}

// listing: conv_direct_scalar
// For each output row, the nine taps of each input channel each add one
// shifted input row, scaled by one weight, onto the output row. A tap whose
// input row lies in the padding adds nothing; at the ends of a row, the
// columns whose tap falls in the padding are skipped.
void conv_direct_scalar(const float *x, int c, int h, int w, const float *k, int oc, int pad,
                        float *y)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    for (int o = 0; o < oc; o++)
        for (int r = 0; r < oh; r++) {
            float *yr = y + ((long)o * oh + r) * ow;
            for (int ch = 0; ch < c; ch++) {
                const float *kc = k + ((long)o * c + ch) * 9;
                for (int u = 0; u < 3; u++) {
                    int iy = r + u - pad;
                    if (iy < 0 || iy >= h)
                        continue;
                    const float *xr = x + ((long)ch * h + iy) * w;
                    for (int v = 0; v < 3; v++)
                        for (int q = 0; q < ow; q++) {
                            int ix = q + v - pad;
                            if (ix >= 0 && ix < w)
                                yr[q] += kc[u * 3 + v] * xr[ix];
                        }
                }
            }
        }
}
// end listing

// listing: conv_pool_scalar
// One output of the convolution, as conv_direct_scalar sums it: the bias,
// then the taps inside the image in the order ch, u, v.
static float conv_at(const float *x, int c, int h, int w, const float *kt, float bias, int oc,
                     int o, int pad, int r, int q)
{
    float s = bias;
    for (int ch = 0; ch < c; ch++)
        for (int u = 0; u < 3; u++) {
            int iy = r + u - pad;
            if (iy < 0 || iy >= h)
                continue;
            for (int v = 0; v < 3; v++) {
                int ix = q + v - pad;
                if (ix >= 0 && ix < w)
                    s += kt[((ch * 3 + u) * 3 + v) * oc + o] * x[((long)ch * h + iy) * w + ix];
            }
        }
    return s;
}

// Each window's four outputs, made, clipped by the ReLU and compared as
// op_maxpool2 compares them: a later one wins only when it is larger, so a
// window of zeros keeps its first.
void conv_pool_scalar(const float *x, int c, int h, int w, const float *kt, const float *bias,
                      int oc, int pad, float *y, unsigned char *code)
{
    int ph = (h + 2 * pad - 2) / 2, pw = (w + 2 * pad - 2) / 2;
    for (int o = 0; o < oc; o++)
        for (int r = 0; r < ph; r++)
            for (int q = 0; q < pw; q++) {
                float best = 0.0f;
                int k = 0;
                for (int at = 0; at < 4; at++) {
                    float v = conv_at(x, c, h, w, kt, bias[o], oc, o, pad, 2 * r + at / 2,
                                      2 * q + at % 2);
                    v = v > 0.0f ? v : 0.0f;
                    if (at == 0 || v > best) {
                        best = v;
                        k = at;
                    }
                }
                long j = ((long)o * ph + r) * pw + q;
                y[j] = best;
                code[j] = (unsigned char)k;
            }
}
// end listing

// listing: conv_dw_scalar
void conv_dw_scalar(const float *x, int c, int h, int w, const float *dy, long ldy, int oc,
                    int pad, float *dw)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    for (int o = 0; o < oc; o++)
        for (int ch = 0; ch < c; ch++)
            for (int u = 0; u < 3; u++)
                for (int v = 0; v < 3; v++) {
                    float s = 0.0f;
                    for (int r = 0; r < oh; r++) {
                        int iy = r + u - pad;
                        if (iy < 0 || iy >= h)
                            continue;
                        const float *g = dy + o * ldy + (long)r * ow;
                        const float *xr = x + ((long)ch * h + iy) * w;
                        for (int q = 0; q < ow; q++) {
                            int ix = q + v - pad;
                            if (ix >= 0 && ix < w)
                                s += g[q] * xr[ix];
                        }
                    }
                    dw[((o * c + ch) * 3 + u) * 3 + v] += s;
                }
}
// end listing

static conv_direct_fn *const by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = conv_direct_scalar,
#if defined(__x86_64__)
    [ISA_AVX2] = conv_direct_avx2,
    [ISA_AVX512] = conv_direct_avx512,
#endif
#if defined(__aarch64__)
    [ISA_NEON] = conv_direct_neon,
#endif
};

conv_direct_fn *conv_direct_kernel(enum isa isa)
{
    isa_count_use(isa);
    return by_isa[isa];
}

// The fused kernel and the weights' backward have a scalar, an AVX2 and a
// NEON version, no AVX-512 one: an AVX-512 CPU (ISA_AVX512) runs the AVX2
// code, 8 lanes (AVX2 is part of AVX-512); AArch64 (ISA_NEON) runs the NEON
// code, 4 lanes; ISA_SCALAR the plain loops.
static conv_pool_fn *const pool_by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = conv_pool_scalar,
#if defined(__x86_64__)
    [ISA_AVX2] = conv_pool_avx2,
    [ISA_AVX512] = conv_pool_avx2,
#endif
#if defined(__aarch64__)
    [ISA_NEON] = conv_pool_neon,
#endif
};

static conv_dw_fn *const dw_by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = conv_dw_scalar,
#if defined(__x86_64__)
    [ISA_AVX2] = conv_dw_avx2,
    [ISA_AVX512] = conv_dw_avx2,
#endif
#if defined(__aarch64__)
    [ISA_NEON] = conv_dw_neon,
#endif
};

conv_pool_fn *conv_pool_kernel(enum isa isa)
{
    isa_count_use(isa);
    return pool_by_isa[isa];
}

conv_dw_fn *conv_dw_kernel(enum isa isa)
{
    isa_count_use(isa);
    return dw_by_isa[isa];
}
