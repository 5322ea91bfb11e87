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
    return by_isa[isa];
}
