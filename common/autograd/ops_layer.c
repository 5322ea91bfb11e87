// The fully connected layer: y = x·w + bias as one node on the tape, so its
// backward makes all three gradients in one visit.
#include <string.h>

#include "ops.h"
#include "vec.h"

// listing: linear_backward
// y = x·w + bias with x b×in, w in×out, bias out, y b×out. Per element
// y[i][j] = Σp x[i][p]·w[p][j] + bias[j], so
//   dx (b×in)  += dy (b×out) · wᵀ (out×in)
//   dw (in×out) += xᵀ (in×b) · dy (b×out)
//   dbias (out) += Σᵢ dy[i][·], the column sums of dy
// The first two are the matmul's backward: the node holds x, w and y where
// op_matmul's holds a, b and c. beta = 1 adds into gradients that may
// already hold another use's share.
static int linear_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *bias = node->in[2], *y = node->out;
    int b = y->shape[0], out = y->shape[1];
    // BEGIN SOLUTION task 7.1: which op's backward already makes dx and dw? And what does each row of dy add to dbias?
    if (op_matmul_backward(t, node) != 0)
        return -1;
    if (bias->requires_grad) {
        float *dbias = tape_grad(t, bias);
        if (!dbias)
            return -1;
        // A row of dy at a time, with the vector loop. Each column is still
        // summed from the first row to the last, so the bits are those of
        // the loop over single floats that plain_bias keeps for a benchmark.
        const struct tape_config *config = tape_config(t);
        for (int i = 0; i < b; i++)
            if (config->plain_bias)
                for (int j = 0; j < out; j++)
                    dbias[j] += y->grad[(long)i * out + j];
            else
                vec_kernels(config->isa)->add_to(out, dbias, y->grad + (long)i * out);
    }
    // stub: (void)t; (void)bias; (void)y; (void)b; (void)out;
    // END SOLUTION
    return 0;
}
// end listing

// listing: linear
struct tensor *op_linear(struct tape *t, struct tensor *x, struct tensor *w, struct tensor *bias)
{
    if (!x || !w || !bias)
        return NULL;  // an earlier op failed: its message stands
    char sx[64], sw[64], sb[64];
    tensor_shape_str(x, sx, sizeof sx);
    tensor_shape_str(w, sw, sizeof sw);
    tensor_shape_str(bias, sb, sizeof sb);
    if (x->ndim != 2 || w->ndim != 2 || x->shape[1] != w->shape[0] || bias->ndim != 1 ||
        bias->shape[0] != w->shape[1])
        return tape_fail(t, "linear: x is %s, w is %s, bias is %s (want b×in, in×out and out)",
                         sx, sw, sb);
    int b = x->shape[0], in = x->shape[1], out = w->shape[1];
    // BEGIN SOLUTION task 7.1: y (b×out) from the tape; each row the bias, then one GEMM adds x·w (beta = 1); one node, bias as its in[2]
    // dw needs x, dx needs w; dbias only dy.
    struct tape_op op = {.name = "linear", .backward = linear_backward, .in = {x, w, bias},
                         .needs = (w->requires_grad ? NEEDS_IN0 : 0) |
                                  (x->requires_grad ? NEEDS_IN1 : 0)};
    struct tensor *y = tape_op_open(t, &op, 2, (int[]){b, out});
    if (!y)
        return NULL;
    // Each row starts as a copy of the bias (plain_bias: a float at a time,
    // for a benchmark); the GEMM with beta = 1 adds x·w onto it, so the bias
    // costs no pass of its own over y.
    for (int i = 0; i < b; i++)
        if (tape_config(t)->plain_bias)
            for (int j = 0; j < out; j++)
                y->data[(long)i * out + j] = bias->data[j];
        else
            memcpy(y->data + (long)i * out, bias->data, sizeof(float) * (size_t)out);
    if (tape_gemm(t, "linear", GEMM_NOTRANS, GEMM_NOTRANS, b, out, in, x->data, in, w->data, out,
                  1.0f, y->data, out) != 0)
        return NULL;
    return tape_op_close(t, &op, y);
    // stub: (void)b; (void)in; (void)out; (void)linear_backward;
    // stub: return tape_fail(t, "linear: not written yet (task 7.1)");
    // END SOLUTION
}
// end listing
