// The loss: log-softmax and negative log-likelihood in one op.
#include <math.h>
#include <string.h>

#include "ops.h"

// listing: cross_entropy_backward
// With p = softmax(z) for one row z of c logits and label y,
// loss_row = −log p[y] = log Σⱼ e^zⱼ − z[y], so ∂loss_row/∂z[j] = p[j] − [j = y].
// The loss is the mean over b rows, so, with dloss the one-element upstream
// gradient:
//   dz (b×c) += dloss · (p − onehot(labels)) / b
static int cross_entropy_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *z = node->in[0];
    int b = z->shape[0], c = z->shape[1];
    float *dz = tape_grad(t, z);
    if (!dz)
        return -1;
    // BEGIN SOLUTION task 6.3: what is the mean cross-entropy's gradient with respect to each logit, with the softmax p in node->saved?
    float g = node->out->grad[0] / (float)b;
    for (int i = 0; i < b; i++) {
        const float *p = node->saved + (long)i * c;
        float *d = dz + (long)i * c;
        for (int j = 0; j < c; j++)
            d[j] += g * (p[j] - (j == node->ints[i] ? 1.0f : 0.0f));
    }
    // stub: (void)b; (void)c;
    // END SOLUTION
    return 0;
}
// end listing

// listing: cross_entropy
// Stable through log-sum-exp: with m = maxⱼ z[j],
//   log Σⱼ e^z[j] = m + log Σⱼ e^(z[j] − m)
// and every exponent is ≤ 0, so nothing overflows whatever the logits.
struct tensor *op_cross_entropy(struct tape *t, struct tensor *logits, const int *labels,
                                int nlabels)
{
    if (!logits)
        return NULL;
    char sz[64];
    tensor_shape_str(logits, sz, sizeof sz);
    if (logits->ndim != 2)
        return tape_fail(t, "cross_entropy: logits are %s (want batch×classes)", sz);
    int b = logits->shape[0], c = logits->shape[1];
    if (!labels || nlabels != b)
        return tape_fail(t, "cross_entropy: logits are %s, labels has %d entries (want %d)", sz,
                         labels ? nlabels : 0, b);
    for (int i = 0; i < b; i++)
        if (labels[i] < 0 || labels[i] >= c)
            return tape_fail(t, "cross_entropy: label %d of row %d is outside 0..%d", labels[i],
                             i, c - 1);
    struct tape_op op = {.name = "cross_entropy", .backward = cross_entropy_backward,
                         .in = {logits}, .needs = 0};  // p and the labels, not the logits
    struct tensor *loss = tape_op_open(t, &op, 1, (int[]){1});
    if (!loss)
        return NULL;
    // The backward needs the probabilities and the labels; evaluation does
    // not. They are saved, so they live until the backward has used them.
    float *p = NULL;
    int *copy = NULL;
    if (loss->requires_grad) {
        op.saved = p = tape_save(t, sizeof(float) * (size_t)logits->size);
        op.ints = copy = tape_save(t, sizeof(int) * (size_t)b);
        if (!p || !copy)
            return tape_fail(t, "cross_entropy: out of memory");
        memcpy(copy, labels, sizeof(int) * (size_t)b);
    }
    double total = 0.0;
    for (int i = 0; i < b; i++) {
        const float *z = logits->data + (long)i * c;
        float m = z[0];
        for (int j = 1; j < c; j++)
            m = z[j] > m ? z[j] : m;
        double s = 0.0;
        for (int j = 0; j < c; j++)
            s += exp((double)z[j] - m);
        double lse = m + log(s);
        total += lse - z[labels[i]];
        for (int j = 0; p && j < c; j++)
            p[(long)i * c + j] = (float)exp((double)z[j] - lse);
    }
    loss->data[0] = (float)(total / b);
    return tape_op_close(t, &op, loss);
}
// end listing
