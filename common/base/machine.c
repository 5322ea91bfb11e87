// The `#` lines that start every results file: what machine, compiler and
// OpenBLAS the numbers below them were measured with (common/README.md).
#include <errno.h>
#include <string.h>
#include <time.h>

#include "blas.h"
#include "cpu.h"
#include "machine.h"
#include "peak.h"

// The build's optimisation flags, passed in by common/build.mk.
#ifndef MACHINE_CFLAGS
#define MACHINE_CFLAGS "unknown"
#endif

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

// Each ISA's measured peak on `threads` threads, then the widest's again as
// peak.machine.N: what plots and the book hold a GFLOPS figure against.
static void write_peaks(FILE *f, int threads)
{
    for (int isa = 0; isa < ISA_COUNT; isa++)
        if (isa_supported((enum isa)isa))
            fprintf(f, "# peak.%s.%d: %.1f\n", isa_name((enum isa)isa), threads,
                    peak_get((enum isa)isa, threads).gflops);
    fprintf(f, "# peak.machine.%d: %.1f\n", threads, peak_get(isa_best(), threads).gflops);
}

void machine_write(FILE *f, const char *stage, int threads, enum isa isa,
                   const struct environment *env)
{
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const char *coretype = env ? env->openblas_coretype : NULL;
    struct cpu_caches c = cpu_caches();
    fprintf(f, "# stage: %s\n", stage);
    // The machine in one line, the same in every file one machine writes,
    // whatever was measured on it; the lines after it give each part alone.
    fprintf(f, "# machine: %s (%s), %d cores,", cpu_model(), cpu_id(), cpu_count());
    for (int isa = 0, n = 0; isa < ISA_COUNT; isa++)
        if (isa_supported((enum isa)isa))
            fprintf(f, "%s%s", n++ ? "+" : " ", isa_name((enum isa)isa));
    fprintf(f, ", L1d %ld KiB, L2 %ld KiB, L3 %ld KiB\n", c.l1d / 1024, c.l2 / 1024, c.l3 / 1024);
    fprintf(f, "# cpu: %s\n# cpu_id: %s\n# cores: %d\n# isas:", cpu_model(), cpu_id(),
            cpu_count());
    for (int isa = 0, n = 0; isa < ISA_COUNT; isa++)
        if (isa_supported((enum isa)isa))
            fprintf(f, "%s%s", n++ ? "," : " ", isa_name((enum isa)isa));
    // The clock the peak was computed with, so that clock × FMAs per cycle ×
    // lanes × 2 in this header gives the peak it prints.
    fprintf(f, "\n# clock_ghz: %.2f\n", peak_get(isa_best(), 1).clock_ghz);
    // The peaks on every thread count up to the cores, and on `threads` when it
    // asks for more: a file measured on one thread names the machine with the
    // same lines as one measured on all of them.
    for (int t = 1; t <= cpu_count(); t++)
        write_peaks(f, t);
    if (threads > cpu_count())
        write_peaks(f, threads);
    struct peak p = peak_get(isa_best(), 1);
    fprintf(f, "# fma_latency_cycles.%s: %.2f\n# fmas_per_cycle.%s: %.2f\n", isa_name(p.isa),
            p.fma_latency, isa_name(p.isa), p.fmas_per_cycle);
    // The blocking of the packed GEMM follows from these, so a results file
    // says which caches its numbers were measured with.
    fprintf(f, "# l1d_kib: %ld\n# l2_kib: %ld\n# l3_kib: %ld\n", c.l1d / 1024, c.l2 / 1024,
            c.l3 / 1024);
    fprintf(f, "# compiler: %s\n# cflags: %s\n", compiler(), MACHINE_CFLAGS);
    fprintf(f, "# openblas_config: %s\n# openblas_core: %s\n# openblas_coretype: %s\n",
            blas_config(), blas_core(), coretype ? coretype : "unset");
    const char *l2_size = env ? env->openblas_l2_size : NULL;
    // isa: what our kernels ran on, as the caller says (the widest, isa_best,
    // unless --isa forced another).
    fprintf(f, "# openblas_l2_size: %s\n# openblas_isa: %s\n# isa_best: %s\n# isa: %s\n",
            l2_size ? l2_size : "unset", isa_name(blas_isa()), isa_name(isa_best()),
            isa_name(isa));
    // Present only when OpenBLAS is held back: plots and the book repeat it.
    char note[512];
    if (blas_limit_note(stage, env, note, sizeof note))
        fprintf(f, "# openblas_note: %s\n", note);
    // What was measured and in which run: the book holds every file it
    // quotes to one run id, and to the code as it is (tools/check-book.sh).
    const char *commit = env ? env->run_commit : NULL;
    const char *run = env ? env->run_id : NULL;
    fprintf(f, "# commit: %s\n", commit ? commit : "unknown");
    if (run)
        fprintf(f, "# run_id: %s\n", run);
    fprintf(f, "# date: %s\n", date);
}

FILE *results_open(const char *path, const char *stage, int threads, enum isa isa,
                   const struct environment *env, int append, int *fresh)
{
    int started = 0;
    FILE *f = stdout;
    if (strcmp(path, "-") != 0) {
        if (append) {
            FILE *old = fopen(path, "r");
            if (old) {
                started = fgetc(old) != EOF;
                fclose(old);
            }
        }
        f = fopen(path, started ? "a" : "w");
        if (!f) {
            fprintf(stderr, "error: cannot write %s: %s\n", path, strerror(errno));
            return NULL;
        }
    }
    if (!started)
        machine_write(f, stage, threads, isa, env);
    if (fresh)
        *fresh = !started;
    return f;
}

int results_close(FILE *f, const char *path, int status)
{
    if (f == NULL)
        return status;
    int bad = ferror(f);
    bad |= f != stdout ? fclose(f) != 0 : fflush(f) != 0;
    if (bad && status == 0) {
        fprintf(stderr, "error: writing %s failed\n", path);
        return 1;
    }
    return status;
}
