// How long is an epoch? Training steps of the MLP timed on every GEMM backend
// of the book (naive ... parallel, auto, OpenBLAS) at 1 and 2 threads,
// reported as seconds per epoch of 60,000 images: what each chapter bought.
// Then, for the auto backend, where an epoch's time goes (GEMMs, the
// elementwise ops and the loss, the optimizer, the data) and what the batch
// size does to speed. Last, each model with the arena and with planned
// memory in the same minutes: the step's live and reserved bytes, its time.
// With --inference, each training row is followed by the forward alone (no
// tape recording) on the same model and batch: `make compare` races that
// against PyTorch's no_grad.
//   bench_mlp [--threads N] [--gemm a,b] [--steps N] [--data NAME]
//             [--csv FILE] [--breakdown FILE] [--no-sweep] [--quick] [--inference]
//             [--memory arena,planned] [--memory-csv FILE] [--lifetimes FILE]
//             [--changes FILE] [--rounds N]
// Writes build/results/stage-07.csv (speed), stage-07-breakdown.csv,
// stage-07-memory.csv, stage-07-lifetimes.csv and stage-07-step.csv (the
// step's fixed costs, each change of chapter 7 against the one before).
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "dataset.h"
#include "flags.h"
#include "gemm_backend.h"
#include "gemm_flags.h"
#include "nn.h"
#include "optim.h"
#include "peak.h"
#include "schemas.h"
#include "tape_flags.h"
#include "timer.h"
#include "train.h"
#include "train_run.h"

// An epoch of Fashion-MNIST or MNIST: the unit every time is reported in.
enum { EPOCH_IMAGES = 60000, WARMUP_STEPS = 5 };

struct config {
    const char *model;   // "784-256-10"
    const char *layers;  // "784,256,10"
    int batch;
};

static const struct config configs[] = {
    {"784-256-10", "784,256,10", 64},
    {"784-128-64-10", "784,128,64,10", 256},
};
static const char *const backends[] = {"naive", "tiled", "simd", "packed",
                                       "parallel", "auto", "openblas"};
static const int sweep_batches[] = {16, 32, 128, 256, 512};

struct options {
    struct environment env;     // what the environment says (cli/env.h)
    int threads;                // 0: 1 and 2 (and all cores, when more)
    struct flag_list backends;  // indices into gemm_backend_all(); n 0: every one above
    int steps;                  // timed steps per measurement
    int quick;
    int no_sweep;
    int inference;              // a NAME-inference row after each training row
    const char *data, *csv, *breakdown;
    struct flag_list memory;  // the memory study's modes (enum memory_mode)
    const char *memory_csv, *lifetimes;
    const char *changes;      // the step's changes, one after another
    int rounds;
};

// The step as it was before each change of chapter 7's last section, and
// after: the optimizer and the batch's conversion on the calling thread or
// shared, every gradient zeroed and added into or written by its first GEMM,
// the linear layer's bias passes a float or a row at a time.
struct variant {
    const char *name;
    int optim_threads;  // 1: the calling thread alone; 0: all
    int accumulate;     // tape_config.accumulate
    int batch_threads;  // trainer.batch_threads
    int plain_bias;     // tape_config.plain_bias
};

static const struct variant variants[] = {
    {"before", 1, 1, 1, 1},
    {"optimizer_shared", 0, 1, 1, 1},
    {"first_gemm_writes", 0, 0, 1, 1},
    {"batch_shared", 0, 0, 0, 1},
    {"bias_by_rows", 0, 0, 0, 0},
};

// --- a GEMM backend that times the one it wraps -------------------------------
static const struct gemm_backend *timed_inner;
static double gemm_seconds;

static int timed_run(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                     int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc)
{
    double start = timer_now();
    int r = timed_inner->run(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    gemm_seconds += timer_now() - start;
    return r;
}

static const struct gemm_backend timed = {"timed", "times the backend it wraps", timed_run, 1};

// --- one measurement -----------------------------------------------------------
struct measure {
    double step_s;      // seconds per training step (data included)
    double data_s;      // of which turning uint8 into a float batch
    double gemm_s;      // of which GEMMs (only through the timed backend)
    double optim_s;     // one optimizer update, timed alone
    double infer_s;     // the forward alone, no tape recording (when asked)
};

// Trains `steps` steps on batches of the dataset in a shuffled order, after
// a warm-up, and returns the per-step times; time_optim and time_infer also
// time the optimizer alone and the forward alone. -1 on an error (printed).
static int measure(const struct dataset *ds, const char *layers, int batch,
                   const struct gemm_backend *backend, const struct variant *v, int steps,
                   int time_optim, int time_infer, struct measure *out)
{
    if (!v)
        v = &variants[sizeof variants / sizeof variants[0] - 1];  // as the library runs
    char err[4096];
    int sizes[NN_MAX_LAYERS + 1];
    int n = nn_parse_sizes(layers, sizes, NN_MAX_LAYERS + 1);
    struct nn_model m;
    struct trainer tr;
    if (nn_mlp_init(&m, n, sizes, 1, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    struct optim_config c = optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f);
    struct optim *o = optim_new(&c, m.params, m.nparams);
    struct tape_config config = tape_config_default();
    config.gemm = backend;
    config.accumulate = v->accumulate;
    config.plain_bias = v->plain_bias;
    // Beside a GEMM on one thread, or on OpenBLAS's, the passes stay on one.
    int alone = train_pass_threads(backend) == 1;
    if (o)
        optim_set_threads(o, alone ? 1 : v->optim_threads);
    if (!o || trainer_init(&tr, &config, batch, ds->train.pixels, ds->train.count, err,
                           sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", o ? err : "out of memory for the optimizer");
        optim_free(o);
        nn_model_free(&m);
        return -1;
    }
    tr.batch_threads = alone ? 1 : v->batch_threads;
    dataset_shuffle(tr.order, ds->train.count, 1);
    int at = 0;
    double data_s = 0, start = 0;
    int status = train_fixed_steps(&tr, &m, o, &ds->train, WARMUP_STEPS, &at, &data_s);
    if (status == 0) {
        data_s = 0;
        gemm_seconds = 0;
        start = timer_now();
        status = train_fixed_steps(&tr, &m, o, &ds->train, steps, &at, &data_s);
    }
    if (status == 0) {
        double total = timer_now() - start;
        out->step_s = total / steps;
        out->data_s = data_s / steps;
        out->gemm_s = gemm_seconds / steps;
        out->optim_s = 0;
        out->infer_s = 0;
        // The optimizer alone, on the gradients the last step left: the same
        // work as inside a step (train_step runs it once per step).
        if (time_optim) {
            double o0 = timer_now();
            for (int i = 0; i < steps; i++)
                optim_step(o);
            out->optim_s = (timer_now() - o0) / steps;
        }
        if (time_infer && (out->infer_s = train_time_forward(&tr, &m, WARMUP_STEPS, steps)) < 0)
            status = -1;
    }
    trainer_free(&tr);
    optim_free(o);
    nn_model_free(&m);
    return status;
}

// The matmul FLOPs per image of a training step (train 1) or of the forward
// alone (train 0), for a model given by its sizes.
static double flops_per_image(const char *layers, int train)
{
    int sizes[NN_MAX_LAYERS + 1];
    int n = nn_parse_sizes(layers, sizes, NN_MAX_LAYERS + 1);
    double forward, step;
    nn_mlp_flops(n, sizes, &forward, &step);
    return train ? step : forward;
}

static int wanted(const struct options *o, const char *backend)
{
    if (o->backends.n == 0)
        return 1;
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    for (int i = 0; i < o->backends.n; i++)
        if (strcmp(all[o->backends.v[i]].name, backend) == 0)
            return 1;
    return 0;
}

// One row of the speed CSV and of the table: secs per batch of `batch`.
static void row(FILE *csv, const char *model, const char *backend, int threads, int batch,
                double secs, double flops_per_image)
{
    double per_epoch = secs * ((double)EPOCH_IMAGES / batch);
    double images_s = batch / secs;
    double gflops = flops_per_image * images_s / 1e9;
    struct peak p = peak_get(isa_best(), threads);
    double pct = p.gflops > 0 ? 100.0 * gflops / p.gflops : 0.0;
    printf("%-24s %-9s %2d  %5d  %9.3f s  %9.0f  %7.1f  %5.1f %%\n", model, backend, threads,
           batch, per_epoch, images_s, gflops, pct);
    fflush(stdout);
    if (csv) {
        fprintf(csv, "%s,ours,%s,%d,%d,%.6f,%.1f,%.3f,%.2f,,,\n", model, backend, threads, batch,
                per_epoch, images_s, gflops, pct);
        fflush(csv);
    }
}

static int parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){.env = env_read()};
    enum isa isa = ISA_COUNT;
    struct flags f = {.about = "Seconds per epoch of the MLP on every GEMM backend, then where "
                               "the auto backend's epoch\ngoes and what the batch size does."};
    struct flag fl = flag_threads(&o->threads);
    fl.help = "only N threads (default: 1 and 2)";
    flags_add(&f, fl);
    fl = gemm_backends_flag(&o->backends);
    fl.help = "only these backends (default: naive, tiled, simd, packed, parallel, auto, "
              "openblas)";
    flags_add(&f, fl);
    flags_add(&f, flag_isa(&isa));
    flags_add(&f,
              flag_int("--steps", "N", &o->steps, 1, 1000000,
                       "timed steps per measurement (default 50, 3 with --quick; naive a tenth)"));
    fl = flag_data(&o->data);
    fl.help = "the images the steps train on (default: fashion when `make datasets` got it, "
              "else the sample)";
    flags_add(&f, fl);
    fl = flag_csv(&o->csv);
    fl.help = "speed rows (- for stdout)";
    flags_add(&f, fl);
    flags_add(&f, flag_output("--breakdown", "FILE", &o->breakdown,
                              "where the auto backend's epoch goes"));
    flags_add(&f, flag_switch("--no-sweep", &o->no_sweep,
                              "skip the batch sizes sweep of the auto backend"));
    flags_add(&f, flag_switch("--inference", &o->inference,
                              "after each training row, the forward alone (no tape) on the same "
                              "model and batch: a MODEL-inference row"));
    fl = tape_memories_flag(&o->memory);
    fl.help = "the memory modes --memory-csv compares (default: arena,planned)";
    flags_add(&f, fl);
    flags_add(&f, flag_output("--memory-csv", "FILE", &o->memory_csv,
                              "each model's step per memory mode: live and reserved bytes, time"));
    flags_add(&f, flag_output("--lifetimes", "FILE", &o->lifetimes,
                              "every buffer of one planned step of the first model (the "
                              "lifetime chart)"));
    flags_add(&f, flag_output("--changes", "FILE", &o->changes,
                              "the first model's step before and after each change of the "
                              "chapter, interleaved"));
    flags_add(&f, flag_int("--rounds", "N", &o->rounds, 1, 1000,
                           "rounds of --changes (default 7, 2 with --quick)"));
    flags_add(&f, flag_quick(&o->quick));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc;
    if (o->steps == 0)
        o->steps = o->quick ? 3 : 50;
    if (o->rounds == 0)
        o->rounds = o->quick ? 2 : 7;
    if (o->memory.n == 0)
        o->memory = (struct flag_list){2, {MEMORY_ARENA, MEMORY_PLANNED}};
    return 0;
}

// A results file with the machine and dataset lines (the ISA: the default
// context's, which --isa sets), and the epoch size.
static FILE *open_out(const char *path, const struct dataset *ds, int threads,
                      const struct environment *env)
{
    return train_bench_open(path, "stage-07", ds, threads, tape_config_default().isa, env,
                            EPOCH_IMAGES);
}

// --- arena against planned memory ---------------------------------------------
static int build_mlp(struct nn_model *m, const void *ctx, char *err, size_t errlen)
{
    int sizes[NN_MAX_LAYERS + 1];
    int n = nn_parse_sizes(ctx, sizes, NN_MAX_LAYERS + 1);
    return nn_mlp_init(m, n, sizes, 1, err, errlen);
}

// Each model on one tape per memory mode, in alternating rounds
// (train_memory_study); the first model's planned step goes to lifetimes.
static int memory_study(const struct options *o, const struct dataset *ds, int threads,
                        FILE *csv, FILE *lifetimes)
{
    printf("\nthe step's memory, the modes alternating (auto backend, %d thread%s):\n", threads,
           threads == 1 ? "" : "s");
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        struct memory_study st = {.model = configs[c].model, .batch = configs[c].batch,
                                  .config = tape_config_default(), .build = build_mlp,
                                  .ctx = configs[c].layers, .warmup = WARMUP_STEPS,
                                  .steps = o->quick ? 3 : (o->steps + 1) / 2,
                                  .rounds = o->quick ? 2 : 7};
        if (train_memory_study(&st, &ds->train, &o->memory, threads, csv,
                               c == 0 ? lifetimes : NULL) != 0)
            return -1;
    }
    return 0;
}

// The first model's step in each variant, on each thread count, the
// variants taking turns in rounds so that all see the same minutes; the
// median round of each is its row.
static int changes_study(const struct options *o, const struct dataset *ds,
                         const struct bench_threads *th, FILE *csv)
{
    const int *thread_list = th->count;
    int nthreads = th->n;
    enum { NV = sizeof variants / sizeof variants[0], MAX_ROUNDS = 1000 };
    static double ms[NV][MAX_ROUNDS];
    const struct config *c = &configs[0];
    const struct gemm_backend *be = gemm_backend_find("auto");
    double per = (double)EPOCH_IMAGES / c->batch;
    for (int t = 0; t < nthreads; t++) {
        omp_set_num_threads(thread_list[t]);
        printf("\nthe step, change by change (%s, batch %d, auto backend, %d thread%s, "
               "median of %d rounds):\n", c->model, c->batch, thread_list[t],
               thread_list[t] == 1 ? "" : "s", o->rounds);
        for (int r = 0; r < o->rounds; r++)
            for (int v = 0; v < NV; v++) {
                struct measure m;
                if (measure(ds, c->layers, c->batch, be, &variants[v], o->steps, 0, 0, &m) != 0)
                    return -1;
                ms[v][r] = 1e3 * m.step_s;
            }
        double first = 0, last = 0;
        for (int v = 0; v < NV; v++) {
            double step = bench_median(ms[v], o->rounds);
            if (v == 0)
                first = last = step;
            // What the change saved on the step before it, and all of them so far.
            double saved = last - step, speedup = first / step;
            printf("  %-18s %8.3f ms/step  %7.3f s/epoch  %+7.3f ms  %5.2fx\n",
                   variants[v].name, step, step * per / 1e3, -saved, speedup);
            if (csv)
                fprintf(csv, "%s,auto,%d,%d,%s,%.4f,%.6f,%.4f,%.3f\n", c->model, thread_list[t],
                        c->batch, variants[v].name, step, step * per / 1e3, saved, speedup);
            last = step;
        }
    }
    return 0;
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
    if (dataset_load_for_bench(o.data, o.env.data_dir, &ds, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    const struct bench_threads th = bench_threads_of(o.threads);
    const int *thread_list = th.count;
    int nthreads = th.n, top = th.top;

    FILE *csv = NULL, *bd = NULL, *mem = NULL, *life = NULL, *ch = NULL;
    status = 1;
    if (o.csv && !(csv = open_out(o.csv, &ds, top, &o.env)))
        goto out;
    if (csv)
        fprintf(csv, "%s\n", SCHEMA_SPEED);
    printf("training steps of an MLP on %s, Adam, timed over %d steps after %d of warm-up\n",
           ds.name, o.steps, WARMUP_STEPS);
    printf("%-24s %-9s %2s  %5s  %11s  %9s  %7s  %7s\n", "model", "backend", "th", "batch",
           "s/epoch", "images/s", "GFLOPS", "peak");

    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        for (size_t k = 0; k < sizeof backends / sizeof backends[0]; k++) {
            if (!wanted(&o, backends[k]))
                continue;
            const struct gemm_backend *be = gemm_backend_find(backends[k]);
            // The naive loops are ten times slower than the others or more: a
            // tenth of the steps keeps the run short, and a step's time is as fair.
            int steps = strcmp(backends[k], "naive") == 0 ? (o.steps + 9) / 10 : o.steps;
            for (int t = 0; t < nthreads; t++) {
                omp_set_num_threads(thread_list[t]);
                struct measure r;
                if (measure(&ds, configs[c].layers, configs[c].batch, be, NULL, steps, 0,
                            o.inference, &r) != 0)
                    goto out;
                row(csv, configs[c].model, be->name, thread_list[t], configs[c].batch, r.step_s,
                    flops_per_image(configs[c].layers, 1));
                if (o.inference) {
                    char name[64];
                    snprintf(name, sizeof name, "%s-inference", configs[c].model);
                    row(csv, name, be->name, thread_list[t], configs[c].batch, r.infer_s,
                        flops_per_image(configs[c].layers, 0));
                }
            }
        }
    }

    // What the batch size does to speed: the auto backend on all threads.
    if (!o.no_sweep && wanted(&o, "auto")) {
        omp_set_num_threads(top);
        const struct config *c = &configs[0];
        for (size_t i = 0; i < sizeof sweep_batches / sizeof sweep_batches[0]; i++) {
            struct measure r;
            if (sweep_batches[i] > ds.train.count)
                continue;
            if (measure(&ds, c->layers, sweep_batches[i], gemm_backend_find("auto"), NULL,
                        o.steps, 0, 0, &r) != 0)
                goto out;
            row(csv, c->model, "auto", top, sweep_batches[i], r.step_s, flops_per_image(c->layers, 1));
        }
    }

    // Where an epoch goes: the auto backend wrapped in the timing one, on
    // each thread count, since the parts do not scale alike.
    if (o.breakdown && wanted(&o, "auto")) {
        if (!(bd = open_out(o.breakdown, &ds, top, &o.env)))
            goto out;
        fprintf(bd, "model,backend,threads,batch,part,seconds_per_epoch,share\n");
        timed_inner = gemm_backend_find("auto");
        for (int t = 0; t < nthreads; t++) {
            int threads = thread_list[t];
            printf("\nwhere an epoch goes (auto backend, %d thread%s):\n", threads,
                   threads == 1 ? "" : "s");
            omp_set_num_threads(threads);
            for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
                struct measure r;
                if (measure(&ds, configs[c].layers, configs[c].batch, &timed, NULL, o.steps, 1, 0,
                            &r) != 0)
                    goto out;
                double per = (double)EPOCH_IMAGES / configs[c].batch;
                // The step's time less its GEMMs, optimizer and data: the
                // elementwise ops, the loss, and the tape's own bookkeeping.
                // (The optimizer is timed apart, so on a noisy run the parts
                // can add up to a little more than the step: then this is 0.)
                double rest = r.step_s - r.gemm_s - r.optim_s - r.data_s;
                const char *parts[] = {"gemm", "elementwise_loss", "optimizer", "data", "total"};
                double secs[] = {r.gemm_s, rest > 0 ? rest : 0, r.optim_s, r.data_s, r.step_s};
                for (int p = 0; p < 5; p++) {
                    fprintf(bd, "%s,auto,%d,%d,%s,%.6f,%.4f\n", configs[c].model, threads,
                            configs[c].batch, parts[p], secs[p] * per, secs[p] / r.step_s);
                    printf("  %-14s batch %3d  %-16s %8.4f s/epoch  %5.1f %%\n",
                           configs[c].model, configs[c].batch, parts[p], secs[p] * per,
                           100 * secs[p] / r.step_s);
                }
            }
        }
    }
    if (o.changes && wanted(&o, "auto")) {
        if (!(ch = open_out(o.changes, &ds, top, &o.env)))
            goto out;
        fprintf(ch, "model,backend,threads,batch,change,step_ms,seconds_per_epoch,saved_ms,"
                    "vs_before\n");
        if (changes_study(&o, &ds, &th, ch) != 0)
            goto out;
    }
    if ((o.memory_csv || o.lifetimes) && wanted(&o, "auto")) {
        if (o.memory_csv && !(mem = open_out(o.memory_csv, &ds, top, &o.env)))
            goto out;
        if (o.lifetimes && !(life = open_out(o.lifetimes, &ds, top, &o.env)))
            goto out;
        if (mem)
            fprintf(mem, "model,backend,threads,batch,memory,step_ms,live_bytes,"
                         "reserved_bytes\n");
        if (life)
            fprintf(life, "# model: %s\n# batch: %d\n", configs[0].model, configs[0].batch);
        omp_set_num_threads(top);
        if (memory_study(&o, &ds, top, mem, life) != 0)
            goto out;
    }
    status = 0;
out:
    status = train_csv_close(csv, o.csv, status);
    status = train_csv_close(bd, o.breakdown, status);
    status = train_csv_close(mem, o.memory_csv, status);
    status = train_csv_close(life, o.lifetimes, status);
    status = train_csv_close(ch, o.changes, status);
    dataset_free(&ds);
    return status;
}
