// The activations: ReLU, sigmoid, tanh. Each backward reads the op's output
// y, not its input: the derivative of each is a function of y alone.
#include <math.h>

#include "ops.h"
#include "vec.h"

// y = f(x) over n floats; v is the tape's vector loops, for those that have one.
typedef void act_fn(const struct vec_kernels *v, long n, float *y, const float *x);

static struct tensor *activation(struct tape *t, struct tensor *x, const char *op, act_fn *f,
                                 tape_backward_fn *backward)
{
    if (!x)
        return NULL;
    struct tape_op o = {.name = op, .backward = backward, .in = {x},
                        .needs = NEEDS_OUT};  // the backward reads y, not x
    struct tensor *y = tape_op_open(t, &o, x->ndim, x->shape);
    if (!y)
        return NULL;
    f(vec_kernels(tape_config(t)->isa), x->size, y->data, x->data);
    return tape_op_close(t, &o, y);
}

// listing: relu_backward
// y = max(x, 0): the slope is 1 where x > 0 and 0 elsewhere (at x = 0 we
// take 0, as PyTorch does). y > 0 exactly where x > 0.
//   dx += dy ⊙ [y > 0]
static int relu_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0], *y = node->out;
    float *dx = tape_grad(t, x);
    if (!dx)
        return -1;
    // BEGIN SOLUTION task 6.2: relu_backward: which elements of dy pass through to dx, told from y alone?
    vec_kernels(tape_config(t)->isa)->relu_backward(x->size, dx, y->data, y->grad);
    // stub: (void)y;
    // END SOLUTION
    return 0;
}
// end listing

// listing: sigmoid_backward
// y = 1/(1 + e^−x): dy/dx = e^−x/(1 + e^−x)² = y·(1 − y).
//   dx += dy ⊙ y ⊙ (1 − y)
static int sigmoid_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0], *y = node->out;
    float *dx = tape_grad(t, x);
    if (!dx)
        return -1;
    // BEGIN SOLUTION task 6.2: sigmoid_backward: what is the sigmoid's derivative written with its output y, and what does dx gain from dy?
    for (long i = 0; i < x->size; i++)
        dx[i] += y->grad[i] * y->data[i] * (1.0f - y->data[i]);
    // stub: (void)y;
    // END SOLUTION
    return 0;
}
// end listing

static void relu(const struct vec_kernels *v, long n, float *y, const float *x)
{
    v->relu(n, y, x);
}

struct tensor *op_relu(struct tape *t, struct tensor *x)
{
    return activation(t, x, "relu", relu, relu_backward);
}

// For x < 0, e^−x overflows long before the result stops being
// representable: compute e^x/(1 + e^x) there instead.
static void sigmoid(const struct vec_kernels *v, long n, float *y, const float *x)
{
    (void)v;
    for (long i = 0; i < n; i++) {
        if (x[i] >= 0.0f) {
            y[i] = 1.0f / (1.0f + expf(-x[i]));
        } else {
            float e = expf(x[i]);
            y[i] = e / (1.0f + e);
        }
    }
}

struct tensor *op_sigmoid(struct tape *t, struct tensor *x)
{
    return activation(t, x, "sigmoid", sigmoid, sigmoid_backward);
}

// y = tanh x: dy/dx = 1 − tanh² x = 1 − y².
//   dx += dy ⊙ (1 − y²)
static int tanh_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0], *y = node->out;
    float *dx = tape_grad(t, x);
    if (!dx)
        return -1;
    for (long i = 0; i < x->size; i++)
        dx[i] += y->grad[i] * (1.0f - y->data[i] * y->data[i]);
    return 0;
}

static void tanh_fn(const struct vec_kernels *v, long n, float *y, const float *x)
{
    (void)v;
    for (long i = 0; i < n; i++)
        y[i] = tanhf(x[i]);
}

struct tensor *op_tanh(struct tape *t, struct tensor *x)
{
    return activation(t, x, "tanh", tanh_fn, tanh_backward);
}
