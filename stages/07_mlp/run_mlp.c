// Trains an MLP on MNIST, Fashion-MNIST or the committed sample, one line per
// epoch, and writes the per-epoch curve to a CSV the plots and the chapter
// read. With --load and --epochs 0 it only evaluates a saved model. The run
// is common/nn/train_run.c's and the flags common/nn/train_flags.c's
// (stage 08's run_cnn shares both); this file adds --layers and builds the
// MLP. `run_mlp --help` lists the flags.
#include <stdio.h>
#include <string.h>

#include "dataset.h"
#include "gemm_backend.h"
#include "nn.h"
#include "train_flags.h"
#include "train_run.h"

struct layers {
    const char *text;
    int sizes[NN_MAX_LAYERS + 1];
    int n;
};

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
    struct train_options o;
    struct layers l = {.text = "784,256,10"};
    train_options_init(&o, 64, 10);
    struct flags f = {.about = "Trains an MLP (Linear, ReLU, ..., Linear) and tests it after "
                               "each epoch."};
    train_flags_add(&f, &o);
    flags_add(&f, flag_text("--layers", "L", &l.text, "the MLP's sizes, input to classes"));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    l.n = nn_parse_sizes(l.text, l.sizes, NN_MAX_LAYERS + 1);
    if (l.n < 2)
        return flags_fail(&f, "--layers wants 2 to %d sizes such as 784,256,10, not '%s'",
                          NN_MAX_LAYERS + 1, l.text);
    char err[256];
    if (train_options_check(&o, err, sizeof err) != 0)
        return flags_fail(&f, "%s", err);
    // The CSV's model column: "784,256,10" as "784-256-10".
    char name[128];
    size_t at = 0;
    for (int i = 0; i < l.n && at < sizeof name; i++)
        at += (size_t)snprintf(name + at, sizeof name - at, i ? "-%d" : "%d", l.sizes[i]);
    struct train_model tm = {.stage = "stage-07", .name = name,
                             .backend = train_options_tape(&o).gemm->name, .build = build,
                             .ctx = &l};
    return train_run(&o, &tm);
}
