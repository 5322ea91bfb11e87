#ifndef LAYOUT_H
#define LAYOUT_H

// The convolution's forward in the other layout, NHWC, for chapter 8's
// measurement of the choice (bench_layout.c). The library keeps NCHW
// (conv.h); this is the road not taken, kept here beside its measurement.
//   x is n×h×w×c: each pixel's c channels side by side;
//   wk is K×oc with K = kh·kw·c, row (u·kw + v)·c + ch holding the weights
//   of tap (u, v) on channel ch;
//   y is n×oh×ow×oc, oh and ow as in conv.h.

// The patch matrix of one image: P = oh·ow rows of K floats, row r·ow + q
// holding the window of output (r, q), tap by tap, each tap a run of c
// contiguous channels (0 in the padding).
void im2row_nhwc(const float *x, int c, int h, int w, int kh, int kw, int stride, int pad,
                 float *rows);

// y = bias + the convolution, `run` images at a time: their patch matrices
// one under the other in rows (run·P×K floats of scratch), then one GEMM,
// (run·P × K)·(K × oc), whose rows are output pixels: NHWC as it comes out.
void conv_forward_nhwc(const float *x, int n, int c, int h, int w, const float *wk,
                       const float *bias, int oc, int kh, int kw, int stride, int pad, int run,
                       float *rows, float *y);

#endif
