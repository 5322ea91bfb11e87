#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peak.h"

// listing: clock
// A chain of dependent integer adds runs at exactly one add per cycle on
// every core we know, which makes it a clock we can read from user space.
static double add_chain_cycles(long iters)
{
#if defined(__x86_64__) || defined(__aarch64__)
    long x = 0;
    for (long i = 0; i < iters; i++) {
#if defined(__x86_64__)
        __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                         "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                         : "+r"(x));
#else
        __asm__ volatile("add %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\t"
                         "add %0, %0, #1\n\tadd %0, %0, #1\n\tadd %0, %0, #1\n\t"
                         "add %0, %0, #1\n\tadd %0, %0, #1"
                         : "+r"(x));
#endif
    }
    return 8.0 * (double)iters;
#else
    (void)iters;
    return 0.0;
#endif
}
// end listing

typedef double (*loop_fn)(long iters);

// Seconds of CPU time the calling thread has had: it stops while the thread
// waits for a core, which the wall clock (timer_now) does not.
static double thread_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// listing: best_rate
// Runs fn with enough iterations to take about 20 ms, several times, and
// returns the best rate in units per second: the peak is the fastest we saw,
// since nothing can make the loop faster than the hardware allows.
// Each thread divides its work by the CPU time it was given, not by the wall
// clock: another program sharing our core, or two of our threads put on one
// core, takes time from the loop but does not make it slower per cycle.
static double best_rate(loop_fn fn, int threads)
{
    long iters = 1 << 12;
    for (;;) {
        double t0 = thread_seconds();
        fn(iters);
        if (thread_seconds() - t0 > 0.02 || iters > (1L << 40))
            break;
        iters *= 2;
    }
    double best = 0.0;
    for (int trial = 0; trial < 5; trial++) {
        double rate = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : rate)
        {
            double t0 = thread_seconds();
            double units = fn(iters);
            double seconds = thread_seconds() - t0;
            if (seconds > 0.0)
                rate += units / seconds;
        }
        if (rate > best)
            best = rate;
    }
    return best;
}
// end listing

// CPU time leaves out the time other programs take, but not the time a
// virtual machine's host takes from the whole virtual core, nor a clock that
// changes from moment to moment. Those can only make the add chain look
// slower, never faster, so the clock is the fastest reading so far, and
// each peak is computed with the reading taken right after its own loops.
static double clock_best_ghz = -1.0;

static double measure_clock_ghz(void)
{
    double ghz = best_rate(add_chain_cycles, 1) / 1e9;
    if (ghz > clock_best_ghz)
        clock_best_ghz = ghz;
    return clock_best_ghz;
}

double peak_clock_ghz(void)
{
    if (clock_best_ghz < 0.0)
        measure_clock_ghz();
    return clock_best_ghz;
}

// The probe's two loops per ISA. Only the loops this architecture can hold
// are compiled in; peak_measure() asks only for an ISA the CPU supports.
static const struct {
    loop_fn throughput, chain;
} loops[ISA_COUNT] = {
    [ISA_SCALAR] = {peak_throughput_scalar, peak_chain_scalar},
#if defined(__x86_64__)
    [ISA_AVX2] = {peak_throughput_avx2, peak_chain_avx2},
    [ISA_AVX512] = {peak_throughput_avx512, peak_chain_avx512},
#endif
#if defined(__aarch64__)
    [ISA_NEON] = {peak_throughput_neon, peak_chain_neon},
#endif
};

// listing: peak
struct peak peak_measure(enum isa isa, int threads)
{
    struct peak p = {isa, threads, 0.0, peak_clock_ghz(), 0.0, 0.0};
    if (!isa_supported(isa))
        return p;
    p.gflops = best_rate(loops[isa].throughput, threads) / 1e9;
    // Read the clock again after the FMA loops, so that a disturbed first
    // reading cannot make the FMA unit look faster than it is.
    p.clock_ghz = measure_clock_ghz();
    if (p.clock_ghz > 0.0) {
        double fmas_per_second = best_rate(loops[isa].chain, 1);
        p.fma_latency = p.clock_ghz * 1e9 / fmas_per_second;
        // Each vector FMA does 2 flops in each lane.
        p.fmas_per_cycle = p.gflops / threads / p.clock_ghz / (2.0 * isa_lanes(isa));
    }
    return p;
}
// end listing

// The cache: one line per measurement, after a line naming the machine, so a
// cache copied to another machine is ignored rather than believed.
static void cache_key(char *key, size_t size)
{
    snprintf(key, size, "# machine: %s, %d cores", cpu_model(), cpu_count());
}

static int cache_read(const char *path, enum isa isa, int threads, struct peak *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256], key[256];
    cache_key(key, sizeof key);
    int found = -1;
    if (fgets(line, sizeof line, f) && strncmp(line, key, strlen(key)) == 0) {
        while (fgets(line, sizeof line, f)) {
            char name[16];
            struct peak p;
            if (sscanf(line, "%15[^,],%d,%lf,%lf,%lf,%lf", name, &p.threads, &p.gflops,
                       &p.clock_ghz, &p.fma_latency, &p.fmas_per_cycle) == 6 &&
                isa_parse(name, &p.isa) == 0 && p.isa == isa && p.threads == threads) {
                *out = p;
                found = 0;
            }
        }
    }
    fclose(f);
    return found;
}

static void cache_append(const char *path, const struct peak *p)
{
    char key[256], line[256];
    cache_key(key, sizeof key);
    FILE *f = fopen(path, "r");
    int fresh = 1;
    if (f) {
        fresh = !(fgets(line, sizeof line, f) && strncmp(line, key, strlen(key)) == 0);
        fclose(f);
    }
    f = fopen(path, fresh ? "w" : "a");
    if (!f)
        return;  // a cache we cannot write only costs time
    if (fresh)
        fprintf(f, "%s\n", key);
    fprintf(f, "%s,%d,%.2f,%.3f,%.2f,%.2f\n", isa_name(p->isa), p->threads, p->gflops,
            p->clock_ghz, p->fma_latency, p->fmas_per_cycle);
    fclose(f);
}

// Within one process each peak is measured once: a table must not change
// its yardstick from one row to the next.
enum { REMEMBERED_THREADS = 64 };
static struct peak remembered[ISA_COUNT][REMEMBERED_THREADS + 1];
// The file measurements are kept in across processes ($PEAK_CACHE, which
// the program's main hands over); "" for none.
static char cache_path[4096];

void peak_cache_use(const char *path)
{
    snprintf(cache_path, sizeof cache_path, "%s", path ? path : "");
}

// A cached peak is believed by every later program of the build, so one
// disturbed moment (the host taking the core's sibling for a tenth of a
// second) would put every "% of peak" of a whole run wrong. It is measured
// CACHE_TRIES times, a pause apart, and the fastest kept: nothing makes the
// loops faster than the hardware allows.
enum { CACHE_TRIES = 5 };

static struct peak peak_measure_for_cache(enum isa isa, int threads)
{
    struct peak best = peak_measure(isa, threads);
    for (int i = 1; i < CACHE_TRIES; i++) {
        nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
        struct peak p = peak_measure(isa, threads);
        if (p.gflops > best.gflops)
            best = p;
    }
    return best;
}

struct peak peak_get(enum isa isa, int threads)
{
    int slot = threads <= REMEMBERED_THREADS ? threads : 0;
    if (slot && remembered[isa][slot].threads == threads)
        return remembered[isa][slot];
    const char *path = cache_path;
    struct peak p;
    if (path && *path) {
        if (cache_read(path, isa, threads, &p) != 0) {
            p = peak_measure_for_cache(isa, threads);
            if (p.gflops > 0.0)
                cache_append(path, &p);
        }
    } else {
        p = peak_measure(isa, threads);
    }
    if (slot)
        remembered[isa][slot] = p;
    return p;
}
