// `make stage-02 run`: GFLOPS of matmul_tiled against block size at one
// matrix size, to see where a block stops fitting each cache. Two shapes:
// square blocks (mb = nb = kb = s) and wide ones (nb = 256, mb = kb = s).
//   run_sweep [--n 1024] [--reps 3] [--csv FILE] (--help: the flags)
// The CSV's `#` lines give the cache sizes, so the plot can mark them.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cpu.h"
#include "env.h"
#include "flags.h"
#include "machine.h"
#include "mat.h"
#include "tiled.h"
#include "timer.h"

static const int sides[] = {8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
enum { WIDE_NB = 256 };

// The machine lines of every results file (their l1d_kib, l2_kib and l3_kib
// are the caches the plot marks), then the sweep's own: the size, and whether
// the cache sizes were assumed because the system did not report them.
static void write_header(FILE *f, int n, struct cpu_caches c, enum isa isa,
                         const struct environment *env)
{
    machine_write(f, "stage-02-sweep", 1, isa, env);
    fprintf(f, "# n: %d\n", n);
    fprintf(f, "# caches_assumed: %d\n", c.assumed);
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
    double gflops = 2.0 * n * n * (double)n / bench_median(times, reps) / 1e9;
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
    const struct environment env = env_read();
    int n = 1024, reps = 3;
    const char *csv_path = NULL;
    enum isa isa = ISA_COUNT;
    struct flags f = {.about = "GFLOPS of matmul_tiled against its block size, square and "
                               "wide blocks, at one matrix size."};
    flags_add(&f, flag_int("--n", "N", &n, 16, 8192, "matrix size, m = n = k"));
    struct flag r = flag_reps(&reps);
    r.hi = 100;
    flags_add(&f, r);
    flags_add(&f, flag_csv(&csv_path));
    flags_add(&f, flag_isa(&isa));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc == 1 ? 0 : rc;

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
        write_header(csv, n, caches, isa != ISA_COUNT ? isa : isa_best(), &env);
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
