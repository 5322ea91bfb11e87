#ifndef CONV_H
#define CONV_H

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

// How op_conv2d computes: a row of conv_path.c's table per path, chosen
// by shape (auto) or as the tape's config says (tape_config.conv). The
// rows, the names a program's --conv takes and the lines its --help shows
// all come from that table (`run_cnn --help` lists them).
enum conv_path_id { CONV_AUTO, CONV_IM2COL, CONV_1X1, CONV_DIRECT, CONV_IMPLICIT, CONV_WINOGRAD,
                    CONV_PATHS };

// A convolution's shape, as conv_choose and a path's takes read it: c
// channels of h×w in, oc filters of kh×kw, stride and pad.
struct conv_shape {
    int c, h, w, oc, kh, kw, stride, pad;
};

struct conv_dims;
struct conv_forward_call;
struct conv_back;

// One way to compute the convolution (conv2d.c's shared opening calls it):
//   takes     1 when the path computes this shape
//   scratch   floats each thread needs beside DY for a run of images in
//             the backward (d is conv2d_parts.h's)
//   forward   y, its bias, fused ReLU or pooling; 0, or -1 with the tape's
//             error set
//   backward  dx, dw and dbias; 0, or -1 with the tape's error set
//   instead   the path taken when this one does not take the shape
// The "auto" row has no functions: it names the choice by shape.
struct conv_path {
    const char *name;
    const char *about;
    int (*takes)(const struct conv_shape *s);
    long (*scratch)(const struct conv_dims *d, const struct gemm_context *gemm);
    int (*forward)(const struct conv_forward_call *f);
    int (*backward)(struct conv_back *b);
    enum conv_path_id instead;
};

// The row of id; NULL for CONV_AUTO (a tape_config's conv: by shape).
const struct conv_path *conv_path_of(enum conv_path_id id);
// The id of a row (CONV_AUTO for NULL).
enum conv_path_id conv_path_id(const struct conv_path *p);
// "auto" for NULL, else p->name.
const char *conv_path_name(const struct conv_path *p);
// The table's line about id (for a flag's choices).
const char *conv_path_about(enum conv_path_id id);
// The id of the path called name; 0 and *out set, or -1.
int conv_parse_path(const char *name, enum conv_path_id *out);
// The path op_conv2d takes for shape s when the tape wants `want`: by shape
// for NULL (auto); a path that cannot take the shape falls back to its row's
// `instead` (direct with a 5×5 filter to im2col, winograd to implicit).
const struct conv_path *conv_choose(const struct conv_path *want, const struct conv_shape *s);

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
