// gemm_packed.c: the Goto/BLIS five loops on one thread.
//
//   for jc in steps of nc:          op(B) panel kc×nc  → packed, lives in L3
//     for pc in steps of kc:
//       pack op(B)[pc:pc+kc, jc:jc+nc]
//       for ic in steps of mc:      op(A) block mc×kc  → packed, lives in L3
//         pack op(A)[ic:ic+mc, pc:pc+kc]
//         for jr in steps of nr:    B micro-panel kc×nr → stays in L2
//           for ir in steps of mr:  A sliver mr×kc streams from L3
// (The textbook keeps the block of A in L2 and the micro-panel in L1, with
// a shorter kc; chapter 4 measures why this machine prefers a long one.)
//             micro-kernel: C[ir:ir+mr, jr:jr+nr] (+)= A sliver · B micro-panel
#include "gemm.h"

#include <stddef.h>

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

// listing: five_loops
void gemm_packed_ctx(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                     int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc)
{
    if (gemm_no_products(m, n, k, alpha, beta, C, ldc))
        return;
    const struct gemm_kernel *kernel = &ctx->kernel;
    isa_count_use(kernel->isa);
    struct gemm_blocking bl = kernel->blocking;
    int mc = min_int(bl.mc, m), nc = min_int(bl.nc, n), kc = min_int(bl.kc, k);
    // Buffers for one packed block of A and one packed panel of B, rounded up
    // to whole slivers and micro-panels (the padding is zero-filled).
    float *a_packed = gemm_buffer(GEMM_BUFFER_A, (long)(mc + bl.mr - 1) / bl.mr * bl.mr * kc);
    float *b_packed = gemm_buffer(GEMM_BUFFER_B, (long)(nc + bl.nr - 1) / bl.nr * bl.nr * kc);
    if (a_packed == NULL || b_packed == NULL) {
        // Out of memory: the plain loops need no buffers.
        gemm_plain_loops(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }

    // BEGIN SOLUTION task 4.3
    int mc_even = gemm_even_block(m, mc, bl.mr);
    for (int jc = 0; jc < n; jc += nc) {
        int n_now = min_int(nc, n - jc);
        for (int pc = 0; pc < k; pc += kc) {
            int k_now = min_int(kc, k - pc);
            pack_b_panel(tb, k_now, n_now, gemm_b_at(tb, B, ldb, pc, jc), ldb,
                         bl.nr, b_packed);
            // beta applies once, on the first pass over k; later passes add.
            float beta_now = pc == 0 ? beta : 1.0f;
            for (int ic = 0; ic < m; ic += mc_even) {
                int m_now = min_int(mc_even, m - ic);
                pack_a_panel(ta, m_now, k_now, gemm_a_at(ta, A, lda, ic, pc),
                             lda, bl.mr, a_packed);
                gemm_macro_kernel(kernel, m_now, n_now, k_now, a_packed,
                                  b_packed, C + (long)ic * ldc + jc, ldc,
                                  alpha, beta_now);
            }
        }
    }
    // END SOLUTION
}
// end listing

void gemm_packed(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    gemm_packed_ctx(&ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
