// Trains chapter 7's MLP through the compiler of common/lazy/: the whole
// step is one graph, compiled once into a few kernels (cached under
// build/lazy-cache/), run once per batch. One line per epoch, and the
// per-epoch curve in a CSV, as stage 07's run_mlp writes them; --engine
// eager trains the same model with the same recipe on chapter 6's tape
// instead (common/nn/train.c), for the comparison.
//   run_compiled [--data NAME|DIR] [--layers 784,256,10] [--batch N] [--epochs N]
//                [--optim sgd|adam] [--lr X] [--lr-decay none|cosine] [--wd X]
//                [--seed N] [--threads N] [--gemm NAME] [--engine compiled|eager]
//                [--no-fusion] [--panel BYTES] [--save FILE] [--csv FILE [--append]]
//                [--report] [--dump-kernels] [--dot FILE]
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "checkpoint.h"
#include "compiled_mlp.h"
#include "progress.h"
#include "train.h"
#include "train_cli.h"

struct run {
    struct train_options t;        // the recipe: the same fields as run_mlp's
    const char *layers;
    int eager, no_fusion, report, dump;
    long panel;
    const char *dot;
};

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [options]\n"
            "  --data NAME      mnist, fashion, sample or a directory (default fashion)\n"
            "  --layers L       the MLP's sizes (default 784,256,10)\n"
            "  --batch N        images per step (default 64)\n"
            "  --epochs N       passes over the training set (default 10; 0: compile only)\n"
            "  --optim NAME     sgd (momentum 0.9) or adam (default adam)\n"
            "  --lr X           learning rate (default 0.001 for adam, 0.05 for sgd)\n"
            "  --lr-decay D     none or cosine (default none)\n"
            "  --wd X           weight decay (default 0)\n"
            "  --seed N         initial weights and shuffles (default 1)\n"
            "  --threads N      OpenMP threads (default: all cores)\n"
            "  --gemm NAME      the GEMM the matmul kernels call (default auto)\n"
            "  --engine E       compiled (default) or eager: chapter 6's tape, the same recipe\n"
            "  --no-fusion      one kernel per op (what fusion saves)\n"
            "  --panel BYTES    a matmul kernel with an epilogue calls gemm() on panels of\n"
            "                   rows of C of BYTES each (default 0: all of C at once)\n"
            "  --save FILE      write the trained model (stage 07's format)\n"
            "  --csv FILE       per-epoch rows; --append adds to FILE\n"
            "  --report         each kernel: what it fuses, the bytes it moves\n"
            "  --dump-kernels   print every generated kernel's C source\n"
            "  --dot FILE       the first layer's graph, for Graphviz (dot -Tsvg FILE)\n",
            prog);
}

static int bad(const char *prog, const char *what, const char *value)
{
    fprintf(stderr, "error: %s, not '%s'\n", what, value ? value : "(missing)");
    usage(stderr, prog);
    return 2;
}

// listing: parse
// The flags, into r. Returns 0, 1 after --help, or 2 after printing the
// problem.
static int parse(int argc, char **argv, struct run *r)
{
    const char *prog = argv[0];
    *r = (struct run){.layers = "784,256,10"};
    struct train_options *t = &r->t;
    *t = (struct train_options){.data = "fashion", .batch = 64, .epochs = 10, .seed = 1,
                                .optim = OPTIM_ADAM, .lr = -1.0,
                                .gemm = gemm_backend_find("auto")};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *on = !strcmp(flag, "--no-fusion") ? &r->no_fusion
                  : !strcmp(flag, "--report") ? &r->report
                  : !strcmp(flag, "--dump-kernels") ? &r->dump
                  : !strcmp(flag, "--append") ? &t->append : NULL;
        if (on) {
            *on = 1;
            continue;
        }
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
            usage(stdout, prog);
            return 1;
        }
        i++;
        if (!strcmp(flag, "--batch")) {
            if (args_long(v, 1, 65536, &t->batch))
                return bad(prog, "--batch wants a count in 1..65536", v);
        } else if (!strcmp(flag, "--epochs")) {
            if (args_long(v, 0, 100000, &t->epochs))
                return bad(prog, "--epochs wants a count in 0..100000", v);
        } else if (!strcmp(flag, "--seed")) {
            if (args_long(v, 0, 1L << 62, &t->seed))
                return bad(prog, "--seed wants a number of 0 or more", v);
        } else if (!strcmp(flag, "--threads")) {
            if (args_long(v, 1, 1024, &t->threads))
                return bad(prog, "--threads wants a count in 1..1024", v);
        } else if (!strcmp(flag, "--panel")) {
            if (args_long(v, 0, 1L << 40, &r->panel))
                return bad(prog, "--panel wants bytes (0: all of C)", v);
        } else if (!strcmp(flag, "--lr")) {
            if (args_double(v, 1e-12, 100.0, &t->lr))
                return bad(prog, "--lr wants a number above 0", v);
        } else if (!strcmp(flag, "--wd")) {
            if (args_double(v, 0.0, 10.0, &t->wd))
                return bad(prog, "--wd wants a number in 0..10", v);
        } else if (!strcmp(flag, "--optim")) {
            if (!v || optim_parse(v, &t->optim))
                return bad(prog, "--optim wants sgd or adam", v);
        } else if (!strcmp(flag, "--lr-decay")) {
            if (!v || !args_in_list("none,cosine", v))
                return bad(prog, "--lr-decay wants none or cosine", v);
            t->cosine = !strcmp(v, "cosine");
        } else if (!strcmp(flag, "--engine")) {
            if (!v || !args_in_list("compiled,eager", v))
                return bad(prog, "--engine wants compiled or eager", v);
            r->eager = !strcmp(v, "eager");
        } else if (!strcmp(flag, "--gemm")) {
            if (!v || !(t->gemm = gemm_backend_find(v)))
                return bad(prog, "--gemm wants a backend (naive, ..., auto, openblas)", v);
        } else if (!strcmp(flag, "--data") || !strcmp(flag, "--layers") ||
                   !strcmp(flag, "--save") || !strcmp(flag, "--csv") || !strcmp(flag, "--dot")) {
            if (!v || !*v)
                return bad(prog, "a value is missing after", flag);
            const char **to = !strcmp(flag, "--data") ? &t->data
                              : !strcmp(flag, "--layers") ? &r->layers
                              : !strcmp(flag, "--save") ? &t->save
                              : !strcmp(flag, "--csv") ? &t->csv : &r->dot;
            *to = v;
        } else {
            return bad(prog, "unknown flag", flag);
        }
    }
    if (t->lr < 0)
        t->lr = t->optim == OPTIM_ADAM ? 1e-3 : 0.05;
    if (t->append && !t->csv)
        return bad(prog, "--append adds to the file of --csv, which is missing", "--append");
    if (r->eager && t->epochs == 0)
        return bad(prog, "--engine eager wants 1 epoch or more", "0");
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
    if (dataset_load(o->data, NULL, &ds, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    int status = 1, threads = omp_get_max_threads(), fresh;
    struct nn_model m = {0};
    struct compiled_mlp c = {0};
    FILE *csv = NULL;
    int *order = malloc(sizeof *order * (size_t)(ds.train.count > 0 ? ds.train.count : 1));
    struct optim_config oc = optim_defaults(o->optim, (float)o->lr, (float)o->wd);
    struct lazy_options lo = {.gemm = o->gemm, .no_fusion = r->no_fusion, .panel_bytes = r->panel};
    if (!order || build_mlp(&m, &ds, o, r->layers, err, sizeof err) != 0 ||
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
        lazy_program_dump(c.train, stdout);
        lazy_program_dump(c.eval, stdout);
    }
    if (r->dot) {
        FILE *f = fopen(r->dot, "w");
        if (!f) {
            fprintf(stderr, "error: cannot write %s\n", r->dot);
            goto out;
        }
        compiled_mlp_dot(&c, f);
        fclose(f);
        printf("the first layer's graph: %s (dot -Tsvg %s)\n", r->dot, r->dot);
    }
    fflush(stdout);
    if (o->csv && !(csv = train_csv_open(o->csv, "stage-09", &ds, threads, o->append, &fresh)))
        goto out;
    if (csv && fresh)
        fprintf(csv, "model,dataset,framework,backend,threads,batch,optimizer,epoch,seconds,"
                     "images_per_s,train_loss,test_loss,test_acc,peak_rss_mb\n");
    for (int e = 1; e <= o->epochs; e++) {
        double secs, loss, test_loss, test_acc;
        compiled_mlp_set_lr(&c, (float)train_lr(o, e));
        if (compiled_mlp_epoch(&c, &ds.train, order, (uint64_t)o->seed, e, progress_wanted(stdout),
                               &secs, &loss, err, sizeof err) != 0 ||
            compiled_mlp_evaluate(&c, &ds.test, &test_loss, &test_acc, err, sizeof err) != 0) {
            fprintf(stderr, "error: epoch %d: %s\n", e, err);
            goto out;
        }
        printf("epoch %3d  loss %.4f  test loss %.4f  test accuracy %6.2f %%  %7.3f s  %8.0f "
               "images/s\n", e, loss, test_loss, 100 * test_acc, secs, ds.train.count / secs);
        fflush(stdout);
        if (csv) {
            fprintf(csv, "%s,%s,ours,%s,%d,%ld,%s,%d,%.6f,%.1f,%.6f,%.6f,%.6f,%.1f\n", name,
                    ds.name, r->no_fusion ? "compiled-unfused" : "compiled", threads, o->batch,
                    train_recipe_name(o), e, secs, ds.train.count / secs, loss, test_loss,
                    test_acc, peak_rss_mb());
            fflush(csv);
        }
    }
    if (o->save) {
        if (checkpoint_save(o->save, &m, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            goto out;
        }
        printf("saved %s\n", o->save);
    }
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
    struct run r;
    int status = parse(argc, argv, &r);
    if (status)
        return status == 1 ? 0 : status;
    if (r.t.threads > 0)
        omp_set_num_threads((int)r.t.threads);
    char name[128];
    model_name(r.layers, name, sizeof name);
    if (r.eager) {
        // Stage 07's run, on the tape: the same recipe, data and CSV rows,
        // with "eager" in the backend column.
        struct train_model tm = {.stage = "stage-09", .name = name, .backend = "eager",
                                 .build = build_mlp, .ctx = r.layers};
        return train_run(&r.t, &tm);
    }
    return run_compiled(&r, name);
}
