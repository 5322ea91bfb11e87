#ifndef CONV_H
#define CONV_H

#include "flags.h"
#include "tape.h"

// Convolutions and pooling on the tape, for chapter 8's network. Images are
// NCHW: a batch of n images of c channels, h rows and w columns is an
// n×c×h×w tensor, element (i, ch, y, x) at ((i·c + ch)·h + y)·w + x, the
// layout PyTorch uses, and the one in which im2col's GEMM writes its output
// in place (an oc × (oh·ow) block per image).
//
// A convolution with oc filters of c×kh×kw weights, stride s and zero
// padding p:
//   x is n×c×h×w, w is oc×c×kh×kw, bias has oc elements,
//   y is n×oc×oh×ow with oh = (h + 2p − kh)/s + 1, ow = (w + 2p − kw)/s + 1,
//   y[i][o][r][q] = bias[o] + Σ_{ch,u,v} w[o][ch][u][v]·x[i][ch][r·s+u−p][q·s+v−p]
//   (terms outside the image are zero).

// How op_conv2d computes (enum conv_path, in tape.h): chosen by shape
// (auto), or as the tape's config says.
//   im2col  the image's patches copied into a matrix, one GEMM (col2im for dx)
//   1x1     a 1×1, stride-1, unpadded convolution is a GEMM on x as it lies
//   direct  a 3×3 kernel in SIMD registers, no copy (stride 1)
//   implicit  im2col's GEMMs with the col matrix never written: the GEMM
//           packs its panels straight from the images (conv_implicit.h)
//   winograd  a 3×3 at stride 1 in four times fewer multiplications, F(4×4,
//           3×3): 36 GEMMs over transformed tiles (conv_winograd.h), and
//           its backward back through the same transforms

// "auto", "im2col", "1x1", "direct", "implicit", "winograd"; 0 and *out
// set, or -1.
int conv_parse_path(const char *name, enum conv_path *out);
const char *conv_path_name(enum conv_path p);
// The names above in enum order, then NULL (for a flag's list of choices).
const char *const *conv_path_names(void);
// --conv PATH: *path becomes an enum conv_path (0, auto, when not given).
// --conv A,B for the benchmarks: the paths named, in order.
struct flag conv_path_flag(int *path);
struct flag conv_paths_flag(struct flag_list *paths);
// The path op_conv2d takes for this shape when the tape wants `want`: by
// shape for CONV_AUTO; a path that cannot take the shape (direct with a 5×5
// filter) falls back to im2col (winograd to implicit).
enum conv_path conv_choose(enum conv_path want, int c, int h, int w, int oc, int kh, int kw,
                           int stride, int pad);

// The convolution above as one tape node; its backward makes dx, dw and
// dbias. NULL with the tape's error set on a bad shape (naming the op and
// the shapes), a NULL input, or out of memory.
struct tensor *op_conv2d(struct tape *t, struct tensor *x, struct tensor *w, struct tensor *bias,
                         int stride, int pad);
// The same followed by ReLU, fused: one pass over y, one node.
struct tensor *op_conv2d_relu(struct tape *t, struct tensor *x, struct tensor *w,
                              struct tensor *bias, int stride, int pad);
// The same followed by ReLU and 2×2 max pooling, fused: maxpool2(relu(y))
// as one node, n×oc×(oh/2)×(ow/2), the convolution's full output never
// written (conv2d.c). Its result and gradients are op_conv2d_relu then
// op_maxpool2's, bit for bit.
struct tensor *op_conv2d_relu_maxpool2(struct tape *t, struct tensor *x, struct tensor *w,
                                       struct tensor *bias, int stride, int pad);
// 2×2 max pooling, stride 2: n×c×h×w → n×c×(h/2)×(w/2) (a last odd row or
// column is dropped, as PyTorch does). The backward sends each gradient to
// the element that was the maximum (the first one, on ties).
struct tensor *op_maxpool2(struct tape *t, struct tensor *x);
// The mean of each channel: n×c×h×w → n×c.
struct tensor *op_global_avgpool(struct tape *t, struct tensor *x);

// The copies behind the im2col path, for one image (exposed for the tests
// and the benchmark). col is (c·kh·kw) × (oh·ow), row-major with its rows
// ldcol ≥ oh·ow floats apart (so several images' matrices can sit side by
// side in one wider matrix): row (ch·kh + u)·kw + v holds
// x[ch][r·s+u−p][q·s+v−p] for every output (r, q).
void im2col(const float *x, int c, int h, int w, int kh, int kw, int stride, int pad, float *col,
            long ldcol);
// The adjoint: adds each element of col back where im2col took it from.
void col2im(const float *col, long ldcol, int c, int h, int w, int kh, int kw, int stride, int pad,
            float *dx);

#endif
