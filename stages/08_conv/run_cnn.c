// Trains chapter 8's CNN on MNIST, Fashion-MNIST or the committed sample, one
// line per epoch, and writes the per-epoch curve to a CSV the plots and the
// chapter read. With --load and --epochs 0 it only evaluates a saved model.
// The run is common/nn/train_run.c's and the flags common/nn/train_flags.c's
// (stage 07's run_mlp shares both); this file adds --conv and builds the
// CNN. `run_cnn --help` lists the flags.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_flags.h"
#include "inspect.h"
#include "dataset.h"
#include "nn.h"
#include "train_flags.h"
#include "train_run.h"

// --filters, --maps and --image: what conv1 learned, and what it makes of
// one test image.
struct views {
    const char *filters, *maps;
    long image;
};

// A file of the views, written by one of the two functions below.
// bias, when not NULL, holds a value per tile, written as a `# bias:` line.
static int write_view(const char *path, const struct train_options *o,
                      const struct train_model *tm, const struct dataset *ds, int threads,
                      const char *what, const float *tiles, int n, int h, int w, int scale_each,
                      const float *bias)
{
    FILE *f = train_result_open(path, o, tm, ds, threads, what);
    if (!f)
        return -1;
    if (bias) {
        fprintf(f, "# bias:");
        for (int i = 0; i < n; i++)
            fprintf(f, "%s%.4g", i ? "," : " ", (double)bias[i]);
        fputc('\n', f);
    }
    int status = inspect_write_mosaic(f, tiles, n, h, w, 8, scale_each);
    if (status != 0)
        fprintf(stderr, "error: out of memory writing %s\n", path);
    return train_csv_close(f, path, status ? 1 : 0) ? -1 : 0;
}

// conv1's 32 feature maps for test image v->image: the convolution, its bias
// and the ReLU, run on a tape as the training forward runs them.
static int write_maps(struct nn_model *m, const struct dataset *ds,
                      const struct train_options *o, const struct train_model *tm,
                      int threads, const struct views *v)
{
    const struct dataset_split *s = &ds->test;  // v->image < s->count: check_views
    struct tape_config config = train_options_tape(o);
    struct tape *t = tape_new(&config);
    float x[28 * 28];
    int y;
    if (!t) {
        fprintf(stderr, "error: out of memory for a tape\n");
        return -1;
    }
    tape_set_recording(t, 0);
    dataset_batch(s, NULL, (int)v->image, 1, x, &y);
    struct tensor *in = tensor_from(t, 4, (int[]){1, 1, 28, 28}, x, 28 * 28);
    struct tensor *maps = op_conv2d_relu(t, in, m->params[0], m->params[1], 1, 0);
    int status = -1;
    if (!maps) {
        fprintf(stderr, "error: conv1 on test image %ld: %s\n", v->image, tape_error(t));
    } else {
        char what[160];
        snprintf(what, sizeof what,
                 "conv1's feature maps (after its ReLU) for test image %ld, label %d", v->image,
                 y);
        int c = maps->shape[1], h = maps->shape[2], w = maps->shape[3];
        status = write_view(v->maps, o, tm, ds, threads, what, maps->data, c, h, w, 0, NULL);
    }
    tape_free(t);
    if (status == 0)
        printf("conv1's feature maps for test image %ld (label %d): %s\n", v->image, y, v->maps);
    return status;
}

static int check_views(const struct dataset *ds, const void *ctx, char *err, size_t errlen)
{
    const struct views *v = ctx;
    if (v->maps && v->image >= ds->test.count) {
        snprintf(err, errlen, "--image %ld: %s's test set has %d images (0..%d)", v->image,
                 ds->name, ds->test.count, ds->test.count - 1);
        return -1;
    }
    return 0;
}

static int write_views(struct nn_model *m, const struct dataset *ds,
                       const struct train_options *o, const struct train_model *tm, int threads)
{
    const struct views *v = tm->ctx;
    if (v->filters) {
        const struct tensor *w = m->params[0];  // 32×1×3×3, and its bias (32)
        if (write_view(v->filters, o, tm, ds, threads,
                       "conv1's learned filters, one 3x3 tile per output channel", w->data,
                       w->shape[0], w->shape[2], w->shape[3], 0, m->params[1]->data) != 0)
            return -1;
        printf("conv1's %d filters: %s\n", w->shape[0], v->filters);
    }
    if (v->maps && write_maps(m, ds, o, tm, threads, v) != 0)
        return -1;
    return 0;
}

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
    // When gemm() may use Strassen: the rule `make stage-05 strassen` measured.
    gemm_strassen_use_file(env_read().strassen_rule);
    struct train_options o;
    train_options_init(&o, 256, 15);
    struct flags f = {.about = "Trains conv 3x3 1->32, ReLU, pool, conv 3x3 32->64, ReLU, pool, "
                               "1600->128, ReLU, 128->10,\nand tests it after each epoch."};
    train_flags_add(&f, &o);
    int conv = CONV_AUTO;
    flags_add(&f, conv_path_flag(&conv));
    struct views v = {0};
    flags_add(&f, flag_output("--filters", "FILE", &v.filters,
                              "after training, conv1's 32 3x3 filters (a CSV matrix for gnuplot)"));
    flags_add(&f, flag_output("--maps", "FILE", &v.maps,
                              "after training, conv1's 32 feature maps of one test image "
                              "(a CSV matrix)"));
    flags_add(&f, flag_long("--image", "N", &v.image, 0, 1e9,
                            "the test image --maps shows, by its index in the test set"));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    // A path that takes none of this network's 3×3 layers (1x1) would run
    // as another: say so instead.
    char err[256];
    struct conv_shape conv1 = {1, 28, 28, 32, 3, 3, 1, 0};
    if (conv_path_check(conv, &conv1, "this network's 3x3 convolutions", err, sizeof err) != 0)
        return flags_fail(&f, "%s", err);
    o.conv = conv_path_of((enum conv_path_id)conv);
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
                             .build = build, .ctx = &v, .inspect = write_views,
                             .inspect_check = check_views};
    return train_run(&o, &tm);
}
