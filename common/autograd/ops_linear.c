// The layers' arithmetic: matmul through the GEMM backend, and the bias.
#include "ops.h"
#include "vec.h"

static int is_matrix(const struct tensor *x)
{
    return x->ndim == 2;
}

// listing: matmul_backward
// C = A·B with A m×k, B k×n, C m×n. Element C[i][j] = Σp A[i][p]·B[p][j],
// so ∂C[i][j]/∂A[i][p] = B[p][j] and ∂C[i][j]/∂B[p][j] = A[i][p]:
//   dA (m×k) += dC (m×n) · Bᵀ (n×k)
//   dB (k×n) += Aᵀ (k×m) · dC (m×n)
// The transposes are the GEMM's flags: nothing is copied. The first GEMM to
// reach a gradient writes it (beta = 0: no zeroing pass before, no reading
// of zeros during); a later one adds (beta = 1), so a tensor used twice
// gets both contributions. tape_grad_write says which.
int op_matmul_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *a = node->in[0], *b = node->in[1], *c = node->out;
    int m = a->shape[0], k = a->shape[1], n = b->shape[1];
    // BEGIN SOLUTION task 6.1: which products of dC with B and with A have the shapes of dA and dB? Each is one GEMM with a transpose flag
    if (a->requires_grad) {
        float beta, *da = tape_grad_write(t, a, &beta);
        if (!da || tape_gemm(t, "matmul backward", GEMM_NOTRANS, GEMM_TRANS, m, k, n, c->grad,
                             n, b->data, n, beta, da, k) != 0)
            return -1;
    }
    if (b->requires_grad) {
        float beta, *db = tape_grad_write(t, b, &beta);
        if (!db || tape_gemm(t, "matmul backward", GEMM_TRANS, GEMM_NOTRANS, k, n, m, a->data,
                             k, c->grad, n, beta, db, n) != 0)
            return -1;
    }
    // stub: (void)t; (void)a; (void)b; (void)c; (void)m; (void)k; (void)n;
    // END SOLUTION
    return 0;
}
// end listing

// listing: matmul
struct tensor *op_matmul(struct tape *t, struct tensor *a, struct tensor *b)
{
    if (!a || !b)
        return NULL;
    char sa[64], sb[64];
    tensor_shape_str(a, sa, sizeof sa);
    tensor_shape_str(b, sb, sizeof sb);
    if (!is_matrix(a) || !is_matrix(b) || a->shape[1] != b->shape[0])
        return tape_fail(t, "matmul: a is %s, b is %s (want m×k and k×n)", sa, sb);
    int m = a->shape[0], k = a->shape[1], n = b->shape[1];
    // dA needs B, dB needs A.
    struct tape_op op = {.name = "matmul", .backward = op_matmul_backward, .in = {a, b},
                         .needs = (b->requires_grad ? NEEDS_IN0 : 0) |
                                  (a->requires_grad ? NEEDS_IN1 : 0)};
    struct tensor *c = tape_op_open(t, &op, 2, (int[]){m, n});
    if (!c || tape_gemm(t, "matmul", GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, a->data, k, b->data,
                        n, 0.0f, c->data, n) != 0)
        return NULL;
    return tape_op_close(t, &op, c);
}
// end listing

// listing: bias_add_backward
// y[i][j] = x[i][j] + bias[j]: each bias element touches every row, so
// its gradient is the column sum of dy.
//   dx (m×n) += dy (m×n)
//   dbias (n) += Σᵢ dy[i][·]
static int bias_add_backward(struct tape *t, struct tape_node *node)
{
    struct tensor *x = node->in[0], *bias = node->in[1], *y = node->out;
    long n = bias->size, m = x->size / n;
    const struct vec_kernels *v = vec_kernels(tape_config(t)->isa);
    if (x->requires_grad) {
        float *dx = tape_grad(t, x);
        if (!dx)
            return -1;
        v->add_to(x->size, dx, y->grad);
    }
    if (bias->requires_grad) {
        float *db = tape_grad(t, bias);
        if (!db)
            return -1;
        for (long i = 0; i < m; i++)
            v->add_to(n, db, y->grad + i * n);
    }
    return 0;
}
// end listing

struct tensor *op_bias_add(struct tape *t, struct tensor *x, struct tensor *bias)
{
    if (!x || !bias)
        return NULL;
    char sx[64], sb[64];
    tensor_shape_str(x, sx, sizeof sx);
    tensor_shape_str(bias, sb, sizeof sb);
    if (!is_matrix(x) || bias->size != x->shape[1])
        return tape_fail(t, "bias_add: x is %s, bias is %s (want m×n and n)", sx, sb);
    struct tape_op op = {.name = "bias_add", .backward = bias_add_backward, .in = {x, bias},
                         .needs = 0};  // dy alone
    struct tensor *y = tape_op_open(t, &op, 2, x->shape);
    if (!y)
        return NULL;
    long n = bias->size, m = x->shape[0];
    const struct vec_kernels *v = vec_kernels(tape_config(t)->isa);
    for (long i = 0; i < m; i++)
        v->add(n, y->data + i * n, x->data + i * n, bias->data);
    return tape_op_close(t, &op, y);
}
