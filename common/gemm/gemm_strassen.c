// gemm_strassen.c: Strassen's algorithm on top of the packed five loops.
//
// Cut op(A), op(B) and C into 2×2 blocks. The plain block product needs
// eight products of blocks; Strassen's seven products of sums of blocks give
// the same four blocks of C. One level does 7/8 of the multiplications, two
// levels 49/64, and pays for it with additions and data movement:
//   gemm_strassen_plain_threads  each sum into a temporary, each product a
//                                call of the five loops
//   gemm_strassen_threads        the sums folded into the packing, the
//                                products added into C as they are made
//                                (gemm_strassen_fused.c): no temporaries
// Rows, columns and k beyond a multiple of 2^levels are peeled off: the
// core goes through Strassen, the edges through the five loops.
#include "gemm.h"

#include <float.h>
#include <stddef.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

// listing: strassen_products
// A block is named by its row and column: 11, 12, 21, 22. A term is a block
// and a sign; a list of terms ends at the first sign 0.
struct strassen_term {
    int block, sign;
};

// One product M = (sum of blocks of op(A)) · (sum of blocks of op(B)), and
// the blocks of C it is added into.
struct strassen_product {
    struct strassen_term a[2], b[2], c[2];
};

static const struct strassen_product products[] = {
    // BEGIN SOLUTION task 5.2: the seven products and where each goes in C
    // stub: {{{0, 0}}, {{0, 0}}, {{0, 0}}},
    //  op(A)                 op(B)                 into C
    {{{11, 1}, {22, 1}},  {{11, 1}, {22, 1}},  {{11, 1}, {22, 1}}},  // M1
    {{{21, 1}, {22, 1}},  {{11, 1}},           {{21, 1}, {22, -1}}}, // M2
    {{{11, 1}},           {{12, 1}, {22, -1}}, {{12, 1}, {22, 1}}},  // M3
    {{{22, 1}},           {{21, 1}, {11, -1}}, {{11, 1}, {21, 1}}},  // M4
    {{{11, 1}, {12, 1}},  {{22, 1}},           {{11, -1}, {12, 1}}}, // M5
    {{{21, 1}, {11, -1}}, {{11, 1}, {12, 1}},  {{22, 1}}},           // M6
    {{{12, 1}, {22, -1}}, {{21, 1}, {22, 1}},  {{11, 1}}},           // M7
    // END SOLUTION
};
enum { PRODUCTS = sizeof products / sizeof products[0] };
// So:  C11 = M1 + M4 − M5 + M7    C12 = M3 + M5
//      C21 = M2 + M4              C22 = M1 − M2 + M3 + M6
// end listing

static int terms(const struct strassen_term *t)
{
    return t[0].sign == 0 ? 0 : t[1].sign == 0 ? 1 : 2;
}

// Where block (r, c) of an op(X) cut into rows×cols blocks starts, counted
// from X: X is stored transposed when trans is set.
static long block_offset(enum gemm_trans trans, int ld, int rows, int cols, int block)
{
    long r = block / 10 - 1, c = block % 10 - 1;
    return trans == GEMM_NOTRANS ? r * rows * ld + c * cols : c * cols * ld + r * rows;
}

// The five loops for one product: one thread or several. The edges and the
// plain form's products go through here.
static void product(const struct gemm_context *ctx, int threads, enum gemm_trans ta,
                    enum gemm_trans tb, int m, int n, int k, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc)
{
    if (threads == 1)
        gemm_packed_ctx(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    else
        gemm_parallel_threads(ctx, threads, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

// ---------------------------------------------------------------------------
// The plain form.

// X = Σ sign·op-block, in the orientation X is stored in (rows×cols, packed
// rows). A single block with sign +1 is used where it lies, with no copy;
// returns where the sum is and sets *ld.
static const float *sum_blocks(int threads, const struct strassen_term *t, enum gemm_trans trans,
                               const float *X, int ldx, int rows, int cols, float *tmp,
                               int *ld)
{
    // rows×cols is the block of op(X); stored, it is cols×rows if transposed.
    int r_st = trans == GEMM_NOTRANS ? rows : cols, c_st = trans == GEMM_NOTRANS ? cols : rows;
    const float *x0 = X + block_offset(trans, ldx, rows, cols, t[0].block);
    if (terms(t) == 1 && t[0].sign == 1) {
        *ld = ldx;
        return x0;
    }
    const float *x1 = terms(t) == 2 ? X + block_offset(trans, ldx, rows, cols, t[1].block) : x0;
    float s0 = (float)t[0].sign, s1 = terms(t) == 2 ? (float)t[1].sign : 0.0f;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (int i = 0; i < r_st; i++)
        for (int j = 0; j < c_st; j++)
            tmp[(long)i * c_st + j] = s0 * x0[(long)i * ldx + j] + s1 * x1[(long)i * ldx + j];
    *ld = c_st;
    return tmp;
}

// C = beta·C + alpha·op(A)·op(B), with m, n and k multiples of 2^levels.
// Returns 0, or -1 (C untouched) when out of memory for the temporaries.
static int plain_level(const struct gemm_context *ctx, int threads, int levels, enum gemm_trans ta,
                       enum gemm_trans tb, int m, int n, int k, float alpha, const float *A,
                       int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (levels == 0) {
        product(ctx, threads, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return 0;
    }
    int mh = m / 2, nh = n / 2, kh = k / 2;
    // The temporaries: a sum of two blocks of op(A), one of op(B), and M.
    float *S = gemm_alloc((long)mh * kh), *T = gemm_alloc((long)kh * nh);
    float *M = gemm_alloc((long)mh * nh);
    int status = S && T && M ? 0 : -1;
    if (status == 0) {
        gemm_scale(m, n, beta, C, ldc);
        // listing: plain_form
        for (int p = 0; p < PRODUCTS; p++) {
            const struct strassen_product *pr = &products[p];
            // BEGIN SOLUTION task 5.2
            // stub: (void)pr; (void)sum_blocks;
            if (terms(pr->a) == 0 || terms(pr->b) == 0)
                continue;
            int lds, ldt;
            const float *s = sum_blocks(threads, pr->a, ta, A, lda, mh, kh, S, &lds);
            const float *t = sum_blocks(threads, pr->b, tb, B, ldb, kh, nh, T, &ldt);
            // M = s·t: Strassen once more, or the five loops (at the last
            // level, or with no memory for another level's temporaries).
            if (plain_level(ctx, threads, levels - 1, ta, tb, mh, nh, kh, 1.0f, s, lds, t, ldt,
                            0.0f, M, nh) != 0)
                product(ctx, threads, ta, tb, mh, nh, kh, 1.0f, s, lds, t, ldt, 0.0f, M, nh);
            // Each block of C the product belongs to: C += sign·alpha·M.
            for (int d = 0; d < terms(pr->c); d++) {
                float *c = C + block_offset(GEMM_NOTRANS, ldc, mh, nh, pr->c[d].block);
                float coef = alpha * (float)pr->c[d].sign;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
                for (int i = 0; i < mh; i++)
                    for (int j = 0; j < nh; j++)
                        c[(long)i * ldc + j] += coef * M[(long)i * nh + j];
            }
            // END SOLUTION
        }
        // end listing
    }
    gemm_free(S);
    gemm_free(T);
    gemm_free(M);
    return status;
}

// ---------------------------------------------------------------------------
// The fused form.

// The blocks of one product of the next level down: every term of x (whole
// matrices at the top, blocks of them further down) cut into 2×2 and
// combined with the product's terms t. 2 terms at one level, 4 at two.
static struct gemm_blocks split_blocks(const struct gemm_blocks *x, const struct strassen_term *t,
                                       enum gemm_trans trans, int ld, int rows, int cols)
{
    struct gemm_blocks out = {0, {0}, {0}};
    for (int i = 0; i < x->count; i++)
        for (int j = 0; j < terms(t) && out.count < GEMM_TERMS; j++) {
            out.offset[out.count] = x->offset[i] + block_offset(trans, ld, rows, cols, t[j].block);
            out.coef[out.count] = x->coef[i] * (float)t[j].sign;
            out.count++;
        }
    return out;
}

// listing: fused_levels
// C[c] += op(A[a])·op(B[b]) for m, n, k multiples of 2^levels: at the
// bottom one fused product, above it seven products of the blocks below.
static void fused_level(const struct gemm_context *ctx, int threads, int levels, enum gemm_trans ta,
                        enum gemm_trans tb, int m, int n, int k, const float *A, int lda,
                        const struct gemm_blocks *a, const float *B, int ldb,
                        const struct gemm_blocks *b, float *C, int ldc, const struct gemm_blocks *c,
                        const struct gemm_fused_buffers *buf)
{
    if (levels == 0) {
        gemm_fused_product(ctx, threads, ta, tb, m, n, k, A, lda, a, B, ldb, b, C, ldc, c, buf);
        return;
    }
    int mh = m / 2, nh = n / 2, kh = k / 2;
    for (int p = 0; p < PRODUCTS; p++) {
        const struct strassen_product *pr = &products[p];
        struct gemm_blocks a2 = split_blocks(a, pr->a, ta, lda, mh, kh);
        struct gemm_blocks b2 = split_blocks(b, pr->b, tb, ldb, kh, nh);
        struct gemm_blocks c2 = split_blocks(c, pr->c, GEMM_NOTRANS, ldc, mh, nh);
        if (a2.count > 0 && b2.count > 0 && c2.count > 0)
            fused_level(ctx, threads, levels - 1, ta, tb, mh, nh, kh, A, lda, &a2, B, ldb, &b2, C,
                        ldc, &c2, buf);
    }
}
// end listing

// ---------------------------------------------------------------------------
// Both forms: the core through Strassen, the edges peeled off.

// listing: strassen_peel
static void strassen(const struct gemm_context *ctx, int threads, int levels, int fused,
                     enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k, float alpha,
                     const float *A, int lda, const float *B, int ldb, float beta, float *C,
                     int ldc)
{
#if !defined(_OPENMP)
    threads = 1;
#endif
    if (threads < 1)
        threads = 1;
    levels = levels < 1 ? 1 : levels > 2 ? 2 : levels;
    if (gemm_no_products(m, n, k, alpha, beta, C, ldc))
        return;
    // The core: the largest multiples of 2^levels.
    int q = 1 << levels;
    int m0 = m / q * q, n0 = n / q * q, k0 = k / q * q;
    int done = 0;
    if (m0 > 0 && n0 > 0 && k0 > 0) {
        if (fused) {
            struct gemm_fused_buffers buf;
            if (gemm_fused_reserve(ctx, threads, m0 / q, n0 / q, k0 / q, &buf) == 0) {
                struct gemm_blocks a = {1, {0}, {1.0f}}, b = {1, {0}, {1.0f}};
                struct gemm_blocks c = {1, {0}, {alpha}};
                gemm_scale(m0, n0, beta, C, ldc);
                fused_level(ctx, threads, levels, ta, tb, m0, n0, k0, A, lda, &a, B, ldb, &b, C,
                            ldc, &c, &buf);
                done = 1;
            }
        } else {
            done = plain_level(ctx, threads, levels, ta, tb, m0, n0, k0, alpha, A, lda, B, ldb,
                               beta, C, ldc) == 0;
        }
    }
    if (!done) {
        // Too small to cut, or no memory for Strassen: the five loops.
        product(ctx, threads, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    // The edges: the last k − k0 terms of the core's sums, then the last
    // columns and the last rows of C.
    if (k0 < k)
        product(ctx, threads, ta, tb, m0, n0, k - k0, alpha, gemm_a_at(ta, A, lda, 0, k0), lda,
                gemm_b_at(tb, B, ldb, k0, 0), ldb, 1.0f, C, ldc);
    if (n0 < n)
        product(ctx, threads, ta, tb, m0, n - n0, k, alpha, A, lda, gemm_b_at(tb, B, ldb, 0, n0),
                ldb, beta, C + n0, ldc);
    if (m0 < m)
        product(ctx, threads, ta, tb, m - m0, n, k, alpha, gemm_a_at(ta, A, lda, m0, 0), lda, B,
                ldb, beta, C + (long)m0 * ldc, ldc);
}
// end listing

void gemm_strassen_threads(const struct gemm_context *ctx, int threads, int levels,
                           enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k, float alpha,
                           const float *A, int lda, const float *B, int ldb, float beta, float *C,
                           int ldc)
{
    strassen(ctx, threads, levels, 1, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_strassen_plain_threads(const struct gemm_context *ctx, int threads, int levels,
                                 enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                                 float alpha, const float *A, int lda, const float *B, int ldb,
                                 float beta, float *C, int ldc)
{
    strassen(ctx, threads, levels, 0, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_strassen(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k, float alpha,
                   const float *A, int lda, const float *B, int ldb, float beta, float *C,
                   int ldc)
{
    int threads = 1;
#if defined(_OPENMP)
    threads = omp_get_max_threads();
#endif
    struct gemm_context ctx = gemm_context_default();
    strassen(&ctx, threads, gemm_strassen_levels(&ctx.strassen, m, n, k), 1, ta, tb, m, n, k, alpha,
             A, lda, B, ldb, beta, C, ldc);
}

// listing: strassen_bound
double gemm_strassen_error_bound(int levels, int k, int kc, double ab, double beta_c0)
{
    // Written out, an element of C is a signed sum of products a·b. Every
    // one of them passes through at most N roundings on its way, so the
    // error is at most γ_N times the sum of their sizes, |a·b| ≤ max|a|·max|b|.
    // With Strassen that sum counts products from other rows and columns
    // too (which cancel): 12 per level for each of the k/2 terms of the
    // half-size products, 6^levels·k in all.
    int kl = k >> levels;
    double weight = (double)k;
    for (int l = 0; l < levels; l++)
        weight *= 6.0;
    // N: the k/2^levels terms of the innermost sums; the adds into C, one
    // per product block and per pass of the pc loop (4 products per block
    // of C and level, 4^levels in all); the sums of blocks, the scaling by
    // alpha and beta, the peeled edges.
    double passes = kl > kc ? (double)((kl + kc - 1) / kc) : 1.0;
    double n = kl + passes * (double)(1 << (2 * levels)) + 6.0 * levels + 8.0;
    double u = 0.5 * FLT_EPSILON;
    return n * u / (1.0 - n * u) * (weight * ab + beta_c0) + FLT_MIN;
}
// end listing
