// Stage 06: the tape autograd (common/autograd/). Every op's backward is
// checked by central finite differences of a double-precision forward, and
// whole graphs against gradients PyTorch computed (tests/golden/, written by
// tools/torch_golden_06.py). Then the bad inputs, the no-grad mode, the
// zero-allocation promise, the backends, and the SIMD elementwise loops.
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "golden.h"
#include "malloc_count.h"
#include "gemm_backend.h"
#include "mat.h"
#include "ops.h"
#include "run_driver.h"
#include "tape.h"
#include "vec.h"

// ---------------------------------------------------------------------------
// Finite differences.
//
// Each case is an op (or a small graph) built twice: with our ops in float,
// and as a plain double-precision forward. The loss is L = Σ w ⊙ y for a fixed
// random w, so every element of y matters. The numeric gradient is the
// central difference (L(x+h) − L(x−h)) / 2h of the double forward, with h =
// 1e-6·max(1, |x|): its error is about h²·L''' ≈ 1e-12 plus rounding
// ε·|L|/h ≈ 1e-10, far below what we test.
//
// Our gradient is computed in float. A float sum of k terms is off by at most
// about k·u·Σ|terms| (u = 6e-8); the longest sums here have k = 65, so
// 4e-6 of the gradient's scale. We allow 1e-4 of the largest numeric
// gradient of that tensor (plus 1e-6): 25 times the worst rounding, while a
// wrong formula (a missing transpose, a lost factor 2, a wrong sign) is off
// by the size of the gradient itself.

enum { MAX_IN = 2, MAX_SIZE = 4096 };

struct fd_case {
    const char *name;
    int nin;
    int ndim[MAX_IN];
    int shape[MAX_IN][4];
    // The op in float: y from the inputs (leaves that require a gradient).
    struct tensor *(*build)(struct tape *t, struct tensor **in, const struct fd_case *c);
    // The same forward in double: writes y (ny elements), returns ny.
    long (*ref)(double *const *in, const struct fd_case *c, double *y);
    int labels[128];  // for cross-entropy
    float s;          // for scale
};

static long size_of(const struct fd_case *c, int i)
{
    long n = 1;
    for (int d = 0; d < c->ndim[i]; d++)
        n *= c->shape[i][d];
    return n;
}

static double ref_loss(const struct fd_case *c, double *const *in, const double *w, double *y)
{
    long ny = c->ref(in, c, y);
    double L = 0.0;
    for (long j = 0; j < ny; j++)
        L += w[j] * y[j];
    return L;
}

static void check_fd(const struct fd_case *c, uint64_t seed)
{
    static double y[MAX_SIZE * 4], w[MAX_SIZE * 4];
    static float wf[MAX_SIZE * 4];
    double *xd[MAX_IN];
    float *xf[MAX_IN];
    for (int i = 0; i < c->nin; i++) {
        long n = size_of(c, i);
        xf[i] = malloc(sizeof(float) * (size_t)n);
        xd[i] = malloc(sizeof(double) * (size_t)n);
        mat_fill_random(xf[i], 1, (int)n, (int)n, seed + (uint64_t)i);
        for (long j = 0; j < n; j++)
            xd[i][j] = xf[i][j];
    }
    long ny = c->ref(xd, c, y);
    cr_assert(ny <= MAX_SIZE * 4);
    mat_fill_random(wf, 1, (int)ny, (int)ny, seed + 99);
    for (long j = 0; j < ny; j++)
        w[j] = wf[j];

    struct tape *t = tape_new(NULL);
    struct tensor *in[MAX_IN];
    for (int i = 0; i < c->nin; i++) {
        in[i] = tensor_param(c->ndim[i], c->shape[i]);
        memcpy(in[i]->data, xf[i], sizeof(float) * (size_t)size_of(c, i));
    }
    struct tensor *out = c->build(t, in, c);
    cr_assert_not_null(out, "%s: %s", c->name, tape_error(t));
    cr_assert_eq(out->size, ny, "%s: y has %ld elements, the reference %ld", c->name, out->size,
                 ny);
    // The forward itself, against the double one.
    double scale = 0.0;
    for (long j = 0; j < ny; j++)
        scale = fmax(scale, fabs(y[j]));
    for (long j = 0; j < ny; j++)
        cr_assert(fabs(out->data[j] - y[j]) <= 1e-5 * (scale + 1e-3),
                  "%s: y[%ld] = %.9g, the double forward gives %.9g", c->name, j, out->data[j],
                  y[j]);
    struct tensor *wt = tensor_from(t, out->ndim, out->shape, wf, ny);
    struct tensor *loss = op_sum(t, op_mul(t, out, wt));
    cr_assert_eq(tape_backward(t, loss), 0, "%s: %s", c->name, tape_error(t));

    for (int i = 0; i < c->nin; i++) {
        long n = size_of(c, i);
        double *num = malloc(sizeof(double) * (size_t)n), big = 0.0;
        for (long j = 0; j < n; j++) {
            double keep = xd[i][j], h = 1e-6 * fmax(1.0, fabs(keep));
            xd[i][j] = keep + h;
            double up = ref_loss(c, xd, w, y);
            xd[i][j] = keep - h;
            double down = ref_loss(c, xd, w, y);
            xd[i][j] = keep;
            num[j] = (up - down) / (2.0 * h);
            big = fmax(big, fabs(num[j]));
        }
        double tol = 1e-4 * big + 1e-6;
        for (long j = 0; j < n; j++)
            cr_assert(fabs(in[i]->grad[j] - num[j]) <= tol,
                      "%s: input %d, element %ld: gradient %.9g, finite differences %.9g "
                      "(tolerance %.3g)",
                      c->name, i, j, in[i]->grad[j], num[j], tol);
        free(num);
    }
    for (int i = 0; i < c->nin; i++) {
        tensor_free(in[i]);
        free(xf[i]);
        free(xd[i]);
    }
    tape_free(t);
}

// --- matmul: a is m×k, b is k×n -----------------------------------------------
static struct tensor *build_matmul(struct tape *t, struct tensor **in, const struct fd_case *c)
{
    (void)c;
    return op_matmul(t, in[0], in[1]);
}

static long ref_matmul(double *const *in, const struct fd_case *c, double *y)
{
    int m = c->shape[0][0], k = c->shape[0][1], n = c->shape[1][1];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int p = 0; p < k; p++)
                s += in[0][i * k + p] * in[1][p * n + j];
            y[i * n + j] = s;
        }
    return (long)m * n;
}

static struct fd_case matmul_case(int m, int k, int n)
{
    return (struct fd_case){.name = "matmul", .nin = 2, .ndim = {2, 2},
                            .shape = {{m, k}, {k, n}}, .build = build_matmul,
                            .ref = ref_matmul};
}

Test(task_6_1, matmul_finite_differences, .timeout = 300)
{
    const int shapes[][3] = {{1, 1, 1}, {3, 1, 17}, {1, 17, 3}, {17, 3, 65}, {65, 17, 3},
                             {3, 65, 1}, {7, 5, 9}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        struct fd_case c = matmul_case(shapes[s][0], shapes[s][1], shapes[s][2]);
        check_fd(&c, 10 + s);
    }
}

// --- bias_add: x is m×n, bias n -------------------------------------------------
static struct tensor *build_bias(struct tape *t, struct tensor **in, const struct fd_case *c)
{
    (void)c;
    return op_bias_add(t, in[0], in[1]);
}

static long ref_bias(double *const *in, const struct fd_case *c, double *y)
{
    int m = c->shape[0][0], n = c->shape[0][1];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            y[i * n + j] = in[0][i * n + j] + in[1][j];
    return (long)m * n;
}

Test(stage_06, bias_add_broadcast_finite_differences)
{
    const int shapes[][2] = {{1, 1}, {3, 17}, {65, 3}, {17, 1}, {1, 65}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int m = shapes[s][0], n = shapes[s][1];
        struct fd_case c = {.name = "bias_add", .nin = 2, .ndim = {2, 1},
                            .shape = {{m, n}, {n}}, .build = build_bias, .ref = ref_bias};
        check_fd(&c, 20 + s);
    }
}

// --- elementwise ops on any shape ---------------------------------------------
enum ew { EW_ADD, EW_MUL, EW_SCALE, EW_RELU, EW_SIGMOID, EW_TANH, EW_SUM, EW_MEAN, EW_RESHAPE };
static enum ew current_ew;

static struct tensor *build_ew(struct tape *t, struct tensor **in, const struct fd_case *c)
{
    switch (current_ew) {
    case EW_ADD: return op_add(t, in[0], in[1]);
    case EW_MUL: return op_mul(t, in[0], in[1]);
    case EW_SCALE: return op_scale(t, in[0], c->s);
    case EW_RELU: return op_relu(t, in[0]);
    case EW_SIGMOID: return op_sigmoid(t, in[0]);
    case EW_TANH: return op_tanh(t, in[0]);
    case EW_SUM: return op_sum(t, in[0]);
    case EW_MEAN: return op_mean(t, in[0]);
    case EW_RESHAPE: {
        // Reshape to one row, then put the view through tanh, so the view's
        // gradient is not all ones.
        int n = (int)in[0]->size;
        return op_tanh(t, op_reshape(t, in[0], 2, (int[]){1, n}));
    }
    }
    return NULL;
}

static long ref_ew(double *const *in, const struct fd_case *c, double *y)
{
    long n = size_of(c, 0);
    double s = 0.0;
    for (long j = 0; j < n; j++) {
        double a = in[0][j], b = c->nin > 1 ? in[1][j] : 0.0;
        switch (current_ew) {
        case EW_ADD: y[j] = a + b; break;
        case EW_MUL: y[j] = a * b; break;
        case EW_SCALE: y[j] = c->s * a; break;
        case EW_RELU: y[j] = a > 0.0 ? a : 0.0; break;
        case EW_SIGMOID: y[j] = 1.0 / (1.0 + exp(-a)); break;
        case EW_TANH: case EW_RESHAPE: y[j] = tanh(a); break;
        case EW_SUM: case EW_MEAN: s += a; break;
        }
    }
    if (current_ew == EW_SUM || current_ew == EW_MEAN) {
        y[0] = current_ew == EW_SUM ? s : s / (double)n;
        return 1;
    }
    return n;
}

// Shapes of 1 to 4 dimensions, of awkward sizes.
static const int ew_ndim[] = {1, 1, 2, 2, 3, 4};
static const int ew_shapes[][4] = {{1}, {17}, {3, 17}, {65, 3}, {3, 1, 5}, {2, 3, 1, 4}};

static void check_ew(enum ew op, const char *name, int nin, uint64_t seed)
{
    current_ew = op;
    for (size_t s = 0; s < sizeof ew_ndim / sizeof ew_ndim[0]; s++) {
        struct fd_case c = {.name = name, .nin = nin, .build = build_ew, .ref = ref_ew,
                            .s = -0.75f};
        for (int i = 0; i < nin; i++) {
            c.ndim[i] = ew_ndim[s];
            memcpy(c.shape[i], ew_shapes[s], sizeof c.shape[i]);
        }
        check_fd(&c, seed + s);
    }
}

Test(stage_06, add_finite_differences) { check_ew(EW_ADD, "add", 2, 30); }
Test(stage_06, mul_finite_differences) { check_ew(EW_MUL, "mul", 2, 40); }
Test(stage_06, scale_finite_differences) { check_ew(EW_SCALE, "scale", 1, 50); }
Test(task_6_2, relu_finite_differences) { check_ew(EW_RELU, "relu", 1, 60); }
Test(task_6_2, sigmoid_finite_differences) { check_ew(EW_SIGMOID, "sigmoid", 1, 70); }
Test(stage_06, tanh_finite_differences) { check_ew(EW_TANH, "tanh", 1, 80); }
Test(stage_06, sum_finite_differences) { check_ew(EW_SUM, "sum", 1, 90); }
Test(stage_06, mean_finite_differences) { check_ew(EW_MEAN, "mean", 1, 100); }
Test(stage_06, reshape_finite_differences) { check_ew(EW_RESHAPE, "reshape", 1, 110); }

// Large inputs must not overflow: sigmoid(±100) is 1 and 0, with slope 0.
Test(task_6_2, sigmoid_saturates_without_overflow)
{
    struct tape *t = tape_new(NULL);
    struct tensor *x = tensor_param(1, (int[]){4});
    const float v[] = {-100.0f, 100.0f, -1000.0f, 0.0f};
    memcpy(x->data, v, sizeof v);
    struct tensor *y = op_sigmoid(t, x);
    cr_assert_not_null(y);
    cr_assert(y->data[0] >= 0.0f && y->data[0] < 1e-30f && y->data[1] == 1.0f &&
              y->data[3] == 0.5f);
    cr_assert_eq(tape_backward(t, op_sum(t, y)), 0, "%s", tape_error(t));
    cr_assert(x->grad[3] == 0.25f && x->grad[1] == 0.0f, "slopes %g %g", x->grad[3], x->grad[1]);
    tensor_free(x);
    tape_free(t);
}

// --- cross-entropy: logits are b×c --------------------------------------------
static struct tensor *build_ce(struct tape *t, struct tensor **in, const struct fd_case *c)
{
    return op_cross_entropy(t, in[0], c->labels, c->shape[0][0]);
}

static long ref_ce(double *const *in, const struct fd_case *c, double *y)
{
    int b = c->shape[0][0], k = c->shape[0][1];
    double total = 0.0;
    for (int i = 0; i < b; i++) {
        double s = 0.0;
        for (int j = 0; j < k; j++)
            s += exp(in[0][i * k + j]);
        total += log(s) - in[0][i * k + c->labels[i]];
    }
    y[0] = total / b;
    return 1;
}

Test(task_6_3, cross_entropy_finite_differences)
{
    const int shapes[][2] = {{1, 1}, {1, 3}, {3, 17}, {17, 3}, {65, 10}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int b = shapes[s][0], k = shapes[s][1];
        struct fd_case c = {.name = "cross_entropy", .nin = 1, .ndim = {2},
                            .shape = {{b, k}}, .build = build_ce, .ref = ref_ce};
        for (int i = 0; i < b; i++)
            c.labels[i] = (i * 7 + 3) % k;
        check_fd(&c, 120 + s);
    }
}

// Logits of 1000 would overflow e^z in float: the log-sum-exp form must not.
Test(task_6_3, cross_entropy_is_stable_for_large_logits)
{
    struct tape *t = tape_new(NULL);
    struct tensor *z = tensor_param(2, (int[]){2, 3});
    const float v[] = {1000.0f, 0.0f, -1000.0f, 500.0f, 500.0f, 500.0f};
    const int labels[] = {0, 2};
    memcpy(z->data, v, sizeof v);
    struct tensor *loss = op_cross_entropy(t, z, labels, 2);
    cr_assert_not_null(loss, "%s", tape_error(t));
    // Row 0: loss 0. Row 1: log 3. Mean: log(3)/2.
    cr_assert(fabsf(loss->data[0] - 0.5f * logf(3.0f)) < 1e-6f, "loss %g", loss->data[0]);
    cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
    cr_assert(fabsf(z->grad[0]) < 1e-7f && fabsf(z->grad[5] - (1.0f / 3 - 1) / 2) < 1e-6f,
              "gradients %g %g", z->grad[0], z->grad[5]);
    tensor_free(z);
    tape_free(t);
}

// --- the walk: shared inputs, chains ------------------------------------------
// x (n×n) used four times: y = x ⊙ x + x·x.
static struct tensor *build_twice(struct tape *t, struct tensor **in, const struct fd_case *c)
{
    (void)c;
    return op_add(t, op_mul(t, in[0], in[0]), op_matmul(t, in[0], in[0]));
}

static long ref_twice(double *const *in, const struct fd_case *c, double *y)
{
    int n = c->shape[0][0];
    const double *x = in[0];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int p = 0; p < n; p++)
                s += x[i * n + p] * x[p * n + j];
            y[i * n + j] = x[i * n + j] * x[i * n + j] + s;
        }
    return (long)n * n;
}

Test(task_6_4, tensor_used_twice_gets_both_gradients)
{
    const int sizes[] = {1, 3, 17};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        struct fd_case c = {.name = "x⊙x + x·x", .nin = 1, .ndim = {2}, .shape = {{n, n}},
                            .build = build_twice, .ref = ref_twice};
        check_fd(&c, 130 + s);
    }
}

// A two-layer network: y = sigmoid(tanh(x·w + b)·v), x 17×3 and w 3×65 fixed
// here as inputs 0 and 1; b and v are derived from w's first row so the
// graph has a chain of six ops.
static struct tensor *build_chain(struct tape *t, struct tensor **in, const struct fd_case *c)
{
    (void)c;
    struct tensor *h = op_tanh(t, op_matmul(t, in[0], in[1]));
    return op_sigmoid(t, op_scale(t, op_relu(t, op_add(t, h, op_scale(t, h, 0.5f))), 2.0f));
}

static long ref_chain(double *const *in, const struct fd_case *c, double *y)
{
    long n = ref_matmul(in, c, y);
    for (long j = 0; j < n; j++) {
        double h = tanh(y[j]), r = 1.5 * h > 0.0 ? 1.5 * h : 0.0;
        y[j] = 1.0 / (1.0 + exp(-2.0 * r));
    }
    return n;
}

Test(task_6_4, chain_of_ops_finite_differences)
{
    struct fd_case c = matmul_case(17, 3, 65);
    c.name = "chain";
    c.build = build_chain;
    c.ref = ref_chain;
    check_fd(&c, 140);
}

// ---------------------------------------------------------------------------
// Golden values from PyTorch.

Test(task_6_3, mlp_matches_pytorch)
{
    struct golden_set s;
    load_golden("autograd_mlp.txt", &s);
    const struct golden *gl = find(&s, "labels");
    int labels[64];
    for (long i = 0; i < gl->size; i++)
        labels[i] = (int)gl->v[i];
    const char *names[] = {"x", "w1", "b1", "w2", "b2"};
    struct tensor *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = golden_param(&s, names[i]);
    struct tape *t = tape_new(NULL);
    struct tensor *h = op_relu(t, op_bias_add(t, op_matmul(t, p[0], p[1]), p[2]));
    struct tensor *loss =
        op_cross_entropy(t, op_bias_add(t, op_matmul(t, h, p[3]), p[4]), labels, (int)gl->size);
    cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
    expect_close("loss", loss->data, find(&s, "loss"));
    for (int i = 0; i < 5; i++) {
        char g[32];
        snprintf(g, sizeof g, "grad_%s", names[i]);
        expect_close(g, p[i]->grad, find(&s, g));
        tensor_free(p[i]);
    }
    tape_free(t);
}

Test(task_6_4, ops_match_pytorch)
{
    struct golden_set s;
    load_golden("autograd_ops.txt", &s);
    struct tensor *a = golden_param(&s, "a"), *b = golden_param(&s, "b");
    struct tape *t = tape_new(NULL);
    struct tensor *left =
        op_mean(t, op_add(t, op_mul(t, op_tanh(t, a), op_sigmoid(t, b)), op_scale(t, a, 0.5f)));
    struct tensor *right = op_sum(t, op_scale(t, op_reshape(t, b, 1, (int[]){24}), 0.1f));
    struct tensor *loss = op_add(t, left, right);
    cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
    expect_close("loss", loss->data, find(&s, "loss"));
    expect_close("grad_a", a->grad, find(&s, "grad_a"));
    expect_close("grad_b", b->grad, find(&s, "grad_b"));
    tensor_free(a);
    tensor_free(b);
    tape_free(t);
}

// ---------------------------------------------------------------------------
// Bad input: a status and a message, never a crash.

static struct tensor *step_tensor(struct tape *t, int rows, int cols)
{
    struct tensor *x = tensor_new(t, 2, (int[]){rows, cols});
    cr_assert_not_null(x);
    mat_fill_random(x->data, rows, cols, cols, 7);
    return x;
}

Test(stage_06, shape_mismatch_names_op_and_shapes)
{
    struct tape *t = tape_new(NULL);
    struct tensor *a = step_tensor(t, 64, 784), *b = step_tensor(t, 256, 10);
    cr_assert_null(op_matmul(t, a, b));
    cr_assert_str_eq(tape_error(t), "matmul: a is 64×784, b is 256×10 (want m×k and k×n)");
    // Later ops given the NULL return NULL and keep the first message.
    cr_assert_null(op_relu(t, op_matmul(t, a, b)));
    cr_assert_str_eq(tape_error(t), "matmul: a is 64×784, b is 256×10 (want m×k and k×n)");
    cr_assert_eq(tape_backward(t, NULL), -1);

    tape_clear(t);
    cr_assert_str_eq(tape_error(t), "");
    struct tensor *c = step_tensor(t, 3, 4), *d = step_tensor(t, 4, 3);
    cr_assert_null(op_add(t, c, d));
    cr_assert_str_eq(tape_error(t), "add: a is 3×4, b is 4×3 (want the same shape)");
    // tape_clear forgets the step's tensors: c is made again.
    tape_clear(t);
    c = step_tensor(t, 3, 4);
    cr_assert_null(op_mul(t, c, step_tensor(t, 3, 5)));
    cr_assert_str_eq(tape_error(t), "mul: a is 3×4, b is 3×5 (want the same shape)");
    tape_clear(t);
    struct tensor *bias = tensor_new(t, 1, (int[]){5});
    cr_assert_null(op_bias_add(t, step_tensor(t, 3, 4), bias));
    cr_assert_str_eq(tape_error(t), "bias_add: x is 3×4, bias is 5 (want m×n and n)");
    tape_clear(t);
    cr_assert_null(op_reshape(t, step_tensor(t, 3, 4), 2, (int[]){5, 2}));
    cr_assert_str_eq(tape_error(t), "reshape: x is 3×4 (12 elements), the new shape 5×2 has 10");
    tape_clear(t);
    cr_assert_null(op_matmul(t, tensor_new(t, 1, (int[]){4}), step_tensor(t, 4, 2)));
    cr_assert_str_eq(tape_error(t), "matmul: a is 4, b is 4×2 (want m×k and k×n)");
    tape_clear(t);
    cr_assert_null(tensor_new(t, 5, (int[]){1, 2, 3, 4, 5}));
    cr_assert(strstr(tape_error(t), "1 to 4 dimensions") != NULL, "%s", tape_error(t));
    tape_clear(t);
    cr_assert_null(tensor_new(t, 2, (int[]){3, 0}));
    cr_assert(tape_failed(t));
    tape_free(t);
}

Test(stage_06, bad_labels)
{
    struct tape *t = tape_new(NULL);
    struct tensor *z = step_tensor(t, 3, 10);
    const int bad[] = {1, 12, 3}, good[] = {1, 2, 3};
    cr_assert_null(op_cross_entropy(t, z, bad, 3));
    cr_assert_str_eq(tape_error(t), "cross_entropy: label 12 of row 1 is outside 0..9");
    tape_clear(t);
    z = step_tensor(t, 3, 10);
    cr_assert_null(op_cross_entropy(t, z, good, 2));
    cr_assert_str_eq(tape_error(t),
                     "cross_entropy: logits are 3×10, labels has 2 entries (want 3)");
    tape_clear(t);
    z = step_tensor(t, 3, 10);
    cr_assert_null(op_cross_entropy(t, z, NULL, 3));
    cr_assert(tape_failed(t));
    tape_free(t);
}

Test(stage_06, nan_loss_backward_twice_and_non_scalar)
{
    struct tape *t = tape_new(NULL);
    struct tensor *w = tensor_param(2, (int[]){4, 3});
    mat_fill_random(w->data, 4, 3, 3, 8);
    struct tensor *x = step_tensor(t, 2, 4);
    x->data[5] = NAN;
    const int labels[] = {0, 2};
    struct tensor *loss = op_cross_entropy(t, op_matmul(t, x, w), labels, 2);
    cr_assert_not_null(loss, "%s", tape_error(t));
    cr_assert_eq(tape_backward(t, loss), -1);
    cr_assert_str_eq(tape_error(t), "backward: the loss is NaN");

    tape_clear(t);
    x = step_tensor(t, 2, 4);
    struct tensor *h = op_matmul(t, x, w);
    cr_assert_eq(tape_backward(t, h), -1);
    cr_assert_str_eq(tape_error(t), "backward: the loss must be one number, not a 2×3 tensor "
                                    "(take its sum or mean)");

    tape_clear(t);
    x = step_tensor(t, 2, 4);
    loss = op_mean(t, op_matmul(t, x, w));
    cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
    cr_assert_eq(tape_backward(t, loss), -1);
    cr_assert(strstr(tape_error(t), "already walked") != NULL, "%s", tape_error(t));

    // A loss that depends on no parameter has nothing to walk.
    tape_clear(t);
    x = step_tensor(t, 2, 4);
    cr_assert_eq(tape_backward(t, op_sum(t, x)), -1);
    cr_assert(strstr(tape_error(t), "not recorded") != NULL, "%s", tape_error(t));
    tensor_free(w);
    tape_free(t);
}

// A loss recorded on another tape is not this tape's to walk: its nodes are
// not among this tape's, and walking this tape would compute nothing.
Test(task_6_4, a_loss_from_another_tape_is_refused)
{
    struct tape *mine = tape_new(NULL), *other = tape_new(NULL);
    struct tensor *w = tensor_param(2, (int[]){4, 3});
    mat_fill_random(w->data, 4, 3, 3, 9);
    struct tensor *loss = op_mean(other, op_matmul(other, step_tensor(other, 2, 4), w));
    cr_assert_not_null(loss, "%s", tape_error(other));
    op_mean(mine, op_matmul(mine, step_tensor(mine, 2, 4), w));
    cr_assert_eq(tape_backward(mine, loss), -1, "a loss of another tape was walked");
    cr_assert(strstr(tape_error(mine), "not recorded") != NULL, "%s", tape_error(mine));
    for (long i = 0; i < w->size; i++)
        cr_assert_eq(w->grad[i], 0.0f, "walking the wrong tape gave w a gradient");
    tensor_free(w);
    tape_free(mine);
    tape_free(other);
}

// ---------------------------------------------------------------------------
// Memory: the no-grad mode and the arena.

struct mlp {
    struct tensor *w1, *b1, *w2, *b2;
};

static struct mlp mlp_new(int in, int hidden, int out)
{
    struct mlp m = {tensor_param(2, (int[]){in, hidden}), tensor_param(1, (int[]){hidden}),
                    tensor_param(2, (int[]){hidden, out}), tensor_param(1, (int[]){out})};
    mat_fill_random(m.w1->data, in, hidden, hidden, 11);
    mat_fill_random(m.b1->data, 1, hidden, hidden, 12);
    mat_fill_random(m.w2->data, hidden, out, out, 13);
    mat_fill_random(m.b2->data, 1, out, out, 14);
    return m;
}

static void mlp_free(struct mlp *m)
{
    tensor_free(m->w1);
    tensor_free(m->b1);
    tensor_free(m->w2);
    tensor_free(m->b2);
}

static struct tensor *mlp_loss(struct tape *t, const struct mlp *m, struct tensor *x,
                               const int *labels)
{
    struct tensor *h = op_relu(t, op_bias_add(t, op_matmul(t, x, m->w1), m->b1));
    return op_cross_entropy(t, op_bias_add(t, op_matmul(t, h, m->w2), m->b2), labels,
                            x->shape[0]);
}

static size_t round64(size_t n)
{
    return (n + 63) / 64 * 64;
}

// A tape whose step memory is mode (the rest as tape_config_default()).
static struct tape *tape_with(enum memory_mode mode)
{
    struct tape_config c = tape_config_default();
    c.memory = mode;
    struct tape *t = tape_new(&c);
    cr_assert_not_null(t);
    return t;
}

Test(stage_06, no_grad_records_and_allocates_nothing_for_gradients)
{
    struct mlp m = mlp_new(17, 33, 10);
    struct tape *t = tape_with(MEMORY_ARENA);  // it counts the arena's bytes
    int labels[65];
    for (int i = 0; i < 65; i++)
        labels[i] = i % 10;
    cr_assert_eq(tape_set_recording(t, 0), 1);
    struct tensor *x = step_tensor(t, 65, 17);
    size_t before = arena_used(tape_arena(t));
    struct tensor *loss = mlp_loss(t, &m, x, labels);
    cr_assert_not_null(loss, "%s", tape_error(t));
    cr_assert_eq(tape_node_count(t), 0);
    cr_assert_eq(loss->requires_grad, 0);
    // Exactly the six outputs (matmul, bias, relu, matmul, bias: 65×33 or
    // 65×10 floats, and the loss) and nothing else: no nodes, no saved
    // probabilities, no gradients.
    size_t tensor_bytes = round64(sizeof(struct tensor));
    size_t want = 3 * (tensor_bytes + round64(4 * 65 * 33)) +
                  2 * (tensor_bytes + round64(4 * 65 * 10)) + tensor_bytes + round64(4);
    cr_assert_eq(arena_used(tape_arena(t)) - before, want, "no-grad forward used %zu bytes, "
                 "its outputs need %zu", arena_used(tape_arena(t)) - before, want);
    cr_assert_eq(tape_backward(t, loss), -1);
    for (long i = 0; i < m.w1->size; i++)
        cr_assert(m.w1->grad[i] == 0.0f);
    // Recording again: the same forward records 6 nodes.
    tape_clear(t);
    tape_set_recording(t, 1);
    loss = mlp_loss(t, &m, step_tensor(t, 65, 17), labels);
    cr_assert_eq(tape_node_count(t), 6);
    cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
    mlp_free(&m);
    tape_free(t);
}

// tape_write_dot: one box per recorded node, numbered in recording order,
// the parameters and the step's input marked, and the same file every time.
Test(tape, write_dot_draws_every_node)
{
    struct mlp m = mlp_new(5, 4, 3);
    struct tape *t = tape_new(NULL);
    cr_assert_not_null(t);
    int labels[2] = {0, 2};
    struct tensor *loss = mlp_loss(t, &m, step_tensor(t, 2, 5), labels);
    cr_assert_not_null(loss, "%s", tape_error(t));
    char text[2][4096];
    for (int run = 0; run < 2; run++) {
        FILE *f = fmemopen(text[run], sizeof text[run], "w");
        cr_assert_not_null(f);
        cr_assert_eq(tape_write_dot(t, f), 0);
        fclose(f);
    }
    cr_assert_str_eq(text[0], text[1]);
    int boxes = 0;
    for (const char *p = text[0]; (p = strstr(p, "shape=box")); p++)
        boxes++;
    cr_assert_eq(boxes, tape_node_count(t));
    cr_assert_not_null(strstr(text[0], "label=\"1: matmul\""));
    cr_assert_not_null(strstr(text[0], "label=\"input 2×5\""));
    cr_assert_not_null(strstr(text[0], "label=\"param 5×4\""));
    cr_assert_eq(strncmp(text[0], "digraph tape {", 14), 0);
    tape_free(t);
    mlp_free(&m);
}

// listing: zero_alloc_test
// The first step reserves the tape's memory (the arena's blocks, or the plan
// and its block); every later step of the same shapes reuses it: no call to
// malloc anywhere in the process (malloc_count.h counts them all), and what
// the tape holds does not grow.
static void zero_alloc(enum memory_mode mode)
{
    if (malloc_calls() < 0)
        cr_skip_test("counting malloc needs AddressSanitizer's hooks (the test build has them)");
    struct mlp m = mlp_new(784, 256, 10);
    struct tape *t = tape_with(mode);
    int labels[64];
    for (int i = 0; i < 64; i++)
        labels[i] = i % 10;
    long allocations = malloc_calls();
    size_t reserved = 0;
    for (int step = 0; step < 5; step++) {
        tape_clear(t);
        struct tensor *x = step_tensor(t, 64, 784);
        struct tensor *loss = mlp_loss(t, &m, x, labels);
        tensor_zero_grad(m.w1);
        tensor_zero_grad(m.b1);
        tensor_zero_grad(m.w2);
        tensor_zero_grad(m.b2);
        int status = tape_backward(t, loss);
        long now = malloc_calls();
        cr_assert_eq(status, 0, "%s", tape_error(t));
        if (step == 0) {
            cr_assert_gt(now, allocations, "%s: the first step reserves the tape's memory: "
                         "not counted", tape_memory_name(mode));
            reserved = tape_reserved_bytes(t);
        } else {
            cr_assert_eq(now, allocations, "%s: step %d called malloc %ld times",
                         tape_memory_name(mode), step, now - allocations);
        }
        cr_assert_eq(tape_reserved_bytes(t), reserved, "%s: step %d grew the tape's memory",
                     tape_memory_name(mode), step);
        allocations = now;
    }
    cr_assert(tape_live_bytes(t) <= reserved);
    mlp_free(&m);
    tape_free(t);
}

Test(stage_06, no_heap_allocation_after_the_first_step) { zero_alloc(MEMORY_ARENA); }
Test(planner, no_heap_allocation_after_the_first_step) { zero_alloc(MEMORY_PLANNED); }
// end listing

Test(stage_06, arena_aligns_reuses_and_grows)
{
    struct arena *a = arena_create(4096);
    cr_assert_not_null(a);
    char *p = arena_alloc(a, 1), *q = arena_alloc(a, 100);
    cr_assert(((uintptr_t)p % 64) == 0 && ((uintptr_t)q % 64) == 0);
    cr_assert_eq(q - p, 64);
    cr_assert_eq(arena_used(a), 64 + 128);
    // Larger than a block: a block of its own.
    char *big = arena_alloc(a, 10000);
    cr_assert_not_null(big);
    memset(big, 1, 10000);
    size_t reserved = arena_reserved(a), peak = arena_peak(a);
    cr_assert(reserved >= 4096 + 10000);
    long allocations = arena_heap_allocations();
    arena_reset(a);
    cr_assert_eq(arena_used(a), 0);
    cr_assert(arena_alloc(a, 1) == p && arena_alloc(a, 100) == q && arena_alloc(a, 10000) == big);
    cr_assert_eq(arena_heap_allocations(), allocations);
    cr_assert_eq(arena_reserved(a), reserved);
    cr_assert_eq(arena_peak(a), peak);
    cr_assert_null(arena_alloc(a, (size_t)1 << 50));
    arena_destroy(a);
}

// ---------------------------------------------------------------------------
// Every backend gives the same gradients, within the rounding of different
// summation orders (k ≤ 65 here: 1e-4 of the gradient's scale is ample).
Test(stage_06, every_backend_gives_the_same_gradients, .timeout = 300)
{
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    struct mlp m = mlp_new(65, 17, 3);
    int labels[33];
    for (int i = 0; i < 33; i++)
        labels[i] = (i * 5) % 3;
    float want[65 * 17], want_w2[17 * 3];
    for (int b = 0; b < count; b++) {
        struct tape_config c = tape_config_default();
        c.gemm = &all[b];
        struct tape *t = tape_new(&c);
        tensor_zero_grad(m.w1);
        tensor_zero_grad(m.w2);
        struct tensor *loss = mlp_loss(t, &m, step_tensor(t, 33, 65), labels);
        cr_assert_eq(tape_backward(t, loss), 0, "%s: %s", all[b].name, tape_error(t));
        if (b == 0) {
            memcpy(want, m.w1->grad, sizeof want);
            memcpy(want_w2, m.w2->grad, sizeof want_w2);
        }
        float big = 0.0f, big2 = 0.0f;
        for (int i = 0; i < 65 * 17; i++)
            big = fmaxf(big, fabsf(want[i]));
        for (int i = 0; i < 17 * 3; i++)
            big2 = fmaxf(big2, fabsf(want_w2[i]));
        for (int i = 0; i < 65 * 17; i++)
            cr_assert(fabsf(m.w1->grad[i] - want[i]) <= 1e-4f * big, "%s: dw1[%d] = %g, %s: %g",
                      all[b].name, i, m.w1->grad[i], all[0].name, want[i]);
        for (int i = 0; i < 17 * 3; i++)
            cr_assert(fabsf(m.w2->grad[i] - want_w2[i]) <= 1e-4f * big2,
                      "%s: dw2[%d] = %g, %s: %g", all[b].name, i, m.w2->grad[i], all[0].name,
                      want_w2[i]);
        tape_free(t);
    }
    mlp_free(&m);
}

// ---------------------------------------------------------------------------
// The SIMD elementwise loops give the scalar loops' bits, at every length
// around the vector width, with NaN and −0 among the inputs.
static void vec_same_bits(enum isa isa)
{
    if (!isa_supported(isa))
        cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    float a[70], b[70], want[70], got[70];
    for (int n = 0; n <= 70; n++) {
        mat_fill_random(a, 1, 70, 70, 1 + n);
        mat_fill_random(b, 1, 70, 70, 100 + n);
        a[n / 2] = NAN;
        a[n / 3] = -0.0f;
        cr_assert_eq(vec_kernels(isa)->isa, isa);
        struct {
            const char *name;
            int which;
        } ops[] = {{"add", 0},           {"add_to", 1},    {"relu", 2},
                   {"relu_backward", 3}, {"relu_mask", 4}, {"relu_mask_backward", 5}};
        for (int o = 0; o < 6; o++) {
            for (int pass = 0; pass < 2; pass++) {
                float *out = pass ? got : want;
                memcpy(out, b, sizeof b);
                const struct vec_kernels *k = vec_kernels(pass ? isa : ISA_SCALAR);
                switch (ops[o].which) {
                case 0: k->add(n, out, a, b); break;
                case 1: k->add_to(n, out, a); break;
                case 2: k->relu(n, out, a); break;
                case 3: k->relu_backward(n, out, a, b); break;
                case 4: k->relu_mask(n, (uint8_t *)out, a); break;
                case 5: {
                    // The mask of a, then the backward from it, which must
                    // equal relu_backward's into zeros.
                    uint8_t bits[9];
                    vec_kernels(ISA_SCALAR)->relu_mask(n, bits, a);
                    k->relu_mask_backward(n, out, bits, b);
                    if (pass) {
                        float zeros[70] = {0};
                        vec_kernels(ISA_SCALAR)->relu_backward(n, zeros, a, b);
                        cr_assert(memcmp(zeros, got, sizeof(float) * (size_t)n) == 0,
                                  "%s relu_mask_backward is not relu_backward at n = %d",
                                  isa_name(isa), n);
                    }
                    break;
                }
                }
            }
            cr_assert(memcmp(want, got, sizeof want) == 0, "%s %s differs from scalar at n = %d",
                      isa_name(isa), ops[o].name, n);
        }
    }
}

Test(stage_06, vec_avx2_same_bits_as_scalar) { vec_same_bits(ISA_AVX2); }
Test(stage_06, vec_avx512_same_bits_as_scalar) { vec_same_bits(ISA_AVX512); }
Test(stage_06, vec_neon_same_bits_as_scalar) { vec_same_bits(ISA_NEON); }

// A smaller batch asks for smaller tensors in the same order, and blocks can
// still grow: the small requests pack closer, so a large one meets a kept
// block sized for something else. One block of the first step's total (what
// arena_fit leaves, and what the trainer does after its first step) holds
// any later step that asks for no more in all.
Test(tape, smaller_requests_can_grow_blocks_but_not_a_fitted_arena)
{
    for (int fitted = 0; fitted <= 1; fitted++) {
        struct arena *a = arena_create(4096);
        cr_assert_not_null(a);
        // The full batch: 3600 fills most of the first block, 2000 opens a
        // second, 8192 a third.
        cr_assert_not_null(arena_alloc(a, 3600));
        cr_assert_not_null(arena_alloc(a, 2000));
        cr_assert_not_null(arena_alloc(a, 8192));
        if (fitted)
            cr_assert_eq(arena_fit(a), 0);
        size_t reserved = arena_reserved(a);
        long calls = arena_heap_allocations();
        // The smaller batch: the first two now share the first block, and
        // 4544 finds the second block (4096) too small.
        arena_reset(a);
        cr_assert_not_null(arena_alloc(a, 1984));
        cr_assert_not_null(arena_alloc(a, 1088));
        cr_assert_not_null(arena_alloc(a, 4544));
        if (fitted) {
            cr_assert_eq(arena_reserved(a), reserved);
            cr_assert_eq(arena_heap_allocations(), calls);
        } else {
            cr_assert_gt(arena_reserved(a), reserved, "blocks: the smaller step reserves more");
            cr_assert_gt(arena_heap_allocations(), calls);
        }
        arena_destroy(a);
    }
}

// arena_fit: blocks made by one order of requests are replaced by one block
// of the peak, in which another order of the same total fits without a new
// block or a call to malloc.
Test(tape, arena_fit_keeps_one_block_of_the_peak)
{
    struct arena *a = arena_create(4096);
    cr_assert_not_null(a);
    // 1 KiB, then 16 KiB, then 1 KiB: three blocks (the first 4 KiB).
    cr_assert_not_null(arena_alloc(a, 1024));
    cr_assert_not_null(arena_alloc(a, 16384));
    cr_assert_not_null(arena_alloc(a, 1024));
    size_t peak = arena_peak(a);
    cr_assert_eq(peak, 1024 + 16384 + 1024);
    cr_assert_gt(arena_reserved(a), peak);
    cr_assert_eq(arena_fit(a), 0);
    cr_assert_eq(arena_reserved(a), peak);
    long calls = arena_heap_allocations();
    for (int round = 0; round < 3; round++) {
        arena_reset(a);
        // the same total in another order: 16 KiB last
        cr_assert_not_null(arena_alloc(a, 1024));
        cr_assert_not_null(arena_alloc(a, 1024));
        cr_assert_not_null(arena_alloc(a, 16384));
        cr_assert_eq(arena_fit(a), 0);  // one block: nothing to do
    }
    cr_assert_eq(arena_heap_allocations(), calls);
    cr_assert_eq(arena_reserved(a), peak);
    arena_destroy(a);
}

// ---------------------------------------------------------------------------
// The planner: offsets for lifetimes (plan.c), and the lifetimes of a step
// (tape.c, memory.c).

#include "plan.h"

// No two buffers alive at one tick share a byte; the block holds them all
// and is never smaller than the most bytes alive at once.
static void check_packing(struct plan_buffer *b, int n, size_t size)
{
    for (int i = 0; i < n; i++) {
        cr_assert(b[i].offset % 64 == 0, "buffer %d at offset %zu", i, b[i].offset);
        cr_assert(b[i].offset + b[i].bytes <= size);
        for (int j = 0; j < i; j++)
            if (plan_overlap(&b[i], &b[j]))
                cr_assert(b[i].offset + b[i].bytes <= b[j].offset ||
                              b[j].offset + b[j].bytes <= b[i].offset,
                          "buffers %d [%d, %d] and %d [%d, %d] are alive together and share "
                          "bytes", i, b[i].birth, b[i].death, j, b[j].birth, b[j].death);
    }
    cr_assert_geq(size, plan_live(b, n));
}

Test(task_6_6, plan_pack_shares_bytes_between_lifetimes_that_do_not_overlap)
{
    // A chain, as a forward makes: each buffer read by the next op alone.
    // Two are alive at a time, so two places serve all five.
    struct plan_buffer chain[5];
    for (int i = 0; i < 5; i++)
        chain[i] = (struct plan_buffer){.bytes = 1024, .birth = i, .death = i + 1};
    size_t size = plan_pack(chain, 5);
    check_packing(chain, 5, size);
    cr_assert_eq(plan_live(chain, 5), 2048);
    cr_assert_eq(size, 2048, "five 1 KiB buffers, two alive at a time, took %zu bytes", size);
    // A gap between two live ranges that a later, smaller buffer fits.
    struct plan_buffer gap[4] = {
        {.bytes = 4096, .birth = 0, .death = 9},   // held throughout
        {.bytes = 2048, .birth = 0, .death = 2},   // dies early: leaves a hole
        {.bytes = 4096, .birth = 0, .death = 9},   // held throughout
        {.bytes = 1024, .birth = 5, .death = 6},   // goes into the hole
    };
    size = plan_pack(gap, 4);
    check_packing(gap, 4, size);
    cr_assert_eq(size, 4096 + 2048 + 4096);
    cr_assert_eq(gap[3].offset, gap[1].offset, "the late buffer sits at %zu, not in the "
                 "early one's place (%zu)", gap[3].offset, gap[1].offset);
}

Test(task_6_6, plan_pack_random_lifetimes)
{
    enum { N = 300 };
    static struct plan_buffer b[N];
    uint64_t r = 12345;
    size_t total = 0;
    for (int i = 0; i < N; i++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        int birth = (int)(r >> 33) % 100;
        r = r * 6364136223846793005u + 1442695040888963407u;
        int length = (int)(r >> 33) % 20;
        r = r * 6364136223846793005u + 1442695040888963407u;
        size_t bytes = 64 * (1 + (size_t)(r >> 33) % 200);
        b[i] = (struct plan_buffer){.bytes = bytes, .birth = birth, .death = birth + length};
        total += bytes;
    }
    size_t size = plan_pack(b, N);
    check_packing(b, N, size);
    cr_assert_lt(size, total / 2, "the block is %zu bytes of %zu: little shared", size, total);
}

// Largest first is not always best: here the 128-byte buffer, placed after
// the three larger ones, finds no room below them, while placed first (it
// lives three ticks: the largest area) it leaves the others a gap each.
// plan_pack packs in both orders and keeps the smaller block, which here is
// no larger than the most bytes alive at once.
Test(task_6_6, plan_pack_keeps_the_better_of_two_orders)
{
    struct plan_buffer b[4] = {
        {.bytes = 128, .birth = 3, .death = 5},
        {.bytes = 192, .birth = 0, .death = 1},
        {.bytes = 192, .birth = 1, .death = 3},
        {.bytes = 192, .birth = 4, .death = 4},
    };
    size_t size = plan_pack(b, 4);
    check_packing(b, 4, size);
    cr_assert_eq(plan_live(b, 4), 384);
    cr_assert_eq(size, 384, "the block is %zu bytes; 384 are alive at most", size);
}

// One row of the lifetimes CSV (tape_write_lifetimes).
struct lifetime {
    char kind[16], op[32];
    long bytes;
    int birth, death;
};

static int read_lifetimes(struct tape *t, struct lifetime *rows, int max)
{
    char *text = NULL;
    size_t length = 0;
    FILE *f = open_memstream(&text, &length);
    cr_assert_not_null(f);
    cr_assert_eq(tape_write_lifetimes(t, f), 0);
    fclose(f);
    int n = 0;
    char *line = strchr(text, '\n');  // past the header
    cr_assert_not_null(line);
    long offset;
    int id;
    while (line && n < max && sscanf(line + 1, "%d,%15[^,],%31[^,],%ld,%d,%d,%ld", &id,
                                     rows[n].kind, rows[n].op, &rows[n].bytes, &rows[n].birth,
                                     &rows[n].death, &offset) == 7) {
        n++;
        line = strchr(line + 1, '\n');
    }
    free(text);
    return n;
}

// The first buffer of that kind made by op, or NULL.
static const struct lifetime *find_lifetime(const struct lifetime *rows, int n, const char *kind,
                                            const char *op, int skip)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].kind, kind) == 0 && strcmp(rows[i].op, op) == 0 && skip-- == 0)
            return &rows[i];
    return NULL;
}

// What the backward needs is kept, the rest dies at its last forward read:
// relu(bias_add(matmul(x, w1))) → matmul → bias_add → cross_entropy.
Test(task_6_5, a_value_no_backward_reads_dies_at_its_last_forward_read)
{
    struct mlp m = mlp_new(17, 33, 10);
    struct tape *t = tape_with(MEMORY_PLANNED);
    int labels[65];
    for (int i = 0; i < 65; i++)
        labels[i] = i % 10;
    struct tensor *loss = mlp_loss(t, &m, step_tensor(t, 65, 17), labels);
    cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
    static struct lifetime rows[256];
    int n = read_lifetimes(t, rows, 256);
    cr_assert_gt(n, 10);
    const struct lifetime *mm1 = find_lifetime(rows, n, "value", "matmul", 0),
                          *add1 = find_lifetime(rows, n, "value", "bias_add", 0),
                          *relu = find_lifetime(rows, n, "value", "relu", 0),
                          *mm2 = find_lifetime(rows, n, "value", "matmul", 1),
                          *add2 = find_lifetime(rows, n, "value", "bias_add", 1),
                          *probs = find_lifetime(rows, n, "saved", "cross_entropy", 0);
    cr_assert(mm1 && add1 && relu && mm2 && add2 && probs);
    int backward = probs->birth + 1;  // the loss is the forward's last op
    // matmul's output: read by bias_add, whose backward needs only dy.
    cr_assert_eq(mm1->death, add1->birth, "the first matmul's output dies at tick %d, "
                 "bias_add reads it last at %d", mm1->death, add1->birth);
    // bias_add's output: read by relu, whose backward reads its own output.
    cr_assert_eq(add1->death, relu->birth);
    // The second bias_add's output (the logits): read by the loss alone.
    cr_assert_eq(add2->death, probs->birth);
    // relu's output: the second matmul's backward needs it (dW2 = hᵀ·dz).
    cr_assert_gt(relu->death, backward, "relu's output dies at %d, before the backward (%d)",
                 relu->death, backward);
    // The probabilities: until cross_entropy's backward, the first node back.
    cr_assert_eq(probs->death, backward + 1);
    // relu's gradient is born in the second matmul's backward and dies in
    // relu's own, before the step ends.
    const struct lifetime *drelu = find_lifetime(rows, n, "grad", "relu", 0);
    cr_assert_not_null(drelu);
    cr_assert_lt(drelu->death, rows[0].death, "relu's gradient lives to the end of the step");
    mlp_free(&m);
    tape_free(t);
}

// The MLP's step: the planned block is well under what the arena holds.
Test(planner, planned_step_holds_less_than_the_arena)
{
    struct mlp m = mlp_new(784, 256, 10);
    size_t live[2], reserved[2];
    for (int mode = 0; mode < 2; mode++) {
        struct tape *t = tape_with(mode == 0 ? MEMORY_ARENA : MEMORY_PLANNED);
        int labels[64];
        for (int i = 0; i < 64; i++)
            labels[i] = i % 10;
        for (int step = 0; step < 3; step++) {
            tape_clear(t);
            cr_assert_eq(tape_backward(t, mlp_loss(t, &m, step_tensor(t, 64, 784), labels)), 0,
                         "%s", tape_error(t));
        }
        live[mode] = tape_live_bytes(t);
        reserved[mode] = tape_reserved_bytes(t);
        tape_free(t);
    }
    cr_assert_lt(live[1], live[0], "planned: %zu bytes live, the arena %zu", live[1], live[0]);
    cr_assert_lt(reserved[1], reserved[0], "planned: %zu bytes reserved, the arena %zu",
                 reserved[1], reserved[0]);
    mlp_free(&m);
}

// The first step has no plan: without tape_done it holds every value until
// its backward begins. tape_done lets a value go at once, unless a recorded
// node's backward reads it (the ReLU's reads its own output): then it is
// ignored. A read after a tensor was let go is an error.
Test(planner, tape_done_lets_a_value_go_in_the_first_step)
{
    struct mlp m = mlp_new(784, 256, 10);
    int labels[64];
    for (int i = 0; i < 64; i++)
        labels[i] = i % 10;
    // The same step with and without tape_done: the same gradient.
    static float dw1[2][784 * 256];
    for (int done = 0; done < 2; done++) {
        struct tape *t = tape_with(MEMORY_PLANNED);
        tensor_zero_grad(m.w1);
        struct tensor *x = step_tensor(t, 64, 784);
        struct tensor *z = op_matmul(t, x, m.w1);
        struct tensor *a = op_bias_add(t, z, m.b1);
        struct tensor *h = op_relu(t, a);
        if (done) {
            tape_done(t, z);  // the bias add's backward reads dy alone: z may go
            tape_done(t, h);  // relu's backward reads h: ignored
        }
        struct tensor *loss =
            op_cross_entropy(t, op_bias_add(t, op_matmul(t, h, m.w2), m.b2), labels, 64);
        cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
        memcpy(dw1[done], m.w1->grad, sizeof dw1[done]);
        tape_free(t);
    }
    cr_assert(memcmp(dw1[0], dw1[1], sizeof dw1[0]) == 0, "tape_done changed dW1");
    // A first step that reads z after letting it go.
    struct tape *t = tape_with(MEMORY_PLANNED);
    struct tensor *z = op_matmul(t, step_tensor(t, 64, 784), m.w1);
    struct tensor *a = op_bias_add(t, z, m.b1);
    tape_done(t, z);
    cr_assert_not_null(op_relu(t, a));
    cr_assert_null(op_add(t, z, z));
    cr_assert(strstr(tape_error(t), "read after its planned memory went to another") != NULL,
              "error: %s", tape_error(t));
    mlp_free(&m);
    tape_free(t);
}

// The plan says when each buffer dies; a step that reads one later (here, a
// caller who asks for the logits after the loss without tape_keep) gets an
// error, not another tensor's numbers. The test build also fills a buffer
// with NaN when it dies (TAPE_POISON): a read the planner did not see gives
// NaN, which the same-bits tests of stages 07 and 08 would catch.
Test(planner, a_tensor_read_after_its_memory_was_reused_is_an_error)
{
    struct mlp m = mlp_new(784, 256, 10);
    struct tape *t = tape_with(MEMORY_PLANNED);
    int labels[64];
    for (int i = 0; i < 64; i++)
        labels[i] = i % 10;
    for (int step = 0; step < 3; step++) {
        tape_clear(t);
        struct tensor *x = step_tensor(t, 64, 784);
        struct tensor *h = op_relu(t, op_bias_add(t, op_matmul(t, x, m.w1), m.b1));
        struct tensor *logits = op_bias_add(t, op_matmul(t, h, m.w2), m.b2);
        struct tensor *loss = op_cross_entropy(t, logits, labels, 64);
        cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
        if (step < 2)
            continue;  // the first step makes the plan, the second follows it
#ifdef TAPE_POISON
        cr_assert(isnan(logits->data[0]), "the logits' bytes after their death: %g",
                  (double)logits->data[0]);
#endif
        cr_assert_null(op_add(t, logits, logits));
        cr_assert(strstr(tape_error(t), "read after its planned memory went to another") != NULL,
                  "error: %s", tape_error(t));
    }
    mlp_free(&m);
    tape_free(t);
}

// bench_autograd as `make stage-06 bench` runs it, briefly: every backend
// and memory mode it measures gives a row with a time, and it exits 0 (a
// tape it cannot make is an error it names, never a silent gap).
Test(bench, bench_autograd_measures_every_row, .timeout = 300)
{
    char dir[64];
    make_scratch_dir(dir, sizeof dir, "test06");
    run_driver_ok(dir, "bench_autograd",
                  "--quick --threads 1 --reps 2 --batches 64 --csv speed.csv");
    char *csv = read_text(dir, "speed.csv");
    // Two models × (auto and openblas, and auto again with scalar loops
    // unless the tape's ISA is scalar) × (arena, planned).
    int want = 2 * 2 * (tape_config_default().isa == ISA_SCALAR ? 2 : 3);
    int n = 0, header = 0;
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        if (!header++) {
            cr_assert(strncmp(line, "model,batch,backend,isa,threads,step_ms,", 40) == 0, "%s",
                      line);
            continue;
        }
        char model[64], backend[32], isa[16];
        int batch, threads;
        double step_ms, gemm_ms;
        cr_assert_eq(sscanf(line, "%63[^,],%d,%31[^,],%15[^,],%d,%lf,%lf", model, &batch,
                            backend, isa, &threads, &step_ms, &gemm_ms),
                     7, "%s", line);
        cr_assert(batch == 64 && threads == 1 && step_ms > 0 && gemm_ms > 0, "%s", line);
        n++;
    }
    cr_assert_eq(n, want, "%d rows, not %d", n, want);
    free(csv);
    remove_tree(dir);
}
