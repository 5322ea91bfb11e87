// The implicit GEMM's gather (conv_implicit.h) with AVX2, for full
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

#include "conv_implicit.h"
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
    int n[2] = {0, 0}, shifts[2][MAX_RUNS];
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
    for (int p = 0; p < kc; p++, b += ldb) {
        const float *at = x + rows[p];
        _mm256_storeu_ps(b, half_row(at, n[0], shifts[0], masks[0]));
        _mm256_storeu_ps(b + 8, half_row(at, n[1], shifts[1], masks[1]));
    }
}
// end listing


// The transpose of conv_implicit.h for nr a multiple of 8: 8×8 blocks, eight
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
#endif
