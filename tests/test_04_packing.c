// Stage 04: packing and the five loops (common/gemm/gemm_pack.c, gemm_packed.c,
// gemm_kernel_*.c), against the double-precision reference.
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "gemm.h"
#include "gemm_check.h"
#include "mat.h"

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
    small_grid(gemm_packed, "gemm_packed");
}

Test(task_4_3, packed_random_shapes_to_600, .timeout = 900)
{
    random_shapes(gemm_packed, "gemm_packed", 60, 600, 0);
    random_shapes(gemm_packed, "gemm_packed", 30, 300, 1);
}

Test(stage_04, an_isa_the_cpu_lacks_is_refused)
{
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        enum isa before = gemm_get_isa();
        int rc = gemm_set_isa(isas[s]);
        if (rc != 0)
            cr_assert_eq(gemm_get_isa(), before, "a refused ISA must change nothing");
    }
    cr_assert_eq(gemm_set_isa(ISA_SCALAR), 0, "scalar runs everywhere");
    gemm_set_best_isa();
}


Test(stage_04, a_blocking_that_does_not_fit_the_kernel_is_refused)
{
    gemm_set_best_isa();
    struct gemm_blocking good = gemm_current_blocking();
    struct gemm_blocking bad = good;
    bad.mr = good.mr + 1;
    cr_assert_eq(gemm_set_blocking(bad), -1);
    bad = good;
    bad.kc = 0;
    cr_assert_eq(gemm_set_blocking(bad), -1);
    bad = good;
    bad.mc = good.mr - 1;
    cr_assert_eq(gemm_set_blocking(bad), -1);
    struct gemm_blocking now = gemm_current_blocking();
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
