// Trains chapter 8's CNN on MNIST, Fashion-MNIST or the committed sample, one
// line per epoch, and writes the per-epoch curve to a CSV the plots and the
// chapter read. With --load and --epochs 0 it only evaluates a saved model.
// The run is common/nn/train_run.c's and the flags common/nn/train_flags.c's
// (stage 07's run_mlp shares both); this file adds --conv and builds the
// CNN. `run_cnn --help` lists the flags.
#include <stdio.h>
#include <string.h>

#include "conv.h"
#include "dataset.h"
#include "nn.h"
#include "train_flags.h"
#include "train_run.h"

static int build(struct nn_model *m, const struct dataset *ds, const struct train_options *o,
                 const void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    if (nn_cnn_init(m, (uint64_t)o->seed, err, errlen) != 0)
        return -1;
    if (ds->train.pixels != m->inputs || ds->test.pixels != m->inputs) {
        snprintf(err, errlen, "the CNN reads 28×28 images; %s has %d×%d", ds->name,
                 ds->train.rows, ds->train.cols);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct train_options o;
    train_options_init(&o, 256, 15);
    struct flags f = {.about = "Trains conv 3x3 1->32, ReLU, pool, conv 3x3 32->64, ReLU, pool, "
                               "1600->128, ReLU, 128->10,\nand tests it after each epoch."};
    train_flags_add(&f, &o);
    flags_add(&f, conv_path_flag(&o.conv));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    // 1x1 takes none of this network's 3×3 layers: it would run as im2col.
    if (o.conv == CONV_1X1)
        return flags_fail(&f, "--conv 1x1 takes none of this network's 3x3 convolutions: "
                              "use auto, im2col or direct");
    char err[256];
    if (train_options_check(&o, err, sizeof err) != 0)
        return flags_fail(&f, "%s", err);
    // The CSV's backend column: the conv path, and the GEMM backend when it
    // is not auto ("direct", "im2col+openblas"), as bench_cnn writes it.
    char backend[64];
    struct tape_config tape = train_options_tape(&o);
    if (strcmp(tape.gemm->name, "auto") == 0)
        snprintf(backend, sizeof backend, "%s", conv_path_name(tape.conv));
    else
        snprintf(backend, sizeof backend, "%s+%s", conv_path_name(tape.conv), tape.gemm->name);
    struct train_model tm = {.stage = "stage-08", .name = "cnn", .backend = backend,
                             .build = build, .ctx = NULL};
    return train_run(&o, &tm);
}
