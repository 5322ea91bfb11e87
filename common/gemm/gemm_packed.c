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

void gemm_scale(int m, int n, float beta, float *C, int ldc)
{
    for (int i = 0; i < m; i++) {
        float *c = C + (long)i * ldc;
        for (int j = 0; j < n; j++)
            c[j] = beta == 0.0f ? 0.0f : beta * c[j];
    }
}

const float *gemm_a_at(enum gemm_trans ta, const float *A, int lda, int i, int p)
{
    // op(A)[i][p] is A[i][p], or A[p][i] when A is stored transposed.
    return ta == GEMM_NOTRANS ? A + (long)i * lda + p : A + (long)p * lda + i;
}

const float *gemm_b_at(enum gemm_trans tb, const float *B, int ldb, int p, int j)
{
    return tb == GEMM_NOTRANS ? B + (long)p * ldb + j : B + (long)j * ldb + p;
}

int gemm_even_block(int size, int block, int unit)
{
    // 4096 rows in blocks of 1022 would leave a last block of 8 rows, which
    // costs a whole pass over the panel of B for one sliver of work. Five
    // blocks of 826 (whole slivers) do the same work in even pieces.
    if (size <= 0)
        return block;
    int blocks = (size + block - 1) / block;
    int even = (size + blocks - 1) / blocks;
    even = (even + unit - 1) / unit * unit;
    return even < block ? even : block;
}

// listing: macro_kernel
void gemm_macro_kernel(const struct gemm_kernel *kernel, int mc, int nc,
                       int kc, const float *a_packed, const float *b_packed,
                       float *C, int ldc, float alpha, float beta)
{
    // C is the mc×nc block to update; a_packed holds ceil(mc/mr) slivers of
    // mr×kc, b_packed ceil(nc/nr) micro-panels of kc×nr.
    int mr = kernel->blocking.mr, nr = kernel->blocking.nr;
    for (int jr = 0; jr < nc; jr += nr) {
        for (int ir = 0; ir < mc; ir += mr) {
            kernel->run(min_int(mr, mc - ir), min_int(nr, nc - jr), kc,
                        a_packed + (long)ir * kc, b_packed + (long)jr * kc,
                        C + (long)ir * ldc + jr, ldc, alpha, beta);
        }
    }
}
// end listing

// listing: five_loops
void gemm_packed(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                 float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0 || alpha == 0.0f) {
        gemm_scale(m, n, beta, C, ldc);
        return;
    }
    const struct gemm_kernel *kernel = gemm_current_kernel();
    struct gemm_blocking bl = kernel->blocking;
    int mc = min_int(bl.mc, m), nc = min_int(bl.nc, n), kc = min_int(bl.kc, k);
    // Buffers for one packed block of A and one packed panel of B, rounded up
    // to whole slivers and micro-panels (the padding is zero-filled).
    float *a_packed = gemm_buffer(GEMM_BUFFER_A, (long)(mc + bl.mr - 1) / bl.mr * bl.mr * kc);
    float *b_packed = gemm_buffer(GEMM_BUFFER_B, (long)(nc + bl.nr - 1) / bl.nr * bl.nr * kc);
    if (a_packed == NULL || b_packed == NULL) {
        // Out of memory: the unpacked path needs no buffers.
        gemm_small(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
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
