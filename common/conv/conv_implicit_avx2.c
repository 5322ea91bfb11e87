// The implicit GEMM's gather (conv_implicit_parts.h) with AVX2, for full
// micro-panels of 16 columns (AVX-512's panels of 32 take it in two
// halves). A panel's columns fall in runs of consecutive offsets (the
// outputs of one row of one image, or the taps of one filter row): a run's
// floats lie side by side in x, and one load takes up to eight of them. So
// each half of a row of the panel is the load of the first run that reaches
// into it, and one load and a blend for each further run. AVX2's gather
// instruction would do the same with sixteen loads; on Zen 3 it was slower
// than the scalar loop.
#if defined(__x86_64__)
#include <immintrin.h>

#include "conv_implicit_parts.h"
#include "transpose8_avx2.h"

// More runs than this and the scalar loop is as fast.
enum { MAX_RUNS = 8 };

// listing: gather16_avx2
// One half of a row, 8 lanes from the n runs that reach into it: the first
// run's 8 floats, then each later run's blended over its lanes (a run's
// lanes come after the ones before it). n is the same on every row of the
// panel, so the switch always goes the same way.
static inline __m256 half_row(const float *at, int n, const int *shift, const __m256 *mask)
{
    __m256 v = _mm256_loadu_ps(at + shift[0]);
    switch (n) {
    case 3:
        v = _mm256_blendv_ps(v, _mm256_loadu_ps(at + shift[1]), mask[1]);
        return _mm256_blendv_ps(v, _mm256_loadu_ps(at + shift[2]), mask[2]);
    case 2:
        return _mm256_blendv_ps(v, _mm256_loadu_ps(at + shift[1]), mask[1]);
    case 1:
        return v;
    default:
        for (int r = 1; r < n; r++)
            v = _mm256_blendv_ps(v, _mm256_loadu_ps(at + shift[r]), mask[r]);
        return v;
    }
}

void conv_gather16_avx2(const float *x, const long *rows, int kc, const int *cols, long ldb,
                        float *b)
{
    int first[MAX_RUNS + 1], runs = 0;
    for (int j = 0; j < 16; j++) {
        if (j > 0 && cols[j] == cols[j - 1] + 1)
            continue;  // the run goes on
        if (runs == MAX_RUNS || (j > 0 && cols[j] < cols[j - 1])) {
            for (int p = 0; p < kc; p++)
                conv_gather_scalar(x, rows + p, 1, cols, 16, 16, b + p * ldb);
            return;
        }
        first[runs++] = j;
    }
    first[runs] = 16;
    // Run r covers columns first[r] … first[r+1]−1, and column j of it is at
    // x[rows[p] + shift + j], shift = cols[first[r]] − first[r]. Each half of
    // the row (lanes 0–7, 8–15) takes the runs that reach into it: n[h] of
    // them, from the run's shift (plus the half's 8) on, over its lanes.
    int n[2] = {0, 0}, shifts[2][MAX_RUNS] = {{0}};
    __m256 masks[2][MAX_RUNS];
    for (int r = 0; r < runs; r++)
        for (int h = 0; h < 2; h++) {
            if (first[r] >= 8 * h + 8 || first[r + 1] <= 8 * h)
                continue;
            int m[8];
            for (int j = 0; j < 8; j++)
                m[j] = 8 * h + j >= first[r] && 8 * h + j < first[r + 1] ? -1 : 0;
            shifts[h][n[h]] = cols[first[r]] - first[r] + 8 * h;
            masks[h][n[h]++] = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)m));
        }
    // The columns ascend, so a run's shift is never below cols[0] nor above
    // cols[15] − 15: every load lies between the row's first float and its
    // last, x[rows[p] + cols[0]] and x[rows[p] + cols[15]], which the scalar
    // loop reads too. No load leaves x, and none needs a mask.
    if (n[0] <= 2 && n[1] <= 2) {
        // At most two runs in each half, as in any panel of outputs whose
        // rows are 8 or more wide (conv2's are 11): every row of the panel
        // is four loads and two blends, with no branch. A half with one run
        // loads it twice and blends nothing in.
        for (int h = 0; h < 2; h++)
            if (n[h] < 2) {  // every half holds a run, so this is n[h] == 1
                shifts[h][1] = shifts[h][0];
                masks[h][1] = _mm256_setzero_ps();
            }
        const int s0 = shifts[0][0], s1 = shifts[0][1], s2 = shifts[1][0], s3 = shifts[1][1];
        const __m256 lo_mask = masks[0][1], hi_mask = masks[1][1];
        for (int p = 0; p < kc; p++, b += ldb) {
            const float *at = x + rows[p];
            __m256 lo = _mm256_blendv_ps(_mm256_loadu_ps(at + s0), _mm256_loadu_ps(at + s1),
                                         lo_mask);
            __m256 hi = _mm256_blendv_ps(_mm256_loadu_ps(at + s2), _mm256_loadu_ps(at + s3),
                                         hi_mask);
            _mm256_storeu_ps(b, lo);
            _mm256_storeu_ps(b + 8, hi);
        }
        return;
    }
    for (int p = 0; p < kc; p++, b += ldb) {
        const float *at = x + rows[p];
        _mm256_storeu_ps(b, half_row(at, n[0], shifts[0], masks[0]));
        _mm256_storeu_ps(b + 8, half_row(at, n[1], shifts[1], masks[1]));
    }
}
// end listing


// The transpose of conv_implicit_parts.h for nr a multiple of 8: 8×8 blocks, eight
// loads of one tap's eight outputs each, turned round in registers, stored
// as eight rows of eight taps. A block whose loads would leave x[0 … span),
// or that has taps past nj, goes element by element.

// listing: transpose_avx2
void conv_transpose_avx2(const float *x, long span, long at, int len, const int *cols, int nj,
                         int nr, float *b)
{
    for (int p0 = 0; p0 < len; p0 += 8) {
        int rows = len - p0 < 8 ? len - p0 : 8;
        const float *from = x + at + p0;
        int inside = at + p0 + cols[nj - 1] + 8 <= span; // cols ascend: the last reaches furthest
        for (int j0 = 0; j0 < nr; j0 += 8) {
            float *out = b + (long)p0 * nr + j0;
            if (!inside || j0 + 8 > nj) {
                for (int p = 0; p < rows; p++)
                    for (int j = j0; j < j0 + 8; j++)
                        out[(long)p * nr + j - j0] = j < nj ? from[p + cols[j]] : 0.0f;
                continue;
            }
            const int *c = cols + j0;
            __m256 r[8] = {_mm256_loadu_ps(from + c[0]), _mm256_loadu_ps(from + c[1]),
                           _mm256_loadu_ps(from + c[2]), _mm256_loadu_ps(from + c[3]),
                           _mm256_loadu_ps(from + c[4]), _mm256_loadu_ps(from + c[5]),
                           _mm256_loadu_ps(from + c[6]), _mm256_loadu_ps(from + c[7])};
            transpose8(r);
            // The block's first rows rows, each by a constant index: a loop
            // over r[p] would send r through the stack.
            switch (rows) {
            case 8:
                _mm256_storeu_ps(out + 7L * nr, r[7]); // fall through
            case 7:
                _mm256_storeu_ps(out + 6L * nr, r[6]); // fall through
            case 6:
                _mm256_storeu_ps(out + 5L * nr, r[5]); // fall through
            case 5:
                _mm256_storeu_ps(out + 4L * nr, r[4]); // fall through
            case 4:
                _mm256_storeu_ps(out + 3L * nr, r[3]); // fall through
            case 3:
                _mm256_storeu_ps(out + 2L * nr, r[2]); // fall through
            case 2:
                _mm256_storeu_ps(out + nr, r[1]); // fall through
            default:
                _mm256_storeu_ps(out, r[0]);
            }
        }
    }
}
// end listing

// listing: sliver6_avx2
// One sliver of A for the AVX2 micro-kernel (mr = 6), as pack_a_panel
// packs it: a[p·6 + i] = A[i·lda + p] for i < 6, p < kc. Eight columns at a
// time: six rows loaded (the last two twice, ignored), an 8×8 transpose,
// and eight stores of eight floats, 6 apart: each store's last two floats
// are the next one's first two, overwritten in order. The last column of the
// sliver is stored as four and two, so nothing past the sliver is written.
void conv_pack_sliver6_avx2(int kc, const float *A, long lda, float *a)
{
    int p0 = 0;
    for (; p0 + 8 <= kc; p0 += 8) {
        const float *col = A + p0;
        __m256 r[8] = {_mm256_loadu_ps(col),           _mm256_loadu_ps(col + lda),
                       _mm256_loadu_ps(col + 2 * lda), _mm256_loadu_ps(col + 3 * lda),
                       _mm256_loadu_ps(col + 4 * lda), _mm256_loadu_ps(col + 5 * lda)};
        r[6] = r[4];
        r[7] = r[5];
        transpose8(r);
        float *out = a + (long)p0 * 6;
        _mm256_storeu_ps(out, r[0]);
        _mm256_storeu_ps(out + 6, r[1]);
        _mm256_storeu_ps(out + 12, r[2]);
        _mm256_storeu_ps(out + 18, r[3]);
        _mm256_storeu_ps(out + 24, r[4]);
        _mm256_storeu_ps(out + 30, r[5]);
        _mm256_storeu_ps(out + 36, r[6]);
        if (p0 + 8 < kc) {
            _mm256_storeu_ps(out + 42, r[7]);
        } else {
            _mm_storeu_ps(out + 42, _mm256_castps256_ps128(r[7]));
            _mm_storel_pi((__m64 *)(out + 46), _mm256_extractf128_ps(r[7], 1));
        }
    }
    for (; p0 < kc; p0++)
        for (int i = 0; i < 6; i++)
            a[(long)p0 * 6 + i] = A[i * lda + p0];
}
// end listing

// listing: col2im_avx2
// conv_col2im_scalar with a row of dx 8 floats at a time: the chunk's sum
// in a register, and for each tap a masked load of the 8 floats of col that
// land on it. Lanes with no float there (before or past the row of col, or
// past dx's row) take −0, which leaves any sum as it was (x + −0 = x, even
// for x = −0): the lanes that have one get col2im's sums exactly. The masks
// depend only on the chunk and v, so they are made once. Each sum is a chain
// of dependent adds, so chunks go two at a time, two chains in flight. Rows
// or filters wider than the mask table go to the plain loop.
enum { MAX_CHUNKS = 8, MAX_KW = 8 };
// BEGIN SOLUTION task 8.2: col2im at stride 1, as a gather, 8 floats at a time

struct col2im_masks {
    __m256i take[MAX_CHUNKS][MAX_KW];  // lanes that have a float of col for tap v
    __m256 fill[MAX_CHUNKS][MAX_KW];   // −0 in the others
    __m256i inside[MAX_CHUNKS];        // lanes inside dx's row
};

// Chunks k … k + n − 1 (n is 1 or 2) of dx's row iy of channel ch.
static inline void col2im_chunks(const struct conv_geom *g, const struct col2im_masks *mk,
                                 const float *col, long ldcol, int ch, int iy, int k, int n,
                                 float *row)
{
    int x0 = 8 * k;
    __m256 s0 = x0 + 8 <= g->w ? _mm256_loadu_ps(row + x0)
                               : _mm256_maskload_ps(row + x0, mk->inside[k]);
    __m256 s1 = _mm256_setzero_ps();
    if (n == 2)
        s1 = x0 + 16 <= g->w ? _mm256_loadu_ps(row + x0 + 8)
                             : _mm256_maskload_ps(row + x0 + 8, mk->inside[k + 1]);
    for (int u = 0; u < g->kh; u++) {
        int r = iy + g->pad - u;
        if (r < 0 || r >= g->oh)
            continue;
        // Tap (u, v)'s float for lane l is at from[l − v].
        const float *from = col + ((long)(ch * g->kh + u) * g->kw) * ldcol + (long)r * g->ow +
                            x0 + g->pad;
        for (int v = 0; v < g->kw; v++, from += ldcol) {
            __m256 t = _mm256_maskload_ps(from - v, mk->take[k][v]);
            s0 = _mm256_add_ps(s0, _mm256_or_ps(t, mk->fill[k][v]));
            if (n == 2) {
                t = _mm256_maskload_ps(from + 8 - v, mk->take[k + 1][v]);
                s1 = _mm256_add_ps(s1, _mm256_or_ps(t, mk->fill[k + 1][v]));
            }
        }
    }
    if (x0 + 8 <= g->w)
        _mm256_storeu_ps(row + x0, s0);
    else
        _mm256_maskstore_ps(row + x0, mk->inside[k], s0);
    if (n == 2) {
        if (x0 + 16 <= g->w)
            _mm256_storeu_ps(row + x0 + 8, s1);
        else
            _mm256_maskstore_ps(row + x0 + 8, mk->inside[k + 1], s1);
    }
}

// in the kit:
// END SOLUTION
void conv_col2im_avx2(const struct conv_geom *g, const float *col, long ldcol, float *dx)
{
    // BEGIN SOLUTION task 8.2: col2im at stride 1, as a gather, 8 floats at a time
    int chunks = (g->w + 7) / 8;
    if (chunks > MAX_CHUNKS || g->kw > MAX_KW) {
        conv_col2im_scalar(g, col, ldcol, dx);
        return;
    }
    struct col2im_masks mk;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int k = 0; k < chunks; k++) {
        int x0 = 8 * k;
        mk.inside[k] = _mm256_cmpgt_epi32(_mm256_set1_epi32(g->w - x0), lane);
        for (int v = 0; v < g->kw; v++) {
            __m256i q = _mm256_add_epi32(lane, _mm256_set1_epi32(x0 + g->pad - v));
            __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(q, _mm256_set1_epi32(-1)),
                                          _mm256_cmpgt_epi32(_mm256_set1_epi32(g->ow), q));
            mk.take[k][v] = _mm256_and_si256(ok, mk.inside[k]);
            mk.fill[k][v] =
                _mm256_andnot_ps(_mm256_castsi256_ps(mk.take[k][v]), _mm256_set1_ps(-0.0f));
        }
    }
    for (int ch = 0; ch < g->c; ch++)
        for (int iy = 0; iy < g->h; iy++) {
            float *row = dx + ((long)ch * g->h + iy) * g->w;
            int k = 0;
            for (; k + 2 <= chunks; k += 2)
                col2im_chunks(g, &mk, col, ldcol, ch, iy, k, 2, row);
            if (k < chunks)
                col2im_chunks(g, &mk, col, ldcol, ch, iy, k, 1, row);
        }
    // in the kit: conv_col2im_scalar(g, col, ldcol, dx);
    // END SOLUTION
}
// end listing
#endif
