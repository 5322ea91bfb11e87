// gemm.h: single-precision matrix multiply, C = alpha·op(A)·op(B) + beta·C.
//
// All matrices are row-major with explicit leading dimensions. op(X) is X or
// its transpose. op(A) is m×k, op(B) is k×n, C is m×n:
//   A is m×k (lda ≥ k) when not transposed, k×m (lda ≥ m) when transposed;
//   B is k×n (ldb ≥ n) when not transposed, n×k (ldb ≥ k) when transposed;
//   C is m×n, ldc ≥ n.
// When beta is 0, C is only written, so it may hold anything (even NaN).
//
// The error bound: every element of C differs from the exact result by at
// most mat_error_bound(k, |alpha|·Σp|op(A)[i][p]·op(B)[p][j]| + |beta·C[i][j]|)
// (common/base/mat.c, chapter 1): an elementwise bound, which Strassen's
// algorithm below does not keep. gemm() uses it only where the measured rule
// says it keeps it (gemm_strassen_pays in gemm_parts.h).
//
// Results do not depend on the number of threads: every element of C is
// summed by one thread, over k, in one fixed order.
#ifndef GEMM_H
#define GEMM_H

#include "gemm_parts.h"

// Front door: picks a small-matrix path or the packed path, and how many
// threads to use, from the shape alone. gemm_ctx runs in the context it is
// handed (its micro-kernel, blocking and Strassen rule: gemm_parts.h); gemm
// and the other functions without a context run in the default one
// (gemm_context_default).
void gemm_ctx(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m, int n,
              int k, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc);
void gemm(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
          float alpha, const float *A, int lda, const float *B, int ldb,
          float beta, float *C, int ldc);

// The Goto/BLIS five loops on one thread.
void gemm_packed(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                 float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc);
void gemm_packed_ctx(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                     int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc);

// The five loops shared by omp_get_max_threads() OpenMP threads.
void gemm_parallel(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                   float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc);

// The same, in a context and with an explicit thread count (gemm() uses it
// to give small problems fewer threads than omp_get_max_threads()).
void gemm_parallel_threads(const struct gemm_context *ctx, int threads, enum gemm_trans ta,
                           enum gemm_trans tb, int m, int n, int k, float alpha, const float *A,
                           int lda, const float *B, int ldb, float beta, float *C, int ldc);

// Path for small or skinny problems, where packing op(A) would cost more than
// it saves: op(A) is read in place, and op(B) too unless it is transposed
// (then it is packed whole).
void gemm_small(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                float alpha, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc);
void gemm_small_threads(const struct gemm_context *ctx, int threads, enum gemm_trans ta,
                        enum gemm_trans tb, int m, int n, int k, float alpha, const float *A,
                        int lda, const float *B, int ldb, float beta, float *C, int ldc);

// ---------------------------------------------------------------------------
// Strassen's algorithm (gemm_strassen.c, chapter 5): seven products of sums
// of blocks instead of eight block products, `levels` (1 or 2) times over.
// Any m, n, k: the rows, columns and k beyond a multiple of 2^levels are
// peeled off and multiplied by the five loops. Same bits on any thread count.

// The sums folded into the packing (Huang et al., SC16): no temporaries.
void gemm_strassen_threads(const struct gemm_context *ctx, int threads, int levels,
                           enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k, float alpha,
                           const float *A, int lda, const float *B, int ldb, float beta, float *C,
                           int ldc);
// The plain form: each sum into a temporary matrix, each product a call of
// the five loops.
void gemm_strassen_plain_threads(const struct gemm_context *ctx, int threads, int levels,
                                 enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                                 float alpha, const float *A, int lda, const float *B, int ldb,
                                 float beta, float *C, int ldc);
// The fused form on omp_get_max_threads() threads, in the default context,
// with the levels its measured rule gives this shape (one unless it says two pay).
void gemm_strassen(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                   float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc);

// Strassen's error bound, which is normwise: every element of C from either
// form differs from the exact alpha·op(A)·op(B) + beta·C0 by at most
//   γ_N · (6^levels · k · |alpha|·max|op(A)|·max|op(B)| + |beta·c0|)
// (chapter 5 derives it). ab is |alpha|·max|op(A)|·max|op(B)|, beta_c0 is
// |beta·c0| of the element; kc is the blocking's (the context's
// kernel.blocking.kc).
double gemm_strassen_error_bound(int levels, int k, int kc, double ab, double beta_c0);

// ---------------------------------------------------------------------------
// Sums of blocks (gemm_strassen_fused.c), for Strassen's products: blocks of
// one matrix given by their offsets from its start, each with a coefficient.
//   Σt coef[t] · X[offset[t] + …]
enum { GEMM_TERMS = 4 }; // one level of Strassen sums two blocks, two levels four
struct gemm_blocks {
    int count;
    long offset[GEMM_TERMS];
    float coef[GEMM_TERMS];
};

// The packing buffers of gemm_fused_product for an m×n×k product on
// `threads` threads, taken from gemm_buffer() once, so that a whole run of
// products shares them. Returns 0, or -1 when out of memory.
struct gemm_fused_buffers {
    float *a, *b;
};
int gemm_fused_reserve(const struct gemm_context *ctx, int threads, int m, int n, int k,
                       struct gemm_fused_buffers *buf);

// For every block d of c:
//   C[c.offset[d] + …] += c.coef[d] · (Σ a.coef·op(A[a.offset + …])) · (Σ b.coef·op(B[b.offset + …]))
// where each op(A) block is m×k, each op(B) block k×n and each C block m×n.
// The five loops of gemm_packed.c; the sums are made while packing, and each
// mr×nr block the micro-kernel computes is added into every block of C it
// belongs to. Threads take slabs of columns. The thread count changes no bit.
void gemm_fused_product(const struct gemm_context *ctx, int threads, enum gemm_trans ta,
                        enum gemm_trans tb, int m, int n, int k, const float *A, int lda,
                        const struct gemm_blocks *a, const float *B, int ldb,
                        const struct gemm_blocks *b, float *C, int ldc, const struct gemm_blocks *c,
                        const struct gemm_fused_buffers *buf);

#endif
