// Stage 08: the convolution and pooling ops of common/conv/. im2col against
// its definition and col2im as its adjoint; every gradient by finite
// differences in double precision and against PyTorch (tests/golden/conv_*,
// written by tools/torch_golden_08.py) at stride 1 and 2, padding 0 and 1,
// 1, 3 and 17 channels and odd image sizes; the three paths against one
// another and every direct kernel against the scalar one; the fused
// conv+ReLU against the two ops; the same bits on one and two threads; the
// im2col backward's products through the tape's GEMM backend; clear errors;
// and no heap allocation once a step has run.
//
// Stage 08, the network: chapter 8's CNN (common/nn/cnn.c) on the ops of
// common/conv/. Its shapes, parameter count, initialisation and FLOPs; a
// forward pass; training steps that lower the loss, give the same bits on
// one and two threads and allocate nothing after the first; a checkpoint
// round trip; a short training on the committed sample; run_cnn on a set of
// a reader's own.
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "arrays.h"
#include "checkpoint.h"
#include "conv.h"
#include "conv_direct.h"
#include "conv_implicit.h"
#include "conv_winograd.h"
#include "conv_winograd_parts.h"
#include "cpu.h"
#include "dataset.h"
#include "gemm.h"
#include "gemm_backend.h"
#include "gemm_parts.h"
#include "golden.h"
#include "malloc_count.h"
#include "mat.h"
#include "nn.h"
#include "ops.h"
#include "optim.h"
#include "own_data.h"
#include "layout.h"
#include "pool_row.h"
#include "tape.h"
#include "train.h"

// One convolution's shape: x is n×c×h×w, w is oc×c×kh×kw.
struct conv_case {
    int n, c, h, w, oc, kh, kw, stride, pad;
};

static int out_h(const struct conv_case *k)
{
    return (k->h + 2 * k->pad - k->kh) / k->stride + 1;
}

static int out_w(const struct conv_case *k)
{
    return (k->w + 2 * k->pad - k->kw) / k->stride + 1;
}

static long x_size(const struct conv_case *k)
{
    return (long)k->n * k->c * k->h * k->w;
}

static long w_size(const struct conv_case *k)
{
    return (long)k->oc * k->c * k->kh * k->kw;
}

static long y_size(const struct conv_case *k)
{
    return (long)k->n * k->oc * out_h(k) * out_w(k);
}

// The output of the convolution pooled 2×2 (the last odd row and column
// dropped).
static long pooled_size(const struct conv_case *k)
{
    return (long)k->n * k->oc * (out_h(k) / 2) * (out_w(k) / 2);
}

static void describe(const struct conv_case *k, char *buf, size_t len)
{
    snprintf(buf, len, "x %d×%d×%d×%d, w %d×%d×%d×%d, stride %d, pad %d", k->n, k->c, k->h,
             k->w, k->oc, k->c, k->kh, k->kw, k->stride, k->pad);
}

// The definition, in double: y[i][o][r][q] = bias[o] + Σ w·x over the taps
// that fall inside the image.
static double conv_at(const struct conv_case *k, const double *x, const double *w,
                      const double *b, int i, int o, int r, int q)
{
    double s = b[o];
    for (int ch = 0; ch < k->c; ch++)
        for (int u = 0; u < k->kh; u++)
            for (int v = 0; v < k->kw; v++) {
                int iy = r * k->stride + u - k->pad, ix = q * k->stride + v - k->pad;
                if (iy >= 0 && iy < k->h && ix >= 0 && ix < k->w)
                    s += w[((o * k->c + ch) * k->kh + u) * k->kw + v] *
                         x[((long)(i * k->c + ch) * k->h + iy) * k->w + ix];
            }
    return s;
}

// L = Σ dy ⊙ y: its gradients are the backward of dy.
static double conv_loss(const struct conv_case *k, const double *x, const double *w,
                        const double *b, const double *dy)
{
    int oh = out_h(k), ow = out_w(k);
    double L = 0.0;
    for (int i = 0; i < k->n; i++)
        for (int o = 0; o < k->oc; o++)
            for (int r = 0; r < oh; r++)
                for (int q = 0; q < ow; q++)
                    L += dy[((long)(i * k->oc + o) * oh + r) * ow + q] *
                         conv_at(k, x, w, b, i, o, r, q);
    return L;
}

// What one run of the op gives: y and the three gradients.
struct conv_result {
    float *y, *dx, *dw, *db;
};

static void result_free(struct conv_result *r)
{
    free(r->y);
    free(r->dx);
    free(r->dw);
    free(r->db);
}

static float *copy_of(const float *v, long n)
{
    float *c = malloc(sizeof(float) * (size_t)n);
    memcpy(c, v, sizeof(float) * (size_t)n);
    return c;
}

// Runs op_conv2d (or op_conv2d_relu; with relu_after, op_conv2d then
// op_relu; with POOLED, op_conv2d_relu_maxpool2, and with POOL_AFTER
// op_conv2d_relu then op_maxpool2) on the given path, then the backward of
// L = Σ dy ⊙ y. The tape uses the GEMM backend `backend` (NULL: auto), in
// the GEMM context `kernels` (NULL: the default one).
enum conv_op { PLAIN, FUSED, RELU_AFTER, POOLED, POOL_AFTER };
static const struct gemm_backend *backend;
static const struct gemm_context *kernels;

// Path p's name, as the table spells it, for messages.
static const char *path_name(enum conv_path_id p)
{
    return conv_path_name(conv_path_of(p));
}

static struct conv_result run_conv(const struct conv_case *k, enum conv_path_id path,
                                   enum conv_op how, const float *xf, const float *wf,
                                   const float *bf, const float *dyf)
{
    char what[128];
    describe(k, what, sizeof what);
    struct tensor *x = tensor_param(4, (int[]){k->n, k->c, k->h, k->w});
    struct tensor *w = tensor_param(4, (int[]){k->oc, k->c, k->kh, k->kw});
    struct tensor *b = tensor_param(1, (int[]){k->oc});
    memcpy(x->data, xf, sizeof(float) * (size_t)x->size);
    memcpy(w->data, wf, sizeof(float) * (size_t)w->size);
    memcpy(b->data, bf, sizeof(float) * (size_t)b->size);
    struct tape_config c = tape_config_default();
    c.gemm = backend;
    c.conv = conv_path_of(path);
    if (kernels)
        c.kernels = *kernels;
    struct tape *t = tape_new(&c);
    struct tensor *y = how == POOLED ? op_conv2d_relu_maxpool2(t, x, w, b, k->stride, k->pad)
                       : how == FUSED || how == POOL_AFTER
                           ? op_conv2d_relu(t, x, w, b, k->stride, k->pad)
                           : op_conv2d(t, x, w, b, k->stride, k->pad);
    if (how == RELU_AFTER)
        y = op_relu(t, y);
    if (how == POOL_AFTER)
        y = op_maxpool2(t, y);
    cr_assert_not_null(y, "%s: %s", what, tape_error(t));
    tape_keep(t, y);  // copied below, after the backward
    long want = how == POOLED || how == POOL_AFTER ? pooled_size(k) : y_size(k);
    cr_assert_eq(y->size, want, "%s: y has %ld elements", what, y->size);
    struct tensor *dy = tensor_from(t, 4, y->shape, dyf, y->size);
    cr_assert_eq(tape_backward(t, op_sum(t, op_mul(t, y, dy))), 0, "%s: %s", what,
                 tape_error(t));
    struct conv_result r = {copy_of(y->data, y->size), copy_of(x->grad, x->size),
                            copy_of(w->grad, w->size), copy_of(b->grad, b->size)};
    tape_free(t);
    tensor_free(x);
    tensor_free(w);
    tensor_free(b);
    return r;
}

// ---------------------------------------------------------------------------
// Task 8.1: im2col, and the forward it makes.

static const struct conv_case shapes[] = {
    {2, 3, 7, 9, 5, 3, 3, 1, 1},  {2, 3, 7, 9, 5, 3, 3, 2, 0}, {1, 1, 6, 5, 2, 3, 3, 1, 0},
    {1, 17, 5, 6, 3, 3, 3, 1, 1}, {2, 3, 8, 7, 4, 3, 3, 2, 1}, {2, 2, 5, 7, 3, 1, 1, 1, 0},
    {1, 3, 7, 6, 2, 2, 3, 2, 1},  {1, 1, 1, 1, 1, 1, 1, 1, 0}, {1, 2, 3, 3, 2, 3, 3, 1, 0},
    {1, 2, 4, 5, 3, 5, 5, 1, 2},  {1, 3, 9, 7, 2, 3, 3, 3, 1},
};
enum { SHAPES = sizeof shapes / sizeof shapes[0] };

Test(task_8_1, im2col_matches_its_definition)
{
    for (int s = 0; s < SHAPES; s++) {
        const struct conv_case *k = &shapes[s];
        int oh = out_h(k), ow = out_w(k);
        long rows = (long)k->c * k->kh * k->kw, xs = (long)k->c * k->h * k->w;
        // Rows 3 floats wider than the matrix: as when runs of images sit
        // side by side. Every element must be written, and none of the gap.
        long ld = (long)oh * ow + 3;
        float *x = filled(xs, 10 + s), *col = malloc(sizeof(float) * (size_t)(rows * ld));
        for (long j = 0; j < rows * ld; j++)
            col[j] = NAN;
        im2col(x, k->c, k->h, k->w, k->kh, k->kw, k->stride, k->pad, col, ld);
        char what[128];
        describe(k, what, sizeof what);
        for (int ch = 0; ch < k->c; ch++)
            for (int u = 0; u < k->kh; u++)
                for (int v = 0; v < k->kw; v++)
                    for (int r = 0; r < oh; r++)
                        for (int q = 0; q < ow; q++) {
                            int iy = r * k->stride + u - k->pad, ix = q * k->stride + v - k->pad;
                            float want = iy >= 0 && iy < k->h && ix >= 0 && ix < k->w
                                             ? x[((long)ch * k->h + iy) * k->w + ix]
                                             : 0.0f;
                            long row = (ch * k->kh + u) * k->kw + v;
                            float got = col[row * ld + r * ow + q];
                            cr_assert(memcmp(&got, &want, sizeof got) == 0,
                                      "%s: col[%ld][%d·%d+%d] = %g, want %g", what, row, r, ow,
                                      q, got, want);
                        }
        for (long row = 0; row < rows; row++)
            for (long j = (long)oh * ow; j < ld; j++)
                cr_assert(isnan(col[row * ld + j]), "%s: im2col wrote col[%ld][%ld], past its row",
                          what, row, j);
        free(x);
        free(col);
    }
}

// The forward through im2col against the double-precision definition.
Test(task_8_1, conv_forward_matches_the_definition)
{
    for (int s = 0; s < SHAPES; s++) {
        const struct conv_case *k = &shapes[s];
        float *xf = filled(x_size(k), 20 + s), *wf = filled(w_size(k), 40 + s),
              *bf = filled(k->oc, 60 + s), *dyf = filled(y_size(k), 80 + s);
        double *x = widened(xf, x_size(k)), *w = widened(wf, w_size(k)),
               *b = widened(bf, k->oc);
        struct conv_result r = run_conv(k, CONV_IM2COL, PLAIN, xf, wf, bf, dyf);
        int oh = out_h(k), ow = out_w(k);
        char what[128];
        describe(k, what, sizeof what);
        for (int i = 0; i < k->n; i++)
            for (int o = 0; o < k->oc; o++)
                for (int rr = 0; rr < oh; rr++)
                    for (int q = 0; q < ow; q++) {
                        double want = conv_at(k, x, w, b, i, o, rr, q);
                        float got = r.y[((long)(i * k->oc + o) * oh + rr) * ow + q];
                        cr_assert(fabs(got - want) <= 1e-5 * (fabs(want) + 1.0),
                                  "%s: y[%d][%d][%d][%d] = %.9g, want %.9g", what, i, o, rr, q,
                                  got, want);
                    }
        result_free(&r);
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
        free(x);
        free(w);
        free(b);
    }
}

// Chapter 8's NHWC forward (stages/08_conv/layout.c), which the layout
// measurement times against the library's NCHW op: the same numbers in the
// other layout, at every shape of the table above, runs of 2 images.
Test(task_8_1, nhwc_forward_agrees_with_the_nchw_op)
{
    for (int s = 0; s < SHAPES; s++) {
        const struct conv_case *k = &shapes[s];
        int oh = out_h(k), ow = out_w(k), taps = k->kh * k->kw;
        long P = (long)oh * ow, K = (long)taps * k->c, hw = (long)k->h * k->w;
        float *xf = filled(x_size(k), 300 + s), *wf = filled(w_size(k), 320 + s),
              *bf = filled(k->oc, 340 + s), *dyf = filled(y_size(k), 360 + s);
        struct conv_result r = run_conv(k, CONV_IM2COL, PLAIN, xf, wf, bf, dyf);
        float *x = malloc(sizeof(float) * (size_t)x_size(k));
        float *wk = malloc(sizeof(float) * (size_t)(K * k->oc));
        float *rows = malloc(sizeof(float) * (size_t)(2 * P * K));
        float *y = malloc(sizeof(float) * (size_t)y_size(k));
        for (int i = 0; i < k->n; i++)
            for (int ch = 0; ch < k->c; ch++)
                for (long p = 0; p < hw; p++)
                    x[(i * hw + p) * k->c + ch] = xf[(i * k->c + ch) * hw + p];
        for (int o = 0; o < k->oc; o++)
            for (int ch = 0; ch < k->c; ch++)
                for (int t = 0; t < taps; t++)
                    wk[((long)t * k->c + ch) * k->oc + o] = wf[((long)o * k->c + ch) * taps + t];
        conv_forward_nhwc(x, k->n, k->c, k->h, k->w, wk, bf, k->oc, k->kh, k->kw, k->stride,
                          k->pad, 2, rows, y);
        char what[128];
        describe(k, what, sizeof what);
        for (int i = 0; i < k->n; i++)
            for (int o = 0; o < k->oc; o++)
                for (long p = 0; p < P; p++) {
                    float want = r.y[(i * k->oc + o) * P + p], got = y[(i * P + p) * k->oc + o];
                    cr_assert(fabsf(got - want) <= 1e-5f * (fabsf(want) + 1.0f),
                              "%s: NHWC y[%d][%ld][%d] = %.9g, NCHW %.9g", what, i, p, o, got,
                              want);
                }
        result_free(&r);
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
        free(x);
        free(wk);
        free(rows);
        free(y);
    }
}

// ---------------------------------------------------------------------------
// Task 8.2: the backward, through col2im.

// col2im is im2col's adjoint: <im2col(x), c> = <x, col2im(c)> for any x and
// c. Products of floats are exact in double, so only the sums' order differs.
Test(task_8_2, col2im_is_the_adjoint_of_im2col)
{
    for (int s = 0; s < SHAPES; s++) {
        const struct conv_case *k = &shapes[s];
        long P = (long)out_h(k) * out_w(k), cols = (long)k->c * k->kh * k->kw * P,
             xs = (long)k->c * k->h * k->w;
        float *x = filled(xs, 100 + s), *c = filled(cols, 200 + s);
        float *col = malloc(sizeof(float) * (size_t)cols), *dx = calloc((size_t)xs, sizeof(float));
        im2col(x, k->c, k->h, k->w, k->kh, k->kw, k->stride, k->pad, col, P);
        col2im(c, P, k->c, k->h, k->w, k->kh, k->kw, k->stride, k->pad, dx);
        double left = 0.0, right = 0.0, scale = 0.0;
        for (long j = 0; j < cols; j++) {
            left += (double)col[j] * c[j];
            scale += fabs((double)col[j] * c[j]);
        }
        for (long j = 0; j < xs; j++)
            right += (double)x[j] * dx[j];
        char what[128];
        describe(k, what, sizeof what);
        // col2im's float sums of up to kh·kw terms round: 1e-6 of the scale.
        cr_assert(fabs(left - right) <= 1e-6 * scale + 1e-12,
                  "%s: <im2col(x), c> = %.12g but <x, col2im(c)> = %.12g", what, left, right);
        free(x);
        free(c);
        free(col);
        free(dx);
    }
}

// A loss of the convolution's inputs, in double: conv_loss, or
// pooled_loss below.
typedef double loss_fn(const struct conv_case *k, const double *x, const double *w,
                       const double *b, const double *dy);

// Checks grad (n floats) against central differences of loss in v.
// conv_loss is linear in every input, so the differences are exact up to
// rounding; pooled_loss is linear but for its kinks, which random inputs
// meet with a tiny chance. The tolerance is stage 07's, 1e-4 of the largest
// gradient.
// The gradient of loss with respect to v (n values) by central differences.
static double *numeric_gradient(loss_fn *loss, const struct conv_case *k, double *x, double *w,
                                double *b, const double *dy, double *v, long n)
{
    double *num = malloc(sizeof(double) * (size_t)n);
    for (long j = 0; j < n; j++) {
        double keep = v[j], h = 1e-6 * fmax(1.0, fabs(keep));
        v[j] = keep + h;
        double up = loss(k, x, w, b, dy);
        v[j] = keep - h;
        double down = loss(k, x, w, b, dy);
        v[j] = keep;
        num[j] = (up - down) / (2.0 * h);
    }
    return num;
}

// grad against the finite differences num, within 1e-4 of their largest.
static void expect_near_fd(const char *what, const struct conv_case *k, const double *num,
                           long n, const float *grad)
{
    double big = 0.0;
    for (long j = 0; j < n; j++)
        big = fmax(big, fabs(num[j]));
    char shape[128];
    describe(k, shape, sizeof shape);
    double tol = 1e-4 * big + 1e-6;
    for (long j = 0; j < n; j++)
        cr_assert(fabs(grad[j] - num[j]) <= tol,
                  "%s: %s[%ld] = %.9g, finite differences %.9g (tol %.3g)", shape, what, j,
                  grad[j], num[j], tol);
}

static void expect_fd(const char *what, loss_fn *loss, const struct conv_case *k, double *x,
                      double *w, double *b, const double *dy, double *v, long n,
                      const float *grad)
{
    double *num = numeric_gradient(loss, k, x, w, b, dy, v, n);
    expect_near_fd(what, k, num, n, grad);
    free(num);
}

static void check_backward(const struct conv_case *k, enum conv_path_id path, uint64_t seed)
{
    float *xf = filled(x_size(k), seed), *wf = filled(w_size(k), seed + 1),
          *bf = filled(k->oc, seed + 2), *dyf = filled(y_size(k), seed + 3);
    double *x = widened(xf, x_size(k)), *w = widened(wf, w_size(k)), *b = widened(bf, k->oc),
           *dy = widened(dyf, y_size(k));
    struct conv_result r = run_conv(k, path, PLAIN, xf, wf, bf, dyf);
    expect_fd("dx", conv_loss, k, x, w, b, dy, x, x_size(k), r.dx);
    expect_fd("dw", conv_loss, k, x, w, b, dy, w, w_size(k), r.dw);
    expect_fd("dbias", conv_loss, k, x, w, b, dy, b, k->oc, r.db);
    result_free(&r);
    free(xf);
    free(wf);
    free(bf);
    free(dyf);
    free(x);
    free(w);
    free(b);
    free(dy);
}

Test(task_8_2, conv_backward_finite_differences, .timeout = 300)
{
    for (int s = 0; s < SHAPES; s++)
        check_backward(&shapes[s], CONV_IM2COL, 300 + 10 * s);
}

// The paths chosen by shape (direct for few channels, 1×1) have the same
// backward; check it through them too.
Test(task_8_2, conv_backward_finite_differences_auto_path, .timeout = 300)
{
    for (int s = 0; s < SHAPES; s++)
        check_backward(&shapes[s], CONV_AUTO, 500 + 10 * s);
}

// The task's products go through the GEMM backend the tape was given, as
// every matmul of the book's networks does (--gemm picks it): dW = DY·COLᵀ
// and DCOL = wᵀ·DY, in whatever pieces, come to oc·K·n·P multiply-adds each.
// A backward that got its gradients some other way, right as they may be,
// is not the task's. The backend counts what it is asked for, from any
// thread, and passes the call on to auto.
static _Atomic long dw_madds, dcol_madds, other_madds;

static int counting_gemm(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb,
                         int m, int n, int k, float alpha, const float *A, int lda, const float *B,
                         int ldb, float beta, float *C, int ldc)
{
    long madds = (long)m * n * k;
    if (ta == GEMM_NOTRANS && tb == GEMM_TRANS)
        dw_madds += madds;
    else if (ta == GEMM_TRANS && tb == GEMM_NOTRANS)
        dcol_madds += madds;
    else
        other_madds += madds;
    return gemm_backend_find("auto")->run(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C,
                                          ldc);
}

Test(task_8_2, im2col_backward_multiplies_through_the_gemm_backend)
{
    const struct gemm_backend counting = {"counting", "auto, counting its multiply-adds",
                                          counting_gemm, 1};
    for (int s = 0; s < SHAPES; s++) {
        const struct conv_case *k = &shapes[s];
        float *xf = filled(x_size(k), 1900 + s), *wf = filled(w_size(k), 1920 + s),
              *bf = filled(k->oc, 1940 + s), *dyf = filled(y_size(k), 1960 + s);
        dw_madds = dcol_madds = other_madds = 0;
        backend = &counting;
        struct conv_result r = run_conv(k, CONV_IM2COL, PLAIN, xf, wf, bf, dyf);
        backend = NULL;
        long K = (long)k->c * k->kh * k->kw, P = (long)out_h(k) * out_w(k);
        long want = (long)k->oc * K * k->n * P;
        char what[128];
        describe(k, what, sizeof what);
        cr_expect_eq(other_madds, want,
                     "%s: the forward's GEMMs did %ld multiply-adds through the backend, not "
                     "oc·K·n·P = %ld",
                     what, (long)other_madds, want);
        cr_expect_eq(dw_madds, want,
                     "%s: dW = DY·COLᵀ did %ld multiply-adds through the tape's GEMM backend, "
                     "not oc·K·n·P = %ld",
                     what, (long)dw_madds, want);
        cr_expect_eq(dcol_madds, want,
                     "%s: DCOL = wᵀ·DY did %ld multiply-adds through the tape's GEMM backend, "
                     "not K·n·P·oc = %ld",
                     what, (long)dcol_madds, want);
        result_free(&r);
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
    }
}

// The implicit GEMM packs the col matrix from x itself, padding, strides,
// 5×5 and 1×1 filters included: its forward against the definition and its
// gradients by finite differences, on every shape.
Test(conv, conv_implicit_finite_differences, .timeout = 300)
{
    for (int s = 0; s < SHAPES; s++)
        check_backward(&shapes[s], CONV_IMPLICIT, 700 + 10 * s);
}

static void check_golden(const char *file, int stride, int pad)
{
    struct golden_set s;
    load_golden(file, &s);
    const struct golden *gx = find(&s, "x"), *gw = find(&s, "w"), *gb = find(&s, "bias"),
                        *gdy = find(&s, "dy");
    struct conv_case k = {gx->shape[0], gx->shape[1], gx->shape[2], gx->shape[3], gw->shape[0],
                          gw->shape[2], gw->shape[3], stride, pad};
    cr_assert_eq(y_size(&k), gdy->size, "%s: the stride or padding does not match", file);
    const enum conv_path_id paths[] = {CONV_AUTO, CONV_IM2COL, CONV_1X1, CONV_DIRECT};
    for (int p = 0; p < 4; p++) {
        struct conv_result r = run_conv(&k, paths[p], PLAIN, gx->v, gw->v, gb->v, gdy->v);
        char what[64];
        snprintf(what, sizeof what, "%s (%s) y", file, path_name(paths[p]));
        expect_close(what, r.y, find(&s, "y"));
        snprintf(what, sizeof what, "%s (%s) grad_x", file, path_name(paths[p]));
        expect_close(what, r.dx, find(&s, "grad_x"));
        snprintf(what, sizeof what, "%s (%s) grad_w", file, path_name(paths[p]));
        expect_close(what, r.dw, find(&s, "grad_w"));
        snprintf(what, sizeof what, "%s (%s) grad_bias", file, path_name(paths[p]));
        expect_close(what, r.db, find(&s, "grad_bias"));
        result_free(&r);
    }
}

Test(task_8_2, conv_matches_pytorch_3x3_stride1_pad1) { check_golden("conv_s1p1.txt", 1, 1); }
Test(task_8_2, conv_matches_pytorch_3x3_stride2_pad0) { check_golden("conv_s2p0.txt", 2, 0); }
Test(task_8_2, conv_matches_pytorch_one_channel) { check_golden("conv_c1.txt", 1, 0); }
Test(task_8_2, conv_matches_pytorch_17_channels) { check_golden("conv_c17.txt", 1, 1); }
Test(task_8_2, conv_matches_pytorch_1x1) { check_golden("conv_1x1.txt", 1, 0); }
Test(task_8_2, conv_matches_pytorch_2x3_stride2_pad1) { check_golden("conv_k23.txt", 2, 1); }

// ---------------------------------------------------------------------------
// The three paths, the direct kernels, the fused ReLU.

// a and b (n floats) agree within 1e-5 of the largest |a|: float sums of up
// to a few hundred terms in different orders.
static void expect_near(const char *what, const float *want, const float *got, long n)
{
    float big = 0.0f;
    for (long i = 0; i < n; i++)
        big = fmaxf(big, fabsf(want[i]));
    for (long i = 0; i < n; i++)
        cr_assert(fabsf(got[i] - want[i]) <= 1e-5f * big + 1e-7f, "%s[%ld] = %.9g, want %.9g",
                  what, i, got[i], want[i]);
}

static void expect_same_result(const char *what, const struct conv_case *k,
                               const struct conv_result *want, const struct conv_result *got)
{
    char shape[128], buf[256];
    describe(k, shape, sizeof shape);
    snprintf(buf, sizeof buf, "%s, %s: y", shape, what);
    expect_near(buf, want->y, got->y, y_size(k));
    snprintf(buf, sizeof buf, "%s, %s: dx", shape, what);
    expect_near(buf, want->dx, got->dx, x_size(k));
    snprintf(buf, sizeof buf, "%s, %s: dw", shape, what);
    expect_near(buf, want->dw, got->dw, w_size(k));
    snprintf(buf, sizeof buf, "%s, %s: dbias", shape, what);
    expect_near(buf, want->db, got->db, k->oc);
}

// Shapes each path takes: 3×3 at stride 1 (direct), 1×1 (1x1), and the
// network's own first layers.
static const struct conv_case path_shapes[] = {
    {2, 1, 9, 11, 4, 3, 3, 1, 0}, {2, 3, 7, 9, 5, 3, 3, 1, 1}, {1, 4, 5, 17, 6, 3, 3, 1, 1},
    {2, 5, 6, 6, 3, 3, 3, 1, 0},  {2, 6, 5, 7, 4, 1, 1, 1, 0}, {1, 17, 4, 5, 3, 1, 1, 1, 0},
    {3, 1, 28, 28, 8, 3, 3, 1, 0}, {1, 8, 13, 13, 5, 3, 3, 1, 0}, {1, 2, 1, 1, 3, 3, 3, 1, 1},
    {1, 2, 3, 40, 2, 3, 3, 1, 1},
};
enum { PATH_SHAPES = sizeof path_shapes / sizeof path_shapes[0] };

Test(conv, every_path_agrees_with_im2col, .timeout = 120)
{
    const enum conv_path_id paths[] = {CONV_AUTO, CONV_1X1, CONV_DIRECT, CONV_IMPLICIT,
                                    CONV_WINOGRAD};
    for (int s = 0; s < PATH_SHAPES; s++) {
        const struct conv_case *k = &path_shapes[s];
        float *xf = filled(x_size(k), 900 + s), *wf = filled(w_size(k), 920 + s),
              *bf = filled(k->oc, 940 + s), *dyf = filled(y_size(k), 960 + s);
        for (int relu = 0; relu < 2; relu++) {
            enum conv_op how = relu ? FUSED : PLAIN;
            struct conv_result want = run_conv(k, CONV_IM2COL, how, xf, wf, bf, dyf);
            for (int p = 0; p < 5; p++) {
                struct conv_result got = run_conv(k, paths[p], how, xf, wf, bf, dyf);
                char what[64];
                snprintf(what, sizeof what, "%s path%s", path_name(paths[p]),
                         relu ? " with ReLU" : "");
                expect_same_result(what, k, &want, &got);
                result_free(&got);
            }
            result_free(&want);
        }
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
    }
}

// Every GEMM backend must honour beta = 1 (the forward adds onto the bias,
// dW accumulates over the images) and both transposes (dW = dy·colᵀ,
// dcol = wᵀ·dy): each gives what auto gives, on each GEMM path.
Test(conv, every_gemm_backend_agrees, .timeout = 120)
{
    const struct conv_case cases[] = {{2, 3, 7, 9, 5, 3, 3, 2, 1}, {2, 6, 5, 7, 4, 1, 1, 1, 0}};
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    for (int s = 0; s < 2; s++) {
        const struct conv_case *k = &cases[s];
        float *xf = filled(x_size(k), 980 + s), *wf = filled(w_size(k), 982 + s),
              *bf = filled(k->oc, 984 + s), *dyf = filled(y_size(k), 986 + s);
        struct conv_result want = run_conv(k, CONV_AUTO, PLAIN, xf, wf, bf, dyf);
        for (int i = 0; i < count; i++) {
            backend = &all[i];
            struct conv_result got = run_conv(k, CONV_AUTO, PLAIN, xf, wf, bf, dyf);
            backend = NULL;
            expect_same_result(all[i].name, k, &want, &got);
            result_free(&got);
        }
        result_free(&want);
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
    }
}

// The fused op is conv2d then relu in one node: the same output and
// gradients, forward and backward, on every path.
Test(conv, fused_relu_equals_conv_then_relu)
{
    const enum conv_path_id paths[] = {CONV_IM2COL, CONV_1X1, CONV_DIRECT, CONV_IMPLICIT,
                                    CONV_WINOGRAD};
    for (int s = 0; s < PATH_SHAPES; s++) {
        const struct conv_case *k = &path_shapes[s];
        float *xf = filled(x_size(k), 700 + s), *wf = filled(w_size(k), 720 + s),
              *bf = filled(k->oc, 740 + s), *dyf = filled(y_size(k), 760 + s);
        for (int p = 0; p < 5; p++) {
            struct conv_result want = run_conv(k, paths[p], RELU_AFTER, xf, wf, bf, dyf);
            struct conv_result got = run_conv(k, paths[p], FUSED, xf, wf, bf, dyf);
            char what[64];
            snprintf(what, sizeof what, "conv2d_relu against conv2d, relu (%s)",
                     path_name(paths[p]));
            expect_same_result(what, k, &want, &got);
            cr_assert(memcmp(want.y, got.y, sizeof(float) * (size_t)y_size(k)) == 0,
                      "%s: the outputs differ in their bits", what);
            result_free(&want);
            result_free(&got);
        }
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
    }
    // One node, not two.
    struct tape *t = tape_new(NULL);
    struct tensor *x = tensor_param(4, (int[]){1, 1, 4, 4});
    struct tensor *w = tensor_param(4, (int[]){1, 1, 3, 3}), *b = tensor_param(1, (int[]){1});
    cr_assert_not_null(op_conv2d_relu(t, x, w, b, 1, 0));
    cr_assert_eq(tape_node_count(t), 1);
    tape_free(t);
    tensor_free(x);
    tensor_free(w);
    tensor_free(b);
}

// ---------------------------------------------------------------------------
// The convolution, its ReLU and the pooling as one op.

// Shapes with odd output sides (the pooling drops the last row or column),
// one channel and many, filter counts around the fused kernel's blocks of 16
// channels, both paddings, a 1×1 and a stride-2 convolution (the GEMM paths),
// a 2×2 output (one window), and the network's own layers.
static const struct conv_case pool_shapes[] = {
    {2, 1, 9, 11, 4, 3, 3, 1, 0},  {2, 3, 7, 9, 5, 3, 3, 1, 1},  {1, 4, 5, 17, 19, 3, 3, 1, 1},
    {2, 6, 5, 7, 4, 1, 1, 1, 0},   {3, 1, 28, 28, 8, 3, 3, 1, 0}, {1, 8, 13, 13, 5, 3, 3, 1, 0},
    {2, 3, 8, 7, 4, 3, 3, 2, 1},   {1, 2, 4, 4, 33, 3, 3, 1, 0},  {1, 17, 6, 5, 3, 3, 3, 1, 1},
    {2, 1, 28, 28, 32, 3, 3, 1, 0},
};
enum { POOL_SHAPES = sizeof pool_shapes / sizeof pool_shapes[0] };

static void expect_same_bits(const char *what, const float *want, const float *got, long n)
{
    for (long i = 0; i < n; i++)
        cr_assert(memcmp(&want[i], &got[i], sizeof(float)) == 0, "%s[%ld] = %.9g, want %.9g",
                  what, i, got[i], want[i]);
}

// op_conv2d_relu_maxpool2 is op_conv2d_relu then op_maxpool2 in one node:
// the same bits forward and backward, on every path.
Test(conv, fused_pool_equals_conv_relu_then_pool, .timeout = 120)
{
    const enum conv_path_id paths[] = {CONV_AUTO,     CONV_IM2COL,  CONV_1X1,
                                    CONV_DIRECT,   CONV_IMPLICIT, CONV_WINOGRAD};
    for (int s = 0; s < POOL_SHAPES; s++) {
        const struct conv_case *k = &pool_shapes[s];
        float *xf = filled(x_size(k), 1100 + s), *wf = filled(w_size(k), 1120 + s),
              *bf = filled(k->oc, 1140 + s), *dyf = filled(pooled_size(k), 1160 + s);
        for (int p = 0; p < 6; p++) {
            struct conv_result want = run_conv(k, paths[p], POOL_AFTER, xf, wf, bf, dyf);
            struct conv_result got = run_conv(k, paths[p], POOLED, xf, wf, bf, dyf);
            char shape[128], what[256];
            describe(k, shape, sizeof shape);
            const struct {
                const char *name;
                const float *want, *got;
                long n;
            } parts[] = {{"y", want.y, got.y, pooled_size(k)},
                         {"dx", want.dx, got.dx, x_size(k)},
                         {"dw", want.dw, got.dw, w_size(k)},
                         {"dbias", want.db, got.db, k->oc}};
            for (int j = 0; j < 4; j++) {
                snprintf(what, sizeof what, "%s, %s path: fused %s", shape,
                         path_name(paths[p]), parts[j].name);
                expect_same_bits(what, parts[j].want, parts[j].got, parts[j].n);
            }
            result_free(&want);
            result_free(&got);
        }
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
    }
    // One node, not three.
    struct tape *t = tape_new(NULL);
    struct tensor *x = tensor_param(4, (int[]){1, 1, 4, 4});
    struct tensor *w = tensor_param(4, (int[]){1, 1, 3, 3}), *b = tensor_param(1, (int[]){1});
    cr_assert_not_null(op_conv2d_relu_maxpool2(t, x, w, b, 1, 0));
    cr_assert_eq(tape_node_count(t), 1);
    // An output of one row cannot be pooled 2×2: a clear error.
    tape_clear(t);
    struct tensor *thin = tensor_new(t, 4, (int[]){1, 1, 3, 8});
    cr_assert_null(op_conv2d_relu_maxpool2(t, thin, w, b, 1, 0));
    cr_assert(strstr(tape_error(t), "conv2d_relu_maxpool2") && strstr(tape_error(t), "1×6"),
              "message: %s", tape_error(t));
    tape_free(t);
    tensor_free(x);
    tensor_free(w);
    tensor_free(b);
}

// Σ dy ⊙ maxpool2(relu(conv)), in double: a window's maximum after the ReLU
// is the largest of its four outputs, or 0.
static double pooled_loss(const struct conv_case *k, const double *x, const double *w,
                          const double *b, const double *dy)
{
    int ph = out_h(k) / 2, pw = out_w(k) / 2;
    double L = 0.0;
    for (int i = 0; i < k->n; i++)
        for (int o = 0; o < k->oc; o++)
            for (int r = 0; r < ph; r++)
                for (int q = 0; q < pw; q++) {
                    double m = 0.0;
                    for (int at = 0; at < 4; at++)
                        m = fmax(m, conv_at(k, x, w, b, i, o, 2 * r + at / 2, 2 * q + at % 2));
                    L += dy[((long)(i * k->oc + o) * ph + r) * pw + q] * m;
                }
    return L;
}

// The fused op's gradients by finite differences, on every path, and its
// output against the double-precision definition.
// The fused op's gradients by finite differences, on every path, and its
// output against the double-precision definition. The loss is in double and
// the same for every path: its values and finite differences are taken once
// per shape.
Test(conv, fused_pool_finite_differences, .timeout = 300)
{
    const enum conv_path_id paths[] = {CONV_IM2COL, CONV_1X1, CONV_DIRECT, CONV_IMPLICIT,
                                    CONV_WINOGRAD};
    for (int s = 0; s < POOL_SHAPES - 1; s++) {  // the last is the network's 32 filters: slow
        const struct conv_case *k = &pool_shapes[s];
        float *xf = filled(x_size(k), 1200 + s), *wf = filled(w_size(k), 1220 + s),
              *bf = filled(k->oc, 1240 + s), *dyf = filled(pooled_size(k), 1260 + s);
        double *x = widened(xf, x_size(k)), *w = widened(wf, w_size(k)), *b = widened(bf, k->oc),
               *dy = widened(dyf, pooled_size(k));
        double *want = malloc(sizeof(double) * (size_t)pooled_size(k));
        double *unit = calloc((size_t)pooled_size(k), sizeof(double));
        for (long j = 0; j < pooled_size(k); j++) {
            unit[j] = 1.0;
            want[j] = pooled_loss(k, x, w, b, unit);
            unit[j] = 0.0;
        }
        free(unit);
        double *num_dx = numeric_gradient(pooled_loss, k, x, w, b, dy, x, x_size(k));
        double *num_dw = numeric_gradient(pooled_loss, k, x, w, b, dy, w, w_size(k));
        double *num_db = numeric_gradient(pooled_loss, k, x, w, b, dy, b, k->oc);
        for (int p = 0; p < 5; p++) {
            struct conv_result r = run_conv(k, paths[p], POOLED, xf, wf, bf, dyf);
            for (long j = 0; j < pooled_size(k); j++)
                cr_assert(fabs(r.y[j] - want[j]) <= 1e-5 * (fabs(want[j]) + 1.0),
                          "%s path: pooled y[%ld] = %.9g, want %.9g", path_name(paths[p]), j,
                          r.y[j], want[j]);
            expect_near_fd("dx", k, num_dx, x_size(k), r.dx);
            expect_near_fd("dw", k, num_dw, w_size(k), r.dw);
            expect_near_fd("dbias", k, num_db, k->oc, r.db);
            result_free(&r);
        }
        free(want);
        free(num_dx);
        free(num_dw);
        free(num_db);
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
        free(x);
        free(w);
        free(b);
        free(dy);
    }
}

// The fused direct kernel of each ISA against that ISA's direct kernel, then
// the ReLU, then the pooling row: the same sums in the same order, so the
// same bits and the same codes, at every width around the vector sizes,
// and conv1's 28 (rows of 13 and 14 windows), planes of up to 247 windows
// (h up to 40), both paddings, several channel counts and filter counts on
// both sides of the kernel's blocks of 16 and of 8 (one input channel
// without padding).
static void conv_pool_against_unfused(enum isa isa)
{
    if (!isa_supported(isa))
        cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    conv_pool_fn *fused = conv_pool_kernel(isa);
    conv_direct_fn *direct = conv_direct_kernel(isa);
    const int channels[] = {1, 2, 5}, filters[] = {1, 8, 17, 32};
    for (int pad = 0; pad <= 1; pad++)
        for (int ci = 0; ci < 3; ci++)
            for (int fi = 0; fi < 4; fi++)
                // and planes taller than conv_pool_one's stretch of 128
                // windows, ending anywhere in a row
                for (int h = 4 - 2 * pad; h <= 40; h += h < 7 ? 1 : 11)
                    for (int w = 4 - 2 * pad; w <= 28; w += w < 21 ? 1 : 7) {
                        int c = channels[ci], oc = filters[fi];
                        int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2, ph = oh / 2, pw = ow / 2;
                        long xs = (long)c * h * w, ks = (long)oc * c * 9;
                        float *x = filled(xs, 1300 + w), *k = filled(ks, 1400 + h),
                              *bias = filled(oc, 1500 + c);
                        float *kt = malloc(sizeof(float) * (size_t)ks);
                        for (int o = 0; o < oc; o++)
                            for (long j = 0; j < (long)c * 9; j++)
                                kt[j * oc + o] = k[o * c * 9 + j];
                        float *conv = malloc(sizeof(float) * (size_t)(oc * oh * ow));
                        for (int o = 0; o < oc; o++)
                            for (int j = 0; j < oh * ow; j++)
                                conv[o * oh * ow + j] = bias[o];
                        direct(x, c, h, w, k, oc, pad, conv);
                        for (int j = 0; j < oc * oh * ow; j++)
                            conv[j] = conv[j] > 0.0f ? conv[j] : 0.0f;
                        long ys = (long)oc * ph * pw;
                        float *want = malloc(sizeof(float) * (size_t)ys);
                        float *got = malloc(sizeof(float) * (size_t)ys);
                        int *where = malloc(sizeof(int) * (size_t)ys);
                        unsigned char *code = malloc((size_t)ys);
                        for (int o = 0; o < oc; o++)
                            for (int r = 0; r < ph; r++) {
                                const float *top = conv + ((long)o * oh + 2 * r) * ow;
                                long at = ((long)o * ph + r) * pw;
                                maxpool_row_scalar(top, top + ow, ow, pw, 0, want + at,
                                                   where + at);
                            }
                        fused(x, c, h, w, kt, bias, oc, pad, got, code);
                        for (int o = 0; o < oc; o++)
                            for (int r = 0; r < ph; r++)
                                for (int q = 0; q < pw; q++) {
                                    long j = ((long)o * ph + r) * pw + q;
                                    int k_want = where[j] - 2 * q;
                                    k_want = k_want >= ow ? 2 + k_want - ow : k_want;
                                    cr_assert(memcmp(&want[j], &got[j], sizeof(float)) == 0 &&
                                                  code[j] == k_want,
                                              "conv_pool_%s c %d oc %d %d×%d pad %d: y[%ld] = "
                                              "%.9g (code %d), unfused %.9g (code %d)",
                                              isa_name(isa), c, oc, h, w, pad, j, got[j],
                                              code[j], want[j], k_want);
                                }
                        free(x);
                        free(k);
                        free(bias);
                        free(kt);
                        free(conv);
                        free(want);
                        free(got);
                        free(where);
                        free(code);
                    }
}

Test(conv, conv_pool_scalar_equals_unfused) { conv_pool_against_unfused(ISA_SCALAR); }
Test(conv, conv_pool_avx2_equals_unfused) { conv_pool_against_unfused(ISA_AVX2); }
Test(conv, conv_pool_avx512_equals_unfused) { conv_pool_against_unfused(ISA_AVX512); }
Test(conv, conv_pool_neon_equals_unfused) { conv_pool_against_unfused(ISA_NEON); }

// The direct path's dW kernel of each ISA against the scalar one: sums of
// up to oh·ow products in another order, so within a few roundings of the
// sum of the terms' magnitudes. Heights up to 12, so that rows go four at a
// time, then two, then one, with and without the padding's rows.
static void conv_dw_against_scalar(enum isa isa)
{
    if (!isa_supported(isa))
        cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    conv_dw_fn *kernel = conv_dw_kernel(isa);
    const int channels[] = {1, 3};
    for (int pad = 0; pad <= 1; pad++)
        for (int ci = 0; ci < 2; ci++)
            for (int h = 3 - 2 * pad; h <= 12; h++)
                for (int w = 3 - 2 * pad; w <= 27; w++) {
                    int c = channels[ci], oc = 3, oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
                    long xs = (long)c * h * w, ldy = (long)oh * ow + 5, ks = (long)oc * c * 9;
                    float *x = filled(xs, 1600 + w), *dy = filled(oc * ldy, 1700 + h);
                    float *want = filled(ks, 1800 + c), *got = copy_of(want, ks);
                    float *mag = calloc((size_t)ks, sizeof(float));
                    float *ax = malloc(sizeof(float) * (size_t)xs);
                    float *ady = malloc(sizeof(float) * (size_t)(oc * ldy));
                    for (long j = 0; j < xs; j++)
                        ax[j] = fabsf(x[j]);
                    for (long j = 0; j < oc * ldy; j++)
                        ady[j] = fabsf(dy[j]);
                    conv_dw_scalar(x, c, h, w, dy, ldy, oc, pad, want);
                    kernel(x, c, h, w, dy, ldy, oc, pad, got);
                    conv_dw_scalar(ax, c, h, w, ady, ldy, oc, pad, mag);  // Σ |terms|
                    for (long j = 0; j < ks; j++)
                        cr_assert(fabsf(got[j] - want[j]) <= 1e-6f * (mag[j] + 1.0f),
                                  "conv_dw_%s c %d, %d×%d, pad %d: dw[%ld] = %.9g, scalar %.9g",
                                  isa_name(isa), c, h, w, pad, j, got[j], want[j]);
                    free(x);
                    free(dy);
                    free(want);
                    free(got);
                    free(mag);
                    free(ax);
                    free(ady);
                }
}

Test(conv, conv_dw_avx2_agrees_with_scalar) { conv_dw_against_scalar(ISA_AVX2); }
Test(conv, conv_dw_avx512_agrees_with_scalar) { conv_dw_against_scalar(ISA_AVX512); }
Test(conv, conv_dw_neon_agrees_with_scalar) { conv_dw_against_scalar(ISA_NEON); }

// The fused ReLU-and-pooling row of each ISA against the scalar one: the
// same maxima and codes, bit for bit, at every width around the vector
// size, on values with many ties (a quarter of a grid of eight levels) and
// many below zero.
static void relu_pool_row_against_scalar(enum isa isa)
{
    if (!isa_supported(isa))
        cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    relu_pool_row_fn *row = relu_pool_row_kernel(isa);
    for (int ow = 1; ow <= 40; ow++) {
        int w = 2 * ow + ow % 2;
        float *x = filled(2L * w, 1900 + ow);
        for (int j = 0; j < 2 * w; j++)
            x[j] = floorf(x[j] * 4.0f) / 4.0f;
        float want[41], got[41];
        unsigned char k_want[41], k_got[41];
        got[ow] = -1.0f;  // past the row: never written
        k_got[ow] = 9;
        relu_pool_row_scalar(x, x + w, ow, 0.25f, want, k_want);
        row(x, x + w, ow, 0.25f, got, k_got);
        cr_assert(got[ow] == -1.0f && k_got[ow] == 9, "relu_pool_row_%s ow %d wrote past the row",
                  isa_name(isa), ow);
        for (int q = 0; q < ow; q++)
            cr_assert(memcmp(&got[q], &want[q], sizeof(float)) == 0 && k_got[q] == k_want[q],
                      "relu_pool_row_%s ow %d: y[%d] = %g (code %d), scalar %g (code %d)",
                      isa_name(isa), ow, q, got[q], k_got[q], want[q], k_want[q]);
        free(x);
    }
}

Test(conv, relu_pool_row_avx2_agrees_with_scalar) { relu_pool_row_against_scalar(ISA_AVX2); }
Test(conv, relu_pool_row_avx512_agrees_with_scalar) { relu_pool_row_against_scalar(ISA_AVX512); }
Test(conv, relu_pool_row_neon_agrees_with_scalar) { relu_pool_row_against_scalar(ISA_NEON); }

// The fused ReLU and pooling of a whole plane, each ISA's against the
// scalar one, bit for bit: planes of 2 to 9 rows of 2 to 19 floats (rows of
// 1 to 9 windows: narrower than a vector, as wide and wider; odd last rows
// and columns), values with many ties and many below zero. The plane is
// allocated at its exact size, so that a read past it is caught by the
// sanitizers, and nothing on either side of the ph·pw outputs is written.
static void relu_pool_plane_against_scalar(enum isa isa)
{
    if (!isa_supported(isa))
        cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    relu_pool_plane_fn *kernel = relu_pool_plane_kernel(isa);
    enum { GUARD = 9 };
    for (int oh = 2; oh <= 9; oh++)
        for (int ow = 2; ow <= 19; ow++) {
            int n = (oh / 2) * (ow / 2);
            float *plane = filled((long)oh * ow, 2000 + oh * 20 + ow);
            for (int j = 0; j < oh * ow; j++)
                plane[j] = floorf(plane[j] * 4.0f) / 4.0f;
            float want[81], got[81 + 2 * GUARD];
            unsigned char k_want[81], k_got[81 + 2 * GUARD];
            for (int j = 0; j < n + 2 * GUARD; j++) {
                got[j] = -1.0f;
                k_got[j] = 9;
            }
            relu_pool_plane_scalar(plane, oh, ow, 0.25f, want, k_want);
            kernel(plane, oh, ow, 0.25f, got + GUARD, k_got + GUARD);
            for (int j = 0; j < n + 2 * GUARD; j++) {
                int q = j - GUARD;
                if (q < 0 || q >= n) {
                    cr_assert(got[j] == -1.0f && k_got[j] == 9,
                              "relu_pool_plane_%s %d×%d wrote outside its outputs, at %d",
                              isa_name(isa), oh, ow, q);
                    continue;
                }
                cr_assert(memcmp(&got[j], &want[q], sizeof(float)) == 0 && k_got[j] == k_want[q],
                          "relu_pool_plane_%s %d×%d: y[%d] = %g (code %d), scalar %g (code %d)",
                          isa_name(isa), oh, ow, q, got[j], k_got[j], want[q], k_want[q]);
            }
            free(plane);
        }
}

Test(conv, relu_pool_plane_avx2_agrees_with_scalar) { relu_pool_plane_against_scalar(ISA_AVX2); }
Test(conv, relu_pool_plane_avx512_agrees_with_scalar)
{
    relu_pool_plane_against_scalar(ISA_AVX512);
}
Test(conv, relu_pool_plane_neon_agrees_with_scalar) { relu_pool_plane_against_scalar(ISA_NEON); }

// The fused op's backward, a plane at a time, of each ISA against the
// scalar one, bit for bit: planes of 1 to 9 rows of 1 to 19 windows (1×1
// pooled planes; rows narrower than a vector, as wide, and wider), each with
// and without an odd last row and an odd last column; gradients with −0s
// among them, maxima of zero (no gradient) and above, codes 0 to 3. Every
// element of the plane is written and nothing on either side of it, and the
// sum returned is row_sum of the plane. The pooled arrays are allocated at
// their exact size, so that a read past them is caught by the sanitizers.
static void relu_pool_plane_backward_against_scalar(enum isa isa)
{
    if (!isa_supported(isa))
        cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    relu_pool_plane_backward_fn *kernel = relu_pool_plane_backward_kernel(isa);
    enum { MOST_H = 9, MOST_W = 19, GUARD = 24 };
    for (int ph = 1; ph <= MOST_H; ph++)
        for (int pw = 1; pw <= MOST_W; pw++)
            for (int odd = 0; odd < 4; odd++) {
                int oh = 2 * ph + odd / 2, ow = 2 * pw + odd % 2, n = ph * pw;
                long size = (long)oh * ow;
                uint64_t seed = 2000 + 40 * (uint64_t)(ph * MOST_W + pw) + (uint64_t)odd;
                float *g = filled(n, seed), *y = filled(n, seed + 7);
                unsigned char *code = malloc((size_t)n);
                float *want = malloc(sizeof(float) * (size_t)(size + 2 * GUARD)),
                      *got = malloc(sizeof(float) * (size_t)(size + 2 * GUARD));
                cr_assert(code && want && got);
                for (int q = 0; q < n; q++) {
                    code[q] = (unsigned char)((q * 7 + pw + odd) % 4);
                    y[q] = q % 3 == 0 ? 0.0f : fabsf(y[q]);
                    if (q % 5 == 1)
                        g[q] = -0.0f;
                }
                for (long j = 0; j < size + 2 * GUARD; j++)
                    want[j] = got[j] = -1.0f;  // a gradient is never −1 here
                float sum_want = relu_pool_plane_backward_scalar(g, y, code, ph, pw, oh, ow,
                                                                 want + GUARD);
                float sum_got = kernel(g, y, code, ph, pw, oh, ow, got + GUARD);
                for (long j = 0; j < size + 2 * GUARD; j++) {
                    int inside = j >= GUARD && j < GUARD + size;
                    cr_assert(inside || (got[j] == -1.0f && want[j] == -1.0f),
                              "relu_pool_plane_backward_%s %d×%d windows (plane %d×%d) wrote "
                              "outside the plane, at %ld",
                              isa_name(isa), ph, pw, oh, ow, j - GUARD);
                    cr_assert(!inside || (want[j] != -1.0f &&
                                          memcmp(&got[j], &want[j], sizeof(float)) == 0),
                              "relu_pool_plane_backward_%s %d×%d windows (plane %d×%d): [%ld] = "
                              "%g, scalar %g",
                              isa_name(isa), ph, pw, oh, ow, j - GUARD, got[j], want[j]);
                }
                float sum = row_sum(want + GUARD, size);
                cr_assert(memcmp(&sum_want, &sum, sizeof sum) == 0 &&
                              memcmp(&sum_got, &sum, sizeof sum) == 0,
                          "relu_pool_plane_backward_%s %d×%d windows: sum %.9g, scalar %.9g, "
                          "row_sum %.9g",
                          isa_name(isa), ph, pw, sum_got, sum_want, sum);
                free(g);
                free(y);
                free(code);
                free(want);
                free(got);
            }
}

// row_sum is its definition (pool_row.h), bit for bit: part[p mod 32] in
// order, then the parts added in the fixed order row_sum_parts states. The
// values differ in magnitude, so another order would round differently.
Test(conv, row_sum_is_its_definition)
{
    enum { MOST = 200 };
    float *v = filled(MOST, 2400);
    for (int p = 0; p < MOST; p++)
        v[p] *= (float)(1 + p % 7) * (p % 3 ? 1e3f : 1e-3f);
    for (long n = 0; n <= MOST; n++) {
        float part[32] = {0};
        for (long p = 0; p < n; p++)
            part[p % 32] += v[p];
        float s[8];
        for (int l = 0; l < 8; l++)
            s[l] = (part[l] + part[l + 8]) + (part[l + 16] + part[l + 24]);
        float want = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
        float got = row_sum(v, n);
        cr_assert(memcmp(&got, &want, sizeof got) == 0, "row_sum of %ld floats: %.9g, want %.9g",
                  n, got, want);
    }
    free(v);
}

Test(conv, relu_pool_row_backward_scalar_keeps_the_bits)
{
    // −0 becomes +0; a maximum of zero sends nothing; the odd column is zero.
    const float g[2] = {-0.0f, 2.5f}, y[2] = {1.0f, 0.0f};
    const unsigned char code[2] = {3, 0};
    float top[5], bottom[5];
    relu_pool_row_backward_scalar(g, y, code, 2, 5, top, bottom);
    const float want_top[5] = {0, 0, 0, 0, 0}, want_bottom[5] = {0, 0.0f, 0, 0, 0};
    cr_assert(memcmp(top, want_top, sizeof top) == 0, "top row");
    cr_assert(memcmp(bottom, want_bottom, sizeof bottom) == 0 && !signbit(bottom[1]),
              "bottom row: the −0 gradient lands as +0");
    const float y2[2] = {1.0f, 3.0f};
    relu_pool_row_backward_scalar(g, y2, code, 2, 4, top, bottom);
    cr_assert(top[2] == 2.5f && top[3] == 0.0f && bottom[2] == 0.0f && bottom[3] == 0.0f,
              "window 1's code 0 names its top left");
}

Test(conv, relu_pool_plane_backward_scalar_writes_the_plane)
{
    // Two rows of one window each, in a plane of 5 rows of 2: window 0's
    // gradient at its bottom right, window 1's at its top left, the odd last
    // row zero, nothing past the plane; the sum is theirs.
    const float g[2] = {1.5f, -2.0f}, y[2] = {1.0f, 3.0f};
    const unsigned char code[2] = {3, 0};
    float plane[11];
    for (int j = 0; j < 11; j++)
        plane[j] = -1.0f;
    float sum = relu_pool_plane_backward_scalar(g, y, code, 2, 1, 5, 2, plane);
    const float want[10] = {0, 0, 0, 1.5f, -2.0f, 0, 0, 0, 0, 0};
    cr_assert(memcmp(plane, want, sizeof want) == 0 && plane[10] == -1.0f,
              "the plane's windows, its odd row zero, nothing past it");
    cr_assert(sum == -0.5f, "sum %g", sum);
}

Test(conv, relu_pool_plane_backward_avx2_agrees_with_scalar)
{
    relu_pool_plane_backward_against_scalar(ISA_AVX2);
}
Test(conv, relu_pool_plane_backward_avx512_agrees_with_scalar)
{
    relu_pool_plane_backward_against_scalar(ISA_AVX512);
}
Test(conv, relu_pool_plane_backward_neon_agrees_with_scalar)
{
    relu_pool_plane_backward_against_scalar(ISA_NEON);
}

// Every direct kernel this CPU runs against the scalar one, at every row
// length around the vector widths (the masks and the scalar ends), both
// paddings, a few channel counts. The vector kernels fuse multiply and add,
// so they agree to a few roundings of the terms' magnitudes.
static void direct_against_scalar(enum isa isa)
{
    if (!isa_supported(isa))
        cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    conv_direct_fn *kernel = conv_direct_kernel(isa);
    const int channels[] = {1, 2, 3, 5};
    for (int pad = 0; pad <= 1; pad++)
        for (int ci = 0; ci < 4; ci++)
            for (int h = 3 - 2 * pad; h <= 5; h++)
                for (int w = 3 - 2 * pad; w <= 40; w++) {
                    int c = channels[ci], oc = 3, oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
                    long xs = (long)c * h * w, ks = (long)oc * c * 9, ys = (long)oc * oh * ow;
                    float *x = filled(xs, 1000 + w), *k = filled(ks, 2000 + h);
                    float *want = filled(ys, 3000 + c), *got = copy_of(want, ys);
                    float *mag = malloc(sizeof(float) * (size_t)ys);
                    float *ax = malloc(sizeof(float) * (size_t)xs);
                    float *ak = malloc(sizeof(float) * (size_t)ks);
                    for (long j = 0; j < ys; j++)
                        mag[j] = fabsf(want[j]);
                    for (long j = 0; j < xs; j++)
                        ax[j] = fabsf(x[j]);
                    for (long j = 0; j < ks; j++)
                        ak[j] = fabsf(k[j]);
                    conv_direct_scalar(x, c, h, w, k, oc, pad, want);
                    kernel(x, c, h, w, k, oc, pad, got);
                    conv_direct_scalar(ax, c, h, w, ak, oc, pad, mag);  // Σ |terms|
                    for (long j = 0; j < ys; j++)
                        cr_assert(fabsf(got[j] - want[j]) <= 1e-6f * mag[j] + 1e-7f,
                                  "conv_direct_%s c %d, %d×%d, pad %d: y[%ld] = %.9g, scalar "
                                  "%.9g",
                                  isa_name(isa), c, h, w, pad, j, got[j], want[j]);
                    free(x);
                    free(k);
                    free(want);
                    free(got);
                    free(mag);
                    free(ax);
                    free(ak);
                }
}

Test(conv, direct_avx2_agrees_with_scalar) { direct_against_scalar(ISA_AVX2); }
Test(conv, direct_avx512_agrees_with_scalar) { direct_against_scalar(ISA_AVX512); }
Test(conv, direct_neon_agrees_with_scalar) { direct_against_scalar(ISA_NEON); }

// Every max-pooling row kernel this CPU runs against the scalar one, bit
// for bit, at every width around the vector lengths (the masks and the
// scalar ends), on values with many ties (a few distinct values), negative
// zeros and NaNs.
static void maxpool_row_against_scalar(enum isa isa)
{
    if (!isa_supported(isa))
        cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    maxpool_row_fn *row = maxpool_row_kernel(isa);
    for (int w = 2; w <= 71; w++) {
        int ow = w / 2;
        float *x = malloc(sizeof(float) * 2 * (size_t)w);
        float *want = malloc(sizeof(float) * (size_t)ow), *got = malloc(sizeof(float) * (size_t)ow);
        int *at_want = malloc(sizeof(int) * (size_t)ow), *at_got = malloc(sizeof(int) * (size_t)ow);
        unsigned s = 12345u + (unsigned)w;
        for (int j = 0; j < 2 * w; j++) {
            s = s * 1664525u + 1013904223u;
            int v = (int)(s >> 28);  // 0..15
            x[j] = v == 15 ? NAN : v == 14 ? -0.0f : (float)(v % 4) - 1.0f;
        }
        maxpool_row_scalar(x, x + w, w, ow, 1000, want, at_want);
        row(x, x + w, w, ow, 1000, got, at_got);
        for (int q = 0; q < ow; q++) {
            cr_assert(memcmp(&got[q], &want[q], sizeof(float)) == 0,
                      "maxpool_row_%s w %d: y[%d] = %g, scalar %g", isa_name(isa), w, q,
                      got[q], want[q]);
            cr_assert_eq(at_got[q], at_want[q], "maxpool_row_%s w %d: where[%d] = %d, scalar %d",
                         isa_name(isa), w, q, at_got[q], at_want[q]);
        }
        free(x);
        free(want);
        free(got);
        free(at_want);
        free(at_got);
    }
}

Test(conv, maxpool_row_avx2_agrees_with_scalar) { maxpool_row_against_scalar(ISA_AVX2); }
Test(conv, maxpool_row_avx512_agrees_with_scalar) { maxpool_row_against_scalar(ISA_AVX512); }
Test(conv, maxpool_row_neon_agrees_with_scalar) { maxpool_row_against_scalar(ISA_NEON); }

// ---------------------------------------------------------------------------
// The implicit GEMM's gather, and the path on every ISA's micro-kernel.

// 1 when this CPU runs isa, which every kernel family then takes; else 0,
// and (when say) a line in the log that it was skipped.
static int take_isa(enum isa isa, int say)
{
    if (isa_force(isa) == 0)
        return 1;
    if (say)
        cr_log_info("skipped %s: this CPU cannot run it", isa_name(isa));
    return 0;
}

// Columns in runs of consecutive offsets, as the packings make them (runs of
// 1 to 16, a last run that ends at span), as many runs as the AVX2 gather
// gives back to the scalar loop, and columns that do not ascend (which it
// gives back too); rows in any order, the first at x's first float and, in
// half the panels, the last at its last float (x is allocated at its exact
// size: a load past it is caught by the sanitizers). Panels of 16 columns,
// and of 32 gathered in two halves of 16 (AVX-512's width), rows 32 floats
// apart.
#if defined(__x86_64__)
static void gather_against_scalar(enum isa isa)
{
    if (!take_isa(isa, 1))
        return;
    const int run_lengths[][16] = {{16}, {11, 5}, {5, 11}, {1, 11, 4}, {3, 3, 3, 3, 3, 1},
                                   {2, 2, 2, 2, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                              1, 1, 1, 1}};
    enum { CASES = sizeof run_lengths / sizeof run_lengths[0] };
    const int kc = 37;
    long span = 4000;
    float *x = filled(span, 77);
    float *want = malloc(sizeof(float) * 32 * kc), *got = malloc(sizeof(float) * 32 * kc);
    for (int nr = 16; nr <= 32; nr += 16)
        for (int c = 0; c <= CASES; c++)
            for (int ends = 0; ends < 2; ends++) {
                int cols[32], j = 0, at = 0;
                for (int half = 0; half < nr / 16; half++) {
                    const int *lengths = run_lengths[(c + 3 * half) % CASES];
                    for (int r = 0, end = j + 16; j < end; r++) {
                        for (int l = 0; l < lengths[r]; l++)
                            cols[j++] = at + l;
                        at += lengths[r] + 13 * r + 2;  // a gap, then the next run
                    }
                }
                if (c == CASES) {  // the first half turned round at column 11: not ascending
                    int swapped[16];
                    for (int q = 0; q < 16; q++)
                        swapped[q] = q < 5 ? cols[11 + q] : cols[q - 5];
                    memcpy(cols, swapped, sizeof swapped);
                }
                int last = 0;
                for (int q = 0; q < nr; q++)
                    last = cols[q] > cols[last] ? q : last;
                long rows[37];
                for (int p = 0; p < kc; p++)
                    rows[p] = ends && p == kc - 1 ? span - 1 - cols[last]
                                                  : (p * 97) % (span - 40 - cols[last]);
                conv_gather_scalar(x, rows, kc, cols, nr, nr, want);
                for (int h = 0; h < nr; h += 16)
                    conv_gather16_avx2(x, rows, kc, cols + h, nr, got + h);
                char what[96];
                snprintf(what, sizeof what, "gathered panel of %d, case %d%s", nr, c,
                         ends ? ", at the end of x" : "");
                expect_same_bits(what, want, got, (long)nr * kc);
            }
    free(x);
    free(want);
    free(got);
    isa_force(isa_best());
}
#endif

Test(conv, gather16_avx2_equals_scalar)
{
#if defined(__x86_64__)
    gather_against_scalar(ISA_AVX2);
#else
    cr_log_info("skipped: no AVX2 on this architecture");
#endif
}

// dW's panels at stride 1 (conv_transpose): the AVX2 transpose against the
// scalar loop, bit for bit, at panel widths of every ISA's nr that is whole
// 8×8 blocks (AVX2's 16, AVX-512's 32, and 8), with fewer taps than columns
// (conv1 has 9), stretches of 1 to 40 outputs (not multiples of 8), taps in
// runs of three as a filter's rows give them, and stretches that end at the
// last float of x, where a block's loads would leave it. Nothing past the
// panel's len rows is written.
#if defined(__x86_64__)
static void transposes_against_scalar(void)
{
    const int widths[] = {8, 16, 32}, taps[] = {1, 7, 8, 9, 16, 17, 32};
    const int lens[] = {1, 3, 7, 8, 9, 11, 17, 40};
    const long span = 3000;
    float *x = filled(span, 91);
    float *want = malloc(sizeof(float) * 41 * 32), *got = malloc(sizeof(float) * 41 * 32);
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (size_t t = 0; t < sizeof taps / sizeof taps[0]; t++) {
            int nr = widths[w], nj = taps[t];
            if (nj > nr)
                continue;
            int cols[32];
            for (int j = 0; j < nj; j++)  // three taps, then a gap of a row
                cols[j] = j / 3 * 13 + j % 3 + (j / 9) * 100;
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                int len = lens[l];
                long last = span - len - cols[nj - 1];  // the stretch ends at x's end
                const long starts[] = {0, 5, last - 3, last};
                for (int a = 0; a < 4; a++) {
                    long at = starts[a];
                    if (at < 0 || at > last)
                        continue;
                    for (int i = 0; i < 41 * 32; i++)
                        want[i] = got[i] = -1.0f;
                    conv_transpose_scalar(x, at, len, cols, nj, nr, want);
                    conv_transpose_avx2(x, span, at, len, cols, nj, nr, got);
                    char what[96];
                    snprintf(what, sizeof what, "transposed panel nr %d, %d taps, len %d, at %ld",
                             nr, nj, len, at);
                    expect_same_bits(what, want, got, 41L * 32);
                    for (int i = len * nr; i < 41 * 32; i++)
                        cr_assert(got[i] == -1.0f, "%s: wrote b[%d], past the panel", what, i);
                }
            }
        }
    free(x);
    free(want);
    free(got);
}

// The AVX2 packing of A's slivers (mr = 6) lays them out as pack_a_panel
// does, bit for bit, at lengths around its blocks of eight (kc 1 to 17, and
// long), from rows wider than kc; nothing past the sliver is written.
static void slivers_against_pack_a(void)
{
    const int lengths[] = {1, 5, 7, 8, 9, 15, 16, 17, 100, 1000};
    const long lda = 1003;
    float *A = filled(6 * lda, 93);
    float *want = malloc(sizeof(float) * (6 * 1000 + 8)),
          *got = malloc(sizeof(float) * (6 * 1000 + 8));
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
        int kc = lengths[l];
        for (int i = 0; i < 6 * 1000 + 8; i++)
            want[i] = got[i] = -1.0f;
        pack_a_panel(GEMM_NOTRANS, 6, kc, A + 1, (int)lda, 6, want);
        conv_pack_sliver6_avx2(kc, A + 1, lda, got);
        char what[64];
        snprintf(what, sizeof what, "sliver of 6 × %d", kc);
        expect_same_bits(what, want, got, 6 * 1000 + 8);
    }
    free(A);
    free(want);
    free(got);
}
#endif

Test(conv, packings_avx2_equal_scalar)
{
#if defined(__x86_64__)
    if (!isa_supported(ISA_AVX2)) {
        cr_log_info("skipped: this CPU cannot run avx2");
        return;
    }
    transposes_against_scalar();
    slivers_against_pack_a();
#else
    cr_log_info("skipped: no AVX2 on this architecture");
#endif
}

// The implicit dW makes the packed GEMM's sums on COL term for term, however
// its panels are packed: the same bits as im2col then gemm_packed, on every
// ISA this CPU has, with stretches across images, a k of more than one kc
// block (9 images of 121 outputs), padding and stride 2 (the gather), and
// filter counts that leave a part sliver: of 1, 5, 4 and 2 rows, and the
// book's conv2 (64 filters: a last sliver of 4 on AVX2's 4-row kernel, of
// 8 on AVX-512's 8-row kernel).
Test(conv, implicit_dw_same_bits_as_im2col_gemm, .timeout = 120)
{
    const struct conv_case cases[] = {{9, 5, 13, 13, 7, 3, 3, 1, 0}, {3, 17, 6, 7, 65, 3, 3, 1, 0},
                                      {2, 3, 9, 8, 4, 2, 3, 2, 1}, {2, 1, 28, 28, 32, 3, 3, 1, 0},
                                      {9, 32, 13, 13, 64, 3, 3, 1, 0}};
    const enum isa isas[] = {ISA_SCALAR, ISA_AVX2, ISA_AVX512, ISA_NEON};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (isa_force(isas[i]) != 0)
            continue;
        for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
            const struct conv_case *k = &cases[s];
            struct conv_geom g = {k->c, k->h, k->w, k->kh, k->kw, k->stride, k->pad, 0, 0, NULL};
            g.oh = (k->h + 2 * k->pad - k->kh) / k->stride + 1;
            g.ow = (k->w + 2 * k->pad - k->kw) / k->stride + 1;
            long xs = (long)k->c * k->h * k->w, P = (long)g.oh * g.ow, ld = k->n * P;
            long K = (long)k->c * k->kh * k->kw;
            float *x = filled(k->n * xs, 1500 + s), *dy = filled(k->oc * ld, 1520 + s);
            float *want = filled(k->oc * K, 1540 + s), *got = malloc(sizeof(float) * k->oc * K);
            float *col = malloc(sizeof(float) * K * ld);
            memcpy(got, want, sizeof(float) * k->oc * K);
            for (int j = 0; j < k->n; j++)
                im2col(x + j * xs, k->c, k->h, k->w, k->kh, k->kw, k->stride, k->pad, col + j * P,
                       ld);
            gemm_packed(GEMM_NOTRANS, GEMM_TRANS, k->oc, (int)K, (int)ld, 1.0f, dy, (int)ld, col,
                        (int)ld, 1.0f, want, (int)K);
            cr_assert_eq(conv_implicit_dw(&g, x, xs, k->n, dy, k->oc, got), 0);
            char shape[128], what[192];
            describe(k, shape, sizeof shape);
            snprintf(what, sizeof what, "%s, implicit dW on %s", shape, isa_name(isas[i]));
            expect_same_bits(what, want, got, k->oc * K);
            free(x);
            free(dy);
            free(want);
            free(got);
            free(col);
        }
    }
    isa_force(isa_best());
}

// The implicit path's col2im (conv_col2im_*) gives col2im's bits, at
// stride 1: rows of dx shorter than a vector, a vector and a bit, exactly
// two, up to the widest the AVX2 mask table takes and past it, up to the
// AVX-512 one's and past it (the plain loop then), padding of 1 and 2,
// filters of 1×1 to 3×5 and one wider than the table, col's rows further
// apart than P, and −0 in col and dx (a −0 sum must stay −0). Nothing
// outside dx is written.
typedef void col2im_kernel(const struct conv_geom *g, const float *col, long ldcol, float *dx);

static void col2im_kernel_against_col2im(col2im_kernel *kernel, const char *name)
{
    const int shapes[][6] = {{1, 1, 1, 1, 1, 0},  {2, 7, 5, 3, 3, 0},   {3, 13, 13, 3, 3, 0},
                             {1, 17, 9, 3, 3, 1}, {2, 5, 40, 3, 5, 2},  {1, 9, 64, 3, 3, 0},
                             {1, 6, 65, 3, 3, 1}, {2, 6, 8, 2, 3, 1},   {1, 4, 17, 1, 1, 0},
                             {1, 3, 12, 1, 9, 0}, {2, 11, 16, 3, 3, 0}, {1, 2, 3, 3, 3, 2},
                             {1, 3, 128, 3, 3, 1}, {1, 3, 130, 3, 3, 1}};
    enum { GUARD = 16 };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int *k = shapes[s];
        struct conv_geom g = {k[0], k[1], k[2], k[3], k[4], 1, k[5], 0, 0, NULL};
        g.oh = g.h + 2 * g.pad - g.kh + 1;
        g.ow = g.w + 2 * g.pad - g.kw + 1;
        long P = (long)g.oh * g.ow, ldcol = P + 3, K = (long)g.c * g.kh * g.kw;
        long xs = (long)g.c * g.h * g.w;
        float *col = filled(K * ldcol, 1600 + s), *start = filled(xs + 2 * GUARD, 1620 + s);
        for (long i = 0; i < K * ldcol; i += 5)
            col[i] = -0.0f;
        for (long i = 0; i < xs + 2 * GUARD; i += 3)
            start[i] = -0.0f;
        float *want = malloc(sizeof(float) * (size_t)(xs + 2 * GUARD)),
              *got = malloc(sizeof(float) * (size_t)(xs + 2 * GUARD));
        memcpy(want, start, sizeof(float) * (size_t)(xs + 2 * GUARD));
        memcpy(got, start, sizeof(float) * (size_t)(xs + 2 * GUARD));
        col2im(col, ldcol, g.c, g.h, g.w, g.kh, g.kw, 1, g.pad, want + GUARD);
        kernel(&g, col, ldcol, got + GUARD);
        char what[128];
        snprintf(what, sizeof what, "conv_col2im_%s, %d×%d×%d, filter %d×%d, pad %d", name, g.c,
                 g.h, g.w, g.kh, g.kw, g.pad);
        expect_same_bits(what, want, got, xs + 2 * GUARD);
        free(col);
        free(start);
        free(want);
        free(got);
    }
}

Test(conv, col2im_gather_same_bits_as_col2im)
{
    col2im_kernel_against_col2im(conv_col2im_scalar, "scalar");
#if defined(__x86_64__)
    if (isa_supported(ISA_AVX2))
        col2im_kernel_against_col2im(conv_col2im_avx2, "avx2");
    else
        cr_log_info("skipped avx2: this CPU cannot run it");
    if (isa_supported(ISA_AVX512))
        col2im_kernel_against_col2im(conv_col2im_avx512, "avx512");
    else
        cr_log_info("skipped avx512: this CPU cannot run it");
#endif
}

// The implicit data gradient, DCOL made a few panels at a time with wᵀ
// packed once, makes the bits of one packed GEMM over the run and col2im
// image by image, on every ISA this CPU has: at stride 1 (the gather) and
// 2 (col2im), with padding, filter counts above and below a sliver, and
// with the blocking's kc cut to 16 so that the filters take several passes.
// Images of 1, 16 and 17 outputs, many to a panel or one panel and a bit,
// and a whole run of the book's conv2, its images starting anywhere in a
// panel; dcol is exactly conv_implicit_dx_scratch floats.
Test(conv, implicit_dx_same_bits_as_gemm_then_col2im, .timeout = 120)
{
    const struct conv_case cases[] = {{3, 5, 13, 13, 7, 3, 3, 1, 0}, {2, 3, 6, 7, 65, 3, 3, 1, 1},
                                      {2, 3, 9, 8, 4, 2, 3, 2, 1}, {2, 32, 13, 13, 64, 3, 3, 1, 0},
                                      {1, 1, 1, 1, 1, 1, 1, 1, 0}, {17, 2, 3, 3, 5, 3, 3, 1, 0},
                                      {5, 2, 6, 6, 3, 3, 3, 1, 0}, {7, 2, 19, 3, 9, 3, 3, 1, 0},
                                      {16, 32, 13, 13, 64, 3, 3, 1, 0}};
    const enum isa isas[] = {ISA_SCALAR, ISA_AVX2, ISA_AVX512, ISA_NEON};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (isa_force(isas[i]) != 0)
            continue;
        for (int small_kc = 0; small_kc < 2; small_kc++) {
            struct gemm_context ctx = gemm_context_for(isas[i]);
            if (small_kc) {
                struct gemm_blocking bl = ctx.kernel.blocking;
                bl.kc = 16;
                cr_assert_eq(gemm_context_set_blocking(&ctx, bl), 0);
            }
            for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
                const struct conv_case *k = &cases[s];
                struct conv_geom g = {k->c,      k->h,   k->w, k->kh, k->kw,
                                      k->stride, k->pad, 0,    0,     &ctx};
                g.oh = out_h(k);
                g.ow = out_w(k);
                long xs = (long)k->c * k->h * k->w, P = (long)g.oh * g.ow, ld = k->n * P;
                long K = (long)k->c * k->kh * k->kw;
                float *w = filled(k->oc * K, 1640 + s), *dy = filled(k->oc * ld, 1660 + s);
                float *want = filled(k->n * xs, 1680 + s), *got = malloc(sizeof(float) * k->n * xs);
                long scratch = conv_implicit_dx_scratch(&g);
                float *dcol = malloc(sizeof(float) * K * ld);
                float *mine = malloc(sizeof(float) * scratch);
                memcpy(got, want, sizeof(float) * k->n * xs);
                gemm_packed_ctx(&ctx, GEMM_TRANS, GEMM_NOTRANS, (int)K, (int)ld, k->oc, 1.0f, w,
                                (int)K, dy, (int)ld, 0.0f, dcol, (int)ld);
                for (int j = 0; j < k->n; j++)
                    col2im(dcol + j * P, ld, k->c, k->h, k->w, k->kh, k->kw, k->stride, k->pad,
                           want + j * xs);
                cr_assert_eq(conv_implicit_dx(&g, w, k->oc, dy, k->n, mine, got, xs, 1.0f), 0);
                char shape[128], what[192];
                describe(k, shape, sizeof shape);
                snprintf(what, sizeof what, "%s, implicit dx on %s%s", shape, isa_name(isas[i]),
                         small_kc ? ", kc 16" : "");
                expect_same_bits(what, want, got, k->n * xs);
                // beta 0: dx written, whatever it held (NaN here), as if it held zeros.
                for (long e = 0; e < k->n * xs; e++) {
                    want[e] = 0.0f;
                    got[e] = NAN;
                }
                for (int j = 0; j < k->n; j++)
                    col2im(dcol + j * P, ld, k->c, k->h, k->w, k->kh, k->kw, k->stride, k->pad,
                           want + j * xs);
                cr_assert_eq(conv_implicit_dx(&g, w, k->oc, dy, k->n, mine, got, xs, 0.0f), 0);
                snprintf(what, sizeof what, "%s, implicit dx written on %s%s", shape,
                         isa_name(isas[i]), small_kc ? ", kc 16" : "");
                expect_same_bits(what, want, got, k->n * xs);
                free(w);
                free(dy);
                free(want);
                free(got);
                free(dcol);
                free(mine);
            }
        }
    }
    isa_force(isa_best());
}

// The implicit path runs the active ISA's micro-kernel: on each one this
// CPU has, it agrees with im2col (on the same ISA) at the shapes its packing
// treats apart: panels that straddle images, a last panel of few columns,
// padding, and one image of one pixel.
Test(conv, implicit_path_on_every_isa, .timeout = 120)
{
    const struct conv_case cases[] = {{3, 5, 7, 6, 7, 3, 3, 1, 0}, {2, 17, 5, 9, 17, 3, 3, 1, 1},
                                      {7, 1, 1, 1, 1, 1, 1, 1, 0}, {1, 7, 13, 13, 65, 3, 3, 1, 0},
                                      {2, 3, 9, 8, 4, 2, 3, 2, 1}};
    const enum isa isas[] = {ISA_SCALAR, ISA_AVX2, ISA_AVX512, ISA_NEON};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (isa_force(isas[i]) != 0)
            continue;
        for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
            const struct conv_case *k = &cases[s];
            float *xf = filled(x_size(k), 1400 + s), *wf = filled(w_size(k), 1420 + s),
                  *bf = filled(k->oc, 1440 + s), *dyf = filled(y_size(k), 1460 + s);
            struct conv_result want = run_conv(k, CONV_IM2COL, PLAIN, xf, wf, bf, dyf);
            struct conv_result got = run_conv(k, CONV_IMPLICIT, PLAIN, xf, wf, bf, dyf);
            char what[64];
            snprintf(what, sizeof what, "implicit path on %s", isa_name(isas[i]));
            expect_same_result(what, k, &want, &got);
            result_free(&want);
            result_free(&got);
            free(xf);
            free(wf);
            free(bf);
            free(dyf);
        }
    }
    isa_force(isa_best());
}

// The implicit forward hands each image to the pooling only once the last
// pass over k has finished its columns: with a kc that cuts conv2's k of
// 288 into passes (one of 7 floats, not a multiple of anything), or takes it
// whole (its rows then packed in two chunks, the second from the middle of a
// channel's taps), its fused
// pooling gives the bits of the im2col path's on the packed GEMM (the same
// loops and passes), whose pooling runs after the whole GEMM, on every ISA
// this CPU has.
Test(conv, implicit_pooling_waits_for_the_last_pass_over_k, .timeout = 120)
{
    const struct conv_case k = {3, 32, 7, 8, 9, 3, 3, 1, 0};
    const enum isa isas[] = {ISA_SCALAR, ISA_AVX2, ISA_AVX512, ISA_NEON};
    const int kcs[] = {7, 64, 288};
    float *xf = filled(x_size(&k), 2100), *wf = filled(w_size(&k), 2101),
          *bf = filled(k.oc, 2102), *dyf = filled(pooled_size(&k), 2103);
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (isa_force(isas[i]) != 0)
            continue;
        for (size_t c = 0; c < sizeof kcs / sizeof kcs[0]; c++) {
            struct gemm_context ctx = gemm_context_for(isas[i]);
            struct gemm_blocking bl = ctx.kernel.blocking;
            bl.kc = kcs[c];
            cr_assert_eq(gemm_context_set_blocking(&ctx, bl), 0);
            kernels = &ctx;
            backend = gemm_backend_find("packed");  // the implicit GEMM's loops, kc and all
            struct conv_result want = run_conv(&k, CONV_IM2COL, POOLED, xf, wf, bf, dyf);
            backend = NULL;
            struct conv_result got = run_conv(&k, CONV_IMPLICIT, POOLED, xf, wf, bf, dyf);
            char what[96];
            snprintf(what, sizeof what, "implicit pooling on %s, kc %d", isa_name(isas[i]),
                     kcs[c]);
            expect_same_bits(what, want.y, got.y, pooled_size(&k));
            result_free(&want);
            result_free(&got);
            kernels = NULL;
        }
    }
    free(xf);
    free(wf);
    free(bf);
    free(dyf);
    isa_force(isa_best());
}

// ---------------------------------------------------------------------------
// The Winograd path: F(4×4, 3×3) (conv_winograd.h).

// Its matrices, written out again here so that the test does not take them
// from the code it checks.
static const double wino_bt[6][6] = {
    {4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
    {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1},
};
static const double wino_g[6][3] = {
    {1.0 / 4, 0, 0},       {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1},
};
static const double wino_at[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

// The transforms with every entry, datum and weight replaced by its
// absolute value, in double: what the error bounds below are made of.
// |Bᵀ| |d| |B| of a 6×6 patch.
static void abs_input(double d[6][6], double v[6][6])
{
    double t[6][6];
    for (int a = 0; a < 6; a++)
        for (int z = 0; z < 6; z++) {
            t[a][z] = 0.0;
            for (int y = 0; y < 6; y++)
                t[a][z] += fabs(wino_bt[a][y]) * fabs(d[y][z]);
        }
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            v[a][b] = 0.0;
            for (int z = 0; z < 6; z++)
                v[a][b] += t[a][z] * fabs(wino_bt[b][z]);
        }
}

// |G| |g| |Gᵀ| of a 3×3 filter.
static void abs_filter(const double *g, double u[6][6])
{
    double gg[6][3];
    for (int a = 0; a < 6; a++)
        for (int j = 0; j < 3; j++)
            gg[a][j] = fabs(wino_g[a][0] * g[j]) + fabs(wino_g[a][1] * g[3 + j]) +
                       fabs(wino_g[a][2] * g[6 + j]);
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++)
            u[a][b] = gg[a][0] * fabs(wino_g[b][0]) + gg[a][1] * fabs(wino_g[b][1]) +
                      gg[a][2] * fabs(wino_g[b][2]);
}

// |A| |dy| |Aᵀ| of a 4×4 tile of the output's gradient.
static void abs_output_backward(double y[4][4], double m[6][6])
{
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            m[a][b] = 0.0;
            for (int r = 0; r < 4; r++)
                for (int q = 0; q < 4; q++)
                    m[a][b] += fabs(wino_at[r][a]) * fabs(y[r][q]) * fabs(wino_at[q][b]);
        }
}

// The 6×6 patch of channel ch of image i whose top-left output is (r0, q0),
// zero outside the image.
static void patch_of(const struct conv_case *k, const double *x, int i, int ch, int r0, int q0,
                     double d[6][6])
{
    for (int y = 0; y < 6; y++)
        for (int z = 0; z < 6; z++) {
            int iy = r0 + y - k->pad, ix = q0 + z - k->pad;
            int in = iy >= 0 && iy < k->h && ix >= 0 && ix < k->w;
            d[y][z] = in ? x[((long)(i * k->c + ch) * k->h + iy) * k->w + ix] : 0.0;
        }
}

// What bounds the error of output (r, q) of image i, filter o. The path
// makes each output as a sum of products through its transforms, so the
// rounding error is at most γ_n = n·u/(1 − n·u) (u = 2⁻²⁴) times the same
// sums made with every matrix entry, datum and filter weight replaced by
// its absolute value (Higham, "Accuracy and Stability of Numerical
// Algorithms", §3.1 and §3.5), where n bounds the roundings on any one path
// from an input to the output: c + 7 in the GEMM's sum over the channels
// (rounded up to 8), 6 in the input transform (two passes of three), 1 in
// the filters (made in double, rounded once), 8 in the output transform
// (two passes of four), 1 for the bias; n = c + 24 with one to spare.
static double winograd_bound(const struct conv_case *k, const double *x, const double *w,
                             const double *b, int i, int o, int r, int q)
{
    int r0 = r / 4 * 4, q0 = q / 4 * 4;
    double s = fabs(b[o]);
    for (int ch = 0; ch < k->c; ch++) {
        double d[6][6], v[6][6], u[6][6];
        patch_of(k, x, i, ch, r0, q0, d);
        abs_input(d, v);
        abs_filter(w + (o * k->c + ch) * 9, u);
        for (int a = 0; a < 6; a++)
            for (int c = 0; c < 6; c++)
                s += fabs(wino_at[r - r0][a]) * fabs(wino_at[q - q0][c]) * u[a][c] * v[a][c];
    }
    return s;
}

// Shapes around the path's blocks: outputs of 1 to 4 rows and columns past
// the last whole tile, channels and filters not a multiple of 8, padding 0
// to 2, one pixel; chunks of images (four of the book's second convolution
// make one, so 80 images make runs of five: a chunk of four and one of
// one), and an image of 49 tiles, a chunk to itself (32 make runs of two).
static const struct conv_case winograd_shapes[] = {
    {1, 1, 3, 3, 1, 3, 3, 1, 0},     {2, 7, 7, 7, 9, 3, 3, 1, 0},
    {3, 17, 13, 13, 65, 3, 3, 1, 0}, {5, 32, 13, 13, 64, 3, 3, 1, 0},
    {1, 8, 28, 28, 8, 3, 3, 1, 1},   {2, 3, 9, 20, 5, 3, 3, 1, 2},
    {1, 9, 4, 127, 3, 3, 3, 1, 0},   {1, 2, 1, 1, 3, 3, 3, 1, 1},
    {80, 2, 13, 13, 3, 3, 3, 1, 0},  {32, 3, 26, 26, 5, 3, 3, 1, 1},
};
enum { WINOGRAD_SHAPES = sizeof winograd_shapes / sizeof winograd_shapes[0] };

// The forward against the double-precision definition, within the bound
// above, on every ISA this CPU has (each has its own transforms, layout
// loops and GEMM kernel).
Test(conv, winograd_within_its_error_bound, .timeout = 120)
{
    const enum isa isas[] = {ISA_SCALAR, ISA_AVX2, ISA_AVX512, ISA_NEON};
    const double unit = ldexp(1.0, -24);
    for (int s = 0; s < WINOGRAD_SHAPES; s++) {
        const struct conv_case *k = &winograd_shapes[s];
        float *xf = filled(x_size(k), 2200 + s), *wf = filled(w_size(k), 2220 + s),
              *bf = filled(k->oc, 2240 + s), *dyf = filled(y_size(k), 2260 + s);
        double *x = widened(xf, x_size(k)), *w = widened(wf, w_size(k)), *b = widened(bf, k->oc);
        double n = k->c + 24, gamma = n * unit / (1.0 - n * unit);
        int oh = out_h(k), ow = out_w(k);
        char shape[128];
        describe(k, shape, sizeof shape);
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (!take_isa(isas[i], s == 0))
                continue;
            struct conv_result r = run_conv(k, CONV_WINOGRAD, PLAIN, xf, wf, bf, dyf);
            for (int im = 0; im < k->n; im++)
                for (int o = 0; o < k->oc; o++)
                    for (int y = 0; y < oh; y++)
                        for (int z = 0; z < ow; z++) {
                            double want = conv_at(k, x, w, b, im, o, y, z);
                            double tol = gamma * winograd_bound(k, x, w, b, im, o, y, z);
                            float got = r.y[((long)(im * k->oc + o) * oh + y) * ow + z];
                            cr_assert(fabs(got - want) <= tol,
                                      "%s on %s: y[%d][%d][%d][%d] = %.9g, want %.9g (bound "
                                      "%.3g)",
                                      shape, isa_name(isas[i]), im, o, y, z, got, want, tol);
                        }
            result_free(&r);
        }
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
        free(x);
        free(w);
        free(b);
    }
    isa_force(isa_best());
}

// The backward's bounds, made as the forward's: its sums with absolute
// values, over every tile. dx (n×c×h×w) at pixel (y, z) of a tile's patch
// gets Σ |Bᵀ|ᵀ (Σ_o |dM_o| ⊙ |U_o,ch|) |Bᵀ| from each tile whose patch holds
// it; dw (oc×c×3×3) gets |G|ᵀ (Σ_tiles |V_ch| ⊙ |dM_o|) |G|.
static void winograd_backward_bounds(const struct conv_case *k, const double *x,
                                     const double *w, const double *dy, double *bx, double *bw)
{
    int oh = out_h(k), ow = out_w(k), ty = (oh + 3) / 4, tx = (ow + 3) / 4;
    double(*u)[6][6] = malloc(sizeof *u * (size_t)(k->oc * k->c));
    double(*dm)[6][6] = malloc(sizeof *dm * (size_t)k->oc);
    double(*v)[6][6] = malloc(sizeof *v * (size_t)k->c);
    double(*sum)[6][6] = calloc((size_t)(k->oc * k->c), sizeof *sum);
    for (long j = 0; j < k->oc * k->c; j++)
        abs_filter(w + j * 9, u[j]);
    memset(bx, 0, sizeof(double) * (size_t)x_size(k));
    for (int i = 0; i < k->n; i++)
        for (int r0 = 0; r0 < 4 * ty; r0 += 4)
            for (int q0 = 0; q0 < 4 * tx; q0 += 4) {
                for (int o = 0; o < k->oc; o++) {
                    double t[4][4];
                    for (int r = 0; r < 4; r++)
                        for (int q = 0; q < 4; q++)
                            t[r][q] = r0 + r < oh && q0 + q < ow
                                          ? dy[((long)(i * k->oc + o) * oh + r0 + r) * ow + q0 + q]
                                          : 0.0;
                    abs_output_backward(t, dm[o]);
                }
                for (int ch = 0; ch < k->c; ch++) {
                    double d[6][6], dv[6][6] = {{0}};
                    patch_of(k, x, i, ch, r0, q0, d);
                    abs_input(d, v[ch]);
                    for (int o = 0; o < k->oc; o++)
                        for (int a = 0; a < 6; a++)
                            for (int b = 0; b < 6; b++) {
                                dv[a][b] += dm[o][a][b] * u[o * k->c + ch][a][b];
                                sum[o * k->c + ch][a][b] += v[ch][a][b] * dm[o][a][b];
                            }
                    for (int y = 0; y < 6; y++)
                        for (int z = 0; z < 6; z++) {
                            int iy = r0 + y - k->pad, ix = q0 + z - k->pad;
                            if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w)
                                continue;
                            double e = 0.0;
                            for (int a = 0; a < 6; a++)
                                for (int b = 0; b < 6; b++)
                                    e += fabs(wino_bt[a][y]) * dv[a][b] * fabs(wino_bt[b][z]);
                            bx[((long)(i * k->c + ch) * k->h + iy) * k->w + ix] += e;
                        }
                }
            }
    for (long j = 0; j < k->oc * k->c; j++)
        for (int p = 0; p < 3; p++)
            for (int q = 0; q < 3; q++) {
                double e = 0.0;
                for (int a = 0; a < 6; a++)
                    for (int b = 0; b < 6; b++)
                        e += fabs(wino_g[a][p]) * sum[j][a][b] * fabs(wino_g[b][q]);
                bw[j * 9 + p * 3 + q] = e;
            }
    free(u);
    free(dm);
    free(v);
    free(sum);
}

// The gradients from the definition, in double: dx = the full correlation
// of dy with the filters turned round, dw = Σ over images and outputs of
// dy times the input under the tap.
static void conv_gradients(const struct conv_case *k, const double *x, const double *w,
                           const double *dy, double *dx, double *dw)
{
    int oh = out_h(k), ow = out_w(k);
    memset(dx, 0, sizeof(double) * (size_t)x_size(k));
    memset(dw, 0, sizeof(double) * (size_t)w_size(k));
    for (int i = 0; i < k->n; i++)
        for (int o = 0; o < k->oc; o++)
            for (int r = 0; r < oh; r++)
                for (int q = 0; q < ow; q++) {
                    double g = dy[((long)(i * k->oc + o) * oh + r) * ow + q];
                    for (int ch = 0; ch < k->c; ch++)
                        for (int u = 0; u < 3; u++)
                            for (int v = 0; v < 3; v++) {
                                int iy = r + u - k->pad, ix = q + v - k->pad;
                                if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w)
                                    continue;
                                long at = ((long)(i * k->c + ch) * k->h + iy) * k->w + ix;
                                long wt = ((long)(o * k->c + ch) * 3 + u) * 3 + v;
                                dx[at] += w[wt] * g;
                                dw[wt] += x[at] * g;
                            }
                }
}

// The backward against the definition, within the bounds above, on every
// ISA this CPU has. The roundings on one path, as for the forward: for dx,
// 4 in dM's transform (two passes of two), oc + 7 in the GEMM over the
// filters, 1 in the filters, 6 in dV's transform (two of three), 3 where
// four tiles' patches overlap, 1 if dx is added into; n = oc + 32 with some
// to spare. For dw, 4 and 6 in the transforms of dY and x, the sum over the
// run's tiles (at most all n·ty·tx of them), 8 in Gᵀ dU G (two passes of
// three, and the rounded constants 1/6, 1/12, 1/24), 1 into the run's dw,
// and the 16 runs added; n = n·ty·tx + 48.
Test(conv, winograd_backward_within_its_error_bound, .timeout = 120)
{
    const enum isa isas[] = {ISA_SCALAR, ISA_AVX2, ISA_AVX512, ISA_NEON};
    const double unit = ldexp(1.0, -24);
    for (int s = 0; s < WINOGRAD_SHAPES; s++) {
        const struct conv_case *k = &winograd_shapes[s];
        float *xf = filled(x_size(k), 2300 + s), *wf = filled(w_size(k), 2320 + s),
              *bf = filled(k->oc, 2340 + s), *dyf = filled(y_size(k), 2360 + s);
        double *x = widened(xf, x_size(k)), *w = widened(wf, w_size(k)),
               *dy = widened(dyf, y_size(k));
        double *dx = malloc(sizeof(double) * (size_t)x_size(k)),
               *dw = malloc(sizeof(double) * (size_t)w_size(k)),
               *bx = malloc(sizeof(double) * (size_t)x_size(k)),
               *bw = malloc(sizeof(double) * (size_t)w_size(k));
        conv_gradients(k, x, w, dy, dx, dw);
        winograd_backward_bounds(k, x, w, dy, bx, bw);
        long tiles = (long)k->n * ((out_h(k) + 3) / 4) * ((out_w(k) + 3) / 4);
        double nx = k->oc + 32, nw = (double)tiles + 48;
        double gx = nx * unit / (1.0 - nx * unit), gw = nw * unit / (1.0 - nw * unit);
        char shape[128];
        describe(k, shape, sizeof shape);
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            if (!take_isa(isas[i], s == 0))
                continue;
            struct conv_result r = run_conv(k, CONV_WINOGRAD, PLAIN, xf, wf, bf, dyf);
            for (long j = 0; j < x_size(k); j++)
                cr_assert(fabs(r.dx[j] - dx[j]) <= gx * bx[j],
                          "%s on %s: dx[%ld] = %.9g, want %.9g (bound %.3g)", shape,
                          isa_name(isas[i]), j, r.dx[j], dx[j], gx * bx[j]);
            for (long j = 0; j < w_size(k); j++)
                cr_assert(fabs(r.dw[j] - dw[j]) <= gw * bw[j],
                          "%s on %s: dw[%ld] = %.9g, want %.9g (bound %.3g)", shape,
                          isa_name(isas[i]), j, r.dw[j], dw[j], gw * bw[j]);
            result_free(&r);
        }
        free(xf);
        free(wf);
        free(bf);
        free(dyf);
        free(x);
        free(w);
        free(dy);
        free(dx);
        free(dw);
        free(bx);
        free(bw);
    }
    isa_force(isa_best());
}

// Each ISA's transforms of one tile against the matrices in double, within
// the bounds of the comments above (a transform's abs sum times γ of its
// roundings, 8 with some to spare), and each backward transform the
// transpose of its forward: ⟨T a, b⟩ = ⟨a, Tᵀ b⟩.
static double dot(const float *a, const float *b, long n)
{
    double s = 0.0;
    for (long i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

static double abs_dot(const float *a, const float *b, long n)
{
    double s = 0.0;
    for (long i = 0; i < n; i++)
        s += fabs((double)a[i] * b[i]);
    return s;
}

// One channel of a tile, element (i, j) at at[i·rs + j·cs].
struct tile {
    const float *at;
    long rs, cs;
};

// got = L · in · Lᵀ element by element, within γ times the sum of the
// terms' absolute values, where L is the matrix m (rows × cols) or, turned,
// its transpose.
static void expect_transform(const char *isa, const char *what, const double *m, int rows,
                             int cols, int turned, struct tile in, struct tile got, double gamma)
{
    int n_out = turned ? cols : rows, n_in = turned ? rows : cols;
    for (int i = 0; i < n_out; i++)
        for (int j = 0; j < n_out; j++) {
            double want = 0.0, bound = 0.0;
            for (int p = 0; p < n_in; p++)
                for (int q = 0; q < n_in; q++) {
                    double li = turned ? m[p * cols + i] : m[i * cols + p];
                    double lj = turned ? m[q * cols + j] : m[j * cols + q];
                    double t = li * in.at[p * in.rs + q * in.cs] * lj;
                    want += t;
                    bound += fabs(t);
                }
            float g = got.at[i * got.rs + j * got.cs];
            cr_assert(fabs(g - want) <= gamma * bound, "%s %s: element %d,%d = %.9g, want %.9g",
                      isa, what, i, j, g, want);
        }
}

Test(conv, winograd_transforms_and_their_transposes)
{
    enum { CP = 16, ROW = 7 * CP, VS = CP + 8 };  // a patch row of 7 pixels; rows of V apart
    const enum isa isas[] = {ISA_SCALAR, ISA_AVX2, ISA_AVX512, ISA_NEON};
    const double unit = ldexp(1.0, -24), gamma = 8 * unit / (1 - 8 * unit);
    float *d = filled(6 * ROW, 2400), *v = filled(36 * VS, 2401), *y = filled(4 * ROW, 2402);
    float *du = filled(36 * VS, 2403);
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        const struct wino_kernels *kern = wino_kernels(isas[i]);
        if (!take_isa(isas[i], 1))
            continue;
        const char *name = isa_name(isas[i]);
        static float tv[36 * VS], ty[4 * ROW], tm[36 * VS], td[6 * ROW];
        memset(tv, 0, sizeof tv);
        memset(ty, 0, sizeof ty);
        memset(tm, 0, sizeof tm);
        memset(td, 0, sizeof td);
        kern->input(d, ROW, CP, tv, VS);
        kern->output(v, VS, CP, ty, ROW);
        kern->output_backward(y, ROW, CP, tm, VS);
        kern->input_backward(v, VS, CP, td, ROW);
        // V = Bᵀ d B, Y = Aᵀ m A, dM = A dY Aᵀ and d += B dV Bᵀ, element
        // by element, channel by channel.
        for (int c = 0; c < CP; c++) {
            struct tile patch = {d + c, ROW, CP}, rows = {v + c, 6 * VS, VS},
                        out = {y + c, ROW, CP};
            expect_transform(name, "input", wino_bt[0], 6, 6, 0, patch,
                             (struct tile){tv + c, 6 * VS, VS}, gamma);
            expect_transform(name, "output", wino_at[0], 4, 6, 0, rows,
                             (struct tile){ty + c, ROW, CP}, gamma);
            expect_transform(name, "output_backward", wino_at[0], 4, 6, 1, out,
                             (struct tile){tm + c, 6 * VS, VS}, gamma);
            expect_transform(name, "input_backward", wino_bt[0], 6, 6, 1, rows,
                             (struct tile){td + c, ROW, CP}, gamma);
        }
        // ⟨output(v), y⟩ = ⟨v, output_backward(y)⟩, ⟨input(d), v⟩ = ⟨d,
        // input_backward(v)⟩, over the floats each touches (the gaps
        // between rows are zero in both).
        double lhs = dot(ty, y, 4 * ROW), rhs = dot(v, tm, 36 * VS);
        double scale = abs_dot(ty, y, 4 * ROW) + abs_dot(v, tm, 36 * VS);
        cr_assert(fabs(lhs - rhs) <= 2 * gamma * scale, "%s: output_backward is not output's "
                  "transpose: %.9g against %.9g", name, lhs, rhs);
        lhs = dot(tv, v, 36 * VS);
        rhs = dot(d, td, 6 * ROW);
        scale = abs_dot(tv, v, 36 * VS) + abs_dot(d, td, 6 * ROW);
        cr_assert(fabs(lhs - rhs) <= 2 * gamma * scale, "%s: input_backward is not input's "
                  "transpose: %.9g against %.9g", name, lhs, rhs);
        // dg += Gᵀ du G, for 13 channels (one vector and five), their 3×3s
        // side by side; past them nothing written.
        static float dg[14 * 9];
        for (int j = 0; j < 14 * 9; j++)
            dg[j] = 1.0f;
        kern->filter_backward(du, VS, 13, dg);
        for (int c = 0; c < 13; c++)
            for (int p = 0; p < 3; p++)
                for (int q = 0; q < 3; q++) {
                    double want = 1.0, bound = 1.0;
                    for (int a = 0; a < 6; a++)
                        for (int b = 0; b < 6; b++) {
                            double t = wino_g[a][p] * du[(a * 6 + b) * VS + c] * wino_g[b][q];
                            want += t;
                            bound += fabs(t);
                        }
                    float got = dg[c * 9 + p * 3 + q];
                    cr_assert(fabs(got - want) <= gamma * bound,
                              "%s filter_backward: channel %d tap %d,%d = %.9g, want %.9g", name,
                              c, p, q, got, want);
                }
        for (int j = 13 * 9; j < 14 * 9; j++)
            cr_assert_eq(dg[j], 1.0f, "%s filter_backward wrote past its channels", name);
    }
    isa_force(isa_best());
    free(d);
    free(v);
    free(y);
    free(du);
}

// The layout changes copy floats: each ISA's gives the plain loop's bits,
// for widths with and without a tail of fewer than 8 pixels, channel
// counts with and without a tail of fewer than 8, written or added, and
// writes nothing outside the pixels and planes it names.
Test(conv, winograd_layouts_equal_the_plain_loops)
{
    const enum isa isas[] = {ISA_AVX2, ISA_AVX512, ISA_NEON};
    const int sizes[][3] = {{1, 1, 1}, {8, 3, 8}, {13, 13, 32}, {11, 11, 20}, {2, 17, 9},
                            {5, 24, 16}};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (!take_isa(isas[i], 1))
            continue;
        const struct wino_kernels *kern = wino_kernels(isas[i]);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int h = sizes[s][0], w = sizes[s][1], c = sizes[s][2], off = (int)s % 3;
            int cp = (c + 7) / 8 * 8, wp = w + 2 * off + 1, hp = h + 2 * off;
            long cs = (long)h * w + 3, px_size = (long)hp * wp * cp, pl_size = c * cs;
            float *planes = filled(pl_size, 2500 + s);
            float *want = filled(px_size, 2510 + s), *got = copy_of(want, px_size);
            int done = kern->to_pixels(0, c, h, w, planes, cs, got, wp, cp, off);
            wino_to_pixels_scalar(done, c, h, w, planes, cs, got, wp, cp, off);
            wino_to_pixels_scalar(0, c, h, w, planes, cs, want, wp, cp, off);
            cr_assert_eq(first_difference(want, got, px_size), -1,
                         "%s to_pixels, %d×%d×%d: float %ld differs", isa_name(isas[i]), h, w,
                         c, first_difference(want, got, px_size));
            for (int add = 0; add < 2; add++) {
                float *pw = filled(pl_size, 2520 + s), *pg = copy_of(pw, pl_size);
                done = kern->to_planes(0, c, h, w, want, wp, cp, off, pg, cs, add);
                wino_to_planes_scalar(done, c, h, w, want, wp, cp, off, pg, cs, add);
                wino_to_planes_scalar(0, c, h, w, want, wp, cp, off, pw, cs, add);
                cr_assert_eq(first_difference(pw, pg, pl_size), -1,
                             "%s to_planes (add %d), %d×%d×%d: float %ld differs",
                             isa_name(isas[i]), add, h, w, c, first_difference(pw, pg, pl_size));
                free(pw);
                free(pg);
            }
            free(planes);
            free(want);
            free(got);
        }
    }
    isa_force(isa_best());
}

// The path conv_choose takes for this shape when the tape asks for want.
static enum conv_path_id chosen(enum conv_path_id want, int c, int h, int w, int oc, int kh,
                                int kw, int stride, int pad)
{
    struct conv_shape s = {c, h, w, oc, kh, kw, stride, pad};
    return conv_path_id(conv_choose(conv_path_of(want), &s));
}

Test(conv, choose_parse_and_name_paths)
{
    // By shape: 1×1 → 1x1; 3×3 stride 1 over ≤ 4 channels → direct, over
    // more → winograd; stride 1 without padding → implicit; else im2col.
    cr_assert_eq(chosen(CONV_AUTO, 32, 13, 13, 64, 1, 1, 1, 0), CONV_1X1);
    cr_assert_eq(chosen(CONV_AUTO, 1, 28, 28, 32, 3, 3, 1, 0), CONV_DIRECT);
    cr_assert_eq(chosen(CONV_AUTO, 4, 28, 28, 32, 3, 3, 1, 1), CONV_DIRECT);
    cr_assert_eq(chosen(CONV_AUTO, 32, 13, 13, 64, 3, 3, 1, 0), CONV_WINOGRAD);
    cr_assert_eq(chosen(CONV_AUTO, 32, 13, 13, 64, 3, 3, 1, 1), CONV_WINOGRAD);
    cr_assert_eq(chosen(CONV_AUTO, 32, 13, 13, 64, 3, 3, 2, 0), CONV_IM2COL);
    cr_assert_eq(chosen(CONV_AUTO, 32, 13, 13, 64, 5, 5, 1, 0), CONV_IMPLICIT);
    cr_assert_eq(chosen(CONV_AUTO, 32, 13, 13, 64, 3, 3, 2, 1), CONV_IM2COL);
    cr_assert_eq(chosen(CONV_AUTO, 1, 28, 28, 32, 3, 3, 2, 0), CONV_IM2COL);
    cr_assert_eq(chosen(CONV_AUTO, 1, 28, 28, 32, 5, 5, 1, 2), CONV_IM2COL);
    cr_assert_eq(chosen(CONV_AUTO, 3, 28, 28, 32, 1, 1, 2, 0), CONV_IM2COL);
    // Asked for, with the fallback to im2col for shapes a path cannot take.
    cr_assert_eq(chosen(CONV_DIRECT, 32, 13, 13, 64, 3, 3, 1, 0), CONV_DIRECT);
    cr_assert_eq(chosen(CONV_DIRECT, 32, 13, 13, 64, 5, 5, 1, 0), CONV_IM2COL);
    cr_assert_eq(chosen(CONV_1X1, 32, 13, 13, 64, 3, 3, 1, 0), CONV_IM2COL);
    cr_assert_eq(chosen(CONV_IM2COL, 32, 13, 13, 64, 1, 1, 1, 0), CONV_IM2COL);
    cr_assert_eq(chosen(CONV_IMPLICIT, 3, 28, 28, 32, 5, 5, 2, 1), CONV_IMPLICIT);
    cr_assert_eq(chosen(CONV_WINOGRAD, 1, 28, 28, 32, 3, 3, 1, 0), CONV_WINOGRAD);
    cr_assert_eq(chosen(CONV_WINOGRAD, 3, 28, 28, 32, 5, 5, 1, 2), CONV_IMPLICIT);
    cr_assert_eq(chosen(CONV_WINOGRAD, 3, 28, 28, 32, 3, 3, 2, 1), CONV_IMPLICIT);
    // The path is the tape's: two tapes in one program keep their own.
    struct tape_config direct = tape_config_default(), im2col = direct;
    direct.conv = conv_path_of(CONV_DIRECT);
    im2col.conv = conv_path_of(CONV_IM2COL);
    struct tape *a = tape_new(&direct), *b = tape_new(&im2col), *c = tape_new(NULL);
    cr_assert_eq(tape_config(a)->conv, conv_path_of(CONV_DIRECT));
    cr_assert_eq(tape_config(b)->conv, conv_path_of(CONV_IM2COL));
    cr_assert_eq(tape_config(c)->conv, NULL);
    tape_free(a);
    tape_free(b);
    tape_free(c);
    // Each row's name parses back to its row; auto is no row (NULL).
    for (int p = CONV_AUTO; p < CONV_PATHS; p++) {
        const struct conv_path *row = conv_path_of((enum conv_path_id)p);
        enum conv_path_id got;
        cr_assert_eq(row == NULL, p == CONV_AUTO);
        cr_assert_eq(conv_parse_path(conv_path_name(row), &got), 0);
        cr_assert_eq(got, (enum conv_path_id)p);
        cr_assert_eq(conv_path_id(row), (enum conv_path_id)p);
    }
    enum conv_path_id got = CONV_DIRECT;
    cr_assert_eq(conv_parse_path("fft", &got), -1);
    cr_assert_eq(conv_parse_path(NULL, &got), -1);
    cr_assert_eq(got, CONV_DIRECT);
}

// ---------------------------------------------------------------------------
// Pooling.

// Σ dy ⊙ maxpool2(x), x n×c×h×w in double.
static double maxpool_loss(const int *s, const double *x, const double *dy)
{
    int oh = s[2] / 2, ow = s[3] / 2;
    double L = 0.0;
    for (int p = 0; p < s[0] * s[1]; p++)
        for (int r = 0; r < oh; r++)
            for (int q = 0; q < ow; q++) {
                const double *at = x + ((long)p * s[2] + 2 * r) * s[3] + 2 * q;
                double m = fmax(fmax(at[0], at[1]), fmax(at[s[3]], at[s[3] + 1]));
                L += dy[((long)p * oh + r) * ow + q] * m;
            }
    return L;
}

// Σ dy ⊙ mean over each plane.
static double avgpool_loss(const int *s, const double *x, const double *dy)
{
    long hw = (long)s[2] * s[3];
    double L = 0.0;
    for (int p = 0; p < s[0] * s[1]; p++) {
        double m = 0.0;
        for (long j = 0; j < hw; j++)
            m += x[p * hw + j];
        L += dy[p] * m / (double)hw;
    }
    return L;
}

// Runs the pool op on x (shape s) and the backward of Σ dy ⊙ y; checks y
// and dx against the double-precision loss by finite differences.
static void check_pool(int max, const int *s, uint64_t seed)
{
    struct tensor *x = tensor_param(4, s);
    mat_fill_random(x->data, 1, (int)x->size, (int)x->size, seed);
    struct tape *t = tape_new(NULL);
    struct tensor *y = max ? op_maxpool2(t, x) : op_global_avgpool(t, x);
    cr_assert_not_null(y, "%s", tape_error(t));
    tape_keep(t, y);  // checked below, after the backward
    float *dyf = filled(y->size, seed + 1);
    struct tensor *dy = tensor_from(t, y->ndim, y->shape, dyf, y->size);
    cr_assert_eq(tape_backward(t, op_sum(t, op_mul(t, y, dy))), 0, "%s", tape_error(t));
    double *xd = widened(x->data, x->size), *dyd = widened(dyf, y->size);
    double (*loss)(const int *, const double *, const double *) = max ? maxpool_loss : avgpool_loss;
    // The forward: L with one dy element set, the others zero, is that output.
    double *unit = calloc((size_t)y->size, sizeof(double));
    for (long j = 0; j < y->size; j++) {
        unit[j] = 1.0;
        double want = loss(s, xd, unit);
        unit[j] = 0.0;
        cr_assert(fabs(y->data[j] - want) <= 1e-6 * (fabs(want) + 1.0),
                  "%s %d×%d×%d×%d: y[%ld] = %.9g, want %.9g", max ? "maxpool2" : "avgpool",
                  s[0], s[1], s[2], s[3], j, y->data[j], want);
    }
    double big = 0.0, *num = malloc(sizeof(double) * (size_t)x->size);
    for (long j = 0; j < x->size; j++) {
        double keep = xd[j], h = 1e-6;
        xd[j] = keep + h;
        double up = loss(s, xd, dyd);
        xd[j] = keep - h;
        double down = loss(s, xd, dyd);
        xd[j] = keep;
        num[j] = (up - down) / (2 * h);
        big = fmax(big, fabs(num[j]));
    }
    for (long j = 0; j < x->size; j++)
        cr_assert(fabs(x->grad[j] - num[j]) <= 1e-4 * big + 1e-6,
                  "%s %d×%d×%d×%d: dx[%ld] = %.9g, finite differences %.9g",
                  max ? "maxpool2" : "avgpool", s[0], s[1], s[2], s[3], j, x->grad[j], num[j]);
    free(num);
    free(unit);
    free(xd);
    free(dyd);
    free(dyf);
    tape_free(t);
    tensor_free(x);
}

Test(task_8_3, maxpool_finite_differences)
{
    const int shapes4[][4] = {{2, 3, 7, 9}, {1, 1, 2, 2}, {1, 17, 5, 4}, {3, 2, 6, 3}};
    for (int s = 0; s < 4; s++)
        check_pool(1, shapes4[s], 40 + s);
}

Test(conv, avgpool_finite_differences)
{
    const int shapes4[][4] = {{2, 3, 7, 9}, {1, 1, 1, 1}, {1, 17, 5, 4}, {3, 2, 1, 7}};
    for (int s = 0; s < 4; s++)
        check_pool(0, shapes4[s], 50 + s);
}

// On a tie the first element of the window (in reading order) takes the
// gradient, as PyTorch does; a NaN is passed on, not hidden.
Test(task_8_3, maxpool_ties_go_to_the_first)
{
    struct tensor *x = tensor_param(4, (int[]){1, 1, 2, 4});
    const float v[8] = {1, 3, 2, NAN, 3, 3, 5, 2};
    memcpy(x->data, v, sizeof v);
    struct tape *t = tape_new(NULL);
    struct tensor *y = op_maxpool2(t, x);
    cr_assert_not_null(y);
    cr_assert_float_eq(y->data[0], 3.0f, 0.0f);
    cr_assert(isnan(y->data[1]));
    tape_free(t);
    x->data[3] = 0.0f;
    tensor_zero_grad(x);
    t = tape_new(NULL);
    cr_assert_eq(tape_backward(t, op_sum(t, op_maxpool2(t, x))), 0, "%s", tape_error(t));
    const float want[8] = {0, 1, 0, 0, 0, 0, 1, 0};
    for (int j = 0; j < 8; j++)
        cr_assert_float_eq(x->grad[j], want[j], 0.0f, "dx[%d]", j);
    tape_free(t);
    tensor_free(x);
}

Test(conv, pools_match_pytorch)
{
    struct golden_set s;
    load_golden("conv_pool.txt", &s);
    struct tensor *x = golden_param(&s, "x");
    for (int max = 0; max < 2; max++) {
        tensor_zero_grad(x);
        struct tape *t = tape_new(NULL);
        struct tensor *y = max ? op_maxpool2(t, x) : op_global_avgpool(t, x);
        cr_assert_not_null(y, "%s", tape_error(t));
        tape_keep(t, y);  // compared below, after the backward
        const struct golden *g = find(&s, max ? "dy" : "da");
        struct tensor *dy = tensor_from(t, g->ndim, g->shape, g->v, g->size);
        cr_assert_eq(tape_backward(t, op_sum(t, op_mul(t, y, dy))), 0, "%s", tape_error(t));
        expect_close(max ? "maxpool y" : "avgpool y", y->data, find(&s, max ? "y" : "a"));
        expect_close(max ? "maxpool grad_x" : "avgpool grad_x", x->grad,
                     find(&s, max ? "grad_x" : "grad_x_avg"));
        tape_free(t);
    }
    tensor_free(x);
}

// ---------------------------------------------------------------------------
// Threads, errors, memory.

// A small network of every op here: conv+ReLU (direct for one channel),
// 2×2 max pooling, a 3×3 conv over six channels (im2col), a 1×1 conv,
// global average pooling, the mean. Its parameters, and its step.
struct tiny {
    struct tensor *w1, *b1, *w2, *b2, *w3, *b3;
};

static struct tiny tiny_new(void)
{
    struct tiny m = {tensor_param(4, (int[]){6, 1, 3, 3}), tensor_param(1, (int[]){6}),
                     tensor_param(4, (int[]){8, 6, 3, 3}), tensor_param(1, (int[]){8}),
                     tensor_param(4, (int[]){4, 8, 1, 1}), tensor_param(1, (int[]){4})};
    struct tensor *p[6] = {m.w1, m.b1, m.w2, m.b2, m.w3, m.b3};
    for (int i = 0; i < 6; i++)
        mat_fill_random(p[i]->data, 1, (int)p[i]->size, (int)p[i]->size, 60 + i);
    return m;
}

// fused: the first layer's convolution, ReLU and pooling as one op.
static void tiny_step(struct tape *t, struct tiny *m, const float *images, int n, int fused)
{
    struct tensor *p[6] = {m->w1, m->b1, m->w2, m->b2, m->w3, m->b3};
    for (int i = 0; i < 6; i++)
        tensor_zero_grad(p[i]);
    tape_clear(t);
    struct tensor *x = tensor_from(t, 4, (int[]){n, 1, 12, 11}, images, (long)n * 12 * 11);
    struct tensor *h = fused ? op_conv2d_relu_maxpool2(t, x, m->w1, m->b1, 1, 0)
                             : op_maxpool2(t, op_conv2d_relu(t, x, m->w1, m->b1, 1, 0));  // 6×5×4
    h = op_conv2d(t, h, m->w2, m->b2, 1, 1);                                       // 8×5×4
    h = op_global_avgpool(t, op_conv2d(t, h, m->w3, m->b3, 1, 0));                 // 4
    struct tensor *loss = op_mean(t, op_mul(t, h, h));
    cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
}

static void tiny_free(struct tiny *m)
{
    struct tensor *p[6] = {m->w1, m->b1, m->w2, m->b2, m->w3, m->b3};
    for (int i = 0; i < 6; i++)
        tensor_free(p[i]);
}

// The same bits on one thread and on two, on every path, with the first
// layer's pooling fused or not: each image (and each pooling plane) is one
// thread's, the GEMMs do not depend on the thread count, and dW is summed in
// runs of images fixed by the batch size.
Test(conv, same_bits_on_one_and_two_threads)
{
    enum { N = 37 };  // runs of two and three images for dW, on either count
    float *images = filled((long)N * 12 * 11, 77);
    int threads = omp_get_max_threads();
    const enum conv_path_id paths[] = {CONV_AUTO,   CONV_IM2COL,   CONV_1X1,
                                    CONV_DIRECT, CONV_IMPLICIT, CONV_WINOGRAD};
    for (int pf = 0; pf < 12; pf++) {
        int p = pf % 6, fused = pf / 6;
        static float grads[2][6][8 * 6 * 9];
        memset(grads, 0, sizeof grads);
        for (int run = 0; run < 2; run++) {
            omp_set_num_threads(run + 1);
            struct tiny m = tiny_new();
            struct tape_config c = tape_config_default();
            c.conv = conv_path_of(paths[p]);
            struct tape *t = tape_new(&c);
            tiny_step(t, &m, images, N, fused);
            struct tensor *ps[6] = {m.w1, m.b1, m.w2, m.b2, m.w3, m.b3};
            for (int i = 0; i < 6; i++)
                memcpy(grads[run][i], ps[i]->grad, sizeof(float) * (size_t)ps[i]->size);
            tape_free(t);
            tiny_free(&m);
        }
        omp_set_num_threads(threads);
        for (int i = 0; i < 6; i++)
            cr_assert(memcmp(grads[0][i], grads[1][i], sizeof grads[0][i]) == 0,
                      "%s path%s: parameter %d's gradient differs on 1 and 2 threads",
                      path_name(paths[p]), fused ? ", pooling fused" : "", i);
    }
    free(images);
}

// After the first step, a step asks the tape for the same sizes in the same
// order and never calls malloc, with the arena or planned memory, with the
// first pooling fused or not.
static void tiny_zero_alloc(enum memory_mode memory)
{
    enum { N = 4 };
    float *images = filled((long)N * 12 * 11, 78);
    if (malloc_calls() < 0)
        cr_skip_test("counting malloc needs AddressSanitizer's hooks (the test build has them)");
    const char *name = tape_memory_name(memory);
    for (int fused = 0; fused < 2; fused++) {
        struct tiny m = tiny_new();
        struct tape_config c = tape_config_default();
        c.memory = memory;
        struct tape *t = tape_new(&c);
        long allocations = malloc_calls();
        size_t reserved = 0;
        for (int step = 0; step < 4; step++) {
            tiny_step(t, &m, images, N, fused);
            long now = malloc_calls();
            if (step == 0) {
                cr_assert_gt(now, allocations,
                             "%s: the first step reserves the tape's memory: not counted", name);
                reserved = tape_reserved_bytes(t);
            } else {
                cr_assert_eq(now, allocations, "%s, fused %d: step %d called malloc %ld times",
                             name, fused, step + 1, now - allocations);
            }
            cr_assert_eq(tape_reserved_bytes(t), reserved,
                         "%s, fused %d: step %d grew the tape's memory", name, fused, step + 1);
            allocations = now;
        }
        tape_free(t);
        tiny_free(&m);
    }
    free(images);
}

Test(conv, no_heap_allocation_after_the_first_step) { tiny_zero_alloc(MEMORY_ARENA); }
Test(planner, conv_no_heap_allocation_after_the_first_step) { tiny_zero_alloc(MEMORY_PLANNED); }

Test(conv, bad_shapes_are_clear_errors)
{
    struct tape *t = tape_new(NULL);
    struct tensor *x = tensor_new(t, 4, (int[]){2, 3, 7, 9});
    struct tensor *w = tensor_param(4, (int[]){5, 4, 3, 3}), *b = tensor_param(1, (int[]){5});
    cr_assert_null(op_conv2d(t, x, w, b, 1, 1));
    cr_assert(strstr(tape_error(t), "conv2d") && strstr(tape_error(t), "2×3×7×9") &&
                  strstr(tape_error(t), "5×4×3×3"),
              "message: %s", tape_error(t));
    // A filter larger than the padded image; a zero stride; a 2-D input.
    struct tensor *w3 = tensor_param(4, (int[]){5, 3, 3, 3});
    const struct {
        int h, w, stride, pad;
        const char *want;
    } bad[] = {{2, 9, 1, 0, "x is 2×3×2×9"},
               {7, 9, 0, 1, "stride 0"},
               {7, 9, 1, -1, "pad -1"},
               {7, 9, 1, 1 << 30, "pad 1073741824"}};
    for (int i = 0; i < 4; i++) {
        tape_clear(t);
        x = tensor_new(t, 4, (int[]){2, 3, bad[i].h, bad[i].w});
        cr_assert_null(op_conv2d_relu(t, x, w3, b, bad[i].stride, bad[i].pad));
        cr_assert(strstr(tape_error(t), "conv2d_relu") && strstr(tape_error(t), bad[i].want),
                  "message: %s", tape_error(t));
    }
    tape_clear(t);
    cr_assert_null(op_conv2d(t, tensor_new(t, 2, (int[]){2, 3}), w3, b, 1, 0));
    cr_assert(strstr(tape_error(t), "x is 2×3,"), "message: %s", tape_error(t));
    // A NULL input (an earlier op failed) gives NULL and keeps the first message.
    char first[256];
    snprintf(first, sizeof first, "%s", tape_error(t));
    cr_assert_null(op_conv2d(t, NULL, w3, b, 1, 0));
    cr_assert_null(op_maxpool2(t, NULL));
    cr_assert_null(op_global_avgpool(t, NULL));
    cr_assert_str_eq(tape_error(t), first);
    tape_clear(t);
    cr_assert_null(op_maxpool2(t, tensor_new(t, 4, (int[]){1, 2, 1, 5})));
    cr_assert(strstr(tape_error(t), "maxpool2: x is 1×2×1×5"), "message: %s", tape_error(t));
    tape_clear(t);
    cr_assert_null(op_global_avgpool(t, tensor_new(t, 2, (int[]){4, 5})));
    cr_assert(strstr(tape_error(t), "global_avgpool: x is 4×5"), "message: %s", tape_error(t));
    tensor_free(w);
    tensor_free(w3);
    tensor_free(b);
    tape_free(t);
}

// Evaluation: the ops compute, record nothing, and need no gradient memory.
Test(conv, no_grad_records_nothing)
{
    struct tiny m = tiny_new();
    struct tape *t = tape_new(NULL);
    tape_set_recording(t, 0);
    float *images = filled(2 * 12 * 11, 79);
    struct tensor *x = tensor_from(t, 4, (int[]){2, 1, 12, 11}, images, 2 * 12 * 11);
    struct tensor *y = op_global_avgpool(
        t, op_conv2d(t, op_maxpool2(t, op_conv2d_relu(t, x, m.w1, m.b1, 1, 0)), m.w2, m.b2, 1, 1));
    cr_assert_not_null(y, "%s", tape_error(t));
    cr_assert_eq(tape_node_count(t), 0);
    cr_assert_eq(y->requires_grad, 0);
    free(images);
    tape_free(t);
    tiny_free(&m);
}

// ---------------------------------------------------------------------------
// The parameters in the order of nn.h: conv1 w and bias, conv2 w and bias,
// fc1 w and bias, fc2 w and bias.
static const int cnn_shapes[8][5] = {
    {4, 32, 1, 3, 3}, {1, 32}, {4, 64, 32, 3, 3}, {1, 64},
    {2, 1600, 128},   {1, 128}, {2, 128, 10},     {1, 10},
};

Test(nn_cnn, shapes_desc_and_parameter_count)
{
    struct nn_model m;
    char err[256];
    cr_assert_eq(nn_cnn_init(&m, 1, err, sizeof err), 0, "%s", err);
    cr_assert(strncmp(m.desc, "cnn ", 4) == 0, "desc \"%s\"", m.desc);
    cr_assert_eq(m.inputs, 784, "the input is a flattened 28×28 image");
    cr_assert_not_null(m.forward);
    cr_assert_eq(m.nparams, 8);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(m.params[i]->ndim, cnn_shapes[i][0], "param %d", i);
        for (int d = 0; d < cnn_shapes[i][0]; d++)
            cr_assert_eq(m.params[i]->shape[d], cnn_shapes[i][d + 1], "param %d dim %d", i, d);
        cr_assert(m.params[i]->requires_grad);
    }
    cr_assert_eq(nn_param_count(&m),
                 32L * 9 + 32 + 64L * 32 * 9 + 64 + 1600L * 128 + 128 + 128L * 10 + 10);
    nn_model_free(&m);
    cr_assert_eq(m.nparams, 0);
}

Test(nn_cnn, he_initialisation_and_seeds)
{
    struct nn_model a, b, c;
    char err[256];
    cr_assert_eq(nn_cnn_init(&a, 7, err, sizeof err), 0, "%s", err);
    cr_assert_eq(nn_cnn_init(&b, 7, err, sizeof err), 0, "%s", err);
    cr_assert_eq(nn_cnn_init(&c, 8, err, sizeof err), 0, "%s", err);
    // Weights: mean 0, standard deviation √(2/fan_in), fan_in = c·kh·kw for
    // a convolution (9, 288), in for a Linear layer (1600, 128). Tolerances
    // of about five standard errors of the sample sd (1/√(2n)) at each count.
    const double fan_in[4] = {9, 288, 1600, 128}, tol[4] = {0.2, 0.03, 0.01, 0.03};
    for (int l = 0; l < 4; l++) {
        struct tensor *w = a.params[2 * l], *bias = a.params[2 * l + 1];
        double sum = 0.0, sq = 0.0, sd = sqrt(2.0 / fan_in[l]);
        for (long i = 0; i < w->size; i++) {
            sum += w->data[i];
            sq += (double)w->data[i] * w->data[i];
        }
        double mean = sum / w->size, got = sqrt(sq / w->size - mean * mean);
        cr_assert(fabs(mean) < 5.0 * sd / sqrt((double)w->size), "layer %d mean %g", l, mean);
        cr_assert(fabs(got / sd - 1.0) < tol[l], "layer %d: sd %g, want %g", l, got, sd);
        for (long i = 0; i < bias->size; i++)
            cr_assert(bias->data[i] == 0.0f, "layer %d bias %ld = %g", l, i, bias->data[i]);
    }
    for (int i = 0; i < a.nparams; i++)
        cr_assert(memcmp(a.params[i]->data, b.params[i]->data,
                         sizeof(float) * (size_t)a.params[i]->size) == 0,
                  "param %d: the same seed gave other weights", i);
    cr_assert(memcmp(a.params[2]->data, c.params[2]->data, sizeof(float) * 64 * 32 * 9) != 0,
              "another seed gave the same weights");
    nn_model_free(&a);
    nn_model_free(&b);
    nn_model_free(&c);
}

Test(nn_cnn, flops_per_image)
{
    struct nn_model m;
    char err[256];
    cr_assert_eq(nn_cnn_init(&m, 1, err, sizeof err), 0, "%s", err);
    // 2 FLOPs per weight per output pixel for a convolution, 2·in·out for a
    // Linear layer: 26×26 outputs of 32 filters of 1·3·3, 11×11 outputs of
    // 64 filters of 32·3·3, then 1600→128 and 128→10.
    double conv1 = 2.0 * 32 * 9 * 26 * 26, conv2 = 2.0 * 64 * 32 * 9 * 11 * 11;
    double fc1 = 2.0 * 1600 * 128, fc2 = 2.0 * 128 * 10;
    cr_assert_float_eq(m.forward_flops, conv1 + conv2 + fc1 + fc2, 0.5);
    cr_assert_float_eq(m.forward_flops, 5262080.0, 0.5, "about 5.3 MFLOP forward");
    cr_assert_float_eq(nn_cnn_forward_flops(), m.forward_flops, 0.5);
    // A step: forward and dW of every layer, dX of all but the first.
    cr_assert_float_eq(m.train_flops, 2 * conv1 + 3 * (conv2 + fc1 + fc2), 0.5);
    cr_assert_float_eq(nn_cnn_train_flops(), m.train_flops, 0.5);
    // The MLP's count is its own.
    struct nn_model mlp;
    cr_assert_eq(nn_mlp_init(&mlp, 3, (int[]){784, 256, 10}, 1, err, sizeof err), 0);
    cr_assert_float_eq(mlp.forward_flops, 2.0 * (784 * 256 + 256 * 10), 0.5);
    nn_model_free(&mlp);
    nn_model_free(&m);
}

Test(nn_cnn, forward_shapes_gradients_and_a_bad_width)
{
    struct nn_model m;
    char err[256];
    cr_assert_eq(nn_cnn_init(&m, 3, err, sizeof err), 0, "%s", err);
    struct tape *t = tape_new(NULL);
    cr_assert_not_null(t);
    struct tensor *x = tensor_new(t, 2, (int[]){3, 784});
    cr_assert_not_null(x);
    mat_fill_random(x->data, 3, 784, 784, 4);
    struct tensor *y = m.forward(&m, t, x);
    cr_assert_not_null(y, "%s", tape_error(t));
    cr_assert(y->ndim == 2 && y->shape[0] == 3 && y->shape[1] == 10, "logits %d×%d", y->shape[0],
              y->shape[1]);
    for (int i = 0; i < 30; i++)
        cr_assert(isfinite(y->data[i]), "logit %d = %g", i, y->data[i]);
    int labels[3] = {0, 4, 9};
    nn_zero_grad(&m);
    cr_assert_eq(tape_backward(t, op_cross_entropy(t, y, labels, 3)), 0, "%s", tape_error(t));
    // Every parameter gets a gradient, and none is all zero (a layer cut off
    // from the loss would leave one so).
    for (int i = 0; i < m.nparams; i++) {
        double norm = 0.0;
        for (long j = 0; j < m.params[i]->size; j++) {
            cr_assert(isfinite(m.params[i]->grad[j]), "param %d grad %ld", i, j);
            norm += fabs(m.params[i]->grad[j]);
        }
        cr_assert_gt(norm, 0.0, "param %d has a zero gradient", i);
    }
    // Images of another size: the reshape to 28×28 says so.
    tape_clear(t);
    cr_assert_null(m.forward(&m, t, tensor_new(t, 2, (int[]){3, 783})));
    cr_assert(strstr(tape_error(t), "reshape"), "%s", tape_error(t));
    tape_free(t);
    nn_model_free(&m);
}

// The network with neither convolution fused with its pooling, with conv1's
// only, and with both (the tape config's fused_pools): the same logits and the same
// gradients, bit for bit, on every conv path.
Test(nn_cnn, fused_and_unfused_poolings_give_the_same_bits)
{
    enum { N = 5 };
    const enum conv_path_id paths[] = {CONV_IM2COL, CONV_DIRECT, CONV_AUTO};
    char err[256];
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        float logits[3][N * 10];
        float *grads[3][8];
        long size[8];
        for (int fused = 0; fused < 3; fused++) {
            struct nn_model m;
            cr_assert_eq(nn_cnn_init(&m, 5, err, sizeof err), 0, "%s", err);
            struct tape_config config = tape_config_default();
            config.conv = conv_path_of(paths[p]);
            config.fused_pools = fused;
            struct tape *t = tape_new(&config);
            struct tensor *x = tensor_new(t, 2, (int[]){N, 784});
            mat_fill_random(x->data, N, 784, 784, 11);
            struct tensor *y = m.forward(&m, t, x);
            cr_assert_not_null(y, "%s", tape_error(t));
            memcpy(logits[fused], y->data, sizeof logits[fused]);
            int labels[N] = {0, 3, 9, 4, 7};
            nn_zero_grad(&m);
            cr_assert_eq(tape_backward(t, op_cross_entropy(t, y, labels, N)), 0, "%s",
                         tape_error(t));
            for (int i = 0; i < 8; i++) {
                size[i] = m.params[i]->size;
                size_t bytes = sizeof(float) * (size_t)size[i];
                grads[fused][i] = malloc(bytes);
                memcpy(grads[fused][i], m.params[i]->grad, bytes);
            }
            tape_free(t);
            nn_model_free(&m);
        }
        for (int fused = 1; fused < 3; fused++) {
            cr_assert(memcmp(logits[fused], logits[0], sizeof logits[0]) == 0,
                      "%s path, %d fused: other logits", path_name(paths[p]), fused);
            for (int i = 0; i < 8; i++)
                cr_assert(memcmp(grads[fused][i], grads[0][i], sizeof(float) * (size_t)size[i]) ==
                              0,
                          "%s path, %d fused: parameter %d's gradient differs",
                          path_name(paths[p]), fused, i);
        }
        for (int fused = 0; fused < 3; fused++)
            for (int i = 0; i < 8; i++)
                free(grads[fused][i]);
    }
    struct tape_config config = tape_config_default();
    config.fused_pools = -2;
    cr_assert_null(tape_new(&config), "a negative count of fused convolutions but -1");
}

// A CNN, Adam and a trainer over the committed sample.
struct cnn_fixture {
    struct dataset ds;
    struct nn_model m;
    struct optim *o;
    struct trainer tr;
};

static void cnn_fixture_init_memory(struct cnn_fixture *f, enum conv_path_id path, int batch,
                                    uint64_t seed, enum memory_mode memory)
{
    char err[4096];
    memset(f, 0, sizeof *f);
    cr_assert_eq(dataset_load("sample", NULL, &f->ds, err, sizeof err), 0, "%s", err);
    cr_assert_eq(nn_cnn_init(&f->m, seed, err, sizeof err), 0, "%s", err);
    struct optim_config c = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
    f->o = optim_new(&c, f->m.params, f->m.nparams);
    cr_assert_not_null(f->o);
    struct tape_config config = tape_config_default();
    config.conv = conv_path_of(path);
    config.memory = memory;
    cr_assert_eq(trainer_init(&f->tr, &config, batch, f->ds.train.pixels, f->ds.train.count, err,
                              sizeof err),
                 0, "%s", err);
    f->tr.progress = 0;
}

static void cnn_fixture_init(struct cnn_fixture *f, enum conv_path_id path, int batch,
                             uint64_t seed)
{
    cnn_fixture_init_memory(f, path, batch, seed, tape_config_default().memory);
}

static void cnn_fixture_free(struct cnn_fixture *f)
{
    trainer_free(&f->tr);
    optim_free(f->o);
    nn_model_free(&f->m);
    dataset_free(&f->ds);
}

static int cnn_fixture_step(struct cnn_fixture *f, int start, float *loss)
{
    int b = dataset_batch(&f->ds.train, NULL, start, f->tr.batch, f->tr.x, f->tr.y);
    cr_assert_eq(b, f->tr.batch);
    return train_step(f->tr.tape, &f->m, f->o, f->tr.x, f->tr.y, b, loss);
}

Test(nn_cnn, steps_lower_the_loss_on_a_fixed_batch, .timeout = 300)
{
    struct cnn_fixture f;
    cnn_fixture_init(&f, CONV_AUTO, 32, 3);
    float first = 0.0f, loss = 0.0f;
    for (int step = 0; step < 8; step++) {
        cr_assert_eq(cnn_fixture_step(&f, 0, &loss), 0, "step %d: %s", step,
                     tape_error(f.tr.tape));
        cr_assert(isfinite(loss), "step %d: loss %g", step, (double)loss);
        if (step == 0)
            first = loss;
    }
    // A fresh 10-class model starts near ln 10 = 2.3; eight Adam steps of
    // lr 1e-3 on the same 32 images bring it well down.
    cr_assert_gt(first, 1.0f, "the first loss is %g, not that of an untrained model",
                 (double)first);
    cr_assert_lt(loss, 0.7f * first, "loss %g after eight steps, %g at the first", (double)loss,
                 (double)first);
    cr_assert_eq(optim_steps_taken(f.o), 8);
    cnn_fixture_free(&f);
}

// Every parameter's floats after two steps on the sample's first batches.
static float *cnn_params_after_steps(int threads, enum conv_path_id path, enum memory_mode memory,
                                     long *count)
{
    omp_set_num_threads(threads);
    struct cnn_fixture f;
    cnn_fixture_init_memory(&f, path, 16, 11, memory);
    for (int step = 0; step < 2; step++) {
        float loss;
        cr_assert_eq(cnn_fixture_step(&f, step * 16, &loss), 0, "%s", tape_error(f.tr.tape));
    }
    long n = nn_param_count(&f.m), at = 0;
    float *all = malloc((size_t)n * sizeof *all);
    cr_assert_not_null(all);
    for (int i = 0; i < f.m.nparams; i++) {
        memcpy(all + at, f.m.params[i]->data, (size_t)f.m.params[i]->size * sizeof *all);
        at += f.m.params[i]->size;
    }
    *count = n;
    cnn_fixture_free(&f);
    return all;
}

static void cnn_same_bits(enum conv_path_id path)
{
    int before = omp_get_max_threads();
    long n1, n2;
    float *one = cnn_params_after_steps(1, path, MEMORY_PLANNED, &n1);
    float *two = cnn_params_after_steps(2, path, MEMORY_PLANNED, &n2);
    omp_set_num_threads(before);
    cr_assert_eq(n1, n2);
    long first = first_difference(one, two, n1);
    cr_assert_eq(first, -1, "%s path: parameter float %ld differs: %.9g on 1 thread, %.9g on 2",
                 path_name(path), first, first >= 0 ? (double)one[first] : 0.0,
                 first >= 0 ? (double)two[first] : 0.0);
    free(one);
    free(two);
}

Test(nn_cnn, the_same_bits_on_one_and_two_threads_auto, .timeout = 300)
{
    cnn_same_bits(CONV_AUTO);
}

Test(nn_cnn, the_same_bits_on_one_and_two_threads_im2col, .timeout = 300)
{
    cnn_same_bits(CONV_IM2COL);
}

Test(nn_cnn, the_same_bits_on_one_and_two_threads_direct, .timeout = 300)
{
    cnn_same_bits(CONV_DIRECT);
}

// The arena and planned memory: the same bits, on 1 and on 2 threads. The
// second step runs in the plan's block, where tensors share bytes (and, in
// the test build, every buffer is poisoned when it dies).
static void cnn_same_bits_memory(int threads)
{
    int before = omp_get_max_threads();
    long n1, n2;
    float *arena = cnn_params_after_steps(threads, CONV_AUTO, MEMORY_ARENA, &n1);
    float *planned = cnn_params_after_steps(threads, CONV_AUTO, MEMORY_PLANNED, &n2);
    omp_set_num_threads(before);
    cr_assert_eq(n1, n2);
    long first = first_difference(arena, planned, n1);
    cr_assert_eq(first, -1, "%d threads: parameter float %ld differs: %.9g with the arena, "
                 "%.9g planned", threads, first, first >= 0 ? (double)arena[first] : 0.0,
                 first >= 0 ? (double)planned[first] : 0.0);
    free(arena);
    free(planned);
}

Test(planner, cnn_the_same_bits_arena_and_planned_one_thread, .timeout = 300)
{
    cnn_same_bits_memory(1);
}

Test(planner, cnn_the_same_bits_arena_and_planned_two_threads, .timeout = 300)
{
    cnn_same_bits_memory(2);
}

static void cnn_zero_alloc(enum memory_mode memory)
{
    if (malloc_calls() < 0)
        cr_skip_test("counting malloc needs AddressSanitizer's hooks (the test build has them)");
    struct cnn_fixture f;
    cnn_fixture_init_memory(&f, CONV_AUTO, 16, 2, memory);
    long allocations = malloc_calls();
    size_t reserved = 0;
    for (int step = 1; step <= 3; step++) {
        float loss;
        int status = cnn_fixture_step(&f, (step - 1) * 16, &loss);
        long now = malloc_calls();
        cr_assert_eq(status, 0, "%s", tape_error(f.tr.tape));
        if (step == 1) {
            cr_assert_gt(now, allocations, "%s: the first step reserves the tape's memory: "
                         "not counted", tape_memory_name(memory));
            reserved = tape_reserved_bytes(f.tr.tape);
        } else {
            cr_assert_eq(now, allocations, "%s: step %d called malloc %ld times",
                         tape_memory_name(memory), step, now - allocations);
            cr_assert_eq(tape_reserved_bytes(f.tr.tape), reserved,
                         "%s: step %d grew the tape's memory", tape_memory_name(memory), step);
        }
        allocations = now;
    }
    cnn_fixture_free(&f);
}

Test(nn_cnn, no_heap_allocation_after_the_first_step, .timeout = 300)
{
    cnn_zero_alloc(MEMORY_ARENA);
}

Test(planner, cnn_no_heap_allocation_after_the_first_step, .timeout = 300)
{
    cnn_zero_alloc(MEMORY_PLANNED);
}

Test(nn_cnn, checkpoint_round_trip)
{
    char dir[64], path[128], err[512];
    snprintf(dir, sizeof dir, "/tmp/test08-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cnn.ckpt", dir);
    struct nn_model a, b, mlp;
    cr_assert_eq(nn_cnn_init(&a, 1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(nn_cnn_init(&b, 2, err, sizeof err), 0, "%s", err);
    a.params[1]->data[5] = 0.25f;  // a bias that is not zero
    cr_assert_eq(checkpoint_save(path, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(checkpoint_load(path, &b, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < a.nparams; i++)
        cr_assert(memcmp(a.params[i]->data, b.params[i]->data,
                         sizeof(float) * (size_t)a.params[i]->size) == 0,
                  "param %d differs after the round trip", i);
    // An MLP refuses the CNN's file, and says why.
    cr_assert_eq(nn_mlp_init(&mlp, 3, (int[]){784, 256, 10}, 1, err, sizeof err), 0);
    err[0] = '\0';
    cr_assert_eq(checkpoint_load(path, &mlp, err, sizeof err), -1, "an MLP loaded a CNN");
    cr_assert(strstr(err, path), "the message names no file: %s", err);
    nn_model_free(&mlp);
    nn_model_free(&a);
    nn_model_free(&b);
    cr_assert_eq(remove(path), 0);
    cr_assert_eq(rmdir(dir), 0, "%s: files left behind", dir);
}

Test(nn_cnn, a_short_training_on_the_sample_lifts_accuracy_above_chance, .timeout = 600)
{
    struct cnn_fixture f;
    char err[4096];
    cnn_fixture_init(&f, CONV_AUTO, 32, 5);
    double loss0, acc0, loss1, acc1;
    cr_assert_eq(evaluate(&f.tr, &f.m, &f.ds.test, &loss0, &acc0, err, sizeof err), 0, "%s",
                 err);
    // The first 640 training images, once: 20 steps of 32.
    struct dataset_split part = f.ds.train;
    part.count = 640;
    struct epoch_stats st;
    cr_assert_eq(train_epoch(&f.tr, &f.m, f.o, &part, 5, 1, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(evaluate(&f.tr, &f.m, &f.ds.test, &loss1, &acc1, err, sizeof err), 0, "%s",
                 err);
    // Ten classes: chance is 10 %. Twenty steps reach well above it on
    // Fashion-MNIST's sample.
    cr_assert_gt(acc1, 0.4, "test accuracy %.1f %% after 20 steps", 100 * acc1);
    cr_assert_lt(loss1, loss0, "test loss %g after training, %g before", loss1, loss0);
    cnn_fixture_free(&f);
}

// run_cnn as a reader runs it, on a set of their own in a directory named
// without a '/': it trains, after one line that gives the set's four
// checksums; Fashion-MNIST's name on other files, and images that are not
// 28×28, are refused.
Test(nn_cnn, run_cnn_trains_on_a_set_the_list_does_not_know, .timeout = 600)
{
    char dir[64], sub[128];
    snprintf(dir, sizeof dir, "/tmp/test08-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    expect_training_with_a_note(dir, "run_cnn", "kmnist", "--batch 32 --epochs 1 --threads 1",
                                64, 32, 1, 1);

    // The named set fashion, in DATA_DIR, holding the sample's files.
    snprintf(sub, sizeof sub, "%s/fashion", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    copy_sample_raw(sub);
    setenv("DATA_DIR", dir, 1);
    expect_refusal(dir, "run_cnn", "--data fashion --epochs 1 --threads 1",
                   "fashion/train-images-idx3-ubyte: checksum mismatch");
    unsetenv("DATA_DIR");

    write_own_set_in(dir, "small", 20, 10, 14, 0, NULL);
    expect_refusal(dir, "run_cnn", "--data small --epochs 1 --threads 1",
                   "the CNN reads 28×28 images; small has 14×14");
    remove_tree(dir);
}

// run_cnn as a student runs it for chapter 8's figures: conv1's 32 filters
// (4 rows of 8 tiles of 3×3) and its 32 feature maps of one test image (of
// 26×26), a value's gap between two tiles; an image the test set does not
// have is refused before any training.
Test(train_cli, run_cnn_writes_conv1s_filters_and_maps, .timeout = 300)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/test08-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    expect_training_with_a_note(dir, "run_cnn", "own",
                                "--batch 32 --epochs 1 --threads 1 --filters filters.csv "
                                "--maps maps.csv --image 31 --confusion confusion.csv",
                                64, 32, 0, 1);
    int rows, fields;
    double sum;
    table_shape(dir, "filters.csv", &rows, &fields, &sum);
    cr_assert_eq(rows, 4 * 4 - 1);
    cr_assert_eq(fields, 8 * 4 - 1);
    cr_assert_gt(sum, 0.0);
    table_shape(dir, "maps.csv", &rows, &fields, &sum);
    cr_assert_eq(rows, 4 * 27 - 1);
    cr_assert_eq(fields, 8 * 27 - 1);
    char *filters = read_text(dir, "filters.csv");
    const char *bias;
    cr_assert_eq(lines_starting(filters, "# bias: ", &bias), 1, "%s", filters);
    int commas = 0;
    for (const char *c = bias; *c != '\n'; c++)
        commas += *c == ',';
    cr_assert_eq(commas, 31, "a bias per filter: %.300s", bias);
    free(filters);
    char *maps = read_text(dir, "maps.csv");
    cr_assert_not_null(strstr(maps, "for test image 31, label 1\n"), "%s", maps);  // 31 % 10
    free(maps);
    char *log = read_text(dir, "log");
    cr_assert_not_null(strstr(log, "confusion matrix of the 32 test images"), "%s", log);
    free(log);
    expect_refusal(dir, "run_cnn", "--data own --epochs 1 --maps m.csv --image 32",
                   "error: --image 32: own's test set has 32 images (0..31)");
    remove_tree(dir);
}

// ---------------------------------------------------------------------------
// One context carries every choice: a step on a tape whose context says
// scalar runs no vector kernel of any family (the GEMM's micro-kernels, the
// optimizer, the elementwise loops, the pooling, every convolution path),
// though the program's own ISA (isa_active) is the widest this CPU has. The
// families count the kernels they hand out by ISA (isa_count_use), and the
// step gives the bits of the same step with the program forced to scalar.

// One step of model m (batch 4 of the sample, Adam) on a tape of the given
// config, the optimizer on isa; the parameters after it into params.
static void step_on(struct nn_model *m, const struct tape_config *config, enum isa isa,
                    const struct dataset *ds, float *params)
{
    enum { B = 4 };
    float x[B * 28 * 28];
    int y[B];
    dataset_batch(&ds->train, NULL, 0, B, x, y);
    struct optim_config oc = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
    oc.isa = isa;
    struct optim *o = optim_new(&oc, m->params, m->nparams);
    struct tape *t = tape_new(config);
    cr_assert(o && t);
    float loss;
    cr_assert_eq(train_step(t, m, o, x, y, B, &loss), 0, "%s", tape_error(t));
    for (int i = 0, at = 0; i < m->nparams; at += (int)m->params[i]->size, i++)
        memcpy(params + at, m->params[i]->data, sizeof(float) * (size_t)m->params[i]->size);
    tape_free(t);
    optim_free(o);
}

static void expect_scalar_only(const char *what)
{
    cr_assert_gt(isa_uses(ISA_SCALAR), 0, "%s: no kernel counted at all", what);
    for (int i = 0; i < ISA_COUNT; i++)
        if (i != ISA_SCALAR)
            cr_assert_eq(isa_uses((enum isa)i), 0, "%s: %ld %s kernels ran on a scalar tape", what,
                         isa_uses((enum isa)i), isa_name((enum isa)i));
}

// The step of a fresh model (init: the CNN, or the MLP 784-32-10) on a
// scalar context, with the program's ISA the widest: only scalar kernels
// count, and the parameters are those of the same step with the program
// forced to scalar and its default context.
static void scalar_step(const char *what, int cnn, const struct tape_config *base,
                        const struct dataset *ds)
{
    char err[256];
    struct nn_model m[2];
    float *params[2];
    for (int r = 0; r < 2; r++) {
        memset(&m[r], 0, sizeof m[r]);
        int ok = cnn ? nn_cnn_init(&m[r], 5, err, sizeof err)
                     : nn_mlp_init(&m[r], 3, (int[]){784, 32, 10}, 5, err, sizeof err);
        cr_assert_eq(ok, 0, "%s", err);
        params[r] = malloc(sizeof(float) * (size_t)nn_param_count(&m[r]));
        cr_assert_not_null(params[r]);
    }
    // The program on its widest ISA, the tape's context on scalar.
    isa_force(isa_best());
    struct tape_config config = *base;
    tape_config_set_isa(&config, ISA_SCALAR);
    isa_uses_clear();
    step_on(&m[0], &config, ISA_SCALAR, ds, params[0]);
    expect_scalar_only(what);
    // The program forced to scalar, its default context.
    isa_force(ISA_SCALAR);
    struct tape_config plain = tape_config_default();
    plain.gemm = base->gemm;
    plain.conv = base->conv;
    plain.fused_pools = base->fused_pools;
    step_on(&m[1], &plain, ISA_SCALAR, ds, params[1]);
    isa_force(isa_best());
    long n = nn_param_count(&m[0]);
    cr_assert(memcmp(params[0], params[1], sizeof(float) * (size_t)n) == 0,
              "%s: a scalar tape's step differs from the scalar program's", what);
    for (int r = 0; r < 2; r++) {
        nn_model_free(&m[r]);
        free(params[r]);
    }
}

Test(isa, a_scalar_context_runs_no_vector_kernel, .timeout = 300)
{
    char err[4096];
    struct dataset ds;
    cr_assert_eq(dataset_load("sample", NULL, &ds, err, sizeof err), 0, "%s", err);
    // The CNN: every convolution path, its pooling fused into the
    // convolutions and not.
    static const enum conv_path_id paths[] = {CONV_AUTO,   CONV_IM2COL,   CONV_1X1,
                                           CONV_DIRECT, CONV_IMPLICIT, CONV_WINOGRAD};
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
        for (int fused = 0; fused <= NN_CNN_FUSED; fused += NN_CNN_FUSED) {
            struct tape_config c = tape_config_default();
            c.conv = conv_path_of(paths[p]);
            c.fused_pools = fused;
            char what[96];
            snprintf(what, sizeof what, "the CNN on %s, %s pooling", path_name(paths[p]),
                     fused ? "fused" : "separate");
            scalar_step(what, 1, &c, &ds);
        }
    // The MLP on each GEMM backend of ours (OpenBLAS, the peer, runs its own
    // vector code whatever it is told).
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    for (int i = 0; i < count; i++) {
        if (strcmp(all[i].name, "openblas") == 0)
            continue;
        struct tape_config c = tape_config_default();
        c.gemm = &all[i];
        char what[96];
        snprintf(what, sizeof what, "the MLP on the %s GEMM", all[i].name);
        scalar_step(what, 0, &c, &ds);
    }
    // The counters do see vector kernels: the same CNN step on the default
    // context of a CPU that has a vector ISA.
    if (isa_best() != ISA_SCALAR) {
        struct nn_model m = {0};
        cr_assert_eq(nn_cnn_init(&m, 5, err, sizeof err), 0, "%s", err);
        float *params = malloc(sizeof(float) * (size_t)nn_param_count(&m));
        struct tape_config c = tape_config_default();
        isa_uses_clear();
        step_on(&m, &c, c.isa, &ds, params);
        cr_assert_gt(isa_uses(isa_best()), 0, "no %s kernel counted on a %s tape",
                     isa_name(isa_best()), isa_name(isa_best()));
        nn_model_free(&m);
        free(params);
    }
    dataset_free(&ds);
}
