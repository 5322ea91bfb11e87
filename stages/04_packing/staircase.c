// staircase.c: the packed GEMM of common/gemm/ built one step at a time,
// as BLISlab builds it, so chapter 4 can measure what each step buys. Only
// the first step has loops of its own; the others run gemm_packed() with
// a different micro-kernel plugged into a context of their own
// (gemm_context_set_microkernel()).
#include "staircase.h"

#include "gemm.h"

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

// listing: stair_block
// C += alpha·A·B for an m×n block of C, one rank-1 update per step p,
// straight into memory: A[i][p] = a[i*rs_a + p*cs_a], B[p][j] = b[p*ldb + j].
// Step 1 runs it on A and B where they lie, step 2 on packed copies; the
// loop is the same, only the addresses it walks differ.
static void block_loops(int m, int n, int kc, float alpha, const float *a, long rs_a,
                        long cs_a, const float *b, long ldb, float *C, int ldc)
{
    for (int p = 0; p < kc; p++) {
        for (int i = 0; i < m; i++) {
            float aip = alpha * a[i * rs_a + p * cs_a];
            float *c = C + (long)i * ldc;
            for (int j = 0; j < n; j++)
                c[j] += aip * b[p * ldb + j];
        }
    }
}
// end listing

// listing: stair_blocked
// Step 1: the five loops, no packing. A is m×k (lda ≥ k), B is k×n (ldb ≥ n).
void stair_blocked(const struct gemm_context *ctx, int m, int n, int k, const float *A, int lda,
                   const float *B, int ldb, float *C, int ldc)
{
    struct gemm_blocking bl = ctx->kernel.blocking;
    gemm_scale(m, n, 0.0f, C, ldc);
    for (int jc = 0; jc < n; jc += bl.nc)
        for (int pc = 0; pc < k; pc += bl.kc)
            for (int ic = 0; ic < m; ic += bl.mc)
                // the macro-kernel's two loops, over an mc×nc block of C
                for (int jr = jc; jr < min_int(jc + bl.nc, n); jr += bl.nr)
                    for (int ir = ic; ir < min_int(ic + bl.mc, m); ir += bl.mr)
                        block_loops(min_int(bl.mr, m - ir), min_int(bl.nr, n - jr),
                                    min_int(bl.kc, k - pc), 1.0f, A + (long)ir * lda + pc,
                                    lda, 1, B + (long)pc * ldb + jr, ldb,
                                    C + (long)ir * ldc + jr, ldc);
}
// end listing

// listing: stair_packed_loops
// Step 2's micro-kernel: the plain loop on a packed sliver of A (a[p*mr + i])
// and micro-panel of B (b[p*nr + j]), with the micro-kernel's contract:
// C = alpha·a·b + beta·C, C not read when beta is 0 (alpha is applied to
// each product, not to the sum: a rounding of its own, within the bound).
// A micro-kernel is told nothing of its context, so the sliver's mr and the
// micro-panel's nr, the blocking's, are set before the loops run.
static int loops_mr, loops_nr;

static void loops_kernel(int m, int n, int kc, const float *a, const float *b, float *C,
                         int ldc, float alpha, float beta)
{
    gemm_scale(m, n, beta, C, ldc);
    block_loops(m, n, kc, alpha, a, 1, loops_mr, b, loops_nr, C, ldc);
}

// Step 2: gemm_packed(), with the plain loop as its micro-kernel.
void stair_packed_loops(const struct gemm_context *ctx, int m, int n, int k, const float *A,
                        int lda, const float *B, int ldb, float *C, int ldc)
{
    struct gemm_context plain = *ctx;
    gemm_context_set_microkernel(&plain, loops_kernel);
    loops_mr = plain.kernel.blocking.mr;
    loops_nr = plain.kernel.blocking.nr;
    gemm_packed_ctx(&plain, GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C,
                    ldc);
}
// end listing

// listing: stair_simd_no_prefetch
// Step 3: gemm_packed() with the ISA's SIMD micro-kernel, but without the
// prefetch of C. Only the AVX-512 kernel prefetches C; the others run as
// they are, and for them step 3 is already the library's gemm_packed().
void stair_simd_no_prefetch(const struct gemm_context *ctx, int m, int n, int k, const float *A,
                            int lda, const float *B, int ldb, float *C, int ldc)
{
    struct gemm_context step3 = *ctx;
#if defined(__x86_64__)
    if (step3.kernel.isa == ISA_AVX512)
        gemm_context_set_microkernel(&step3, gemm_kernel_avx512_no_prefetch_c);
#endif
    gemm_packed_ctx(&step3, GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C,
                    ldc);
}
// end listing
