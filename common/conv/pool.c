// Pooling: 2×2 max pooling (the argmax kept for the backward; the inner
// loop is pool_row.c's) and global average pooling. Each plane (one channel
// of one image) is one thread's, so the bits do not depend on the thread
// count.
#include <limits.h>

#include "conv.h"
#include "pool_row.h"

// One plane (one channel of one image) of 2×2 max pooling, a row of
// windows at a time through the row kernel (pool_row.h), which keeps in
// where[j] the index in x of the element output j came from.
static void maxpool_plane(maxpool_row_fn *row, const float *x, int h, int w, long xoff, float *y,
                          int *where)
{
    int oh = h / 2, ow = w / 2;
    for (int r = 0; r < oh; r++) {
        const float *top = x + (long)2 * r * w;
        row(top, top + w, w, ow, (int)(xoff + (long)2 * r * w), y + (long)r * ow,
            where + (long)r * ow);
    }
}

// listing: maxpool_backward
// Each output's gradient goes to the element it came from; the others in
// its 2×2 window get nothing. A plane's outputs all come from its own plane
// of x, so the planes can go to different threads.
static int maxpool_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0], *y = node->out;
    float *dx = tape_grad(t, x);
    if (!dx)
        return -1;
    const int *where = node->ints;
    long planes = (long)y->shape[0] * y->shape[1], ys = (long)y->shape[2] * y->shape[3];
    const float *dy = y->grad;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; p++) {
        // BEGIN SOLUTION task 8.3: where in x did each of this plane's outputs come from, and what should its gradient dy[j] do there?
        //   dx[where[j]] += dy[j]
        for (long j = p * ys; j < (p + 1) * ys; j++)
            dx[where[j]] += dy[j];
        // stub: (void)dx; (void)dy; (void)where; (void)ys;
        // END SOLUTION
    }
    return 0;
}
// end listing

struct tensor *op_maxpool2(struct tape *t, struct tensor *x)
{
    if (!x)
        return NULL;
    if (x->ndim != 4 || x->shape[2] < 2 || x->shape[3] < 2) {
        char sx[64];
        tensor_shape_str(x, sx, sizeof sx);
        return tape_fail(t, "maxpool2: x is %s (want n×c×h×w with h, w ≥ 2)", sx);
    }
    if (x->size > INT_MAX)  // where[] holds indices into x as ints
        return tape_fail(t, "maxpool2: x has %ld elements, more than %d", x->size, INT_MAX);
    int n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
    int oh = h / 2, ow = w / 2;
    struct tape_op op = {.name = "maxpool2", .backward = maxpool_backward, .in = {x},
                         .needs = 0};  // where, not x
    struct tensor *y = tape_op_open(t, &op, 4, (int[]){n, c, oh, ow});
    if (!y)
        return NULL;
    // The argmax is needed only for the backward, but computing it costs
    // nothing extra; in evaluation it dies with the op.
    int *where = tape_save(t, sizeof(int) * (size_t)y->size);
    if (!where)
        return tape_fail(t, "maxpool2: out of memory for %ld indices", y->size);
    op.ints = where;
    long planes = (long)n * c, xs = (long)h * w, ys = (long)oh * ow;
    maxpool_row_fn *row = maxpool_row_kernel(tape_config(t)->isa);
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; p++)
        maxpool_plane(row, x->data + p * xs, h, w, p * xs, y->data + p * ys, where + p * ys);
    return tape_op_close(t, &op, y);
}

// listing: global_avgpool
// y[i][ch] = (1/(h·w)) Σ x[i][ch][·][·]: every element of the plane has the
// same share, so
//   dx[i][ch][·][·] += dy[i][ch] / (h·w)
static int avgpool_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0], *y = node->out;
    float *dx = tape_grad(t, x);
    if (!dx)
        return -1;
    long planes = y->size, hw = x->size / planes;
    for (long p = 0; p < planes; p++) {
        float g = y->grad[p] * node->scalar;
        for (long j = 0; j < hw; j++)
            dx[p * hw + j] += g;
    }
    return 0;
}
// end listing

struct tensor *op_global_avgpool(struct tape *t, struct tensor *x)
{
    if (!x)
        return NULL;
    if (x->ndim != 4) {
        char sx[64];
        tensor_shape_str(x, sx, sizeof sx);
        return tape_fail(t, "global_avgpool: x is %s (want n×c×h×w)", sx);
    }
    int n = x->shape[0], c = x->shape[1];
    long hw = (long)x->shape[2] * x->shape[3];
    float inv = 1.0f / (float)hw;
    struct tape_op op = {.name = "global_avgpool", .backward = avgpool_backward, .in = {x},
                         .needs = 0, .scalar = inv};
    struct tensor *y = tape_op_open(t, &op, 2, (int[]){n, c});
    if (!y)
        return NULL;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < (long)n * c; p++) {
        float s = 0.0f;
        for (long j = 0; j < hw; j++)
            s += x->data[p * hw + j];
        y->data[p] = s * inv;
    }
    return tape_op_close(t, &op, y);
}
