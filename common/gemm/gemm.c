// gemm.c: the front door. From the shape alone, it picks one of the three
// paths (small, packed, parallel), or Strassen's algorithm where the rule
// measured on this machine lets it, and how many threads to give it.
//
//   gemm.c                          front door
//   gemm_strassen.c                                   Strassen over the paths
//   gemm_small.c  gemm_packed.c  gemm_parallel.c      the paths
//   gemm_strassen_fused.c                             (and Strassen's fused product)
//   gemm_pack.c  gemm_macro.c  gemm_operand.c          what the paths share
//   gemm_kernel.c                                     the contexts: kernel in use
//   gemm_blocking.c  gemm_strassen_rule.c             its block sizes; when Strassen pays
//   gemm_kernel_{scalar,avx2,avx512,neon}.c           the micro-kernels
//
// Each file calls only files on the rows below it (tools/check-layers.sh
// checks it, and gemm_backend.c sits above them all).
#include "gemm.h"

#include <stddef.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

// listing: front_door
void gemm_ctx(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m, int n,
              int k, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc)
{
    // Everything here depends on the shape only, never on the thread count,
    // so the result does not either.
    double flops = 2.0 * m * n * k;
    int max_threads = 1;
#if defined(_OPENMP)
    // Called from inside a parallel region (chapter 8's convolutions give
    // each thread its own images), the calling thread is the whole team: a
    // region opened here would run on it alone, and libgomp allocates a new
    // team for every such nested region.
    max_threads = omp_in_parallel() ? 1 : omp_get_max_threads();
#endif
    const struct gemm_kernel *kernel = &ctx->kernel;
    int nr = kernel->blocking.nr;
    long b_floats = (long)k * ((n + nr - 1) / nr * nr);

    // Small or skinny: packing op(A) is a full pass over A, repaid only when
    // each element is then used for many columns. With n ≤ 64 (or a tiny
    // problem) it is not, so read A in place; op(B), every row of A meets all
    // of it, must fit comfortably in L2. (Only ISAs with a direct micro-kernel.)
    int small = kernel->run_direct != NULL && (n <= 2 * nr || flops < 4e6) &&
                b_floats <= 128 * 1024;
    // A thread must get enough work to repay starting it (about 2 Mflop);
    // below that, more threads are slower than one.
    int threads = flops < 2e6 * max_threads ? (int)(flops / 2e6) : max_threads;
    if (threads < 1)
        threads = 1;

    // BEGIN SOLUTION task 5.2
    // stub: if (small)
    // earlier kits: if (small)
    if (gemm_strassen_pays(&ctx->strassen, m, n, k))
        gemm_strassen_threads(ctx, threads, gemm_strassen_levels(&ctx->strassen, m, n, k), ta, tb,
                              m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    else if (small)
    // END SOLUTION
    gemm_small_threads(ctx, threads, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    else if (threads == 1)
        gemm_packed_ctx(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    else
        gemm_parallel_threads(ctx, threads, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
// end listing

// The same in the default context (gemm_context_default): the kernel of
// the program's ISA, and the Strassen rule it set.
void gemm(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k, float alpha, const float *A,
          int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    gemm_ctx(&ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
