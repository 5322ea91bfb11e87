// gemm_parallel.c: the five loops shared among OpenMP threads.
//
// Which loop to split. The pc loop (over k) is never split: two threads
// would each hold a partial sum of the same C element, and adding those
// partial sums would make the result depend on the thread count.
// The jc loop usually has a single iteration (nc is large), so there is
// nothing to share there. That leaves the ic and jr loops:
//   - ic (rows): every thread packs its own mc×kc block of A, which
//     streams through its own core's L2, and reads the kc×nc panel of B,
//     which all threads pack together and share through L3. One barrier
//     per kc step.
//   - jr (columns): all threads share one packed block of A and each takes
//     a range of B micro-panels. Needs a barrier per block of A too, but
//     balances better when m is small (few mr-row slivers to hand out).
// Rows are the default; columns are used when they divide more evenly.
#include "gemm.h"

#include <stddef.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

// listing: balance
// Fraction of the time T threads are busy when `tiles` equal pieces of
// work are dealt out in contiguous ranges.
static double balance(int tiles, int T)
{
    int most = (tiles + T - 1) / T;
    return (double)tiles / ((double)T * most);
}
// end listing

void gemm_parallel(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                   float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc)
{
    int threads = 1;
#if defined(_OPENMP)
    threads = omp_get_max_threads();
#endif
    struct gemm_context ctx = gemm_context_default();
    gemm_parallel_threads(&ctx, threads, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

// listing: parallel_loops
void gemm_parallel_threads(const struct gemm_context *ctx, int threads, enum gemm_trans ta,
                           enum gemm_trans tb, int m, int n, int k, float alpha, const float *A,
                           int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
#if !defined(_OPENMP)
    threads = 1;
#endif
    if (threads < 1)
        threads = 1;
    if (gemm_no_products(m, n, k, alpha, beta, C, ldc))
        return;
    const struct gemm_kernel *kernel = &ctx->kernel;
    isa_count_use(kernel->isa);
    struct gemm_blocking bl = kernel->blocking;
    int mr = bl.mr, nr = bl.nr;
    int mc = min_int(bl.mc, m), nc = min_int(bl.nc, n), kc = min_int(bl.kc, k);

    int m_tiles = (m + mr - 1) / mr, n_tiles = (nc + nr - 1) / nr;
    int split_rows = balance(m_tiles, threads) + 0.005 >= balance(n_tiles, threads);

    // One shared panel of B; one block of A per thread for a row split, one
    // shared block for a column split. The blocks are rounded up to 16
    // floats so that each thread's block starts 64-byte aligned.
    long a_size = ((long)(mc + mr - 1) / mr * mr * kc + 15) / 16 * 16;
    float *b_packed = gemm_buffer(GEMM_BUFFER_B, (long)(nc + nr - 1) / nr * nr * kc);
    float *a_packed = gemm_buffer(GEMM_BUFFER_A, split_rows ? a_size * threads : a_size);
    if (b_packed == NULL || a_packed == NULL) {
        // Out of memory: the plain loops need no buffers.
        gemm_plain_loops(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }

    // BEGIN SOLUTION task 5.1
    // earlier kits: gemm_packed(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
#pragma omp parallel num_threads(threads)
    {
        int t = 0, T = 1;
#if defined(_OPENMP)
        t = omp_get_thread_num();
        T = omp_get_num_threads();
#endif
        float *a_mine = split_rows ? a_packed + a_size * t : a_packed;
        for (int jc = 0; jc < n; jc += nc) {
            int n_now = min_int(nc, n - jc);
            int panels = (n_now + nr - 1) / nr;
            for (int pc = 0; pc < k; pc += kc) {
                int k_now = min_int(kc, k - pc);
                float beta_now = pc == 0 ? beta : 1.0f;

                // All threads pack the kc×nc panel of B, one micro-panel each
                // in turn; the loop ends with a barrier, so it is complete.
#pragma omp for schedule(static)
                for (int s = 0; s < panels; s++)
                    pack_b_micropanel(tb, k_now, min_int(nr, n_now - s * nr),
                                      gemm_b_at(tb, B, ldb, pc, jc + s * nr), ldb,
                                      nr, b_packed + (long)s * nr * k_now);

                if (split_rows) {
                    // This thread's rows: a contiguous range of whole slivers.
                    int lo = m_tiles * t / T * mr;
                    int hi = min_int(m, m_tiles * (t + 1) / T * mr);
                    int mc_even = gemm_even_block(hi - lo, mc, mr);
                    for (int ic = lo; ic < hi; ic += mc_even) {
                        int m_now = min_int(mc_even, hi - ic);
                        pack_a_panel(ta, m_now, k_now, gemm_a_at(ta, A, lda, ic, pc),
                                     lda, mr, a_mine);
                        gemm_macro_kernel(kernel, m_now, n_now, k_now, a_mine,
                                          b_packed, C + (long)ic * ldc + jc, ldc,
                                          alpha, beta_now);
                    }
                } else {
                    // This thread's columns: a contiguous range of micro-panels.
                    int s_lo = panels * t / T, s_hi = panels * (t + 1) / T;
                    int j_lo = s_lo * nr, j_hi = min_int(n_now, s_hi * nr);
                    int mc_even = gemm_even_block(m, mc, mr);
                    for (int ic = 0; ic < m; ic += mc_even) {
                        int m_now = min_int(mc_even, m - ic);
                        int slivers = (m_now + mr - 1) / mr;
#pragma omp for schedule(static)
                        for (int s = 0; s < slivers; s++)
                            pack_a_panel(ta, min_int(mr, m_now - s * mr), k_now,
                                         gemm_a_at(ta, A, lda, ic + s * mr, pc), lda,
                                         mr, a_mine + (long)s * mr * k_now);
                        if (j_lo < j_hi)
                            gemm_macro_kernel(kernel, m_now, j_hi - j_lo, k_now,
                                              a_mine, b_packed + (long)j_lo * k_now,
                                              C + (long)ic * ldc + jc + j_lo, ldc,
                                              alpha, beta_now);
                        // The shared block of A is overwritten next time round.
#pragma omp barrier
                    }
                }
                // The shared panel of B is overwritten next time round.
#pragma omp barrier
            }
        }
    }
    // END SOLUTION
}
// end listing
