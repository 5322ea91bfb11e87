// The infrastructure every stage stands on: the harness, the reference
// check, the peak, the command line, the book check and the kit round trip.
// _GNU_SOURCE for sched_setaffinity (the peak test puts two threads on one CPU).
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "bench.h"
#include "blas.h"
#include "conv_flags.h"
#include "conv_direct.h"
#include "cpu.h"
#include "flags.h"
#include "gemm_backend.h"
#include "gemm_flags.h"
#include "train_flags.h"
#include "gemm.h"
#include "machine.h"
#include "mat.h"
#include "optim.h"
#include "peak.h"
#include "pool_row.h"
#include "simd.h"
#include "tape.h"
#include "vec.h"

Test(harness, median_of_odd_and_even_counts)
{
    double odd[] = {5.0, 1.0, 3.0};
    double even[] = {4.0, 1.0, 3.0, 2.0};
    double one[] = {7.0};
    cr_assert_eq(bench_median(odd, 3), 3.0);
    cr_assert_eq(bench_median(even, 4), 2.5);
    cr_assert_eq(bench_median(one, 1), 7.0);
}

// OpenBLAS stands in for a correct kernel; a kernel that forgets the last
// column stands in for a wrong one.
static void forgets_last_column(int m, int n, int k, const float *A, int lda, const float *B,
                                int ldb, float *C, int ldc)
{
    blas_sgemm(m, n - 1, k, A, lda, B, ldb, C, ldc);
}

static void off_by_one_product(int m, int n, int k, const float *A, int lda, const float *B,
                               int ldb, float *C, int ldc)
{
    // Drops the last term of each dot product: an error far above rounding.
    blas_sgemm(m, n, k - 1, A, lda, B, ldb, C, ldc);
}

static const struct bench_kernel test_kernels[] = {
    {"blas_again", ISA_SCALAR, 0, blas_sgemm},
    {"blas_threaded", ISA_SCALAR, 1, blas_sgemm},
};

static const struct bench_stage test_stage = {
    .name = "stage-test",
    .kernels = test_kernels,
    .nkernels = 2,
    .sizes = "16,33",
    .quick_sizes = "8",
};

Test(reference_check, passes_a_correct_kernel_and_catches_wrong_ones)
{
    struct mat_check good = bench_check_kernel(blas_sgemm, 65, 17, 127, 3);
    cr_assert(good.ratio >= 0.0 && good.ratio <= 1.0, "ratio %g", good.ratio);
    cr_assert_eq(good.checked, 65 * 17);

    struct mat_check unwritten = bench_check_kernel(forgets_last_column, 17, 7, 9, 0);
    cr_assert(unwritten.not_finite, "an unwritten element (NaN) must be caught");
    cr_assert_eq(unwritten.j, 6);

    struct mat_check wrong = bench_check_kernel(off_by_one_product, 7, 7, 300, 1);
    cr_assert(wrong.ratio > 1.0, "a missing product must exceed the bound (ratio %g)",
              wrong.ratio);
}

Test(reference_check, bound_grows_with_k_not_a_constant)
{
    // A sum of k equal terms rounded at every step stays inside γ_k·Σ|a·b|.
    int k = 4096;
    float *A = mat_alloc(1, k), *B = mat_alloc(k, 1), C[1];
    mat_fill(A, 1, k, k, 0.1f);
    mat_fill(B, k, 1, 1, 0.3f);
    float sum = 0.0f;
    for (int p = 0; p < k; p++)
        sum += A[p] * B[p];
    C[0] = sum;
    struct mat_problem p = mat_product(1, 1, k, A, k, B, 1);
    struct mat_check c = mat_check_gemm(&p, C, 1, 10);
    cr_assert(c.ratio <= 1.0, "naive float sum must be within the bound, ratio %g", c.ratio);
    cr_assert(c.ratio > 1e-3, "and the bound must not be absurdly loose, ratio %g", c.ratio);
    mat_free(A);
    mat_free(B);
}

Test(reference_check, samples_large_results_including_corners)
{
    struct mat_check c = bench_check_kernel(forgets_last_column, 1100, 1000, 3, 0);
    cr_assert(c.not_finite, "the sampled check must include the last column's corners");
    cr_assert(c.checked < 1100L * 1000L);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int run_bench(const char *args, const char *csv)
{
    // Split a command line the way a shell would for simple words.
    char copy[512], *argv[32];
    int argc = 0;
    snprintf(copy, sizeof copy, "bench %s", args);
    for (char *tok = strtok(copy, " "); tok && argc < 31; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    (void)csv;
    return bench_main(&test_stage, argc, argv);
}

// Runs the test stage's benchmark with flags, its CSV into a new temporary
// file (named in csv, which the caller removes); returns the file's text.
static char *bench_to_csv(const char *flags, char csv[static 24])
{
    strcpy(csv, "/tmp/bench-test-XXXXXX");
    int fd = mkstemp(csv);
    cr_assert(fd >= 0);
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "%s --csv %s", flags, csv);
    cr_assert_eq(run_bench(args, csv), 0);
    return read_file(csv);
}

Test(harness, writes_the_csv_of_the_design)
{
    char csv[24];
    char *text = bench_to_csv("--sizes 16,33 --threads 2 --reps 2", csv);
    const char *keys[] = {"# cpu: ", "# cores: ", "# clock_ghz: ", "# peak.machine.1: ",
                          "# peak.scalar.1: ", "# compiler: ", "# cflags: ",
                          "# openblas_config: ", "# openblas_core: ", "# openblas_coretype: ",
                          "# date: "};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert_not_null(strstr(text, keys[i]), "header line '%s' missing", keys[i]);
    const char *header =
        "\nkernel,isa,threads,m,n,k,seconds,gflops,pct_peak,vs_openblas,yardstick,slow\n";
    cr_assert_not_null(strstr(text, header), "the column header row is not exact");

    // Result rows: per size, OpenBLAS at 1 and 2 threads, then the two
    // kernels. One round is asked for; when its yardstick ran slow (another
    // process on the machine) the round is measured again, and then each
    // round's rows (KERNEL/roundN) come before the results, one of them
    // marked slow.
    int rows = 0, openblas_rows = 0, round_rows = 0, slow_rows = 0;
    for (char *line = strtok(strstr(text, header) + strlen(header), "\n"); line;
         line = strtok(NULL, "\n")) {
        char kernel[64], isa[16];
        int threads, m, n, k;
        double seconds, gflops, pct, ratio;
        int got = sscanf(line, "%63[^,],%15[^,],%d,%d,%d,%d,%lf,%lf,%lf,%lf", kernel, isa,
                         &threads, &m, &n, &k, &seconds, &gflops, &pct, &ratio);
        cr_assert_eq(got, 10, "bad row: %s", line);
        cr_assert(seconds > 0.0 && gflops > 0.0 && pct > 0.0 && ratio > 0.0, "row: %s", line);
        cr_assert(m == n && n == k && (m == 16 || m == 33));
        char *round = strstr(kernel, "/round");
        if (round) {
            int r = atoi(round + 6);
            cr_assert(r == 1 || r == 2, "one round asked for, one re-run at most: %s", line);
            round_rows++;
            slow_rows += strcmp(strrchr(line, ','), ",1") == 0;
            continue;
        }
        if (strcmp(kernel, "openblas") == 0) {
            openblas_rows++;
            cr_assert(fabs(ratio - 1.0) < 1e-9, "OpenBLAS against itself: %s", line);
        }
        if (strcmp(kernel, "blas_threaded") == 0)
            cr_assert_eq(threads, 2);
        if (strcmp(kernel, "blas_again") == 0)
            cr_assert_eq(threads, 1);
        rows++;
    }
    cr_assert_eq(rows, 8);
    cr_assert_eq(openblas_rows, 4);
    // A size measured again has both rounds' rows, 4 each, the slow one marked.
    cr_assert(round_rows % 8 == 0 && round_rows <= 16, "%d round rows", round_rows);
    cr_assert_eq(slow_rows, round_rows / 2, "%s", text);
    remove(csv);
}

// The yardstick rule: a round is slow when its yardstick ran more than
// BENCH_SLOW_ROUND under the run's best, and only then.
Test(harness, a_round_whose_yardstick_ran_slow_is_marked)
{
    double best = 100.0;
    double yard[] = {100.0, 86.0, 84.0, 40.0, 99.0};
    int slow[5];
    cr_assert_eq(BENCH_SLOW_ROUND, 0.15);
    cr_assert_eq(bench_mark_slow(yard, 5, best, slow), 2);
    int want[] = {0, 0, 1, 1, 0};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(slow[i], want[i], "round %d (yardstick %g of %g)", i + 1, yard[i], best);
    cr_assert_eq(bench_mark_slow(yard, 1, best, slow), 0);
}

// With --rounds, every round's rows come first (KERNEL/roundN, each with
// its yardstick and slow mark), then the result rows, the median of the
// rounds kept, without a yardstick of their own.
Test(harness, rounds_keep_every_round_with_its_yardstick)
{
    char csv[24];
    char *text = bench_to_csv("--sizes 16 --threads 1 --reps 2 --rounds 3", csv);
    cr_assert_not_null(strstr(text, "# yardstick: "), "%s", text);
    cr_assert_not_null(strstr(text, "# slow: "), "%s", text);
    // A round whose yardstick ran slow is measured again: rounds 4 to 6.
    int rounds[7] = {0}, results = 0;
    for (char *line = strtok(strstr(text, ",slow\n") + 6, "\n"); line;
         line = strtok(NULL, "\n")) {
        char kernel[64], tail[64] = "";
        int round = 0, fields = 0;
        double yard = 0.0;
        int slow = -1;
        cr_assert_eq(sscanf(line, "%63[^,]", kernel), 1, "bad row: %s", line);
        for (const char *c = line; *c; c++)
            fields += *c == ',';
        cr_assert_eq(fields, 11, "twelve fields: %s", line);
        char *r = strstr(kernel, "/round");
        const char *last = strrchr(line, ',');
        const char *yard_at = last - 1;
        while (yard_at > line && *yard_at != ',')
            yard_at--;
        if (r) {
            round = atoi(r + 6);
            cr_assert(round >= 1 && round <= 6, "round %d: %s", round, line);
            cr_assert_eq(sscanf(yard_at + 1, "%lf,%d%63s", &yard, &slow, tail), 2,
                         "a round's row has its yardstick and mark: %s", line);
            cr_assert(yard > 0.0 && (slow == 0 || slow == 1), "%s", line);
            rounds[round]++;
        } else {
            cr_assert_str_eq(yard_at, ",,", "a result row has no yardstick: %s", line);
            results++;
        }
    }
    // OpenBLAS and the two kernels on one thread, each round and the result.
    for (int r = 1; r <= 6; r++)
        cr_assert(rounds[r] == 3 || (r > 3 && rounds[r] == 0), "round %d: %d rows", r, rounds[r]);
    cr_assert_eq(results, 3);
    remove(csv);
}

// OpenBLAS held to a lesser path is named, with what it costs and the
// command that lifts it; on its best path nothing is said.
Test(harness, openblas_held_back_is_said_plainly)
{
    char note[512];
    // An AVX-512 CPU with both variables set (some of our machines).
    cr_assert_eq(blas_limit_note_for(ISA_AVX2, "Haswell", ISA_AVX512, "Haswell", "512",
                                     "stage-05", note, sizeof note),
                 1);
    const char *wanted[] = {"OPENBLAS_CORETYPE=Haswell", "avx2", "avx512", "half",
                            "OPENBLAS_L2_SIZE=512",
                            "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE make stage-05 bench"};
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        cr_assert_not_null(strstr(note, wanted[i]), "'%s' missing from: %s", wanted[i], note);
    // The same CPU with both unset: OpenBLAS picks its AVX-512 kernels.
    cr_assert_eq(blas_limit_note_for(ISA_AVX512, "Cooperlake", ISA_AVX512, NULL, NULL,
                                     "stage-05", note, sizeof note),
                 0);
    cr_assert_str_eq(note, "");
    // An AVX2 CPU: Haswell's kernels are OpenBLAS's best there.
    cr_assert_eq(blas_limit_note_for(ISA_AVX2, "Haswell", ISA_AVX2, "Haswell", NULL, "stage-05",
                                     note, sizeof note),
                 0);
    // Only the L2 size set: said, and only that variable is lifted.
    cr_assert_eq(blas_limit_note_for(ISA_AVX512, "Cooperlake", ISA_AVX512, NULL, "512",
                                     "stage-04", note, sizeof note),
                 1);
    cr_assert_not_null(strstr(note, "env -u OPENBLAS_L2_SIZE make stage-04 bench"), "%s", note);
    cr_assert_null(strstr(note, "CORETYPE"), "%s", note);
    // An OpenBLAS build that picks a lesser core by itself: said, but no
    // variable can lift it.
    cr_assert_eq(blas_limit_note_for(ISA_AVX2, "Zen", ISA_AVX512, NULL, NULL, "stage-05", note,
                                     sizeof note),
                 1);
    cr_assert_null(strstr(note, "env -u"), "%s", note);
    // A core name we do not know is not blamed on anyone.
    cr_assert_eq(blas_limit_note_for(ISA_SCALAR, "Prescott", ISA_AVX2, NULL, NULL, "stage-05",
                                     note, sizeof note),
                 0);
    // A short buffer is cut, never overrun.
    char small[16];
    cr_assert_eq(blas_limit_note_for(ISA_AVX2, "Haswell", ISA_AVX512, "Haswell", "512",
                                     "stage-05", small, sizeof small),
                 1);
    cr_assert_lt(strlen(small), sizeof small);
}

// The CSV header says which OpenBLAS it compared against, and carries the
// note exactly when this process's OpenBLAS is held back.
Test(harness, the_csv_header_names_openblas_and_its_limits)
{
    char csv[] = "/tmp/bench-test-XXXXXX";
    int fd = mkstemp(csv);
    cr_assert(fd >= 0);
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "--sizes 16 --reps 1 --csv %s", csv);
    cr_assert_eq(run_bench(args, csv), 0);
    char *text = read_file(csv);
    unlink(csv);
    cr_assert_not_null(strstr(text, "# openblas_l2_size: "));
    cr_assert_not_null(strstr(text, "# openblas_isa: "));
    cr_assert_not_null(strstr(text, "# isa_best: "));
    char note[512];
    const struct environment env = env_read();
    if (blas_limit_note(test_stage.name, &env, note, sizeof note))
        cr_assert_not_null(strstr(text, note), "the note is missing from:\n%s", text);
    else
        cr_assert_null(strstr(text, "# openblas_note:"), "a note where none is due:\n%s", text);
}

// Every results file names its machine (the CPU's family and model, the
// ISAs it runs), the commit measured and the run it is part of, so that
// the book can hold its numbers to one run of the code as it is.
Test(harness, results_files_name_the_commit_and_the_run)
{
    struct environment env = {.run_id = "2026-11-29T0800Z-test-abc", .run_commit = "abc123"};
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    cr_assert_not_null(f);
    machine_write(f, "stage-01", 1, ISA_SCALAR, &env);
    fclose(f);
    cr_assert_not_null(strstr(text, "\n# cpu_id: "), "%s", text);
    cr_assert_not_null(strstr(text, "\n# isas: scalar"), "%s", text);
    cr_assert_not_null(strstr(text, "\n# l2_kib: "), "%s", text);
    cr_assert_not_null(strstr(text, "\n# commit: abc123\n"), "%s", text);
    cr_assert_not_null(strstr(text, "\n# run_id: 2026-11-29T0800Z-test-abc\n"), "%s", text);
    free(text);
    // Outside a reference run: no run id, and the commit said to be unknown.
    text = NULL;
    f = open_memstream(&text, &size);
    machine_write(f, "stage-01", 1, ISA_SCALAR, &(struct environment){0});
    fclose(f);
    cr_assert_null(strstr(text, "# run_id:"), "%s", text);
    cr_assert_not_null(strstr(text, "\n# commit: unknown\n"), "%s", text);
    free(text);
}

Test(harness, append_adds_rows_without_header_or_openblas)
{
    char csv[] = "/tmp/bench-test-XXXXXX";
    int fd = mkstemp(csv);
    cr_assert(fd >= 0);
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "--sizes 8 --threads 1 --reps 1 --csv %s", csv);
    cr_assert_eq(run_bench(args, csv), 0);
    snprintf(args, sizeof args,
             "--sizes 8 --reps 1 --kernels blas_again --tag -x --append --csv %s", csv);
    cr_assert_eq(run_bench(args, csv), 0);
    char *text = read_file(csv);
    cr_assert_not_null(strstr(text, "\nblas_again-x,scalar,1,8,8,8,"));
    char *second_header = strstr(strstr(text, "kernel,isa") + 1, "kernel,isa");
    cr_assert_null(second_header, "--append must not write a second header");
    remove(csv);
}

Test(harness, stops_loudly_on_a_wrong_kernel)
{
    static const struct bench_kernel wrong[] = {{"wrong", ISA_SCALAR, 0, off_by_one_product}};
    struct bench_stage stage = test_stage;
    stage.kernels = wrong;
    stage.nkernels = 1;
    char *argv[] = {"bench", "--sizes", "32", "--reps", "1", NULL};
    cr_assert_eq(bench_main(&stage, 5, argv), 1);
}

// Every bad command line is refused with exit status 2 before any work.
Test(command_line, bad_input_exits_2)
{
    const char *bad[] = {
        "--sizes",            "--sizes 0",          "--sizes -5",      "--sizes 12x",
        "--sizes 256,,512",   "--sizes abc",        "--sizes 99999999", "--threads 0",
        "--threads -1",       "--threads lots",     "--threads 100000", "--reps 0",
        "--reps 2.5",         "--kernels nosuch",   "--isa sse9",       "--shapes 10x10",
        "--shapes 10x10x0",   "--shapes 5x5x5x5",   "--frobnicate",     "--sizes 8 --shapes 8x8x8",
        "--append",           "--sizes 60000",      "--csv",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct bench_options o;
        char copy[128], *argv[16];
        int argc = 0;
        snprintf(copy, sizeof copy, "bench %s", bad[i]);
        for (char *tok = strtok(copy, " "); tok && argc < 15; tok = strtok(NULL, " "))
            argv[argc++] = tok;
        argv[argc] = NULL;
        FILE *saved = stderr;
        stderr = fopen("/dev/null", "w");
        int rc = bench_parse(&test_stage, argc, argv, &o);
        fclose(stderr);
        stderr = saved;
        cr_assert_eq(rc, 2, "'%s' should be refused with 2, got %d", bad[i], rc);
    }
}

Test(command_line, good_input_is_parsed)
{
    struct bench_options o;
    char *argv[] = {"bench", "--shapes", "128x10x256,30976x64x288", "--threads", "3",
                    "--reps", "7", "--kernels", "blas_again,openblas", "--quick", NULL};
    cr_assert_eq(bench_parse(&test_stage, 10, argv, &o), 0);
    cr_assert_eq(o.nshapes, 2);
    cr_assert_eq(o.shapes[1].m, 30976);
    cr_assert_eq(o.shapes[1].n, 64);
    cr_assert_eq(o.shapes[1].k, 288);
    cr_assert_eq(o.threads, 3);
    cr_assert_eq(o.reps, 7);
}

// --machine prints the `#` lines the benchmark's CSV starts with (for a
// tool's own results file) and stops: bench_parse returns 1, as for --help.
Test(command_line, machine_prints_the_machine_lines_and_stops)
{
    struct bench_options o;
    char *argv[] = {"bench", "--machine", "--threads", "1", "--isa", "scalar", NULL};
    FILE *saved = stdout, *out = tmpfile();
    cr_assert_not_null(out);
    stdout = out;
    int rc = bench_parse(&test_stage, 6, argv, &o);
    stdout = saved;
    cr_assert_eq(rc, 1, "--machine: bench_parse returned %d", rc);
    char text[8192];
    rewind(out);
    size_t n = fread(text, 1, sizeof text - 1, out);
    text[n] = '\0';
    fclose(out);
    char first[128];
    snprintf(first, sizeof first, "# stage: %s\n", test_stage.name);
    cr_assert(strncmp(text, first, strlen(first)) == 0, "%s", text);
    // One line names the whole machine, the same whatever the thread count:
    // its peaks are there for every count up to the cores, not only --threads.
    char machine[256], all_cores[64];
    struct cpu_caches c = cpu_caches();
    snprintf(machine, sizeof machine, "\n# machine: %s (%s), %d cores, ", cpu_model(), cpu_id(),
             cpu_count());
    snprintf(all_cores, sizeof all_cores, "\n# peak.machine.%d: ", cpu_count());
    char caches[96];
    snprintf(caches, sizeof caches, ", L1d %ld KiB, L2 %ld KiB, L3 %ld KiB\n", c.l1d / 1024,
             c.l2 / 1024, c.l3 / 1024);
    const char *want[] = {machine, caches, "\n# cpu: ", "\n# cores: ", "\n# peak.machine.1: ",
                          all_cores, "\n# l1d_kib: ", "\n# compiler: ", "\n# openblas_core: ",
                          "\n# isa: scalar\n", "\n# commit: ", "\n# date: "};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert_not_null(strstr(text, want[i]), "no '%s' in:\n%s", want[i] + 1, text);
    for (const char *line = text; *line;) {
        cr_assert(strncmp(line, "# ", 2) == 0, "not a machine line: %s", line);
        const char *end = strchr(line, '\n');
        cr_assert_not_null(end, "an unfinished line: %s", line);
        line = end + 1;
    }
}

Test(command_line, an_isa_this_cpu_lacks_is_refused_not_run)
{
    for (int isa = 0; isa < ISA_COUNT; isa++) {
        if (isa_supported((enum isa)isa))
            continue;
        struct bench_options o;
        char *argv[] = {"bench", "--isa", (char *)isa_name((enum isa)isa), NULL};
        FILE *saved = stderr;
        stderr = fopen("/dev/null", "w");
        int rc = bench_parse(&test_stage, 3, argv, &o);
        fclose(stderr);
        stderr = saved;
        cr_assert_eq(rc, 2, "--isa %s on a CPU without it", isa_name((enum isa)isa));
    }
}

// The peak must agree with what the hardware can do at most: a vector FMA
// unit finishes at most 4 FMAs a cycle on any core we know, and needs at
// least 2 cycles of latency. Wide bounds: this is a sanity check, not a
// performance test.
Test(peak, within_the_range_of_the_isa)
{
    for (int isa = 0; isa < ISA_COUNT; isa++) {
        if (!isa_supported((enum isa)isa))
            continue;
#if defined(EMULATE_AVX512)
        // `make test-avx512`: SIMDe's AVX-512 runs at a speed that is no ISA's.
        if (isa == ISA_AVX512) {
            cr_log_info("avx512 peak not checked: its instructions are emulated");
            continue;
        }
#endif
        struct peak p = peak_get((enum isa)isa, 1);
        // The clock as refined by the measurement that produced p.
        double clock = peak_clock_ghz();
        cr_assert(clock > 0.3 && clock < 7.0, "clock %.2f GHz", clock);
        double most = clock * 2.0 * isa_lanes((enum isa)isa) * 4.0;
        cr_assert(p.gflops > 0.02 * most && p.gflops <= 1.1 * most,
                  "%s peak %.1f GFLOPS, the ISA allows at most %.1f", isa_name((enum isa)isa),
                  p.gflops, most);
        cr_assert(p.fmas_per_cycle > 0.1 && p.fmas_per_cycle < 4.4, "%s: %.2f FMAs/cycle",
                  isa_name((enum isa)isa), p.fmas_per_cycle);
        cr_assert(p.fma_latency > 1.5 && p.fma_latency < 12.0, "%s: latency %.2f cycles",
                  isa_name((enum isa)isa), p.fma_latency);
    }
}

// The header's figures agree with one another: the peak it prints is the
// clock it prints × FMAs per cycle × lanes × 2 flops, to the rounding of the
// printed digits. So the clock must be the reading the peak was computed
// with, even when the peak comes from the cache and this process read the
// clock afresh. The cache below holds a peak measured at 1.234 GHz, a clock
// no real reading here will match.
Test(peak, header_clock_times_fmas_gives_the_peak)
{
    if (peak_clock_ghz() <= 0.0)
        cr_skip_test("no add-chain clock on this architecture");
    char cache[] = "/tmp/peak-header-XXXXXX", csv[] = "/tmp/bench-peak-XXXXXX";
    int fd = mkstemp(cache);
    cr_assert(fd >= 0);
    close(fd);
    fd = mkstemp(csv);
    cr_assert(fd >= 0);
    close(fd);
    enum isa best = isa_best();
    double planted = 1.234 * 2.0 * 2.0 * isa_lanes(best);  // 2 FMAs per cycle
    FILE *f = fopen(cache, "w");
    cr_assert_not_null(f);
    fprintf(f, "# machine: %s, %d cores\n%s,1,%.2f,1.234,4.00,2.00\n", cpu_model(), cpu_count(),
            isa_name(best), planted);
    fclose(f);
    setenv("PEAK_CACHE", cache, 1);
    char args[256];
    snprintf(args, sizeof args, "--sizes 16 --threads 1 --reps 1 --csv %s", csv);
    cr_assert_eq(run_bench(args, csv), 0);
    unsetenv("PEAK_CACHE");
    char *text = read_file(csv);
    double clock = 0.0, peak = 0.0, fmas = 0.0;
    char name[16] = "";
    cr_assert_not_null(strstr(text, "# clock_ghz: "));
    sscanf(strstr(text, "# clock_ghz: "), "# clock_ghz: %lf", &clock);
    sscanf(strstr(text, "# peak.machine.1: "), "# peak.machine.1: %lf", &peak);
    cr_assert_not_null(strstr(text, "# fmas_per_cycle."));
    sscanf(strstr(text, "# fmas_per_cycle."), "# fmas_per_cycle.%15[^:]: %lf", name, &fmas);
    enum isa isa;
    cr_assert_eq(isa_parse(name, &isa), 0, "ISA '%s'", name);
    double product = clock * fmas * 2.0 * isa_lanes(isa);
    cr_assert(fabs(product - peak) <= 0.01 * peak,
              "clock %.2f GHz × %.2f FMAs/cycle × %d lanes × 2 = %.1f, but the peak is %.1f",
              clock, fmas, isa_lanes(isa), product, peak);
    cr_assert(fabs(clock - 1.23) < 1e-9, "the header's clock %.2f is not the peak's 1.23", clock);
    remove(cache);
    remove(csv);
}

// Other work sharing a core takes time from the peak loops, not speed. Two
// threads forced onto one CPU (as when another program holds the other one)
// must still measure about twice the one-thread scalar peak: each thread
// counts the CPU time it was given, not the wall time it waited. The other
// tests run beside this one, and on a virtual machine the host can take the
// core away while the thread's clock runs, so either measurement can be slow
// for a while: each side is the best of five, taken in turns, as the peak
// itself is the best of its trials.
Test(peak, threads_sharing_a_core_are_not_counted_as_one)
{
    cpu_set_t all, one;
    cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
    int cpu = 0;
    while (!CPU_ISSET(cpu, &all))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    struct peak single = {0}, pair = {0};
    for (int round = 0; round < 5; round++) {
        struct peak p1 = peak_measure(ISA_SCALAR, 1), p2 = peak_measure(ISA_SCALAR, 2);
        if (p1.gflops > single.gflops)
            single = p1;
        if (p2.gflops > pair.gflops)
            pair = p2;
    }
    sched_setaffinity(0, sizeof all, &all);
    cr_assert(pair.gflops > 1.6 * single.gflops,
              "2 threads on one CPU: %.1f GFLOPS, 1 thread: %.1f; a busy core halved the peak",
              pair.gflops, single.gflops);
}

// A measurement goes into the cache file, and a value in the cache file is
// believed instead of measuring again. (Within one process peak_get also
// remembers its answers, so the read-back uses a thread count never asked.)
Test(peak, cache_is_written_and_read)
{
    char path[] = "/tmp/peak-test-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    remove(path);
    peak_cache_use(path);
    struct peak measured = peak_get(ISA_SCALAR, 1);
    char *text = read_file(path);
    cr_assert_not_null(strstr(text, "# machine: "));
    cr_assert_not_null(strstr(text, "\nscalar,1,"), "%s", text);
    cr_assert(measured.gflops > 0.0);

    FILE *f = fopen(path, "a");
    cr_assert_not_null(f);
    fprintf(f, "scalar,63,123.45,3.000,4.00,2.00\n");
    fclose(f);
    struct peak cached = peak_get(ISA_SCALAR, 63);
    peak_cache_use(NULL);
    cr_assert(fabs(cached.gflops - 123.45) < 1e-9, "read %.2f, the file says 123.45",
              cached.gflops);
    cr_assert(fabs(cached.fma_latency - 4.0) < 1e-9);
    remove(path);
}

Test(cpu, caches_are_ordered_and_named)
{
    struct cpu_caches c = cpu_caches();
    cr_assert(c.l1d >= 4096 && c.l1d < c.l2, "L1 %ld, L2 %ld", c.l1d, c.l2);
    cr_assert(c.l2 <= c.l3 || c.l3 == 0, "L2 %ld, L3 %ld", c.l2, c.l3);
    // A virtual machine may report its whole package's L3; blocks sized from
    // that would live in no cache.
    cr_assert(c.l3 <= CPU_L3_MAX, "L3 %ld over the cap of %d", c.l3, (int)CPU_L3_MAX);
    cr_assert(c.line == 32 || c.line == 64 || c.line == 128, "line %ld", c.line);
    cr_assert_str_neq(cpu_model(), "");
    cr_assert(cpu_count() >= 1);
}

Test(cpu, isa_names_round_trip)
{
    for (int isa = 0; isa < ISA_COUNT; isa++) {
        enum isa back;
        cr_assert_eq(isa_parse(isa_name((enum isa)isa), &back), 0);
        cr_assert_eq((int)back, isa);
    }
    enum isa out;
    cr_assert_eq(isa_parse("sse", &out), -1);
    cr_assert(isa_supported(ISA_SCALAR));
    cr_assert(isa_supported(isa_best()));
}

// Each test process writes its files into a directory of its own, $T in
// the commands below, so that two `make test` runs at once (two checkouts
// on one machine) never read each other's output. It goes when the test
// process ends.
static char tmp_made[64];

static void remove_tmp(void)
{
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", tmp_made);
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_made);
}

static const char *tmp_dir(void)
{
    if (!tmp_made[0]) {
        snprintf(tmp_made, sizeof tmp_made, "/tmp/test-common-XXXXXX");
        cr_assert_not_null(mkdtemp(tmp_made), "mkdtemp: %s", strerror(errno));
        setenv("T", tmp_made, 1);
        atexit(remove_tmp);
    }
    return tmp_made;
}

// $T/name, for the C side; four at a time, as read_file's callers need.
static const char *tmp_path(const char *name)
{
    static char paths[4][256];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", tmp_dir(), name);
    return p;
}

// The tools below are run from the repository root, where `make test` runs.
// Criterion marks its test processes with BXFI_MAP; a Criterion program
// started from inside a test (the kit's tests) must not inherit it.
static int sh(const char *command)
{
    tmp_dir();
    char line[1024];
    snprintf(line, sizeof line, "unset BXFI_MAP; %s", command);
    int rc = system(line);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Test(book, check_passes_on_a_good_chapter_and_fails_on_broken_ones)
{
    cr_assert_eq(sh("tools/check-book.sh tests/book/good.md >/dev/null 2>&1"), 0);
    cr_assert_neq(sh("tools/check-book.sh tests/book/missing_marker.md 2>$T/book-err.txt"),
                  0);
    cr_assert_not_null(strstr(read_file(tmp_path("book-err.txt")), "no_such_listing"),
                       "the error must name the missing listing");
    cr_assert_neq(sh("tools/check-book.sh tests/book/missing_file.md 2>$T/book-err.txt"), 0);
    cr_assert_not_null(strstr(read_file(tmp_path("book-err.txt")), "no_such_file.c"),
                       "the error must name the missing file");
    cr_assert_neq(sh("tools/check-book.sh tests/book/missing_row.md >/dev/null 2>&1"), 0);
    cr_assert_neq(sh("tools/check-book.sh tests/book/bad_last.md 2>$T/book-err.txt"), 0);
    cr_assert_not_null(strstr(read_file(tmp_path("book-err.txt")), "last: no column 'epoch'"),
                       "the error must name the missing column");
}

// last=COL picks, of the rows where= selects, the one with the largest COL.
Test(book, last_picks_the_row_with_the_largest_value)
{
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown --lua-filter tools/book.lua -t plain "
                    "--wrap=none tests/book/good.md 2>&1 | "
                    "grep -q 'The largest size OpenBLAS ran: 86.9 GFLOPS'"),
                 0);
}

// stat= sums a column up over the rows selected (one per seed): the mean,
// the sample standard deviation, the extremes and the count; another
// statistic is an error that names the ones there are.
Test(book, stat_sums_up_a_column_over_rows)
{
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown --lua-filter tools/book.lua -t plain "
                    "--wrap=none tests/book/seeds.md 2>&1 | grep -q 'Mean 87.00 %, spread "
                    "1.00 %, from 86.00 % to 88.00 % over 3 seeds.'"),
                 0);
    cr_assert_neq(sh("printf '%s\\n' 'x []{.result file=\"tests/book/seeds-results.csv\" "
                     "column=\"test_acc\" stat=\"median\"}' | BOOK_ROOT=. pandoc -f markdown "
                     "--lua-filter tools/book.lua -t plain >/dev/null 2>$T/book-stat.txt"),
                  0);
    cr_assert_not_null(strstr(read_file(tmp_path("book-stat.txt")), "mean, sd, min, max and n"),
                       "%s", read_file(tmp_path("book-stat.txt")));
}

// PyTorch's races (tools/compare.py) hold their rounds to the same rule, with
// the same constant.
Test(harness, a_race_with_pytorch_marks_slow_rounds_by_the_same_rule)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cd tools && python3 -B -c 'import compare; "
             "assert compare.SLOW_ROUND == %.17g, compare.SLOW_ROUND; "
             "s = compare.slow_rounds({1: 100.0, 2: 86.0, 3: 84.0, 4: 40.0, 5: 99.0}); "
             "assert s == {3, 4}, s; assert compare.slow_rounds({1: 7.0}) == set()' "
             ">$T/compare-rule.txt 2>&1",
             BENCH_SLOW_ROUND);
    cr_assert_eq(sh(cmd), 0, "%s", read_file(tmp_path("compare-rule.txt")));
}

// A race prints its ratio with the range over the rounds, two significant
// figures each (three where two would print one number for the range),
// leaving out a round whose yardstick ran slow; say="verdict"
// writes faster, slower or within the spread from the same numbers. A file
// measured before rounds were kept (no yardstick column) gives the ratio
// alone, and a ratio column is all a race reads. against= holds one race's
// rounds against another's. A table leaves the rounds' rows out unless its
// where= names them.
Test(book, a_race_prints_its_ratio_with_the_range_over_rounds)
{
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown --lua-filter tools/book.lua -t plain "
                    "--wrap=none tests/book/race.md >$T/book-race.txt 2>&1"),
                 0, "%s", read_file(tmp_path("book-race.txt")));
    const char *out = read_file(tmp_path("book-race.txt"));
    const char *want[] = {
        "MLP: 2.8×, rounds 2.6–3.1, ours is faster.",
        "CNN: 1.1×, rounds 0.90–1.2, the two are within the spread.",
        "Forward: PyTorch wins.",
        "Narrow: 1.1×, rounds 1.10–1.15.",
        "Old: 2.8×, faster.",
        "GEMM: 0.98×, rounds 0.95–1.0, within the spread; at 512 slower.",
        "Margins: smaller, larger, larger, level.",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert_not_null(strstr(out, want[i]), "want '%s' in:\n%s", want[i], out);
    // A table shows a round's rows only where its where= names them.
    const char *named = strstr(out, "The result rows alone.");
    cr_assert_not_null(named, "%s", out);
    cr_assert_null(memmem(out, (size_t)(named - out), "packed/round", 12), "%s", out);
    cr_assert_not_null(strstr(named, "packed/round2"), "%s", out);
    cr_assert_neq(sh("printf '%s\\n' 'x []{.race file=\"tests/book/race-results.csv\" "
                     "where=\"model=mlp,framework=ours\" column=\"gflops\"}' | BOOK_ROOT=. "
                     "pandoc -f markdown --lua-filter tools/book.lua -t plain >/dev/null "
                     "2>$T/book-race-err.txt"),
                  0);
    cr_assert_not_null(strstr(read_file(tmp_path("book-race-err.txt")), "ratio to the peer"),
                       "%s", read_file(tmp_path("book-race-err.txt")));
}

// A results file measured with OpenBLAS held back carries its note into the
// book, under the table.
Test(book, a_held_back_openblas_is_noted_under_its_table)
{
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown --lua-filter tools/book.lua -t plain "
                    "--wrap=none tests/book/held.md >$T/book-held.txt 2>&1"),
                 0);
    const char *out = read_file(tmp_path("book-held.txt"));
    cr_assert_not_null(strstr(out, "Note: OpenBLAS is not on its best path"), "%s", out);
    cr_assert_not_null(strstr(out, "env -u OPENBLAS_CORETYPE make stage-05 bench"), "%s", out);
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown --lua-filter tools/book.lua -t plain "
                    "tests/book/good.md 2>&1 | grep -q 'best path'"),
                 1, "a note under a table measured with OpenBLAS on its best path");
}

// A table of kernels by ISA marked untimed="avx512" says, under it, that
// a machine without AVX-512 did not time those kernels and where they are
// tested; on a machine with AVX-512 it adds nothing. A table of the AVX-512
// kernel alone is the note alone there, not an error. A meta= key kept per
// ISA, named without one, reads the widest ISA's; a file from before the
// isas and isa_best lines gets them from its peaks.
Test(book, kernels_a_machine_does_not_run_are_noted_as_not_timed)
{
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown --lua-filter tools/book.lua -t plain "
                    "--wrap=none tests/book/untimed.md >$T/book-untimed.txt 2>&1"),
                 0, "%s", read_file(tmp_path("book-untimed.txt")));
    const char *out = read_file(tmp_path("book-untimed.txt"));
    const char *note = "Not timed on this machine: it has no AVX-512, so the AVX-512 kernels "
                       "have no rows; make test-avx512 tests them under emulation.";
    const char *with = strstr(out, "First, the machine that runs AVX-512");
    const char *without = strstr(out, "Then the machine that does not");
    const char *alone = strstr(out, "The AVX-512 kernel alone");
    cr_assert(with && without && alone && with < without && without < alone, "%s", out);
    // Nothing under the table of the machine with AVX-512, where its column has numbers.
    cr_assert_null(memmem(with, (size_t)(without - with), "Not timed", 9), "%s", out);
    cr_assert_not_null(memmem(with, (size_t)(without - with), "144.3", 5), "%s", out);
    const char *first = strstr(without, note);
    cr_assert(first && first < alone, "want '%s' under the second table in:\n%s", note, out);
    // The table of the AVX-512 kernel alone: the note, and no table.
    cr_assert_not_null(strstr(alone, note), "%s", out);
    cr_assert_null(strstr(alone, "AVX-512 alone"), "%s", out);
    cr_assert_not_null(strstr(out, "Latency 4.00 and 4.05 cycles; 1.43 FMAs per cycle."), "%s",
                       out);
    cr_assert_not_null(strstr(out, "before the isas line: avx2,avx512, widest avx512."), "%s", out);
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown --lua-filter tools/book.lua -t plain "
                    "tests/book/good.md 2>&1 | grep -q 'Not timed'"),
                 1, "a note under a table without untimed=");
    cr_assert_neq(sh("printf '%s\\n' '```{.results-table file=\"tests/book/untimed-avx2.csv\" "
                     "untimed=\"sse\"}' '```' | BOOK_ROOT=. pandoc -f markdown --lua-filter "
                     "tools/book.lua -t plain >/dev/null 2>$T/book-untimed-err.txt"),
                  0);
    cr_assert_not_null(strstr(read_file(tmp_path("book-untimed-err.txt")), "avx512 and neon"),
                       "%s", read_file(tmp_path("book-untimed-err.txt")));
}

// A figure with caption="drawn" takes the caption its plot script wrote
// beside the plot (build/plots/NAME.caption); outside check mode a missing
// one is an error, and so is another value of caption=.
Test(book, a_drawn_caption_comes_from_the_plot)
{
    cr_assert_eq(sh("rm -rf $T/book-drawn && mkdir -p $T/book-drawn/plots/data "
                    "$T/book-drawn/build/plots && "
                    "cp plots/data/stage-08.csv $T/book-drawn/plots/data/ && "
                    "touch $T/book-drawn/build/plots/stage-08.svg && "
                    "echo 'Batch 64, timed by `make stage-08 bench`. No PyTorch bar.' "
                    ">$T/book-drawn/build/plots/stage-08.caption && "
                    "printf '%s\\n' '![](build/plots/stage-08.svg){caption=\"drawn\"}' "
                    ">$T/book-drawn/drawn.md && "
                    "printf '%s\\n' '![](build/plots/stage-08.svg){caption=\"typed\"}' "
                    ">$T/book-drawn/typed.md"),
                 0);
    const char *pandoc = "BOOK_ROOT=$T/book-drawn pandoc -f markdown --lua-filter "
                         "tools/book.lua -t html --wrap=none ";
    char command[512];
    snprintf(command, sizeof command, "%s $T/book-drawn/drawn.md >$T/book-drawn/out 2>&1",
             pandoc);
    cr_assert_eq(sh(command), 0, "%s", read_file(tmp_path("book-drawn/out")));
    const char *out = read_file(tmp_path("book-drawn/out"));
    cr_assert_not_null(strstr(out, "<figcaption aria-hidden=\"true\">Batch 64, timed by "
                                   "<code>make stage-08 bench</code>. No PyTorch "
                                   "bar.</figcaption>"),
                       "%s", out);
    cr_assert_null(strstr(out, "caption=\"drawn\""), "%s", out);

    cr_assert_eq(sh("rm $T/book-drawn/build/plots/stage-08.caption"), 0);
    cr_assert_neq(sh(command), 0, "a drawn caption that is not there");
    out = read_file(tmp_path("book-drawn/out"));
    cr_assert_not_null(strstr(out, "no caption build/plots/stage-08.caption"), "%s", out);
    snprintf(command, sizeof command, "BOOK_CHECK=1 %s $T/book-drawn/drawn.md >/dev/null 2>&1",
             pandoc);
    cr_assert_eq(sh(command), 0, "check mode needs no plot drawn");

    snprintf(command, sizeof command, "%s $T/book-drawn/typed.md >$T/book-drawn/out 2>&1",
             pandoc);
    cr_assert_neq(sh(command), 0);
    out = read_file(tmp_path("book-drawn/out"));
    cr_assert_not_null(strstr(out, "caption=\"typed\"; the one value is \"drawn\""), "%s", out);
    cr_assert_eq(sh("rm -rf $T/book-drawn"), 0);
}

Test(book, the_real_book_checks)
{
    cr_assert_eq(sh("tools/check-book.sh --book book.md >$T/book-out.txt 2>&1"), 0, "%s",
                 read_file(tmp_path("book-out.txt")));
}

// check-book --words counts each chapter's prose: fenced code, indented code
// and {.attribute} spans (one spread over two lines too) are left out, the []
// a number fills in counts as one word; a chapter above the limit fails.
Test(book, prose_words_leave_out_code_and_fail_above_the_limit)
{
    cr_assert_eq(sh("BOOK_ROOT=tests/book/words tools/check-book.sh --words "
                    "tests/book/words/book.md >$T/book-words.txt 2>&1"),
                 0, "%s", read_file(tmp_path("book-words.txt")));
    const char *out = read_file(tmp_path("book-words.txt"));
    cr_assert_not_null(strstr(out, "       7  ch.md\n"), "%s", out);
    cr_assert_neq(sh("BOOK_MAX_WORDS=6 BOOK_ROOT=tests/book/words tools/check-book.sh --words "
                     "tests/book/words/book.md >$T/book-words.txt 2>&1"),
                  0);
    out = read_file(tmp_path("book-words.txt"));
    cr_assert_not_null(strstr(out, "1 chapter(s) above 6 words of prose"), "%s", out);
    cr_assert_eq(sh("tools/check-book.sh --words book.md >$T/book-words.txt 2>&1"), 0, "%s",
                 read_file(tmp_path("book-words.txt")));
}

// A results file the book quotes must come from the compiler and one of the
// machines its reference: header names; each table's caption names that
// machine from the header. Another compiler, another machine, or a header
// too vague to tell two machines apart, each fail and say which file.
Test(book, results_from_another_compiler_or_machine_fail_the_check)
{
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown -t plain --wrap=none --lua-filter "
                    "tools/book.lua -M book-provenance=error tests/book/provenance.md "
                    ">$T/book-prov.txt 2>&1"),
                 0, "%s", read_file(tmp_path("book-prov.txt")));
    const char *out = read_file(tmp_path("book-prov.txt"));
    cr_assert_not_null(strstr(out, "On the first machine — Reference machine: Test Zen 5"), "%s",
                       out);
    cr_assert_not_null(strstr(out, "On the second — Second machine: Test Zen 3"), "%s", out);
    cr_assert_neq(sh("BOOK_ROOT=. pandoc -f markdown -t plain --lua-filter tools/book.lua "
                     "-M book-provenance=error tests/book/provenance-bad.md "
                     ">/dev/null 2>$T/book-prov.txt"),
                  0);
    out = read_file(tmp_path("book-prov.txt"));
    cr_assert_not_null(strstr(out, "tests/book/prov-clang.csv: was measured with clang 14.0.6; "
                                   "the book's compiler is gcc 12.2.0"),
                       "%s", out);
    cr_assert_not_null(strstr(out, "tests/book/prov-elsewhere.csv: was measured on cpu Test CPU, "
                                   "4 cores"),
                       "%s", out);
    cr_assert_not_null(strstr(out, "tests/book/prov-vague.csv: says only cpu Test CPU, which fits "
                                   "more than one"),
                       "%s", out);
    // Only a warning when the book is built: make book is not held up.
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown -t plain --lua-filter tools/book.lua "
                    "tests/book/provenance-bad.md >/dev/null 2>$T/book-prov.txt"),
                 0);
    cr_assert_not_null(strstr(read_file(tmp_path("book-prov.txt")), "warning: tests/book/prov-clang"));
}

// make check-book holds the book to one reference run: two run ids are an
// error; a file without one is listed as not from a reference run (an
// error with book-runs=error, which STRICT=1 gives); a file measured before
// the last change to its stage's code or common/ is stale, or "cannot
// tell" in a clone without the history; the machine each caption names
// comes from the file's own `#` lines.
Test(book, results_from_two_runs_without_a_run_or_stale_are_listed)
{
#define RUNS_FILTER "BOOK_ROOT=. pandoc -f markdown -t plain --wrap=none --lua-filter tools/book.lua " \
                    "-M book-check=true "
    cr_assert_eq(sh(RUNS_FILTER "-M book-runs=error tests/book/runs/one.md >$T/runs.txt 2>&1"), 0,
                 "%s", read_file(tmp_path("runs.txt")));
    const char *out = read_file(tmp_path("runs.txt"));
    cr_assert_not_null(strstr(out, "The first — Reference machine: Test CPU (family 25, model 1), "
                                   "2 cores, AVX2, L1d 32 KiB, L2 512 KiB"),
                       "%s", out);
    cr_assert_not_null(strstr(out, "run: 2026-11-29T0800Z-test-1"), "%s", out);
    cr_assert_null(strstr(out, "not from a reference run"), "%s", out);

    // two runs: an error even when the rest only warns
    cr_assert_neq(sh(RUNS_FILTER "-M book-runs=warn tests/book/runs/two.md >$T/runs.txt 2>&1"), 0);
    out = read_file(tmp_path("runs.txt"));
    cr_assert_not_null(strstr(out, "come from 2 runs, not one: 2026-11-29T0800Z-test-1 (1: "
                                   "stage-01-a.csv); 2026-11-30T0900Z-test-2 (1: stage-02-b.csv)"),
                       "%s", out);

    // no run id, measured in 2020: a warning, an error under book-runs=error
    cr_assert_eq(sh(RUNS_FILTER "-M book-runs=warn tests/book/runs/none.md >$T/runs.txt 2>&1"), 0,
                 "%s", read_file(tmp_path("runs.txt")));
    out = read_file(tmp_path("runs.txt"));
    cr_assert_not_null(strstr(out, "warning: 1 of 1 results files the book quotes are not from a "
                                   "reference run"),
                       "%s", out);
    int shallow = sh("test \"$(git rev-parse --is-shallow-repository 2>/dev/null)\" != false") == 0;
    if (shallow)
        cr_assert_not_null(strstr(out, "cannot tell which results files are stale"), "%s", out);
    else
        cr_assert_not_null(strstr(out, "are stale, measured before the last change to the code "
                                       "they measure"),
                           "%s", out);
    cr_assert_neq(sh(RUNS_FILTER "-M book-runs=error tests/book/runs/none.md >/dev/null 2>&1"), 0);

    // by commit: at the first commit, stale; at HEAD, not
    if (!shallow) {
        cr_assert_eq(sh("sed \"s/@COMMIT@/$(git rev-list --max-parents=0 HEAD | tail -n 1)/\" "
                        "tests/book/runs/stage-01-at.csv.in > $T/stage-01-at.csv && "
                        "sed \"s|@DIR@|$T|\" tests/book/runs/at.md.in > $T/at.md"),
                     0);
        cr_assert_neq(sh(RUNS_FILTER "-M book-runs=error $T/at.md >$T/runs.txt 2>&1"), 0);
        out = read_file(tmp_path("runs.txt"));
        cr_assert_not_null(strstr(out, "after stage-01-at.csv at "), "%s", out);
        cr_assert_eq(sh("sed \"s/@COMMIT@/$(git rev-parse HEAD)/\" "
                        "tests/book/runs/stage-01-at.csv.in > $T/stage-01-at.csv"),
                     0);
        cr_assert_eq(sh(RUNS_FILTER "-M book-runs=error $T/at.md >$T/runs.txt 2>&1"), 0, "%s",
                     read_file(tmp_path("runs.txt")));
    }
}

// Another machine's run enters the book whole, one row of the table of
// other machines beside the book's own; a chapter that quotes one of its
// files fails the check.
Test(book, other_machines_enter_only_through_their_table)
{
    cr_assert_eq(sh(RUNS_FILTER "-M book-data=tests/book/runs/data "
                    "-M book-other=tests/book/runs/other tests/book/runs/other.md "
                    ">$T/other.txt 2>&1"),
                 0, "%s", read_file(tmp_path("other.txt")));
    const char *out = read_file(tmp_path("other.txt"));
    cr_assert_not_null(strstr(out, "AVX2, L1d 32 KiB, L2 512 KiB (this book's)"), "%s", out);
    cr_assert_not_null(strstr(out, "AVX-512, L1d 48 KiB, L2 512 KiB"), "%s", out);
    cr_assert_not_null(strstr(out, "2026-11-20T0700Z-test-9"), "%s", out);
    cr_assert_not_null(strstr(out, "3.00×"), "the book's MLP race: %s", out);
    cr_assert_not_null(strstr(out, "2.00×"), "%s", out);
    cr_assert_neq(sh(RUNS_FILTER "-M book-other=tests/book/runs/other tests/book/runs/other-bad.md "
                     ">$T/other.txt 2>&1"),
                  0);
    cr_assert_not_null(strstr(read_file(tmp_path("other.txt")),
                              "enter the book only through the table of other machines"));
#undef RUNS_FILTER
}

// make reference writes every file of plots/data/: none is left from
// another run, and its plan says each step's budget.
Test(book, make_reference_writes_every_file_the_book_reads)
{
    cr_assert_eq(sh("ls plots/data | grep -v -x -F \"$(tools/reference.sh --files)\" "
                    ">$T/unwritten.txt; test ! -s $T/unwritten.txt"),
                 0, "no step of make reference writes: %s", read_file(tmp_path("unwritten.txt")));
    cr_assert_eq(sh("DRY=1 RUN_ID=test-run tools/reference.sh >$T/plan.txt 2>&1"), 0);
    const char *out = read_file(tmp_path("plan.txt"));
    cr_assert_not_null(strstr(out, "reference: run test-run"), "%s", out);
    cr_assert_not_null(strstr(out, " min  in all"), "%s", out);
    cr_assert_not_null(strstr(out, "nothing run"), "%s", out);
    cr_assert_neq(sh("STEPS=x tools/reference.sh >/dev/null 2>&1"), 0);
}

// share (like test_acc) holds a fraction of 1 and is shown in percent, and
// format= formats the percent. A file that stores percents in it fails,
// naming the file, the row and the value, where it once printed "2890.0 %".
Test(book, shares_are_fractions_shown_in_percent)
{
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown -t plain --wrap=none --lua-filter "
                    "tools/book.lua tests/book/share.md >$T/book-share.txt 2>&1"),
                 0, "%s", read_file(tmp_path("book-share.txt")));
    const char *out = read_file(tmp_path("book-share.txt"));
    cr_assert_not_null(strstr(out, "28.9 %"), "%s", out);
    cr_assert_not_null(strstr(out, "1.1 %"), "%s", out);
    cr_assert_not_null(strstr(out, "The convolution’s backward: 29 % of the time."), "%s", out);
    cr_assert_neq(sh("BOOK_ROOT=. pandoc -f markdown -t plain --lua-filter tools/book.lua "
                     "tests/book/share-percent.md >/dev/null 2>$T/book-share.txt"),
                  0, "a share of 28.9 was printed");
    out = read_file(tmp_path("book-share.txt"));
    cr_assert_not_null(strstr(out, "tests/book/share-percent.csv:3: column share holds 28.9"),
                       "%s", out);
}

// The student edition holds no task's answer: every listing that holds a
// solution shows the kits' stub instead, and says what to write and which
// tests check it. The check would see an answer: the reader's edition of
// chapter 1 holds those of tasks 1.1 and 1.2.
Test(book, the_student_edition_holds_no_answer, .timeout = 600)
{
    cr_assert_eq(sh("tools/check-book.sh --student book.md >$T/book-student.txt 2>&1"), 0, "%s",
                 read_file(tmp_path("book-student.txt")));
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown -t html5 --lua-filter tools/book.lua "
                    "-M book-check=true -o $T/book-reader-01.html chapters/01-naive.md"),
                 0);
    cr_assert_neq(sh("tools/kit-check.py --book $T/book-reader-01.html "
                     ">$T/book-reader-01.txt 2>&1"),
                  0, "the answers in the reader's edition went unnoticed");
    const char *out = read_file(tmp_path("book-reader-01.txt"));
    cr_assert(strstr(out, "task 1.1") && strstr(out, "task 1.2"), "%s", out);
    cr_assert_eq(sh("BOOK_ROOT=. pandoc -f markdown -t plain --wrap=none --lua-filter "
                    "tools/book.lua -M book-check=true -M book-edition=student "
                    "-o $T/book-student-01.txt chapters/01-naive.md"),
                 0);
    out = read_file(tmp_path("book-student-01.txt"));
    cr_assert_not_null(strstr(out, "Task 1.1 is yours to write: the i, j, p loops"), "%s", out);
    cr_assert_not_null(strstr(out, "make stage-01 test TASK=1.1 runs its tests:"), "%s", out);
    cr_assert_not_null(strstr(out, "// TODO task 1.1:"), "%s", out);
}

// A function on gemm()'s path that no listing shows and no chapter names
// fails the check, and says which.
Test(book, a_function_on_the_path_neither_shown_nor_named_fails)
{
    cr_assert_neq(sh("GEMM_PATH_LIST=tests/book/gemm-path-unshown.txt tools/check-book.sh "
                     "--book book.md >$T/book-path.txt 2>&1"),
                  0);
    const char *out = read_file(tmp_path("book-path.txt"));
    cr_assert_not_null(strstr(out, "be32 (common/data/idx.c) is on gemm()'s path"),
                       "%s", out);
    cr_assert_not_null(
        strstr(out, "1 functions shown in listings, 1 named and left out, 1 neither"), "%s", out);
}

// Each stage's kit builds, fails its tasks' tests on the stubs, and passes
// with the solutions put back, graded as Gradescope grades it: the stubs'
// results.json valid by the spec's fields, every task 0 and no speed score;
// the solution's every task in full and a speed score (tools/kit-roundtrip.sh).
// (That the student edition holds no answer is
// the_student_edition_holds_no_answer, for every task at once.)
static void round_trip(const char *stage)
{
    char command[256], log[64];
    char name[32];
    snprintf(name, sizeof name, "kit-%s.txt", stage);
    snprintf(log, sizeof log, "%s", tmp_path(name));
    snprintf(command, sizeof command, "tools/kit-roundtrip.sh %s >%s 2>&1", stage, log);
    cr_assert_eq(sh(command), 0, "%s", read_file(log));
}

Test(kit, stage_01_round_trip, .timeout = 900)
{
    round_trip("01_naive");
}

Test(kit, stage_02_round_trip, .timeout = 900)
{
    round_trip("02_tiling");
}

Test(kit, stage_03_round_trip, .timeout = 900)
{
    round_trip("03_simd");
}

Test(kit, stage_04_round_trip, .timeout = 900)
{
    round_trip("04_packing");
}

Test(kit, stage_05_round_trip, .timeout = 900)
{
    round_trip("05_threading");
}

Test(kit, stage_06_round_trip, .timeout = 900)
{
    round_trip("06_autograd");
}

Test(kit, stage_07_round_trip, .timeout = 900)
{
    round_trip("07_mlp");
}

Test(kit, stage_08_round_trip, .timeout = 900)
{
    round_trip("08_conv");
}

Test(kit, stage_09_round_trip, .timeout = 900)
{
    round_trip("09_compile");
}

// The grading platforms end to end on stage 01's kit (the round trips above
// grade every stage's kit in results.json): the stubs' results.json by
// Gradescope's fields (every task 0, no speed score), run_autograder in a
// scratch Gradescope layout with the solution submitted (every task in full,
// a speed score), and the Classroom workflow's steps run on stubs and
// solutions (tools/test-platforms.sh).
Test(kit, grading_platforms, .timeout = 900)
{
    cr_assert_eq(sh("tools/test-platforms.sh 01_naive >$T/platforms.txt 2>&1"), 0, "%s",
                 read_file(tmp_path("platforms.txt")));
}

// The speed scores of stages 08 and 09 time the student's code: col2im and
// the max-pool backward made slower, or every kernel the generator writes,
// score less (tools/test-speed-score.sh). It times code, so it waits for the
// benchmark lock when another run holds it.
Test(kit, speed_score_follows_the_students_code, .timeout = 1800)
{
    cr_assert_eq(sh("flock /tmp/bench.lock tools/test-speed-score.sh 08 09 >$T/speed.txt 2>&1"),
                 0, "%s", read_file(tmp_path("speed.txt")));
}

// make handout's repository holds no answer by the kits' rules (the tool
// checks, and fails on one), builds, and its tests fail on the stubs: here
// stage 01's, which build fastest.
Test(kit, the_handout_holds_no_answer_and_builds, .timeout = 1200)
{
    cr_assert_eq(sh("python3 tools/make_handout.py . $T/handout >$T/handout.txt 2>&1"), 0, "%s",
                 read_file(tmp_path("handout.txt")));
    cr_assert_eq(sh("test ! -e $T/handout/repository/chapters/answers && "
                    "test -d $T/handout/kits/09_compile"),
                 0);
    cr_assert_neq(sh("make -s -C $T/handout/repository/stages/01_naive test SANITIZE= "
                     ">$T/handout-test.txt 2>&1"),
                  0, "the handout's stubs passed their tests");
    cr_assert_not_null(strstr(read_file(tmp_path("handout-test.txt")), "Failing: 4"), "%s",
                       read_file(tmp_path("handout-test.txt")));
    sh("rm -rf $T/handout");
}

// The peer's own description of itself. Compiled against another BLAS's
// cblas.h (netlib's, say), these functions would be undeclared; C used to
// assume they return int and cut the pointer in half, and the first bench
// crashed here. The build now refuses undeclared functions, and this checks
// the strings are really there.
Test(blas, openblas_names_its_core_and_config)
{
    const char *core = blas_core(), *config = blas_config();
    cr_assert(core != NULL && config != NULL);
    cr_assert(strlen(core) > 0 && strlen(core) < 64, "core name '%s'", core);
    cr_assert(strstr(config, "OpenBLAS") != NULL, "config '%s'", config);
    for (const char *c = core; *c; c++)
        cr_assert(isprint((unsigned char)*c), "core name has byte %d", *c);
}

// No kit holds the answer to one of its own tasks, in any file.
Test(kit, no_kit_holds_its_own_answers, .timeout = 300)
{
    cr_assert_eq(sh("tools/kit-check.py >$T/kit-check.txt 2>&1"), 0, "%s",
                 read_file(tmp_path("kit-check.txt")));
}

// The check finds an answer copied into another file: here the body of task
// 1.1's loops, re-indented, in a copy of the tree.
Test(kit, the_check_finds_an_answer_copied_elsewhere, .timeout = 300)
{
    cr_assert_eq(sh("rm -rf $T/kit-leak && mkdir -p $T/kit-leak && "
                    "cp -r common stages tests tools plots $T/kit-leak/ && "
                    "sed -n '/BEGIN SOLUTION task 1.1/,/END SOLUTION/p' common/loops/naive.c | "
                    "grep -v 'SOLUTION\\|stub:' | sed 's/^ *//' "
                    "> $T/kit-leak/common/harness/leak.c"),
                 0);
    cr_assert_neq(sh("$T/kit-leak/tools/kit-check.py 01_naive >$T/kit-leak.txt 2>&1"), 0,
                  "a copied answer went unnoticed");
    const char *out = read_file(tmp_path("kit-leak.txt"));
    cr_assert(strstr(out, "common/harness/leak.c") && strstr(out, "task 1.1"), "%s", out);
    sh("rm -rf $T/kit-leak");
}

// Each kind of leak the kits once had, put back into a copy of the tree in
// a file of its own: the check names the task and the file, every time.
//   6.2  a helper that is the answer (the answer is one call of it)
//   6.4  the answer's key line in another loop
//   7.1  the answer again under other names
//   8.1  the index arithmetic of the answer, word for word
//   8.3  a comment that states the answer's line
Test(kit, the_check_finds_each_kind_of_leak, .timeout = 300)
{
    static const struct {
        const char *task, *path, *text;
    } leaks[] = {
        {"6.2", "common/autograd/vec_leak.c",
         "void leak_relu_backward(long n, float *dx, const float *y, const float *dy)\n"
         "{\n    for (long i = 0; i < n; i++)\n"
         "        dx[i] += y[i] > 0.0f ? dy[i] : 0.0f;\n}\n"},
        {"6.4", "stages/06_autograd/leak_walk.c",
         "#include \"tape.h\"\nint leak_count(const struct tape *t)\n{\n    int k = 0;\n"
         "    for (const struct tape_node *n = t->last; n; n = n->prev)\n        k++;\n"
         "    return k;\n}\n"},
        {"7.1", "stages/07_mlp/leak_dense.c",
         "static int dense_backward(struct tape *tp, struct tape_node *nd)\n{\n"
         "    struct tensor *bb = nd->in[2], *o = nd->out;\n"
         "    int rows = o->shape[0], cols = o->shape[1];\n"
         "    if (op_matmul_backward(tp, nd) != 0)\n        return -1;\n"
         "    if (bb->requires_grad) {\n        float *g = tape_grad(tp, bb);\n"
         "        if (!g)\n            return -1;\n"
         "        const struct tape_config *cf = tape_config(tp);\n"
         "        for (int r = 0; r < rows; r++)\n            if (cf->plain_bias)\n"
         "                for (int c = 0; c < cols; c++)\n"
         "                    g[c] += o->grad[(long)r * cols + c];\n"
         "            else\n"
         "                vec_kernels(cf->isa)->add_to(cols, g, o->grad + (long)r * cols);\n"
         "    }\n    return 0;\n}\n"},
        {"8.1", "stages/08_conv/leak_rows.c",
         "int leak_row(int r, int stride, int u, int pad)\n{\n"
         "    int iy = r * stride + u - pad;\n    return iy;\n}\n"},
        {"8.3", "common/conv/leak_note.c",
         "// Each gradient goes back where its maximum came from:\n"
         "//   dx[where[j]] += dy[j]\n"},
    };
    cr_assert_eq(sh("rm -rf $T/kit-leaks && mkdir -p $T/kit-leaks && "
                    "cp -r common stages tests tools plots datasets $T/kit-leaks/"),
                 0);
    for (size_t i = 0; i < sizeof leaks / sizeof leaks[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/kit-leaks/%s", tmp_dir(), leaks[i].path);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f, "%s", path);
        fputs(leaks[i].text, f);
        fclose(f);
    }
    cr_assert_neq(sh("$T/kit-leaks/tools/kit-check.py 06_autograd 07_mlp 08_conv "
                     ">$T/kit-leaks.txt 2>&1"),
                  0, "the leaks went unnoticed");
    const char *out = read_file(tmp_path("kit-leaks.txt"));
    for (size_t i = 0; i < sizeof leaks / sizeof leaks[0]; i++) {
        char task[32];
        snprintf(task, sizeof task, "task %s ", leaks[i].task);
        int found = 0;
        for (const char *line = out; line && *line; line = strchr(line, '\n')) {
            line += *line == '\n';
            const char *end = strchr(line, '\n');
            size_t len = end ? (size_t)(end - line) : strlen(line);
            char *one = strndup(line, len);
            found |= strstr(one, task) && strstr(one, leaks[i].path);
            free(one);
        }
        cr_assert(found, "task %s's leak in %s was not reported:\n%s", leaks[i].task,
                  leaks[i].path, out);
    }
    sh("rm -rf $T/kit-leaks");
}

// The number readers under the flags: a whole number in range or nothing,
// and comma-separated lists of them.
Test(args, numbers_and_lists)
{
    long l = 7;
    int i = 7;
    double d = 7.0;
    cr_assert_eq(args_long("64", 1, 100, &l), 0);
    cr_assert_eq(l, 64);
    cr_assert_eq(args_long("12abc", 1, 100, &l), -1);
    cr_assert_eq(args_long("101", 1, 100, &l), -1);
    cr_assert_eq(args_long(NULL, 1, 100, &l), -1);
    cr_assert_eq(l, 64, "a refused value leaves *out");
    cr_assert_eq(args_int("0", 1, 10, &i), -1);
    cr_assert_eq(args_int("3", 1, 10, &i), 0);
    cr_assert_eq(i, 3);
    cr_assert_eq(args_double("0.001", 0.0, 1.0, &d), 0);
    cr_assert_float_eq(d, 0.001, 1e-15);
    cr_assert_eq(args_double("1e-3x", 0.0, 1.0, &d), -1);
    int v[4];
    cr_assert_eq(args_counts("64,256", 1, 65536, v, 4), 2);
    cr_assert_eq(v[0], 64);
    cr_assert_eq(v[1], 256);
    cr_assert_eq(args_counts("7", 1, 10, v, 4), 1);
    const char *bad[] = {"", "64,", ",64", "64,,256", "0", "1,2,3,4,5", "64x", "99999"};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
        cr_assert_eq(args_counts(bad[b], 1, 65536, v, 4), -1, "\"%s\" was taken", bad[b]);
}

// ---------------------------------------------------------------------------
// The one flag reader of every program (flags.h).

// flags_parse on a command line given as one string, stderr silenced. The
// words stay in a static buffer: a text flag keeps a pointer into argv.
static int parse_line(struct flags *f, const char *line)
{
    static char copy[512];
    char *argv[32];
    int argc = 0;
    snprintf(copy, sizeof copy, "prog %s", line);
    for (char *tok = strtok(copy, " "); tok && argc < 31; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    int rc = flags_parse(f, argc, argv);
    fclose(stderr);
    stderr = saved;
    return rc;
}

struct values {
    int n, quick, gemm, conv;
    double x;
    const char *out;
    struct flag_list gemms, convs, counts;
    enum isa isa;
};

static struct flags table(struct values *v)
{
    *v = (struct values){.n = 3, .x = 0.5, .isa = ISA_COUNT};
    struct flags f = {.about = "a test"};
    flags_add(&f, flag_int("--n", "N", &v->n, 1, 10, "a count"));
    flags_add(&f, flag_double("--x", "X", &v->x, 0, 1, "a number"));
    flags_add(&f, flag_quick(&v->quick));
    flags_add(&f, flag_output("--out", "FILE", &v->out, "a file"));
    flags_add(&f, gemm_backends_flag(&v->gemms));
    flags_add(&f, conv_paths_flag(&v->convs));
    flags_add(&f, flag_counts("--sizes", "N,N", &v->counts, 1, 100, "sizes"));
    struct flag one = gemm_backend_flag(&v->gemm);
    one.name = "--one";
    flags_add(&f, one);
    struct flag conv = conv_path_flag(&v->conv);
    conv.name = "--path";
    flags_add(&f, conv);
    flags_add(&f, flag_isa(&v->isa));
    return f;
}

Test(flags, every_kind_of_value_is_read)
{
    struct values v;
    struct flags f = table(&v);
    cr_assert_eq(parse_line(&f, "--n 7 --x 0.25 --quick --out build/x.csv --gemm naive,auto "
                                "--conv direct,im2col --sizes 4,8,16 --one openblas --path "
                                "direct"),
                 0);
    cr_assert_eq(v.n, 7);
    cr_assert_float_eq(v.x, 0.25, 1e-15);
    cr_assert_eq(v.quick, 1);
    cr_assert_str_eq(v.out, "build/x.csv");
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    cr_assert_eq(v.gemms.n, 2);
    cr_assert_str_eq(all[v.gemms.v[0]].name, "naive");
    cr_assert_str_eq(all[v.gemms.v[1]].name, "auto");
    cr_assert_eq(v.counts.n, 3);
    cr_assert_eq(v.counts.v[2], 16);
    cr_assert_str_eq(all[v.gemm].name, "openblas");
    cr_assert_eq(v.convs.n, 2);
    cr_assert_eq(v.convs.v[0], CONV_DIRECT);
    cr_assert_eq(v.convs.v[1], CONV_IM2COL);
    cr_assert_eq(v.conv, CONV_DIRECT);
    f = table(&v);
    cr_assert_eq(parse_line(&f, "--help"), 1);
}

// Every bad value is refused with 2 before the program does anything, and a
// refused flag leaves the defaults as they were.
Test(flags, bad_values_are_refused_with_2)
{
    const char *bad[] = {
        "--n",           "--n 0",           "--n 11",          "--n 2.5",
        "--n 3x",        "--x 1.5",         "--x nan",         "--nope",
        "--gemm cublas", "--gemm naive,",   "--gemm ,naive",   "--sizes 0",
        "--sizes 4,,8",  "--one cublas",    "--path sideways", "--conv direct,up",
        "--isa sse9",
        "--out /nonexistent-dir/x.csv",     "--out build",     "--out",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct values v;
        struct flags f = table(&v);
        cr_assert_eq(parse_line(&f, bad[i]), 2, "'%s' was not refused", bad[i]);
        cr_assert_eq(v.n, 3, "'%s' changed --n", bad[i]);
    }
}

// A file a program will write is checked before the work starts: run_mlp
// --save into a directory that does not exist must fail at once, not after
// the last epoch.
Test(flags, a_save_into_a_missing_directory_fails_before_training)
{
    struct train_options o;
    train_options_init(&o, 64, 10);
    struct flags f = {0};
    train_flags_add(&f, &o);
    cr_assert_eq(parse_line(&f, "--save /nonexistent-dir/model.ckpt"), 2);
    cr_assert_null(o.save);
    f = (struct flags){0};
    train_flags_add(&f, &o);
    cr_assert_eq(parse_line(&f, "--load /nonexistent-dir/model.ckpt"), 2);
    f = (struct flags){0};
    train_flags_add(&f, &o);
    cr_assert_eq(parse_line(&f, "--save build/model.ckpt --epochs 3 --gemm naive --isa scalar"),
                 0);
    cr_assert_str_eq(o.save, "build/model.ckpt");
    cr_assert_str_eq(train_options_tape(&o).gemm->name, "naive");
    cr_assert_eq(train_options_tape(&o).isa, ISA_SCALAR);
}

// ---------------------------------------------------------------------------
// One ISA switch (cpu.h): isa_force reaches every kernel family at once, and
// an ISA this CPU lacks is refused the same way everywhere, changing nothing.

// The direct convolution on a fresh tape, for the test below.
static void direct_conv_on_a_tape(float *y)
{
    struct tape_config c = tape_config_default();
    c.conv = conv_path_of(CONV_DIRECT);
    struct tape *t = tape_new(&c);
    struct tensor *x = tensor_param(4, (int[]){1, 2, 9, 21});
    struct tensor *w = tensor_param(4, (int[]){3, 2, 3, 3}), *b = tensor_param(1, (int[]){3});
    mat_fill_random(x->data, 1, (int)x->size, (int)x->size, 5);
    mat_fill_random(w->data, 1, (int)w->size, (int)w->size, 6);
    struct tensor *out = op_conv2d(t, x, w, b, 1, 0);
    cr_assert_not_null(out, "%s", tape_error(t));
    memcpy(y, out->data, sizeof(float) * (size_t)out->size);
    tape_free(t);
    tensor_free(x);
    tensor_free(w);
    tensor_free(b);
}

Test(isa, forcing_an_isa_reaches_every_family)
{
    static conv_direct_fn *const direct[ISA_COUNT] = {
        [ISA_SCALAR] = conv_direct_scalar,
#if defined(__x86_64__)
        [ISA_AVX2] = conv_direct_avx2,
        [ISA_AVX512] = conv_direct_avx512,
#endif
    };
    static maxpool_row_fn *const pool[ISA_COUNT] = {
        [ISA_SCALAR] = maxpool_row_scalar,
#if defined(__x86_64__)
        [ISA_AVX2] = maxpool_row_avx2,
        [ISA_AVX512] = maxpool_row_avx512,
#endif
    };
    cr_assert_eq(isa_active(), isa_best(), "unforced, every family runs the widest ISA");
    for (int i = 0; i < ISA_COUNT; i++) {
        enum isa isa = (enum isa)i;
        if (!isa_supported(isa)) {
            enum isa before = isa_active();
            cr_assert_eq(isa_force(isa), -1, "%s forced on a CPU without it", isa_name(isa));
            cr_assert_eq(isa_active(), before, "a refused ISA must change nothing");
            char msg[256];
            isa_unsupported_message(isa, msg, sizeof msg);
            cr_assert(strstr(msg, isa_name(isa)) && strstr(msg, "cannot run"), "%s", msg);
            continue;
        }
        cr_assert_eq(isa_force(isa), 0);
        cr_assert_eq(isa_active(), isa);
        cr_assert_eq(gemm_context_default().kernel.isa, isa, "the GEMM's micro-kernel");
        cr_assert_eq(optim_defaults(OPTIM_ADAM, 1e-3f, 0.0f).isa, isa, "the optimizers");
        struct tape *t = tape_new(NULL);
        enum isa ops = tape_config(t)->isa;
        tape_free(t);
        cr_assert_eq(ops, isa, "a new tape's own loops");
        cr_assert_eq(vec_kernels(ops)->isa, isa, "the elementwise loops");
        cr_assert(conv_direct_kernel(ops) == direct[isa], "the direct convolution");
        cr_assert(maxpool_row_kernel(ops) == pool[isa], "the pooling row");
        // And the ops use it: the direct convolution on a tape gives the
        // bits of this ISA's kernel (the vector ones fuse multiply and add,
        // so they differ from the scalar one in the last bits).
        float got[3 * 7 * 19], want[3 * 7 * 19];
        direct_conv_on_a_tape(got);
        float x[2 * 9 * 21], w[3 * 2 * 9];
        mat_fill_random(x, 1, 2 * 9 * 21, 2 * 9 * 21, 5);
        mat_fill_random(w, 1, 3 * 2 * 9, 3 * 2 * 9, 6);
        memset(want, 0, sizeof want);
        direct[isa](x, 2, 9, 21, w, 3, 0, want);
        cr_assert(memcmp(got, want, sizeof want) == 0, "op_conv2d on %s", isa_name(isa));
        // matmul_simd_for (chapter 3), asked for the program's ISA, follows
        // the switch too.
        float a[5 * 7], bm[7 * 9], c1[5 * 9], c2[5 * 9];
        mat_fill_random(a, 5, 7, 7, 1);
        mat_fill_random(bm, 7, 9, 9, 2);
        matmul_simd_for(isa_active())(5, 9, 7, a, 7, bm, 9, c1, 9);
        const struct {
            enum isa isa;
            void (*fn)(int, int, int, const float *, int, const float *, int, float *, int);
        } simd[] = {{ISA_SCALAR, matmul_simd_scalar},
#if defined(__x86_64__)
                    {ISA_AVX2, matmul_simd_avx2},
                    {ISA_AVX512, matmul_simd_avx512},
#endif
        };
        for (size_t k = 0; k < sizeof simd / sizeof simd[0]; k++)
            if (simd[k].isa == isa) {
                simd[k].fn(5, 9, 7, a, 7, bm, 9, c2, 9);
                cr_assert(memcmp(c1, c2, sizeof c1) == 0, "matmul_simd on %s", isa_name(isa));
            }
    }
}

// A program given --isa for an ISA this CPU lacks stops with the same
// message, whatever the program.
Test(isa, a_flag_naming_an_isa_the_cpu_lacks_is_refused)
{
    for (int i = 0; i < ISA_COUNT; i++) {
        if (isa_supported((enum isa)i))
            continue;
        struct values v;
        struct flags f = table(&v);
        char line[64];
        snprintf(line, sizeof line, "--isa %s", isa_name((enum isa)i));
        cr_assert_eq(parse_line(&f, line), 2, "%s", line);
        cr_assert_eq(isa_active(), isa_best());
    }
}
