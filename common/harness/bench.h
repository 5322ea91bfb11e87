#ifndef BENCH_H
#define BENCH_H

#include <stdio.h>

#include "cpu.h"
#include "env.h"
#include "flags.h"
#include "mat.h"

// The benchmark harness every stage's driver uses. A driver lists its
// kernels and calls bench_main; the harness reads the flags (cli/flags.h),
// checks each kernel against a double-precision reference, times it against
// OpenBLAS and the machine's peak in the same run, and writes the CSV and a
// readable table.

// C = A·B, row-major; A is m×k (lda ≥ k), B is k×n (ldb ≥ n), C is m×n (ldc ≥ n).
// A kernel overwrites C: it must not assume anything about C's old contents.
typedef void (*bench_matmul_fn)(int m, int n, int k, const float *A, int lda,
                                const float *B, int ldb, float *C, int ldc);

struct bench_kernel {
    const char *name;
    enum isa isa;  // what the row's code is written for: every kernel family
                   // runs it while the row runs (isa_force)
    int threaded;  // 1: runs on --threads threads; 0: always on one
    bench_matmul_fn fn;
};

struct bench_stage {
    const char *name;  // "stage-01": names the CSV's rows and the table
    const struct bench_kernel *kernels;
    int nkernels;
    const char *sizes;        // default --sizes
    const char *quick_sizes;  // --sizes under --quick
    // A kernel whose error bound is normwise (Strassen's, chapter 5) is
    // checked against it: the most any element of C may be off, for the
    // kernel (its name with --tag's text), k and ab = max|A|·max|B|; 0 for
    // the others, which are held to gemm()'s elementwise bound. NULL: every
    // kernel is.
    double (*normwise_bound)(const char *kernel, int k, double ab);
};

#define BENCH_MAX_SHAPES 64

struct bench_shape {
    int m, n, k;
};

// Rounds of a race: each round times the yardstick (one fixed GEMM), then
// OpenBLAS and every kernel once more; the rows give the median of the
// rounds, and with more than one round each round's rows too
// (KERNEL/roundN). A round whose yardstick ran more than BENCH_SLOW_ROUND
// under the run's best is marked slow and measured again (at most as many
// times as there are rounds), never counted in a median.
#define BENCH_MAX_ROUNDS 20
extern const double BENCH_SLOW_ROUND;

struct bench_options {
    struct bench_shape shapes[BENCH_MAX_SHAPES];
    int nshapes;
    int threads;
    int reps;
    int rounds;
    struct flag_list kernels;  // indices of the stage's kernels (nkernels: openblas); n 0: all
    enum isa isa;              // --isa, forced for every kernel family; ISA_COUNT: not given
    const char *csv;  // NULL: table only; "-": CSV on stdout, table on stderr
    int quick;
    int append;       // add rows to an existing CSV: no header, no OpenBLAS rows
    const char *tag;  // appended to kernel names, e.g. "-O0"
    int machine;      // --machine: bench_parse printed the machine lines
    struct environment env;  // what the environment says (cli/env.h)
};

// Parses argv into *o. Returns 0, or 2 after printing the problem and the
// usage to stderr (so `return bench_parse(...)` is a correct exit status),
// or 1 after printing the usage for --help or, for --machine, the `#` lines
// the CSV would start with (machine_write's, for this stage, --threads and
// --isa): either way the program has nothing more to do.
int bench_parse(const struct bench_stage *stage, int argc, char **argv,
                struct bench_options *o);

// Runs the benchmark; returns the process exit status (0, or 1 when a
// kernel gives a wrong result or memory runs out).
int bench_run(const struct bench_stage *stage, const struct bench_options *o);

// bench_parse then bench_run: a driver's whole main.
int bench_main(const struct bench_stage *stage, int argc, char **argv);

// Runs fn once on random m×n×k matrices whose leading dimensions are `pad`
// wider than needed, with C filled with NaN first (so an element left
// unwritten shows), and compares C with the double-precision reference.
// Returns the check; ratio > 1 means wrong. ratio is -1 when out of memory.
struct mat_check bench_check_kernel(bench_matmul_fn fn, int m, int n, int k, int pad);

// The median of n timings; sorts t in place.
double bench_median(double *t, int n);

// The yardstick rule: slow[i] = 1 for each of the n rounds whose yardstick
// (GFLOPS) ran more than BENCH_SLOW_ROUND under best, the fastest the run
// has seen, else 0. Returns how many are slow.
int bench_mark_slow(const double *yardstick, int n, double best, int *slow);

// The `#` lines that describe this machine (isa: what the program's rows
// run on), then the column header row.
void bench_write_header(FILE *f, const char *stage, int threads, enum isa isa,
                        const struct environment *env);

// The thread counts a training benchmark measures at (stages 07 and 08):
// --threads N alone; without it (threads 0) one and two, and every core
// when there are more. top is the last, the most.
struct bench_threads {
    int count[3];
    int n;
    int top;
};
struct bench_threads bench_threads_of(int threads);

#endif
