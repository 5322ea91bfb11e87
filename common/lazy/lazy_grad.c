// Autograd as a graph transform: the backward of a loss is more graph,
// built node by node from the forward one, in reverse. No tape records
// anything while the forward runs, because nothing runs: the gradient is
// an expression like any other, and the scheduler fuses it like any other.
#include <stdlib.h>
#include <string.h>

#include "lazy.h"

// The adjoints: for each node id, ∂loss/∂node so far (NULL: none yet).
struct adjoints {
    struct lazy_graph *g;
    struct lazy_node **grad;
    unsigned char *needs;   // 1: the node depends on something in wrt
};

// Adds contribution c into x's adjoint. Gradients from several uses of a
// node add up: y = x·x sends dy·x twice.
static int accumulate(struct adjoints *a, struct lazy_node *x, struct lazy_node *c)
{
    if (!c)
        return -1;
    if (!a->needs[x->id])
        return 0;
    struct lazy_node *sum = a->grad[x->id] ? lazy_add(a->g, a->grad[x->id], c) : c;
    if (!sum)
        return -1;
    a->grad[x->id] = sum;
    return 0;
}

// dy summed over every axis that x's shape stretched (where x has 1 and y
// does not): the backward of an expand.
static struct lazy_node *unexpand(struct lazy_graph *g, struct lazy_node *dy,
                                  const struct lazy_node *x)
{
    for (int d = 0; dy && d < x->ndim; d++)
        if (x->shape[d] == 1 && dy->shape[d] != 1)
            dy = lazy_sum(g, dy, d);
    return dy;
}

// listing: grad_rules
// One node's backward: given y = op(a, b) and dy = ∂loss/∂y, the shares of
// ∂loss/∂a and ∂loss/∂b, each a new expression in the graph.
static int backward(struct adjoints *ad, struct lazy_node *y, struct lazy_node *dy)
{
    struct lazy_graph *g = ad->g;
    struct lazy_node *a = y->src[0], *b = y->src[1];
    switch (y->op) {
    case LAZY_ADD:                          // ∂(a + b) = da + db
        return accumulate(ad, a, dy) || accumulate(ad, b, dy);
    case LAZY_MUL:                          // ∂(a·b) = b·da + a·db
        return accumulate(ad, a, lazy_mul(g, dy, b)) || accumulate(ad, b, lazy_mul(g, dy, a));
    case LAZY_NEG:
        return accumulate(ad, a, lazy_neg(g, dy));
    case LAZY_RECIP:                        // d(1/a) = −da/a² = −y²·da
        return accumulate(ad, a, lazy_neg(g, lazy_mul(g, dy, lazy_mul(g, y, y))));
    case LAZY_EXP:                          // d(eᵃ) = eᵃ·da = y·da
        return accumulate(ad, a, lazy_mul(g, dy, y));
    case LAZY_LOG:                          // d(ln a) = da/a
        return accumulate(ad, a, lazy_div(g, dy, a));
    case LAZY_SQRT:                         // d(√a) = da/(2√a) = da/(2y)
        return accumulate(ad, a, lazy_div(g, lazy_mul_const(g, dy, 0.5f), y));
    case LAZY_MAX:
        // y > b exactly where a > b: the gradient goes to a there, to b
        // elsewhere (ties go to b, so ReLU's slope at 0 is 0, as PyTorch's).
        // Written with y, not a: a ReLU's input need not be kept for its
        // backward, only its output.
        {
            struct lazy_node *mask = lazy_cmpgt(g, y, b);
            return accumulate(ad, a, lazy_mul(g, dy, mask)) ||
                   accumulate(ad, b, lazy_sub(g, dy, lazy_mul(g, dy, mask)));
        }
    case LAZY_CMPGT:                        // a step: no gradient
    case LAZY_DETACH:
        return 0;
    case LAZY_COPY:
        return accumulate(ad, a, dy);
    case LAZY_SUM:                          // every input element got dy
        return accumulate(ad, a, lazy_expand(g, dy, a->ndim, a->shape));
    case LAZY_RMAX: {                       // dy goes to the elements equal to the max
        struct lazy_node *big = lazy_expand(g, y, a->ndim, a->shape);
        struct lazy_node *is_max = lazy_sub(g, lazy_const(g, 1.0f, a->ndim, a->shape),
                                            lazy_cmpgt(g, big, a));
        return accumulate(ad, a, lazy_mul(g, lazy_expand(g, dy, a->ndim, a->shape), is_max));
    }
    case LAZY_MATMUL:                       // da = dy·bᵀ, db = aᵀ·dy
        return accumulate(ad, a, lazy_matmul(g, dy, lazy_transpose(g, b))) ||
               accumulate(ad, b, lazy_matmul(g, lazy_transpose(g, a), dy));
    case LAZY_RESHAPE:
        return accumulate(ad, a, lazy_reshape(g, dy, a->ndim, a->shape));
    case LAZY_EXPAND:
        return accumulate(ad, a, unexpand(g, dy, a));
    case LAZY_PERMUTE: {
        int inverse[LAZY_MAX_DIMS];
        for (int d = 0; d < y->ndim; d++)
            inverse[y->perm[d]] = d;
        return accumulate(ad, a, lazy_permute(g, dy, inverse));
    }
    default:
        lazy_fail(g, "grad: no backward for %s (take gradients before rewriting)",
                  lazy_op_name(y->op));
        return -1;
    }
}
// end listing

// listing: lazy_grad
int lazy_grad(struct lazy_graph *g, struct lazy_node *loss, int n, struct lazy_node *const *wrt,
              struct lazy_node **grads)
{
    if (!loss)
        return -1;
    if (loss->size != 1)
        return lazy_fail(g, "grad: the loss has %ld elements (want 1)", loss->size), -1;
    for (int i = 0; i < n; i++)
        if (!wrt[i])
            return lazy_fail(g, "grad: input %d is NULL", i), -1;
    struct lazy_node **order;
    int count = lazy_toposort(&loss, 1, &order);
    if (count < 0)
        return lazy_fail(g, "grad: out of memory"), -1;
    struct adjoints ad = {g, calloc((size_t)loss->id + 1, sizeof *ad.grad),
                          calloc((size_t)loss->id + 1, 1)};
    int status = ad.grad && ad.needs ? 0 : -1;
    // Which nodes lie on a path from some wrt to the loss: only they get
    // adjoints. Forward, in topological order: a node needs one when an
    // input does.
    for (int i = 0; status == 0 && i < n; i++)
        if (wrt[i]->id <= loss->id)
            ad.needs[wrt[i]->id] = 1;
    for (int i = 0; status == 0 && i < count; i++) {
        struct lazy_node *x = order[i];
        for (int s = 0; s < 2; s++)
            if (x->src[s] && ad.needs[x->src[s]->id] && x->op != LAZY_DETACH)
                ad.needs[x->id] = 1;
    }
    // Backward, in reverse topological order: by the time a node is reached,
    // every use of it has added its share to its adjoint.
    if (status == 0 && ad.needs[loss->id])
        ad.grad[loss->id] = lazy_const(g, 1.0f, loss->ndim, loss->shape);
    for (int i = count - 1; status == 0 && i >= 0; i--) {
        struct lazy_node *y = order[i];
        if (ad.needs[y->id] && ad.grad[y->id] && y->src[0])
            status = backward(&ad, y, ad.grad[y->id]);
    }
    for (int i = 0; status == 0 && i < n; i++) {
        struct lazy_node *d = wrt[i]->id <= loss->id ? ad.grad[wrt[i]->id] : NULL;
        grads[i] = d ? d : lazy_const(g, 0.0f, wrt[i]->ndim, wrt[i]->shape);
        if (!grads[i])
            status = -1;
    }
    if (status != 0 && !lazy_error(g)[0])
        lazy_fail(g, "grad: out of memory");
    free(ad.grad);
    free(ad.needs);
    free(order);
    return status;
}
// end listing
