// ---------------------------------------------------------------------------
// The training loop (common/nn/train.c): one step (task 7.3), an epoch, the
// evaluation, determinism across thread counts and the zero-allocation
// promise. Data: the committed sample (datasets/sample), always present.
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "dataset.h"
#include "gemm_backend.h"
#include "nn.h"
#include "optim.h"
#include "tape.h"
#include "train.h"

// A model, its optimizer and a trainer over the sample, built in one go.
struct train_fixture {
    struct dataset ds;
    struct nn_model m;
    struct optim *o;
    struct trainer tr;
};

static void train_fixture_init(struct train_fixture *f, const char *layers, int batch,
                               uint64_t seed, const struct gemm_backend *backend)
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
    cr_assert_eq(trainer_init(&f->tr, backend, batch, f->ds.train.pixels, f->ds.train.count,
                              err, sizeof err),
                 0, "%s", err);
    f->tr.progress = 0;  // no bar in the test log, even on a terminal
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
static float *params_after_steps(int threads, const struct gemm_backend *backend, long *count)
{
    omp_set_num_threads(threads);
    struct train_fixture f;
    train_fixture_init(&f, "784,256,10", 64, 11, backend);
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

Test(train, the_same_bits_on_one_and_two_threads)
{
    int before = omp_get_max_threads();
    const struct gemm_backend *backend = gemm_backend_find("auto");
    cr_assert_not_null(backend);
    long n1, n2;
    float *one = params_after_steps(1, backend, &n1);
    float *two = params_after_steps(2, backend, &n2);
    omp_set_num_threads(before);
    cr_assert_eq(n1, n2);
    long first = -1;
    for (long i = 0; i < n1 && first < 0; i++)
        if (memcmp(&one[i], &two[i], sizeof *one) != 0)
            first = i;
    cr_assert_eq(first, -1, "parameter float %ld differs: %.9g on 1 thread, %.9g on 2", first,
                 first >= 0 ? (double)one[first] : 0.0, first >= 0 ? (double)two[first] : 0.0);
    free(one);
    free(two);
}

Test(train, no_heap_allocation_after_the_first_step)
{
    struct train_fixture f;
    train_fixture_init(&f, "784,128,64,10", 64, 2, NULL);
    long allocations = 0;
    for (int step = 1; step <= 5; step++) {
        int b = train_fixture_batch(&f, (step - 1) * 64);
        float loss;
        cr_assert_eq(train_step(f.tr.tape, &f.m, f.o, f.tr.x, f.tr.y, b, &loss), 0, "%s",
                     tape_error(f.tr.tape));
        if (step == 1)
            allocations = arena_heap_allocations();
        else
            cr_assert_eq(arena_heap_allocations(), allocations, "step %d called malloc", step);
    }
    train_fixture_free(&f);
}

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
