// `make stage-02 run`: GFLOPS of matmul_tiled against block size at one
// matrix size, to see where a block stops fitting each cache. Two shapes:
// square blocks (mb = nb = kb = s) and wide ones (nb = 256, mb = kb = s).
//   run_sweep [--n 1024] [--reps 3] [--csv FILE]
// The CSV's `#` lines give the cache sizes, so the plot can mark them.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"
#include "mat.h"
#include "tiled.h"
#include "timer.h"

static const int sides[] = {8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
enum { WIDE_NB = 256 };

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [--n N] [--reps R] [--csv FILE]\n"
            "  --n N       matrix size, m = n = k (default 1024)\n"
            "  --reps R    timed repetitions per block size, median reported (default 3)\n"
            "  --csv FILE  also write the results to FILE\n",
            prog);
}

static int fail(const char *prog, const char *what, const char *value)
{
    fprintf(stderr, "error: %s '%s'\n", what, value);
    usage(stderr, prog);
    return 2;
}

// A whole number in [lo, hi], or -1.
static long parse_count(const char *s, long lo, long hi)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    return errno || *end || v < lo || v > hi ? -1 : v;
}

static double median(double *t, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void write_header(FILE *f, int n, struct cpu_caches c)
{
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    fprintf(f, "# stage: stage-02-sweep\n# cpu: %s\n# n: %d\n", cpu_model(), n);
    fprintf(f, "# l1d_bytes: %ld\n# l2_bytes: %ld\n# l3_bytes: %ld\n# caches_assumed: %d\n",
            c.l1d, c.l2, c.l3, c.assumed);
    fprintf(f, "# date: %s\n", date);
    fprintf(f, "shape,tile,mb,nb,kb,working_set_bytes,gflops\n");
}

// Times matmul_tiled with blocks t, prints a row and writes it to csv.
// Returns 0, or 1 when the result is wrong.
static int measure(struct tile_sizes t, const char *shape, int n, int reps, const float *A,
                   const float *B, float *C, FILE *csv)
{
    // The first run is checked, and warms the caches for the timed ones.
    matmul_tiled(t.mb, t.nb, t.kb, n, n, n, A, n, B, n, C, n);
    struct mat_problem prob = mat_product(n, n, n, A, n, B, n);
    struct mat_check check = mat_check_gemm(&prob, C, n, 500);
    if (check.ratio > 1.0) {
        fprintf(stderr, "error: matmul_tiled with %dx%dx%d blocks is wrong: C[%d][%d] = %g, "
                "want %g\n", t.mb, t.nb, t.kb, check.i, check.j, check.got, check.want);
        return 1;
    }
    double times[100];
    for (int r = 0; r < reps; r++) {
        double t0 = timer_now();
        matmul_tiled(t.mb, t.nb, t.kb, n, n, n, A, n, B, n, C, n);
        times[r] = timer_now() - t0;
    }
    double gflops = 2.0 * n * n * (double)n / median(times, reps) / 1e9;
    long bytes = tile_working_set(t);
    char name[48], size[32];
    snprintf(name, sizeof name, "%dx%dx%d", t.mb, t.nb, t.kb);
    if (bytes < 1024 * 1024)
        snprintf(size, sizeof size, "%.1f KiB", bytes / 1024.0);
    else
        snprintf(size, sizeof size, "%.1f MiB", bytes / 1024.0 / 1024.0);
    printf("%-7s %16s %14s %9.2f\n", shape, name, size, gflops);
    fflush(stdout);
    if (csv)
        fprintf(csv, "%s,%d,%d,%d,%d,%ld,%.3f\n", shape, t.mb, t.mb, t.nb, t.kb, bytes, gflops);
    return 0;
}

int main(int argc, char **argv)
{
    const char *prog = argv[0];
    int n = 1024, reps = 3;
    const char *csv_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout, prog);
            return 0;
        }
        int known = strcmp(flag, "--n") == 0 || strcmp(flag, "--reps") == 0 ||
                    strcmp(flag, "--csv") == 0;
        if (!known)
            return fail(prog, "unknown option", flag);
        if (i + 1 >= argc || argv[i + 1][0] == '\0')
            return fail(prog, "this option needs a value:", flag);
        const char *value = argv[++i];
        if (strcmp(flag, "--n") == 0) {
            long v = parse_count(value, 16, 8192);
            if (v < 0)
                return fail(prog, "--n wants a whole number from 16 to 8192, not", value);
            n = (int)v;
        } else if (strcmp(flag, "--reps") == 0) {
            long v = parse_count(value, 1, 100);
            if (v < 0)
                return fail(prog, "--reps wants a whole number from 1 to 100, not", value);
            reps = (int)v;
        } else {
            csv_path = value;
        }
    }

    float *A = mat_alloc(n, n), *B = mat_alloc(n, n), *C = mat_alloc(n, n);
    if (!A || !B || !C) {
        fprintf(stderr, "error: out of memory for three %dx%d matrices\n", n, n);
        return 1;
    }
    mat_fill_random(A, n, n, n, 1);
    mat_fill_random(B, n, n, n, 2);

    FILE *csv = NULL;
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            fprintf(stderr, "error: cannot write %s: %s\n", csv_path, strerror(errno));
            return 1;
        }
    }
    struct cpu_caches caches = cpu_caches();
    if (csv)
        write_header(csv, n, caches);
    printf("tile sweep of matmul_tiled at n = %d on %s\n", n, cpu_model());
    printf("caches%s: L1d %ld KiB, L2 %ld KiB, L3 %ld KiB\n",
           caches.assumed ? " (some assumed)" : "", caches.l1d / 1024, caches.l2 / 1024,
           caches.l3 / 1024);
    printf("%-7s %16s %14s %9s\n", "shape", "block mb×nb×kb", "working set", "GFLOPS");

    int status = 0;
    for (int wide = 0; wide < 2 && status == 0; wide++)
        for (size_t s = 0; s < sizeof sides / sizeof sides[0] && status == 0; s++) {
            int side = sides[s];
            if (side > n)
                break;
            int nb = wide ? (WIDE_NB < n ? WIDE_NB : n) : side;
            struct tile_sizes t = {side, nb, side};
            status = measure(t, wide ? "wide" : "square", n, reps, A, B, C, csv);
        }
    if (csv) {
        fclose(csv);
        if (status == 0)
            printf("results: %s\n", csv_path);
    }
    mat_free(A);
    mat_free(B);
    mat_free(C);
    return status;
}
