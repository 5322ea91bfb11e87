// The run the training drivers share: the dataset, the model, the epochs
// with a line and a CSV row each (common/README.md's columns), --load and
// --save. run_mlp and run_cnn differ only in their model; their flags are
// read by train_flags.c.
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "flags.h"
#include "inspect.h"
#include "machine.h"
#include "progress.h"
#include "schemas.h"
#include "timer.h"
#include "train.h"
#include "train_run.h"

void train_options_init(struct train_options *o, long batch, long epochs)
{
    *o = (struct train_options){.data = "fashion", .batch = batch, .epochs = epochs, .seed = 1,
                                .optim = OPTIM_ADAM, .lr = -1.0, .gemm = 0, .conv = NULL,
                                .memory = tape_config_default().memory, .isa = ISA_COUNT,
                                .env = env_read()};
}

struct tape_config train_options_tape(const struct train_options *o)
{
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    struct tape_config c = tape_config_default();
    c.gemm = &all[o->gemm];
    c.conv = o->conv;
    c.memory = (enum memory_mode)o->memory;
    if (o->isa != ISA_COUNT)
        tape_config_set_isa(&c, o->isa);
    return c;
}

int train_options_check(struct train_options *o, char *err, size_t errlen)
{
    if (o->lr < 0)
        o->lr = o->optim == OPTIM_ADAM ? 1e-3 : 0.05;
    if (o->epochs == 0 && !o->load) {
        snprintf(err, errlen, "--epochs 0 only evaluates a model given with --load");
        return -1;
    }
    if (o->val && o->epochs == 0) {
        snprintf(err, errlen, "--val holds out images to judge training epochs; with --epochs 0 "
                              "there are none (drop --val)");
        return -1;
    }
    if (o->append && !o->csv) {
        snprintf(err, errlen, "--append adds to the file of --csv, which is missing");
        return -1;
    }
    return 0;
}

double train_lr(const struct train_options *o, long e)
{
    if (!o->cosine)
        return o->lr;
    const double pi = 3.14159265358979323846;
    return o->lr * (1.0 + cos(pi * (double)(e - 1) / (double)o->epochs)) / 2.0;
}

const char *train_recipe_name(const struct train_options *o)
{
    if (o->optim == OPTIM_ADAM)
        return o->cosine ? "adam-cosine" : "adam";
    return o->cosine ? "sgd-cosine" : "sgd";
}

FILE *train_csv_open(const char *path, const char *stage, const struct dataset *ds, int threads,
                     enum isa isa, const struct environment *env, int append, int *fresh)
{
    FILE *f = results_open(path, stage, threads, isa, env, append, fresh);
    if (f && *fresh)
        fprintf(f, "# dataset: %s\n# dataset_dir: %s\n# train_images: %d\n# test_images: %d\n",
                ds->name, ds->dir, ds->train.count, ds->test.count);
    return f;
}

int train_csv_close(FILE *f, const char *path, int status)
{
    return results_close(f, path, status);
}

FILE *train_bench_open(const char *path, const char *stage, const struct dataset *ds, int threads,
                       enum isa isa, const struct environment *env, int epoch_images)
{
    int fresh;
    FILE *f = train_csv_open(path, stage, ds, threads, isa, env, 0, &fresh);
    if (f)
        fprintf(f, "# epoch_images: %d\n", epoch_images);
    return f;
}

void train_epoch_print(const struct epoch_stats *st, const char *judged)
{
    printf("epoch %3d  loss %.4f  %s loss %.4f  %s accuracy %6.2f %%  %7.3f s  %8.0f images/s\n",
           st->epoch, st->train_loss, judged, st->test_loss, judged, 100 * st->test_acc,
           st->seconds, st->images_per_s);
    fflush(stdout);
}

void train_epoch_row(FILE *csv, const char *model, const char *dataset, const char *backend,
                     int threads, long batch, const char *optimizer, const struct epoch_stats *st)
{
    fprintf(csv, "%s,%s,ours,%s,%d,%ld,%s,%d,%.6f,%.1f,%.6f,%.6f,%.6f,%.1f\n", model, dataset,
            backend, threads, batch, optimizer, st->epoch, st->seconds, st->images_per_s,
            st->train_loss, st->test_loss, st->test_acc, peak_rss_mb());
    fflush(csv);
}

int train_save(const char *path, const struct nn_model *m)
{
    char err[4096];
    if (checkpoint_save(path, m, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    printf("saved %s\n", path);
    return 0;
}

int train_fixed_steps(struct trainer *tr, struct nn_model *m, struct optim *o,
                      const struct dataset_split *s, int steps, int *at, double *data_s)
{
    int batch = tr->batch;
    if (batch > s->count) {
        fprintf(stderr, "error: the dataset (%d images) is smaller than a batch (%d)\n", s->count,
                batch);
        return -1;
    }
    for (int step = 0; step < steps; step++) {
        if (*at + batch > s->count)
            *at = 0;
        double d0 = timer_now();
        int b = dataset_batch_threads(s, tr->order, *at, batch, tr->x, tr->y, tr->batch_threads);
        *data_s += timer_now() - d0;
        *at += b;
        float loss;
        if (train_step(tr->tape, m, o, tr->x, tr->y, b, &loss) != 0) {
            fprintf(stderr, "error: a training step: %s\n", tape_error(tr->tape));
            return -1;
        }
    }
    return 0;
}

double train_time_forward(struct trainer *tr, struct nn_model *m, int warmup, int steps)
{
    int dims[2] = {tr->batch, tr->pixels};
    double start = timer_now();
    int was = tape_set_recording(tr->tape, 0);
    for (int i = 0; i < warmup + steps; i++) {
        if (i == warmup)
            start = timer_now();
        tape_clear(tr->tape);
        struct tensor *x = tensor_from(tr->tape, 2, dims, tr->x, (long)tr->batch * tr->pixels);
        if (!m->forward(m, tr->tape, x)) {
            fprintf(stderr, "error: inference: %s\n", tape_error(tr->tape));
            tape_set_recording(tr->tape, was);
            return -1;
        }
    }
    double secs = (timer_now() - start) / steps;
    tape_set_recording(tr->tape, was);
    return secs;
}

// --- arena against planned memory ----------------------------------------------

enum { MAX_ROUNDS = 64, MAX_MODES = 2 };

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// One model, optimizer and trainer per mode.
struct lane {
    struct nn_model m;
    struct optim *o;
    struct trainer tr;
    int at;  // where its next batch starts
};

// The lanes' rounds, one lane after another; step_s[i]: lane i's median
// seconds per step.
static int alternate(struct lane *lanes, int n, const struct dataset_split *s,
                     const struct memory_study *st, double *step_s)
{
    // all[r·n + i]: lane i's seconds per step in round r.
    static double all[MAX_ROUNDS * MAX_MODES], times[MAX_ROUNDS];
    int rounds = st->rounds < MAX_ROUNDS ? st->rounds : MAX_ROUNDS;
    double data_s = 0.0;
    for (int i = 0; i < n; i++)
        if (train_fixed_steps(&lanes[i].tr, &lanes[i].m, lanes[i].o, s, st->warmup,
                              &lanes[i].at, &data_s) != 0)
            return -1;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) {
            double t0 = timer_now();
            if (train_fixed_steps(&lanes[i].tr, &lanes[i].m, lanes[i].o, s, st->steps,
                                  &lanes[i].at, &data_s) != 0)
                return -1;
            all[r * n + i] = (timer_now() - t0) / st->steps;
        }
    for (int i = 0; i < n; i++) {
        for (int r = 0; r < rounds; r++)
            times[r] = all[r * n + i];
        qsort(times, (size_t)rounds, sizeof *times, by_value);
        step_s[i] = rounds % 2 ? times[rounds / 2]
                               : 0.5 * (times[rounds / 2 - 1] + times[rounds / 2]);
    }
    return 0;
}

int train_memory_study(const struct memory_study *st, const struct dataset_split *s,
                       const struct flag_list *modes, int threads, FILE *csv, FILE *lifetimes)
{
    char err[4096];
    int n = modes->n < MAX_MODES ? modes->n : MAX_MODES;
    if (n < 1 || st->steps < 1 || st->rounds < 1)
        return 0;
    static struct lane lanes[MAX_MODES];
    memset(lanes, 0, sizeof lanes);
    int made = 0, status = 0;
    for (; made < n && status == 0; made++) {
        struct lane *l = &lanes[made];
        if (st->build(&l->m, st->ctx, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            return -1;  // nothing of this lane to free
        }
        struct optim_config oc = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
        l->o = optim_new(&oc, l->m.params, l->m.nparams);
        struct tape_config config = st->config;
        config.memory = (enum memory_mode)modes->v[made];
        if (!l->o || trainer_init(&l->tr, &config, st->batch, s->pixels, s->count, err,
                                  sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", l->o ? err : "out of memory for the optimizer");
            status = -1;
        } else {
            optim_set_threads(l->o, train_pass_threads(tape_config(l->tr.tape)->gemm));
            dataset_shuffle(l->tr.order, s->count, 1);  // every lane the same batches
        }
    }
    double step_s[MAX_MODES];
    if (status == 0)
        status = alternate(lanes, n, s, st, step_s);
    for (int i = 0; i < n && status == 0; i++) {
        enum memory_mode mode = (enum memory_mode)modes->v[i];
        struct tape *t = lanes[i].tr.tape;
        size_t live = tape_live_bytes(t), reserved = tape_reserved_bytes(t);
        printf("  %-14s batch %3d  %-7s  %9.3f ms/step  live %11zu  reserved %11zu bytes\n",
               st->model, st->batch, tape_memory_name(mode), 1e3 * step_s[i], live, reserved);
        if (csv)
            fprintf(csv, "%s,%s,%d,%d,%s,%.4f,%zu,%zu\n", st->model,
                    tape_config(t)->gemm->name, threads, st->batch, tape_memory_name(mode),
                    1e3 * step_s[i], live, reserved);
        if (lifetimes && mode == MEMORY_PLANNED && tape_write_lifetimes(t, lifetimes) != 0)
            status = -1;
    }
    for (int i = 0; i < made; i++) {
        trainer_free(&lanes[i].tr);
        optim_free(lanes[i].o);
        nn_model_free(&lanes[i].m);
    }
    return status;
}

FILE *train_result_open(const char *path, const struct train_options *o,
                        const struct train_model *tm, const struct dataset *ds, int threads,
                        const char *what)
{
    int fresh;
    FILE *f = train_csv_open(path, tm->stage, ds, threads, train_options_tape(o).isa, &o->env, 0,
                             &fresh);
    if (f)
        fprintf(f, "# what: %s\n# model: %s\n# recipe: batch %ld, %s, lr %g, %ld epochs, seed %ld%s\n",
                what, tm->name, o->batch, train_recipe_name(o), o->lr, o->epochs, o->seed,
                o->load ? ", loaded from a checkpoint" : "");
    return f;
}

// --confusion and --wrong: the test set's predictions, written as the
// confusion matrix and as the wrong images the model was surest of.
static int write_test_views(struct trainer *tr, struct nn_model *m, const struct dataset *ds,
                            const struct train_options *o, const struct train_model *tm,
                            int threads)
{
    if (!o->confusion && !o->wrong)
        return 0;
    const struct dataset_split *s = &ds->test;
    int *pred = malloc((size_t)(s->count > 0 ? s->count : 1) * sizeof *pred);
    float *prob = malloc((size_t)(s->count > 0 ? s->count : 1) * sizeof *prob);
    char err[512];
    int status = -1;
    if (!pred || !prob) {
        fprintf(stderr, "error: out of memory for %d predictions\n", s->count);
        goto out;
    }
    if (inspect_predict(tr, m, s, pred, prob, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    if (o->confusion) {
        long counts[DATASET_CLASSES * DATASET_CLASSES];
        inspect_confusion(s, pred, counts);
        FILE *f = train_result_open(o->confusion, o, tm, ds, threads,
                                    "the test set's confusion matrix: images of each label "
                                    "(true class) by the class the model predicted");
        if (!f)
            goto out;
        inspect_write_confusion(f, counts);
        if (train_csv_close(f, o->confusion, 0) != 0)
            goto out;
        printf("confusion matrix of the %d test images: %s\n", s->count, o->confusion);
    }
    if (o->wrong) {
        FILE *f = train_result_open(o->wrong, o, tm, ds, threads,
                                    "the wrong test images the model was surest of, surest "
                                    "first, with their pixels (0..255, row-major)");
        if (!f)
            goto out;
        int k = inspect_write_wrong(f, s, pred, prob, 16);
        if (train_csv_close(f, o->wrong, k < 0) != 0) {
            if (k < 0)
                fprintf(stderr, "error: out of memory ranking the wrong images\n");
            goto out;
        }
        printf("the %d wrong test images it was surest of: %s\n", k, o->wrong);
    }
    status = 0;
out:
    free(pred);
    free(prob);
    return status;
}

int train_write_machine(const struct train_options *o, const char *stage)
{
    if (o->threads > 0)
        omp_set_num_threads((int)o->threads);
    machine_write(stdout, stage, omp_get_max_threads(), train_options_tape(o).isa, &o->env);
    return fflush(stdout) != 0;
}

int train_run(const struct train_options *o, const struct train_model *tm)
{
    if (o->machine)
        return train_write_machine(o, tm->stage);
    char err[4096];
    if (o->threads > 0)
        omp_set_num_threads((int)o->threads);
    int threads = omp_get_max_threads();

    struct dataset ds;
    if (dataset_load(o->data, o->env.data_dir, &ds, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    if (ds.note[0])
        fprintf(stderr, "note: %s\n", ds.note);
    int status = 1;
    struct nn_model m = {0};
    struct optim *opt = NULL;
    struct trainer tr = {0};
    struct dataset_holdout held = {0};
    FILE *csv = NULL;
    // What the epochs train on, and what they are judged on after each: the
    // training and test sets, or with --val the training set's two parts.
    const struct dataset_split *train = &ds.train, *judge = &ds.test;
    const char *judged = "test";
    if (o->val) {
        if (dataset_holdout(&ds.train, (int)(o->val < INT_MAX ? o->val : INT_MAX),
                            (uint64_t)o->seed, &held, err, sizeof err) != 0) {
            fprintf(stderr, "error: --val %ld: %s\n", o->val, err);
            goto out;
        }
        train = &held.train;
        judge = &held.val;
        judged = "val";
    }
    if ((tm->inspect_check && tm->inspect_check(&ds, tm->ctx, err, sizeof err) != 0) ||
        tm->build(&m, &ds, o, tm->ctx, err, sizeof err) != 0 ||
        (o->load && checkpoint_load(o->load, &m, err, sizeof err) != 0)) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    struct tape_config config = train_options_tape(o);
    struct optim_config oc = optim_defaults(o->optim, (float)o->lr, (float)o->wd);
    oc.isa = config.isa;
    opt = optim_new(&oc, m.params, m.nparams);
    if (!opt) {
        fprintf(stderr, "error: cannot make the optimizer (out of memory?)\n");
        goto out;
    }
    if (trainer_init(&tr, &config, (int)o->batch, ds.train.pixels, ds.train.count, err,
                     sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    tr.progress = progress_wanted(stdout, o->env.term);
    optim_set_threads(opt, train_pass_threads(tape_config(tr.tape)->gemm));
    int fresh;
    if (o->csv && !(csv = train_csv_open(o->csv, tm->stage, &ds, threads, config.isa, &o->env,
                                        o->append, &fresh)))
        goto out;
    // With --val the rows say which recipe and split they are, and only the
    // last epoch's has the test set's loss and accuracy.
    if (csv && fresh)
        fprintf(csv, "%s\n", o->val ? SCHEMA_TRAIN_VAL : SCHEMA_TRAIN);

    printf("%s (%ld parameters) on %s (%d train, %d test images), batch %ld, %s lr %g%s, "
           "backend %s, %d thread%s\n",
           m.desc, nn_param_count(&m), ds.name, ds.train.count, ds.test.count, o->batch,
           optim_name(o->optim), o->lr, o->cosine ? " (cosine decay)" : "", tm->backend,
           threads, threads == 1 ? "" : "s");
    if (o->val)
        printf("validation: %d of the training images held out (seed %ld), %d left to train on; "
               "the test set is read once, after the last epoch\n",
               held.val.count, o->seed, held.train.count);
    fflush(stdout);

    if (o->epochs == 0) {
        double loss, acc;
        if (evaluate(&tr, &m, &ds.test, &loss, &acc, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            goto out;
        }
        printf("%s: test loss %.4f, test accuracy %.2f %%\n", o->load, loss, 100 * acc);
    }
    for (int e = 1; e <= o->epochs; e++) {
        struct epoch_stats st;
        optim_set_lr(opt, (float)train_lr(o, e));
        if (train_epoch(&tr, &m, opt, train, (uint64_t)o->seed, e, &st, err, sizeof err) ||
            evaluate(&tr, &m, judge, &st.test_loss, &st.test_acc, err, sizeof err)) {
            fprintf(stderr, "error: %s\n", err);
            goto out;
        }
        train_epoch_print(&st, judged);
        double test_loss = 0.0, test_acc = 0.0;
        if (o->val && e == o->epochs) {
            if (evaluate(&tr, &m, &ds.test, &test_loss, &test_acc, err, sizeof err) != 0) {
                fprintf(stderr, "error: %s\n", err);
                goto out;
            }
            printf("the test set, read once: test loss %.4f  test accuracy %6.2f %%\n", test_loss,
                   100 * test_acc);
        }
        if (csv && !o->val)
            train_epoch_row(csv, tm->name, ds.name, tm->backend, threads, o->batch,
                            train_recipe_name(o), &st);
        if (csv && o->val) {
            fprintf(csv, "%s,%s,ours,%s,%d,%ld,%s,%g,%ld,%d,%d,%.6f,%.1f,%.6f,%.6f,%.6f,", tm->name,
                    ds.name, tm->backend, threads, o->batch, train_recipe_name(o), o->lr, o->seed,
                    held.val.count, e, st.seconds, st.images_per_s, st.train_loss, st.test_loss,
                    st.test_acc);
            if (e == o->epochs)
                fprintf(csv, "%.6f,%.6f", test_loss, test_acc);
            else
                fprintf(csv, ",");
            fprintf(csv, ",%.1f\n", peak_rss_mb());
        }
        if (csv)
            fflush(csv);
    }
    if (write_test_views(&tr, &m, &ds, o, tm, threads) != 0 ||
        (tm->inspect && tm->inspect(&m, &ds, o, tm, threads) != 0))
        goto out;
    if (o->save && train_save(o->save, &m) != 0)
        goto out;
    if (o->epochs > 0)
        printf("peak memory %.1f MB\n", peak_rss_mb());
    status = 0;
out:
    status = train_csv_close(csv, o->csv, status);
    trainer_free(&tr);
    optim_free(opt);
    nn_model_free(&m);
    dataset_holdout_free(&held);
    dataset_free(&ds);
    return status;
}
