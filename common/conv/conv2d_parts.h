#ifndef CONV2D_PARTS_H
#define CONV2D_PARTS_H

// What conv2d.c's shared opening hands a path of conv_path.c's table, and
// the paths' functions that table names. Only common/conv includes it.
#include <stdint.h>

#include "conv.h"
#include "conv_direct.h"
#include "pool_row.h"
#include "vec.h"

// The sizes of one convolution, from its tensors.
struct conv_dims {
    int n, c, h, w, oc, kh, kw, oh, ow, stride, pad;
    long K, P;  // the GEMM's k = c·kh·kw and n = oh·ow
    int ph, pw; // the pooled output's sides, oh/2 and ow/2, when pooled
};

// Where the forward puts its output: y (n×oc×oh×ow), with the bias added
// and, with ReLU fused, clipped; or, with the pooling fused too, the pooled
// y (n×oc×ph×pw) and its codes.
struct conv_out {
    float *y;
    unsigned char *code;  // NULL: no pooling
    int relu;
    uint8_t *mask;        // with ReLU fused alone and recording: its mask, else NULL
    const struct vec_kernels *vec;
    relu_pool_plane_fn *pool_plane;
};

// What a path's forward reads: the shapes checked, the output made.
struct conv_forward_call {
    struct tape *t;
    const char *op;  // for messages
    const struct conv_dims *d;
    const struct tape_config *cfg;
    const float *x, *w, *bias;
    const struct conv_out *o;
};

// The part of one run of images' backward that differs by path (after DY
// is laid out, conv2d.c's backward_run): dw (the run's partial sum, or
// NULL) and dx of images first .. first + m − 1. col is the thread's
// scratch (the row's scratch floats), dy the run's DY, m·P floats a row.
// Returns 0, or -1 when the GEMM backend ran out of memory.
typedef int conv_products_fn(const struct conv_back *b, int first, int m, float *col,
                             const float *dy, float *dw);

// What the backward of one run of images reads and writes.
struct conv_back {
    struct tape *t;
    const char *op;             // for messages
    const struct conv_path *path;
    struct conv_dims d;
    conv_products_fn *products; // set by the path's backward
    const uint8_t *mask;        // the fused ReLU's (relu_mask) when not pooled, else NULL
    const unsigned char *code;  // the pooling's codes; y and dy are pooled; or NULL
    conv_dw_fn *dw_kernel;      // the direct path's dW, or NULL: dW by the products
    const float *u;             // the Winograd path's filters, transformed and turned, or NULL
    enum isa isa;
    relu_pool_plane_backward_fn *unpool;  // the pooling's backward, a plane at a time
    const struct gemm_backend *be;
    const struct gemm_context *gemm; // the tape's, for be and the implicit and
                                     // Winograd paths' products
    const struct vec_kernels *vec;
    const float *x, *w, *dy;
    const float *y; // the pooled output, when pooled; else NULL
    float *dx;      // NULL when x needs no gradient
    float dx_beta;  // 0: dx holds nothing yet, and the path writes it; 1: add into it
    float *dw, *dbias;  // the gradients of w and bias, or NULL
    float *dw_run;  // GROUPS partial sums of dw (oc×K each), or NULL
    float *db_run;  // GROUPS partial sums of dbias (oc each), or NULL
    long run_p;     // the longest run's images × P
    float *scratch; // per thread: the row's scratch, then an oc × run_p matrix
};

// The paths' functions, for conv_path.c's table (conv2d.c).
long conv_im2col_scratch(const struct conv_dims *d, const struct gemm_context *gemm);
long conv_implicit_path_scratch(const struct conv_dims *d, const struct gemm_context *gemm);
long conv_winograd_path_scratch(const struct conv_dims *d, const struct gemm_context *gemm);
int conv_im2col_path_forward(const struct conv_forward_call *f);
int conv_1x1_path_forward(const struct conv_forward_call *f);
int conv_direct_path_forward(const struct conv_forward_call *f);
int conv_implicit_path_forward(const struct conv_forward_call *f);
int conv_winograd_path_forward(const struct conv_forward_call *f);
int conv_im2col_path_backward(struct conv_back *b);
int conv_direct_path_backward(struct conv_back *b);
int conv_implicit_path_backward(struct conv_back *b);
int conv_winograd_path_backward(struct conv_back *b);

#endif
