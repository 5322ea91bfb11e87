// Stage 04: packing and the five loops (common/gemm/gemm_pack.c, gemm_packed.c,
// gemm_kernel_*.c), against the double-precision reference.
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "bench.h"
#include "gemm.h"
#include "gemm_check.h"
#include "mat.h"
#include "staircase.h"

// op(X)[r][c] of a row-major X stored with leading dimension ld.
static float op_at(enum gemm_trans t, const float *X, int ld, int r, int c)
{
    return t ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

// pack_b_panel: micro-panel s holds columns s·nr… of op(B), row by row,
// zero past the panel's last column.
Test(task_4_1, pack_b_layout_with_zero_padding)
{
    const int nr = 32, ld = 80;
    float *B = mat_alloc(80, ld), *dst = mat_alloc(80 * 96 / 64 + 8, 64);
    mat_fill_random(B, 80, ld, ld, 21);
    for (int t = 0; t < 2; t++)
        for (int kc = 1; kc <= 70; kc += 23)
            for (int nc = 1; nc <= 75; nc += 7) {
                int panels = (nc + nr - 1) / nr;
                mat_fill(dst, 1, panels * nr * kc, panels * nr * kc, NAN);
                pack_b_panel(transposes[t], kc, nc, B, ld, nr, dst);
                for (int s = 0; s < panels; s++)
                    for (int p = 0; p < kc; p++)
                        for (int j = 0; j < nr; j++) {
                            int col = s * nr + j;
                            float want = col < nc ? op_at(transposes[t], B, ld, p, col) : 0.0f;
                            float got = dst[(size_t)s * kc * nr + (size_t)p * nr + j];
                            cr_assert(got == want,
                                      "tb=%d kc=%d nc=%d: panel %d row %d col %d is %g, want %g",
                                      t, kc, nc, s, p, j, got, want);
                        }
            }
    mat_free(B);
    mat_free(dst);
}

// pack_a_panel: sliver s holds rows s·mr… of op(A), column by column, zero
// past the block's last row.
Test(task_4_2, pack_a_layout_with_zero_padding)
{
    const int mr = 14, ld = 80;
    float *A = mat_alloc(80, ld), *dst = mat_alloc(80 * 84 / 64 + 8, 64);
    mat_fill_random(A, 80, ld, ld, 22);
    for (int t = 0; t < 2; t++)
        for (int mc = 1; mc <= 75; mc += 6)
            for (int kc = 1; kc <= 70; kc += 23) {
                int slivers = (mc + mr - 1) / mr;
                mat_fill(dst, 1, slivers * mr * kc, slivers * mr * kc, NAN);
                pack_a_panel(transposes[t], mc, kc, A, ld, mr, dst);
                for (int s = 0; s < slivers; s++)
                    for (int p = 0; p < kc; p++)
                        for (int i = 0; i < mr; i++) {
                            int row = s * mr + i;
                            float want = row < mc ? op_at(transposes[t], A, ld, row, p) : 0.0f;
                            float got = dst[(size_t)s * kc * mr + (size_t)p * mr + i];
                            cr_assert(got == want,
                                      "ta=%d mc=%d kc=%d: sliver %d col %d row %d is %g, want %g",
                                      t, mc, kc, s, p, i, got, want);
                        }
            }
    mat_free(A);
    mat_free(dst);
}

// The scalar micro-kernel alone, on packed operands built here.
Test(task_4_4, scalar_microkernel)
{
    enum { MR = GEMM_SCALAR_MR, NR = GEMM_SCALAR_NR, KC = 37, LDC = NR + 3 };
    float a[MR * KC], b[KC * NR], C0[MR * LDC], C[MR * LDC];
    mat_fill_random(a, 1, MR * KC, MR * KC, 31);
    mat_fill_random(b, 1, KC * NR, KC * NR, 32);
    mat_fill_random(C0, MR, LDC, LDC, 33);
    for (int m = 1; m <= MR; m++)
        for (int n = 1; n <= NR; n++)
            for (int combo = 0; combo < 6; combo++) {
                float alpha = alphas[combo % 2], beta = betas[combo / 2];
                memcpy(C, C0, sizeof C);
                gemm_kernel_scalar(m, n, KC, a, b, C, LDC, alpha, beta);
                for (int i = 0; i < MR; i++)
                    for (int j = 0; j < LDC; j++) {
                        if (i >= m || j >= n) {
                            cr_assert_eq(C[i * LDC + j], C0[i * LDC + j],
                                         "m=%d n=%d: wrote outside the block at [%d][%d]", m, n,
                                         i, j);
                            continue;
                        }
                        double sum = 0.0, mag = 0.0;
                        for (int p = 0; p < KC; p++) {
                            double ab = (double)a[p * MR + i] * b[p * NR + j];
                            sum += ab;
                            mag += fabs(ab);
                        }
                        double c0 = C0[i * LDC + j];
                        double want = alpha * sum + beta * c0;
                        double bound =
                            mat_error_bound(KC, fabs(alpha) * mag + fabs(beta * c0));
                        cr_assert(fabs(C[i * LDC + j] - want) <= bound,
                                  "m=%d n=%d alpha=%g beta=%g: C[%d][%d] = %g, want %g", m, n,
                                  alpha, beta, i, j, C[i * LDC + j], want);
                    }
            }
}

Test(task_4_3, packed_every_shape_to_40, .timeout = 900)
{
    small_grid(gemm_packed_ctx, "gemm_packed");
}

Test(task_4_3, packed_random_shapes_to_600, .timeout = 900)
{
    random_shapes(gemm_packed_ctx, "gemm_packed", 60, 600, 0);
    random_shapes(gemm_packed_ctx, "gemm_packed", 30, 300, 1);
}

Test(stage_04, an_isa_the_cpu_lacks_is_refused)
{
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        enum isa before = isa_active();
        int rc = isa_force(isas[s]);
        if (rc != 0)
            cr_assert_eq(isa_active(), before, "a refused ISA must change nothing");
    }
    cr_assert_eq(isa_force(ISA_SCALAR), 0, "scalar runs everywhere");
    isa_force(isa_best());
}


Test(stage_04, a_blocking_that_does_not_fit_the_kernel_is_refused)
{
    struct gemm_context ctx = gemm_context_for(isa_best());
    struct gemm_blocking good = ctx.kernel.blocking;
    struct gemm_blocking bad = good;
    bad.mr = good.mr + 1;
    cr_assert_eq(gemm_context_set_blocking(&ctx, bad), -1);
    bad = good;
    bad.kc = 0;
    cr_assert_eq(gemm_context_set_blocking(&ctx, bad), -1);
    bad = good;
    bad.mc = good.mr - 1;
    cr_assert_eq(gemm_context_set_blocking(&ctx, bad), -1);
    struct gemm_blocking now = ctx.kernel.blocking;
    cr_assert(now.mc == good.mc && now.kc == good.kc && now.nc == good.nc);
}

Test(stage_04, even_blocks_cover_the_size_in_as_many_blocks)
{
    cr_assert_eq(gemm_even_block(4096, 1022, 14), 826);
    cr_assert_eq(gemm_even_block(2044, 1022, 14), 1022);
    cr_assert_eq(gemm_even_block(0, 1022, 14), 1022);
    for (int size = 1; size <= 3000; size += 7)
        for (int block = 14; block <= 1022; block += 14 * 9) {
            int even = gemm_even_block(size, block, 14);
            cr_assert(even <= block && even % 14 == 0, "size %d block %d: %d", size, block,
                      even);
            cr_assert_eq((size + even - 1) / even, (size + block - 1) / block,
                         "size %d block %d: %d", size, block, even);
        }
}

// The staircase of chapter 4 (stages/04_packing/staircase.c): each step
// against the double-precision reference, with each ISA's blocking (the
// library's, and small blocks so that every loop of the five has edges), at
// every m, n, k in {1, 3, 7, 17, 65, 127} and two larger non-square shapes.
typedef void stair_step(const struct gemm_context *ctx, int m, int n, int k, const float *A,
                        int lda, const float *B, int ldb, float *C, int ldc);
static stair_step *step_now;
static struct gemm_context step_context;

// The step in step_context, as a kernel the harness's check takes.
static void run_step(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                     float *C, int ldc)
{
    step_now(&step_context, m, n, k, A, lda, B, ldb, C, ldc);
}

static void check_step(stair_step *step, const char *name)
{
    static const int sizes[] = {1, 3, 7, 17, 65, 127};
    enum { NSIZES = sizeof sizes / sizeof sizes[0] };
    bench_matmul_fn fn = run_step;
    step_now = step;
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        if (!isa_supported(isas[s]))
            continue; // this CPU cannot run it
        struct gemm_blocking library = gemm_context_for(isas[s]).kernel.blocking, small = library;
        small.mc = 2 * library.mr;
        small.kc = 5;
        small.nc = 3 * library.nr;
        for (int b = 0; b < 2; b++) {
            step_context = gemm_context_for(isas[s]);
            if (b == 1)
                cr_assert_eq(gemm_context_set_blocking(&step_context, small), 0);
            int pad = 0;
            for (int x = 0; x < NSIZES; x++)
                for (int y = 0; y < NSIZES; y++)
                    for (int z = 0; z < NSIZES; z++) {
                        int m = sizes[x], n = sizes[y], k = sizes[z];
                        struct mat_check c = bench_check_kernel(fn, m, n, k, pad++ % 4);
                        cr_assert(c.ratio >= 0.0 && c.ratio <= 1.0,
                                  "%s, %s, %s blocks, %dx%dx%d: C[%d][%d] = %g, want %g "
                                  "(%.3g × the error bound)",
                                  name, isa_name(isas[s]), b ? "small" : "library", m, n, k,
                                  c.i, c.j, c.got, c.want, c.ratio);
                    }
            static const int big[][3] = {{301, 129, 517}, {64, 700, 33}};
            for (int i = 0; i < 2; i++) {
                struct mat_check c = bench_check_kernel(fn, big[i][0], big[i][1], big[i][2], 1);
                cr_assert(c.ratio >= 0.0 && c.ratio <= 1.0,
                          "%s, %s, %dx%dx%d: C[%d][%d] = %g, want %g (%.3g × the bound)", name,
                          isa_name(isas[s]), big[i][0], big[i][1], big[i][2], c.i, c.j, c.got,
                          c.want, c.ratio);
            }
        }
    }
    isa_force(isa_best());
}

Test(stage_04, staircase_step1_blocked, .timeout = 900)
{
    check_step(stair_blocked, "step 1 (blocked, not packed)");
}

Test(task_4_3, staircase_step2_packed_loops, .timeout = 900)
{
    check_step(stair_packed_loops, "step 2 (packed, plain loop)");
}

Test(task_4_3, staircase_step3_simd_no_prefetch, .timeout = 900)
{
    check_step(stair_simd_no_prefetch, "step 3 (SIMD kernel, no prefetch of C)");
}

Test(stage_04, a_null_microkernel_is_refused)
{
    struct gemm_context ctx = gemm_context_for(isa_best());
    gemm_microkernel *before = ctx.kernel.run;
    cr_assert_eq(gemm_context_set_microkernel(&ctx, NULL), -1);
    cr_assert(ctx.kernel.run == before, "a refused kernel must change nothing");
}

#if defined(__x86_64__)
// Without the prefetch of C the AVX-512 kernel does the same arithmetic in
// the same order: the same bits, for kc on both sides of the prefetch point.
Test(stage_04, avx512_kernel_without_prefetch_gives_the_same_bits)
{
    if (!isa_supported(ISA_AVX512))
        cr_skip_test("this CPU (%s) cannot run avx512 code", cpu_model());
    enum { MR = GEMM_AVX512_MR, NR = GEMM_AVX512_NR, KMAX = 200, LDC = NR + 5 };
    static const int kcs[] = {1, 63, 64, 65, 200};
    float *a = gemm_alloc((long)MR * KMAX), *b = gemm_alloc((long)KMAX * NR);
    float C0[MR * LDC], C1[MR * LDC], C2[MR * LDC];
    cr_assert(a && b, "out of memory");
    mat_fill_random(a, 1, MR * KMAX, MR * KMAX, 41);
    mat_fill_random(b, 1, KMAX * NR, KMAX * NR, 42);
    mat_fill_random(C0, MR, LDC, LDC, 43);
    for (size_t q = 0; q < sizeof kcs / sizeof kcs[0]; q++)
        for (int m = 1; m <= MR; m += 13) // 1 and 14
            for (int n = 1; n <= NR; n += 15) // 1, 16 and 31
                for (int combo = 0; combo < 6; combo++) {
                    float alpha = alphas[combo % 2], beta = betas[combo / 2];
                    memcpy(C1, C0, sizeof C0);
                    memcpy(C2, C0, sizeof C0);
                    gemm_kernel_avx512(m, n, kcs[q], a, b, C1, LDC, alpha, beta);
                    gemm_kernel_avx512_no_prefetch_c(m, n, kcs[q], a, b, C2, LDC, alpha, beta);
                    cr_assert(memcmp(C1, C2, sizeof C1) == 0, "m=%d n=%d kc=%d: bits differ", m,
                              n, kcs[q]);
                }
    gemm_free(a);
    gemm_free(b);
}

// A sliver of few rows goes to a kernel of fewer accumulators (8 of
// AVX-512's 14 rows, 4 of AVX2's 6), which must give each row the bits the
// full kernel gives it: every row's sum is its own, so the full kernel run
// on all mr rows of the same sliver is the reference. Rows past m are left
// as they were.
static void short_sliver_same_bits(gemm_microkernel *kernel, int mr, int nr, int rows)
{
    enum { KMAX = 200 };
    static const int kcs[] = {1, 7, 64, 65, 200};
    int ldc = nr + 5;
    float *a = gemm_alloc((long)mr * KMAX), *b = gemm_alloc((long)KMAX * nr);
    float *C0 = malloc(sizeof(float) * mr * ldc), *C1 = malloc(sizeof(float) * mr * ldc),
          *C2 = malloc(sizeof(float) * mr * ldc);
    cr_assert(a && b && C0 && C1 && C2, "out of memory");
    mat_fill_random(a, 1, mr * KMAX, mr * KMAX, 51);
    mat_fill_random(b, 1, KMAX * nr, KMAX * nr, 52);
    mat_fill_random(C0, mr, ldc, ldc, 53);
    int ns[] = {1, nr / 2 + 1, nr};
    for (size_t q = 0; q < sizeof kcs / sizeof kcs[0]; q++)
        for (int m = 1; m <= rows + 1; m++)
            for (int t = 0; t < 3; t++)
                for (int combo = 0; combo < 6; combo++) {
                    int n = ns[t];
                    float alpha = alphas[combo % 2], beta = betas[combo / 2];
                    memcpy(C1, C0, sizeof(float) * mr * ldc);
                    memcpy(C2, C0, sizeof(float) * mr * ldc);
                    kernel(m, n, kcs[q], a, b, C1, ldc, alpha, beta);
                    kernel(mr, n, kcs[q], a, b, C2, ldc, alpha, beta);
                    for (int i = 0; i < mr; i++) {
                        const float *want = i < m ? C2 + i * ldc : C0 + i * ldc;
                        cr_assert(memcmp(C1 + i * ldc, want, sizeof(float) * ldc) == 0,
                                  "m=%d n=%d kc=%d alpha=%g beta=%g: row %d %s", m, n, kcs[q],
                                  alpha, beta, i,
                                  i < m ? "differs from the full kernel's" : "was written");
                    }
                }
    gemm_free(a);
    gemm_free(b);
    free(C0);
    free(C1);
    free(C2);
}

Test(stage_04, short_slivers_give_the_full_kernels_bits)
{
    if (isa_supported(ISA_AVX2))
        short_sliver_same_bits(gemm_kernel_avx2, GEMM_AVX2_MR, GEMM_AVX2_NR, 4);
    else
        cr_log_info("avx2 skipped: this CPU (%s) cannot run it", cpu_model());
    if (isa_supported(ISA_AVX512))
        short_sliver_same_bits(gemm_kernel_avx512, GEMM_AVX512_MR, GEMM_AVX512_NR, 8);
    else
        cr_log_info("avx512 skipped: this CPU (%s) cannot run it", cpu_model());
}
#endif
