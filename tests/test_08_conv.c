// Stage 08, the network: chapter 8's CNN (common/nn/cnn.c) on the ops of
// common/conv/. Its shapes, parameter count, initialisation and FLOPs; a
// forward pass; training steps that lower the loss, give the same bits on
// one and two threads and allocate nothing after the first; a checkpoint
// round trip; a short training on the committed sample.
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "checkpoint.h"
#include "conv.h"
#include "dataset.h"
#include "gemm_backend.h"
#include "mat.h"
#include "nn.h"
#include "ops.h"
#include "optim.h"
#include "tape.h"
#include "train.h"

// The parameters in the order of nn.h: conv1 w and bias, conv2 w and bias,
// fc1 w and bias, fc2 w and bias.
static const int cnn_shapes[8][5] = {
    {4, 32, 1, 3, 3}, {1, 32}, {4, 64, 32, 3, 3}, {1, 64},
    {2, 1600, 128},   {1, 128}, {2, 128, 10},     {1, 10},
};

Test(nn_cnn, shapes_desc_and_parameter_count)
{
    struct nn_model m;
    char err[256];
    cr_assert_eq(nn_cnn_init(&m, 1, err, sizeof err), 0, "%s", err);
    cr_assert(strncmp(m.desc, "cnn ", 4) == 0, "desc \"%s\"", m.desc);
    cr_assert_eq(m.sizes[0], 784, "the input is a flattened 28×28 image");
    cr_assert_not_null(m.forward);
    cr_assert_eq(m.nparams, 8);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(m.params[i]->ndim, cnn_shapes[i][0], "param %d", i);
        for (int d = 0; d < cnn_shapes[i][0]; d++)
            cr_assert_eq(m.params[i]->shape[d], cnn_shapes[i][d + 1], "param %d dim %d", i, d);
        cr_assert(m.params[i]->requires_grad);
    }
    cr_assert_eq(nn_param_count(&m),
                 32L * 9 + 32 + 64L * 32 * 9 + 64 + 1600L * 128 + 128 + 128L * 10 + 10);
    nn_model_free(&m);
    cr_assert_eq(m.nparams, 0);
}

Test(nn_cnn, he_initialisation_and_seeds)
{
    struct nn_model a, b, c;
    char err[256];
    cr_assert_eq(nn_cnn_init(&a, 7, err, sizeof err), 0, "%s", err);
    cr_assert_eq(nn_cnn_init(&b, 7, err, sizeof err), 0, "%s", err);
    cr_assert_eq(nn_cnn_init(&c, 8, err, sizeof err), 0, "%s", err);
    // Weights: mean 0, standard deviation √(2/fan_in), fan_in = c·kh·kw for
    // a convolution (9, 288), in for a Linear layer (1600, 128). Tolerances
    // of about five standard errors of the sample sd (1/√(2n)) at each count.
    const double fan_in[4] = {9, 288, 1600, 128}, tol[4] = {0.2, 0.03, 0.01, 0.03};
    for (int l = 0; l < 4; l++) {
        struct tensor *w = a.params[2 * l], *bias = a.params[2 * l + 1];
        double sum = 0.0, sq = 0.0, sd = sqrt(2.0 / fan_in[l]);
        for (long i = 0; i < w->size; i++) {
            sum += w->data[i];
            sq += (double)w->data[i] * w->data[i];
        }
        double mean = sum / w->size, got = sqrt(sq / w->size - mean * mean);
        cr_assert(fabs(mean) < 5.0 * sd / sqrt((double)w->size), "layer %d mean %g", l, mean);
        cr_assert(fabs(got / sd - 1.0) < tol[l], "layer %d: sd %g, want %g", l, got, sd);
        for (long i = 0; i < bias->size; i++)
            cr_assert(bias->data[i] == 0.0f, "layer %d bias %ld = %g", l, i, bias->data[i]);
    }
    for (int i = 0; i < a.nparams; i++)
        cr_assert(memcmp(a.params[i]->data, b.params[i]->data,
                         sizeof(float) * (size_t)a.params[i]->size) == 0,
                  "param %d: the same seed gave other weights", i);
    cr_assert(memcmp(a.params[2]->data, c.params[2]->data, sizeof(float) * 64 * 32 * 9) != 0,
              "another seed gave the same weights");
    nn_model_free(&a);
    nn_model_free(&b);
    nn_model_free(&c);
}

Test(nn_cnn, flops_per_image)
{
    struct nn_model m;
    char err[256];
    cr_assert_eq(nn_cnn_init(&m, 1, err, sizeof err), 0, "%s", err);
    // 2 FLOPs per weight per output pixel for a convolution, 2·in·out for a
    // Linear layer: 26×26 outputs of 32 filters of 1·3·3, 11×11 outputs of
    // 64 filters of 32·3·3, then 1600→128 and 128→10.
    double conv1 = 2.0 * 32 * 9 * 26 * 26, conv2 = 2.0 * 64 * 32 * 9 * 11 * 11;
    double fc1 = 2.0 * 1600 * 128, fc2 = 2.0 * 128 * 10;
    cr_assert_float_eq(nn_forward_flops(&m), conv1 + conv2 + fc1 + fc2, 0.5);
    cr_assert_float_eq(nn_forward_flops(&m), 5262080.0, 0.5, "about 5.3 MFLOP forward");
    cr_assert_float_eq(nn_cnn_forward_flops(), nn_forward_flops(&m), 0.5);
    // A step: forward and dW of every layer, dX of all but the first.
    cr_assert_float_eq(nn_train_flops(&m), 2 * conv1 + 3 * (conv2 + fc1 + fc2), 0.5);
    cr_assert_float_eq(nn_cnn_train_flops(), nn_train_flops(&m), 0.5);
    // The MLP's count is untouched.
    struct nn_model mlp;
    cr_assert_eq(nn_mlp_init(&mlp, 3, (int[]){784, 256, 10}, 1, err, sizeof err), 0);
    cr_assert_float_eq(nn_forward_flops(&mlp), 2.0 * (784 * 256 + 256 * 10), 0.5);
    nn_model_free(&mlp);
    nn_model_free(&m);
}

Test(nn_cnn, forward_shapes_gradients_and_a_bad_width)
{
    struct nn_model m;
    char err[256];
    cr_assert_eq(nn_cnn_init(&m, 3, err, sizeof err), 0, "%s", err);
    struct tape *t = tape_new(NULL);
    cr_assert_not_null(t);
    struct tensor *x = tensor_new(t, 2, (int[]){3, 784});
    cr_assert_not_null(x);
    mat_fill_random(x->data, 3, 784, 784, 4);
    struct tensor *y = m.forward(&m, t, x);
    cr_assert_not_null(y, "%s", tape_error(t));
    cr_assert(y->ndim == 2 && y->shape[0] == 3 && y->shape[1] == 10, "logits %d×%d", y->shape[0],
              y->shape[1]);
    for (int i = 0; i < 30; i++)
        cr_assert(isfinite(y->data[i]), "logit %d = %g", i, y->data[i]);
    int labels[3] = {0, 4, 9};
    nn_zero_grad(&m);
    cr_assert_eq(tape_backward(t, op_cross_entropy(t, y, labels, 3)), 0, "%s", tape_error(t));
    // Every parameter gets a gradient, and none is all zero (a layer cut off
    // from the loss would leave one so).
    for (int i = 0; i < m.nparams; i++) {
        double norm = 0.0;
        for (long j = 0; j < m.params[i]->size; j++) {
            cr_assert(isfinite(m.params[i]->grad[j]), "param %d grad %ld", i, j);
            norm += fabs(m.params[i]->grad[j]);
        }
        cr_assert_gt(norm, 0.0, "param %d has a zero gradient", i);
    }
    // Images of another size: the reshape to 28×28 says so.
    tape_clear(t);
    cr_assert_null(m.forward(&m, t, tensor_new(t, 2, (int[]){3, 783})));
    cr_assert(strstr(tape_error(t), "reshape"), "%s", tape_error(t));
    tape_free(t);
    nn_model_free(&m);
}

// A CNN, Adam and a trainer over the committed sample.
struct cnn_fixture {
    struct dataset ds;
    struct nn_model m;
    struct optim *o;
    struct trainer tr;
};

static void cnn_fixture_init(struct cnn_fixture *f, int batch, uint64_t seed)
{
    char err[4096];
    memset(f, 0, sizeof *f);
    cr_assert_eq(dataset_load("sample", NULL, &f->ds, err, sizeof err), 0, "%s", err);
    cr_assert_eq(nn_cnn_init(&f->m, seed, err, sizeof err), 0, "%s", err);
    struct optim_config c = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
    f->o = optim_new(&c, f->m.params, f->m.nparams);
    cr_assert_not_null(f->o);
    cr_assert_eq(trainer_init(&f->tr, NULL, batch, f->ds.train.pixels, f->ds.train.count, err,
                              sizeof err),
                 0, "%s", err);
    f->tr.progress = 0;
}

static void cnn_fixture_free(struct cnn_fixture *f)
{
    trainer_free(&f->tr);
    optim_free(f->o);
    nn_model_free(&f->m);
    dataset_free(&f->ds);
}

static int cnn_fixture_step(struct cnn_fixture *f, int start, float *loss)
{
    int b = dataset_batch(&f->ds.train, NULL, start, f->tr.batch, f->tr.x, f->tr.y);
    cr_assert_eq(b, f->tr.batch);
    return train_step(f->tr.tape, &f->m, f->o, f->tr.x, f->tr.y, b, loss);
}

Test(nn_cnn, steps_lower_the_loss_on_a_fixed_batch, .timeout = 300)
{
    struct cnn_fixture f;
    cnn_fixture_init(&f, 32, 3);
    float first = 0.0f, loss = 0.0f;
    for (int step = 0; step < 8; step++) {
        cr_assert_eq(cnn_fixture_step(&f, 0, &loss), 0, "step %d: %s", step,
                     tape_error(f.tr.tape));
        cr_assert(isfinite(loss), "step %d: loss %g", step, (double)loss);
        if (step == 0)
            first = loss;
    }
    // A fresh 10-class model starts near ln 10 = 2.3; eight Adam steps of
    // lr 1e-3 on the same 32 images bring it well down.
    cr_assert_gt(first, 1.0f, "the first loss is %g, not that of an untrained model",
                 (double)first);
    cr_assert_lt(loss, 0.7f * first, "loss %g after eight steps, %g at the first", (double)loss,
                 (double)first);
    cr_assert_eq(optim_steps_taken(f.o), 8);
    cnn_fixture_free(&f);
}

// Every parameter's floats after two steps on the sample's first batches.
static float *cnn_params_after_steps(int threads, enum conv_path path, long *count)
{
    omp_set_num_threads(threads);
    conv_set_path(path);
    struct cnn_fixture f;
    cnn_fixture_init(&f, 16, 11);
    for (int step = 0; step < 2; step++) {
        float loss;
        cr_assert_eq(cnn_fixture_step(&f, step * 16, &loss), 0, "%s", tape_error(f.tr.tape));
    }
    long n = nn_param_count(&f.m), at = 0;
    float *all = malloc((size_t)n * sizeof *all);
    cr_assert_not_null(all);
    for (int i = 0; i < f.m.nparams; i++) {
        memcpy(all + at, f.m.params[i]->data, (size_t)f.m.params[i]->size * sizeof *all);
        at += f.m.params[i]->size;
    }
    *count = n;
    cnn_fixture_free(&f);
    conv_set_path(CONV_AUTO);
    return all;
}

static void cnn_same_bits(enum conv_path path)
{
    int before = omp_get_max_threads();
    long n1, n2;
    float *one = cnn_params_after_steps(1, path, &n1);
    float *two = cnn_params_after_steps(2, path, &n2);
    omp_set_num_threads(before);
    cr_assert_eq(n1, n2);
    long first = -1;
    for (long i = 0; i < n1 && first < 0; i++)
        if (memcmp(&one[i], &two[i], sizeof *one) != 0)
            first = i;
    cr_assert_eq(first, -1, "%s path: parameter float %ld differs: %.9g on 1 thread, %.9g on 2",
                 conv_path_name(path), first, first >= 0 ? (double)one[first] : 0.0,
                 first >= 0 ? (double)two[first] : 0.0);
    free(one);
    free(two);
}

Test(nn_cnn, the_same_bits_on_one_and_two_threads_auto, .timeout = 300)
{
    cnn_same_bits(CONV_AUTO);
}

Test(nn_cnn, the_same_bits_on_one_and_two_threads_im2col, .timeout = 300)
{
    cnn_same_bits(CONV_IM2COL);
}

Test(nn_cnn, the_same_bits_on_one_and_two_threads_direct, .timeout = 300)
{
    cnn_same_bits(CONV_DIRECT);
}

Test(nn_cnn, no_heap_allocation_after_the_first_step, .timeout = 300)
{
    struct cnn_fixture f;
    cnn_fixture_init(&f, 16, 2);
    long allocations = 0;
    for (int step = 1; step <= 3; step++) {
        float loss;
        cr_assert_eq(cnn_fixture_step(&f, (step - 1) * 16, &loss), 0, "%s",
                     tape_error(f.tr.tape));
        if (step == 1)
            allocations = arena_heap_allocations();
        else
            cr_assert_eq(arena_heap_allocations(), allocations, "step %d called malloc", step);
    }
    cnn_fixture_free(&f);
}

Test(nn_cnn, checkpoint_round_trip)
{
    char dir[64], path[128], err[512];
    snprintf(dir, sizeof dir, "/tmp/test08-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cnn.ckpt", dir);
    struct nn_model a, b, mlp;
    cr_assert_eq(nn_cnn_init(&a, 1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(nn_cnn_init(&b, 2, err, sizeof err), 0, "%s", err);
    a.params[1]->data[5] = 0.25f;  // a bias that is not zero
    cr_assert_eq(checkpoint_save(path, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(checkpoint_load(path, &b, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < a.nparams; i++)
        cr_assert(memcmp(a.params[i]->data, b.params[i]->data,
                         sizeof(float) * (size_t)a.params[i]->size) == 0,
                  "param %d differs after the round trip", i);
    // An MLP refuses the CNN's file, and says why.
    cr_assert_eq(nn_mlp_init(&mlp, 3, (int[]){784, 256, 10}, 1, err, sizeof err), 0);
    err[0] = '\0';
    cr_assert_eq(checkpoint_load(path, &mlp, err, sizeof err), -1, "an MLP loaded a CNN");
    cr_assert(strstr(err, path), "the message names no file: %s", err);
    nn_model_free(&mlp);
    nn_model_free(&a);
    nn_model_free(&b);
    cr_assert_eq(remove(path), 0);
    cr_assert_eq(rmdir(dir), 0, "%s: files left behind", dir);
}

Test(nn_cnn, a_short_training_on_the_sample_lifts_accuracy_above_chance, .timeout = 600)
{
    struct cnn_fixture f;
    char err[4096];
    cnn_fixture_init(&f, 32, 5);
    double loss0, acc0, loss1, acc1;
    cr_assert_eq(evaluate(&f.tr, &f.m, &f.ds.test, &loss0, &acc0, err, sizeof err), 0, "%s",
                 err);
    // The first 640 training images, once: 20 steps of 32.
    struct dataset_split part = f.ds.train;
    part.count = 640;
    struct epoch_stats st;
    cr_assert_eq(train_epoch(&f.tr, &f.m, f.o, &part, 5, 1, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(evaluate(&f.tr, &f.m, &f.ds.test, &loss1, &acc1, err, sizeof err), 0, "%s",
                 err);
    // Ten classes: chance is 10 %. Twenty steps reach well above it on
    // Fashion-MNIST's sample.
    cr_assert_gt(acc1, 0.4, "test accuracy %.1f %% after 20 steps", 100 * acc1);
    cr_assert_lt(loss1, loss0, "test loss %g after training, %g before", loss1, loss0);
    cnn_fixture_free(&f);
}
