// gemm_small.c: path for small or skinny problems. Packing op(A) costs a
// pass over A, repaid only when each packed element then serves many columns
// of C; when n is small it does not. Here the micro-kernel reads A where it
// lies, and op(B) too unless it is transposed (then it is packed whole).
#include "gemm.h"

#include <stdatomic.h>
#include <stddef.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

// listing: small_path
// Rows i … i + mr − 1 of C, all columns, with the direct micro-kernel.
static void direct_row_block(const struct gemm_kernel *kernel, int i, int m, int n, int k,
                             const float *A, long rs_a, long cs_a, const float *b_use,
                             long b_ld, long b_step, float alpha, float beta, float *C,
                             int ldc, int stream)
{
    int mr = kernel->blocking.mr, nr = kernel->blocking.nr;
    for (int j = 0; j < n; j += nr)
        kernel->run_direct(min_int(mr, m - i), min_int(nr, n - j), k, A + i * rs_a, rs_a,
                           cs_a, b_use + j * b_step, b_ld, C + (long)i * ldc + j, ldc, alpha,
                           beta, stream);
}

void gemm_small_threads(const struct gemm_context *ctx, int threads, enum gemm_trans ta,
                        enum gemm_trans tb, int m, int n, int k, float alpha, const float *A,
                        int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (gemm_no_products(m, n, k, alpha, beta, C, ldc))
        return;
    const struct gemm_kernel *kernel = &ctx->kernel;
    isa_count_use(kernel->isa);
    int mr = kernel->blocking.mr, nr = kernel->blocking.nr;
    // A non-transposed B is read in place (its rows are what a packed
    // micro-panel holds); a transposed one is packed whole, as nr-column
    // micro-panels.
    const float *b_use = B;
    long b_ld = ldb, b_step = 1; // micro-panel j starts at b_use + j·b_step
    if (kernel->run_direct == NULL) {
        b_use = NULL;
    } else if (tb == GEMM_TRANS) {
        float *b_packed = gemm_buffer(GEMM_BUFFER_B, (long)(n + nr - 1) / nr * nr * k);
        if (b_packed != NULL)
            pack_b_panel(tb, k, n, B, ldb, nr, b_packed);
        b_use = b_packed;
        b_ld = nr;
        b_step = k;
    }
    if (b_use == NULL) {
        gemm_plain_loops(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    // A C this large (beyond any core's L2) will not be in cache for whoever
    // reads it next, so writing it with non-temporal stores costs nothing
    // and saves reading its old contents in first (measured: 3× faster for
    // 173056×32×9).
    int stream = (double)m * n * sizeof(float) > 8.0 * 1024 * 1024;

    // op(A)[i][p] = A[i*rs_a + p*cs_a].
    long rs_a = ta == GEMM_NOTRANS ? lda : 1;
    long cs_a = ta == GEMM_NOTRANS ? 1 : lda;
    int tiles = (m + mr - 1) / mr;
    // Threads take whole mr-row blocks of C; each sweeps all of B (which
    // stays in its L2) while its rows of A stay in L1. One thread skips
    // OpenMP altogether: entering a parallel region, even for one thread,
    // costs about half a microsecond, 7% of a 128×10×256 multiply.
    if (threads > 1) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int t = 0; t < tiles; t++)
            direct_row_block(kernel, t * mr, m, n, k, A, rs_a, cs_a, b_use, b_ld,
                             b_step, alpha, beta, C, ldc, stream);
    } else {
        for (int t = 0; t < tiles; t++)
            direct_row_block(kernel, t * mr, m, n, k, A, rs_a, cs_a, b_use, b_ld,
                             b_step, alpha, beta, C, ldc, stream);
    }
    // Non-temporal stores are weakly ordered: a full fence makes them
    // visible before anything this thread writes next (once per call; a
    // fence per block costs more than the stores save).
    if (stream)
        atomic_thread_fence(memory_order_seq_cst);
}
// end listing

// The small path on one thread, in the default context (the tests call it).
void gemm_small(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                float alpha, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    gemm_small_threads(&ctx, 1, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
