// gemm_parts.h: the pieces the three GEMM paths share, below them in the
// layers of gemm.c: operand access, packing, the macro-kernel, blocking, the
// kernel in use, and the micro-kernels at the bottom. Row-major throughout.
#ifndef GEMM_PARTS_H
#define GEMM_PARTS_H

#include "cpu.h"

enum gemm_trans { GEMM_NOTRANS = 0, GEMM_TRANS = 1 };

// ---------------------------------------------------------------------------
// Blocking (gemm_blocking.c). The micro-kernel computes an mr×nr block of
// C; the loops around it cut op(A) into mc×kc blocks and op(B) into kc×nc panels so each piece
// stays in the cache level that feeds the next loop in.
struct gemm_blocking {
    int mc, kc, nc, mr, nr;
};

// Derives mc, kc and nc from cache sizes in bytes for a kernel of mr×nr.
struct gemm_blocking gemm_blocking_for_caches(long l2_bytes, long l3_bytes,
                                              int mr, int nr);

// The textbook rule, kc sized for L1, kept for comparison (chapter 4 and
// the stage-04 benchmark measure both).
struct gemm_blocking gemm_blocking_for_l1(long l1_bytes, long l2_bytes,
                                          long l3_bytes, int mr, int nr);

// The block size, at most block and a multiple of unit, that cuts size
// into the same number of blocks as block does, but evenly.
int gemm_even_block(int size, int block, int unit);

// ---------------------------------------------------------------------------
// When gemm() may use Strassen's algorithm, and how deep (gemm_strassen_rule.c).
// The rule is measured on this machine by `make stage-05 strassen`, which
// writes it into a file (tools/strassen-rule.sh); a program reads the file
// at its start and makes it its default context's (the programs of this
// book read the file that the environment variable GEMM_STRASSEN_RULE
// names). No file, no Strassen. Sizes are the smallest of m, n and k.
struct gemm_strassen_rule {
    int faster_from;     // Strassen beat the five loops from this size up; 0: nowhere
    int within_bound;    // 1: its error stayed within gemm()'s bound (gemm.h) on every test
    int two_levels_from; // a second level paid from this size up; 0: nowhere
};

// Reads a rule file (lines `key value`, `#` comments). Returns 0, or -1 (and
// leaves *rule) when the file cannot be read or holds anything else.
int gemm_strassen_read_rule(const char *path, struct gemm_strassen_rule *rule);
// The rule of the default context (gemm_context_default): "never" until a
// program sets one.
void gemm_strassen_set_rule(struct gemm_strassen_rule rule);
// The rule in the file at path made the default context's (path NULL or
// "": nothing changes). A file that is missing or malformed leaves the rule
// at "never", and returns -1.
int gemm_strassen_use_file(const char *path);
// 1 when rule lets gemm() multiply this shape with Strassen's algorithm:
// faster there, and within the error bound.
int gemm_strassen_pays(const struct gemm_strassen_rule *rule, int m, int n, int k);
// Levels of Strassen for this shape when it is used: 2 where rule says a
// second level pays, else 1.
int gemm_strassen_levels(const struct gemm_strassen_rule *rule, int m, int n, int k);

// ---------------------------------------------------------------------------
// Micro-kernels (gemm_kernel_*.c). They read packed data only, never a
// transpose:
//   a is an mr×kc sliver of op(A), column by column: a[p*mr + i];
//   b is a kc×nr micro-panel of op(B), row by row:    b[p*nr + j].
// They compute, for i < m ≤ mr and j < n ≤ nr,
//   C[i][j] = alpha · Σp a[p*mr+i]·b[p*nr+j] + beta · C[i][j]
// and never read C when beta is 0. A partial block (m < mr or n < nr) gets
// exactly the same arithmetic as a full one, so where the blocks fall (which
// depends on the thread split) cannot change the result.
typedef void gemm_microkernel(int m, int n, int kc, const float *a,
                              const float *b, float *C, int ldc, float alpha,
                              float beta);

// The same block, but reading A where it lies: op(A)[i][p] = a[i*rs_a + p*cs_a]
// (so no packing of A is needed), and B as b[p*ldb + j]: a packed micro-panel
// (ldb = nr) or, when op(B) is not transposed, B itself (only columns j < n
// are read). With stream nonzero and beta 0, full blocks of C are written
// with non-temporal stores, which skip fetching C's old lines into cache:
// for a large C written once that halves the memory traffic.
typedef void gemm_microkernel_direct(int m, int n, int kc, const float *a,
                                     long rs_a, long cs_a, const float *b,
                                     long ldb, float *C, int ldc, float alpha,
                                     float beta, int stream);

gemm_microkernel_direct gemm_kernel_avx2_direct;
gemm_microkernel_direct gemm_kernel_avx512_direct;
gemm_microkernel gemm_kernel_scalar;
gemm_microkernel gemm_kernel_avx2;
gemm_microkernel gemm_kernel_avx512;
gemm_microkernel gemm_kernel_avx512_no_prefetch_c; // chapter 4's step 3
gemm_microkernel gemm_kernel_neon;

enum { GEMM_SCALAR_MR = 4, GEMM_SCALAR_NR = 8 };
enum { GEMM_AVX2_MR = 6, GEMM_AVX2_NR = 16 };
enum { GEMM_AVX512_MR = 14, GEMM_AVX512_NR = 32 };
enum { GEMM_NEON_MR = 8, GEMM_NEON_NR = 12 };

struct gemm_kernel {
    enum isa isa;
    gemm_microkernel *run;
    gemm_microkernel_direct *run_direct; // NULL: this ISA has none
    struct gemm_blocking blocking;
};

// listing: gemm_context
// The context a GEMM runs in (BLIS's cntx_t): the micro-kernel, its blocking,
// and when gemm() may use Strassen's algorithm. Every path takes its kernel
// from the context it is handed, so two contexts in one program compare two
// kernels side by side, and changing one changes nothing else.
struct gemm_context {
    struct gemm_kernel kernel;
    struct gemm_strassen_rule strassen;
};
// end listing

// isa's micro-kernel, blocked for this machine's caches; Strassen never.
// isa must be one this CPU and build run (isa_supported).
struct gemm_context gemm_context_for(enum isa isa);
// The default context: the kernel of the process's ISA (isa_active(): the
// widest this CPU runs, or what --isa forced) and the rule
// gemm_strassen_set_rule gave. gemm(), gemm_packed(), gemm_parallel(),
// gemm_small() and gemm_strassen() run in it; the _ctx and _threads forms
// take a context.
struct gemm_context gemm_context_default(void);

// Gives ctx another blocking, to measure another choice or to test the loop
// edges with small blocks. mr and nr must be the kernel's; returns -1 (and
// changes nothing) otherwise, or if mc < mr, nc < nr or kc < 1.
int gemm_context_set_blocking(struct gemm_context *ctx, struct gemm_blocking b);
// Gives ctx's packed paths another micro-kernel of the same mr×nr (chapter
// 4 measures the same five loops around other kernels). Returns -1 (and
// changes nothing) if run is NULL.
int gemm_context_set_microkernel(struct gemm_context *ctx, gemm_microkernel *run);

// ---------------------------------------------------------------------------
// Packing (gemm_pack.c). Both write zero-padded, 64-byte-aligned-friendly
// layouts that the micro-kernels read with unit stride.

// Packs the mc×kc block of op(A) starting at A into mr-row slivers:
// sliver s holds rows s·mr … s·mr+mr-1, stored a[p*mr + i]; missing rows are 0.
// dst holds ceil(mc/mr)·mr·kc floats.
void pack_a_panel(enum gemm_trans ta, int mc, int kc, const float *A, int lda,
                  int mr, float *dst);

// Packs the kc×nc panel of op(B) starting at B into nr-column micro-panels:
// micro-panel s holds columns s·nr … s·nr+nr-1, stored b[p*nr + j]; missing
// columns are 0. dst holds ceil(nc/nr)·nr·kc floats.
void pack_b_panel(enum gemm_trans tb, int kc, int nc, const float *B, int ldb,
                  int nr, float *dst);

// One nr-column micro-panel of pack_b_panel (nc ≤ nr); used by threads that
// share the packing of one panel.
void pack_b_micropanel(enum gemm_trans tb, int kc, int nc, const float *B,
                       int ldb, int nr, float *dst);

// ---------------------------------------------------------------------------
// Operands (gemm_operand.c).

// Address of op(A)[i][p] and op(B)[p][j].
const float *gemm_a_at(enum gemm_trans ta, const float *A, int lda, int i, int p);
const float *gemm_b_at(enum gemm_trans tb, const float *B, int ldb, int p, int j);

// C = beta·C for the m×n matrix C (beta == 0 writes zeros, never reads C).
void gemm_scale(int m, int n, float beta, float *C, int ldc);

// The cases with no products to add, which every path handles alike: an
// empty C (nothing to do), or k = 0 or alpha = 0 (C = beta·C). Returns 1
// when it has handled the call, 0 when there is work for the path.
int gemm_no_products(int m, int n, int k, float alpha, float beta, float *C, int ldc);

// The whole GEMM as plain loops over op(A) and op(B) where they lie: the
// fallback of every path when there is no memory for packing, and of the
// small path on ISAs without a direct micro-kernel.
void gemm_plain_loops(enum gemm_trans ta, enum gemm_trans tb, int m, int n,
                      int k, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc);

// ---------------------------------------------------------------------------
// The macro-kernel (gemm_macro.c): the two innermost loops. Updates the
// mc×nc block C from a packed mc×kc block of op(A) and a packed kc×nc panel
// of op(B).
void gemm_macro_kernel(const struct gemm_kernel *kernel, int mc, int nc,
                       int kc, const float *a_packed, const float *b_packed,
                       float *C, int ldc, float alpha, float beta);

// Copies a count×rows block transposed: dst[q*ld_dst + i] = src[i*ld_src + q]
// for q < count, i < rows (the packing routines use it for transposed reads).
void gemm_transpose_rows(int count, int rows, const float *src, int ld_src,
                         float *dst, int ld_dst);

// 64-byte aligned buffer of count floats, or NULL. Free with gemm_free().
float *gemm_alloc(long count);
void gemm_free(float *p);

// This thread's packing buffer of at least count floats (64-byte aligned),
// kept for the next call; NULL if out of memory. Do not free it.
enum gemm_buffer { GEMM_BUFFER_A, GEMM_BUFFER_B, GEMM_BUFFERS };
float *gemm_buffer(enum gemm_buffer which, long count);

#endif
