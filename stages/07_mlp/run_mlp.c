// Trains an MLP on MNIST, Fashion-MNIST or the committed sample, one line per
// epoch, and writes the per-epoch curve to a CSV the plots and the chapter
// read. With --load and --epochs 0 it only evaluates a saved model. The
// flags and the run are common/nn/train_cli.c's (stage 08's run_cnn shares
// them); this file adds --layers and builds the MLP.
//   run_mlp [--data NAME|DIR] [--layers 784,256,10] [--batch N] [--epochs N]
//           [--optim sgd|adam] [--lr X] [--wd X] [--seed N] [--threads N]
//           [--gemm NAME] [--save FILE] [--load FILE] [--csv FILE [--append]]
#include <stdio.h>
#include <string.h>

#include "dataset.h"
#include "nn.h"
#include "train_cli.h"

struct layers {
    const char *text;
    int sizes[NN_MAX_LAYERS + 1];
    int n;
};

static void usage(FILE *f, const char *prog, const struct train_options *o)
{
    fprintf(f, "usage: %s [options]\n"
               "  --layers L      the MLP's sizes, input to classes (default 784,256,10)\n",
            prog);
    train_options_usage(f, o);
}

// The MLP of --layers, once the data says how many pixels and classes.
static int build(struct nn_model *m, const struct dataset *ds, const struct train_options *o,
                 const void *ctx, char *err, size_t errlen)
{
    const struct layers *l = ctx;
    if (l->sizes[0] != ds->train.pixels || l->sizes[l->n - 1] != DATASET_CLASSES) {
        snprintf(err, errlen,
                 "--layers %s does not fit %s: its images have %d pixels and %d classes "
                 "(try --layers %d,256,%d)",
                 l->text, ds->name, ds->train.pixels, DATASET_CLASSES, ds->train.pixels,
                 DATASET_CLASSES);
        return -1;
    }
    return nn_mlp_init(m, l->n, l->sizes, (uint64_t)o->seed, err, errlen);
}

int main(int argc, char **argv)
{
    const char *prog = argv[0];
    struct train_options o;
    struct layers l = {.text = "784,256,10"};
    if (train_options_init(&o, 64, 10) != 0)
        return 2;
    for (int i = 1; i < argc;) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        int used = train_options_flag(&o, flag, value);
        if (used < 0) {
            usage(stderr, prog, &o);
            return 2;
        }
        if (used > 0) {
            i += used;
        } else if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
            usage(stdout, prog, &o);
            return 0;
        } else if (!strcmp(flag, "--layers") && value) {
            l.text = value;
            i += 2;
        } else {
            fprintf(stderr, "error: %s, not '%s'\n",
                    strcmp(flag, "--layers") ? "unknown flag" : "--layers wants sizes", flag);
            usage(stderr, prog, &o);
            return 2;
        }
    }
    l.n = nn_parse_sizes(l.text, l.sizes, NN_MAX_LAYERS + 1);
    if (l.n < 2) {
        fprintf(stderr, "error: --layers wants 2 to 9 sizes such as 784,256,10, not '%s'\n",
                l.text);
        usage(stderr, prog, &o);
        return 2;
    }
    if (train_options_finish(&o) != 0) {
        usage(stderr, prog, &o);
        return 2;
    }
    // The CSV's model column: "784,256,10" as "784-256-10".
    char name[128];
    size_t at = 0;
    for (int i = 0; i < l.n && at < sizeof name; i++)
        at += (size_t)snprintf(name + at, sizeof name - at, i ? "-%d" : "%d", l.sizes[i]);
    struct train_model tm = {.stage = "stage-07", .name = name, .backend = o.gemm->name,
                             .build = build, .ctx = &l};
    return train_run(&o, &tm);
}
