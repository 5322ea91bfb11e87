// Trains an MLP on MNIST, Fashion-MNIST or the committed sample, one line per
// epoch, and writes the per-epoch curve to a CSV the plots and the chapter
// read. With --load and --epochs 0 it only evaluates a saved model. The run
// is common/nn/train_run.c's and the flags common/nn/train_flags.c's
// (stage 08's run_cnn shares both); this file adds --layers and builds the
// MLP. `run_mlp --help` lists the flags.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "gemm_backend.h"
#include "inspect.h"
#include "nn.h"
#include "train_flags.h"
#include "train_run.h"

struct layers {
    const char *text;
    int sizes[NN_MAX_LAYERS + 1];
    int n;
    const char *templates;  // --templates FILE
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

// --templates: the first layer's weights, one column of w (784×H) per hidden
// unit, each drawn as the 28×28 image it responds to most: the pixels where
// it is positive push the unit up, where it is negative push it down.
static int write_templates(struct nn_model *m, const struct dataset *ds,
                           const struct train_options *o, const struct train_model *tm,
                           int threads)
{
    const struct layers *l = tm->ctx;
    if (!l->templates)
        return 0;
    const struct tensor *w = m->params[0];
    int in = w->shape[0], units = w->shape[1];
    if (in != ds->train.rows * ds->train.cols) {
        fprintf(stderr, "error: --templates: the first layer takes %d inputs, not the %d×%d "
                        "pixels of an image\n", in, ds->train.rows, ds->train.cols);
        return -1;
    }
    float *tiles = malloc((size_t)in * (size_t)units * sizeof *tiles);
    if (!tiles) {
        fprintf(stderr, "error: out of memory for %d templates\n", units);
        return -1;
    }
    for (int u = 0; u < units; u++)
        for (int p = 0; p < in; p++)
            tiles[(size_t)u * in + p] = w->data[(size_t)p * units + u];
    FILE *f = train_result_open(l->templates, o, tm, ds, threads,
                                "the first layer's weights, one tile per hidden unit, as the "
                                "image it weighs");
    int status = -1;
    if (f) {
        // A square-ish grid: 16×16 for 256 units.
        int cols = 1;
        while (cols * cols < units)
            cols++;
        status = inspect_write_mosaic(f, tiles, units, ds->train.rows, ds->train.cols, cols, 1);
        if (status != 0)
            fprintf(stderr, "error: out of memory writing %s\n", l->templates);
        status = train_csv_close(f, l->templates, status ? 1 : 0) ? -1 : 0;
    }
    free(tiles);
    if (status == 0)
        printf("the first layer's %d templates: %s\n", units, l->templates);
    return status;
}

int main(int argc, char **argv)
{
    // When gemm() may use Strassen: the rule `make stage-05 strassen` measured.
    gemm_strassen_use_file(env_read().strassen_rule);
    struct train_options o;
    struct layers l = {.text = "784,256,10"};
    train_options_init(&o, 64, 10);
    struct flags f = {.about = "Trains an MLP (Linear, ReLU, ..., Linear) and tests it after "
                               "each epoch."};
    train_flags_add(&f, &o);
    flags_add(&f, flag_text("--layers", "L", &l.text, "the MLP's sizes, input to classes"));
    flags_add(&f, flag_output("--templates", "FILE", &l.templates,
                              "after training, the first layer's weights as 28x28 images "
                              "(a CSV matrix for gnuplot)"));
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
                             .ctx = &l, .inspect = write_templates};
    return train_run(&o, &tm);
}
