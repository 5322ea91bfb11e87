#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "bench.h"
#include "flags.h"
#include "blas.h"
#include "machine.h"
#include "mat.h"
#include "peak.h"
#include "schemas.h"
#include "timer.h"

enum { MAX_REPS = 1000, MAX_DIM = 1000000 };

// A kernel that needs longer than this for its repetitions stops early: the
// median of fewer runs of a slow kernel is still a fair number, and a quick
// benchmark should stay quick.
static const double TIME_BUDGET = 4.0;

// A round whose yardstick ran more than 15 % under the run's best is slow.
// Another process on a two-core machine takes far more than that from
// two-thread code (up to 10x); 15 % leaves room for the few per cent a
// GEMM's time moves between quiet rounds. tools/compare.py holds PyTorch's
// races to the same rule.
const double BENCH_SLOW_ROUND = 0.15;

// The yardstick: one fixed GEMM, OpenBLAS's sgemm at YARD_N cubed on the
// run's threads, the median of YARD_REPS by the wall clock. The peak probe
// would not do: it counts the CPU time its threads were given, so another
// program taking a core leaves it unmoved, and that is what a round must be
// judged by.
enum { YARD_N = 512, YARD_REPS = 9 };

// "256,512" (square, from --sizes) or "128x10x256,..." (M×N×K, from
// --shapes) into o->shapes. Returns 0, or -1 with bad at the item that is
// wrong.
static int parse_dim(const char *s, size_t len, int *out)
{
    char buf[32];
    long v;
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (args_long(buf, 1, MAX_DIM, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_shapes(const char *list, struct bench_options *o, const char **bad)
{
    o->nshapes = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        struct bench_shape s;
        *bad = p;
        if (o->nshapes == BENCH_MAX_SHAPES)
            return -1;
        size_t a = strcspn(p, "x,");
        if (a >= len || parse_dim(p, a, &s.m) != 0)
            return -1;
        size_t b = strcspn(p + a + 1, "x,");
        if (a + 1 + b >= len || parse_dim(p + a + 1, b, &s.n) != 0)
            return -1;
        if (parse_dim(p + a + b + 2, len - a - b - 2, &s.k) != 0)
            return -1;
        o->shapes[o->nshapes++] = s;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

// Three matrices of the largest shape must fit comfortably in memory.
static int too_big(const struct bench_shape *s)
{
    double bytes = 4.0 * ((double)s->m * s->k + (double)s->k * s->n + 2.0 * s->m * s->n);
    return bytes > 8.0 * 1024 * 1024 * 1024;
}

// The names --kernels takes: the stage's kernels, then openblas.
static const char *const *kernel_names(const struct bench_stage *stage)
{
    static const char *names[FLAG_LIST_MAX + 1];
    int n = 0;
    for (int i = 0; i < stage->nkernels && n < FLAG_LIST_MAX - 1; i++)
        names[n++] = stage->kernels[i].name;
    names[n++] = "openblas";
    names[n] = NULL;
    return names;
}

int bench_parse(const struct bench_stage *stage, int argc, char **argv,
                struct bench_options *o)
{
    memset(o, 0, sizeof *o);
    o->env = env_read();
    o->threads = cpu_count();
    o->isa = ISA_COUNT;  // none given
    struct flag_list sizes = {0};
    const char *shapes = NULL;
    struct flags f = {.about = "Checks each kernel against a double-precision reference, then "
                               "times it beside OpenBLAS\nand the machine's peak."};
    char sizes_help[160];
    snprintf(sizes_help, sizeof sizes_help, "square sizes (default %s; %s with --quick)",
             stage->sizes, stage->quick_sizes);
    flags_add(&f, flag_counts("--sizes", "N,N", &sizes, 1, MAX_DIM, sizes_help));
    struct flag fl;
    flags_add(&f,
              flag_text("--shapes", "MxNxK,...", &shapes, "M×N×K shapes instead of square sizes"));
    fl = flag_threads(&o->threads);
    fl.help = "threads for the threaded kernels and OpenBLAS";
    flags_add(&f, fl);
    fl = flag_reps(&o->reps);
    fl.help = "timed repetitions, median kept (default 5; 3 with --quick)";
    fl.hi = MAX_REPS;
    flags_add(&f, fl);
    flags_add(&f, flag_int("--rounds", "N", &o->rounds, 1, BENCH_MAX_ROUNDS,
                           "rounds, each with the yardstick; the median kept, every round "
                           "written (default 1)"));
    flags_add(&f, flag_choices("--kernels", "A,B", &o->kernels, kernel_names(stage), NULL,
                               "only these kernels"));
    fl = flag_isa(&o->isa);
    fl.help = "the instruction set; rows written for another vector ISA are skipped";
    flags_add(&f, fl);
    flags_add(&f, flag_csv(&o->csv));
    flags_add(&f, flag_switch("--append", &o->append,
                              "add rows to the --csv file (no header, no OpenBLAS rows)"));
    flags_add(&f, flag_text("--tag", "TEXT", &o->tag, "append TEXT to each kernel's name"));
    flags_add(&f, flag_switch("--quick", &o->quick, "the quick sizes and 3 repetitions"));
    flags_add(&f, flag_machine(&o->machine));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc;
    if (o->machine) {
        machine_write(stdout, stage->name, o->threads, o->isa != ISA_COUNT ? o->isa : isa_best(),
                      &o->env);
        return 1;
    }
    if (sizes.n && shapes)
        return flags_fail(&f, "give --sizes or --shapes, not both");
    if (o->append && (!o->csv || strcmp(o->csv, "-") == 0))
        return flags_fail(&f, "--append needs --csv FILE");
    if (o->reps == 0)
        o->reps = o->quick ? 3 : 5;
    if (o->rounds == 0)
        o->rounds = 1;
    const char *bad;
    if (shapes) {
        if (parse_shapes(shapes, o, &bad) != 0)
            return flags_fail(&f, "bad shape at '%s': want MxNxK, each from 1 to %d", bad,
                              MAX_DIM);
    } else {
        if (sizes.n == 0)
            sizes.n = args_counts(o->quick ? stage->quick_sizes : stage->sizes, 1, MAX_DIM,
                                  sizes.v, FLAG_LIST_MAX);
        for (int i = 0; i < sizes.n && i < BENCH_MAX_SHAPES; i++)
            o->shapes[o->nshapes++] = (struct bench_shape){sizes.v[i], sizes.v[i], sizes.v[i]};
    }
    for (int i = 0; i < o->nshapes; i++)
        if (too_big(&o->shapes[i]))
            return flags_fail(&f, "a shape needs more than 8 GiB of matrices");
    return 0;
}

double bench_median(double *t, int n)
{
    // Insertion sort: n is a handful of repetitions.
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

int bench_mark_slow(const double *yardstick, int n, double best, int *slow)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        slow[i] = yardstick[i] < (1.0 - BENCH_SLOW_ROUND) * best;
        count += slow[i];
    }
    return count;
}

void bench_write_header(FILE *f, const char *stage, int threads, enum isa isa,
                        const struct environment *env)
{
    machine_write(f, stage, threads, isa, env);
    fprintf(f, "# rounds: with more than one, every round's rows (KERNEL/roundN) before the "
               "result rows, the median of the rounds not marked slow\n"
               "# yardstick: each round's GFLOPS of one fixed GEMM (OpenBLAS sgemm %d cubed, "
               "on the run's threads, the median of %d by the wall clock)\n"
               "# slow: 1 when the round's yardstick ran more than %.0f %% under the run's "
               "best: the round measured again, left out of the medians\n",
            YARD_N, YARD_REPS, 100 * BENCH_SLOW_ROUND);
    fprintf(f, "%s\n", SCHEMA_GEMM);
}

struct bench_threads bench_threads_of(int threads)
{
    struct bench_threads t = {{0}, 0, 0};
    if (threads)
        t.count[t.n++] = threads;
    else {
        t.count[t.n++] = 1;
        t.count[t.n++] = 2;
        if (omp_get_max_threads() > 2)
            t.count[t.n++] = omp_get_max_threads();
    }
    t.top = t.count[t.n - 1];
    return t;
}

// Whether --kernels (none: all) names the stage's kernel i; i = nkernels is
// openblas.
static int selected(const struct bench_options *o, int i)
{
    if (o->kernels.n == 0)
        return 1;
    for (int j = 0; j < o->kernels.n; j++)
        if (o->kernels.v[j] == i)
            return 1;
    return 0;
}

// Under --isa, a row written for another vector ISA is skipped; plain C
// (scalar) rows run on any.
static int isa_selected(const struct bench_options *o, enum isa row)
{
    return o->isa == ISA_COUNT || row == o->isa || row == ISA_SCALAR;
}

struct measurement {
    double seconds;
    double gflops;
};

struct problem {
    struct bench_shape s;
    float *A, *B, *C;
};

static void set_threads(int threads)
{
    omp_set_num_threads(threads);
    blas_set_threads(threads);
}

// The check against gemm()'s elementwise bound, or against the normwise one
// the stage gives for this kernel (bench.h).
static struct mat_check check(const char *name, const struct mat_problem *prob, const float *C,
                              double (*normwise_bound)(const char *kernel, int k, double ab))
{
    double max_a = 0.0, max_b = 0.0, bound = 0.0;
    if (normwise_bound != NULL) {
        for (long i = 0; i < (long)prob->m * prob->k; i++)
            max_a = fmax(max_a, fabs(prob->A[i]));
        for (long i = 0; i < (long)prob->k * prob->n; i++)
            max_b = fmax(max_b, fabs(prob->B[i]));
        bound = normwise_bound(name, prob->k, max_a * max_b);
    }
    return bound > 0.0 ? mat_check_gemm_normwise(prob, C, prob->n, 2000, bound)
                       : mat_check_gemm(prob, C, prob->n, 2000);
}

// listing: measure
// Check, warm up, time. Returns -1 (after saying why) when the kernel is wrong.
static int measure(const char *name, bench_matmul_fn fn, int threads, int reps,
                   struct problem *p, struct measurement *out,
                   double (*normwise_bound)(const char *kernel, int k, double ab))
{
    int m = p->s.m, n = p->s.n, k = p->s.k;
    set_threads(threads);
    // NaN in C catches a kernel that leaves an element unwritten.
    mat_fill(p->C, m, n, n, NAN);
    double t0 = timer_now();
    fn(m, n, k, p->A, k, p->B, n, p->C, n);
    double first = timer_now() - t0;
    struct mat_problem prob = mat_product(m, n, k, p->A, k, p->B, n);
    struct mat_check c = check(name, &prob, p->C, normwise_bound);
    if (c.ratio > 1.0) {
        fprintf(stderr,
                "error: %s gives a wrong result at %dx%dx%d: C[%d][%d] = %g, reference %g "
                "(%.3g times the rounding-error bound)\n",
                name, m, n, k, c.i, c.j, c.got, c.want, c.ratio);
        return -1;
    }
    if (first < 1.0)
        fn(m, n, k, p->A, k, p->B, n, p->C, n);  // warm-up: caches, pages, thread pool
    double times[MAX_REPS], spent = 0.0;
    int done = 0;
    while (done < reps && (done == 0 || spent < TIME_BUDGET)) {
        t0 = timer_now();
        fn(m, n, k, p->A, k, p->B, n, p->C, n);
        times[done] = timer_now() - t0;
        spent += times[done++];
    }
    out->seconds = bench_median(times, done);
    out->gflops = 2.0 * m * n * k / out->seconds / 1e9;
    return 0;
}
// end listing

struct mat_check bench_check_kernel(bench_matmul_fn fn, int m, int n, int k, int pad)
{
    int lda = k + pad, ldb = n + pad, ldc = n + pad;
    float *A = mat_alloc(m, lda), *B = mat_alloc(k, ldb), *C = mat_alloc(m, ldc);
    struct mat_check c = {.ratio = -1.0};
    if (A && B && C) {
        mat_fill_random(A, m, lda, lda, 1);
        mat_fill_random(B, k, ldb, ldb, 2);
        mat_fill(C, m, ldc, ldc, NAN);
        fn(m, n, k, A, lda, B, ldb, C, ldc);
        struct mat_problem p = mat_product(m, n, k, A, lda, B, ldb);
        c = mat_check_gemm(&p, C, ldc, 1L << 20);
    }
    mat_free(A);
    mat_free(B);
    mat_free(C);
    return c;
}

// One row. table: the readable table (NULL: not there). A round's row
// (round > 0) is named KERNEL/roundN and carries its yardstick and slow
// mark; a result row carries them when it is the one round there was
// (yardstick > 0), else leaves them empty.
struct row_mark {
    int round;         // 0: the result row
    double yardstick;  // GFLOPS; 0: none
    int slow;
};

static void print_row(FILE *table, FILE *csv, const char *name, const char *tag, enum isa isa,
                      int threads, const struct bench_shape *s, const struct measurement *r,
                      double blas_gflops, struct row_mark mark)
{
    double peak = peak_get(isa_best(), threads).gflops;
    double pct = peak > 0.0 ? 100.0 * r->gflops / peak : 0.0;
    double ratio = blas_gflops > 0.0 ? r->gflops / blas_gflops : 0.0;
    char full[112], size[48], yard[48] = ",";
    if (mark.round > 0)
        snprintf(full, sizeof full, "%s%s/round%d", name, tag, mark.round);
    else
        snprintf(full, sizeof full, "%s%s", name, tag);
    if (mark.yardstick > 0.0)
        snprintf(yard, sizeof yard, "%.2f,%d", mark.yardstick, mark.slow);
    if (s->m == s->n && s->n == s->k)
        snprintf(size, sizeof size, "%d", s->m);
    else
        snprintf(size, sizeof size, "%dx%dx%d", s->m, s->n, s->k);
    if (table) {
        fprintf(table, "%-22s %-7s %7d %16s %10.4g %9.1f %7.1f%% %7.2fx\n", full, isa_name(isa),
                threads, size, r->seconds, r->gflops, pct, ratio);
        fflush(table);
    }
    if (csv) {
        fprintf(csv, "%s,%s,%d,%d,%d,%d,%.6g,%.2f,%.2f,%.3f,%s\n", full, isa_name(isa), threads,
                s->m, s->n, s->k, r->seconds, r->gflops, pct, ratio, yard);
        fflush(csv);
    }
}

// What a run measures of one shape, beside its matrices.
struct race {
    const struct bench_stage *stage;
    const struct bench_options *o;
    struct problem p;
    int counts[2];   // OpenBLAS's thread counts: one thread, --threads (0: not needed)
    int wanted[FLAG_LIST_MAX];  // the stage's kernels this run times (their indices), n of them
    int n;
    enum isa run_isa;
    const char *tag;
    float *yard[3];  // the yardstick's A, B and C, YARD_N square
};

// One round's numbers: the yardstick, OpenBLAS at each thread count, each
// kernel (in the order of race.wanted).
struct round {
    double yardstick;
    int slow;
    struct measurement blas[2];
    struct measurement kern[FLAG_LIST_MAX];
};

static double yardstick(struct race *rc)
{
    int n = YARD_N;
    double t[YARD_REPS];
    set_threads(rc->o->threads);
    blas_sgemm(n, n, n, rc->yard[0], n, rc->yard[1], n, rc->yard[2], n);  // warm-up
    for (int i = 0; i < YARD_REPS; i++) {
        double t0 = timer_now();
        blas_sgemm(n, n, n, rc->yard[0], n, rc->yard[1], n, rc->yard[2], n);
        t[i] = timer_now() - t0;
    }
    return 2.0 * n * n * n / bench_median(t, YARD_REPS) / 1e9;
}

// OpenBLAS's threads spin for a while after a call before they sleep (2^28
// cycles by default, under 0.1 s). With no core to spare, they would take
// one from the next thing timed: wait until they are asleep.
static void let_blas_sleep(int threads)
{
    if (threads > 1)
        nanosleep(&(struct timespec){0, 200000000}, NULL);
}

// One round: the yardstick, then OpenBLAS at each thread count our kernels
// use (so every row can be given as a ratio to it), then each kernel.
// Returns -1 when a kernel gives a wrong result.
static int run_round(struct race *rc, struct round *r)
{
    const struct bench_options *o = rc->o;
    r->yardstick = yardstick(rc);
    let_blas_sleep(o->threads);
    for (int c = 0; c < 2; c++) {
        if (rc->counts[c] == 0)
            continue;
        if (measure("openblas", blas_sgemm, rc->counts[c], o->reps, &rc->p, &r->blas[c], NULL))
            return -1;
    }
    let_blas_sleep(rc->counts[1]);
    for (int i = 0; i < rc->n; i++) {
        const struct bench_kernel *kern = &rc->stage->kernels[rc->wanted[i]];
        int threads = kern->threaded && o->threads > 1 ? o->threads : 1;
        char full[96];
        snprintf(full, sizeof full, "%s%s", kern->name, rc->tag);
        // Each row runs on its own ISA: every kernel family follows.
        isa_force(kern->isa);
        int wrong = measure(full, kern->fn, threads, o->reps, &rc->p, &r->kern[i],
                            rc->stage->normwise_bound) != 0;
        isa_force(rc->run_isa);
        if (wrong)
            return -1;
    }
    return 0;
}

// The median time over the rounds not marked slow: of OpenBLAS at thread
// count c (kernel < 0), else of that kernel; its GFLOPS from that time.
static struct measurement median_kept(const struct round *r, int n, int kernel, int c,
                                      const struct bench_shape *s)
{
    double t[2 * BENCH_MAX_ROUNDS];
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (!r[i].slow)
            t[kept++] = kernel < 0 ? r[i].blas[c].seconds : r[i].kern[kernel].seconds;
    struct measurement m = {bench_median(t, kept), 0.0};
    m.gflops = 2.0 * s->m * s->n * s->k / m.seconds / 1e9;
    return m;
}

// Runs the rounds of one shape, re-runs those whose yardstick ran slow (at
// most o->rounds times), and writes the rows: every round's when there was
// more than one, then the medians of the rounds kept. *best is the fastest
// yardstick of the run so far.
static int race_shape(struct race *rc, double *best, FILE *table, FILE *csv, int with_blas_rows)
{
    const struct bench_options *o = rc->o;
    struct round r[2 * BENCH_MAX_ROUNDS];
    int n = 0, reruns = 0;
    double yard[2 * BENCH_MAX_ROUNDS];
    int slow[2 * BENCH_MAX_ROUNDS];
    for (; n < o->rounds; n++) {
        if (run_round(rc, &r[n]))
            return 1;
        yard[n] = r[n].yardstick;
        *best = fmax(*best, yard[n]);
    }
    // Measure again until o->rounds rounds ran at speed, or o->rounds more ran.
    while (n - bench_mark_slow(yard, n, *best, slow) < o->rounds && reruns < o->rounds) {
        for (int i = 0; i < n; i++)
            if (slow[i] && !r[i].slow) {
                r[i].slow = 1;
                fprintf(stderr, "note: %dx%dx%d, round %d ran slow (yardstick %.1f GFLOPS, the "
                        "run's best %.1f): one round more\n", rc->p.s.m, rc->p.s.n, rc->p.s.k,
                        i + 1, yard[i], *best);
            }
        if (run_round(rc, &r[n]))
            return 1;
        yard[n] = r[n].yardstick;
        *best = fmax(*best, yard[n]);
        n++;
        reruns++;
    }
    int left = bench_mark_slow(yard, n, *best, slow);
    for (int i = 0; i < n; i++)
        r[i].slow = slow[i];
    if (left == n) {  // the best yardstick came from an earlier shape: keep the fastest round
        int f = 0;
        for (int i = 1; i < n; i++)
            if (yard[i] > yard[f])
                f = i;
        r[f].slow = 0;
        left--;
    }
    if (left > 0)
        fprintf(stderr, "note: %dx%dx%d, %d of %d round(s) ran slow: marked slow in the CSV, "
                "left out of the medians%s\n", rc->p.s.m, rc->p.s.n, rc->p.s.k, left, n,
                n - left < o->rounds ? "; fewer rounds than asked for ran at speed" : "");

    const struct bench_shape *s = &rc->p.s;
    int each = n > 1;
    for (int i = 0; i < n && each; i++) {
        struct row_mark mark = {i + 1, r[i].yardstick, r[i].slow};
        for (int c = 0; c < 2 && with_blas_rows; c++)
            if (rc->counts[c])
                print_row(NULL, csv, "openblas", "", blas_isa(), rc->counts[c], s, &r[i].blas[c],
                          r[i].blas[c].gflops, mark);
        for (int k = 0; k < rc->n; k++) {
            const struct bench_kernel *kern = &rc->stage->kernels[rc->wanted[k]];
            int threaded = kern->threaded && o->threads > 1;
            print_row(NULL, csv, kern->name, rc->tag, kern->isa, threaded ? o->threads : 1, s,
                      &r[i].kern[k], r[i].blas[threaded].gflops, mark);
        }
    }
    struct row_mark result = {0, each ? 0.0 : r[0].yardstick, 0};
    struct measurement blas[2] = {{0, 0}, {0, 0}};
    for (int c = 0; c < 2; c++)
        if (rc->counts[c]) {
            blas[c] = median_kept(r, n, -1, c, s);
            if (with_blas_rows)
                print_row(table, csv, "openblas", "", blas_isa(), rc->counts[c], s, &blas[c],
                          blas[c].gflops, result);
        }
    for (int k = 0; k < rc->n; k++) {
        const struct bench_kernel *kern = &rc->stage->kernels[rc->wanted[k]];
        int threaded = kern->threaded && o->threads > 1;
        struct measurement m = median_kept(r, n, k, 0, s);
        print_row(table, csv, kern->name, rc->tag, kern->isa, threaded ? o->threads : 1, s, &m,
                  blas[threaded].gflops, result);
    }
    return 0;
}

int bench_run(const struct bench_stage *stage, const struct bench_options *o)
{
    FILE *table = stdout, *csv = NULL;
    if (o->csv && strcmp(o->csv, "-") == 0) {
        csv = stdout;
        table = stderr;
    } else if (o->csv) {
        csv = fopen(o->csv, o->append ? "a" : "w");
        if (!csv) {
            fprintf(stderr, "error: cannot write %s: %s\n", o->csv, strerror(errno));
            return 1;
        }
    }
    struct race rc = {.stage = stage, .o = o, .tag = o->tag ? o->tag : ""};
    int any_single = 0, any_threaded = 0;
    for (int i = 0; i < stage->nkernels; i++) {
        const struct bench_kernel *kern = &stage->kernels[i];
        if (!selected(o, i) || !isa_selected(o, kern->isa))
            continue;
        if (!isa_supported(kern->isa)) {
            fprintf(stderr, "note: skipping %s: this CPU cannot run %s code\n", kern->name,
                    isa_name(kern->isa));
            continue;
        }
        if (rc.n == (int)(sizeof rc.wanted / sizeof rc.wanted[0])) {
            fprintf(stderr, "error: more than %d kernels in one run\n", rc.n);
            return 1;
        }
        rc.wanted[rc.n++] = i;
        if (kern->threaded && o->threads > 1)
            any_threaded = 1;
        else
            any_single = 1;
    }
    rc.counts[0] = any_single || !any_threaded ? 1 : 0;
    rc.counts[1] = any_threaded ? o->threads : 0;
    // The ISA the program's rows run on between those of their own: --isa's,
    // else the widest.
    rc.run_isa = o->isa != ISA_COUNT ? o->isa : isa_best();
    if (csv && !o->append)
        bench_write_header(csv, stage->name, o->threads, rc.run_isa, &o->env);
    fprintf(table, "%s on %s (%d cores, peak %.1f GFLOPS on 1 thread, %s; OpenBLAS core %s, %s)\n",
            stage->name, cpu_model(), cpu_count(), peak_get(isa_best(), 1).gflops,
            isa_name(isa_best()), blas_core(), isa_name(blas_isa()));
    // A comparison with OpenBLAS held to a lesser path says so, before the
    // numbers and again after them.
    char note[512];
    int held = blas_limit_note(stage->name, &o->env, note, sizeof note);
    if (held)
        fprintf(table, "note: %s\n", note);
    if (o->rounds > 1)
        fprintf(table, "the median of %d rounds; every round is in the CSV\n", o->rounds);
    fprintf(table, "%-22s %-7s %7s %16s %10s %9s %8s %8s\n", "kernel", "isa", "threads", "size",
            "seconds", "GFLOPS", "%peak", "vs BLAS");

    int status = 0;
    int with_blas_rows = !o->append && selected(o, stage->nkernels);
    for (int i = 0; i < 3; i++) {
        rc.yard[i] = mat_alloc(YARD_N, YARD_N);
        if (rc.yard[i])
            mat_fill_random(rc.yard[i], YARD_N, YARD_N, YARD_N, 3 + i);
    }
    if (!rc.yard[0] || !rc.yard[1] || !rc.yard[2]) {
        fprintf(stderr, "error: out of memory for the yardstick\n");
        status = 1;
    }
    double best = 0.0;
    for (int si = 0; si < o->nshapes && status == 0; si++) {
        struct problem *p = &rc.p;
        *p = (struct problem){o->shapes[si], NULL, NULL, NULL};
        int m = p->s.m, n = p->s.n, k = p->s.k;
        p->A = mat_alloc(m, k);
        p->B = mat_alloc(k, n);
        p->C = mat_alloc(m, n);
        if (!p->A || !p->B || !p->C) {
            fprintf(stderr, "error: out of memory for %dx%dx%d\n", m, n, k);
            status = 1;
        } else {
            mat_fill_random(p->A, m, k, k, 1);
            mat_fill_random(p->B, k, n, n, 2);
            status = race_shape(&rc, &best, table, csv, with_blas_rows);
        }
        mat_free(p->A);
        mat_free(p->B);
        mat_free(p->C);
    }
    for (int i = 0; i < 3; i++)
        mat_free(rc.yard[i]);
    if (held)
        fprintf(table, "note: %s\n", note);
    if (csv && csv != stdout)
        fclose(csv);
    return status;
}

int bench_main(const struct bench_stage *stage, int argc, char **argv)
{
    struct bench_options o;
    int rc = bench_parse(stage, argc, argv, &o);
    if (rc == 1)
        return 0;  // --help
    if (rc != 0)
        return rc;
    return bench_run(stage, &o);
}
