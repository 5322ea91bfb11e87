// Where a step of chapter 8's CNN goes, and how fast an epoch is. For each
// convolution path (im2col, implicit, direct, winograd, and auto, which
// picks by shape) and each thread count:
//   - every layer of the network at batch 256 (the two convolutions with
//     their ReLU, the two poolings, the two Linear layers), forward and
//     backward timed alone, with GFLOPS and % of peak for the convolutions;
//   - training steps of the whole network, reported as seconds per epoch of
//     60,000 images, and inference (a forward without the tape) in images/s;
//   - the training step with the arena and with planned memory in the same
//     minutes: its live and reserved bytes, its time;
//   - conv1's fused block against the memory: the time to move the bytes it
//     must read and write at the machine's measured copy bandwidth.
// Each convolution path is checked against a double-precision reference
// (output, dW, dbias, dx) before it is timed; --errors writes how far off
// each one was.
//   bench_cnn [--threads N] [--conv A,B] (the paths of conv_path.c)
//             [--reps R] [--steps N] [--batch N] [--data NAME] [--csv FILE]
//             [--layers FILE] [--turns FILE] [--errors FILE] [--fusion FILE]
//             [--memory arena,planned] [--memory-csv FILE] [--lifetimes FILE]
//             [--bandwidth FILE] [--quick]
// Writes build/results/stage-08.csv (speed), stage-08-layers.csv,
// stage-08-fusion.csv (what fusing the ReLU and the pooling into the
// convolution saves, and the whole step from im2col to fused),
// stage-08-memory.csv, stage-08-lifetimes.csv (one planned step) and
// stage-08-bandwidth.csv (conv1's fused block against its bytes).
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "conv_flags.h"
#include "dataset.h"
#include "flags.h"
#include "machine.h"
#include "mat.h"
#include "nn.h"
#include "ops.h"
#include "optim.h"
#include "peak.h"
#include "schemas.h"
#include "tape.h"
#include "tape_flags.h"
#include "timer.h"
#include "train.h"
#include "train_run.h"

// An epoch of Fashion-MNIST or MNIST: the unit every time is reported in.
enum { EPOCH_IMAGES = 60000, WARMUP_STEPS = 3 };

static const enum conv_path_id paths[] = {CONV_IM2COL, CONV_IMPLICIT, CONV_DIRECT, CONV_WINOGRAD,
                                       CONV_AUTO};

// The network's layers, with the shape of their input (NCHW, or b×in). The
// network runs each convolution, its ReLU and its pooling as one op
// (op_conv2d_relu_maxpool2): the rows conv1_pool and conv2_pool time that
// op, the rows before them its two parts as ops of their own.
enum layer_kind { CONV_RELU, POOL, LINEAR, CONV_POOL };
struct layer {
    const char *name;
    enum layer_kind kind;
    int c, h, w;   // input channels and size; for LINEAR, c is in
    int oc;        // output channels; for LINEAR, out
    int first;     // 1: its input needs no gradient (the images)
};
static const struct layer layers[] = {
    {"conv1", CONV_RELU, 1, 28, 28, 32, 1},
    {"pool1", POOL, 32, 26, 26, 32, 0},
    {"conv2", CONV_RELU, 32, 13, 13, 64, 0},
    {"pool2", POOL, 64, 11, 11, 64, 0},
    {"conv1_pool", CONV_POOL, 1, 28, 28, 32, 1},
    {"conv2_pool", CONV_POOL, 32, 13, 13, 64, 0},
    {"fc1", LINEAR, 1600, 1, 1, 128, 0},
    {"fc2", LINEAR, 128, 1, 1, 10, 0},
};
enum { NLAYERS = sizeof layers / sizeof layers[0] };

// The studies this program runs (the table `studies` below says what each is).
enum study_id { CHECK, LAYERS, TURNS, FUSION, BANDWIDTH, SPEED, MEMORY, LIFETIMES, STAIRCASE,
                STUDIES };

struct options {
    struct environment env;  // what the environment says (cli/env.h)
    int threads;             // 0: 1 and 2 (and all cores, when more)
    struct flag_list convs;  // the paths asked for (enum conv_path_id); n 0: every one above
    int reps, steps, batch, quick;
    int im2col_step;                 // only the timed step of the im2col path, unfused
    const char *data;
    struct flag_list memory;         // the memory study's modes (enum memory_mode)
    const char *file[STUDIES];       // each study's file (--layers FILE ...), or NULL
};

// Path p's name, as the table spells it.
static const char *path_name(enum conv_path_id p)
{
    return conv_path_name(conv_path_of(p));
}

// The path p takes for layer l's 3×3 convolution (conv_choose).
static enum conv_path_id path_taken(enum conv_path_id p, const struct layer *l)
{
    struct conv_shape s = {l->c, l->h, l->w, l->oc, 3, 3, 1, 0};
    return conv_path_id(conv_choose(conv_path_of(p), &s));
}

static int wanted(const struct options *o, enum conv_path_id p)
{
    if (o->convs.n == 0)
        return 1;
    for (int i = 0; i < o->convs.n; i++)
        if (o->convs.v[i] == (int)p)
            return 1;
    return 0;
}

// A tape whose convolutions take path (the rest as the program's defaults).
static struct tape *tape_for(enum conv_path_id path)
{
    struct tape_config c = tape_config_default();
    c.conv = conv_path_of(path);
    return tape_new(&c);
}

static double pct_of_peak(double gflops, int threads)
{
    struct peak p = peak_get(isa_best(), threads);
    return p.gflops > 0 ? 100.0 * gflops / p.gflops : 0.0;
}

// FLOPs of a layer's forward for n images, and of its backward (dW, and dX
// unless it is the first layer). Pooling counts none.
static double layer_flops(const struct layer *l, int n, int backward)
{
    double fwd = 0.0;
    if (l->kind == CONV_RELU || l->kind == CONV_POOL) {
        int oh = l->h - 2, ow = l->w - 2;
        fwd = 2.0 * n * l->oc * l->c * 9 * oh * ow;
    } else if (l->kind == LINEAR) {
        fwd = 2.0 * n * l->c * l->oc;
    }
    return backward ? (l->first ? 1.0 : 2.0) * fwd : fwd;
}

// --- the check: one path against a double-precision reference -----------------

// The four results the check compares, in the order of its errors.
static const char *const check_parts[] = {"output", "dW", "dbias", "dx"};
enum { CHECK_PARTS = 4 };

// On two images, loss = Σ relu(conv(x)): so dy is 1 where the output is
// positive, 0 elsewhere. Compares y, dW, dbias and dx with loops in double;
// error[p] becomes each one's largest error relative to its largest value.
static int check_conv(const struct layer *l, enum conv_path_id path, double error[CHECK_PARTS])
{
    enum { N = 2 };
    int c = l->c, h = l->h, w = l->w, oc = l->oc, oh = h - 2, ow = w - 2;
    struct tape *t = tape_for(path);
    struct tensor *wt = tensor_param(4, (int[]){oc, c, 3, 3}), *bias = tensor_param(1, (int[]){oc});
    int ok = 0, grads = 1;  // grads: dW and dx have a reference here
    double *ref = NULL, *dw = NULL, *db = NULL, *dx = NULL;
    if (!t || !wt || !bias)
        goto out;
    mat_fill_random(wt->data, oc, c * 9, c * 9, 11);
    mat_fill_random(bias->data, 1, oc, oc, 12);
    struct tensor *x = tensor_new(t, 4, (int[]){N, c, h, w});
    if (!x)
        goto out;
    mat_fill_random(x->data, N, c * h * w, c * h * w, 13);
    x->requires_grad = 1;
    struct tensor *y = op_conv2d_relu(t, x, wt, bias, 1, 0);
    tape_keep(t, y);  // compared below, after the backward
    if (!y || tape_backward(t, op_sum(t, y)) != 0) {
        fprintf(stderr, "error: %s on %s: %s\n", l->name, path_name(path), tape_error(t));
        goto out;
    }
    long ny = (long)N * oc * oh * ow;
    ref = calloc((size_t)ny, sizeof *ref);
    dw = calloc((size_t)oc * c * 9, sizeof *dw);
    db = calloc((size_t)oc, sizeof *db);
    dx = calloc((size_t)N * c * h * w, sizeof *dx);
    if (!ref || !dw || !db || !dx)
        goto out;
    for (int i = 0; i < N; i++)
        for (int o = 0; o < oc; o++)
            for (int r = 0; r < oh; r++)
                for (int q = 0; q < ow; q++) {
                    double s = bias->data[o];
                    for (int ch = 0; ch < c; ch++)
                        for (int u = 0; u < 3; u++)
                            for (int v = 0; v < 3; v++)
                                s += (double)wt->data[((o * c + ch) * 3 + u) * 3 + v] *
                                     x->data[(((long)i * c + ch) * h + r + u) * w + q + v];
                    ref[(((long)i * oc + o) * oh + r) * ow + q] = s > 0 ? s : 0;
                    if (s <= 0)
                        continue;  // dy = 0 here
                    db[o] += 1;
                    // The loops below are a convolution's backward, which
                    // task 8.2 asks for: the stage-08 kit leaves dW and dx
                    // to its tests (finite differences) and checks the rest.
                    // BEGIN SOLUTION task 8.2: the reference dW and dx
                    for (int ch = 0; ch < c; ch++)
                        for (int u = 0; u < 3; u++)
                            for (int v = 0; v < 3; v++) {
                                long xi = (((long)i * c + ch) * h + r + u) * w + q + v;
                                dw[((o * c + ch) * 3 + u) * 3 + v] += x->data[xi];
                                dx[xi] += wt->data[((o * c + ch) * 3 + u) * 3 + v];
                            }
                    // in the kit: grads = 0;
                    // END SOLUTION
                }
    // float sums of up to c·9 terms: a relative tolerance of 1e-4 of the
    // largest magnitude, far below any indexing mistake.
    struct {
        const char *what;
        const float *got;
        const double *want;
        long n;
    } const parts[CHECK_PARTS] = {{check_parts[0], y->data, ref, ny},
                                  {check_parts[1], wt->grad, dw, (long)oc * c * 9},
                                  {check_parts[2], bias->grad, db, oc},
                                  {check_parts[3], x->grad, dx, (long)N * c * h * w}};
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
        if (!grads && (parts[p].want == dw || parts[p].want == dx)) {
            error[p] = NAN;  // not compared: the tests check them
            continue;
        }
        double scale = 1e-30;
        for (long i = 0; i < parts[p].n; i++)
            scale = fmax(scale, fabs(parts[p].want[i]));
        error[p] = 0.0;
        for (long i = 0; i < parts[p].n; i++) {
            if (parts[p].got)
                error[p] = fmax(error[p], fabs(parts[p].got[i] - parts[p].want[i]) / scale);
            if (!parts[p].got ||
                !(fabs(parts[p].got[i] - parts[p].want[i]) <= 1e-4 * scale + 1e-6)) {
                fprintf(stderr,
                        "error: %s on the %s path: %s[%ld] is %g, the double reference %g\n",
                        l->name, path_name(path), parts[p].what, i,
                        parts[p].got ? parts[p].got[i] : NAN, parts[p].want[i]);
                goto out;
            }
        }
    }
    ok = 1;
out:
    free(ref);
    free(dw);
    free(db);
    free(dx);
    tensor_free(wt);
    tensor_free(bias);
    tape_free(t);
    return ok ? 0 : -1;
}

// --- one layer, forward and backward --------------------------------------------

struct layer_time {
    double fwd_s, bwd_s;  // medians
};

// Runs the layer on a batch of n random inputs `reps` times after a warm-up
// and keeps the medians. The backward starts from loss = Σ y, made before
// its clock starts; the sum's own backward (filling dy with ones) is timed
// alone and taken off. unfused: a
// convolution and its ReLU as two ops (op_conv2d, then op_relu), two passes
// over y each way, instead of op_conv2d_relu's one; or, for a pooled layer,
// op_conv2d_relu then op_maxpool2, the convolution's output written and read
// back, instead of op_conv2d_relu_maxpool2.
static int time_layer(const struct layer *l, enum conv_path_id path, int n, int reps, int unfused,
                      struct layer_time *out)
{
    struct tape *t = tape_for(path);
    struct tensor *w = NULL, *bias = NULL;
    double *fwd = calloc((size_t)reps, sizeof *fwd), *bwd = calloc((size_t)reps, sizeof *bwd);
    double *sum_s = calloc((size_t)reps, sizeof *sum_s);
    int status = -1;
    if (!t || !fwd || !bwd || !sum_s)
        goto out;
    if (l->kind == CONV_RELU || l->kind == CONV_POOL) {
        w = tensor_param(4, (int[]){l->oc, l->c, 3, 3});
        bias = tensor_param(1, (int[]){l->oc});
    } else if (l->kind == LINEAR) {
        w = tensor_param(2, (int[]){l->c, l->oc});
        bias = tensor_param(1, (int[]){l->oc});
    }
    if (l->kind != POOL && (!w || !bias))
        goto out;
    if (w)
        mat_fill_random(w->data, 1, (int)w->size, (int)w->size, 3);
    for (int rep = -1; rep < reps; rep++) {
        tape_clear(t);
        if (w) {
            tensor_zero_grad(w);
            tensor_zero_grad(bias);
        }
        struct tensor *x = l->kind == LINEAR ? tensor_new(t, 2, (int[]){n, l->c})
                                             : tensor_new(t, 4, (int[]){n, l->c, l->h, l->w});
        if (!x)
            goto fail;
        mat_fill_random(x->data, 1, (int)x->size, (int)x->size, 5);
        x->requires_grad = !l->first;
        double t0 = timer_now();
        struct tensor *y = l->kind == CONV_RELU && unfused
                               ? op_relu(t, op_conv2d(t, x, w, bias, 1, 0))
                           : l->kind == CONV_RELU ? op_conv2d_relu(t, x, w, bias, 1, 0)
                           : l->kind == CONV_POOL && unfused
                               ? op_maxpool2(t, op_conv2d_relu(t, x, w, bias, 1, 0))
                           : l->kind == CONV_POOL ? op_conv2d_relu_maxpool2(t, x, w, bias, 1, 0)
                           : l->kind == POOL      ? op_maxpool2(t, x)
                                                  : op_linear(t, x, w, bias);
        double t1 = timer_now();
        if (!y)
            goto fail;
        // The loss's forward, a pass over y, is neither the layer's forward
        // nor its backward: the backward's clock starts after it.
        struct tensor *loss = op_sum(t, y);
        double t1b = timer_now();
        if (tape_backward(t, loss) != 0)
            goto fail;
        double t2 = timer_now();
        // The sum's backward alone, on a tensor of y's shape (a tape is
        // walked once: cleared first).
        int ndim = y->ndim, shape[TENSOR_MAX_DIMS];
        memcpy(shape, y->shape, sizeof shape);
        tape_clear(t);
        struct tensor *z = tensor_new(t, ndim, shape);
        if (!z)
            goto fail;
        memset(z->data, 0, (size_t)z->size * sizeof *z->data);
        z->requires_grad = 1;
        struct tensor *s = op_sum(t, z);
        double t3 = timer_now();
        if (tape_backward(t, s) != 0)
            goto fail;
        double t4 = timer_now();
        if (rep >= 0) {
            fwd[rep] = t1 - t0;
            bwd[rep] = t2 - t1b;
            sum_s[rep] = t4 - t3;
        }
    }
    out->fwd_s = bench_median(fwd, reps);
    double b = bench_median(bwd, reps) - bench_median(sum_s, reps);
    out->bwd_s = b > 0 ? b : 0;
    status = 0;
    goto out;
fail:
    fprintf(stderr, "error: timing %s: %s\n", l->name, tape_error(t));
out:
    free(fwd);
    free(bwd);
    free(sum_s);
    tensor_free(w);
    tensor_free(bias);
    tape_free(t);
    return status;
}

// --- conv1's fused block against the memory ------------------------------------

// STREAM's copy, the machine's bandwidth as our kernels see it: 64 MB copied
// into another 64 MB, both far larger than the L3, the threads taking
// contiguous blocks of it. The copy goes in pieces of 256 KB: the C library's
// memcpy copies a piece that small with ordinary stores, as our kernels
// store, where one call for the whole would switch to stores that bypass
// the cache. Bytes read plus bytes written per second (STREAM's count), the
// median of reps after a warm-up.
enum { COPY_FLOATS = 16 << 20, COPY_PIECE = 64 << 10 };

static double copy_gb_s(float *dst, const float *src, int reps)
{
    double *t = calloc((size_t)reps, sizeof *t);
    if (!t)
        return 0;
    for (int rep = -1; rep < reps; rep++) {
        double t0 = timer_now();
#pragma omp parallel for schedule(static)
        for (long p = 0; p < COPY_FLOATS / COPY_PIECE; p++)
            memcpy(dst + p * COPY_PIECE, src + p * COPY_PIECE, sizeof(float) * COPY_PIECE);
        if (rep >= 0)
            t[rep] = timer_now() - t0;
    }
    double secs = bench_median(t, reps);
    free(t);
    return 2.0 * sizeof(float) * COPY_FLOATS / secs / 1e9;
}

// The op's bytes alone, with no arithmetic: image by image, split among the
// threads as the op splits them, read `in` bytes of src (copied in pieces
// into the thread's IO_PIECE bytes of seen, which stay in L1) and write `out`
// bytes of dst. The median of reps.
enum { IO_PIECE = 16 << 10 };

static double io_seconds(const unsigned char *src, long in, unsigned char *dst, long out,
                         unsigned char *seen, int n, int reps)
{
    double *t = calloc((size_t)reps, sizeof *t);
    if (!t)
        return 0;
    for (int rep = -1; rep < reps; rep++) {
        double t0 = timer_now();
#pragma omp parallel
        {
            unsigned char *mine = seen + (long)omp_get_thread_num() * IO_PIECE;
#pragma omp for schedule(static)
            for (int i = 0; i < n; i++) {
                for (long at = 0; at < in; at += IO_PIECE) {
                    long len = in - at < IO_PIECE ? in - at : IO_PIECE;
                    memcpy(mine, src + i * in + at, (size_t)len);
                }
                if (out)
                    memset(dst + i * out, mine[0], (size_t)out);
            }
        }
        if (rep >= 0)
            t[rep] = timer_now() - t0;
    }
    double secs = bench_median(t, reps);
    free(t);
    return secs;
}

// conv1 with its ReLU and pooling (op_conv2d_relu_maxpool2, auto path) on
// every thread count: its forward and backward times against the time to
// move the bytes each must, at the copy's bandwidth. Per image the forward
// reads x (28×28 floats) and writes the pooled y (32×13×13 floats) and a
// code byte per pooled element; the backward reads the pooled gradient, y,
// the codes and x, and writes only dW and dbias (a few hundred floats).
// Beside them, the time its FMAs alone take at the measured peak.
static int bandwidth_study(const struct options *o, const struct bench_threads *t, FILE *out)
{
    const struct layer *l = NULL;
    for (int i = 0; i < NLAYERS; i++)
        if (strcmp(layers[i].name, "conv1_pool") == 0)
            l = &layers[i];
    long pooled = (long)l->oc * ((l->h - 2) / 2) * ((l->w - 2) / 2);
    long x_bytes = sizeof(float) * (long)l->c * l->h * l->w;
    long fwd_read = x_bytes, fwd_written = (sizeof(float) + 1) * pooled;
    long bwd_read = (2 * sizeof(float) + 1) * pooled + x_bytes;
    float *a = malloc(sizeof(float) * COPY_FLOATS), *b = malloc(sizeof(float) * COPY_FLOATS);
    unsigned char *src = malloc((size_t)(o->batch * bwd_read));
    unsigned char *dst = malloc((size_t)(o->batch * fwd_written));
    unsigned char *seen = malloc((size_t)omp_get_max_threads() * IO_PIECE);
    int status = -1;
    if (!a || !b || !src || !dst || !seen) {
        fprintf(stderr, "error: out of memory for the bandwidth study\n");
        goto out;
    }
    memset(a, 1, sizeof(float) * COPY_FLOATS);
    memset(b, 0, sizeof(float) * COPY_FLOATS);
    memset(src, 2, (size_t)(o->batch * bwd_read));
    memset(dst, 0, (size_t)(o->batch * fwd_written));
    printf("\nconv1 with its ReLU and pooling fused (auto path) against the time to move "
           "its bytes\nat the copy bandwidth (%d MB copied in %d KB pieces), batch %d, "
           "median of %d\n",
           (int)(sizeof(float) * COPY_FLOATS >> 20), (int)(sizeof(float) * COPY_PIECE >> 10),
           o->batch, o->reps);
    printf("%2s  %-8s %9s %9s  %9s  %9s  %9s  %9s  %9s\n", "th", "pass", "read MB", "write MB",
           "copy GB/s", "bound ms", "bytes ms", "FMAs ms", "op ms");
    for (int ti = 0; ti < t->n; ti++) {
        int threads = t->count[ti];
        omp_set_num_threads(threads);
        double gb_s = copy_gb_s(b, a, o->reps);
        struct layer_time lt;
        if (gb_s <= 0 || time_layer(l, CONV_AUTO, o->batch, o->reps, 0, &lt) != 0)
            goto out;
        for (int dir = 0; dir < 2; dir++) {
            long rd = o->batch * (dir ? bwd_read : fwd_read);
            long wr = dir ? 0 : o->batch * fwd_written;
            double io = io_seconds(src, dir ? bwd_read : fwd_read, dst, dir ? 0 : fwd_written,
                                   seen, o->batch, o->reps);
            double secs = dir ? lt.bwd_s : lt.fwd_s, bound = (rd + wr) / gb_s / 1e9;
            // The FMAs alone at the measured peak of as many cores.
            struct peak pk = peak_get(isa_best(), threads);
            double fmas = pk.gflops > 0 ? layer_flops(l, o->batch, dir) / pk.gflops / 1e9 : 0;
            printf("%2d  %-8s %9.2f %9.2f  %9.1f  %9.3f  %9.3f  %9.3f  %9.3f  (%.1f× the "
                   "bound)\n",
                   threads, dir ? "backward" : "forward", rd / 1e6, wr / 1e6, gb_s, 1e3 * bound,
                   1e3 * io, 1e3 * fmas, 1e3 * secs, secs / bound);
            fprintf(out, "%s,%d,%d,%s,%ld,%ld,%.9f,%.9f,%.3f,%.9f,%.3f,%.9f\n", l->name, threads,
                    o->batch, dir ? "backward" : "forward", rd, wr, secs, io, gb_s, bound,
                    secs / bound, fmas);
        }
        fflush(stdout);
    }
    status = 0;
out:
    free(a);
    free(b);
    free(src);
    free(dst);
    free(seen);
    return status;
}

// --- training steps and inference of the whole network ---------------------------

struct net_time {
    double step_s;   // a training step of `batch` images
    double infer_s;  // a forward of `batch` images, no tape recording
};

// fused: how many of the two convolutions run with their pooling as one op
// (the tape config's fused_pools).
static int time_network(const struct dataset *ds, enum conv_path_id path, int fused, int batch,
                        int steps, struct net_time *out)
{
    char err[4096];
    struct nn_model m;
    struct trainer tr;
    if (nn_cnn_init(&m, 1, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    struct optim_config c = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
    struct optim *o = optim_new(&c, m.params, m.nparams);
    struct tape_config config = tape_config_default();
    config.conv = conv_path_of(path);
    config.fused_pools = fused;
    if (!o || trainer_init(&tr, &config, batch, ds->train.pixels, ds->train.count, err,
                           sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", o ? err : "out of memory for the optimizer");
        optim_free(o);
        nn_model_free(&m);
        return -1;
    }
    dataset_shuffle(tr.order, ds->train.count, 1);
    int at = 0;
    double data_s = 0, start = 0;
    int status = train_fixed_steps(&tr, &m, o, &ds->train, WARMUP_STEPS, &at, &data_s);
    if (status == 0) {
        start = timer_now();
        status = train_fixed_steps(&tr, &m, o, &ds->train, steps, &at, &data_s);
    }
    if (status == 0) {
        out->step_s = (timer_now() - start) / steps;
        // Inference: the forward alone on the last batch, recording nothing.
        out->infer_s = train_time_forward(&tr, &m, WARMUP_STEPS, steps);
        if (out->infer_s < 0)
            status = -1;
    }
    trainer_free(&tr);
    optim_free(o);
    nn_model_free(&m);
    return status;
}

// One row of the layer table, printed and (unless lay is NULL) written:
// layer l's forward (dir 0) or backward on conv path `path` (−1: a layer
// with no conv path), secs per batch of n.
static void layer_row(FILE *lay, const struct layer *l, int path, int threads, int n, int dir,
                      double secs)
{
    const char *name = path >= 0 ? path_name((enum conv_path_id)path) : "-";
    const char *taken =
        path >= 0
            ? path_name(path_taken((enum conv_path_id)path, l))
            : "-";
    double flops = layer_flops(l, n, dir);
    double gflops = secs > 0 && flops > 0 ? flops / secs / 1e9 : 0.0;
    double pct = pct_of_peak(gflops, threads);
    double per_epoch = secs * ((double)EPOCH_IMAGES / n);
    char gf[32] = "-", pc[32] = "-";
    if (flops > 0) {
        snprintf(gf, sizeof gf, "%.1f", gflops);
        snprintf(pc, sizeof pc, "%.1f%%", pct);
    }
    printf("%-10s %-7s %-7s %2d  %-8s %10.3f  %8s  %6s  %9.3f\n", l->name, name, taken, threads,
           dir ? "backward" : "forward", 1e3 * secs, gf, pc, per_epoch);
    if (!lay)
        return;
    fprintf(lay, "%s,%s,%s,%d,%d,%d,%d,%d,%d,%s,%.9f,", l->name, name, taken, threads, n, l->c,
            l->h, l->w, l->oc, dir ? "backward" : "forward", secs);
    if (flops > 0)
        fprintf(lay, "%.3f,%.2f,%.6f\n", gflops, pct, per_epoch);
    else
        fprintf(lay, ",,%.6f\n", per_epoch);
}

// The header row of the layer rows (--layers, --turns).
static const char LAYER_HEADER[] = "layer,path,taken,threads,batch,c,h,w,oc,direction,seconds,"
                                   "gflops,pct_peak,seconds_per_epoch";

// --- the studies -------------------------------------------------------------------

// What every study is handed: the options, the data, the thread counts, and
// every study's file (NULL when its flag was not given).
struct bench {
    const struct options *o;
    const struct dataset *ds;
    struct bench_threads t;
    FILE *file[STUDIES];
};

// Each path's error against the double-precision reference, before any
// timing: a path that is wrong stops the program.
static int check_study(const struct bench *b, FILE *errs)
{
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        if (!wanted(b->o, paths[p]))
            continue;
        for (int i = 0; i < NLAYERS; i++) {
            const struct layer *l = &layers[i];
            double error[CHECK_PARTS];
            if (l->kind != CONV_RELU)
                continue;
            if (check_conv(l, paths[p], error) != 0)
                return -1;
            enum conv_path_id taken = path_taken(paths[p], l);
            for (int k = 0; errs && k < CHECK_PARTS; k++)
                fprintf(errs, "%s,%s,%s,%s,%.3e\n", l->name, path_name(paths[p]),
                        path_name(taken), check_parts[k], error[k]);
        }
    }
    printf("conv paths checked against a double-precision reference (output, dW, dbias, dx)\n");
    return 0;
}

// Every layer, forward and backward, at the batch of the network.
static int layers_study(const struct bench *b, FILE *lay)
{
    const struct options *o = b->o;
    printf("\nlayers of the CNN, batch %d, median of %d\n", o->batch, o->reps);
    printf("%-10s %-7s %-7s %2s  %-8s %10s  %8s  %6s  %9s\n", "layer", "path", "taken", "th",
           "pass", "ms", "GFLOPS", "peak", "s/epoch");
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        if (!wanted(o, paths[p]))
            continue;
        for (int ti = 0; ti < b->t.n; ti++) {
            int threads = b->t.count[ti];
            omp_set_num_threads(threads);
            for (int i = 0; i < NLAYERS; i++) {
                const struct layer *l = &layers[i];
                // Pooling and the Linear layers do not change with the conv
                // path: measured once, under the first path asked for.
                int conv = l->kind == CONV_RELU || l->kind == CONV_POOL;
                if (!conv && p > 0 && wanted(o, paths[0]))
                    continue;
                struct layer_time lt;
                if (time_layer(l, paths[p], o->batch, o->reps, 0, &lt) != 0)
                    return -1;
                for (int dir = 0; dir < 2; dir++)
                    layer_row(lay, l, conv ? (int)paths[p] : -1, threads, o->batch, dir,
                              dir ? lt.bwd_s : lt.fwd_s);
                fflush(stdout);
            }
        }
    }
    return 0;
}

// The fused convolutions (conv + ReLU + pooling, the network's ops) on each
// path asked for, the paths taking turns TURN_ROUNDS times (the reps shared
// among the rounds, who goes first rotating), so that a comparison of paths
// is not a comparison of minutes on a shared machine; the median of the
// rounds.
static int turns_study(const struct bench *b, FILE *turns)
{
    enum { TURN_ROUNDS = 5, MOST_PATHS = sizeof paths / sizeof paths[0] };
    const struct options *o = b->o;
    int rounds = o->quick ? 1 : TURN_ROUNDS;
    int round_reps = o->reps / rounds > 1 ? o->reps / rounds : 1;
    enum conv_path_id asked[MOST_PATHS];
    int count = 0;
    for (size_t p = 0; p < MOST_PATHS; p++)
        if (wanted(o, paths[p]))
            asked[count++] = paths[p];
    printf("\nthe fused convolutions on each path, taking turns, the median of %d round(s)\n",
           rounds);
    for (int ti = 0; ti < b->t.n; ti++) {
        int threads = b->t.count[ti];
        omp_set_num_threads(threads);
        for (int i = 0; i < NLAYERS; i++) {
            const struct layer *l = &layers[i];
            if (l->kind != CONV_POOL)
                continue;
            double fwd[MOST_PATHS][TURN_ROUNDS], bwd[MOST_PATHS][TURN_ROUNDS];
            for (int r = 0; r < rounds; r++)
                for (int turn = 0; turn < count; turn++) {
                    int k = (turn + r) % count;
                    struct layer_time lt;
                    if (time_layer(l, asked[k], o->batch, round_reps, 0, &lt) != 0)
                        return -1;
                    fwd[k][r] = lt.fwd_s;
                    bwd[k][r] = lt.bwd_s;
                }
            for (int k = 0; k < count; k++)
                for (int dir = 0; dir < 2; dir++)
                    layer_row(turns, l, (int)asked[k], threads, o->batch, dir,
                              bench_median(dir ? bwd[k] : fwd[k], rounds));
            fflush(stdout);
        }
    }
    return 0;
}

// What fusing the ReLU (and the pooling) into the convolution saves: the
// auto path, each convolution fused and unfused, on every thread count.
// The two take turns, FUSION_ROUNDS times (the reps shared among the
// rounds), so that both see the same minutes of a shared machine; the
// median of the rounds.
static int fusion_study(const struct bench *b, FILE *fus)
{
    enum { FUSION_ROUNDS = 5 };
    const struct options *o = b->o;
    int rounds = o->quick ? 1 : FUSION_ROUNDS;
    int round_reps = o->reps / rounds > 1 ? o->reps / rounds : 1;
    printf("\nthe ReLU (and pooling) fused into the convolution, or as ops of their own "
           "(auto path), taking turns, the median of %d round(s)\n",
           rounds);
    printf("%-10s %2s  %-8s %10s %10s  %7s\n", "layer", "th", "pass", "fused ms", "unfused ms",
           "saved");
    for (int ti = 0; ti < b->t.n; ti++) {
        int threads = b->t.count[ti];
        omp_set_num_threads(threads);
        for (int i = 0; i < NLAYERS; i++) {
            const struct layer *l = &layers[i];
            if (l->kind != CONV_RELU && l->kind != CONV_POOL)
                continue;
            struct layer_time both[2];
            double fwd[2][FUSION_ROUNDS], bwd[2][FUSION_ROUNDS];
            for (int r = 0; r < rounds; r++)
                for (int turn = 0; turn < 2; turn++) {
                    int unfused = r % 2 ? 1 - turn : turn;  // who goes first alternates
                    struct layer_time lt;
                    if (time_layer(l, CONV_AUTO, o->batch, round_reps, unfused, &lt) != 0)
                        return -1;
                    fwd[unfused][r] = lt.fwd_s;
                    bwd[unfused][r] = lt.bwd_s;
                }
            for (int unfused = 0; unfused < 2; unfused++) {
                both[unfused].fwd_s = bench_median(fwd[unfused], rounds);
                both[unfused].bwd_s = bench_median(bwd[unfused], rounds);
            }
            for (int dir = 0; dir < 2; dir++) {
                double fused_s = dir ? both[0].bwd_s : both[0].fwd_s;
                double unfused_s = dir ? both[1].bwd_s : both[1].fwd_s;
                printf("%-10s %2d  %-8s %10.3f %10.3f  %6.1f%%\n", l->name, threads,
                       dir ? "backward" : "forward", 1e3 * fused_s, 1e3 * unfused_s,
                       unfused_s > 0 ? 100.0 * (unfused_s - fused_s) / unfused_s : 0.0);
                for (int unfused = 0; unfused < 2; unfused++) {
                    double secs = unfused ? unfused_s : fused_s;
                    fprintf(fus, "%s,%d,%d,%s,%s,%.9f,%.6f\n", l->name, threads, o->batch,
                            unfused ? "unfused" : "fused", dir ? "backward" : "forward", secs,
                            secs * ((double)EPOCH_IMAGES / o->batch));
                }
            }
            fflush(stdout);
        }
    }
    return 0;
}

// The whole network: training steps and inference, per path and thread count.
static int speed_study(const struct bench *b, FILE *csv)
{
    const struct options *o = b->o;
    printf("\ntraining steps of the CNN on %s, Adam, timed over %d steps after %d of warm-up\n",
           b->ds->name, o->steps, WARMUP_STEPS);
    printf("%-13s %-7s %2s  %5s  %11s  %9s  %7s  %6s\n", "model", "path", "th", "batch",
           "s/epoch", "images/s", "GFLOPS", "peak");
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        if (!wanted(o, paths[p]))
            continue;
        for (int ti = 0; ti < b->t.n; ti++) {
            int threads = b->t.count[ti];
            omp_set_num_threads(threads);
            struct net_time nt;
            if (time_network(b->ds, paths[p], NN_CNN_FUSED, o->batch, o->steps, &nt) != 0)
                return -1;
            const char *models[2] = {"cnn", "cnn-inference"};
            double secs[2] = {nt.step_s, nt.infer_s};
            double flops[2] = {nn_cnn_train_flops(), nn_cnn_forward_flops()};
            for (int k = 0; k < 2; k++) {
                double per_epoch = secs[k] * ((double)EPOCH_IMAGES / o->batch);
                double images_s = o->batch / secs[k];
                double gflops = flops[k] * images_s / 1e9;
                double pct = pct_of_peak(gflops, threads);
                printf("%-13s %-7s %2d  %5d  %9.3f s  %9.0f  %7.1f  %5.1f%%\n", models[k],
                       path_name(paths[p]), threads, o->batch, per_epoch, images_s, gflops,
                       pct);
                if (csv)
                    fprintf(csv, "%s,ours,%s,%d,%d,%.6f,%.1f,%.3f,%.2f,,,\n", models[k],
                            path_name(paths[p]), threads, o->batch, per_epoch, images_s,
                            gflops, pct);
            }
            fflush(stdout);
        }
    }
    return 0;
}

static int build_cnn(struct nn_model *m, const void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    return nn_cnn_init(m, 1, err, errlen);
}

// The training step's memory: the arena and the planner, alternating
// (train_memory_study), on the auto path and every core; one planned
// step's buffers into the lifetimes file.
static int memory_study(const struct bench *b, FILE *mem)
{
    const struct options *o = b->o;
    int top = b->t.top;
    omp_set_num_threads(top);
    printf("\nthe training step's memory, the modes alternating (auto path, %d thread%s):\n", top,
           top == 1 ? "" : "s");
    struct memory_study st = {.model = "cnn", .batch = o->batch, .config = tape_config_default(),
                              .build = build_cnn, .warmup = WARMUP_STEPS,
                              .steps = o->quick ? 2 : (o->steps + 1) / 2,
                              .rounds = o->quick ? 2 : 5};
    return train_memory_study(&st, &b->ds->train, &o->memory, top, mem, b->file[LIFETIMES]);
}

// The chapter's staircase, whole training steps: every convolution through
// im2col and no pooling fused (the network as the chapter first builds it),
// then the auto path (conv1's direct kernel, conv2 on Winograd) with 0, 1 or
// 2 of the convolutions fused with their pooling. The four in turn, ROUNDS
// times, so that each sees the same minutes of the machine; the median of
// the rounds. Its rows go into the fusion file.
static int staircase_study(const struct bench *b, FILE *fus)
{
    enum { ROUNDS = 5, VARIANTS = 4 };
    const struct options *o = b->o;
    const char *variants[VARIANTS] = {path_name(CONV_IM2COL), "unfused", "conv1_fused", "fused"};
    const enum conv_path_id path_of[VARIANTS] = {CONV_IM2COL, CONV_AUTO, CONV_AUTO, CONV_AUTO};
    const int fused_of[VARIANTS] = {0, 0, 1, NN_CNN_FUSED};
    printf("\ntraining steps, im2col then the auto path with the poolings fused or not, "
           "median of %d rounds\n",
           ROUNDS);
    printf("%-11s %2s  %11s\n", "variant", "th", "s/epoch");
    for (int ti = 0; ti < b->t.n; ti++) {
        int threads = b->t.count[ti];
        omp_set_num_threads(threads);
        double step[VARIANTS][ROUNDS];
        for (int r = 0; r < ROUNDS; r++)
            for (int v = 0; v < VARIANTS; v++) {
                struct net_time nt;
                if (time_network(b->ds, path_of[v], fused_of[v], o->batch, o->steps, &nt) != 0)
                    return -1;
                step[v][r] = nt.step_s;
            }
        for (int v = 0; v < VARIANTS; v++) {
            double secs = bench_median(step[v], ROUNDS);
            printf("%-11s %2d  %9.3f s\n", variants[v], threads,
                   secs * ((double)EPOCH_IMAGES / o->batch));
            fprintf(fus, "step,%d,%d,%s,training,%.9f,%.6f\n", threads, o->batch, variants[v],
                    secs, secs * ((double)EPOCH_IMAGES / o->batch));
        }
        fflush(stdout);
    }
    return 0;
}

static int bandwidth_run(const struct bench *b, FILE *out)
{
    return bandwidth_study(b->o, &b->t, out);
}

// The studies, in the order they run. Each has a flag that names its file
// (the staircase writes into the fusion study's) and the file's header row;
// a study whose table on stdout is the point runs without its file too, the
// others only when their file is asked for. The memory study writes the
// lifetimes file as well.
struct study {
    const char *flag;    // NULL: none of its own
    const char *help;
    const char *header;  // after the `#` lines; NULL: none (another study's file)
    int always;          // 1: runs even without its file
    int (*run)(const struct bench *b, FILE *out);
};
static const struct study studies[STUDIES] = {
    [CHECK] = {"--errors",
               "each path's error against the double-precision reference, relative to the "
               "largest value: output, dW, dbias, dx",
               "# the check's two images, loss = Σ relu(conv(x)); error: the largest |ours − "
               "double| over the part, divided by its largest |double|\n"
               "layer,path,taken,part,error",
               1, check_study},
    [LAYERS] = {"--layers", "per-layer forward and backward rows", LAYER_HEADER, 1,
                layers_study},
    [TURNS] = {"--turns",
               "the fused convolutions on the paths of --conv, taking turns in rounds (the "
               "median), so that each sees the same minutes",
               LAYER_HEADER, 0, turns_study},
    [FUSION] = {"--fusion",
                "each convolution with its ReLU (and pooling) fused and not; whole steps from "
                "im2col to fused",
                "layer,threads,batch,variant,direction,seconds,seconds_per_epoch", 0,
                fusion_study},
    [BANDWIDTH] = {"--bandwidth",
                   "conv1's fused block (auto path) against the time to move its bytes at the "
                   "measured copy bandwidth",
                   "layer,threads,batch,direction,read_bytes,written_bytes,seconds,io_seconds,"
                   "copy_gb_s,bound_seconds,vs_bound,peak_seconds",
                   0, bandwidth_run},
    [SPEED] = {"--csv", "speed rows: seconds per epoch, inference (- for stdout)", SCHEMA_SPEED,
               1, speed_study},
    [MEMORY] = {"--memory-csv",
                "the training step per memory mode (auto path): live and reserved bytes, time",
                "model,backend,threads,batch,memory,step_ms,live_bytes,reserved_bytes", 0,
                memory_study},
    [LIFETIMES] = {"--lifetimes", "every buffer of one planned training step (the lifetime chart)",
                   "# model: cnn", 0, NULL},
    [STAIRCASE] = {NULL, NULL, NULL, 0, staircase_study},
};

// The file a study writes into: its own, or the fusion study's for the staircase.
static enum study_id file_of(enum study_id s)
{
    return s == STAIRCASE ? FUSION : s;
}

// Whether study s runs: always, or when its file was asked for (the memory
// study also for the lifetimes file alone).
static int runs(const struct bench *b, enum study_id s)
{
    if (!studies[s].run)
        return 0;
    return studies[s].always || b->file[file_of(s)] ||
           (s == MEMORY && b->file[LIFETIMES]);
}

// --- the command line ------------------------------------------------------------

static int parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){.env = env_read()};
    enum isa isa = ISA_COUNT;
    struct flags f = {.about = "Every layer of the CNN forward and backward per convolution "
                               "path, then seconds per\nepoch and inference images/s. Each path "
                               "is checked against a double-precision\nreference first."};
    struct flag fl = flag_threads(&o->threads);
    fl.help = "only N threads (default: 1 and 2)";
    flags_add(&f, fl);
    fl = conv_paths_flag(&o->convs);
    fl.help = "only these paths (default: every one that takes a 3x3 convolution)";
    flags_add(&f, fl);
    flags_add(&f, flag_isa(&isa));
    fl = flag_reps(&o->reps);
    fl.help = "timed repetitions of each layer, median kept (default 10; 2 with --quick)";
    flags_add(&f, fl);
    flags_add(&f, flag_int("--steps", "N", &o->steps, 1, 1000000,
                           "timed training steps per measurement (default 20; 2 with --quick)"));
    flags_add(&f, flag_int("--batch", "N", &o->batch, 1, 4096,
                           "images per batch (default 256, the chapter's; 64 with --quick)"));
    flags_add(&f, flag_switch("--im2col-step", &o->im2col_step,
                              "only time a training step with every convolution on im2col and "
                              "no pooling fused (the code of tasks 8.1-8.3), best of --reps"));
    fl = flag_data(&o->data);
    fl.help = "the images the steps train on (default: fashion when `make datasets` got it, "
              "else the sample)";
    flags_add(&f, fl);
    fl = tape_memories_flag(&o->memory);
    fl.help = "the memory modes --memory-csv compares (default: arena,planned)";
    flags_add(&f, fl);
    for (int s = 0; s < STUDIES; s++)
        if (studies[s].flag)
            flags_add(&f, flag_output(studies[s].flag, "FILE", &o->file[s], studies[s].help));
    flags_add(&f, flag_quick(&o->quick));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc;
    struct conv_shape conv1 = {1, 28, 28, 32, 3, 3, 1, 0};
    char err[256];
    for (int i = 0; i < o->convs.n; i++)
        if (conv_path_check(o->convs.v[i], &conv1, "this network's 3x3 convolutions", err,
                            sizeof err) != 0)
            return flags_fail(&f, "%s", err);
    if (o->reps == 0)
        o->reps = o->quick ? 2 : 10;
    if (o->steps == 0)
        o->steps = o->quick ? 2 : 20;
    if (o->batch == 0)
        o->batch = o->quick ? 64 : 256;
    if (o->memory.n == 0)
        o->memory = (struct flag_list){2, {MEMORY_ARENA, MEMORY_PLANNED}};
    return 0;
}

// What `make grade` times of the student's code: im2col, col2im and the
// max-pool backward inside a whole step, the best of reps runs.
static int im2col_step(const struct options *o, const struct dataset *ds)
{
    if (o->threads)
        omp_set_num_threads(o->threads);
    double best = 0;
    for (int r = 0; r < o->reps; r++) {
        struct net_time nt;
        if (time_network(ds, CONV_IM2COL, 0, o->batch, o->steps, &nt) != 0)
            return 1;
        if (r == 0 || nt.step_s < best)
            best = nt.step_s;
    }
    printf("im2col step, no pooling fused, batch %d, best of %d: %.6f s\n", o->batch, o->reps,
           best);
    return 0;
}

// A study's file: the machine and dataset lines, the epoch size, the batch
// and the training steps each speed row is timed over, then its header row.
static FILE *open_out(const char *path, const struct bench *b, const char *header)
{
    const struct options *o = b->o;
    FILE *f = train_bench_open(path, "stage-08", b->ds, b->t.top, tape_config_default().isa,
                               &o->env, EPOCH_IMAGES);
    if (f) {
        fprintf(f, "# batch: %d\n# steps: %d\n", o->batch, o->steps);
        fprintf(f, "# backend: the conv path (the GEMM backend is auto), as run_cnn writes it\n");
        fprintf(f, "%s\n", header);
    }
    return f;
}

int main(int argc, char **argv)
{
    // When gemm() may use Strassen: the rule `make stage-05 strassen` measured.
    gemm_strassen_use_file(env_read().strassen_rule);
    struct options o;
    int status = parse(argc, argv, &o);
    if (status)
        return status == 1 ? 0 : status;

    char err[4096];
    struct dataset ds;
    const char *data = o.data ? o.data : o.quick ? "sample" : NULL;
    if (dataset_load_for_bench(data, o.env.data_dir, &ds, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    if (o.batch > ds.train.count) {
        fprintf(stderr, "error: --batch %d is more than the %d images of %s\n", o.batch,
                ds.train.count, ds.name);
        dataset_free(&ds);
        return 2;
    }
    if (o.im2col_step) {
        status = im2col_step(&o, &ds);
        dataset_free(&ds);
        return status;
    }
    struct bench b = {.o = &o, .ds = &ds, .t = bench_threads_of(o.threads)};
    status = 1;
    for (int s = 0; s < STUDIES; s++)
        if (o.file[s] && !(b.file[s] = open_out(o.file[s], &b, studies[s].header)))
            goto out;
    for (int s = 0; s < STUDIES; s++)
        if (runs(&b, (enum study_id)s) &&
            studies[s].run(&b, b.file[file_of((enum study_id)s)]) != 0)
            goto out;
    status = 0;
out:
    for (int s = 0; s < STUDIES; s++)
        status = results_close(b.file[s], o.file[s], status);
    dataset_free(&ds);
    return status;
}
