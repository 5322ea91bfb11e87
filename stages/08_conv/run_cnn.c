// Trains chapter 8's CNN on MNIST, Fashion-MNIST or the committed sample, one
// line per epoch, and writes the per-epoch curve to a CSV the plots and the
// chapter read. With --load and --epochs 0 it only evaluates a saved model.
// The flags and the run are common/nn/train_cli.c's (stage 07's run_mlp
// shares them); this file adds --conv and builds the CNN.
//   run_cnn [--data NAME|DIR] [--batch N] [--epochs N] [--optim sgd|adam]
//           [--lr X] [--wd X] [--seed N] [--threads N] [--gemm NAME]
//           [--conv auto|im2col|direct] [--save FILE] [--load FILE]
//           [--csv FILE [--append]]
#include <stdio.h>
#include <string.h>

#include "conv.h"
#include "dataset.h"
#include "nn.h"
#include "train_cli.h"

static void usage(FILE *f, const char *prog, const struct train_options *o)
{
    fprintf(f,
            "usage: %s [options]\n"
            "  trains conv 3x3 1->32, ReLU, pool, conv 3x3 32->64, ReLU, pool, 1600->128, "
            "ReLU, 128->10\n"
            "  --conv PATH     how the convolutions compute: auto (by shape), im2col, direct\n"
            "                  (default auto)\n",
            prog);
    train_options_usage(f, o);
}

static int build(struct nn_model *m, const struct dataset *ds, const struct train_options *o,
                 const void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    if (nn_cnn_init(m, (uint64_t)o->seed, err, errlen) != 0)
        return -1;
    if (ds->train.pixels != m->sizes[0] || ds->test.pixels != m->sizes[0]) {
        snprintf(err, errlen, "the CNN reads 28×28 images; %s has %d×%d", ds->name,
                 ds->train.rows, ds->train.cols);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *prog = argv[0];
    struct train_options o;
    enum conv_path conv = CONV_AUTO;
    if (train_options_init(&o, 256, 15) != 0)
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
        } else if (!strcmp(flag, "--conv")) {
            // 1x1 takes none of this network's 3×3 layers: not offered.
            if (!value || conv_parse_path(value, &conv) || conv == CONV_1X1) {
                fprintf(stderr, "error: --conv wants auto, im2col or direct, not '%s'\n",
                        value ? value : "(missing)");
                usage(stderr, prog, &o);
                return 2;
            }
            i += 2;
        } else {
            fprintf(stderr, "error: unknown flag, not '%s'\n", flag);
            usage(stderr, prog, &o);
            return 2;
        }
    }
    if (train_options_finish(&o) != 0) {
        usage(stderr, prog, &o);
        return 2;
    }
    conv_set_path(conv);
    // The CSV's backend column: the conv path, and the GEMM backend when it
    // is not auto ("direct", "im2col+openblas"), as bench_cnn writes it.
    char backend[64];
    if (strcmp(o.gemm->name, "auto") == 0)
        snprintf(backend, sizeof backend, "%s", conv_path_name(conv));
    else
        snprintf(backend, sizeof backend, "%s+%s", conv_path_name(conv), o.gemm->name);
    struct train_model tm = {.stage = "stage-08", .name = "cnn", .backend = backend,
                             .build = build, .ctx = NULL};
    return train_run(&o, &tm);
}
