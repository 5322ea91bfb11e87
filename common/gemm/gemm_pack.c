// gemm_pack.c: copy blocks of op(A) and op(B) into the order the
// micro-kernel reads them, so that it walks memory with unit stride and
// never has to know about transposes or matrix edges.
#include "gemm_parts.h"

#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

float *gemm_alloc(long count)
{
    // Round the size up to a multiple of 64 bytes, as aligned_alloc requires.
    size_t bytes = ((size_t)count * sizeof(float) + 63) / 64 * 64;
    if (bytes == 0)
        bytes = 64;
    return aligned_alloc(64, bytes);
}

void gemm_free(float *p)
{
    free(p);
}

// Packing buffers are kept from call to call, one set per thread: fresh
// large allocations come from the kernel as untouched pages, and faulting
// them in on every call costs more than a small multiply takes.
static _Thread_local float *cached[GEMM_BUFFERS];
static _Thread_local long cached_count[GEMM_BUFFERS];

float *gemm_buffer(enum gemm_buffer which, long count)
{
    if (count > cached_count[which]) {
        float *p = gemm_alloc(count);
        if (p == NULL)
            return NULL;
        gemm_free(cached[which]);
        cached[which] = p;
        cached_count[which] = count;
    }
    return cached[which];
}

// Copies a count×4 block that is transposed on the way: for q < count,
// dst[q*ld_dst + 0..3] = src0[q], src1[q], src2[q], src3[q]. Reading four
// rows at once writes 16 contiguous bytes per step instead of scattering
// single floats, which makes packing a transposed block about twice as fast.
static void transpose_four(int count, const float *src0, const float *src1,
                           const float *src2, const float *src3, float *dst,
                           int ld_dst)
{
    int q = 0;
#if defined(__SSE2__)
    // Every x86-64 CPU has SSE: transpose 4×4 tiles in registers, four loads
    // and four stores of 16 bytes where the loop below does 16 and 16.
    for (; q + 4 <= count; q += 4) {
        __m128 r0 = _mm_loadu_ps(src0 + q), r1 = _mm_loadu_ps(src1 + q);
        __m128 r2 = _mm_loadu_ps(src2 + q), r3 = _mm_loadu_ps(src3 + q);
        __m128 lo01 = _mm_unpacklo_ps(r0, r1), lo23 = _mm_unpacklo_ps(r2, r3);
        __m128 hi01 = _mm_unpackhi_ps(r0, r1), hi23 = _mm_unpackhi_ps(r2, r3);
        float *out = dst + (long)q * ld_dst;
        _mm_storeu_ps(out, _mm_movelh_ps(lo01, lo23));
        _mm_storeu_ps(out + ld_dst, _mm_movehl_ps(lo23, lo01));
        _mm_storeu_ps(out + 2L * ld_dst, _mm_movelh_ps(hi01, hi23));
        _mm_storeu_ps(out + 3L * ld_dst, _mm_movehl_ps(hi23, hi01));
    }
#endif
    for (; q < count; q++) {
        float *out = dst + (long)q * ld_dst;
        out[0] = src0[q];
        out[1] = src1[q];
        out[2] = src2[q];
        out[3] = src3[q];
    }
}

// Transposes a count×rows block (rows ≤ ld_dst): dst[q*ld_dst + i] = src_i[q],
// where src_i = src + i*ld_src.
void gemm_transpose_rows(int count, int rows, const float *src, int ld_src,
                           float *dst, int ld_dst)
{
    int i = 0;
    for (; i + 4 <= rows; i += 4) {
        const float *s = src + (long)i * ld_src;
        transpose_four(count, s, s + ld_src, s + 2L * ld_src, s + 3L * ld_src,
                       dst + i, ld_dst);
    }
    for (; i < rows; i++) {
        const float *s = src + (long)i * ld_src;
        for (int q = 0; q < count; q++)
            dst[(long)q * ld_dst + i] = s[q];
    }
}

// listing: pack_b
void pack_b_micropanel(enum gemm_trans tb, int kc, int nc, const float *B,
                       int ldb, int nr, float *dst)
{
    // BEGIN SOLUTION task 4.1
    // stub: (void)tb; (void)kc; (void)nc; (void)B; (void)ldb; (void)nr; (void)dst;
    // dst is kc×nr, row by row: dst[p*nr + j] = op(B)[p][j], 0 for j ≥ nc.
    if (tb == GEMM_NOTRANS) {
        // op(B)[p][j] = B[p*ldb + j]: each row of the micro-panel is a
        // contiguous piece of a row of B.
        // Whole rows go through memcpy (fast for big panels); a short last
        // micro-panel uses a loop, cheaper than a library call per row.
        for (int p = 0; p < kc; p++) {
            const float *row = B + (long)p * ldb;
            float *out = dst + (long)p * nr;
            if (nc == nr) {
                memcpy(out, row, sizeof(float) * (size_t)nr);
            } else {
                for (int j = 0; j < nc; j++)
                    out[j] = row[j];
                for (int j = nc; j < nr; j++)
                    out[j] = 0.0f;
            }
        }
    } else {
        // op(B)[p][j] = B[j*ldb + p]: row j of B is column j of the panel.
        gemm_transpose_rows(kc, nc, B, ldb, dst, nr);
        for (int p = 0; p < kc; p++)
            for (int j = nc; j < nr; j++)
                dst[(long)p * nr + j] = 0.0f;
    }
    // END SOLUTION
}

void pack_b_panel(enum gemm_trans tb, int kc, int nc, const float *B, int ldb,
                  int nr, float *dst)
{
    // B points at op(B)[0][0] of this kc×nc panel.
    for (int j = 0; j < nc; j += nr) {
        int cols = nc - j < nr ? nc - j : nr;
        const float *start = tb == GEMM_NOTRANS ? B + j : B + (long)j * ldb;
        pack_b_micropanel(tb, kc, cols, start, ldb, nr, dst + (long)j * kc);
    }
}
// end listing

// listing: pack_a
void pack_a_panel(enum gemm_trans ta, int mc, int kc, const float *A, int lda,
                  int mr, float *dst)
{
    // BEGIN SOLUTION task 4.2
    // stub: (void)ta; (void)mc; (void)kc; (void)A; (void)lda; (void)mr; (void)dst;
    // A points at op(A)[0][0] of this mc×kc block. Each mr-row sliver is
    // stored column by column: dst[p*mr + i] = op(A)[i][p].
    for (int i0 = 0; i0 < mc; i0 += mr) {
        int rows = mc - i0 < mr ? mc - i0 : mr;
        float *out = dst + (long)i0 * kc;
        if (ta == GEMM_NOTRANS) {
            // op(A)[i][p] = A[i*lda + p]: row i of A is row i of the sliver,
            // which is stored transposed.
            gemm_transpose_rows(kc, rows, A + (long)i0 * lda, lda, out, mr);
        } else {
            // op(A)[i][p] = A[p*lda + i]: each column of the sliver is a
            // contiguous piece of a row of A.
            for (int p = 0; p < kc; p++)
                memcpy(out + (long)p * mr, A + (long)p * lda + i0,
                       sizeof(float) * (size_t)rows);
        }
        if (rows < mr)
            for (int p = 0; p < kc; p++)
                memset(out + (long)p * mr + rows, 0, sizeof(float) * (size_t)(mr - rows));
    }
    // END SOLUTION
}
// end listing
