// Trains chapter 7's MLP through the compiler of common/lazy/: the whole
// step is one graph, compiled once into a few kernels (cached under
// build/lazy-cache/), run once per batch. One line per epoch, and the
// per-epoch curve in a CSV, as stage 07's run_mlp writes them; --engine
// eager trains the same model with the same recipe on chapter 6's tape
// instead (common/nn/train.c), for the comparison.
//   run_compiled [--data NAME|DIR] [--layers 784,256,10] [--batch N] [--epochs N]
//                [--optim sgd|adam] [--lr X] [--lr-decay none|cosine] [--wd X]
//                [--seed N] [--threads N] [--gemm NAME] [--isa NAME]
//                [--engine compiled|eager] [--no-fusion] [--panel BYTES] [--save FILE]
//                [--load FILE] [--csv FILE [--append]] [--report] [--dump-kernels]
//                [--kernels-out FILE] [--dot FILE]
// With --epochs 0 and --load, evaluates the model. With --epochs 0 (and no
// --load), --report, --dump-kernels, --kernels-out and
// --dot compile the step, write what they were asked for, and stop.
// (`run_compiled --help` says what each does.)
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "compiled_mlp.h"
#include "flags.h"
#include "gemm_backend.h"
#include "machine.h"
#include "progress.h"
#include "schemas.h"
#include "train.h"
#include "train_flags.h"
#include "train_run.h"

struct run {
    struct train_options t;        // the recipe: the same fields and flags as run_mlp's
    const char *layers;
    int engine, no_fusion, report, dump;
    long panel;
    const char *dot, *kernels_out;
};

enum { ENGINE_COMPILED, ENGINE_EAGER };
static const char *const engine_names[] = {"compiled", "eager", NULL};
static const char *const engine_about[] = {
    "the step as one graph, compiled into a few kernels",
    "chapter 6's tape, the same recipe, data and CSV rows", NULL};

// listing: parse
// The flags, into r: run_mlp's (train_flags.c), then the compiler's own.
// Returns 0, 1 after --help, or 2 after printing the problem.
static int parse(int argc, char **argv, struct run *r)
{
    *r = (struct run){.layers = "784,256,10"};
    struct train_options *t = &r->t;
    train_options_init(t, 64, 10);
    struct flags f = {.about = "Trains an MLP through the compiler of common/lazy/: the whole "
                               "step is one graph, compiled once into a few kernels."};
    train_flags_add(&f, t);
    flags_add(&f, flag_text("--layers", "L", &r->layers, "the MLP's sizes, input to classes"));
    flags_add(&f, flag_choice("--engine", "E", &r->engine, engine_names, engine_about,
                              "which engine trains"));
    flags_add(&f, flag_switch("--no-fusion", &r->no_fusion, "one kernel per op (what fusion saves)"));
    flags_add(&f, flag_long("--panel", "BYTES", &r->panel, 0, 1e12,
                            "a matmul kernel calls gemm() on panels of rows of C of BYTES "
                            "each, each followed by its epilogue (0: all of C at once)"));
    flags_add(&f, flag_switch("--report", &r->report,
                              "each kernel: what it fuses, the bytes it moves"));
    flags_add(&f, flag_switch("--dump-kernels", &r->dump,
                              "print every generated kernel's C source"));
    flags_add(&f, flag_output("--kernels-out", "FILE", &r->kernels_out,
                              "every generated kernel's C source into FILE, each between "
                              "markers named after it"));
    flags_add(&f, flag_output("--dot", "FILE", &r->dot,
                              "the first layer's graph, for Graphviz (dot -Tsvg FILE)"));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc;
    // --epochs 0 with something to look at compiles the step, writes it and
    // stops: no model to load, no epoch to run.
    long epochs = t->epochs;
    if (epochs == 0 && (r->report || r->dump || r->kernels_out || r->dot))
        t->epochs = 1;
    char err[256];
    int bad = train_options_check(t, err, sizeof err);
    t->epochs = epochs;
    if (bad)
        return flags_fail(&f, "%s", err);
    if (r->engine == ENGINE_EAGER && t->epochs == 0)
        return flags_fail(&f, "--engine eager wants 1 epoch or more");
    int sizes[NN_MAX_LAYERS + 1];
    if (nn_parse_sizes(r->layers, sizes, NN_MAX_LAYERS + 1) < 2)
        return flags_fail(&f, "--layers wants 2 to %d sizes such as 784,256,10, not '%s'",
                          NN_MAX_LAYERS + 1, r->layers);
    return 0;
}
// end listing

static int build_mlp(struct nn_model *m, const struct dataset *ds, const struct train_options *o,
                     const void *ctx, char *err, size_t errlen)
{
    int sizes[NN_MAX_LAYERS + 1];
    int n = nn_parse_sizes(ctx, sizes, NN_MAX_LAYERS + 1);
    if (n < 2 || sizes[0] != ds->train.pixels || sizes[n - 1] != DATASET_CLASSES) {
        snprintf(err, errlen, "--layers %s does not fit %s (its images have %d pixels and %d "
                 "classes: try --layers %d,256,%d)", (const char *)ctx, ds->name,
                 ds->train.pixels, DATASET_CLASSES, ds->train.pixels, DATASET_CLASSES);
        return -1;
    }
    return nn_mlp_init(m, n, sizes, (uint64_t)o->seed, err, errlen);
}

// The model column: "784,256,10" as "784-256-10".
static void model_name(const char *layers, char *name, size_t len)
{
    snprintf(name, len, "%s", layers);
    for (char *p = name; *p; p++)
        if (*p == ',')
            *p = '-';
}

// listing: run_compiled
static int run_compiled(const struct run *r, const char *name)
{
    const struct train_options *o = &r->t;
    char err[8192];
    struct dataset ds;
    if (dataset_load(o->data, o->env.data_dir, &ds, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    int status = 1, threads = omp_get_max_threads(), fresh;
    struct nn_model m = {0};
    struct compiled_mlp c = {0};
    FILE *csv = NULL;
    int *order = malloc(sizeof *order * (size_t)(ds.train.count > 0 ? ds.train.count : 1));
    struct optim_config oc = optim_defaults(o->optim, (float)o->lr, (float)o->wd);
    struct tape_config config = train_options_tape(o);
    struct lazy_options lo = {.gemm = config.gemm, .kernels = &config.kernels,
                              .no_fusion = r->no_fusion,
                              .panel_bytes = r->panel, .cache_dir = o->env.lazy_cache,
                              .cc = o->env.cc};
    if (!order || build_mlp(&m, &ds, o, r->layers, err, sizeof err) != 0 ||
        (o->load && checkpoint_load(o->load, &m, err, sizeof err) != 0) ||
        compiled_mlp_init(&c, &m, (int)o->batch, &oc, &lo, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", order ? err : "out of memory");
        goto out;
    }
    struct lazy_program_stats st, ev;
    lazy_program_stats(c.train, &st);
    lazy_program_stats(c.eval, &ev);
    printf("%s (%ld parameters) on %s (%d train, %d test images), batch %ld, %s lr %g%s, "
           "compiled: a step is %d kernels (%d compiled now, %d from the cache, %.3f s), "
           "%d thread%s\n",
           m.desc, nn_param_count(&m), ds.name, ds.train.count, ds.test.count, o->batch,
           optim_name(o->optim), o->lr, o->cosine ? " (cosine decay)" : "", st.kernels,
           st.compiled + ev.compiled, st.cached + ev.cached,
           st.compile_seconds + ev.compile_seconds, threads, threads == 1 ? "" : "s");
    if (r->report) {
        printf("the training step:\n");
        lazy_program_report(c.train, stdout);
        printf("the evaluation:\n");
        lazy_program_report(c.eval, stdout);
    }
    if (r->dump) {
        lazy_program_dump(c.train, "step", stdout);
        lazy_program_dump(c.eval, "eval", stdout);
    }
    // Both files start with the machine lines of every results file: the
    // kernels' byte counts follow from the caches, and Graphviz skips `#` lines.
    if (r->kernels_out) {
        FILE *f = results_open(r->kernels_out, "stage-09", threads, config.isa, &o->env, 0, NULL);
        if (!f)
            goto out;
        compiled_mlp_kernels(&c, name, f);
        if (results_close(f, r->kernels_out, 0) != 0)
            goto out;
        printf("the generated kernels: %s\n", r->kernels_out);
    }
    if (r->dot) {
        FILE *f = results_open(r->dot, "stage-09", threads, config.isa, &o->env, 0, NULL);
        if (!f)
            goto out;
        compiled_mlp_dot(&c, f);
        if (results_close(f, r->dot, 0) != 0)
            goto out;
        printf("the first layer's graph: %s (dot -Tsvg %s)\n", r->dot, r->dot);
    }
    fflush(stdout);
    if (o->csv && !(csv = train_csv_open(o->csv, "stage-09", &ds, threads, config.isa, &o->env,
                                        o->append, &fresh)))
        goto out;
    if (csv && fresh)
        fprintf(csv, "%s\n", SCHEMA_TRAIN);
    if (o->epochs == 0 && o->load) {
        double test_loss, test_acc;
        if (compiled_mlp_evaluate(&c, &ds.test, &test_loss, &test_acc, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            goto out;
        }
        printf("%s: test loss %.4f, test accuracy %.2f %%\n", o->load, test_loss, 100 * test_acc);
    }
    for (int e = 1; e <= o->epochs; e++) {
        struct epoch_stats st = {.epoch = e};
        compiled_mlp_set_lr(&c, (float)train_lr(o, e));
        if (compiled_mlp_epoch(&c, &ds.train, order, (uint64_t)o->seed, e,
                               progress_wanted(stdout, o->env.term), &st.seconds, &st.train_loss,
                               err, sizeof err) != 0 ||
            compiled_mlp_evaluate(&c, &ds.test, &st.test_loss, &st.test_acc, err,
                                  sizeof err) != 0) {
            fprintf(stderr, "error: epoch %d: %s\n", e, err);
            goto out;
        }
        st.images_per_s = ds.train.count / st.seconds;
        train_epoch_print(&st, "test");
        if (csv)
            train_epoch_row(csv, name, ds.name, r->no_fusion ? "compiled-unfused" : "compiled",
                            threads, o->batch, train_recipe_name(o), &st);
    }
    if (o->save && train_save(o->save, &m) != 0)
        goto out;
    if (o->epochs > 0)
        printf("peak memory %.1f MB\n", peak_rss_mb());
    status = 0;
out:
    status = train_csv_close(csv, o->csv, status);
    compiled_mlp_free(&c);
    nn_model_free(&m);
    free(order);
    dataset_free(&ds);
    return status;
}
// end listing

int main(int argc, char **argv)
{
    // When gemm() may use Strassen: the rule `make stage-05 strassen` measured.
    gemm_strassen_use_file(env_read().strassen_rule);
    struct run r;
    int status = parse(argc, argv, &r);
    if (status)
        return status == 1 ? 0 : status;
    if (r.t.machine)
        return train_write_machine(&r.t, "stage-09");
    if (r.t.threads > 0)
        omp_set_num_threads(r.t.threads);
    char name[128];
    model_name(r.layers, name, sizeof name);
    if (r.engine == ENGINE_EAGER) {
        // Stage 07's run, on the tape: the same recipe, data and CSV rows,
        // with "eager" in the backend column.
        struct train_model tm = {.stage = "stage-09", .name = name, .backend = "eager",
                                 .build = build_mlp, .ctx = r.layers};
        return train_run(&r.t, &tm);
    }
    return run_compiled(&r, name);
}
