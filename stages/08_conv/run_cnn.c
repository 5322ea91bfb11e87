// Trains chapter 8's CNN on MNIST, Fashion-MNIST or the committed sample, one
// line per epoch, and writes the per-epoch curve to a CSV the plots and the
// chapter read. With --load and --epochs 0 it only evaluates a saved model.
//   run_cnn [--data NAME|DIR] [--batch N] [--epochs N] [--optim sgd|adam]
//           [--lr X] [--wd X] [--seed N] [--threads N] [--gemm NAME]
//           [--conv auto|im2col|direct] [--save FILE] [--load FILE]
//           [--csv FILE [--append]]
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "checkpoint.h"
#include "conv.h"
#include "dataset.h"
#include "gemm_backend.h"
#include "nn.h"
#include "optim.h"
#include "train.h"

// The model's name in the CSVs (the PyTorch peer writes the same).
static const char model_name[] = "cnn";

struct options {
    const char *data;
    long batch, epochs, seed, threads;
    enum optim_kind optim;
    double lr, wd;
    const struct gemm_backend *gemm;
    enum conv_path conv;
    const char *save, *load, *csv;
    int append;
};

static void usage(FILE *f, const char *prog)
{
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    fprintf(f,
            "usage: %s [options]\n"
            "  trains conv 3x3 1->32, ReLU, pool, conv 3x3 32->64, ReLU, pool, 1600->128, "
            "ReLU, 128->10\n"
            "  --data NAME     mnist, fashion (from build/datasets/ or $DATA_DIR; `make "
            "datasets`),\n"
            "                  sample (committed), or a directory of IDX files (default "
            "fashion)\n"
            "  --batch N       images per step (default 256)\n"
            "  --epochs N      passes over the training set (default 15; 0 with --load: "
            "evaluate)\n"
            "  --optim NAME    sgd (momentum 0.9) or adam (default adam)\n"
            "  --lr X          learning rate (default 0.001 for adam, 0.05 for sgd)\n"
            "  --wd X          weight decay, an L2 term in the gradient (default 0)\n"
            "  --seed N        initial weights and shuffles (default 1)\n"
            "  --threads N     OpenMP threads (default: all cores)\n"
            "  --conv PATH     how the convolutions compute: auto (by shape), im2col, direct\n"
            "                  (default auto)\n"
            "  --gemm NAME     the GEMM every matmul goes through (default: $GEMM_BACKEND, "
            "else auto):\n",
            prog);
    for (int i = 0; i < count; i++)
        fprintf(f, "                    %-9s %s\n", all[i].name, all[i].about);
    fprintf(f, "  --save FILE     write the trained model\n"
               "  --load FILE     start from a saved model (a CNN's checkpoint)\n"
               "  --csv FILE      per-epoch rows (loss, accuracy, time, memory)\n"
               "  --append        add rows to FILE instead of starting it afresh\n");
}

static int bad(const char *prog, const char *what, const char *value)
{
    fprintf(stderr, "error: %s, not '%s'\n", what, value ? value : "(missing)");
    usage(stderr, prog);
    return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    if (!s)
        return -1;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    if (!s)
        return -1;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

// Returns 0, or the exit status after printing the problem (1: --help).
static int parse(int argc, char **argv, struct options *o)
{
    const char *prog = argv[0];
    *o = (struct options){.data = "fashion", .batch = 256, .epochs = 15, .seed = 1,
                          .optim = OPTIM_ADAM, .lr = -1.0, .conv = CONV_AUTO};
    o->gemm = gemm_backend_from_env();
    if (!o->gemm)
        return bad(prog, "GEMM_BACKEND names no backend", getenv("GEMM_BACKEND"));
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
            usage(stdout, prog);
            return 1;
        } else if (!strcmp(flag, "--append")) {
            o->append = 1;
            continue;
        }
        i++;
        if (!strcmp(flag, "--data")) {
            if (!value || !*value)
                return bad(prog, "--data wants mnist, fashion, sample or a directory", value);
            o->data = value;
        } else if (!strcmp(flag, "--batch")) {
            if (parse_long(value, 1, 65536, &o->batch))
                return bad(prog, "--batch wants a count in 1..65536", value);
        } else if (!strcmp(flag, "--epochs")) {
            if (parse_long(value, 0, 100000, &o->epochs))
                return bad(prog, "--epochs wants a count in 0..100000", value);
        } else if (!strcmp(flag, "--optim")) {
            if (!value || optim_parse(value, &o->optim))
                return bad(prog, "--optim wants sgd or adam", value);
        } else if (!strcmp(flag, "--lr")) {
            if (parse_double(value, 1e-12, 100.0, &o->lr) || o->lr <= 0)
                return bad(prog, "--lr wants a number above 0", value);
        } else if (!strcmp(flag, "--wd")) {
            if (parse_double(value, 0.0, 10.0, &o->wd))
                return bad(prog, "--wd wants a number in 0..10", value);
        } else if (!strcmp(flag, "--seed")) {
            if (parse_long(value, 0, LONG_MAX, &o->seed))
                return bad(prog, "--seed wants a number of 0 or more", value);
        } else if (!strcmp(flag, "--threads")) {
            if (parse_long(value, 1, 1024, &o->threads))
                return bad(prog, "--threads wants a count in 1..1024", value);
        } else if (!strcmp(flag, "--gemm")) {
            o->gemm = value ? gemm_backend_find(value) : NULL;
            if (!o->gemm)
                return bad(prog, "--gemm wants one of the backends below", value);
        } else if (!strcmp(flag, "--conv")) {
            // 1x1 takes none of this network's 3×3 layers: not offered.
            if (!value || conv_parse_path(value, &o->conv) || o->conv == CONV_1X1)
                return bad(prog, "--conv wants auto, im2col or direct", value);
        } else if (!strcmp(flag, "--save") || !strcmp(flag, "--load") ||
                   !strcmp(flag, "--csv")) {
            if (!value || !*value)
                return bad(prog, "a file name is missing after", flag);
            if (!strcmp(flag, "--save"))
                o->save = value;
            else if (!strcmp(flag, "--load"))
                o->load = value;
            else
                o->csv = value;
        } else {
            return bad(prog, "unknown flag", flag);
        }
    }
    if (o->lr < 0)
        o->lr = o->optim == OPTIM_ADAM ? 1e-3 : 0.05;
    if (o->epochs == 0 && !o->load)
        return bad(prog, "--epochs 0 only evaluates a model given with --load", "0");
    if (o->append && !o->csv)
        return bad(prog, "--append adds to the file of --csv, which is missing", "--append");
    return 0;
}

// The CSV of design.md: machine lines, the dataset, then the header. With
// --append onto a file that has them already, only rows are added.
static FILE *open_csv(const struct options *o, const struct dataset *ds, int threads)
{
    int fresh = 1;
    if (o->append) {
        FILE *old = fopen(o->csv, "r");
        if (old) {
            fresh = fgetc(old) == EOF;
            fclose(old);
        }
    }
    FILE *f = fopen(o->csv, fresh ? "w" : "a");
    if (!f) {
        fprintf(stderr, "error: cannot write %s: %s\n", o->csv, strerror(errno));
        return NULL;
    }
    if (fresh) {
        bench_write_machine(f, "stage-08", threads);
        fprintf(f, "# dataset: %s\n# dataset_dir: %s\n# train_images: %d\n# test_images: %d\n",
                ds->name, ds->dir, ds->train.count, ds->test.count);
        fprintf(f, "model,dataset,framework,backend,threads,batch,optimizer,epoch,seconds,"
                   "images_per_s,train_loss,test_loss,test_acc,peak_rss_mb\n");
    }
    return f;
}

static int run(const struct options *o)
{
    char err[4096];
    if (o->threads > 0)
        omp_set_num_threads((int)o->threads);
    int threads = omp_get_max_threads();
    conv_set_path(o->conv);

    struct dataset ds;
    if (dataset_load(o->data, NULL, &ds, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    int status = 1;
    struct nn_model m = {0};
    struct optim *opt = NULL;
    struct trainer tr = {0};
    FILE *csv = NULL;
    if (nn_cnn_init(&m, (uint64_t)o->seed, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    if (ds.train.pixels != m.sizes[0] || ds.test.pixels != m.sizes[0]) {
        fprintf(stderr, "error: the CNN reads 28×28 images; %s has %d×%d\n", ds.name,
                ds.train.rows, ds.train.cols);
        goto out;
    }
    if (o->load && checkpoint_load(o->load, &m, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    struct optim_config oc = optim_defaults(o->optim, (float)o->lr, (float)o->wd);
    opt = optim_new(&oc, m.params, m.nparams);
    if (!opt) {
        fprintf(stderr, "error: cannot make the optimizer (out of memory?)\n");
        goto out;
    }
    if (trainer_init(&tr, o->gemm, (int)o->batch, ds.train.pixels, ds.train.count, err,
                     sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        goto out;
    }
    if (o->csv && !(csv = open_csv(o, &ds, threads)))
        goto out;

    // The CSV's backend column: the conv path, and the GEMM backend when it
    // is not auto ("direct", "im2col+openblas"), as bench_cnn writes it.
    char backend[64];
    if (strcmp(o->gemm->name, "auto") == 0)
        snprintf(backend, sizeof backend, "%s", conv_path_name(o->conv));
    else
        snprintf(backend, sizeof backend, "%s+%s", conv_path_name(o->conv), o->gemm->name);

    printf("%s (%ld parameters) on %s (%d train, %d test images), batch %ld, %s lr %g, "
           "%s conv, %s GEMM, %d thread%s\n",
           m.desc, nn_param_count(&m), ds.name, ds.train.count, ds.test.count, o->batch,
           optim_name(o->optim), o->lr, conv_path_name(o->conv), o->gemm->name, threads,
           threads == 1 ? "" : "s");
    fflush(stdout);

    if (o->epochs == 0) {
        double loss, acc;
        if (evaluate(&tr, &m, &ds.test, &loss, &acc, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            goto out;
        }
        printf("%s: test loss %.4f, test accuracy %.2f %%\n", o->load, loss, 100 * acc);
        status = 0;
        goto out;
    }
    for (int e = 1; e <= o->epochs; e++) {
        struct epoch_stats st;
        if (train_epoch(&tr, &m, opt, &ds.train, (uint64_t)o->seed, e, &st, err, sizeof err) ||
            evaluate(&tr, &m, &ds.test, &st.test_loss, &st.test_acc, err, sizeof err)) {
            fprintf(stderr, "error: %s\n", err);
            goto out;
        }
        printf("epoch %3d  loss %.4f  test loss %.4f  test accuracy %6.2f %%  %7.3f s  %8.0f "
               "images/s\n",
               e, st.train_loss, st.test_loss, 100 * st.test_acc, st.seconds, st.images_per_s);
        fflush(stdout);
        if (csv) {
            fprintf(csv, "%s,%s,ours,%s,%d,%ld,%s,%d,%.6f,%.1f,%.6f,%.6f,%.6f,%.1f\n",
                    model_name, ds.name, backend, threads, o->batch, optim_name(o->optim),
                    e, st.seconds, st.images_per_s, st.train_loss, st.test_loss, st.test_acc,
                    peak_rss_mb());
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
    printf("peak memory %.1f MB\n", peak_rss_mb());
    status = 0;
out:
    if (csv && fclose(csv) != 0 && status == 0) {
        fprintf(stderr, "error: writing %s failed\n", o->csv);
        status = 1;
    }
    trainer_free(&tr);
    optim_free(opt);
    nn_model_free(&m);
    dataset_free(&ds);
    return status;
}

int main(int argc, char **argv)
{
    struct options o;
    int status = parse(argc, argv, &o);
    if (status == 1)
        return 0;  // --help
    if (status != 0)
        return status;
    return run(&o);
}
