#ifndef PEAK_H
#define PEAK_H

#include "cpu.h"

// What this machine can do at most: FMA throughput measured with code that
// does nothing else, per instruction set and thread count. Benchmarks report
// their GFLOPS as a percentage of it.
struct peak {
    enum isa isa;
    int threads;
    double gflops;          // 0 when the ISA is not supported here
    double clock_ghz;       // measured, not read from a spec sheet
    double fma_latency;     // cycles from one FMA's inputs to its result
    double fmas_per_cycle;  // vector FMA instructions a core starts each cycle
};

// Measured once per machine and kept in the file peak_cache_use named (a
// program's main names $PEAK_CACHE, through cli/env.h), so benchmarks don't
// spend time re-measuring.
struct peak peak_get(enum isa isa, int threads);
// The file peak_get keeps its measurements in; NULL or "": none, measure in
// every process.
void peak_cache_use(const char *path);

// Measures afresh, past both caches. Other work can only make the loops look
// slower, so a caller comparing two measurements takes the best of several.
struct peak peak_measure(enum isa isa, int threads);

// Cycles per second, from a chain of dependent one-cycle integer adds;
// 0 on architectures where we have no such chain.
double peak_clock_ghz(void);

// The per-ISA loops (peak_<isa>.c), each built with its own ISA's flags.
// throughput: independent FMA chains, returns the flops done;
// chain: one dependent chain, returns the number of FMAs done.
double peak_throughput_scalar(long iters);
double peak_chain_scalar(long iters);
double peak_throughput_avx2(long iters);
double peak_chain_avx2(long iters);
double peak_throughput_avx512(long iters);
double peak_chain_avx512(long iters);
double peak_throughput_neon(long iters);
double peak_chain_neon(long iters);

#endif
