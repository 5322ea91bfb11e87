// The implicit GEMM's gather (conv_implicit.h) with AVX2, for full
// micro-panels of 16 columns. A panel's columns fall in runs of consecutive
// offsets (the outputs of one row of one image, or the taps of one filter
// row): a run's floats lie side by side in x, and one masked load takes up
// to eight of them. So a row of the panel is a few masked loads, one per run
// and half, OR-ed together (a masked load writes 0 in the lanes it skips,
// and never touches their memory). AVX2's gather instruction would do the
// same with sixteen loads; on Zen 3 it was slower than the scalar loop.
// And where all sixteen floats from a run's first lie inside x[0 … span),
// a plain load and a blend do what the masked load does, faster: the masked
// load is needed only at the ends of the images.
#if defined(__x86_64__)
#include <immintrin.h>

#include "conv_implicit.h"

// More runs than this and the scalar loop is as fast.
enum { MAX_RUNS = 8 };

// listing: gather16_avx2
void conv_gather16_avx2(const float *x, long span, const long *rows, int kc, const int *cols,
                        float *b)
{
    int first[MAX_RUNS + 1], runs = 0;
    for (int j = 0; j < 16; j++)
        if (j == 0 || cols[j] != cols[j - 1] + 1) {
            if (runs == MAX_RUNS) {
                conv_gather_scalar(x, rows, kc, cols, 16, 16, b);
                return;
            }
            first[runs++] = j;
        }
    first[runs] = 16;
    // Run r covers columns first[r] … first[r+1]−1, and column j of it is at
    // x[rows[p] + shift[r] + j]: lanes outside the run are masked off.
    int shift[MAX_RUNS];
    __m256i lo[MAX_RUNS], hi[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        int m[16];
        for (int j = 0; j < 16; j++)
            m[j] = j >= first[r] && j < first[r + 1] ? -1 : 0;
        shift[r] = cols[first[r]] - first[r];
        lo[r] = _mm256_loadu_si256((const __m256i *)m);
        hi[r] = _mm256_loadu_si256((const __m256i *)(m + 8));
    }
    for (int p = 0; p < kc; p++, b += 16) {
        __m256 left = _mm256_setzero_ps(), right = _mm256_setzero_ps();
        for (int r = 0; r < runs; r++) {
            long from = rows[p] + shift[r];
            const float *at = x + from;
            if (from >= 0 && from + 16 <= span) {
                left = _mm256_blendv_ps(left, _mm256_loadu_ps(at), _mm256_castsi256_ps(lo[r]));
                right =
                    _mm256_blendv_ps(right, _mm256_loadu_ps(at + 8), _mm256_castsi256_ps(hi[r]));
            } else {
                left = _mm256_or_ps(left, _mm256_maskload_ps(at, lo[r]));
                right = _mm256_or_ps(right, _mm256_maskload_ps(at + 8, hi[r]));
            }
        }
        _mm256_storeu_ps(b, left);
        _mm256_storeu_ps(b + 8, right);
    }
}
// end listing
#endif
