// The convolution as one tape node, three ways (conv.h): im2col + GEMM, the
// 1×1 GEMM on x in place, the direct 3×3 kernel; the backward of all three
// goes through the GEMMs of the im2col path. Optionally fused with ReLU.
//
// Threads. The copies (im2col, col2im) and the direct kernel run over the
// images of the batch with OpenMP: each image is one thread's, start to
// end, so the bits do not depend on the thread count. The GEMMs run one
// image after another, outside any parallel region, each on as many threads
// as gemm() gives its shape: gemm() promises the same bits on any thread
// count, the tape's backend (OpenBLAS, say) need not be safe to call from
// several threads at once, and tape_gemm records errors on the tape, which
// is not. dW sums the images' shares in image order, the same on any count.
//
// Memory. The im2col path keeps every image's col matrix (n·K·P floats, K =
// c·kh·kw, P = oh·ow) in the arena for the backward's dW, and the backward
// reuses it for dcol: no second copy, no second im2col. The direct path
// keeps none and makes them in the backward, only when dx or dw is wanted.
#include <limits.h>

#include "arena.h"
#include "conv.h"
#include "conv_direct.h"
#include "vec.h"

// What the backward needs besides the node's tensors, kept in the arena and
// pointed to by node->labels: stride, pad and the path taken.
enum { SAVED_STRIDE, SAVED_PAD, SAVED_PATH, SAVED_COUNT };

// The sizes of one convolution, from its tensors.
struct conv_dims {
    int n, c, h, w, oc, kh, kw, oh, ow, stride, pad;
    long K, P;  // the GEMM's k = c·kh·kw and n = oh·ow
};

static struct conv_dims dims_of(const struct tensor *x, const struct tensor *w, int stride,
                                int pad)
{
    struct conv_dims d = {x->shape[0], x->shape[1], x->shape[2], x->shape[3], w->shape[0],
                          w->shape[2], w->shape[3], 0, 0, stride, pad, 0, 0};
    d.oh = (d.h + 2 * pad - d.kh) / stride + 1;
    d.ow = (d.w + 2 * pad - d.kw) / stride + 1;
    d.K = (long)d.c * d.kh * d.kw;
    d.P = (long)d.oh * d.ow;
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

// The images' col matrices, K×P each, one after another: im2col of every
// image of x, over the batch.
static void im2col_batch(const struct conv_dims *d, const float *x, float *col)
{
    long xs = (long)d->c * d->h * d->w;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < d->n; i++)
        im2col(x + i * xs, d->c, d->h, d->w, d->kh, d->kw, d->stride, d->pad,
               col + i * d->K * d->P);
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

// listing: conv_forward
static struct tensor *conv_forward(struct tape *t, const char *op, tape_backward_fn *backward,
                                   struct tensor *x, struct tensor *w, struct tensor *bias,
                                   int stride, int pad, int relu)
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
                         op, sx, sw, sb, stride, pad);
    }
    struct conv_dims d = dims_of(x, w, stride, pad);
    struct tensor *y = tape_output(t, 4, (int[]){d.n, d.oc, d.oh, d.ow}, x, w);
    if (!y)
        return NULL;
    if (tape_recording(t) && bias->requires_grad)
        y->requires_grad = 1;
    enum conv_path path = conv_choose(d.c, d.h, d.w, d.oc, d.kh, d.kw, stride, pad);
    long xs = (long)d.c * d.h * d.w, ys = (long)d.oc * d.P;

    float *col = NULL;
    const struct vec_kernels *v = vec_current();
    if (path == CONV_DIRECT) {
        conv_direct_fn *kernel = conv_direct_kernel();
#pragma omp parallel for schedule(static)
        for (int i = 0; i < d.n; i++) {
            fill_bias(y->data + i * ys, bias->data, d.oc, d.P);
            kernel(x->data + i * xs, d.c, d.h, d.w, w->data, d.oc, pad, y->data + i * ys);
            if (relu)
                v->relu(ys, y->data + i * ys, y->data + i * ys);
        }
    } else {
        // im2col: B is the image's col matrix, K×P. 1×1: B is the image
        // itself, c×(h·w), which is the same matrix with no copy.
        if (path == CONV_IM2COL) {
            col = arena_alloc(tape_arena(t), sizeof(float) * (size_t)(d.n * d.K * d.P));
            if (!col)
                return tape_fail(t, "%s: out of memory for im2col's %ld×%ld matrices", op, d.K,
                                 d.P);
            im2col_batch(&d, x->data, col);
        }
        for (int i = 0; i < d.n; i++) {
            // y_i (oc×P) += w (oc×K) · B_i (K×P)
            const float *b = path == CONV_IM2COL ? col + i * d.K * d.P : x->data + i * xs;
            fill_bias(y->data + i * ys, bias->data, d.oc, d.P);
            if (tape_gemm(t, op, GEMM_NOTRANS, GEMM_NOTRANS, d.oc, (int)d.P, (int)d.K, w->data,
                          (int)d.K, b, (int)d.P, 1.0f, y->data + i * ys, (int)d.P) != 0)
                return NULL;
            if (relu)  // while the image's output is still in cache
                v->relu(ys, y->data + i * ys, y->data + i * ys);
        }
    }

    if (y->requires_grad) {
        int *saved = arena_alloc(tape_arena(t), sizeof(int) * SAVED_COUNT);
        struct tape_node *node = saved ? tape_record(t, op, backward, y, x, w) : NULL;
        if (!node)
            return tape_fail(t, "%s: out of memory for the tape", op);
        saved[SAVED_STRIDE] = stride;
        saved[SAVED_PAD] = pad;
        saved[SAVED_PATH] = path;
        node->in[2] = bias;
        node->labels = saved;
        node->saved = col;  // the im2col path's matrices, for dW
    }
    return y;
}
// end listing

// listing: conv_backward
// y_i = w·col_i + bias, per image, with w oc×K, col_i K×P, y_i oc×P. As for
// a matmul (chapter 6):
//   dw (oc×K)   += Σ_i dy_i (oc×P) · col_iᵀ (P×K)
//   dcol_i (K×P) = wᵀ (K×oc) · dy_i (oc×P), then col2im adds it into dx_i
//   dbias[o]    += Σ_i Σ_p dy_i[o][p]
// With ReLU fused, dy_i is first masked by y_i > 0 (the ReLU's own backward).
static int conv_backward_common(struct tape *t, struct tape_node *node, int relu)
{
    struct tensor *x = node->in[0], *w = node->in[1], *bias = node->in[2], *y = node->out;
    const int *saved = node->labels;
    struct conv_dims d = dims_of(x, w, saved[SAVED_STRIDE], saved[SAVED_PAD]);
    enum conv_path path = (enum conv_path)saved[SAVED_PATH];
    long xs = (long)d.c * d.h * d.w, ys = (long)d.oc * d.P;
    struct arena *a = tape_arena(t);
    float *dx = x->requires_grad ? tape_grad(t, x) : NULL;
    float *dw = w->requires_grad ? tape_grad(t, w) : NULL;
    float *dbias = bias->requires_grad ? tape_grad(t, bias) : NULL;
    if ((x->requires_grad && !dx) || (w->requires_grad && !dw) ||
        (bias->requires_grad && !dbias))
        return -1;

    // col: the forward's matrices (im2col), x itself (1×1), or made again
    // here (the direct path kept none). It also receives dcol (not for 1×1).
    float *col = node->saved;
    if (path == CONV_DIRECT && (dw || dx)) {
        col = arena_alloc(a, sizeof(float) * (size_t)(d.n * d.K * d.P));
        if (!col) {
            tape_fail(t, "%s backward: out of memory for im2col's matrices", node->op);
            return -1;
        }
        im2col_batch(&d, x->data, col);
    }
    // One image's masked gradient, when ReLU is fused.
    float *masked = relu ? arena_alloc(a, sizeof(float) * (size_t)ys) : NULL;
    if (relu && !masked) {
        tape_fail(t, "%s backward: out of memory", node->op);
        return -1;
    }

    for (int i = 0; i < d.n; i++) {
        const float *g = y->grad + i * ys, *yi = y->data + i * ys;
        if (relu) {
            for (long j = 0; j < ys; j++)
                masked[j] = yi[j] > 0.0f ? g[j] : 0.0f;
            g = masked;
        }
        for (int o = 0; dbias && o < d.oc; o++)
            for (long p = 0; p < d.P; p++)
                dbias[o] += g[o * d.P + p];
        const float *coli = path == CONV_1X1 ? x->data + i * xs : col ? col + i * d.K * d.P : NULL;
        // BEGIN SOLUTION task 8.2: dw += g·col_iᵀ; then dcol_i = wᵀ·g into col_i (1×1: dx_i += wᵀ·g), each one GEMM
        if (dw && tape_gemm(t, node->op, GEMM_NOTRANS, GEMM_TRANS, d.oc, (int)d.K, (int)d.P, g,
                            (int)d.P, coli, (int)d.P, 1.0f, dw, (int)d.K) != 0)
            return -1;
        if (dx && path == CONV_1X1) {
            if (tape_gemm(t, node->op, GEMM_TRANS, GEMM_NOTRANS, (int)d.K, (int)d.P, d.oc,
                          w->data, (int)d.K, g, (int)d.P, 1.0f, dx + i * xs, (int)d.P) != 0)
                return -1;
        } else if (dx) {
            // col_i has given dW its share: dcol_i takes its place.
            if (tape_gemm(t, node->op, GEMM_TRANS, GEMM_NOTRANS, (int)d.K, (int)d.P, d.oc,
                          w->data, (int)d.K, g, (int)d.P, 0.0f, col + i * d.K * d.P,
                          (int)d.P) != 0)
                return -1;
        }
        // stub: (void)g; (void)coli; (void)xs;
        // END SOLUTION
    }
    if (dx && path != CONV_1X1) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < d.n; i++)
            col2im(col + i * d.K * d.P, d.c, d.h, d.w, d.kh, d.kw, d.stride, d.pad, dx + i * xs);
    }
    return 0;
}
// end listing

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
    return conv_forward(t, "conv2d", conv_backward, x, w, bias, stride, pad, 0);
}

struct tensor *op_conv2d_relu(struct tape *t, struct tensor *x, struct tensor *w,
                              struct tensor *bias, int stride, int pad)
{
    return conv_forward(t, "conv2d_relu", conv_relu_backward, x, w, bias, stride, pad, 1);
}
