// gemm_strassen_fused.c: one product of Strassen's algorithm in the five
// loops, with its sums folded into the packing (Huang, Smith, Henry and van
// de Geijn, "Strassen's Algorithm Reloaded", SC16). Packing already reads
// every element of a block of A and a panel of B once; reading two blocks
// and adding them costs one more stream of reads, and no temporary matrix.
// The micro-kernel is untouched: it computes its mr×nr block into a small
// buffer, which is then added into each block of C the product belongs to.
// On several threads, each takes a slab of columns and runs the loops alone.
#include "gemm.h"

#include <stddef.h>

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

// The biggest mr×nr block of any micro-kernel (AVX-512's 14×32).
enum { TILE_MAX = GEMM_AVX512_MR * GEMM_AVX512_NR };

// Each thread's block of A and panel of B, rounded up to 16 floats (64
// bytes) so that each thread's buffers start on a cache line of their own.
static long a_block_size(struct gemm_blocking bl, int m, int k)
{
    int mc = min_int(bl.mc, m), kc = min_int(bl.kc, k);
    return ((long)(mc + bl.mr - 1) / bl.mr * bl.mr * kc + 15) / 16 * 16;
}

static long b_panel_size(struct gemm_blocking bl, int n, int k)
{
    int nc = min_int(bl.nc, n), kc = min_int(bl.kc, k);
    return ((long)(nc + bl.nr - 1) / bl.nr * bl.nr * kc + 15) / 16 * 16;
}

int gemm_fused_reserve(const struct gemm_context *ctx, int threads, int m, int n, int k,
                       struct gemm_fused_buffers *buf)
{
    struct gemm_blocking bl = ctx->kernel.blocking;
    buf->a = gemm_buffer(GEMM_BUFFER_A, a_block_size(bl, m, k) * threads);
    buf->b = gemm_buffer(GEMM_BUFFER_B, b_panel_size(bl, n, k) * threads);
    return buf->a != NULL && buf->b != NULL ? 0 : -1;
}

// listing: pack_sums
// Packing a sum: a piece of the sum is added up, in the orientation the
// matrix is stored in, into a small buffer, which the ordinary packing
// routine then packs. The buffer stays in L1, and the adding runs along
// rows of memory, where the compiler can vectorize it.
enum { PIECE = 256 }; // columns of a block of A, or rows of a panel of B, at a time

// buf[i*ld + j] = Σ x.coef[t]·X[x.offset[t] + at + i*ldx + j], rows × cols.
static void sum_piece(int rows, int cols, const float *X, int ldx, long at,
                      const struct gemm_blocks *x, float *buf, int ld)
{
    for (int i = 0; i < rows; i++) {
        float *out = buf + (long)i * ld;
        for (int t = 0; t < x->count; t++) {
            const float *src = X + x->offset[t] + at + (long)i * ldx;
            float s = x->coef[t];
            if (t == 0)
                for (int j = 0; j < cols; j++)
                    out[j] = s * src[j];
            else
                for (int j = 0; j < cols; j++)
                    out[j] += s * src[j];
        }
    }
}

// The mc×kc block at (i, p) of Σ a.coef·op(A + a.offset), packed as
// pack_a_panel packs one matrix.
static void pack_a_sum(enum gemm_trans ta, int mc, int kc, const float *A, int lda,
                       const struct gemm_blocks *a, int i, int p, int mr, float *dst)
{
    if (a->count == 1 && a->coef[0] == 1.0f) {
        pack_a_panel(ta, mc, kc, gemm_a_at(ta, A + a->offset[0], lda, i, p), lda, mr, dst);
        return;
    }
    _Alignas(64) float piece[PIECE * GEMM_AVX512_MR];
    for (int i0 = 0; i0 < mc; i0 += mr) {
        int rows = min_int(mr, mc - i0);
        for (int q = 0; q < kc; q += PIECE) {
            int cols = min_int(PIECE, kc - q);
            long at = gemm_a_at(ta, A, lda, i + i0, p + q) - A;
            // rows × cols of op(A): stored as such, or transposed.
            if (ta == GEMM_NOTRANS)
                sum_piece(rows, cols, A, lda, at, a, piece, PIECE);
            else
                sum_piece(cols, rows, A, lda, at, a, piece, mr);
            pack_a_panel(ta, rows, cols, piece, ta == GEMM_NOTRANS ? PIECE : mr, mr,
                         dst + (long)i0 * kc + (long)q * mr);
        }
    }
}

// The kc×nc panel at (p, j) of Σ b.coef·op(B + b.offset), packed as
// pack_b_panel packs one matrix. Untransposed, a row of the sum is added up
// across all the micro-panels at once: one long run of memory per block,
// where a micro-panel at a time would read 64 bytes from each of two pages
// per row.
static void pack_b_sum(enum gemm_trans tb, int kc, int nc, const float *B, int ldb,
                       const struct gemm_blocks *b, int p, int j, int nr, float *dst)
{
    if (b->count == 1 && b->coef[0] == 1.0f) {
        pack_b_panel(tb, kc, nc, gemm_b_at(tb, B + b->offset[0], ldb, p, j), ldb, nr, dst);
        return;
    }
    int panels = (nc + nr - 1) / nr;
    if (tb == GEMM_NOTRANS) {
        for (int q = 0; q < kc; q++) {
            long at = gemm_b_at(tb, B, ldb, p + q, j) - B;
            for (int s = 0; s < panels; s++) {
                float *out = dst + (long)s * nr * kc + (long)q * nr;
                int cols = min_int(nr, nc - s * nr);
                sum_piece(1, cols, B, ldb, at + s * nr, b, out, nr);
                for (int c = cols; c < nr; c++)
                    out[c] = 0.0f;
            }
        }
        return;
    }
    // Transposed, a column of the panel is a row of memory: add up a piece
    // of a micro-panel's columns, then pack it.
    _Alignas(64) float piece[PIECE * GEMM_AVX512_NR];
    for (int s = 0; s < panels; s++) {
        int cols = min_int(nr, nc - s * nr);
        for (int q = 0; q < kc; q += PIECE) {
            int rows = min_int(PIECE, kc - q);
            long at = gemm_b_at(tb, B, ldb, p + q, j + s * nr) - B;
            sum_piece(cols, rows, B, ldb, at, b, piece, PIECE);
            pack_b_micropanel(tb, rows, cols, piece, PIECE, nr,
                              dst + (long)s * nr * kc + (long)q * nr);
        }
    }
}
// end listing

// listing: macro_sums
// The macro-kernel of gemm_macro.c, with C a list of blocks: each mr×nr
// block of the product goes to a buffer first, then into every block of C.
static void macro_kernel_sums(const struct gemm_kernel *kernel, int mc, int nc, int kc,
                              const float *a_packed, const float *b_packed, float *C,
                              int ldc, const struct gemm_blocks *c)
{
    int mr = kernel->blocking.mr, nr = kernel->blocking.nr;
    _Alignas(64) float tile[TILE_MAX];
    for (int jr = 0; jr < nc; jr += nr) {
        for (int ir = 0; ir < mc; ir += mr) {
            int rows = min_int(mr, mc - ir), cols = min_int(nr, nc - jr);
            float *at = C + (long)ir * ldc + jr;
            // The rows of C this block goes to are far apart and long out of
            // cache: ask for them now, so they have arrived when the
            // micro-kernel is done.
            for (int d = 0; d < c->count; d++)
                for (int i = 0; i < rows; i++)
                    __builtin_prefetch(at + c->offset[d] + (long)i * ldc, 1);
            kernel->run(rows, cols, kc, a_packed + (long)ir * kc, b_packed + (long)jr * kc,
                        tile, nr, 1.0f, 0.0f);
            for (int d = 0; d < c->count; d++) {
                float s = c->coef[d];
                for (int i = 0; i < rows; i++) {
                    float *row = at + c->offset[d] + (long)i * ldc;
                    for (int j = 0; j < cols; j++)
                        row[j] += s * tile[i * nr + j];
                }
            }
        }
    }
}
// end listing

// The five loops of gemm_packed.c on one thread, for one product.
static void fused_loops(const struct gemm_kernel *kernel, enum gemm_trans ta, enum gemm_trans tb,
                        int m, int n, int k, const float *A, int lda, const struct gemm_blocks *a,
                        const float *B, int ldb, const struct gemm_blocks *b, float *C, int ldc,
                        const struct gemm_blocks *c, float *a_packed, float *b_packed)
{
    struct gemm_blocking bl = kernel->blocking;
    int mc = min_int(bl.mc, m), nc = min_int(bl.nc, n), kc = min_int(bl.kc, k);
    // Task 4.3's loops, marked as its answer so that the class's handout (out
    // from the first week) cuts them out here too.
    // BEGIN SOLUTION task 4.3: task 4.3's loops again, packing sums of blocks (pack_b_sum, pack_a_sum) and adding each product to its blocks of C (macro_kernel_sums)
    // stub: (void)kernel, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)A, (void)lda;
    // stub: (void)a, (void)B, (void)ldb, (void)b, (void)C, (void)ldc, (void)c, (void)a_packed;
    // stub: (void)b_packed, (void)mc, (void)nc, (void)kc;
    // stub: (void)pack_a_sum, (void)pack_b_sum, (void)macro_kernel_sums;
    int mc_even = gemm_even_block(m, mc, bl.mr);
    for (int jc = 0; jc < n; jc += nc) {
        int n_now = min_int(nc, n - jc);
        for (int pc = 0; pc < k; pc += kc) {
            int k_now = min_int(kc, k - pc);
            pack_b_sum(tb, k_now, n_now, B, ldb, b, pc, jc, bl.nr, b_packed);
            for (int ic = 0; ic < m; ic += mc_even) {
                int m_now = min_int(mc_even, m - ic);
                pack_a_sum(ta, m_now, k_now, A, lda, a, ic, pc, bl.mr, a_packed);
                macro_kernel_sums(kernel, m_now, n_now, k_now, a_packed, b_packed,
                                  C + (long)ic * ldc + jc, ldc, c);
            }
        }
    }
    // END SOLUTION
}

// listing: fused_product
void gemm_fused_product(const struct gemm_context *ctx, int threads, enum gemm_trans ta,
                        enum gemm_trans tb, int m, int n, int k, const float *A, int lda,
                        const struct gemm_blocks *a, const float *B, int ldb,
                        const struct gemm_blocks *b, float *C, int ldc, const struct gemm_blocks *c,
                        const struct gemm_fused_buffers *buf)
{
    // Each thread takes a slab of whole micro-panels of columns and runs the
    // loops on it alone, with its own buffers: no barriers, but every thread
    // packs all of A, where gemm_parallel.c packs each block of A once.
    struct gemm_blocking bl = ctx->kernel.blocking;
    isa_count_use(ctx->kernel.isa);
    int panels = (n + bl.nr - 1) / bl.nr;
    long a_size = a_block_size(bl, m, k), b_size = b_panel_size(bl, n, k);
    threads = threads < 1 ? 1 : threads > panels ? panels : threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (int t = 0; t < threads; t++) {
        int j_lo = panels * t / threads * bl.nr;
        int j_hi = min_int(n, panels * (t + 1) / threads * bl.nr);
        fused_loops(&ctx->kernel, ta, tb, m, j_hi - j_lo, k, A, lda, a,
                    gemm_b_at(tb, B, ldb, 0, j_lo), ldb, b, C + j_lo, ldc, c, buf->a + a_size * t,
                    buf->b + b_size * t);
    }
}
// end listing
