// The convolution as one tape node: a shared opening (the shapes checked,
// the output and the saved ints made, the path chosen) and one call through
// the chosen row of conv_path.c's table, whose forwards and backwards are
// below: im2col + GEMM, the 1×1 GEMM on x in place, the direct 3×3 kernel,
// the implicit GEMM (the im2col path's GEMMs with no col matrix,
// conv_implicit.h) and Winograd's F(4×4, 3×3) (conv_winograd.h), whose
// backward goes back through its own transforms. The backward of the
// others goes through the GEMMs of the im2col path, but for the direct
// path's dW, which its own kernel makes (conv_direct.h), and the implicit
// path's dW, which packs COLᵀ from x as its forward packs COL, and its dx,
// whose GEMM goes a few micro-panels at a time, each image added into dx as
// soon as it is whole. Optionally fused with ReLU, or with ReLU and 2×2 max
// pooling (op_conv2d_relu_maxpool2).
//
// Threads. Images are independent. The batch is cut into GROUPS fixed runs
// of images (fixed by n, never by the thread count), and each run goes to
// one thread from start to end: on the im2col path its forward is one GEMM
// over the run's images side by side (forward_run), and its backward one
// GEMM for dW and one for the data gradient (im2col_products). The direct and
// 1×1 forwards go image by image. The GEMMs are called from inside the
// parallel region; gemm() then runs on the calling thread alone (it opens no
// region of its own inside another) and gives the same bits as on any
// thread count, and it keeps its packing buffers per thread. One GEMM per
// run on one core each beats splitting a GEMM this small between cores.
// Runs and images go to the threads in fixed shares (schedule(static)), the
// same runs to the same thread at every step. The packing buffers are sized
// on a thread's first use, so after the first step no thread meets a GEMM
// larger than it has met, and no step after the first allocates. Handed out
// to whichever thread is free (schedule(dynamic)), a run could reach a
// thread that never had one that large, in any later step.
// dW sums over images: each run sums its images' shares in order into its
// own partial dW, and the partials are added in order at the end. Every
// result is thus the same bits on any number of threads. The tape is not
// safe for threads: failures inside a parallel region are counted and
// reported once after it.
//
// Pooling fused. The pooled output and a byte per pooled element (which of
// its window's four was the maximum) are all the op writes and keeps: the
// convolution's output, four times as large, lives only in a run's scratch
// (im2col, 1×1) or in registers (the direct kernel). The backward sends each
// pooled gradient back to its element while it lays the run's gradients side
// by side, the copy the ReLU's mask rides in already.
//
// Memory. The backward reads x and w, and of the output only what it must:
// the im2col path makes each run's col matrices in its thread's own scratch
// and uses them at once, and the backward makes every run's col matrices
// again (one more copy) instead of keeping the whole batch's (n·K·P floats:
// 36 MB for this book's second convolution at batch 256). The fused ReLU's
// backward needs only where y was positive: one bit per output, saved, not y
// itself (22 MB of floats for the first convolution at batch 256, 0.7 MB of
// bits), so y can die as soon as the next op has read it. With the pooling
// fused, the pooled y (a quarter of the size) is kept with its codes.
#include <limits.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "conv2d_parts.h"
#include "conv_implicit.h"
#include "conv_winograd.h"

// The direct path makes dW with its own kernel (conv_dw_fn) when the GEMM
// would have n = K = c·9 below this, narrower than the micro-kernel's tile
// (conv1's K is 9); from there on the GEMM is faster (conv2's K is 288).
enum { DW_KERNEL_K = 32 };

// What the backward needs besides the node's tensors, saved on the tape and
// pointed to by node->ints: stride, pad, whether the pooling is fused, and
// the path the forward chose (the backward takes the same, chosen once per
// layer and step); from byte KEPT_AT on, the pooling's codes (one byte per
// pooled element) or, with ReLU fused alone, the ReLU's mask (relu_mask).
enum { SAVED_STRIDE, SAVED_PAD, SAVED_POOL, SAVED_PATH, SAVED_COUNT };
enum { KEPT_AT = 64 };

// The sizes conv_implicit.h takes.
static struct conv_geom geom_of(const struct conv_dims *d, const struct gemm_context *gemm)
{
    struct conv_geom g = {d->c, d->h, d->w, d->kh, d->kw, d->stride, d->pad, d->oh, d->ow, gemm};
    return g;
}

static struct conv_dims dims_of(const struct tensor *x, const struct tensor *w, int stride,
                                int pad)
{
    struct conv_dims d = {x->shape[0], x->shape[1], x->shape[2], x->shape[3], w->shape[0],
                          w->shape[2], w->shape[3], 0, 0, stride, pad, 0, 0, 0, 0};
    d.oh = (d.h + 2 * pad - d.kh) / stride + 1;
    d.ow = (d.w + 2 * pad - d.kw) / stride + 1;
    d.K = (long)d.c * d.kh * d.kw;
    d.P = (long)d.oh * d.ow;
    d.ph = d.oh / 2;
    d.pw = d.ow / 2;
    return d;
}

static int bad_shapes(const struct tensor *x, const struct tensor *w, const struct tensor *bias,
                      int stride, int pad)
{
    if (x->ndim != 4 || w->ndim != 4 || bias->ndim != 1 || w->shape[1] != x->shape[1] ||
        bias->shape[0] != w->shape[0] || stride < 1 || pad < 0)
        return 1;
    // The padded image's sides must be ints, and the filter must fit in it.
    long ph = x->shape[2] + 2L * pad, pw = x->shape[3] + 2L * pad;
    return ph > INT_MAX || pw > INT_MAX || ph < w->shape[2] || pw < w->shape[3];
}

// The batch in GROUPS runs of images for the backward's dW (see above):
// run g is images group_first(g, n) .. group_first(g + 1, n) − 1.
enum { GROUPS = 16 };

static int group_first(int g, int n)
{
    return (int)((long)g * n / GROUPS);
}

// The most images in one run.
static int longest_run(int n)
{
    int longest = 0;
    for (int g = 0; g < GROUPS; g++) {
        int m = group_first(g + 1, n) - group_first(g, n);
        longest = m > longest ? m : longest;
    }
    return longest;
}

// One image's output (oc planes of P) starts as the bias; the GEMM (beta =
// 1) or the direct kernel adds the convolution onto it, and the fused ReLU
// follows at once: the image's output is written, summed into and clipped
// while it is in cache, not in three passes over the whole batch.
static void fill_bias(float *y, const float *bias, int oc, long P)
{
    for (int o = 0; o < oc; o++)
        for (long p = 0; p < P; p++)
            y[o * P + p] = bias[o];
}

// listing: relu_mask
// The fused ReLU's mask (vec.h's relu_mask): a bit per output, a row of
// mask_row(P) bytes per plane, so that each plane starts on a byte; an
// image's planes take oc rows. The backward needs no more of y.
static long mask_row(long P)
{
    return (P + 7) / 8;
}

static void keep_mask(const struct vec_kernels *v, const struct conv_dims *d, const float *yi,
                      uint8_t *mi)
{
    for (int o = 0; o < d->oc; o++)
        v->relu_mask(d->P, mi + o * mask_row(d->P), yi + o * d->P);
}
// end listing

// listing: conv_image_out
// Image i's output from a GEMM's (oc planes of P floats without the bias,
// plane o at out + o·ld): the bias added and copied into y (and clipped,
// with ReLU fused, its mask kept), or only its 2×2 maxima and their codes,
// two rows of the plane at a time, while the plane is still in cache.
static void image_out(const struct conv_dims *d, const float *out, long ld, const float *bias,
                      const struct conv_out *o, int i)
{
    if (o->code) {
        long ps = (long)d->ph * d->pw, at = (long)i * d->oc * ps;
        for (int c = 0; c < d->oc; c++, at += ps) {
            const float *plane = out + c * ld;
            o->pool_plane(plane, d->oh, d->ow, bias[c], o->y + at, o->code + at);
        }
        return;
    }
    long ys = (long)d->oc * d->P;
    float *yi = o->y + i * ys;
    for (int c = 0; c < d->oc; c++) {
        const float *row = out + c * ld;
        for (long p = 0; p < d->P; p++)
            yi[c * d->P + p] = row[p] + bias[c];
    }
    if (o->relu)
        o->vec->relu(ys, yi, yi);
    if (o->mask)
        keep_mask(o->vec, d, yi, o->mask + (long)i * d->oc * mask_row(d->P));
}
// end listing

// The implicit path's epilogue: image_out for each image of the run whose
// columns of out the GEMM has finished (conv_done_fn), while they are still
// in cache, instead of after the whole run's GEMM.
struct images_done {
    const struct conv_dims *d;
    const float *out;
    long ld;
    const float *bias;
    const struct conv_out *o;
    int first, m, next;
};

static void images_out(void *ctx, long upto)
{
    struct images_done *c = ctx;
    for (; c->next < c->m && (c->next + 1) * c->d->P <= upto; c->next++)
        image_out(c->d, c->out + c->next * c->d->P, c->ld, c->bias, c->o, c->first + c->next);
}

// listing: conv_forward_run
// The im2col path, one run of m images (group_first): their col matrices
// side by side make one K × (m·P) matrix COL, and one GEMM
//   Y (oc × m·P) = w (oc×K) · COL
// does the run, its n = m·P sixteen times an image's P at batch 256. Y's
// rows hold the images' planes side by side; image_out takes each image's
// out, so y is NCHW again.
// col and out are the thread's scratch, K × m·P and oc × m·P floats; the
// implicit path (be NULL) makes the same Y with no COL and no col, and
// hands each image to image_out as soon as its columns of Y are done
// (images_out), while they are still in cache.
// Returns 0, or -1 when the GEMM backend ran out of memory.
static int forward_run(const struct conv_dims *d, const struct gemm_context *ctx,
                       const struct gemm_backend *be, const float *x, const float *w,
                       const float *bias, const struct conv_out *o, int g, float *col, float *out)
{
    int first = group_first(g, d->n), m = group_first(g + 1, d->n) - first;
    long ld = m * d->P, xs = (long)d->c * d->h * d->w;
    if (m == 0)
        return 0;
    if (!be) {
        struct conv_geom geom = geom_of(d, ctx);
        struct images_done done = {d, out, ld, bias, o, first, m, 0};
        return conv_implicit_forward(&geom, x + first * xs, xs, m, w, d->oc, out, images_out,
                                     &done);
    }
    for (int j = 0; j < m; j++)
        im2col(x + (first + j) * xs, d->c, d->h, d->w, d->kh, d->kw, d->stride, d->pad,
               col + j * d->P, ld);
    if (be->run(ctx, GEMM_NOTRANS, GEMM_NOTRANS, d->oc, (int)ld, (int)d->K, 1.0f, w, (int)d->K, col,
                (int)ld, 0.0f, out, (int)ld) != 0)
        return -1;
    for (int j = 0; j < m; j++)
        image_out(d, out + j * d->P, ld, bias, o, first + j);
    return 0;
}
// end listing

// The Winograd path's epilogue: image_out for each image as
// conv_winograd_forward finishes it (conv_image_fn).
struct winograd_done {
    const struct conv_dims *d;
    const float *bias;
    const struct conv_out *o;
    int first;
};

static void winograd_image_out(void *ctx, int image, const float *out)
{
    struct winograd_done *c = ctx;
    image_out(c->d, out, c->d->P, c->bias, c->o, c->first + image);
}

// The filters turned round for the fused direct kernel (conv_direct.h):
// kt[((ch·3 + u)·3 + v)·oc + o] = w[o][ch][u][v].
static float *turned_filters(struct tape *t, const struct conv_dims *d, const float *w)
{
    float *kt = tape_scratch(t, sizeof(float) * (size_t)(d->oc * d->K));
    if (kt)
        for (int o = 0; o < d->oc; o++)
            for (long k = 0; k < d->K; k++)
                kt[k * d->oc + o] = w[o * d->K + k];
    return kt;
}

static int gemm_failed(const struct conv_forward_call *f)
{
    tape_fail(f->t, "%s: the %s GEMM backend ran out of memory", f->op, f->cfg->gemm->name);
    return -1;
}

// The im2col and implicit paths: runs of images (forward_run), each thread
// with its own scratch: the col matrix (im2col alone) and the GEMM's output.
static int forward_runs(const struct conv_forward_call *f, int implicit)
{
    const struct conv_dims *d = f->d;
    long run_p = longest_run(d->n) * d->P, per_thread = (implicit ? d->oc : d->K + d->oc) * run_p;
    float *scratch =
        tape_scratch(f->t, sizeof(float) * (size_t)(omp_get_max_threads() * per_thread));
    if (!scratch) {
        tape_fail(f->t, "%s: out of memory for im2col's %ld×%ld matrices", f->op, d->K, run_p);
        return -1;
    }
    int failed = 0;
#pragma omp parallel for schedule(static) reduction(|| : failed)
    for (int g = 0; g < GROUPS; g++) {
        float *col = scratch + omp_get_thread_num() * per_thread;
        float *out = implicit ? col : col + d->K * run_p;
        if (forward_run(d, &f->cfg->kernels, implicit ? NULL : f->cfg->gemm, f->x, f->w, f->bias,
                        f->o, g, col, out) != 0)
            failed = 1;
    }
    return failed ? gemm_failed(f) : 0;
}

int conv_im2col_path_forward(const struct conv_forward_call *f)
{
    return forward_runs(f, 0);
}

int conv_implicit_path_forward(const struct conv_forward_call *f)
{
    return forward_runs(f, 1);
}

// The filters transformed once, then runs of images as above, each thread
// with its own scratch.
int conv_winograd_path_forward(const struct conv_forward_call *f)
{
    const struct conv_dims *d = f->d;
    long xs = (long)d->c * d->h * d->w;
    struct conv_geom geom = geom_of(d, &f->cfg->kernels);
    long per_thread = conv_winograd_scratch(&geom, d->oc);
    long u_floats = conv_winograd_filters_floats(d->c, d->oc);
    float *u = tape_scratch(f->t, sizeof(float) * (size_t)u_floats);
    float *scratch =
        tape_scratch(f->t, sizeof(float) * (size_t)(omp_get_max_threads() * per_thread));
    if (!u || !scratch) {
        tape_fail(f->t, "%s: out of memory for the Winograd transforms", f->op);
        return -1;
    }
    conv_winograd_filters(f->w, d->oc, d->c, 0, u);
#pragma omp parallel for schedule(static)
    for (int g = 0; g < GROUPS; g++) {
        int first = group_first(g, d->n), m = group_first(g + 1, d->n) - first;
        struct winograd_done done = {d, f->bias, f->o, first};
        conv_winograd_forward(&geom, f->x + first * xs, xs, m, u, d->oc, f->cfg->isa,
                              scratch + omp_get_thread_num() * per_thread, winograd_image_out,
                              &done);
    }
    return 0;
}

// listing: conv_forward
// The direct and 1×1 paths go one image at a time: fill_bias writes image
// i's output yi, the kernel or the GEMM (beta = 1) adds into it, and
// image_done clips it in place (and keeps the ReLU's mask).
static void image_done(const struct conv_forward_call *f, float *yi, int i)
{
    const struct conv_dims *d = f->d;
    if (f->o->relu)
        f->o->vec->relu((long)d->oc * d->P, yi, yi);
    if (f->o->mask)
        keep_mask(f->o->vec, d, yi, f->o->mask + (long)i * d->oc * mask_row(d->P));
}

int conv_direct_path_forward(const struct conv_forward_call *f)
{
    const struct conv_dims *d = f->d;
    long xs = (long)d->c * d->h * d->w, ys = (long)d->oc * d->P;
    if (f->o->code) {
        // The convolution, its ReLU and the pooling in one kernel, an image
        // at a time.
        float *kt = turned_filters(f->t, d, f->w);
        if (!kt) {
            tape_fail(f->t, "%s: out of memory for the filters", f->op);
            return -1;
        }
        conv_pool_fn *kernel = conv_pool_kernel(f->cfg->isa);
        long ps = (long)d->oc * d->ph * d->pw;
#pragma omp parallel for schedule(static)
        for (int i = 0; i < d->n; i++)
            kernel(f->x + i * xs, d->c, d->h, d->w, kt, f->bias, d->oc, d->pad, f->o->y + i * ps,
                   f->o->code + i * ps);
        return 0;
    }
    conv_direct_fn *kernel = conv_direct_kernel(f->cfg->isa);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < d->n; i++) {
        float *yi = f->o->y + i * ys;
        fill_bias(yi, f->bias, d->oc, d->P);
        kernel(f->x + i * xs, d->c, d->h, d->w, f->w, d->oc, d->pad, yi);
        image_done(f, yi, i);
    }
    return 0;
}

// The 1×1 GEMM's B is the image itself, c×(h·w), the col matrix with no
// copy. Pooled, the GEMM writes into the thread's scratch and image_out
// pools.
int conv_1x1_path_forward(const struct conv_forward_call *f)
{
    const struct conv_dims *d = f->d;
    const struct gemm_backend *be = f->cfg->gemm;
    const struct gemm_context *ctx = &f->cfg->kernels;
    long xs = (long)d->c * d->h * d->w, ys = (long)d->oc * d->P;
    int pool = f->o->code != NULL, failed = 0;
    float *scratch =
        pool ? tape_scratch(f->t, sizeof(float) * (size_t)(omp_get_max_threads() * ys)) : NULL;
    if (pool && !scratch) {
        tape_fail(f->t, "%s: out of memory for %ld floats of scratch", f->op, ys);
        return -1;
    }
#pragma omp parallel for schedule(static) reduction(|| : failed)
    for (int i = 0; i < d->n; i++) {
        const float *xi = f->x + i * xs;
        if (pool) {
            float *out = scratch + omp_get_thread_num() * ys;
            if (be->run(ctx, GEMM_NOTRANS, GEMM_NOTRANS, d->oc, (int)d->P, (int)d->K, 1.0f, f->w,
                        (int)d->K, xi, (int)d->P, 0.0f, out, (int)d->P) != 0)
                failed = 1;
            else
                image_out(d, out, d->P, f->bias, f->o, i);
            continue;
        }
        float *yi = f->o->y + i * ys;
        fill_bias(yi, f->bias, d->oc, d->P);
        if (be->run(ctx, GEMM_NOTRANS, GEMM_NOTRANS, d->oc, (int)d->P, (int)d->K, 1.0f, f->w,
                    (int)d->K, xi, (int)d->P, 1.0f, yi, (int)d->P) != 0)
            failed = 1;  // y_i (oc×P) += w (oc×K) · x_i (K×P)
        image_done(f, yi, i);
    }
    return failed ? gemm_failed(f) : 0;
}
// end listing

// The shared opening: the shapes checked, the op opened on the tape (its
// output, its saved ints), the path chosen; then one call through the
// path's row, and the op closed.
static struct tensor *conv_forward(struct tape *t, const char *name, tape_backward_fn *backward,
                                   struct tensor *x, struct tensor *w, struct tensor *bias,
                                   int stride, int pad, int relu, int pool)
{
    if (!x || !w || !bias)
        return NULL;  // an earlier op failed: its message stands
    if (bad_shapes(x, w, bias, stride, pad)) {
        char sx[64], sw[64], sb[64];
        tensor_shape_str(x, sx, sizeof sx);
        tensor_shape_str(w, sw, sizeof sw);
        tensor_shape_str(bias, sb, sizeof sb);
        return tape_fail(t,
                         "%s: x is %s, w is %s, bias is %s, stride %d, pad %d (want n×c×h×w, "
                         "oc×c×kh×kw and oc, stride ≥ 1, pad ≥ 0, and a filter no larger than "
                         "the padded image)",
                         name, sx, sw, sb, stride, pad);
    }
    struct conv_dims d = dims_of(x, w, stride, pad);
    if (pool && (d.ph < 1 || d.pw < 1))
        return tape_fail(t, "%s: the convolution's output is %d×%d, too small to pool 2×2", name,
                         d.oh, d.ow);
    // dW reads x, dx reads w; the fused ReLU reads its saved mask, not y;
    // the fused pooling reads the pooled y (was its maximum above zero).
    struct tape_op op = {.name = name, .backward = backward, .in = {x, w, bias},
                         .needs = (w->requires_grad ? NEEDS_IN0 : 0) |
                                  (x->requires_grad ? NEEDS_IN1 : 0) | (pool ? NEEDS_OUT : 0)};
    int yshape[4] = {d.n, d.oc, pool ? d.ph : d.oh, pool ? d.pw : d.ow};
    struct tensor *y = tape_op_open(t, &op, 4, yshape);
    if (!y)
        return NULL;
    // The saved ints and, from byte KEPT_AT on, one code per pooled element
    // (the forward writes the codes whether or not the tape records) or the
    // fused ReLU's mask (only when recording).
    int keep_mask_bits = relu && !pool && y->requires_grad;
    size_t kept = pool ? (size_t)y->size
                       : keep_mask_bits ? (size_t)d.n * d.oc * mask_row(d.P) : 0;
    int *saved = tape_save(t, KEPT_AT + kept);
    if (!saved)
        return tape_fail(t, "%s: out of memory for the tape", name);
    saved[SAVED_STRIDE] = stride;
    saved[SAVED_PAD] = pad;
    saved[SAVED_POOL] = pool;
    op.ints = saved;
    const struct tape_config *cfg = tape_config(t);
    struct conv_shape shape = {d.c, d.h, d.w, d.oc, d.kh, d.kw, stride, pad};
    const struct conv_path *path = conv_choose(cfg->conv, &shape);
    saved[SAVED_PATH] = (int)conv_path_id(path);

    const struct vec_kernels *v = vec_kernels(cfg->isa);
    unsigned char *at = (unsigned char *)saved + KEPT_AT;
    struct conv_out o = {y->data, pool ? at : NULL, relu, keep_mask_bits ? at : NULL, v,
                         relu_pool_plane_kernel(cfg->isa)};
    struct conv_forward_call call = {t, name, &d, cfg, x->data, w->data, bias->data, &o};
    if (path->forward(&call) != 0)
        return NULL;
    return tape_op_close(t, &op, y);
}

// listing: conv_gather_dy
// Plane o of image i's share of DY, P floats at row: the gradient that
// reaches the convolution's output. Plain, a copy of dy; with ReLU fused,
// dy masked by y > 0 (the ReLU's backward, from its saved bits); with the
// pooling fused too, each pooled gradient goes to the element its code
// names, when the maximum was above zero, and the other three get nothing
// (the pooling's backward, then the ReLU's): one call of a plane kernel
// writes the whole plane and returns its sum. The plane's sum goes into db.
static void gather_plane(const struct conv_back *b, int i, int o, float *row, float *db)
{
    const struct conv_dims *d = &b->d;
    long ys = b->code ? (long)d->ph * d->pw : d->P, at = ((long)i * d->oc + o) * ys;
    if (b->code) {
        float sum = b->unpool(b->dy + at, b->y + at, b->code + at, d->ph, d->pw, d->oh, d->ow,
                              row);
        if (db)
            db[o] += sum;
        return;
    }
    if (b->mask) {
        const uint8_t *mi = b->mask + ((long)i * d->oc + o) * mask_row(d->P);
        b->vec->relu_mask_backward(d->P, row, mi, b->dy + at);
    } else {
        memcpy(row, b->dy + at, sizeof(float) * (size_t)d->P);
    }
    if (db)
        db[o] += row_sum(row, d->P);
}

// Image i's oc planes, plane o at dy + o·ld.
static void gather_dy(const struct conv_back *b, int i, float *dy, long ld, float *db)
{
    for (int o = 0; o < b->d.oc; o++)
        gather_plane(b, i, o, dy + o * ld, db);
}
// end listing

// listing: conv_backward
// y_i = w·col_i + bias, per image, with w oc×K, col_i K×P, y_i oc×P. As for
// a matmul (chapter 6):
//   dw (oc×K)   += Σ_i dy_i (oc×P) · col_iᵀ (P×K)
//   dcol_i (K×P) = wᵀ (K×oc) · dy_i (oc×P), then col2im adds it into dx_i
//   dbias[o]    += Σ_i Σ_p dy_i[o][p]
// gather_dy has laid each image's dy_i into DY (masked by the ReLU, sent
// back through the pooling). The images of a run are taken together: their
// dy_i side by side make one oc × (m·P) matrix DY, their col_i one
// K × (m·P) matrix COL (m images), and
//   dw += DY · COLᵀ      one GEMM with k = m·P instead of m GEMMs with k = P
//   DCOL = wᵀ · DY       one GEMM, then col2im per image
// A GEMM with k = P = 121 loads and stores its block of C after 121
// multiply-adds; with k = 16·121 the packing and the stores of C are paid
// once for 16 times the work. dw is the run's partial sum. col is the
// thread's scratch matrix, m·P floats a row, as DY is.
// Returns 0, or -1 when the GEMM backend ran out of memory.
static int im2col_products(const struct conv_back *b, int first, int m, float *col,
                           const float *dy, float *dw)
{
    const struct conv_dims *d = &b->d;
    long xs = (long)d->c * d->h * d->w, ld = m * d->P;  // ld: the width of DY and COL
    // BEGIN SOLUTION task 8.2: which GEMMs of DY with each image's COL and with w give dw and DCOL, and what carries each image's block of DCOL back into dx?
    if (dw) {
        for (int j = 0; j < m; j++)
            im2col(b->x + (first + j) * xs, d->c, d->h, d->w, d->kh, d->kw, d->stride, d->pad,
                   col + j * d->P, ld);
        if (b->be->run(b->gemm, GEMM_NOTRANS, GEMM_TRANS, d->oc, (int)d->K, (int)ld, 1.0f, dy,
                       (int)ld, col, (int)ld, 1.0f, dw, (int)d->K) != 0)
            return -1;
    }
    if (b->dx) {
        if (b->be->run(b->gemm, GEMM_TRANS, GEMM_NOTRANS, (int)d->K, (int)ld, d->oc, 1.0f, b->w,
                       (int)d->K, dy, (int)ld, 0.0f, col, (int)ld) != 0)
            return -1;
        for (int j = 0; j < m; j++)
            col2im(col + j * d->P, ld, d->c, d->h, d->w, d->kh, d->kw, d->stride, d->pad,
                   b->dx + (first + j) * xs);
    }
    // stub: (void)first; (void)col; (void)dy; (void)dw; (void)xs; (void)ld;
    // END SOLUTION
    return 0;
}
// end listing

// The implicit path: COLᵀ's micro-panels packed from x, no col matrix for
// dW; DCOL an image at a time into col (a window of it:
// conv_implicit_dx), each added into dx while it is in L2.
static int implicit_products(const struct conv_back *b, int first, int m, float *col,
                             const float *dy, float *dw)
{
    const struct conv_dims *d = &b->d;
    long xs = (long)d->c * d->h * d->w;
    struct conv_geom geom = geom_of(d, b->gemm);
    if (dw && conv_implicit_dw(&geom, b->x + first * xs, xs, m, dy, d->oc, dw) != 0)
        return -1;
    if (b->dx &&
        conv_implicit_dx(&geom, b->w, d->oc, dy, m, col, b->dx + first * xs, xs, b->dx_beta) != 0)
        return -1;
    return 0;
}

// The Winograd path: dW and dx through the transforms of the forward
// (conv_winograd.h), col its scratch.
static int winograd_products(const struct conv_back *b, int first, int m, float *col,
                             const float *dy, float *dw)
{
    const struct conv_dims *d = &b->d;
    long xs = (long)d->c * d->h * d->w;
    struct conv_geom geom = geom_of(d, b->gemm);
    conv_winograd_backward(&geom, b->x + first * xs, xs, m, dy, m * d->P, b->u, d->oc, b->isa,
                           dw, b->dx ? b->dx + first * xs : NULL, b->dx_beta, col);
    return 0;
}

// Run g of the backward: its partial sums zeroed, its DY laid out (the
// direct path's dW made on the way), then the path's products. col and dy
// are the thread's scratch matrices, run_p floats a row.
static int backward_run(const struct conv_back *b, int g, float *col, float *dy)
{
    const struct conv_dims *d = &b->d;
    long xs = (long)d->c * d->h * d->w;
    int first = group_first(g, d->n), m = group_first(g + 1, d->n) - first;
    long ld = m * d->P;  // the width of DY and COL for this run
    float *dw = b->dw_run ? b->dw_run + g * d->oc * d->K : NULL;
    float *db = b->db_run ? b->db_run + g * d->oc : NULL;
    // The run's partial sums start at zero here, on its own thread.
    if (dw)
        memset(dw, 0, sizeof(float) * (size_t)(d->oc * d->K));
    if (db)
        memset(db, 0, sizeof(float) * (size_t)d->oc);
    if (m == 0)
        return 0;  // a batch of fewer than GROUPS images leaves runs empty
    for (int j = 0; j < m; j++) {
        if (!(dw && b->dw_kernel)) {
            gather_dy(b, first + j, dy + j * d->P, ld, db);
            continue;
        }
        // The direct path's dW from the image and its gradient, a plane at
        // a time: each plane of DY, just written and still in L1, gives its
        // filter's gradient at once (no col matrix, no GEMM with n = 9).
        // With no dx to make, DY is not read again: every plane goes into
        // the same P floats, which never leave L1.
        for (int o = 0; o < d->oc; o++) {
            float *row = b->dx ? dy + j * d->P + o * ld : dy;
            gather_plane(b, first + j, o, row, db);
            b->dw_kernel(b->x + (first + j) * xs, d->c, d->h, d->w, row, ld, 1, d->pad,
                         dw + o * d->K);
        }
    }
    if (b->dw_kernel)
        dw = NULL;  // done
    return b->products(b, first, m, col, dy, dw);
}

static float *scratch(struct tape *t, const char *op, int wanted, long floats)
{
    if (!wanted)
        return NULL;
    float *p = tape_scratch(t, sizeof(float) * (size_t)floats);
    if (!p)
        tape_fail(t, "%s backward: out of memory for %ld floats of scratch", op, floats);
    return p;
}

// The runs of images in parallel with the path's products, then their
// partial sums added into dw and dbias in run order.
static int backward_runs(struct conv_back *b, conv_products_fn *products)
{
    const struct conv_dims *d = &b->d;
    b->products = products;
    b->run_p = longest_run(d->n) * d->P;
    int threads = omp_get_max_threads();
    // The row's scratch (im2col: the run's col matrix), then DY.
    long col_floats = b->path->scratch(d, b->gemm);
    long per_thread = col_floats + d->oc * b->run_p;
    b->dw_run = scratch(b->t, b->op, b->dw != NULL, GROUPS * d->oc * d->K);
    b->db_run = scratch(b->t, b->op, b->dbias != NULL, GROUPS * d->oc);
    b->scratch = scratch(b->t, b->op, 1, threads * per_thread);
    if (tape_failed(b->t))
        return -1;
    int failed = 0;
#pragma omp parallel for schedule(static) reduction(|| : failed)
    for (int g = 0; g < GROUPS; g++) {
        float *col = b->scratch + omp_get_thread_num() * per_thread;
        if (backward_run(b, g, col, col + col_floats) != 0)
            failed = 1;
    }
    if (failed) {
        tape_fail(b->t, "%s backward: the %s GEMM backend ran out of memory", b->op, b->be->name);
        return -1;
    }
    // dw's elements in slices across the threads, each element's partials
    // added in run order, as on one thread.
    long dw_size = d->oc * d->K, slice = 1024;
    if (b->dw) {
#pragma omp parallel for schedule(static)
        for (long at = 0; at < dw_size; at += slice)
            for (int g = 0; g < GROUPS; g++)
                b->vec->add_to(dw_size - at < slice ? dw_size - at : slice, b->dw + at,
                               b->dw_run + g * dw_size + at);
    }
    for (int g = 0; g < GROUPS; g++)
        if (b->dbias)
            b->vec->add_to(d->oc, b->dbias, b->db_run + g * d->oc);
    return 0;
}

long conv_im2col_scratch(const struct conv_dims *d, const struct gemm_context *gemm)
{
    (void)gemm;
    return d->K * longest_run(d->n) * d->P;
}

long conv_implicit_path_scratch(const struct conv_dims *d, const struct gemm_context *gemm)
{
    struct conv_geom geom = geom_of(d, gemm);
    return conv_implicit_dx_scratch(&geom);
}

long conv_winograd_path_scratch(const struct conv_dims *d, const struct gemm_context *gemm)
{
    struct conv_geom geom = geom_of(d, gemm);
    return conv_winograd_backward_scratch(&geom, d->oc);
}

// The im2col, 1×1 and direct paths add each image's gradient into dx, so
// it starts at zero.
int conv_im2col_path_backward(struct conv_back *b)
{
    if (b->dx && b->dx_beta == 0.0f) {
        memset(b->dx, 0, sizeof(float) * (size_t)b->d.n * b->d.c * b->d.h * b->d.w);
        b->dx_beta = 1.0f;
    }
    return backward_runs(b, im2col_products);
}

// The direct path makes dW with its own kernel where the GEMM would be too
// narrow (DW_KERNEL_K), and dx as im2col does.
int conv_direct_path_backward(struct conv_back *b)
{
    if (b->d.K < DW_KERNEL_K)
        b->dw_kernel = conv_dw_kernel(b->isa);
    return conv_im2col_path_backward(b);
}

// The implicit path writes a fresh dx image by image, while each is in
// cache.
int conv_implicit_path_backward(struct conv_back *b)
{
    return backward_runs(b, implicit_products);
}

// So does the Winograd path, with its filters transformed once.
int conv_winograd_path_backward(struct conv_back *b)
{
    float *u = scratch(b->t, b->op, 1, conv_winograd_filters_floats(b->d.c, b->d.oc));
    if (!u)
        return -1;
    conv_winograd_filters(b->w, b->d.oc, b->d.c, 1, u);
    b->u = u;
    return backward_runs(b, winograd_products);
}

// The shared opening of the backward: the tensors, the gradients to make
// and the kernels, then one call through the row the forward took.
static int conv_backward_common(struct tape *t, struct tape_node *node, int relu)
{
    struct tensor *x = node->in[0], *w = node->in[1], *bias = node->in[2], *y = node->out;
    const int *saved = node->ints;
    const struct tape_config *cfg = tape_config(t);
    const unsigned char *at = (const unsigned char *)saved + KEPT_AT;
    struct conv_back b = {
        .t = t,
        .op = node->op,
        .path = conv_path_of((enum conv_path_id)saved[SAVED_PATH]),
        .d = dims_of(x, w, saved[SAVED_STRIDE], saved[SAVED_PAD]),
        .mask = relu && !saved[SAVED_POOL] ? at : NULL,
        .code = saved[SAVED_POOL] ? at : NULL,
        .isa = cfg->isa,
        .unpool = relu_pool_plane_backward_kernel(cfg->isa),
        .be = cfg->gemm,
        .gemm = &cfg->kernels,
        .vec = vec_kernels(cfg->isa),
        .x = x->data,
        .w = w->data,
        .y = saved[SAVED_POOL] ? y->data : NULL,
        .dy = y->grad};
    // In this order: dw, dbias, then dx (which the path may write fresh).
    b.dw = w->requires_grad ? tape_grad(t, w) : NULL;
    b.dbias = bias->requires_grad ? tape_grad(t, bias) : NULL;
    if (x->requires_grad)
        b.dx = tape_grad_write(t, x, &b.dx_beta);
    if ((x->requires_grad && !b.dx) || (w->requires_grad && !b.dw) ||
        (bias->requires_grad && !b.dbias))
        return -1;
    return b.path->backward(&b);
}

static int conv_backward(struct tape *t, struct tape_node *node)
{
    return conv_backward_common(t, node, 0);
}

static int conv_relu_backward(struct tape *t, struct tape_node *node)
{
    return conv_backward_common(t, node, 1);
}

struct tensor *op_conv2d(struct tape *t, struct tensor *x, struct tensor *w, struct tensor *bias,
                         int stride, int pad)
{
    return conv_forward(t, "conv2d", conv_backward, x, w, bias, stride, pad, 0, 0);
}

struct tensor *op_conv2d_relu(struct tape *t, struct tensor *x, struct tensor *w,
                              struct tensor *bias, int stride, int pad)
{
    return conv_forward(t, "conv2d_relu", conv_relu_backward, x, w, bias, stride, pad, 1, 0);
}

struct tensor *op_conv2d_relu_maxpool2(struct tape *t, struct tensor *x, struct tensor *w,
                                       struct tensor *bias, int stride, int pad)
{
    return conv_forward(t, "conv2d_relu_maxpool2", conv_relu_backward, x, w, bias, stride, pad,
                        1, 1);
}
