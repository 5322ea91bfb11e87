// Pooling: 2×2 max pooling (the argmax kept for the backward) and global
// average pooling. Each plane (one channel of one image) is one thread's,
// so the bits do not depend on the thread count.
#include <math.h>

#include "arena.h"
#include "conv.h"

// listing: maxpool2
// y[i][ch][r][q] = the largest of x[i][ch][2r..2r+1][2q..2q+1]. where[j]
// is the index in x of the element output j came from: the first of the
// four (in reading order) on a tie, as PyTorch does. A NaN wins, so it is
// passed on rather than hidden.
static void maxpool_plane(const float *x, int h, int w, long xoff, float *y, int *where)
{
    int oh = h / 2, ow = w / 2;
    for (int r = 0; r < oh; r++)
        for (int q = 0; q < ow; q++) {
            int at = 2 * r * w + 2 * q;
            const int offsets[4] = {0, 1, w, w + 1};
            int best = at;
            for (int j = 1; j < 4; j++) {
                int k = at + offsets[j];
                if (x[k] > x[best] || (isnan(x[k]) && !isnan(x[best])))
                    best = k;
            }
            y[r * ow + q] = x[best];
            where[r * ow + q] = (int)(xoff + best);
        }
}

// Each output's gradient goes to the element it came from; the others in
// its 2×2 window get nothing.
//   dx[where[j]] += dy[j]
static int maxpool_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0], *y = node->out;
    float *dx = tape_grad(t, x);
    if (!dx)
        return -1;
    const int *where = node->labels;
    for (long j = 0; j < y->size; j++)
        dx[where[j]] += y->grad[j];
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
    int n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
    int oh = h / 2, ow = w / 2;
    struct tensor *y = tape_output(t, 4, (int[]){n, c, oh, ow}, x, NULL);
    if (!y)
        return NULL;
    // The argmax is needed only for the backward, but computing it costs
    // nothing extra; in evaluation it goes to the arena and is forgotten.
    int *where = arena_alloc(tape_arena(t), sizeof(int) * (size_t)y->size);
    if (!where)
        return tape_fail(t, "maxpool2: out of memory for %ld indices", y->size);
    long planes = (long)n * c, xs = (long)h * w, ys = (long)oh * ow;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; p++)
        maxpool_plane(x->data + p * xs, h, w, p * xs, y->data + p * ys, where + p * ys);
    if (y->requires_grad) {
        struct tape_node *node = tape_record(t, "maxpool2", maxpool_backward, y, x, NULL);
        if (!node)
            return NULL;
        node->labels = where;
    }
    return y;
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
    struct tensor *y = tape_output(t, 2, (int[]){n, c}, x, NULL);
    if (!y)
        return NULL;
    float inv = 1.0f / (float)hw;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < (long)n * c; p++) {
        float s = 0.0f;
        for (long j = 0; j < hw; j++)
            s += x->data[p * hw + j];
        y->data[p] = s * inv;
    }
    if (y->requires_grad) {
        struct tape_node *node = tape_record(t, "global_avgpool", avgpool_backward, y, x, NULL);
        if (!node)
            return NULL;
        node->scalar = inv;
    }
    return y;
}
