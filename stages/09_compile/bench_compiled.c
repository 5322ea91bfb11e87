// The compiled MLP beside the eager tape, in the same run: seconds per
// epoch (and of it, the GEMMs'), kernels per step, bytes per step, compile
// time cold and warm. Five engines train 784-256-10 with Adam on the same
// batches, alternating in rounds so that all see the same minutes:
//   eager             chapter 7's step on chapter 6's tape (common/nn/train.c)
//   compiled          the step as one graph, fused into a few kernels
//   compiled-unfused  the same graph, one kernel per op
//   compiled-serial   fused, every kernel on one thread
//   compiled-panels   fused, the epilogues on panels of C a quarter of L2
//   bench_compiled [--threads N] [--batches 64,256] [--steps N] [--rounds N]
//                  [--data NAME] [--isa NAME] [--csv FILE] [--steps-csv FILE]
//                  [--kernels FILE] [--bytes FILE] [--quick]
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkout.h"
#include "compiled_mlp.h"
#include "cpu.h"
#include "flags.h"
#include "gemm_backend.h"
#include "peak.h"
#include "schemas.h"
#include "timer.h"
#include "train.h"
#include "train_run.h"

enum { EPOCH_IMAGES = 60000, WARMUP_STEPS = 5, MAX_BATCHES = 8, MAX_ROUNDS = 64 };
static const int sizes[] = {784, 256, 10};
static const char *const model = "784-256-10";

struct options {
    struct environment env;     // what the environment says (cli/env.h)
    int threads;                // 0: all cores
    int batches[MAX_BATCHES], nbatches;
    int steps, rounds, quick;
    const char *data, *csv, *steps_csv, *kernels_csv, *bytes_csv;
};

// --- the eager step, counted by hand ------------------------------------------

// listing: eager_bytes
// What the tape's training step (common/nn/train.c, train_step) reads and
// writes, op by op, for an MLP with Adam: one row per pass over memory,
// counted from the code of each op. Floats; × 4 for bytes.
enum phase { FORWARD, LOSS, BACKWARD, PHASES };
static const char *const phase_names[PHASES] = {"forward", "loss and its gradient",
                                                "backward and optimizer"};

struct pass {
    char op[48];
    enum phase phase;
    long read, written;
};

static int add(struct pass *p, int n, const char *op, int layer, long read, long written)
{
    snprintf(p[n].op, sizeof p[n].op, layer ? "%s %d" : "%s", op, layer);
    p[n].phase = n > 0 ? p[n - 1].phase : FORWARD;
    if (!strncmp(op, "cross-entropy", 13))
        p[n].phase = LOSS;
    else if (p[n].phase == LOSS && strncmp(op, "cross", 5))
        p[n].phase = BACKWARD;
    p[n].read = read;
    p[n].written = written;
    return n + 1;
}

static int eager_passes(const int *s, int nsizes, long b, struct pass *p)
{
    int n = 0, layers = nsizes - 1;
    n = add(p, n, "the batch into the arena", 0, b * s[0], b * s[0]);  // tensor_from
    for (int l = 0; l < layers; l++) {
        long in = s[l], out = s[l + 1];
        n = add(p, n, "linear: bias rows", l + 1, out, b * out);
        n = add(p, n, "linear: GEMM with beta 1", l + 1, b * in + in * out + b * out, b * out);
        if (l + 1 < layers)
            n = add(p, n, "relu", l + 1, b * out, b * out);
    }
    long c = s[layers];
    // nn_forget_grad costs no pass: the weights' gradients are written by
    // their GEMMs, each the first to reach its gradient (beta = 0, C not
    // read). The loops that add (tape_grad) still zero theirs first.
    n = add(p, n, "cross-entropy: softmax", 0, b * c + b, b * c + b);  // probs, labels copied
    n = add(p, n, "cross-entropy backward: zeroed dz", 0, 0, b * c);   // tape_grad
    n = add(p, n, "cross-entropy backward", 0, 2 * b * c, b * c);
    for (int l = layers - 1; l >= 0; l--) {
        long in = s[l], out = s[l + 1];
        if (l > 0)
            n = add(p, n, "linear backward: dx GEMM with beta 0", l + 1, b * out + in * out,
                    b * in);
        n = add(p, n, "linear backward: dW GEMM with beta 0", l + 1, b * in + b * out, in * out);
        n = add(p, n, "linear backward: zeroed dbias", l + 1, 0, out);  // tape_grad
        n = add(p, n, "linear backward: dbias", l + 1, b * out + out, out);
        if (l > 0) {
            n = add(p, n, "relu backward: zeroed dx", l, 0, b * in);
            n = add(p, n, "relu backward", l, 3 * b * in, b * in);
        }
    }
    for (int l = 0; l < layers; l++) {
        long w = (long)s[l] * s[l + 1], bias = s[l + 1];
        n = add(p, n, "adam: w", l + 1, 4 * w, 3 * w);
        n = add(p, n, "adam: bias", l + 1, 4 * bias, 3 * bias);
    }
    return n;
}
// end listing

// --- the engines ---------------------------------------------------------------

// listing: engines
// The engines of a run: the tape, then the compiler four ways. "serial"
// keeps every kernel on one thread (what the shared loops win); "panels"
// calls gemm() on panels of a quarter of L2 with the epilogue after each
// (what the epilogue on cache-sized tiles wins, or loses).
enum { EAGER, COMPILED, UNFUSED, SERIAL, PANELS, ENGINES };
static const char *const engine_names[ENGINES] = {"eager", "compiled", "compiled-unfused",
                                                  "compiled-serial", "compiled-panels"};
// end listing

// Every GEMM of a step goes through this backend, which times the one it
// wraps into the running engine's total: the part no fusion can touch.
static double *gemm_clock;

static int timed_gemm(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                      int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                      float beta, float *C, int ldc)
{
    double start = timer_now();
    int status =
        gemm_backend_find("auto")->run(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    *gemm_clock += timer_now() - start;
    return status;
}

static const struct gemm_backend timed = {"auto", "gemm(), its time added up", timed_gemm, 1};

struct engines {
    struct nn_model m[ENGINES];
    struct optim *opt;              // the eager engine's
    struct trainer tr;
    struct compiled_mlp c[ENGINES];
    int *labels;
    int at[ENGINES];
    double gemm_s[ENGINES];
};

static void engines_free(struct engines *e)
{
    trainer_free(&e->tr);
    optim_free(e->opt);
    for (int i = 0; i < ENGINES; i++) {
        compiled_mlp_free(&e->c[i]);
        nn_model_free(&e->m[i]);
    }
    free(e->labels);
    memset(e, 0, sizeof *e);
}

static int engines_init(struct engines *e, const struct dataset *ds, int batch,
                        const struct environment *env, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    struct optim_config oc = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
    e->labels = malloc(sizeof *e->labels * (size_t)batch);
    if (!e->labels) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < ENGINES; i++) {
        if (nn_mlp_init(&e->m[i], 3, sizes, 1, err, errlen) != 0)
            return -1;
        if (i == EAGER) {
            // The tape of chapter 7, on the active ISA, its GEMMs timed.
            struct tape_config config = tape_config_default();
            config.gemm = &timed;
            e->opt = optim_new(&oc, e->m[i].params, e->m[i].nparams);
            if (!e->opt || trainer_init(&e->tr, &config, batch, ds->train.pixels, ds->train.count,
                                        err, errlen) != 0)
                return -1;
            dataset_shuffle(e->tr.order, ds->train.count, 1);
            continue;
        }
        struct lazy_options lo = {.gemm = &timed, .no_fusion = i == UNFUSED, .serial = i == SERIAL,
                                  .panel_bytes = i == PANELS ? cpu_caches().l2 / 4 : 0,
                                  .cache_dir = env->lazy_cache, .cc = env->cc};
        if (compiled_mlp_init(&e->c[i], &e->m[i], batch, &oc, &lo, err, errlen) != 0)
            return -1;
    }
    return 0;
}

// steps training steps of engine i on whole batches of s, in the eager
// trainer's shuffled order; the seconds they took, or -1.
static double run_steps(struct engines *e, int i, const struct dataset_split *s, int steps)
{
    char err[4096];
    gemm_clock = &e->gemm_s[i];
    double start = timer_now(), data = 0.0;
    if (i == EAGER)
        return train_fixed_steps(&e->tr, &e->m[i], e->opt, s, steps, &e->at[i], &data) == 0
                   ? timer_now() - start : -1.0;
    struct compiled_mlp *c = &e->c[i];
    for (int k = 0; k < steps; k++) {
        if (e->at[i] + c->batch > s->count)
            e->at[i] = 0;
        int b = dataset_batch(s, e->tr.order, e->at[i], c->batch, c->x_data, e->labels);
        e->at[i] += b;
        float loss;
        if (compiled_mlp_step(c, e->labels, b, &loss, err, sizeof err) != 0) {
            fprintf(stderr, "error: a compiled step: %s\n", err);
            return -1.0;
        }
    }
    return timer_now() - start;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Compiles the step (training and evaluation programs) of batch b into an
// empty cache, then again from it. Returns 0, or -1 with err.
static int compile_times(int batch, const struct environment *env, double *cold, double *warm,
                         int *ncold, int *nwarm, char *err, size_t errlen)
{
    char dir[4096];
    const char *root = checkout_root();
    snprintf(dir, sizeof dir, "%s/build/lazy-cache-cold-XXXXXX", root ? root : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(dir, sizeof dir, "/tmp/lazy-cache-cold-XXXXXX");
        if (!mkdtemp(dir)) {
            snprintf(err, errlen, "cannot make a temporary kernel cache");
            return -1;
        }
    }
    int status = 0;
    for (int pass = 0; pass < 2 && status == 0; pass++) {
        struct nn_model m;
        struct compiled_mlp c;
        struct optim_config oc = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
        struct lazy_options lo = {.cache_dir = dir, .cc = env->cc};
        if (nn_mlp_init(&m, 3, sizes, 1, err, errlen) != 0)
            return -1;
        double t0 = timer_now();
        status = compiled_mlp_init(&c, &m, batch, &oc, &lo, err, errlen);
        double t = timer_now() - t0;
        if (status == 0) {
            struct lazy_program_stats a, b;
            lazy_program_stats(c.train, &a);
            lazy_program_stats(c.eval, &b);
            *(pass ? warm : cold) = t;
            *(pass ? nwarm : ncold) = a.compiled + b.compiled;
            compiled_mlp_free(&c);
        }
        nn_model_free(&m);
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "note: could not remove %s\n", dir);
    return status;
}

// --- the flags ------------------------------------------------------------------

// listing: bench_parse
// The flags, into o. Returns 0, 1 after --help, or 2 after printing the
// problem.
static int parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){.steps = 60, .rounds = 5, .env = env_read()};
    struct flag_list batches = {0};
    enum isa isa = ISA_COUNT;
    struct flags f = {.about = "The compiled MLP (784-256-10, Adam) beside the eager tape in "
                               "the same run: seconds per epoch, kernels and bytes per step, "
                               "compile time cold and warm."};
    struct flag threads = flag_threads(&o->threads);
    threads.help = "OpenMP threads (default: all cores)";
    flags_add(&f, threads);
    flags_add(&f, flag_counts("--batches", "a,b", &batches, 1, 65536,
                              "batch sizes (default 64,256)"));
    flags_add(&f, flag_int("--steps", "N", &o->steps, 1, 100000,
                           "timed steps per engine per round (default 60; 3 with --quick)"));
    flags_add(&f, flag_int("--rounds", "N", &o->rounds, 1, MAX_ROUNDS,
                           "rounds; each engine's median is reported (default 5; 1 with --quick)"));
    struct flag data = flag_data(&o->data);
    data.help = "the images (default fashion, else the committed sample)";
    flags_add(&f, data);
    flags_add(&f, flag_isa(&isa));
    struct flag csv = flag_csv(&o->csv);
    csv.help = "seconds per epoch per engine (the training speed columns)";
    flags_add(&f, csv);
    flags_add(&f, flag_output("--steps-csv", "FILE", &o->steps_csv,
                              "per engine and batch: kernels, bytes, compile time"));
    flags_add(&f, flag_output("--kernels", "FILE", &o->kernels_csv,
                              "each kernel of the compiled step, each pass of the eager one"));
    flags_add(&f, flag_output("--bytes", "FILE", &o->bytes_csv,
                              "bytes per step by phase, eager and compiled"));
    flags_add(&f, flag_quick(&o->quick));
    int given_steps = 0, given_rounds = 0;
    for (int i = 1; i < argc; i++) {
        given_steps |= !strcmp(argv[i], "--steps");
        given_rounds |= !strcmp(argv[i], "--rounds");
    }
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc;
    if (batches.n > MAX_BATCHES)
        return flags_fail(&f, "--batches takes at most %d sizes", MAX_BATCHES);
    o->nbatches = batches.n ? batches.n : 2;
    for (int i = 0; i < o->nbatches; i++)
        o->batches[i] = batches.n ? batches.v[i] : (i ? 256 : 64);
    if (o->quick && !given_steps)
        o->steps = 3;
    if (o->quick && !given_rounds)
        o->rounds = 1;
    return 0;
}
// end listing

static FILE *open_out(const char *path, const struct dataset *ds, int threads,
                      const struct environment *env, const char *header)
{
    FILE *f = train_bench_open(path, "stage-09", ds, threads, tape_config_default().isa, env,
                               EPOCH_IMAGES);
    if (f)
        fprintf(f, "%s\n", header);
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
    if (o.threads)
        omp_set_num_threads(o.threads);
    int threads = omp_get_max_threads();
    char err[8192];
    struct dataset ds;
    if (dataset_load_for_bench(o.data, o.env.data_dir, &ds, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    FILE *csv = NULL, *steps_csv = NULL, *kernels_csv = NULL, *bytes_csv = NULL;
    status = 1;
    if ((o.csv && !(csv = open_out(o.csv, &ds, threads, &o.env, SCHEMA_SPEED))) ||
        (o.steps_csv &&
         !(steps_csv = open_out(o.steps_csv, &ds, threads, &o.env,
                                "model,backend,threads,batch,kernels,bytes_read,bytes_written,"
                                "bytes,bytes_unfused,bytes_floor,compile_cold_s,compile_warm_s,"
                                "compiled_cold,compiled_warm,seconds_per_epoch,"
                                "gemm_seconds_per_epoch,speedup"))) ||
        (o.kernels_csv &&
         !(kernels_csv = open_out(o.kernels_csv, &ds, threads, &o.env,
                                  "model,backend,threads,batch,kernel,kind,bytes,bytes_unfused,"
                                  "us_per_step"))) ||
        (o.bytes_csv &&
         !(bytes_csv = open_out(o.bytes_csv, &ds, threads, &o.env,
                                "model,threads,batch,phase,eager_passes,eager_bytes,"
                                "compiled_kernels,compiled_bytes,saved_bytes"))))
        goto out;
    printf("784-256-10, Adam, on %s, %d thread%s: %d rounds of %d steps per engine, after %d "
           "of warm-up\n", ds.name, threads, threads == 1 ? "" : "s", o.rounds, o.steps,
           WARMUP_STEPS);
    struct peak pk = peak_get(tape_config_default().isa, threads);
    double flops = 0.0;
    for (int l = 0; l < 2; l++)
        flops += (l == 0 ? 2.0 : 3.0) * 2.0 * sizes[l] * sizes[l + 1];
    for (int bi = 0; bi < o.nbatches; bi++) {
        int batch = o.batches[bi];
        if (batch > ds.train.count) {
            fprintf(stderr, "note: batch %d is larger than %s's %d images: skipped\n", batch,
                    ds.name, ds.train.count);
            continue;
        }
        double cold = 0, warm = 0;
        int ncold = 0, nwarm = 0;
        if (compile_times(batch, &o.env, &cold, &warm, &ncold, &nwarm, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            goto out;
        }
        struct engines e;
        if (engines_init(&e, &ds, batch, &o.env, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            engines_free(&e);
            goto out;
        }
        // listing: rounds
        // Warm-up, then rounds: each engine runs its steps in turn, so a
        // slower minute of the machine falls on all of them alike.
        double t[ENGINES][MAX_ROUNDS];
        int ok = 1;
        for (int i = 0; i < ENGINES && ok; i++)
            ok = run_steps(&e, i, &ds.train, WARMUP_STEPS) >= 0;
        for (int i = 0; i < ENGINES; i++)
            e.gemm_s[i] = 0.0;
        for (int r = 0; r < o.rounds && ok; r++)
            for (int i = 0; i < ENGINES && ok; i++)
                ok = (t[i][r] = run_steps(&e, i, &ds.train, o.steps)) >= 0;
        // end listing
        if (!ok) {
            engines_free(&e);
            goto out;
        }
        double per_epoch[ENGINES], steps_per_epoch = (double)EPOCH_IMAGES / batch;
        for (int i = 0; i < ENGINES; i++)
            per_epoch[i] = median(t[i], o.rounds) / o.steps * steps_per_epoch;
        // Where the compiled step's time goes, kernel by kernel (timed apart:
        // the timer calls would slow the steps above).
        double gemm_rounds = e.gemm_s[COMPILED];
        lazy_program_profile(e.c[COMPILED].train, 1);
        if (run_steps(&e, COMPILED, &ds.train, o.steps) < 0) {
            engines_free(&e);
            goto out;
        }
        e.gemm_s[COMPILED] = gemm_rounds;
        struct pass passes[64];
        int np = eager_passes(sizes, 3, batch, passes);
        long eager_read = 0, eager_written = 0;
        for (int i = 0; i < np; i++) {
            eager_read += 4 * passes[i].read;
            eager_written += 4 * passes[i].written;
        }
        printf("\nbatch %d\n%-17s %9s %9s %8s %10s %8s %12s\n", batch, "engine", "s/epoch",
               "images/s", "speedup", "GEMM s", "kernels", "bytes/step");
        for (int i = 0; i < ENGINES; i++) {
            struct lazy_program_stats st = {0};
            if (i != EAGER)
                lazy_program_stats(e.c[i].train, &st);
            long rd = i == EAGER ? eager_read : st.bytes_read;
            long wr = i == EAGER ? eager_written : st.bytes_written;
            int kernels = i == EAGER ? np : st.kernels;
            double images = EPOCH_IMAGES / per_epoch[i];
            double gflops = flops * images / 1e9;
            double gemm_epoch = e.gemm_s[i] / (o.rounds * o.steps) * steps_per_epoch;
            printf("%-17s %9.3f %9.0f %7.2f× %10.3f %8d %12ld\n", engine_names[i], per_epoch[i],
                   images, per_epoch[EAGER] / per_epoch[i], gemm_epoch, kernels, rd + wr);
            if (csv)
                fprintf(csv, "%s,ours,%s,%d,%d,%.6f,%.1f,%.3f,%.2f,,,\n", model, engine_names[i],
                        threads, batch, per_epoch[i], images, gflops,
                        pk.gflops > 0 ? 100 * gflops / pk.gflops : 0.0);
            if (steps_csv)
                fprintf(steps_csv,
                        "%s,%s,%d,%d,%d,%ld,%ld,%ld,%ld,%ld,%.4f,%.4f,%d,%d,%.6f,%.6f,%.3f\n",
                        model, engine_names[i], threads, batch, kernels, rd, wr, rd + wr,
                        st.bytes_unfused, st.bytes_floor, i == COMPILED ? cold : 0.0,
                        i == COMPILED ? warm : 0.0, i == COMPILED ? ncold : 0,
                        i == COMPILED ? nwarm : 0, per_epoch[i], gemm_epoch,
                        per_epoch[EAGER] / per_epoch[i]);
        }
        printf("compile time of the step (training and evaluation): %.2f s into an empty cache "
               "(%d kernels compiled), %.3f s from the cache (%d compiled)\n", cold, ncold, warm,
               nwarm);
        // The bytes per step by phase, both ways: the eager passes as
        // counted above, the compiled kernels as the scheduler counts them.
        // A compiled kernel's phase: the forward runs until the loss's
        // kernel (the one with the row max of softmax), the loss is that
        // kernel and the one summing its rows (loops of batch×1), and the
        // rest is the backward with the optimizer fused into it.
        if (bytes_csv) {
            long eb[PHASES] = {0}, cb[PHASES] = {0};
            int en[PHASES] = {0}, cn[PHASES] = {0};
            for (int i = 0; i < np; i++) {
                eb[passes[i].phase] += 4 * (passes[i].read + passes[i].written);
                en[passes[i].phase]++;
            }
            const struct lazy_program *p = e.c[COMPILED].train;
            enum phase ph = FORWARD;
            char rows1[32];
            snprintf(rows1, sizeof rows1, "%d×1", batch);
            for (int k = 0; k < lazy_program_kernel_count(p); k++) {
                struct lazy_kernel_info ki;
                lazy_program_kernel(p, k, &ki);
                if (strstr(ki.name, "rmax"))
                    ph = LOSS;
                else if (ph == LOSS && strcmp(ki.loops, rows1) != 0)
                    ph = BACKWARD;
                cb[ph] += ki.bytes;
                cn[ph]++;
            }
            for (int i = 0; i < PHASES; i++)
                fprintf(bytes_csv, "%s,%d,%d,%s,%d,%ld,%d,%ld,%ld\n", model, threads, batch,
                        phase_names[i], en[i], eb[i], cn[i], cb[i], eb[i] - cb[i]);
        }
        if (kernels_csv) {
            const struct lazy_program *p = e.c[COMPILED].train;
            for (int k = 0; k < lazy_program_kernel_count(p); k++) {
                struct lazy_kernel_info ki;
                lazy_program_kernel(p, k, &ki);
                fprintf(kernels_csv, "%s,compiled,%d,%d,%s,%s,%ld,%ld,%.2f\n", model, threads,
                        batch, ki.name, ki.kind, ki.bytes, ki.bytes_unfused,
                        1e6 * ki.seconds / o.steps);
            }
            for (int i = 0; i < np; i++)
                fprintf(kernels_csv, "%s,eager,%d,%d,%s,pass,%ld,,\n", model, threads, batch,
                        passes[i].op, 4 * (passes[i].read + passes[i].written));
        }
        fflush(stdout);
        engines_free(&e);
    }
    status = 0;
out:
    status = train_csv_close(csv, o.csv, status);
    status = train_csv_close(steps_csv, o.steps_csv, status);
    status = train_csv_close(kernels_csv, o.kernels_csv, status);
    status = train_csv_close(bytes_csv, o.bytes_csv, status);
    dataset_free(&ds);
    return status;
}
