// Stage 07: the layers, optimizers and checkpoints of common/nn/. The Linear
// layer's gradients by finite differences and against PyTorch; Adam and SGD
// against PyTorch (tests/golden/, written by tools/torch_golden_07.py) and
// every vector update loop against the scalar one, bit for bit; the MLP's
// initialisation and sizes; checkpoints that round-trip and refuse every
// damaged or mismatched file; run_mlp on a set of a reader's own.
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <omp.h>
#include <unistd.h>

#include "arena.h"
#include "arrays.h"
#include "checkpoint.h"
#include "dataset.h"
#include "gemm_backend.h"
#include "golden.h"
#include "inspect.h"
#include "malloc_count.h"
#include "mat.h"
#include "nn.h"
#include "ops.h"
#include "optim.h"
#include "own_data.h"
#include "tape.h"
#include "train.h"
#include "train_flags.h"
#include "train_run.h"

// ---------------------------------------------------------------------------
// op_linear by finite differences.
//
// The loss is L = Σ dy ⊙ y for a fixed random dy, so the gradients are the
// backward of dy. The numeric gradient is the central difference of a
// double-precision forward, h = 1e-6·max(1, |x|); the tolerance is stage
// 06's: 1e-4 of the largest numeric gradient of the tensor (float sums of up
// to 65 terms are off by about 4e-6 of it), while a wrong formula is off by
// the size of the gradient itself.

struct linear_case {
    const char *backend;
    int b, in, out;
    double *x, *w, *bias, *dy;  // the point, in double
};

static double linear_loss(const struct linear_case *c)
{
    double L = 0.0;
    for (int i = 0; i < c->b; i++)
        for (int j = 0; j < c->out; j++) {
            double y = c->bias[j];
            for (int p = 0; p < c->in; p++)
                y += c->x[i * c->in + p] * c->w[p * c->out + j];
            L += c->dy[i * c->out + j] * y;
        }
    return L;
}

// Checks grad (n floats) against finite differences of linear_loss in v.
static void expect_fd(const char *what, struct linear_case *c, double *v, long n,
                      const float *grad)
{
    double *num = malloc(sizeof(double) * (size_t)n), big = 0.0;
    for (long j = 0; j < n; j++) {
        double keep = v[j], h = 1e-6 * fmax(1.0, fabs(keep));
        v[j] = keep + h;
        double up = linear_loss(c);
        v[j] = keep - h;
        double down = linear_loss(c);
        v[j] = keep;
        num[j] = (up - down) / (2.0 * h);
        big = fmax(big, fabs(num[j]));
    }
    double tol = 1e-4 * big + 1e-6;
    for (long j = 0; j < n; j++)
        cr_assert(fabs(grad[j] - num[j]) <= tol,
                  "linear %d×%d·%d×%d (%s): %s[%ld] = %.9g, finite differences %.9g "
                  "(tol %.3g)",
                  c->b, c->in, c->in, c->out, c->backend, what, j, grad[j], num[j], tol);
    free(num);
}

// Runs op_linear through backend (NULL: auto) at b×in·in×out and checks its
// output and its three gradients against the double-precision ones.
static void check_linear(const struct gemm_backend *backend, int b, int in, int out,
                         uint64_t seed)
{
    long nx = (long)b * in, nw = (long)in * out, ny = (long)b * out;
    float *xf = filled(nx, seed), *wf = filled(nw, seed + 1), *bf = filled(out, seed + 2),
          *dyf = filled(ny, seed + 3);
    struct tensor *x = tensor_param(2, (int[]){b, in}), *w = tensor_param(2, (int[]){in, out}),
                  *bias = tensor_param(1, (int[]){out});
    memcpy(x->data, xf, sizeof(float) * (size_t)nx);
    memcpy(w->data, wf, sizeof(float) * (size_t)nw);
    memcpy(bias->data, bf, sizeof(float) * (size_t)out);
    struct tape_config config = tape_config_default();
    config.gemm = backend;
    struct tape *t = tape_new(&config);
    struct tensor *y = op_linear(t, x, w, bias);
    cr_assert_not_null(y, "%s", tape_error(t));
    tape_keep(t, y);  // read after the backward
    cr_assert_eq(tape_node_count(t), 1, "linear must be one node, not %d", tape_node_count(t));
    struct tensor *dy = tensor_from(t, 2, (int[]){b, out}, dyf, ny);
    struct tensor *loss = op_sum(t, op_mul(t, y, dy));
    cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));

    struct linear_case c = {tape_config(t)->gemm->name, b, in, out, widened(xf, nx), widened(wf, nw), widened(bf, out),
                            widened(dyf, ny)};
    // The forward too, against the double one.
    for (int i = 0; i < b; i++)
        for (int j = 0; j < out; j++) {
            double want = c.bias[j];
            for (int p = 0; p < in; p++)
                want += c.x[i * in + p] * c.w[p * out + j];
            cr_assert(fabs(y->data[i * out + j] - want) <= 1e-5 * (fabs(want) + 1.0),
                      "linear forward (%s) y[%d][%d] = %.9g, want %.9g", c.backend, i, j,
                      y->data[i * out + j], want);
        }
    expect_fd("dx", &c, c.x, nx, x->grad);
    expect_fd("dw", &c, c.w, nw, w->grad);
    expect_fd("dbias", &c, c.bias, out, bias->grad);
    free(c.x);
    free(c.w);
    free(c.bias);
    free(c.dy);
    free(xf);
    free(wf);
    free(bf);
    free(dyf);
    tensor_free(x);
    tensor_free(w);
    tensor_free(bias);
    tape_free(t);
}

Test(task_7_1, linear_finite_differences, .timeout = 300)
{
    const int shapes[][3] = {{1, 1, 1}, {3, 17, 7}, {65, 7, 3}, {7, 65, 17}, {17, 3, 65},
                             {1, 65, 1}, {65, 1, 17}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        check_linear(NULL, shapes[s][0], shapes[s][1], shapes[s][2], 700 + 10 * s);
}

// Every GEMM backend the driver offers must honour beta = 1 (the forward adds
// x·w onto the bias rows; the backward adds into the gradients) and both
// transpose flags.
Test(task_7_1, linear_on_every_backend, .timeout = 300)
{
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    for (int i = 0; i < count; i++)
        check_linear(&all[i], 17, 65, 7, 800 + i);
}

// Evaluation: no node, no gradient, the same output.
Test(task_7_1, no_grad_records_nothing)
{
    struct tensor *w = tensor_param(2, (int[]){3, 2}), *bias = tensor_param(1, (int[]){2});
    mat_fill_random(w->data, 3, 2, 2, 1);
    bias->data[1] = 1.5f;
    struct tape *t = tape_new(NULL);
    tape_set_recording(t, 0);
    const float xv[3] = {1, 2, 3};
    struct tensor *y = op_linear(t, tensor_from(t, 2, (int[]){1, 3}, xv, 3), w, bias);
    cr_assert_not_null(y, "%s", tape_error(t));
    cr_assert_eq(tape_node_count(t), 0);
    cr_assert_eq(y->requires_grad, 0);
    cr_assert_float_eq(y->data[1], w->data[1] + 2 * w->data[3] + 3 * w->data[5] + 1.5f, 1e-5f);
    tensor_free(w);
    tensor_free(bias);
    tape_free(t);
}

Test(task_7_1, linear_matches_pytorch)
{
    struct golden_set s;
    load_golden("nn_linear.txt", &s);
    struct tensor *x = golden_param(&s, "x"), *w = golden_param(&s, "w"),
                  *bias = golden_param(&s, "bias");
    const struct golden *gdy = find(&s, "dy");
    struct tape *t = tape_new(NULL);
    struct tensor *y = op_linear(t, x, w, bias);
    cr_assert_not_null(y, "%s", tape_error(t));
    tape_keep(t, y);  // read after the backward
    struct tensor *dy = tensor_from(t, gdy->ndim, gdy->shape, gdy->v, gdy->size);
    cr_assert_eq(tape_backward(t, op_sum(t, op_mul(t, y, dy))), 0, "%s", tape_error(t));
    expect_close("y", y->data, find(&s, "y"));
    expect_close("grad_x", x->grad, find(&s, "grad_x"));
    expect_close("grad_w", w->grad, find(&s, "grad_w"));
    expect_close("grad_bias", bias->grad, find(&s, "grad_bias"));
    tensor_free(x);
    tensor_free(w);
    tensor_free(bias);
    tape_free(t);
}

// A layer used twice gets both shares: the backward adds (beta = 1), it does
// not overwrite. y = linear(x) + linear(x) has exactly twice the gradients.
Test(task_7_1, linear_gradients_accumulate)
{
    int b = 3, in = 17, out = 7;
    struct tensor *x = tensor_param(2, (int[]){b, in}), *w = tensor_param(2, (int[]){in, out}),
                  *bias = tensor_param(1, (int[]){out});
    mat_fill_random(x->data, b, in, in, 1);
    mat_fill_random(w->data, in, out, out, 2);
    mat_fill_random(bias->data, 1, out, out, 3);
    float once[3][17 * 7];
    for (int pass = 0; pass < 2; pass++) {
        tensor_zero_grad(x);
        tensor_zero_grad(w);
        tensor_zero_grad(bias);
        struct tape *t = tape_new(NULL);
        struct tensor *y = op_linear(t, x, w, bias);
        if (pass)
            y = op_add(t, y, op_linear(t, x, w, bias));
        cr_assert_eq(tape_backward(t, op_sum(t, op_relu(t, y))), 0, "%s", tape_error(t));
        struct tensor *p[3] = {x, w, bias};
        for (int i = 0; i < 3; i++)
            for (long j = 0; j < p[i]->size; j++) {
                if (!pass)
                    once[i][j] = p[i]->grad[j];
                else
                    cr_assert(fabsf(p[i]->grad[j] - 2.0f * once[i][j]) <=
                                  1e-5f * fabsf(once[i][j]) + 1e-6f,
                              "input %d element %ld: %g after two uses, %g after one", i, j,
                              p[i]->grad[j], once[i][j]);
            }
        tape_free(t);
    }
    tensor_free(x);
    tensor_free(w);
    tensor_free(bias);
}

// A batch of images needs no gradient: only w and bias get one.
Test(task_7_1, linear_input_without_gradient)
{
    struct tape *t = tape_new(NULL);
    const float xv[6] = {1, 2, 3, 4, 5, 6};
    struct tensor *x = tensor_from(t, 2, (int[]){2, 3}, xv, 6);
    struct tensor *w = tensor_param(2, (int[]){3, 1}), *bias = tensor_param(1, (int[]){1});
    w->data[0] = 1.0f;
    w->data[1] = -1.0f;
    w->data[2] = 0.5f;
    bias->data[0] = 0.25f;
    struct tensor *y = op_linear(t, x, w, bias);
    cr_assert_not_null(y);
    cr_assert_float_eq(y->data[0], 1 - 2 + 1.5f + 0.25f, 1e-6f);
    cr_assert_float_eq(y->data[1], 4 - 5 + 3.0f + 0.25f, 1e-6f);
    cr_assert_eq(tape_backward(t, op_sum(t, y)), 0, "%s", tape_error(t));
    cr_assert_null(x->grad, "the batch got a gradient it does not need");
    // dw = xᵀ·1: the column sums of x; dbias = the number of rows.
    cr_assert_float_eq(w->grad[0], 5.0f, 1e-6f);
    cr_assert_float_eq(w->grad[1], 7.0f, 1e-6f);
    cr_assert_float_eq(w->grad[2], 9.0f, 1e-6f);
    cr_assert_float_eq(bias->grad[0], 2.0f, 1e-6f);
    tensor_free(w);
    tensor_free(bias);
    tape_free(t);
}

Test(nn_linear, shape_mismatch_names_op_and_shapes)
{
    struct tape *t = tape_new(NULL);
    struct tensor *x = tensor_new(t, 2, (int[]){7, 17});
    struct tensor *w = tensor_param(2, (int[]){16, 5}), *bias = tensor_param(1, (int[]){5});
    struct tensor *w2 = tensor_param(2, (int[]){17, 5}), *bias2 = tensor_param(1, (int[]){4});
    cr_assert_null(op_linear(t, x, w, bias));
    cr_assert(strstr(tape_error(t), "linear") && strstr(tape_error(t), "7×17") &&
                  strstr(tape_error(t), "16×5"),
              "message: %s", tape_error(t));
    tape_clear(t);
    x = tensor_new(t, 2, (int[]){7, 17});
    cr_assert_null(op_linear(t, x, w2, bias2));
    cr_assert(strstr(tape_error(t), "bias is 4"), "message: %s", tape_error(t));
    // A NULL input (an earlier op failed) gives NULL and keeps the first message.
    char first[256];
    snprintf(first, sizeof first, "%s", tape_error(t));
    cr_assert_null(op_linear(t, NULL, w2, bias));
    cr_assert_null(op_linear(t, x, NULL, bias));
    cr_assert_null(op_linear(t, x, w2, NULL));
    cr_assert_str_eq(tape_error(t), first);
    tensor_free(w);
    tensor_free(bias);
    tensor_free(w2);
    tensor_free(bias2);
    tape_free(t);
}

// ---------------------------------------------------------------------------
// The optimizers against PyTorch, and the vector loops against the scalar.

// The settings tools/torch_golden_07.py used (its ADAM and SGD).
static struct optim_config golden_config(enum optim_kind kind)
{
    struct optim_config c = optim_defaults(kind, kind == OPTIM_ADAM ? 0.01f : 0.1f, 0.01f);
    return c;
}

static void check_optim_golden(enum optim_kind kind)
{
    struct golden_set s;
    load_golden("nn_optim.txt", &s);
    struct tensor *p = golden_param(&s, "p0");
    struct optim_config c = golden_config(kind);
    struct optim *o = optim_new(&c, &p, 1);
    cr_assert_not_null(o);
    for (int step = 1; step <= 3; step++) {
        char name[32];
        snprintf(name, sizeof name, "g%d", step);
        memcpy(p->grad, find(&s, name)->v, sizeof(float) * (size_t)p->size);
        optim_step(o);
        snprintf(name, sizeof name, "%s_p%d", optim_name(kind), step);
        expect_close(name, p->data, find(&s, name));
    }
    cr_assert_eq(optim_steps_taken(o), 3);
    optim_free(o);
    tensor_free(p);
}

Test(task_7_2, adam_matches_pytorch) { check_optim_golden(OPTIM_ADAM); }
Test(nn_optim, sgd_momentum_matches_pytorch) { check_optim_golden(OPTIM_SGD); }

// Three Adam steps of a 5-7-3 MLP on one batch: the layers, the loss and the
// optimizer together, against PyTorch.
Test(task_7_2, mlp_adam_training_matches_pytorch)
{
    struct golden_set s;
    load_golden("nn_train.txt", &s);
    struct nn_model m;
    char err[256];
    cr_assert_eq(nn_mlp_init(&m, 3, (int[]){5, 7, 3}, 1, err, sizeof err), 0, "%s", err);
    const char *names[] = {"w1", "b1", "w2", "b2"};
    for (int i = 0; i < 4; i++) {
        const struct golden *g = find(&s, names[i]);
        cr_assert_eq(m.params[i]->size, g->size, "%s", names[i]);
        memcpy(m.params[i]->data, g->v, sizeof(float) * (size_t)g->size);
    }
    const struct golden *gx = find(&s, "x"), *gl = find(&s, "labels");
    int labels[4];
    for (int i = 0; i < 4; i++)
        labels[i] = (int)gl->v[i];
    struct optim_config c = golden_config(OPTIM_ADAM);
    struct optim *o = optim_new(&c, m.params, m.nparams);
    struct tape *t = tape_new(NULL);
    float losses[3];
    for (int step = 0; step < 3; step++) {
        tape_clear(t);
        struct tensor *x = tensor_from(t, 2, gx->shape, gx->v, gx->size);
        struct tensor *loss = op_cross_entropy(t, m.forward(&m, t, x), labels, 4);
        nn_zero_grad(&m);
        cr_assert_eq(tape_backward(t, loss), 0, "%s", tape_error(t));
        losses[step] = loss->data[0];
        optim_step(o);
    }
    expect_close("losses", losses, find(&s, "losses"));
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "final_%s", names[i]);
        expect_close(name, m.params[i]->data, find(&s, name));
    }
    tape_free(t);
    optim_free(o);
    nn_model_free(&m);
}

enum { MAX_N = 1000 };

// Random parameters, gradients and state, with a zero, a −0 and a large
// gradient among them; v (Adam's second moment) is never negative.
static void fill_state(long n, float *p, float *g, float *m, float *v, uint64_t seed)
{
    mat_fill_random(p, 1, (int)n, (int)n, seed);
    mat_fill_random(g, 1, (int)n, (int)n, seed + 1);
    mat_fill_random(m, 1, (int)n, (int)n, seed + 2);
    mat_fill_random(v, 1, (int)n, (int)n, seed + 3);
    for (long i = 0; i < n; i++)
        v[i] = fabsf(v[i]) * 0.01f;
    g[n / 2] = 0.0f;
    p[n / 3] = -0.0f;
    g[n - 1] = 1e4f;
}

static void same_bits(const char *what, const float *want, const float *got, long n)
{
    for (long i = 0; i < n; i++)
        cr_assert(memcmp(&want[i], &got[i], sizeof(float)) == 0,
                  "%s[%ld] = %.9g, the scalar loop gives %.9g (n = %ld)", what, i, got[i],
                  want[i], n);
}

// Every update loop of isa gives the scalar loop's bits, at lengths around
// and far beyond the vector width.
static void optim_same_bits(enum isa isa, int adam)
{
    if (!isa_supported(isa))
        cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    const struct optim_kernels *k = optim_kernels(isa);
    cr_assert_eq(k->isa, isa);
    static float p[2][MAX_N], g[MAX_N], m[2][MAX_N], v[2][MAX_N];
    const long sizes[] = {1, 7, 17, 65, MAX_N};
    const struct adam_step steps[] = {
        {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f,
         .bias1 = 0.1f, .bias2 = 0.001f},
        {.lr = 0.01f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f, .weight_decay = 0.01f,
         .bias1 = 0.9999f, .bias2 = 0.63f}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int c = 0; c < 2; c++) {
            long n = sizes[s];
            fill_state(n, p[0], g, m[0], v[0], 100 * s + (uint64_t)c);
            memcpy(p[1], p[0], sizeof p[0]);
            memcpy(m[1], m[0], sizeof m[0]);
            memcpy(v[1], v[0], sizeof v[0]);
            if (adam) {
                adam_update_scalar(n, p[0], g, m[0], v[0], &steps[c]);
                k->adam(n, p[1], g, m[1], v[1], &steps[c]);
                same_bits("adam m", m[0], m[1], n);
                same_bits("adam v", v[0], v[1], n);
            } else {
                sgd_update_scalar(n, p[0], g, m[0], 0.1f, c ? 0.0f : 0.9f, c ? 0.01f : 0.0f);
                k->sgd(n, p[1], g, m[1], 0.1f, c ? 0.0f : 0.9f, c ? 0.01f : 0.0f);
                same_bits("sgd v", m[0], m[1], n);
            }
            same_bits(adam ? "adam p" : "sgd p", p[0], p[1], n);
        }
}

Test(task_7_2, adam_avx2_same_bits_as_scalar) { optim_same_bits(ISA_AVX2, 1); }
Test(task_7_2, adam_avx512_same_bits_as_scalar) { optim_same_bits(ISA_AVX512, 1); }
Test(task_7_2, adam_neon_same_bits_as_scalar) { optim_same_bits(ISA_NEON, 1); }
Test(nn_optim, sgd_avx2_same_bits_as_scalar) { optim_same_bits(ISA_AVX2, 0); }
Test(nn_optim, sgd_avx512_same_bits_as_scalar) { optim_same_bits(ISA_AVX512, 0); }
Test(nn_optim, sgd_neon_same_bits_as_scalar) { optim_same_bits(ISA_NEON, 0); }

// Adam's first step moves every weight by about lr, whatever its gradient's
// scale: m̂/√v̂ = g/|g| at t = 1. A check of the formula that needs no golden file.
Test(task_7_2, adam_first_step_is_lr_sized)
{
    const float grads[] = {1e-4f, -3.0f, 250.0f, -0.02f};
    struct tensor *p = tensor_param(1, (int[]){4});
    struct optim_config c = optim_defaults(OPTIM_ADAM, 0.001f, 0.0f);
    struct optim *o = optim_new(&c, &p, 1);
    memcpy(p->grad, grads, sizeof grads);
    optim_step(o);
    for (int i = 0; i < 4; i++)
        cr_assert(fabsf(p->data[i] + copysignf(0.001f, grads[i])) < 1e-6f,
                  "p[%d] = %g after one step of gradient %g", i, p->data[i], grads[i]);
    optim_free(o);
    tensor_free(p);
}

// The update shared among threads: the same bits on 1, 2 and 3 threads,
// with parameters whose sizes do not divide evenly (the runs' ends fall
// inside them and between them), for both optimizers.
Test(nn_optim, the_same_bits_on_any_thread_count)
{
    const int shapes[3] = {70001, 17, 100003};
    float *after[3][3];
    for (int kind = 0; kind < 2; kind++) {
        for (int threads = 1; threads <= 3; threads++) {
            struct tensor *p[3];
            for (int i = 0; i < 3; i++) {
                p[i] = tensor_param(1, &shapes[i]);
                cr_assert_not_null(p[i]);
                mat_fill_random(p[i]->data, 1, shapes[i], shapes[i], 10 + (uint64_t)i);
            }
            struct optim_config c =
                optim_defaults(kind ? OPTIM_ADAM : OPTIM_SGD, 1e-2f, kind ? 0.01f : 0.0f);
            struct optim *o = optim_new(&c, p, 3);
            cr_assert_not_null(o);
            optim_set_threads(o, threads);
            for (int step = 0; step < 3; step++) {
                for (int i = 0; i < 3; i++)
                    mat_fill_random(p[i]->grad, 1, shapes[i], shapes[i],
                                    100 * (uint64_t)step + (uint64_t)i);
                optim_step(o);
            }
            for (int i = 0; i < 3; i++) {
                after[threads - 1][i] = malloc(sizeof(float) * (size_t)shapes[i]);
                memcpy(after[threads - 1][i], p[i]->data, sizeof(float) * (size_t)shapes[i]);
                tensor_free(p[i]);
            }
            optim_free(o);
        }
        for (int threads = 2; threads <= 3; threads++)
            for (int i = 0; i < 3; i++) {
                long first = first_difference(after[0][i], after[threads - 1][i], shapes[i]);
                cr_assert_eq(first, -1, "%s, parameter %d float %ld: %.9g on 1 thread, %.9g "
                             "on %d", kind ? "adam" : "sgd", i, first,
                             first >= 0 ? (double)after[0][i][first] : 0.0,
                             first >= 0 ? (double)after[threads - 1][i][first] : 0.0, threads);
            }
        for (int threads = 0; threads < 3; threads++)
            for (int i = 0; i < 3; i++)
                free(after[threads][i]);
    }
}

// A forgotten gradient holds nothing: the backward's first GEMM writes it
// (whatever its floats were, NaN here), a second use adds, and one no
// backward reached counts as zero for the optimizer. The same bits as the
// zeroed gradients give.
Test(nn_optim, forgotten_gradients_are_written_then_added)
{
    int b = 5, in = 17, out = 7;
    struct tensor *x = tensor_param(2, (int[]){b, in}), *w = tensor_param(2, (int[]){in, out}),
                  *unused = tensor_param(1, (int[]){9});
    mat_fill_random(x->data, b, in, in, 1);
    mat_fill_random(w->data, in, out, out, 2);
    mat_fill_random(unused->data, 1, 9, 9, 3);
    float zeroed[2][17 * 7];
    for (int pass = 0; pass < 2; pass++) {
        struct tensor *p[2] = {x, w};
        for (int i = 0; i < 2; i++) {
            if (pass) {
                for (long j = 0; j < p[i]->size; j++)
                    p[i]->grad[j] = NAN;
                tensor_forget_grad(p[i]);
            } else {
                tensor_zero_grad(p[i]);
            }
        }
        struct tape *t = tape_new(NULL);
        // w used twice: x·w + x·w, each matmul's backward a GEMM into dx and dw.
        struct tensor *y = op_add(t, op_matmul(t, x, w), op_matmul(t, x, w));
        cr_assert_eq(tape_backward(t, op_sum(t, op_relu(t, y))), 0, "%s", tape_error(t));
        for (int i = 0; i < 2; i++) {
            cr_assert_eq(p[i]->grad_forgotten, 0, "input %d's gradient was written", i);
            for (long j = 0; j < p[i]->size; j++) {
                if (!pass)
                    zeroed[i][j] = p[i]->grad[j];
                else
                    cr_assert(memcmp(&p[i]->grad[j], &zeroed[i][j], sizeof(float)) == 0,
                              "input %d element %ld: %.9g written, %.9g zeroed", i, j,
                              (double)p[i]->grad[j], (double)zeroed[i][j]);
            }
        }
        tape_free(t);
    }
    // No backward reaches `unused`: Adam sees a zero gradient and leaves it.
    float before[9];
    memcpy(before, unused->data, sizeof before);
    for (int j = 0; j < 9; j++)
        unused->grad[j] = NAN;
    tensor_forget_grad(unused);
    struct optim_config c = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
    struct optim *o = optim_new(&c, &unused, 1);
    optim_step(o);
    for (int j = 0; j < 9; j++)
        cr_assert_eq(unused->data[j], before[j], "element %d: %g, was %g", j,
                     (double)unused->data[j], (double)before[j]);
    optim_free(o);
    tensor_free(x);
    tensor_free(w);
    tensor_free(unused);
}

// With accumulate set, a forgotten gradient is zeroed when first reached and
// every GEMM adds: the old way, the same values.
Test(nn_optim, accumulate_zeroes_a_forgotten_gradient_first)
{
    struct tensor *x = tensor_param(2, (int[]){3, 4}), *w = tensor_param(2, (int[]){4, 2});
    mat_fill_random(x->data, 3, 4, 4, 5);
    mat_fill_random(w->data, 4, 2, 2, 6);
    for (int j = 0; j < 8; j++)
        w->grad[j] = NAN;
    tensor_forget_grad(w);
    struct tape_config config = tape_config_default();
    config.accumulate = 1;
    struct tape *t = tape_new(&config);
    cr_assert_eq(tape_backward(t, op_sum(t, op_matmul(t, x, w))), 0, "%s", tape_error(t));
    // d(sum x·w)/dw[p][j] = Σᵢ x[i][p]
    for (int p = 0; p < 4; p++)
        for (int j = 0; j < 2; j++) {
            double want = 0;
            for (int i = 0; i < 3; i++)
                want += x->data[i * 4 + p];
            cr_assert(fabs(w->grad[p * 2 + j] - want) < 1e-5, "dw[%d][%d] = %g, want %g", p, j,
                      (double)w->grad[p * 2 + j], want);
        }
    tape_free(t);
    tensor_free(x);
    tensor_free(w);
}

Test(nn_optim, config_names_and_rejections)
{
    enum optim_kind k;
    cr_assert_eq(optim_parse("adam", &k), 0);
    cr_assert_eq(k, OPTIM_ADAM);
    cr_assert_eq(optim_parse("sgd", &k), 0);
    cr_assert_eq(k, OPTIM_SGD);
    cr_assert_eq(optim_parse("Adam", &k), -1);
    cr_assert_eq(optim_parse("", &k), -1);
    cr_assert_str_eq(optim_name(OPTIM_ADAM), "adam");
    cr_assert_str_eq(optim_name(OPTIM_SGD), "sgd");
    struct optim_config d = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
    cr_assert(d.beta1 == 0.9f && d.beta2 == 0.999f && d.eps == 1e-8f && d.momentum == 0.9f);

    struct tensor *p = tensor_param(1, (int[]){3});
    struct optim_config bad[6];
    for (int i = 0; i < 6; i++)
        bad[i] = optim_defaults(i < 3 ? OPTIM_ADAM : OPTIM_SGD, 0.01f, 0.0f);
    bad[0].lr = 0.0f;
    bad[1].beta2 = 1.0f;
    bad[2].eps = NAN;
    bad[3].momentum = 1.0f;
    bad[4].lr = NAN;
    bad[5].weight_decay = -1.0f;
    for (int i = 0; i < 6; i++)
        cr_assert_null(optim_new(&bad[i], &p, 1), "config %d should be refused", i);
    tensor_free(p);
}

// ---------------------------------------------------------------------------
// The MLP.

Test(nn_mlp, init_shapes_desc_and_counts)
{
    struct nn_model m;
    char err[256];
    cr_assert_eq(nn_mlp_init(&m, 3, (int[]){784, 256, 10}, 42, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(m.desc, "mlp 784,256,10");
    cr_assert_eq(m.nparams, 4);
    const int shapes[4][2] = {{784, 256}, {256, 0}, {256, 10}, {10, 0}};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(m.params[i]->ndim, shapes[i][1] ? 2 : 1, "param %d", i);
        cr_assert_eq(m.params[i]->shape[0], shapes[i][0], "param %d", i);
        if (shapes[i][1])
            cr_assert_eq(m.params[i]->shape[1], shapes[i][1], "param %d", i);
        cr_assert(m.params[i]->requires_grad);
    }
    cr_assert_eq(nn_param_count(&m), 784L * 256 + 256 + 256 * 10 + 10);
    cr_assert_eq(m.inputs, 784);
    cr_assert_float_eq(m.forward_flops, 2.0 * (784 * 256 + 256 * 10), 0.5);
    // A step: forward and dW of both layers, dX of the second only.
    cr_assert_float_eq(m.train_flops, 818176.0, 0.5);
    // He: mean 0, standard deviation √(2/in); over 200,704 samples the
    // sample sd is within 1 % of it and the mean within 5 standard errors.
    for (int l = 0; l < 2; l++) {
        struct tensor *w = m.params[2 * l], *b = m.params[2 * l + 1];
        double sum = 0.0, sq = 0.0, sd = sqrt(2.0 / w->shape[0]);
        for (long i = 0; i < w->size; i++) {
            sum += w->data[i];
            sq += (double)w->data[i] * w->data[i];
        }
        double mean = sum / w->size, got = sqrt(sq / w->size - mean * mean);
        cr_assert(fabs(mean) < 5.0 * sd / sqrt((double)w->size), "layer %d mean %g", l, mean);
        cr_assert(fabs(got / sd - 1.0) < (l == 0 ? 0.01 : 0.05), "layer %d: sd %g, want %g", l,
                  got, sd);
        for (long i = 0; i < b->size; i++)
            cr_assert(b->data[i] == 0.0f, "layer %d bias %ld = %g", l, i, b->data[i]);
    }
    nn_model_free(&m);
    cr_assert_eq(m.nparams, 0);
}

Test(nn_mlp, same_seed_same_bits)
{
    struct nn_model a, b, c;
    char err[256];
    const int sizes[] = {17, 7, 3};
    cr_assert_eq(nn_mlp_init(&a, 3, sizes, 5, err, sizeof err), 0);
    cr_assert_eq(nn_mlp_init(&b, 3, sizes, 5, err, sizeof err), 0);
    cr_assert_eq(nn_mlp_init(&c, 3, sizes, 6, err, sizeof err), 0);
    for (int i = 0; i < a.nparams; i++)
        cr_assert(memcmp(a.params[i]->data, b.params[i]->data,
                         sizeof(float) * (size_t)a.params[i]->size) == 0);
    cr_assert(memcmp(a.params[0]->data, c.params[0]->data, sizeof(float) * 17 * 7) != 0,
              "another seed gave the same weights");
    // nn_normal: the same stream from the same state, mean 0 and sd 1.
    uint64_t s1 = 9, s2 = 9;
    double sum = 0.0, sq = 0.0;
    for (int i = 0; i < 100000; i++) {
        double z = nn_normal(&s1);
        cr_assert(z == nn_normal(&s2) && isfinite(z));
        sum += z;
        sq += z * z;
    }
    cr_assert(fabs(sum / 100000) < 0.02 && fabs(sq / 100000 - 1.0) < 0.02);
    nn_model_free(&a);
    nn_model_free(&b);
    nn_model_free(&c);
}

Test(nn_mlp, forward_zero_grad_and_bad_sizes)
{
    struct nn_model m;
    char err[256];
    cr_assert_eq(nn_mlp_init(&m, 4, (int[]){5, 7, 6, 3}, 1, err, sizeof err), 0);
    struct tape *t = tape_new(NULL);
    struct tensor *x = tensor_new(t, 2, (int[]){4, 5});
    mat_fill_random(x->data, 4, 5, 5, 3);
    struct tensor *y = m.forward(&m, t, x);
    cr_assert_not_null(y, "%s", tape_error(t));
    cr_assert(y->ndim == 2 && y->shape[0] == 4 && y->shape[1] == 3);
    cr_assert_eq(tape_node_count(t), 5, "linear relu linear relu linear: %d nodes",
                 tape_node_count(t));
    int labels[4] = {0, 1, 2, 1};
    cr_assert_eq(tape_backward(t, op_cross_entropy(t, y, labels, 4)), 0);
    nn_zero_grad(&m);
    for (int i = 0; i < m.nparams; i++)
        for (long j = 0; j < m.params[i]->size; j++)
            cr_assert(m.params[i]->grad[j] == 0.0f);
    // A batch of the wrong width: the linear layer says so.
    tape_clear(t);
    cr_assert_null(m.forward(&m, t, tensor_new(t, 2, (int[]){4, 6})));
    cr_assert(strstr(tape_error(t), "linear"), "%s", tape_error(t));
    tape_free(t);
    nn_model_free(&m);

    cr_assert_eq(nn_mlp_init(&m, 1, (int[]){5}, 1, err, sizeof err), -1);
    cr_assert_eq(nn_mlp_init(&m, 2, (int[]){5, 0}, 1, err, sizeof err), -1);
    cr_assert(strstr(err, "0"), "%s", err);
    cr_assert_eq(nn_mlp_init(&m, 2, (int[]){70000, 3}, 1, err, sizeof err), -1);
    int many[NN_MAX_LAYERS + 2];
    for (int i = 0; i < NN_MAX_LAYERS + 2; i++)
        many[i] = 3;
    cr_assert_eq(nn_mlp_init(&m, NN_MAX_LAYERS + 2, many, 1, err, sizeof err), -1);
    cr_assert_eq(nn_mlp_init(&m, NN_MAX_LAYERS + 1, many, 1, err, sizeof err), 0, "%s", err);
    nn_model_free(&m);
}

Test(nn_mlp, parse_sizes)
{
    int s[NN_MAX_LAYERS + 1];
    cr_assert_eq(nn_parse_sizes("784,256,10", s, 9), 3);
    cr_assert(s[0] == 784 && s[1] == 256 && s[2] == 10);
    cr_assert_eq(nn_parse_sizes("784,128,64,10", s, 9), 4);
    cr_assert_eq(s[3], 10);
    const char *bad[] = {"", "784,,10", "0,10", "784", "1,2,3,4,5,6,7,8,9,10", "a,b",
                         "784,256,10,", ",784,10", "784;10", "784, 10", "-5,10", "99999999999,1",
                         "70000,10", "784,10x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(nn_parse_sizes(bad[i], s, 9), -1, "\"%s\" was accepted", bad[i]);
    cr_assert_eq(nn_parse_sizes(NULL, s, 9), -1);
}

// ---------------------------------------------------------------------------
// Checkpoints.

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/test07-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

// Removes the files the tests write, then the directory: rmdir fails if
// anything else is left in it (a .tmp file, say).
static void remove_dir(void)
{
    const char *names[] = {"model.ckpt", "good.ckpt", "bad.ckpt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        remove(path);
    }
    cr_assert_eq(rmdir(dir), 0, "%s: files left behind", dir);
}

static void small_model(struct nn_model *m, int hidden, uint64_t seed)
{
    char err[256];
    cr_assert_eq(nn_mlp_init(m, 3, (int[]){5, hidden, 3}, seed, err, sizeof err), 0, "%s", err);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static unsigned char buf[4096];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return buf;
}

static void spill(const char *path, const unsigned char *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

static int same_params(const struct nn_model *a, const struct nn_model *b)
{
    for (int i = 0; i < a->nparams; i++)
        if (memcmp(a->params[i]->data, b->params[i]->data,
                   sizeof(float) * (size_t)a->params[i]->size) != 0)
            return 0;
    return 1;
}

// Loading path into m fails with a message naming the file and containing
// `what`, and leaves m as it was (compared with its twin `was`).
static void expect_refused(const char *path, struct nn_model *m, const struct nn_model *was,
                           const char *what)
{
    char err[512] = "";
    cr_assert_eq(checkpoint_load(path, m, err, sizeof err), -1, "%s was accepted (%s)", path,
                 what);
    cr_assert(strstr(err, path), "the message names no file: %s", err);
    cr_assert(strstr(err, what), "want \"%s\" in: %s", what, err);
    cr_assert(same_params(m, was), "a failed load changed the model (%s)", what);
}

Test(nn_checkpoint, round_trip_is_bit_exact_and_leaves_no_tmp)
{
    make_dir();
    struct nn_model a, b;
    small_model(&a, 7, 1);
    small_model(&b, 7, 2);
    a.params[1]->data[0] = NAN;
    a.params[3]->data[2] = -0.0f;
    char path[128], tmp[160], err[256];
    snprintf(path, sizeof path, "%s/model.ckpt", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_assert_eq(checkpoint_save(path, &a, err, sizeof err), 0, "%s", err);
    cr_assert_neq(access(tmp, F_OK), 0, "%s left behind", tmp);
    cr_assert(!same_params(&a, &b));
    cr_assert_eq(checkpoint_load(path, &b, err, sizeof err), 0, "%s", err);
    cr_assert(same_params(&a, &b), "the loaded model differs from the saved one");
    // Saving again replaces the file.
    a.params[0]->data[0] = 123.0f;
    cr_assert_eq(checkpoint_save(path, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(checkpoint_load(path, &b, err, sizeof err), 0, "%s", err);
    cr_assert(b.params[0]->data[0] == 123.0f);
    nn_model_free(&a);
    nn_model_free(&b);
    remove_dir();
}

Test(nn_checkpoint, refuses_every_bad_file_and_keeps_the_model)
{
    make_dir();
    struct nn_model m, was, other;
    small_model(&m, 7, 1);
    small_model(&was, 7, 1);
    small_model(&other, 7, 9);
    char good[128], bad[128], err[256];
    snprintf(good, sizeof good, "%s/good.ckpt", dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    cr_assert_eq(checkpoint_save(good, &other, err, sizeof err), 0, "%s", err);
    size_t len;
    unsigned char *bytes = slurp(good, &len);
    unsigned char copy[4096];
    cr_assert(len < sizeof copy);

    snprintf(bad, sizeof bad, "%s/missing.ckpt", dir);
    expect_refused(bad, &m, &was, "No such file");
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    expect_refused(dir, &m, &was, "cannot read");  // a directory

    spill(bad, (const unsigned char *)"P5\n28 28\n255\n", 13);
    expect_refused(bad, &m, &was, "not a checkpoint");

    memcpy(copy, bytes, len);
    copy[8] = 2;  // the version, little-endian
    spill(bad, copy, len);
    expect_refused(bad, &m, &was, "version 2");

    const size_t cuts[] = {0, 3, 8, 11, 50, 79, 80, 99, 150, len - 33, len - 32, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        spill(bad, bytes, cuts[i]);
        expect_refused(bad, &m, &was, cuts[i] < 8 ? "not a checkpoint" : "truncated");
    }
    memcpy(copy, bytes, len);
    copy[len] = 0;
    spill(bad, copy, len + 1);
    expect_refused(bad, &m, &was, "too long");

    // One flipped bit in the floats, in the digest: the checksum catches it.
    const size_t flips[] = {len / 2, len - 40, len - 1};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        memcpy(copy, bytes, len);
        copy[flips[i]] ^= 0x10;
        spill(bad, copy, len);
        expect_refused(bad, &m, &was, "checksum");
    }
    // Any one byte changed, anywhere, header included: refused, no crash.
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, bytes, len);
        copy[i] ^= 0x5a;
        spill(bad, copy, len);
        char err2[512];
        cr_assert_eq(checkpoint_load(bad, &m, err2, sizeof err2), -1, "byte %zu changed: loaded",
                     i);
        cr_assert(strstr(err2, bad), "%s", err2);
    }
    cr_assert(same_params(&m, &was));
    nn_model_free(&other);

    // Another model: other sizes (another desc).
    small_model(&other, 8, 1);
    cr_assert_eq(checkpoint_save(bad, &other, err, sizeof err), 0, "%s", err);
    expect_refused(bad, &m, &was, "mlp 5,8,3");
    // The same desc and count but another shape; and another count.
    snprintf(other.desc, sizeof other.desc, "%s", m.desc);
    cr_assert_eq(checkpoint_save(bad, &other, err, sizeof err), 0, "%s", err);
    expect_refused(bad, &m, &was, "shape");
    other.nparams = 2;
    cr_assert_eq(checkpoint_save(bad, &other, err, sizeof err), 0, "%s", err);
    other.nparams = 4;
    expect_refused(bad, &m, &was, "2 parameters");

    // Saving into a directory that does not exist: a clear error, no file.
    char nowhere[160];
    snprintf(nowhere, sizeof nowhere, "%s/no/such/dir/model.ckpt", dir);
    cr_assert_eq(checkpoint_save(nowhere, &m, err, sizeof err), -1);
    cr_assert(strstr(err, "no/such/dir") && strstr(err, "No such file"), "%s", err);

    nn_model_free(&m);
    nn_model_free(&was);
    nn_model_free(&other);
    remove_dir();
}

// ---------------------------------------------------------------------------
// The training loop (common/nn/train.c): one step (task 7.3), an epoch, the
// evaluation, determinism across thread counts and the zero-allocation
// promise. Data: the committed sample (datasets/sample), always present.

// A model, its optimizer and a trainer over the sample, built in one go.
struct train_fixture {
    struct dataset ds;
    struct nn_model m;
    struct optim *o;
    struct trainer tr;
};

static void train_fixture_init_config(struct train_fixture *f, const char *layers, int batch,
                                      uint64_t seed, const struct tape_config *config);

static void train_fixture_init_memory(struct train_fixture *f, const char *layers, int batch,
                                      uint64_t seed, const struct gemm_backend *backend,
                                      enum memory_mode memory)
{
    struct tape_config config = tape_config_default();
    config.gemm = backend;
    config.memory = memory;
    train_fixture_init_config(f, layers, batch, seed, &config);
}

static void train_fixture_init_config(struct train_fixture *f, const char *layers, int batch,
                                      uint64_t seed, const struct tape_config *config)
{
    char err[4096];
    memset(f, 0, sizeof *f);
    cr_assert_eq(dataset_load("sample", NULL, &f->ds, err, sizeof err), 0, "%s", err);
    int sizes[NN_MAX_LAYERS + 1];
    int n = nn_parse_sizes(layers, sizes, NN_MAX_LAYERS + 1);
    cr_assert_geq(n, 2, "nn_parse_sizes(\"%s\")", layers);
    cr_assert_eq(nn_mlp_init(&f->m, n, sizes, seed, err, sizeof err), 0, "%s", err);
    struct optim_config c = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
    f->o = optim_new(&c, f->m.params, f->m.nparams);
    cr_assert_not_null(f->o);
    cr_assert_eq(trainer_init(&f->tr, config, batch, f->ds.train.pixels, f->ds.train.count,
                              err, sizeof err),
                 0, "%s", err);
    f->tr.progress = 0;  // no bar in the test log, even on a terminal
}

static void train_fixture_init(struct train_fixture *f, const char *layers, int batch,
                               uint64_t seed, const struct gemm_backend *backend)
{
    train_fixture_init_memory(f, layers, batch, seed, backend, tape_config_default().memory);
}

static void train_fixture_free(struct train_fixture *f)
{
    trainer_free(&f->tr);
    optim_free(f->o);
    nn_model_free(&f->m);
    dataset_free(&f->ds);
}

// Fills the trainer's batch with images start..start+batch of the train split.
static int train_fixture_batch(struct train_fixture *f, int start)
{
    return dataset_batch(&f->ds.train, NULL, start, f->tr.batch, f->tr.x, f->tr.y);
}

// Task 7.3: the training step.

Test(task_7_3, a_step_lowers_the_loss_on_a_fixed_batch)
{
    struct train_fixture f;
    train_fixture_init(&f, "784,64,10", 64, 3, NULL);
    int b = train_fixture_batch(&f, 0);
    cr_assert_eq(b, 64);
    float first = 0.0f, loss = 0.0f;
    for (int step = 0; step < 10; step++) {
        cr_assert_eq(train_step(f.tr.tape, &f.m, f.o, f.tr.x, f.tr.y, b, &loss), 0,
                     "step %d: %s", step, tape_error(f.tr.tape));
        cr_assert(isfinite(loss), "step %d: loss %g", step, (double)loss);
        if (step == 0)
            first = loss;
    }
    // Ten Adam steps of lr 1e-3 on one batch of 64: the loss of a fresh
    // 10-class model (about ln 10 = 2.3) falls well below where it started.
    cr_assert_gt(first, 1.0f, "the first loss is %g, not that of an untrained model",
                 (double)first);
    cr_assert_lt(loss, 0.8f * first, "loss %g after ten steps, %g at the first", (double)loss,
                 (double)first);
    cr_assert_eq(optim_steps_taken(f.o), 10, "each step runs the optimizer once");
    train_fixture_free(&f);
}

Test(task_7_3, an_epoch_on_the_sample_lifts_accuracy_well_above_chance)
{
    struct train_fixture f;
    char err[4096];
    train_fixture_init(&f, "784,64,10", 32, 5, NULL);
    double loss0, acc0, loss1, acc1;
    cr_assert_eq(evaluate(&f.tr, &f.m, &f.ds.test, &loss0, &acc0, err, sizeof err), 0, "%s",
                 err);
    struct epoch_stats st;
    cr_assert_eq(train_epoch(&f.tr, &f.m, f.o, &f.ds.train, 5, 1, &st, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(evaluate(&f.tr, &f.m, &f.ds.test, &loss1, &acc1, err, sizeof err), 0, "%s",
                 err);
    // Ten classes: chance is 10 %. One epoch of 1,600 images reaches about
    // 70 % on Fashion-MNIST's sample.
    cr_assert_gt(acc1, 0.5, "test accuracy %.1f %% after one epoch", 100 * acc1);
    cr_assert_lt(loss1, loss0, "test loss %g after an epoch, %g before", loss1, loss0);
    cr_assert(st.train_loss > 0 && isfinite(st.train_loss), "train loss %g", st.train_loss);
    train_fixture_free(&f);
}

// The trainer around the step.

// The parameters after three steps on the sample's first three batches.
static float *params_after_steps_config(int threads, const struct tape_config *config,
                                        long *count)
{
    omp_set_num_threads(threads);
    struct train_fixture f;
    train_fixture_init_config(&f, "784,256,10", 64, 11, config);
    for (int step = 0; step < 3; step++) {
        int b = train_fixture_batch(&f, step * 64);
        float loss;
        cr_assert_eq(train_step(f.tr.tape, &f.m, f.o, f.tr.x, f.tr.y, b, &loss), 0, "%s",
                     tape_error(f.tr.tape));
    }
    long n = nn_param_count(&f.m), at = 0;
    float *all = malloc((size_t)n * sizeof *all);
    cr_assert_not_null(all);
    for (int i = 0; i < f.m.nparams; i++) {
        memcpy(all + at, f.m.params[i]->data, (size_t)f.m.params[i]->size * sizeof *all);
        at += f.m.params[i]->size;
    }
    *count = n;
    train_fixture_free(&f);
    return all;
}

static float *params_after_steps(int threads, const struct gemm_backend *backend,
                                 enum memory_mode memory, long *count)
{
    struct tape_config config = tape_config_default();
    config.gemm = backend;
    config.memory = memory;
    return params_after_steps_config(threads, &config, count);
}

Test(train, the_same_bits_on_one_and_two_threads)
{
    int before = omp_get_max_threads();
    const struct gemm_backend *backend = gemm_backend_find("auto");
    cr_assert_not_null(backend);
    long n1, n2;
    float *one = params_after_steps(1, backend, MEMORY_PLANNED, &n1);
    float *two = params_after_steps(2, backend, MEMORY_PLANNED, &n2);
    omp_set_num_threads(before);
    cr_assert_eq(n1, n2);
    long first = first_difference(one, two, n1);
    cr_assert_eq(first, -1, "parameter float %ld differs: %.9g on 1 thread, %.9g on 2", first,
                 first >= 0 ? (double)one[first] : 0.0, first >= 0 ? (double)two[first] : 0.0);
    free(one);
    free(two);
}

// The arena and planned memory: the same bits after three steps, on 1 and
// on 2 threads (steps 2 and 3 run in the plan's block).
static void mlp_same_bits_memory(int threads)
{
    int before = omp_get_max_threads();
    const struct gemm_backend *backend = gemm_backend_find("auto");
    long n1, n2;
    float *arena = params_after_steps(threads, backend, MEMORY_ARENA, &n1);
    float *planned = params_after_steps(threads, backend, MEMORY_PLANNED, &n2);
    omp_set_num_threads(before);
    cr_assert_eq(n1, n2);
    long first = first_difference(arena, planned, n1);
    cr_assert_eq(first, -1, "%d threads: parameter float %ld differs: %.9g with the arena, "
                 "%.9g planned", threads, first, first >= 0 ? (double)arena[first] : 0.0,
                 first >= 0 ? (double)planned[first] : 0.0);
    free(arena);
    free(planned);
}

Test(planner, mlp_the_same_bits_arena_and_planned_one_thread) { mlp_same_bits_memory(1); }
Test(planner, mlp_the_same_bits_arena_and_planned_two_threads) { mlp_same_bits_memory(2); }

// The parameters after three steps with tape config a and with b, on the
// given thread count: the same bits, or the first float that differs.
static void mlp_same_bits_configs(int threads, const struct tape_config *a,
                                  const struct tape_config *b, const char *as,
                                  const char *bs)
{
    int before = omp_get_max_threads();
    long n1, n2;
    float *pa = params_after_steps_config(threads, a, &n1);
    float *pb = params_after_steps_config(threads, b, &n2);
    omp_set_num_threads(before);
    cr_assert_eq(n1, n2);
    long first = first_difference(pa, pb, n1);
    cr_assert_eq(first, -1, "%d threads, %s: parameter float %ld differs: %.9g %s, %.9g %s",
                 threads, tape_memory_name(a->memory), first,
                 first >= 0 ? (double)pa[first] : 0.0, as,
                 first >= 0 ? (double)pb[first] : 0.0, bs);
    free(pa);
    free(pb);
}

// Gradients written by their first GEMM (beta = 0, no zeroing) against
// gradients zeroed and added into (the tape's accumulate): the same sums in
// the same order, so the same bits after three steps, on 1 and 2 threads,
// in the arena and planned.
static void mlp_same_bits_written(int threads, enum memory_mode memory)
{
    struct tape_config written = tape_config_default();
    written.memory = memory;
    struct tape_config zeroed = written;
    zeroed.accumulate = 1;
    mlp_same_bits_configs(threads, &written, &zeroed, "written", "zeroed and added");
}

Test(train, first_gemm_writes_the_same_bits_one_thread_planned)
{
    mlp_same_bits_written(1, MEMORY_PLANNED);
}
Test(train, first_gemm_writes_the_same_bits_two_threads_planned)
{
    mlp_same_bits_written(2, MEMORY_PLANNED);
}
Test(train, first_gemm_writes_the_same_bits_two_threads_arena)
{
    mlp_same_bits_written(2, MEMORY_ARENA);
}

// The linear layer's bias rows and column sums a row at a time (memcpy, the
// vector loop) against one float at a time (tape_config.plain_bias): each
// column summed in the same order, so the same bits after three steps.
static void mlp_same_bits_bias_rows(int threads)
{
    struct tape_config rows = tape_config_default();
    struct tape_config plain = rows;
    plain.plain_bias = 1;
    mlp_same_bits_configs(threads, &rows, &plain, "a row at a time", "a float at a time");
}

Test(train, bias_by_rows_the_same_bits_one_thread) { mlp_same_bits_bias_rows(1); }
Test(train, bias_by_rows_the_same_bits_two_threads) { mlp_same_bits_bias_rows(2); }

// From the second step on, a training step (the batch, the forward, the
// backward, Adam) calls malloc zero times, with either memory: every heap
// allocation of the process is counted (malloc_count.h), in our code,
// libgomp's and libc's; and what the tape holds does not grow.
static void mlp_zero_alloc(enum memory_mode memory)
{
    if (malloc_calls() < 0)
        cr_skip_test("counting malloc needs AddressSanitizer's hooks (the test build has them)");
    struct train_fixture f;
    train_fixture_init_memory(&f, "784,128,64,10", 64, 2, NULL, memory);
    long allocations = malloc_calls();
    size_t reserved = 0;
    for (int step = 1; step <= 5; step++) {
        int b = train_fixture_batch(&f, (step - 1) * 64);
        float loss;
        int status = train_step(f.tr.tape, &f.m, f.o, f.tr.x, f.tr.y, b, &loss);
        long now = malloc_calls();
        cr_assert_eq(status, 0, "%s", tape_error(f.tr.tape));
        if (step == 1) {
            cr_assert_gt(now, allocations, "%s: the first step reserves the tape's memory: "
                         "not counted", tape_memory_name(memory));
            reserved = tape_reserved_bytes(f.tr.tape);
        } else {
            cr_assert_eq(now, allocations, "%s: step %d called malloc %ld times",
                         tape_memory_name(memory), step, now - allocations);
            cr_assert_eq(tape_reserved_bytes(f.tr.tape), reserved,
                         "%s: step %d grew the tape's memory", tape_memory_name(memory), step);
        }
        allocations = now;
    }
    train_fixture_free(&f);
}

Test(train, no_heap_allocation_after_the_first_step) { mlp_zero_alloc(MEMORY_ARENA); }
Test(planner, mlp_no_heap_allocation_after_the_first_step) { mlp_zero_alloc(MEMORY_PLANNED); }

Test(train, evaluate_leaves_recording_as_it_found_it)
{
    struct train_fixture f;
    char err[4096];
    train_fixture_init(&f, "784,32,10", 100, 1, NULL);
    double loss, acc;
    cr_assert_eq(tape_recording(f.tr.tape), 1);
    cr_assert_eq(evaluate(&f.tr, &f.m, &f.ds.test, &loss, &acc, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tape_recording(f.tr.tape), 1, "evaluate left recording off");
    cr_assert(acc >= 0.0 && acc <= 1.0 && isfinite(loss), "loss %g, accuracy %g", loss, acc);
    // An untrained model: about chance, and a loss near ln 10.
    cr_assert_lt(acc, 0.5, "accuracy %g before any training", acc);
    tape_set_recording(f.tr.tape, 0);
    cr_assert_eq(evaluate(&f.tr, &f.m, &f.ds.test, &loss, &acc, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tape_recording(f.tr.tape), 0, "evaluate turned recording on");
    // A step still trains after an evaluation.
    tape_set_recording(f.tr.tape, 1);
    int b = train_fixture_batch(&f, 0);
    float step_loss;
    cr_assert_eq(train_step(f.tr.tape, &f.m, f.o, f.tr.x, f.tr.y, b, &step_loss), 0, "%s",
                 tape_error(f.tr.tape));
    train_fixture_free(&f);
}

// The benchmarks' inference: the forward alone, recording nothing, on the
// batch in tr.x; it leaves recording as it found it and takes no step.
Test(train, time_forward_leaves_recording_as_it_found_it)
{
    struct train_fixture f;
    train_fixture_init(&f, "784,32,10", 100, 1, NULL);
    train_fixture_batch(&f, 0);
    cr_assert_eq(tape_recording(f.tr.tape), 1);
    double secs = train_time_forward(&f.tr, &f.m, 1, 2);
    cr_assert(secs >= 0, "train_time_forward: %g", secs);
    cr_assert_eq(tape_recording(f.tr.tape), 1, "train_time_forward left recording off");
    tape_set_recording(f.tr.tape, 0);
    cr_assert_geq(train_time_forward(&f.tr, &f.m, 0, 1), 0);
    cr_assert_eq(tape_recording(f.tr.tape), 0, "train_time_forward turned recording on");
    cr_assert_eq(optim_steps_taken(f.o), 0, "a forward took an optimizer step");
    // A step still trains after it.
    tape_set_recording(f.tr.tape, 1);
    float loss;
    cr_assert_eq(train_step(f.tr.tape, &f.m, f.o, f.tr.x, f.tr.y, 100, &loss), 0, "%s",
                 tape_error(f.tr.tape));
    train_fixture_free(&f);
}

Test(train, an_epoch_includes_the_last_partial_batch)
{
    struct train_fixture f;
    char err[4096];
    train_fixture_init(&f, "784,32,10", 64, 4, NULL);
    // The first 100 images: a batch of 64, then one of 36.
    struct dataset_split part = f.ds.train;
    part.count = 100;
    struct epoch_stats st;
    cr_assert_eq(train_epoch(&f.tr, &f.m, f.o, &part, 9, 1, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(optim_steps_taken(f.o), 2, "%ld steps for 100 images in batches of 64",
                 optim_steps_taken(f.o));
    cr_assert_eq(st.epoch, 1);
    cr_assert(st.seconds >= 0 && st.images_per_s >= 0);
    train_fixture_free(&f);
}

Test(train, bad_inputs_are_clear_errors)
{
    char err[4096] = "";
    struct dataset ds;
    cr_assert_eq(dataset_load("/nonexistent/mlp-data/", NULL, &ds, err, sizeof err), -1);
    cr_assert(strstr(err, "/nonexistent/mlp-data") != NULL, "the message names no path: %s",
              err);
    struct trainer tr;
    err[0] = '\0';
    cr_assert_eq(trainer_init(&tr, NULL, 0, 784, 100, err, sizeof err), -1);
    cr_assert(strstr(err, "batch") != NULL, "the message: %s", err);
    // A model whose input is not the images' size.
    struct train_fixture f;
    train_fixture_init(&f, "784,32,10", 16, 1, NULL);
    struct nn_model wide;
    cr_assert_eq(nn_mlp_init(&wide, 3, (int[]){100, 8, 10}, 1, err, sizeof err), 0, "%s", err);
    double loss, acc;
    err[0] = '\0';
    cr_assert_eq(evaluate(&f.tr, &wide, &f.ds.test, &loss, &acc, err, sizeof err), -1);
    cr_assert(strstr(err, "pixels") != NULL, "the message: %s", err);
    nn_model_free(&wide);
    train_fixture_free(&f);
}

// The cosine schedule of --lr-decay: the first epoch at lr, the middle one
// at half of it, the last one at a small fraction; a constant lr without it;
// a bad value is refused.
// The training flags of argv into o (flags_train.h): flags_parse's status.
static int train_flags(struct train_options *o, int argc, char **argv)
{
    struct flags f = {0};
    train_flags_add(&f, o);
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    int rc = flags_parse(&f, argc, argv);
    fclose(stderr);
    stderr = saved;
    return rc;
}

Test(train_run, lr_decay_cosine_and_its_flag)
{
    struct train_options o;
    char err[256];
    train_options_init(&o, 256, 10);
    cr_assert_eq(train_options_check(&o, err, sizeof err), 0, "%s", err);
    cr_assert_float_eq(train_lr(&o, 7), 1e-3, 1e-15);
    cr_assert_str_eq(train_recipe_name(&o), "adam");
    cr_assert_eq(train_flags(&o, 3, (char *[]){"run", "--lr-decay", "cosine"}), 0);
    cr_assert_float_eq(train_lr(&o, 1), 1e-3, 1e-15);
    cr_assert_float_eq(train_lr(&o, 6), 0.5e-3, 1e-15);
    double last = train_lr(&o, 10);  // 1e-3·(1 + cos(0.9π))/2
    cr_assert(last > 0.02e-3 && last < 0.03e-3, "last epoch's lr %g", last);
    for (long e = 2; e <= 10; e++)
        cr_assert_lt(train_lr(&o, e), train_lr(&o, e - 1));
    cr_assert_str_eq(train_recipe_name(&o), "adam-cosine");
    cr_assert_eq(train_flags(&o, 3, (char *[]){"run", "--lr-decay", "none"}), 0);
    cr_assert_eq(o.cosine, 0);
    cr_assert_eq(train_flags(&o, 3, (char *[]){"run", "--lr-decay", "step"}), 2);
    cr_assert_eq(train_flags(&o, 2, (char *[]){"run", "--lr-decay"}), 2);
}

// run_mlp as a reader runs it, on a set of their own in a directory named
// without a '/': it trains, after one line that gives the set's four
// checksums; a directory named like a known set but with other bytes, and
// images the model does not fit, are refused.
Test(train_cli, run_mlp_trains_on_a_set_the_list_does_not_know, .timeout = 300)
{
    char dir[64], sub[128];
    snprintf(dir, sizeof dir, "/tmp/test07-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    expect_training_with_a_note(dir, "run_mlp", "mysplit",
                                "--layers 784,32,10 --batch 32 --epochs 2 --threads 1", 120, 40,
                                0, 2);

    // The sample with one test label changed, in a directory named sample.
    snprintf(sub, sizeof sub, "%s/sample", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    copy_sample_raw(sub);
    snprintf(sub, sizeof sub, "%s/sample/t10k-labels-idx1-ubyte", dir);
    FILE *f = fopen(sub, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, 8, SEEK_SET), 0);
    cr_assert_eq(fputc(3, f), 3);  // the first test label is 9
    fclose(f);
    expect_refusal(dir, "run_mlp", "--data sample/ --epochs 1 --threads 1",
                   "error: sample/t10k-labels-idx1-ubyte: checksum mismatch");

    // 14×14 images and the default 784-256-10.
    write_own_set_in(dir, "small", 20, 10, 14, 1, NULL);
    expect_refusal(dir, "run_mlp", "--data small --epochs 1 --threads 1",
                   "--layers 784,256,10 does not fit small: its images have 196 pixels");
    remove_tree(dir);
}

// bench_mlp --inference, as `make compare` runs it: after each model's
// training row, its forward alone as MODEL-inference, on the same backend,
// threads and batch, its GFLOPS counted from the forward's FLOPs.
Test(train_cli, bench_mlp_inference_row_follows_each_training_row, .timeout = 300)
{
    char dir[64];
    make_scratch_dir(dir, sizeof dir, "test07");
    write_own_set_in(dir, "own", 300, 20, 28, 0, NULL);
    run_driver_ok(dir, "bench_mlp", "--data own --gemm auto --no-sweep --inference "
                                    "--threads 1 --steps 2 --csv speed.csv");
    char *csv = read_text(dir, "speed.csv");
    const char *want[] = {"784-256-10", "784-256-10-inference", "784-128-64-10",
                          "784-128-64-10-inference"};
    const char *layers[] = {"784,256,10", "784,128,64,10"};
    int n = 0, header = 0;
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        if (!header++) {
            cr_assert(strncmp(line, "model,framework,backend,threads,batch,", 38) == 0, "%s",
                      line);
            continue;
        }
        cr_assert_lt(n, 4, "a fifth row: %s", line);
        char model[64], backend[32];
        int threads, batch;
        double secs, images_s, gflops;
        cr_assert_eq(sscanf(line, "%63[^,],ours,%31[^,],%d,%d,%lf,%lf,%lf", model, backend,
                            &threads, &batch, &secs, &images_s, &gflops),
                     7, "%s", line);
        cr_assert_str_eq(model, want[n]);
        cr_assert_str_eq(backend, "auto");
        cr_assert_eq(threads, 1);
        cr_assert_eq(batch, n < 2 ? 64 : 256);
        cr_assert(secs > 0 && images_s > 0 && gflops > 0, "%s", line);
        int sizes[NN_MAX_LAYERS + 1];
        int ns = nn_parse_sizes(layers[n / 2], sizes, NN_MAX_LAYERS + 1);
        double forward, train;
        nn_mlp_flops(ns, sizes, &forward, &train);
        double flops = n % 2 ? forward : train;
        cr_assert_float_eq(gflops * 1e9 / images_s, flops, 0.01 * flops,
                           "%s: %g FLOPs an image, not %g", line, gflops * 1e9 / images_s, flops);
        n++;
    }
    cr_assert_eq(n, 4, "%d rows", n);
    free(csv);
    remove_tree(dir);
}

// The `#` key of a machine line ("l1d_kib" of "# l1d_kib: 32"), into key.
static void machine_key(const char *line, char *key, size_t size)
{
    size_t n = strcspn(line + 2, ":");
    snprintf(key, size, "%.*s", (int)n, line + 2);
}

// run_mlp --machine prints the lines its training CSV starts with, the ones
// tools/compare.py and tools/preload.py copy into the files they write: the
// same keys in the same order, and the same values but for what is measured
// afresh (the clock, the peaks, FMA latency and rate) and the date.
Test(train_cli, machine_prints_the_lines_a_training_csv_starts_with, .timeout = 300)
{
    char dir[64];
    make_scratch_dir(dir, sizeof dir, "test07");
    write_own_set_in(dir, "own", 120, 40, 28, 0, NULL);
    run_driver_ok(dir, "run_mlp", "--data own --layers 784,32,10 --batch 32 --epochs 1 "
                                  "--threads 1 --csv train.csv");
    int rc = run_driver(dir, "run_mlp", "--machine --threads 1");
    char *printed = read_text(dir, "log");
    cr_assert_eq(rc, 0, "run_mlp --machine exited with %d:\n%s", rc, printed);
    char *csv = read_text(dir, "train.csv");
    const char *measured[] = {"clock_ghz", "peak.", "fma_latency_cycles.", "fmas_per_cycle.",
                              "date"};
    char *p = printed, *c = csv;
    int n = 0;
    while (*p) {
        char *p_end = strchr(p, '\n'), *c_end = strchr(c, '\n');
        cr_assert_not_null(p_end, "an unfinished line: %s", p);
        cr_assert_not_null(c_end, "train.csv ends before the machine line %s", p);
        *p_end = *c_end = '\0';
        cr_assert(strncmp(p, "# ", 2) == 0, "not a machine line: %s", p);
        char pk[64], ck[64];
        machine_key(p, pk, sizeof pk);
        machine_key(c, ck, sizeof ck);
        cr_assert_str_eq(pk, ck, "line %d: --machine has %s where the CSV has %s", n + 1, p, c);
        int afresh = 0;
        for (size_t i = 0; i < sizeof measured / sizeof measured[0]; i++)
            afresh |= strncmp(pk, measured[i], strlen(measured[i])) == 0;
        if (!afresh)
            cr_assert_str_eq(p, c, "line %d differs", n + 1);
        p = p_end + 1;
        c = c_end + 1;
        n++;
    }
    cr_assert_geq(n, 20, "%d machine lines", n);
    cr_assert(strncmp(c, "# dataset: own", 14) == 0,
              "the CSV's line after the machine lines: %.40s", c);
    free(printed);
    free(csv);
    remove_tree(dir);
}

// ---------------------------------------------------------------------------
// What a trained model shows (chapter 7): the validation split, the confusion
// matrix, the wrong images it was surest of, the first layer as templates.

// A split of n images of 4 pixels whose bytes name the image: image i is
// (i, i >> 8, 7, 9), label i % 10.
static struct dataset_split numbered_split(int n, unsigned char **images, unsigned char **labels)
{
    *images = malloc((size_t)n * 4);
    *labels = malloc((size_t)n);
    cr_assert(*images && *labels);
    for (int i = 0; i < n; i++) {
        unsigned char px[4] = {(unsigned char)i, (unsigned char)(i >> 8), 7, 9};
        memcpy(*images + (size_t)i * 4, px, 4);
        (*labels)[i] = (unsigned char)(i % 10);
    }
    return (struct dataset_split){.count = n, .rows = 2, .cols = 2, .pixels = 4,
                                  .images = *images, .labels = *labels};
}

// Image k of a part is the original image index[k], bytes and label.
static void expect_part(const struct dataset_split *all, const struct dataset_split *part,
                        const int *index)
{
    for (int k = 0; k < part->count; k++) {
        int i = index[k];
        cr_assert(i >= 0 && i < all->count);
        cr_assert_eq(memcmp(part->images + (size_t)k * 4, all->images + (size_t)i * 4, 4), 0,
                     "image %d of the part is not image %d", k, i);
        cr_assert_eq(part->labels[k], all->labels[i]);
        if (k > 0)
            cr_assert_lt(index[k - 1], i, "a part keeps the file's order");
    }
}

Test(inspect, holdout_is_disjoint_complete_and_deterministic_by_seed)
{
    unsigned char *images, *labels;
    struct dataset_split all = numbered_split(1000, &images, &labels);
    struct dataset_holdout a, b, c;
    char err[256];
    cr_assert_eq(dataset_holdout(&all, 100, 7, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.val.count, 100);
    cr_assert_eq(a.train.count, 900);
    cr_assert_eq(a.train.pixels, 4);
    // Every image is in exactly one part.
    int seen[1000] = {0};
    for (int k = 0; k < 1000; k++)
        seen[a.index[k]]++;
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(seen[i], 1, "image %d is in %d parts", i, seen[i]);
    expect_part(&all, &a.train, a.index);
    expect_part(&all, &a.val, a.index + a.train.count);
    // The same seed, the same split; another seed, another one.
    cr_assert_eq(dataset_holdout(&all, 100, 7, &b, err, sizeof err), 0, "%s", err);
    cr_assert_eq(memcmp(a.index, b.index, 1000 * sizeof *a.index), 0);
    cr_assert_eq(memcmp(a.val.images, b.val.images, 400), 0);
    cr_assert_eq(dataset_holdout(&all, 100, 8, &c, err, sizeof err), 0, "%s", err);
    cr_assert_neq(memcmp(a.index + 900, c.index + 900, 100 * sizeof *a.index), 0);
    dataset_holdout_free(&a);
    dataset_holdout_free(&b);
    dataset_holdout_free(&c);
    // Nothing held out, or nothing left to train on: refused, with the numbers.
    cr_assert_eq(dataset_holdout(&all, 0, 7, &a, err, sizeof err), -1);
    cr_assert_eq(dataset_holdout(&all, 1000, 7, &a, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "1000 images out of 1000"), "%s", err);
    cr_assert_null(a.index);
    free(images);
    free(labels);
}

Test(inspect, confusion_counts_every_image_once)
{
    unsigned char *images, *labels;
    struct dataset_split s = numbered_split(137, &images, &labels);
    int pred[137];
    for (int i = 0; i < 137; i++)
        pred[i] = i % 7 == 0 ? (labels[i] + 1) % 10 : labels[i];  // every 7th one wrong
    long counts[DATASET_CLASSES * DATASET_CLASSES];
    inspect_confusion(&s, pred, counts);
    long total = 0, right = 0, wrong_3_to_4 = 0;
    for (int l = 0; l < 10; l++)
        for (int p = 0; p < 10; p++) {
            total += counts[l * 10 + p];
            right += l == p ? counts[l * 10 + p] : 0;
        }
    for (int i = 0; i < 137; i++)
        wrong_3_to_4 += labels[i] == 3 && i % 7 == 0;
    cr_assert_eq(total, 137);
    cr_assert_eq(right, 137 - 20);  // 0, 7, ..., 133: 20 images
    cr_assert_eq(counts[3 * 10 + 4], wrong_3_to_4);
    free(images);
    free(labels);
}

Test(inspect, mosaic_has_the_layout_its_header_says)
{
    // 5 tiles of 2×3 values, 2 a row: 3 rows of tiles, a gap between each two.
    float tiles[5 * 6];
    for (int i = 0; i < 30; i++)
        tiles[i] = (float)(i % 6) - 2.0f;
    char path[] = "/tmp/mosaic-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_eq(inspect_write_mosaic(f, tiles, 5, 2, 3, 2, 1), 0);
    fclose(f);
    int rows, fields;
    double sum;
    table_shape("/", path + 1, &rows, &fields, &sum);
    cr_assert_eq(rows, 3 * 2 + 2);
    cr_assert_eq(fields, 2 * 3 + 1);
    char *text = read_text("/", path + 1);
    cr_assert_not_null(strstr(text, "# matrix_rows: 8\n# matrix_cols: 7\n"), "%s", text);
    // Tile 0 scaled by its largest |value| (3): -2..3 as -67..100; then the
    // gap, then tile 1.
    cr_assert_not_null(strstr(text, "\n-67,-33,0,0,-67,-33,0\n33,67,100,0,33,67,100\n"), "%s",
                       text);
    free(text);
    unlink(path);
}

// run_mlp as a student runs it for chapter 7's figures: --val holds images
// out (the per-epoch rows are judged on them, the test set read once, on the
// last row), --confusion counts every test image once, --wrong lists wrong
// images surest first, --templates is a grid of the first layer's units.
Test(train_cli, run_mlp_writes_what_the_model_shows, .timeout = 300)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/test07-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    expect_training_with_a_note(dir, "run_mlp", "own",
                                "--layers 784,16,10 --batch 16 --epochs 2 --threads 1 "
                                "--val 30 --csv val.csv --confusion confusion.csv "
                                "--wrong wrong.csv --templates templates.csv",
                                120, 40, 0, 2);
    char *log = read_text(dir, "log");
    cr_assert_not_null(strstr(log, "validation: 30 of the training images held out (seed 1), "
                                   "90 left to train on"), "%s", log);
    cr_assert_not_null(strstr(log, "the test set, read once: test loss"), "%s", log);
    free(log);

    char *val = read_text(dir, "val.csv");
    const char *header, *row;
    cr_assert_eq(lines_starting(val, "model,", &header), 1, "%s", val);
    const char *columns = "model,dataset,framework,backend,threads,batch,optimizer,lr,seed,"
                          "val_images,epoch,seconds,images_per_s,train_loss,val_loss,val_acc,"
                          "test_loss,test_acc,peak_rss_mb\n";
    cr_assert(strncmp(header, columns, strlen(columns)) == 0, "%s", val);
    cr_assert_eq(lines_starting(val, "784-16-10,own,ours,", &row), 2, "%s", val);
    // Epoch 1 leaves the test columns empty; epoch 2, the last, fills them.
    cr_assert_not_null(strstr(row, ",30,1,"), "%s", val);
    cr_assert_not_null(strstr(row, ",,,"), "%s", val);
    const char *second = strchr(row, '\n') + 1;
    cr_assert_not_null(strstr(second, ",30,2,"), "%s", val);
    cr_assert_null(strstr(second, ",,"), "%s", val);
    free(val);

    char *conf = read_text(dir, "confusion.csv");
    cr_assert_not_null(strstr(conf, "# test_images: 40\n"), "%s", conf);
    cr_assert_eq(lines_starting(conf, "label,predicted,count,share\n", &header), 1);
    long total = 0;
    int cells = 0;
    for (const char *p = strchr(header, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
        int l, pr;
        long n;
        double share;
        cr_assert_eq(sscanf(p, "%d,%d,%ld,%lf", &l, &pr, &n, &share), 4, "%s", p);
        cr_assert_eq(l, cells / 10);
        cr_assert_eq(pr, cells % 10);
        total += n;
        cells++;
    }
    cr_assert_eq(cells, 100);
    cr_assert_eq(total, 40, "the confusion matrix counts %ld images of 40", total);
    free(conf);

    // 16 units: a 4×4 grid of 28×28 tiles, a value's gap between two.
    char path[300];
    int rows, fields;
    double sum;
    table_shape(dir, "templates.csv", &rows, &fields, &sum);
    cr_assert_eq(rows, 4 * 29 - 1);
    cr_assert_eq(fields, 4 * 29 - 1);

    // At most 16 rows of 5 columns and 784 pixels: wrong, surest first.
    table_shape(dir, "wrong.csv", &rows, &fields, &sum);
    snprintf(path, sizeof path, "%s/wrong.csv", dir);
    cr_assert(rows >= 1 && rows <= 17, "%d rows", rows);
    cr_assert_eq(fields, 5 + 784);
    FILE *f = fopen(path, "r");
    static char line[1 << 16];
    double last = 2.0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        int rank, index, label, pred;
        double conf;
        if (sscanf(line, "%d,%d,%d,%d,%lf,", &rank, &index, &label, &pred, &conf) != 5)
            continue;
        n++;
        cr_assert_eq(rank, n);
        cr_assert(index >= 0 && index < 40);
        cr_assert_neq(label, pred, "row %d is not wrong", rank);
        cr_assert(conf <= last && conf > 0.0, "row %d: %g after %g", rank, conf, last);
        last = conf;
    }
    fclose(f);
    cr_assert_eq(n, rows - 1);

    // Bad input: a validation split that leaves nothing to train on.
    expect_refusal(dir, "run_mlp", "--data own --layers 784,16,10 --epochs 1 --val 120",
                   "error: --val 120: a validation split of 120 images out of 120");
    remove_tree(dir);
}
