// Elementwise arithmetic, reductions and reshape.
#include "ops.h"
#include "vec.h"

static int same_shapes(struct tape *t, const char *op, const struct tensor *a,
                       const struct tensor *b)
{
    if (tensor_same_shape(a, b))
        return 1;
    char sa[64], sb[64];
    tensor_shape_str(a, sa, sizeof sa);
    tensor_shape_str(b, sb, sizeof sb);
    tape_fail(t, "%s: a is %s, b is %s (want the same shape)", op, sa, sb);
    return 0;
}

// y = a + b: ∂y/∂a = ∂y/∂b = 1, so da += dy and db += dy (all the same shape).
static int add_backward(struct tape *t, struct tape_node *node)
{
    for (int i = 0; i < 2; i++) {
        struct tensor *x = node->in[i];
        if (!x->requires_grad)
            continue;
        float *dx = tape_grad(t, x);
        if (!dx)
            return -1;
        vec_kernels(tape_config(t)->isa)->add_to(x->size, dx, node->out->grad);
    }
    return 0;
}

struct tensor *op_add(struct tape *t, struct tensor *a, struct tensor *b)
{
    if (!a || !b || !same_shapes(t, "add", a, b))
        return NULL;
    struct tape_op op = {.name = "add", .backward = add_backward, .in = {a, b},
                         .needs = 0};  // the backward reads dy alone
    struct tensor *y = tape_op_open(t, &op, a->ndim, a->shape);
    if (!y)
        return NULL;
    vec_kernels(tape_config(t)->isa)->add(a->size, y->data, a->data, b->data);
    return tape_op_close(t, &op, y);
}

// y = a ⊙ b: ∂y[i]/∂a[i] = b[i], so da += dy ⊙ b and db += dy ⊙ a.
// For op_mul(t, x, x) both lines run and dx gets 2·dy ⊙ x, as it should.
static int mul_backward(struct tape *t, struct tape_node *node)
{
    const float *dy = node->out->grad;
    for (int i = 0; i < 2; i++) {
        struct tensor *x = node->in[i], *other = node->in[1 - i];
        if (!x->requires_grad)
            continue;
        float *dx = tape_grad(t, x);
        if (!dx)
            return -1;
        for (long j = 0; j < x->size; j++)
            dx[j] += dy[j] * other->data[j];
    }
    return 0;
}

struct tensor *op_mul(struct tape *t, struct tensor *a, struct tensor *b)
{
    if (!a || !b || !same_shapes(t, "mul", a, b))
        return NULL;
    // da needs b, db needs a.
    struct tape_op op = {.name = "mul", .backward = mul_backward, .in = {a, b},
                         .needs = (b->requires_grad ? NEEDS_IN0 : 0) |
                                  (a->requires_grad ? NEEDS_IN1 : 0)};
    struct tensor *y = tape_op_open(t, &op, a->ndim, a->shape);
    if (!y)
        return NULL;
    for (long j = 0; j < a->size; j++)
        y->data[j] = a->data[j] * b->data[j];
    return tape_op_close(t, &op, y);
}

// y = s·x: dx += s·dy.
static int scale_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0];
    float *dx = tape_grad(t, x);
    if (!dx)
        return -1;
    for (long j = 0; j < x->size; j++)
        dx[j] += node->scalar * node->out->grad[j];
    return 0;
}

struct tensor *op_scale(struct tape *t, struct tensor *x, float s)
{
    if (!x)
        return NULL;
    struct tape_op op = {.name = "scale", .backward = scale_backward, .in = {x}, .needs = 0,
                         .scalar = s};
    struct tensor *y = tape_op_open(t, &op, x->ndim, x->shape);
    if (!y)
        return NULL;
    for (long j = 0; j < x->size; j++)
        y->data[j] = s * x->data[j];
    return tape_op_close(t, &op, y);
}

// y = scalar · Σ x (scalar is 1 for sum, 1/n for mean): every element of x
// moves y by the same amount, so dx[i] += scalar · dy (dy has one element).
static int sum_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0];
    float *dx = tape_grad(t, x);
    if (!dx)
        return -1;
    float g = node->scalar * node->out->grad[0];
    for (long j = 0; j < x->size; j++)
        dx[j] += g;
    return 0;
}

// The sum in double: a float sum of 10⁵ elements would lose digits.
static struct tensor *reduce(struct tape *t, struct tensor *x, const char *op, float scalar)
{
    if (!x)
        return NULL;
    struct tape_op o = {.name = op, .backward = sum_backward, .in = {x}, .needs = 0,
                        .scalar = scalar};
    struct tensor *y = tape_op_open(t, &o, 1, (int[]){1});
    if (!y)
        return NULL;
    double s = 0.0;
    for (long j = 0; j < x->size; j++)
        s += x->data[j];
    y->data[0] = (float)(scalar * s);
    return tape_op_close(t, &o, y);
}

struct tensor *op_sum(struct tape *t, struct tensor *x)
{
    return reduce(t, x, "sum", 1.0f);
}

struct tensor *op_mean(struct tape *t, struct tensor *x)
{
    return x ? reduce(t, x, "mean", 1.0f / (float)x->size) : NULL;
}

// A view shares x's data; its gradient is x's gradient seen with another
// shape, so dx += dy element by element.
static int reshape_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0];
    float *dx = tape_grad(t, x);
    if (!dx)
        return -1;
    vec_kernels(tape_config(t)->isa)->add_to(x->size, dx, node->out->grad);
    return 0;
}

struct tensor *op_reshape(struct tape *t, struct tensor *x, int ndim, const int *shape)
{
    if (!x)
        return NULL;
    long size = tensor_shape_size(ndim, shape);
    if (size != x->size) {
        char sx[64];
        tensor_shape_str(x, sx, sizeof sx);
        if (size < 0)
            return tape_fail(t, "reshape: x is %s; the new shape needs 1 to %d dimensions, "
                                "each at least 1", sx, TENSOR_MAX_DIMS);
        struct tensor want = {.ndim = ndim};
        for (int i = 0; i < ndim; i++)
            want.shape[i] = shape[i];
        char sw[64];
        tensor_shape_str(&want, sw, sizeof sw);
        return tape_fail(t, "reshape: x is %s (%ld elements), the new shape %s has %ld", sx,
                         x->size, sw, size);
    }
    // A view, not an output of its own: no tape_op_open.
    struct tape_op op = {.name = "reshape", .backward = reshape_backward, .in = {x}, .needs = 0};
    struct tensor *y = tensor_view(t, x, ndim, shape);
    if (!y)
        return NULL;
    y->requires_grad = tape_recording(t) && x->requires_grad;
    return tape_op_close(t, &op, y);
}
