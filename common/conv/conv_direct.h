#ifndef CONV_DIRECT_H
#define CONV_DIRECT_H

#include <stddef.h>

#include "cpu.h"

// The direct 3×3 convolution of conv.h's "direct" path: stride 1, zero
// padding 0 or 1, no copy of the input. One image at a time:
//   x is c×h×w, k is oc×c×3×3, y is oc×oh×ow with oh = h + 2·pad − 2 and
//   ow = w + 2·pad − 2 (both at least 1);
//   y[o][r][q] += Σ_{ch,u,v} k[o][ch][u][v]·x[ch][r+u−pad][q+v−pad]
// (y holds the bias already; taps outside the image count as zero). Each
// output element sums its terms in the same order (ch, then u, then v) on
// every path; the vector paths fuse each multiply into its add, so they
// agree with the scalar one to a few roundings, not bit for bit.
typedef void conv_direct_fn(const float *x, int c, int h, int w, const float *k, int oc, int pad,
                            float *y);

// 1 when the direct kernel takes this convolution.
int conv_direct_takes(int kh, int kw, int stride, int pad);

// The kernel of isa, which must be one this CPU runs (isa_supported): the
// convolution asks for its tape's ISA.
conv_direct_fn *conv_direct_kernel(enum isa isa);

conv_direct_fn conv_direct_scalar;
conv_direct_fn conv_direct_avx2;
conv_direct_fn conv_direct_avx512;
conv_direct_fn conv_direct_neon;

// The same convolution with its bias, ReLU and 2×2 max pooling in one kernel,
// for op_conv2d_relu_maxpool2 on the direct path. One image at a time:
//   x is c×h×w; oh and ow as above (both at least 2);
//   kt is the filters turned round, c×3×3×oc: kt[((ch·3 + u)·3 + v)·oc + o]
//   holds k[o][ch][u][v], so the oc weights of one tap sit side by side;
//   y and code are oc×(oh/2)×(ow/2):
//     y[o][r][q] = the largest of relu(conv[o][2r + a][2q + b]), a, b ∈ {0, 1},
//     code[o][r][q] = 2a + b of the first of them (in reading order) that is
//   largest, where conv is bias[o] plus the sum above. The convolution's output
//   never leaves the registers: only the maxima and a byte each are written.
// Each output of the convolution sums its terms as conv_direct_fn does (from
// the bias, in the order ch, u, v, the vector paths with FMA), so y is what
// the direct path's op_conv2d_relu then op_maxpool2 give, bit for bit.
typedef void conv_pool_fn(const float *x, int c, int h, int w, const float *kt,
                          const float *bias, int oc, int pad, float *y, unsigned char *code);

// The backward of the direct path's weights: for an image x (c×h×w) and the
// gradient dy of its output (oc planes of oh×ow, plane o at dy + o·ldy),
//   dw[o][ch][u][v] += Σ_{r,q} dy[o][r][q]·x[ch][r+u−pad][q+v−pad]
// (taps outside the image add nothing): dW as nine shifted dot products per
// pair of channels, where the im2col path makes it a GEMM whose n is 9.
typedef void conv_dw_fn(const float *x, int c, int h, int w, const float *dy, long ldy, int oc,
                        int pad, float *dw);

// The fused kernels' tap outside the image's interior: the pixels of
// channel ch under one tap for a window's four outputs, (0, 0), (0, 1),
// (1, 0), (1, 1) from row y, column xx; NULL where the tap falls in the
// padding (the vector kernels then skip it).
static inline void window_pixels(const float *x, int ch, int h, int w, int y, int xx,
                                 const float *px[4])
{
    for (int at = 0; at < 4; at++) {
        int r = y + at / 2, q = xx + at % 2;
        px[at] = r >= 0 && r < h && q >= 0 && q < w ? x + ((long)ch * h + r) * w + q : NULL;
    }
}

// The kernels of isa, as conv_direct_kernel.
conv_pool_fn *conv_pool_kernel(enum isa isa);
conv_dw_fn *conv_dw_kernel(enum isa isa);

conv_pool_fn conv_pool_scalar;
conv_pool_fn conv_pool_avx2;
conv_pool_fn conv_pool_neon;
conv_dw_fn conv_dw_scalar;
conv_dw_fn conv_dw_avx2;
conv_dw_fn conv_dw_neon;

#endif
