// NCHW or NHWC? The measurement behind conv.h's choice of layout. For each
// convolution of chapter 8's CNN, at batch 256 on one thread, the forward
// two ways, each checked against the other first:
//   NCHW, the library's op (im2col path): per run of 16 images, their K×P
//         col matrices side by side, one GEMM W (oc×K) · COL (K × 16·P), and
//         each image's output planes copied out of it;
//   NHWC (layout.c): per run of 16 images, the patch matrix (16·P × K),
//         each tap a run of c contiguous channels, then one GEMM
//         (16·P × K)·(K × oc), whose rows are output pixels.
// For each, the whole forward and the copy alone (im2col or im2row).
//   bench_layout [--reps R] [--batch N] [--csv FILE] [--quick]
// Writes build/results/stage-08-layout.csv.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "conv.h"
#include "env.h"
#include "flags.h"
#include "layout.h"
#include "machine.h"
#include "mat.h"
#include "ops.h"
#include "peak.h"
#include "tape.h"
#include "timer.h"

enum { RUN = 16 };  // images per NHWC GEMM, as the backward's runs

struct layer_shape {
    const char *name;
    int c, h, w, oc;
};
static const struct layer_shape convs[] = {{"conv1", 1, 28, 28, 32}, {"conv2", 32, 13, 13, 64}};

struct timing {
    double total_s, copy_s;
};

// The median of reps runs of f(ctx) after one warm-up.
static double median_of(int reps, void (*f)(void *), void *ctx)
{
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!t)
        return NAN;
    f(ctx);
    for (int r = 0; r < reps; r++) {
        double t0 = timer_now();
        f(ctx);
        t[r] = timer_now() - t0;
    }
    double m = bench_median(t, reps);
    free(t);
    return m;
}

// Everything one shape's runs read and write.
struct work {
    const struct layer_shape *s;
    int n, oh, ow;
    long K, P;
    struct tape *tape;
    struct tensor *x, *w, *bias, *y;  // NCHW, through the library's op
    float *x_nhwc, *wk, *rows, *y_nhwc, *col;
};

static void nchw_forward(void *ctx)
{
    struct work *k = ctx;
    tape_clear(k->tape);
    k->y = op_conv2d(k->tape, k->x, k->w, k->bias, 1, 0);
}

static void nchw_copy(void *ctx)
{
    struct work *k = ctx;
    const struct layer_shape *s = k->s;
    for (int i = 0; i < k->n; i++)
        im2col(k->x->data + (long)i * s->c * s->h * s->w, s->c, s->h, s->w, 3, 3, 1, 0,
               k->col + (i % RUN) * k->P, RUN * k->P);  // side by side, as the op's runs
}

static void nhwc_forward(void *ctx)
{
    struct work *k = ctx;
    const struct layer_shape *s = k->s;
    conv_forward_nhwc(k->x_nhwc, k->n, s->c, s->h, s->w, k->wk, k->bias->data, s->oc, 3, 3, 1, 0,
                      RUN, k->rows, k->y_nhwc);
}

static void nhwc_copy(void *ctx)
{
    struct work *k = ctx;
    const struct layer_shape *s = k->s;
    long xs = (long)s->h * s->w * s->c;
    for (int i = 0; i < k->n; i++)
        im2row_nhwc(k->x_nhwc + i * xs, s->c, s->h, s->w, 3, 3, 1, 0,
                    k->rows + (i % RUN) * k->P * k->K);
}

// Both layouts on one shape; 0, or -1 after printing the problem.
static int measure(const struct layer_shape *s, int n, int reps, struct timing out[2])
{
    struct work k = {.s = s, .n = n, .oh = s->h - 2, .ow = s->w - 2};
    k.K = 9L * s->c;
    k.P = (long)k.oh * k.ow;
    int status = -1;
    struct tape_config config = tape_config_default();
    config.conv = conv_path_of(CONV_IM2COL);  // the library's NCHW op, on its im2col path
    k.tape = tape_new(&config);
    k.w = tensor_param(4, (int[]){s->oc, s->c, 3, 3});
    k.bias = tensor_param(1, (int[]){s->oc});
    long xs = (long)s->c * s->h * s->w, ys = (long)s->oc * k.P;
    k.x_nhwc = malloc(sizeof(float) * (size_t)(n * xs));
    k.wk = malloc(sizeof(float) * (size_t)(k.K * s->oc));
    k.rows = malloc(sizeof(float) * (size_t)(RUN * k.P * k.K));
    k.y_nhwc = malloc(sizeof(float) * (size_t)(n * ys));
    k.col = malloc(sizeof(float) * (size_t)(RUN * k.K * k.P));
    if (!k.tape || !k.w || !k.bias || !k.x_nhwc || !k.wk || !k.rows || !k.y_nhwc || !k.col) {
        fprintf(stderr, "error: %s: out of memory\n", s->name);
        goto out;
    }
    k.x = tensor_param(4, (int[]){n, s->c, s->h, s->w});
    if (!k.x)
        goto out;
    k.x->requires_grad = 0;
    tape_set_recording(k.tape, 0);
    mat_fill_random(k.x->data, 1, (int)(n * xs), (int)(n * xs), 21);
    mat_fill_random(k.w->data, 1, (int)(k.K * s->oc), (int)(k.K * s->oc), 22);
    mat_fill_random(k.bias->data, 1, s->oc, s->oc, 23);
    // The same numbers in the other layout: x[i][ch][y][x] → x[i][y][x][ch],
    // w[o][ch][u][v] → wk[(u·3 + v)·c + ch][o].
    long hw = (long)s->h * s->w;
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < s->c; ch++)
            for (long p = 0; p < hw; p++)
                k.x_nhwc[(i * hw + p) * s->c + ch] = k.x->data[i * xs + ch * hw + p];
    for (int o = 0; o < s->oc; o++)
        for (int ch = 0; ch < s->c; ch++)
            for (int t = 0; t < 9; t++)
                k.wk[((long)t * s->c + ch) * s->oc + o] = k.w->data[((long)o * s->c + ch) * 9 + t];

    // Check first: the two outputs, one transposed, agree.
    nchw_forward(&k);
    nhwc_forward(&k);
    if (!k.y) {
        fprintf(stderr, "error: %s: %s\n", s->name, tape_error(k.tape));
        goto out;
    }
    for (int i = 0; i < n; i++)
        for (int o = 0; o < s->oc; o++)
            for (long p = 0; p < k.P; p++) {
                float a = k.y->data[i * ys + o * k.P + p];
                float b = k.y_nhwc[(i * k.P + p) * s->oc + o];
                if (!(fabsf(a - b) <= 1e-4f * (fabsf(a) + 1.0f))) {
                    fprintf(stderr, "error: %s: NHWC y[%d][%ld][%d] = %g, NCHW %g\n", s->name, i,
                            p, o, b, a);
                    goto out;
                }
            }
    out[0].total_s = median_of(reps, nchw_forward, &k);
    out[0].copy_s = median_of(reps, nchw_copy, &k);
    out[1].total_s = median_of(reps, nhwc_forward, &k);
    out[1].copy_s = median_of(reps, nhwc_copy, &k);
    status = 0;
out:
    tape_free(k.tape);
    tensor_free(k.x);
    tensor_free(k.w);
    tensor_free(k.bias);
    free(k.x_nhwc);
    free(k.wk);
    free(k.rows);
    free(k.y_nhwc);
    free(k.col);
    return status;
}

int main(int argc, char **argv)
{
    const struct environment env = env_read();
    // When gemm() may use Strassen: the rule `make stage-05 strassen` measured.
    gemm_strassen_use_file(env.strassen_rule);
    int reps = 0, batch = 0, quick = 0;
    const char *csv_path = NULL;
    enum isa isa = ISA_COUNT;
    struct flags f = {.about = "The forward of each convolution of the CNN in NCHW and in NHWC, "
                               "one thread, each\nchecked against the other first."};
    struct flag fl = flag_reps(&reps);
    fl.help = "timed repetitions, median kept (default 10; 2 with --quick)";
    flags_add(&f, fl);
    flags_add(&f, flag_int("--batch", "N", &batch, 1, 4096,
                           "images (default 256, the chapter's; 32 with --quick)"));
    flags_add(&f, flag_csv(&csv_path));
    flags_add(&f, flag_isa(&isa));
    flags_add(&f, flag_quick(&quick));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    if (reps == 0)
        reps = quick ? 2 : 10;
    if (batch == 0)
        batch = quick ? 32 : 256;
    omp_set_num_threads(1);  // the layouts, not the threads
    FILE *csv = NULL;
    if (csv_path) {
        csv = strcmp(csv_path, "-") ? fopen(csv_path, "w") : stdout;
        if (!csv) {
            fprintf(stderr, "error: cannot write %s\n", csv_path);
            return 1;
        }
        machine_write(csv, "stage-08", 1, tape_config_default().isa, &env);
        fprintf(csv, "# batch: %d\n# run: %d\n", batch, RUN);
        fprintf(csv, "layer,layout,threads,batch,seconds,copy_seconds,gflops,pct_peak\n");
    }
    double peak = peak_get(isa_best(), 1).gflops;
    printf("the forward of each convolution in both layouts, batch %d, one thread, median of "
           "%d\n",
           batch, reps);
    printf("%-6s %-6s %10s %10s %8s %7s\n", "layer", "layout", "ms", "copy ms", "GFLOPS",
           "peak");
    int status = 0;
    for (size_t c = 0; c < sizeof convs / sizeof convs[0] && status == 0; c++) {
        struct timing t[2];
        if (measure(&convs[c], batch, reps, t) != 0) {
            status = 1;
            break;
        }
        double flops = 2.0 * batch * convs[c].oc * 9 * convs[c].c * (convs[c].h - 2) *
                       (convs[c].w - 2);
        for (int l = 0; l < 2; l++) {
            double gflops = flops / t[l].total_s / 1e9, pct = peak > 0 ? 100 * gflops / peak : 0;
            const char *name = l ? "NHWC" : "NCHW";
            printf("%-6s %-6s %10.3f %10.3f %8.1f %6.1f%%\n", convs[c].name, name,
                   1e3 * t[l].total_s, 1e3 * t[l].copy_s, gflops, pct);
            if (csv)
                fprintf(csv, "%s,%s,1,%d,%.9f,%.9f,%.3f,%.2f\n", convs[c].name, name, batch,
                        t[l].total_s, t[l].copy_s, gflops, pct);
        }
    }
    if (csv && csv != stdout && fclose(csv) != 0) {
        fprintf(stderr, "error: writing %s failed\n", csv_path);
        status = 1;
    }
    return status;
}
