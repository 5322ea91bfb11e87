#ifndef CONV_DIRECT_H
#define CONV_DIRECT_H

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

#endif
