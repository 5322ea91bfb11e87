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
#include "blas.h"
#include "mat.h"
#include "peak.h"
#include "timer.h"

#ifndef BENCH_CFLAGS
#define BENCH_CFLAGS "unknown"
#endif

enum { MAX_THREADS = 256, MAX_REPS = 1000, MAX_DIM = 1000000 };

// A kernel that needs longer than this for its repetitions stops early: the
// median of fewer runs of a slow kernel is still a fair number, and a quick
// benchmark should stay quick.
static const double TIME_BUDGET = 4.0;

static void usage(FILE *f, const struct bench_stage *stage, const char *prog)
{
    fprintf(f,
            "usage: %s [options]\n"
            "  --sizes 256,512,1024     square sizes (default %s)\n"
            "  --shapes 128x10x256,...  M×N×K shapes instead of square sizes\n"
            "  --threads N              threads for threaded kernels and OpenBLAS (default: %d)\n"
            "  --reps R                 timed repetitions, median reported (default 5)\n"
            "  --kernels a,b            run only these kernels\n"
            "  --isa NAME               only kernels of scalar|avx2|avx512|neon\n"
            "  --csv FILE               write the CSV to FILE ('-' for stdout)\n"
            "  --append                 add rows to an existing CSV (no header)\n"
            "  --tag TEXT               append TEXT to each kernel's name\n"
            "  --quick                  small sizes and 3 repetitions (%s)\n"
            "kernels:",
            prog, stage->sizes, cpu_count(), stage->quick_sizes);
    for (int i = 0; i < stage->nkernels; i++)
        fprintf(f, " %s", stage->kernels[i].name);
    fprintf(f, " openblas\n");
}

// A whole positive decimal number in [1, max], or -1.
static long parse_count(const char *s, long max)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 1 || v > max)
        return -1;
    return v;
}

static int parse_dim(const char *s, size_t len, int *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    long v = parse_count(buf, MAX_DIM);
    if (v < 0)
        return -1;
    *out = (int)v;
    return 0;
}

// "256,512" (square) or "128x10x256,..." (M×N×K) into o->shapes.
static int parse_shapes(const char *list, int square, struct bench_options *o,
                        const char **bad)
{
    o->nshapes = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        struct bench_shape s;
        *bad = p;
        if (o->nshapes == BENCH_MAX_SHAPES)
            return -1;
        if (square) {
            if (parse_dim(p, len, &s.m) != 0)
                return -1;
            s.n = s.k = s.m;
        } else {
            size_t a = strcspn(p, "x,");
            if (a >= len || parse_dim(p, a, &s.m) != 0)
                return -1;
            size_t b = strcspn(p + a + 1, "x,");
            if (a + 1 + b >= len || parse_dim(p + a + 1, b, &s.n) != 0)
                return -1;
            if (parse_dim(p + a + b + 2, len - a - b - 2, &s.k) != 0)
                return -1;
        }
        o->shapes[o->nshapes++] = s;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

static int known_kernel(const struct bench_stage *stage, const char *name, size_t len)
{
    if (len == 8 && strncmp(name, "openblas", 8) == 0)
        return 1;
    for (int i = 0; i < stage->nkernels; i++)
        if (strlen(stage->kernels[i].name) == len &&
            strncmp(stage->kernels[i].name, name, len) == 0)
            return 1;
    return 0;
}

static int fail(const struct bench_stage *stage, const char *prog, const char *fmt,
                const char *what)
{
    fprintf(stderr, "error: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n");
    usage(stderr, stage, prog);
    return 2;
}

// Three matrices of the largest shape must fit comfortably in memory.
static int too_big(const struct bench_shape *s)
{
    double bytes = 4.0 * ((double)s->m * s->k + (double)s->k * s->n + 2.0 * s->m * s->n);
    return bytes > 8.0 * 1024 * 1024 * 1024;
}

int bench_parse(const struct bench_stage *stage, int argc, char **argv,
                struct bench_options *o)
{
    const char *prog = argc > 0 ? argv[0] : "bench";
    memset(o, 0, sizeof *o);
    o->threads = cpu_count();
    o->reps = 5;
    const char *sizes = NULL, *shapes = NULL;
    int reps_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        int takes_value = strcmp(flag, "--sizes") == 0 || strcmp(flag, "--shapes") == 0 ||
                          strcmp(flag, "--threads") == 0 || strcmp(flag, "--reps") == 0 ||
                          strcmp(flag, "--kernels") == 0 || strcmp(flag, "--isa") == 0 ||
                          strcmp(flag, "--csv") == 0 || strcmp(flag, "--tag") == 0;
        const char *value = NULL;
        if (takes_value) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return fail(stage, prog, "%s needs a value", flag);
            value = argv[++i];
        }
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout, stage, prog);
            return 1;
        } else if (strcmp(flag, "--sizes") == 0) {
            sizes = value;
        } else if (strcmp(flag, "--shapes") == 0) {
            shapes = value;
        } else if (strcmp(flag, "--threads") == 0) {
            long t = parse_count(value, MAX_THREADS);
            if (t < 0)
                return fail(stage, prog, "--threads wants a whole number from 1 to 256, not '%s'",
                            value);
            o->threads = (int)t;
        } else if (strcmp(flag, "--reps") == 0) {
            long r = parse_count(value, MAX_REPS);
            if (r < 0)
                return fail(stage, prog, "--reps wants a whole number from 1 to 1000, not '%s'",
                            value);
            o->reps = (int)r;
            reps_given = 1;
        } else if (strcmp(flag, "--kernels") == 0) {
            for (const char *p = value;;) {
                size_t len = strcspn(p, ",");
                if (!known_kernel(stage, p, len))
                    return fail(stage, prog, "unknown kernel in '%s'", value);
                if (p[len] == '\0')
                    break;
                p += len + 1;
            }
            o->kernels = value;
        } else if (strcmp(flag, "--isa") == 0) {
            if (isa_parse(value, &o->isa) != 0)
                return fail(stage, prog, "--isa wants scalar, avx2, avx512 or neon, not '%s'",
                            value);
            if (!isa_supported(o->isa)) {
                fprintf(stderr, "error: this CPU (%s) cannot run %s code\n", cpu_model(),
                        value);
                return 2;
            }
            o->force_isa = 1;
        } else if (strcmp(flag, "--csv") == 0) {
            o->csv = value;
        } else if (strcmp(flag, "--tag") == 0) {
            o->tag = value;
        } else if (strcmp(flag, "--quick") == 0) {
            o->quick = 1;
        } else if (strcmp(flag, "--append") == 0) {
            o->append = 1;
        } else {
            return fail(stage, prog, "unknown option '%s'", flag);
        }
    }
    if (sizes && shapes)
        return fail(stage, prog, "%s", "give --sizes or --shapes, not both");
    if (o->append && (!o->csv || strcmp(o->csv, "-") == 0))
        return fail(stage, prog, "%s", "--append needs --csv FILE");
    if (o->quick && !reps_given)
        o->reps = 3;
    const char *list = shapes ? shapes : sizes ? sizes : o->quick ? stage->quick_sizes
                                                                 : stage->sizes;
    const char *bad;
    if (parse_shapes(list, shapes == NULL, o, &bad) != 0)
        return fail(stage, prog,
                    shapes ? "bad shape at '%s': want MxNxK, each from 1 to 1000000"
                           : "bad size at '%s': want whole numbers from 1 to 1000000",
                    bad);
    for (int i = 0; i < o->nshapes; i++)
        if (too_big(&o->shapes[i]))
            return fail(stage, prog, "%s", "a shape needs more than 8 GiB of matrices");
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

static const char *compiler(void)
{
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown compiler";
#endif
}

void bench_write_machine(FILE *f, const char *stage, int threads)
{
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    // The clock the peak was computed with, so that clock × FMAs per cycle ×
    // lanes × 2 in this header gives the peak it prints.
    fprintf(f, "# stage: %s\n# cpu: %s\n# cores: %d\n# clock_ghz: %.2f\n", stage, cpu_model(),
            cpu_count(), peak_get(isa_best(), 1).clock_ghz);
    int counts[2] = {1, threads};
    for (int c = 0; c < (threads > 1 ? 2 : 1); c++) {
        for (int isa = 0; isa < ISA_COUNT; isa++)
            if (isa_supported((enum isa)isa))
                fprintf(f, "# peak.%s.%d: %.1f\n", isa_name((enum isa)isa), counts[c],
                        peak_get((enum isa)isa, counts[c]).gflops);
        fprintf(f, "# peak.machine.%d: %.1f\n", counts[c], peak_get(isa_best(), counts[c]).gflops);
    }
    struct peak p = peak_get(isa_best(), 1);
    fprintf(f, "# fma_latency_cycles.%s: %.2f\n# fmas_per_cycle.%s: %.2f\n", isa_name(p.isa),
            p.fma_latency, isa_name(p.isa), p.fmas_per_cycle);
    // The blocking of the packed GEMM follows from these, so a results file
    // says which caches its numbers were measured with.
    struct cpu_caches c = cpu_caches();
    fprintf(f, "# l1d_kib: %ld\n# l2_kib: %ld\n# l3_kib: %ld\n", c.l1d / 1024, c.l2 / 1024,
            c.l3 / 1024);
    fprintf(f, "# compiler: %s\n# cflags: %s\n", compiler(), BENCH_CFLAGS);
    fprintf(f, "# openblas_config: %s\n# openblas_core: %s\n# openblas_coretype: %s\n",
            blas_config(), blas_core(), coretype ? coretype : "unset");
    const char *l2_size = getenv("OPENBLAS_L2_SIZE");
    fprintf(f, "# openblas_l2_size: %s\n# openblas_isa: %s\n# isa_best: %s\n",
            l2_size ? l2_size : "unset", isa_name(blas_isa()), isa_name(isa_best()));
    // Present only when OpenBLAS is held back: plots and the book repeat it.
    char note[512];
    if (blas_limit_note(stage, note, sizeof note))
        fprintf(f, "# openblas_note: %s\n", note);
    fprintf(f, "# date: %s\n", date);
}

void bench_write_header(FILE *f, const char *stage, int threads)
{
    bench_write_machine(f, stage, threads);
    fprintf(f, "kernel,isa,threads,m,n,k,seconds,gflops,pct_peak,vs_openblas\n");
}

static int selected(const struct bench_options *o, const char *name)
{
    return !o->kernels || args_in_list(o->kernels, name);
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

static void print_row(FILE *table, FILE *csv, const char *name, const char *tag, enum isa isa,
                      int threads, const struct bench_shape *s, const struct measurement *r,
                      double blas_gflops)
{
    double peak = peak_get(isa_best(), threads).gflops;
    double pct = peak > 0.0 ? 100.0 * r->gflops / peak : 0.0;
    double ratio = blas_gflops > 0.0 ? r->gflops / blas_gflops : 0.0;
    char full[96], size[48];
    snprintf(full, sizeof full, "%s%s", name, tag);
    if (s->m == s->n && s->n == s->k)
        snprintf(size, sizeof size, "%d", s->m);
    else
        snprintf(size, sizeof size, "%dx%dx%d", s->m, s->n, s->k);
    fprintf(table, "%-22s %-7s %7d %16s %10.4g %9.1f %7.1f%% %7.2fx\n", full, isa_name(isa),
            threads, size, r->seconds, r->gflops, pct, ratio);
    fflush(table);
    if (csv) {
        fprintf(csv, "%s,%s,%d,%d,%d,%d,%.6g,%.2f,%.2f,%.3f\n", full, isa_name(isa), threads,
                s->m, s->n, s->k, r->seconds, r->gflops, pct, ratio);
        fflush(csv);
    }
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
    const char *tag = o->tag ? o->tag : "";
    int any_single = 0, any_threaded = 0;
    for (int i = 0; i < stage->nkernels; i++) {
        const struct bench_kernel *kern = &stage->kernels[i];
        if (!selected(o, kern->name) || (o->force_isa && kern->isa != o->isa))
            continue;
        if (!isa_supported(kern->isa)) {
            fprintf(stderr, "note: skipping %s: this CPU cannot run %s code\n", kern->name,
                    isa_name(kern->isa));
            continue;
        }
        if (kern->threaded && o->threads > 1)
            any_threaded = 1;
        else
            any_single = 1;
    }
    if (csv && !o->append)
        bench_write_header(csv, stage->name, o->threads);
    fprintf(table, "%s on %s (%d cores, peak %.1f GFLOPS on 1 thread, %s; OpenBLAS core %s, %s)\n",
            stage->name, cpu_model(), cpu_count(), peak_get(isa_best(), 1).gflops,
            isa_name(isa_best()), blas_core(), isa_name(blas_isa()));
    // A comparison with OpenBLAS held to a lesser path says so, before the
    // numbers and again after them.
    char note[512];
    int held = blas_limit_note(stage->name, note, sizeof note);
    if (held)
        fprintf(table, "note: %s\n", note);
    fprintf(table, "%-22s %-7s %7s %16s %10s %9s %8s %8s\n", "kernel", "isa", "threads", "size",
            "seconds", "GFLOPS", "%peak", "vs BLAS");

    int status = 0;
    int with_blas_rows = !o->append && selected(o, "openblas");
    for (int si = 0; si < o->nshapes && status == 0; si++) {
        struct problem p = {o->shapes[si], NULL, NULL, NULL};
        int m = p.s.m, n = p.s.n, k = p.s.k;
        p.A = mat_alloc(m, k);
        p.B = mat_alloc(k, n);
        p.C = mat_alloc(m, n);
        if (!p.A || !p.B || !p.C) {
            fprintf(stderr, "error: out of memory for %dx%dx%d\n", m, n, k);
            status = 1;
        } else {
            mat_fill_random(p.A, m, k, k, 1);
            mat_fill_random(p.B, k, n, n, 2);
            // OpenBLAS first, at each thread count our kernels will use, so
            // every row can be given as a ratio to it.
            struct measurement blas[2] = {{0, 0}, {0, 0}};
            int counts[2] = {any_single ? 1 : 0, any_threaded ? o->threads : 0};
            if (!any_single && !any_threaded)
                counts[0] = 1;
            for (int c = 0; c < 2 && status == 0; c++) {
                if (counts[c] == 0)
                    continue;
                if (measure("openblas", blas_sgemm, counts[c], o->reps, &p, &blas[c], NULL))
                    status = 1;
                else if (with_blas_rows)
                    print_row(table, csv, "openblas", "", blas_isa(), counts[c], &p.s, &blas[c],
                              blas[c].gflops);
            }
            for (int i = 0; i < stage->nkernels && status == 0; i++) {
                const struct bench_kernel *kern = &stage->kernels[i];
                if (!selected(o, kern->name) || (o->force_isa && kern->isa != o->isa) ||
                    !isa_supported(kern->isa))
                    continue;
                int threaded = kern->threaded && o->threads > 1;
                int threads = threaded ? o->threads : 1;
                struct measurement r;
                char full[96];
                snprintf(full, sizeof full, "%s%s", kern->name, tag);
                if (measure(full, kern->fn, threads, o->reps, &p, &r, stage->normwise_bound) != 0)
                    status = 1;
                else
                    print_row(table, csv, kern->name, tag, kern->isa, threads, &p.s, &r,
                              blas[threaded].gflops);
            }
        }
        mat_free(p.A);
        mat_free(p.B);
        mat_free(p.C);
    }
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
