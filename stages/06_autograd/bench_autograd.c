// What does the tape cost? For MLP-sized training steps, the time of a whole
// forward + backward against the time of its GEMMs alone, on each backend.
// The difference is everything that is not a GEMM: the elementwise ops, the
// loss, the tape's memory, the walk. Writes build/results/stage-06.csv.
// Unless --isa is given, the auto backend is measured a second time with the
// scalar elementwise loops, to show what the vector ones buy. Each row is
// measured with the arena and with planned memory (--memory), with the
// step's live and reserved bytes.
//   bench_autograd [--threads N] [--reps R] [--gemm a,b] [--isa NAME]
//                  [--memory arena,planned] [--batches 64,256] [--csv FILE]
//                  [--quick]
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "blas.h"
#include "cpu.h"
#include "env.h"
#include "flags.h"
#include "gemm_backend.h"
#include "gemm_flags.h"
#include "machine.h"
#include "mat.h"
#include "ops.h"
#include "tape.h"
#include "tape_flags.h"
#include "timer.h"

enum { MAX_LAYERS = 4, MAX_CALLS = 64, MAX_REPS = 1000, MAX_BATCHES = 8 };

// A kernel whose repetitions take longer than this stops early (the naive
// backend at batch 256): the median of fewer runs is still a fair number.
static const double TIME_BUDGET = 3.0;

struct model {
    const char *name;
    int nlayers;
    int sizes[MAX_LAYERS + 1];
};

static const struct model models[] = {
    {"784-256-10", 2, {784, 256, 10}},
    {"784-128-64-10", 3, {784, 128, 64, 10}},
};

// --- the GEMM calls of one step, recorded so they can be run again alone ---
struct gemm_call {
    enum gemm_trans ta, tb;
    int m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
};

static const struct gemm_backend *real;
static struct gemm_call calls[MAX_CALLS];
static int ncalls;
static int recording;  // on for one step only

static struct gemm_context recorded_context; // the context of the calls recorded

static int recording_backend(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb,
                             int m, int n, int k, float alpha, const float *A, int lda,
                             const float *B, int ldb, float beta, float *C, int ldc)
{
    if (recording && ncalls < MAX_CALLS)
        calls[ncalls++] = (struct gemm_call){ta, tb, m, n, k, lda, ldb, ldc, alpha, beta,
                                             A, B, C};
    recorded_context = *ctx;
    return real->run(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

static const struct gemm_backend recorder = {"recorder", "records each call", recording_backend, 0};

// --- one training step --------------------------------------------------------
struct net {
    const struct model *model;
    struct tensor *w[MAX_LAYERS], *b[MAX_LAYERS];
    float *x;
    int *labels;
    int batch;
};

static int net_init(struct net *n, const struct model *m, int batch)
{
    memset(n, 0, sizeof *n);
    n->model = m;
    n->batch = batch;
    for (int l = 0; l < m->nlayers; l++) {
        int in = m->sizes[l], out = m->sizes[l + 1];
        n->w[l] = tensor_param(2, (int[]){in, out});
        n->b[l] = tensor_param(1, (int[]){out});
        if (!n->w[l] || !n->b[l])
            return -1;
        mat_fill_random(n->w[l]->data, in, out, out, 10 + (uint64_t)l);
        for (long i = 0; i < n->w[l]->size; i++)
            n->w[l]->data[i] *= sqrtf(6.0f / (float)(in + out));
    }
    n->x = malloc(sizeof(float) * (size_t)batch * m->sizes[0]);
    n->labels = malloc(sizeof(int) * (size_t)batch);
    if (!n->x || !n->labels)
        return -1;
    mat_fill_random(n->x, batch, m->sizes[0], m->sizes[0], 1);
    for (int i = 0; i < batch; i++)
        n->labels[i] = (i * 7) % m->sizes[m->nlayers];
    return 0;
}

static void net_free(struct net *n)
{
    for (int l = 0; l < n->model->nlayers; l++) {
        tensor_free(n->w[l]);
        tensor_free(n->b[l]);
    }
    free(n->x);
    free(n->labels);
}

// listing: bench_step
// A whole step as training runs it: a fresh tape, the batch copied in,
// forward (ReLU between layers), the loss, zeroed gradients, backward.
static struct tensor *step(struct tape *t, struct net *n)
{
    const struct model *m = n->model;
    tape_clear(t);
    struct tensor *h = tensor_from(t, 2, (int[]){n->batch, m->sizes[0]}, n->x,
                                   (long)n->batch * m->sizes[0]);
    for (int l = 0; l < m->nlayers; l++) {
        h = op_bias_add(t, op_matmul(t, h, n->w[l]), n->b[l]);
        if (l + 1 < m->nlayers)
            h = op_relu(t, h);
    }
    struct tensor *loss = op_cross_entropy(t, h, n->labels, n->batch);
    for (int l = 0; l < m->nlayers; l++) {
        tensor_zero_grad(n->w[l]);
        tensor_zero_grad(n->b[l]);
    }
    return tape_backward(t, loss) == 0 ? loss : NULL;
}
// end listing

// --- timing -------------------------------------------------------------------
static double median(double *t, int n)
{
    return bench_median(t, n);
}

static void replay_gemms(void)
{
    for (int i = 0; i < ncalls; i++) {
        const struct gemm_call *c = &calls[i];
        real->run(&recorded_context, c->ta, c->tb, c->m, c->n, c->k, c->alpha, c->A, c->lda, c->B,
                  c->ldb, c->beta, c->C, c->ldc);
    }
}

// listing: bench_interleave
// Steps and replays of the step's GEMMs alternate, so a slow moment of the
// machine (another process, a frequency change) falls on both alike; each
// gets its median. The recorded pointers are those of the step after the
// first; every later step gets the same addresses (same sizes, same order:
// the arena's cursor, or the plan's offsets), and a replay runs before the
// next tape_clear, so they point into the tape's memory.
static void time_both(struct tape *t, struct net *n, int reps, double *step_s, double *gemm_s)
{
    double steps[MAX_REPS], gemms[MAX_REPS], spent = 0.0;
    int done = 0;
    while (done < reps && (done == 0 || spent < TIME_BUDGET)) {
        double t0 = timer_now();
        step(t, n);
        double t1 = timer_now();
        replay_gemms();
        double t2 = timer_now();
        steps[done] = t1 - t0;
        gemms[done++] = t2 - t1;
        spent += t2 - t0;
    }
    *step_s = median(steps, done);
    *gemm_s = median(gemms, done);
}
// end listing

// --- flags --------------------------------------------------------------------
struct options {
    struct environment env;  // what the environment says (cli/env.h)
    int threads, reps, quick;
    struct flag_list backends;  // indices into gemm_backend_all(); n 0: the default set
    struct flag_list batches;
    struct flag_list memory;  // enum memory_mode values, in order
    const char *csv;
    enum isa isa;  // --isa, or ISA_COUNT
};

static int parse(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->env = env_read();
    o->threads = cpu_count();
    o->isa = ISA_COUNT;
    struct flags f = {.about = "The tape's cost: a whole training step against its GEMMs "
                               "alone, per GEMM backend\n(the MLP shapes are fixed). Without "
                               "--isa, the auto backend runs once more with the\nscalar "
                               "elementwise loops."};
    struct flag fl = flag_threads(&o->threads);
    fl.help = "threads for the GEMMs";
    flags_add(&f, fl);
    fl = flag_reps(&o->reps);
    fl.help = "timed steps, median reported (default 20; 5 with --quick)";
    fl.hi = MAX_REPS;
    flags_add(&f, fl);
    fl = gemm_backends_flag(&o->backends);
    fl.help = "GEMM backends (default: all; auto,openblas with --quick)";
    flags_add(&f, fl);
    flags_add(&f, flag_isa(&o->isa));
    fl = tape_memories_flag(&o->memory);
    fl.help = "where the step's tensors live (default: arena,planned)";
    flags_add(&f, fl);
    flags_add(
        &f, flag_counts("--batches", "N,N", &o->batches, 1, 65536, "batch sizes (default 64,256)"));
    flags_add(&f, flag_csv(&o->csv));
    flags_add(&f, flag_quick(&o->quick));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc;
    if (o->batches.n == 0)
        o->batches = (struct flag_list){2, {64, 256}};
    if (o->batches.n > MAX_BATCHES)
        return flags_fail(&f, "--batches takes at most %d sizes", MAX_BATCHES);
    if (o->reps == 0)
        o->reps = o->quick ? 5 : 20;
    if (o->memory.n == 0)
        o->memory = (struct flag_list){2, {MEMORY_ARENA, MEMORY_PLANNED}};
    if (o->backends.n == 0) {
        static const char *const all[] = {"auto",   "naive",    "tiled",    "simd",
                                          "packed", "parallel", "openblas", NULL};
        static const char *const quick[] = {"auto", "openblas", NULL};
        int count;
        const struct gemm_backend *first = gemm_backend_all(&count);
        for (const char *const *name = o->quick ? quick : all; *name; name++)
            o->backends.v[o->backends.n++] = (int)(gemm_backend_find(*name) - first);
    }
    return 0;
}

// --- the run --------------------------------------------------------------------
struct run {
    const struct options *o;
    FILE *csv, *table;
    int status;
};

// One row: the model at one batch size on backend be, the tape's own loops
// on isa, its memory in mode.
static void measure(struct run *r, const struct gemm_backend *be, enum isa isa,
                    enum memory_mode mode, const struct model *m, int batch, float *want_loss)
{
    struct net n;
    // From the default, so that the tape's GEMM context (its kernels) is
    // the one for isa, as tape_new requires.
    struct tape_config config = tape_config_default();
    config.gemm = &recorder;
    config.memory = mode;
    tape_config_set_isa(&config, isa);
    struct tape *t = tape_new(&config);
    real = be;
    if (!t) {
        fprintf(stderr, "error: no tape for %s on %s with memory %s\n", m->name,
                isa_name(isa), tape_memory_name(mode));
        r->status = 1;
        return;
    }
    if (net_init(&n, m, batch) != 0) {
        fprintf(stderr, "error: out of memory for %s at batch %d\n", m->name, batch);
        r->status = 1;
        tape_free(t);
        return;
    }
    // The first step reserves the tape's memory (and makes its plan); the
    // second records the GEMM calls. The loss must agree with the first
    // backend's (a wrong GEMM shows here).
    struct tensor *loss = step(t, &n);
    if (loss) {
        ncalls = 0;
        recording = 1;
        loss = step(t, &n);
        recording = 0;
    }
    if (!loss) {
        fprintf(stderr, "error: %s, %s, batch %d: %s\n", be->name, m->name, batch, tape_error(t));
        r->status = 1;
    } else if (*want_loss == 0.0f) {
        *want_loss = loss->data[0];
    } else if (fabsf(loss->data[0] - *want_loss) > 1e-4f * fabsf(*want_loss)) {
        fprintf(stderr, "error: %s gives loss %.7g for %s at batch %d, %s gave %.7g\n",
                be->name, loss->data[0], m->name, batch, "the first backend", *want_loss);
        r->status = 1;
        loss = NULL;
    }
    if (loss) {
        int nodes = tape_node_count(t);
        double flops = 0.0;
        for (int i = 0; i < ncalls; i++)
            flops += 2.0 * calls[i].m * calls[i].n * calls[i].k;
        replay_gemms();  // warm-up
        step(t, &n);
        double step_s, gemm_s;
        time_both(t, &n, r->o->reps, &step_s, &gemm_s);
        double overhead = 100.0 * (step_s - gemm_s) / gemm_s;
        size_t live = tape_live_bytes(t), reserved = tape_reserved_bytes(t);
        const char *isa_text = isa_name(isa), *mem = tape_memory_name(mode);
        fprintf(r->table,
                "%-14s %6d %-9s %-7s %-7s %3d %10.3f %10.3f %9.1f%% %8.1f %6d %10zu %10zu\n",
                m->name, batch, be->name, isa_text, mem, r->o->threads, 1e3 * step_s,
                1e3 * gemm_s, overhead, flops / step_s / 1e9, ncalls, live, reserved);
        fflush(r->table);
        if (r->csv) {
            fprintf(r->csv, "%s,%d,%s,%s,%d,%.4f,%.4f,%.2f,%.2f,%d,%d,%s,%zu,%zu\n", m->name,
                    batch, be->name, isa_text, r->o->threads, 1e3 * step_s, 1e3 * gemm_s,
                    overhead, flops / step_s / 1e9, ncalls, nodes, mem, live, reserved);
            fflush(r->csv);
        }
    }
    net_free(&n);
    tape_free(t);
}

int main(int argc, char **argv)
{
    // When gemm() may use Strassen: the rule `make stage-05 strassen` measured.
    gemm_strassen_use_file(env_read().strassen_rule);
    struct options o;
    int p = parse(argc, argv, &o);
    if (p != 0)
        return p == 1 ? 0 : p;
    omp_set_num_threads(o.threads);
    blas_set_threads(o.threads);
    struct run r = {&o, NULL, stdout, 0};
    if (o.csv && strcmp(o.csv, "-") == 0) {
        r.csv = stdout;
        r.table = stderr;
    } else if (o.csv) {
        r.csv = fopen(o.csv, "w");
        if (!r.csv) {
            fprintf(stderr, "error: cannot write %s: %s\n", o.csv, strerror(errno));
            return 1;
        }
    }
    if (r.csv) {
        machine_write(r.csv, "stage-06", o.threads, tape_config_default().isa, &o.env);
        fprintf(r.csv, "model,batch,backend,isa,threads,step_ms,gemm_ms,overhead_pct,gflops,"
                       "gemm_calls,nodes,memory,live_bytes,reserved_bytes\n");
    }
    fprintf(r.table, "%-14s %6s %-9s %-7s %-7s %3s %10s %10s %10s %8s %6s %10s %10s\n", "model",
            "batch", "backend", "isa", "memory", "thr", "step ms", "gemm ms", "overhead",
            "GFLOPS", "gemms", "live", "reserved");
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    enum isa isa = tape_config_default().isa;
    for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++)
        for (int b = 0; b < o.batches.n; b++) {
            float want_loss = 0.0f;
            for (int i = 0; i < o.backends.n; i++)
                for (int k = 0; k < o.memory.n; k++)
                    measure(&r, &all[o.backends.v[i]], isa, (enum memory_mode)o.memory.v[k],
                            &models[mi], o.batches.v[b], &want_loss);
            // Do the vector elementwise loops pay? The front door again, on a
            // tape whose own loops are scalar (unless --isa chose the ISA).
            if (o.isa == ISA_COUNT && isa != ISA_SCALAR)
                for (int k = 0; k < o.memory.n; k++)
                    measure(&r, gemm_backend_find("auto"), ISA_SCALAR,
                            (enum memory_mode)o.memory.v[k], &models[mi], o.batches.v[b],
                            &want_loss);
        }
    if (r.csv && r.csv != stdout)
        fclose(r.csv);
    return r.status;
}
