// The max-pooling row (pool_row.h) with AVX2: 8 outputs at a time, the
// rest by the plain loop.
#include <immintrin.h>
#include <string.h>

#include "pool_row.h"

// The scalar rule for 8 lanes: a is larger than b, or a NaN where b is not;
// all ones in a lane where it holds.
static __m256 beats8(__m256 a, __m256 b)
{
    return _mm256_and_ps(_mm256_cmp_ps(a, b, _CMP_NLE_UQ), _mm256_cmp_ps(b, b, _CMP_ORD_Q));
}

// 16 floats of a row as its 8 even columns (left) or odd ones (right), in
// order: shuffle_ps picks within each 128-bit half, permute4x64 puts the
// halves' pieces back in order.
static __m256 columns(__m256 a, __m256 b, int odd)
{
    __m256 s = odd ? _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))
                   : _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

static void take(__m256 v, __m256 *best, __m256i *k, int offset)
{
    __m256 win = beats8(v, *best);
    *best = _mm256_blendv_ps(*best, v, win);
    *k = _mm256_blendv_epi8(*k, _mm256_set1_epi32(offset), _mm256_castps_si256(win));
}

void maxpool_row_avx2(const float *top, const float *bottom, int w, int ow, int first, float *y,
                      int *where)
{
    const __m256i lanes = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    int q = 0;
    for (; q + 8 <= ow; q += 8) {
        const float *t = top + 2 * q, *b = bottom + 2 * q;
        __m256 t0 = _mm256_loadu_ps(t), t1 = _mm256_loadu_ps(t + 8);
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        __m256 best = columns(t0, t1, 0);
        __m256i k = _mm256_setzero_si256();
        take(columns(t0, t1, 1), &best, &k, 1);
        take(columns(b0, b1, 0), &best, &k, w);
        take(columns(b0, b1, 1), &best, &k, w + 1);
        __m256i at = _mm256_add_epi32(_mm256_set1_epi32(first + 2 * q), lanes);
        _mm256_storeu_ps(y + q, best);
        _mm256_storeu_si256((__m256i *)(where + q), _mm256_add_epi32(at, k));
    }
    maxpool_row_scalar(top + 2 * q, bottom + 2 * q, w, ow - q, first + 2 * q, y + q, where + q);
}

// All-ones in lanes 0 .. lanes−1 (none when lanes ≤ 0).
static __m256i first_lanes(int lanes)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// 8 windows of the fused row (pool_row.h) from the 16 floats of each of
// their two rows: the maxima, each of the four elements given its bias and
// clipped first, and the codes, the lanes' low bytes gathered into 8 bytes
// (one 8-byte value: stored as two 4-byte halves and read back whole, they
// would wait for both stores to retire).
static inline __m256 relu_pool8(__m256 t0, __m256 t1, __m256 d0, __m256 d1, __m256 b,
                                long long *codes)
{
    const __m256 zero = _mm256_setzero_ps();
    const __m256i low_bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                               -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1,
                                               -1, -1, -1, -1, -1, -1);
    __m256 v[4] = {columns(t0, t1, 0), columns(t0, t1, 1), columns(d0, d1, 0),
                   columns(d0, d1, 1)};
    __m256 best = _mm256_max_ps(_mm256_add_ps(v[0], b), zero);
    __m256i k = _mm256_setzero_si256();
#pragma GCC unroll 3
    for (int at = 1; at < 4; at++) {
        __m256 r = _mm256_max_ps(_mm256_add_ps(v[at], b), zero);
        __m256 win = _mm256_cmp_ps(r, best, _CMP_GT_OQ);
        best = _mm256_blendv_ps(best, r, win);
        k = _mm256_blendv_epi8(k, _mm256_set1_epi32(at), _mm256_castps_si256(win));
    }
    __m256i packed = _mm256_shuffle_epi8(k, low_bytes);
    *codes = _mm_cvtsi128_si64(_mm_unpacklo_epi32(_mm256_castsi256_si128(packed),
                                                  _mm256_extracti128_si256(packed, 1)));
    return best;
}

// The fused row (pool_row.h): 8 windows at a time, as above. The last n < 8
// windows take the same path with masked loads and stores (a masked lane is
// never read).
void relu_pool_row_avx2(const float *top, const float *bottom, int ow, float bias, float *y,
                        unsigned char *code)
{
    const __m256 b = _mm256_set1_ps(bias);
    for (int q = 0; q < ow; q += 8) {
        int n = ow - q < 8 ? ow - q : 8;  // windows in this chunk
        __m256i m0 = first_lanes(2 * n), m1 = first_lanes(2 * n - 8);
        const float *t = top + 2 * q, *d = bottom + 2 * q;
        long long codes;
        __m256 best = relu_pool8(_mm256_maskload_ps(t, m0), _mm256_maskload_ps(t + 8, m1),
                                 _mm256_maskload_ps(d, m0), _mm256_maskload_ps(d + 8, m1), b,
                                 &codes);
        if (n == 8) {
            _mm256_storeu_ps(y + q, best);
            memcpy(code + q, &codes, 8);
        } else {
            _mm256_maskstore_ps(y + q, first_lanes(n), best);
            memcpy(code + q, &codes, (size_t)n);
        }
    }
}

// listing: relu_pool_plane_avx2
// A whole plane (pool_row.h) in one call. A row of 8 windows or fewer
// (conv2's are 5) is one chunk of plain loads: the floats past the row's
// end belong to the rows below (their lanes are computed and not kept). Its
// 8 maxima and 8 codes are stored whole: the lanes past the row land on the
// next row's outputs, which are written after it. Only a row whose loads
// would leave the plane goes to the row kernel, and the last row's stores
// go through a buffer, so nothing outside the plane's outputs is written.
void relu_pool_plane_avx2(const float *plane, int oh, int ow, float bias, float *y,
                          unsigned char *code)
{
    const __m256 b = _mm256_set1_ps(bias);
    int ph = oh / 2, pw = ow / 2;
    long size = (long)oh * ow, windows = (long)ph * pw;
    for (int r = 0; r < ph; r++) {
        const float *top = plane + 2L * r * ow, *bottom = top + ow;
        long at = (long)r * pw;
        if (pw > 8 || bottom + 16 > plane + size) {
            relu_pool_row_avx2(top, bottom, pw, bias, y + at, code + at);
            continue;
        }
        long long codes;
        __m256 best = relu_pool8(_mm256_loadu_ps(top), _mm256_loadu_ps(top + 8),
                                 _mm256_loadu_ps(bottom), _mm256_loadu_ps(bottom + 8), b, &codes);
        if (at + 8 <= windows) {
            _mm256_storeu_ps(y + at, best);
            memcpy(code + at, &codes, 8);
        } else {
            float kept[8];
            _mm256_storeu_ps(kept, best);
            memcpy(y + at, kept, sizeof(float) * (size_t)pw);
            memcpy(code + at, &codes, (size_t)pw);
        }
    }
}
// end listing

// Two vectors of 8 windows' elements, a (the left ones) and b (the right),
// interleaved into 16 floats of a row: unpack pairs them within each 128-bit
// half, permute2f128 puts the halves in order.
static void interleave(__m256 a, __m256 b, __m256 *low, __m256 *high)
{
    __m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b);
    *low = _mm256_permute2f128_ps(lo, hi, 0x20);
    *high = _mm256_permute2f128_ps(lo, hi, 0x31);
}

// listing: unpool_row_avx2
// The fused op's backward (pool_row.h), 8 windows of a row at a time: each
// window's masked gradient v = (y > 0 ? 0.0f + g : +0), then for each of the
// four places one vector, v where the code names it and +0 elsewhere (an and
// with a mask: +0 is all bits zero), interleaved into the two rows. Both
// rows are written in full, with no memset before.
static inline void unpool8(__m256 gv, __m256 yv, __m256i k, float *top, float *bottom)
{
    const __m256 zero = _mm256_setzero_ps();
    __m256 v = _mm256_and_ps(_mm256_cmp_ps(yv, zero, _CMP_GT_OQ), _mm256_add_ps(zero, gv));
    __m256 at[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++)
        at[c] = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_cmpeq_epi32(k, _mm256_set1_epi32(c))));
    __m256 t0, t1, b0, b1;
    interleave(at[0], at[1], &t0, &t1);
    interleave(at[2], at[3], &b0, &b1);
    _mm256_storeu_ps(top, t0);
    _mm256_storeu_ps(top + 8, t1);
    _mm256_storeu_ps(bottom, b0);
    _mm256_storeu_ps(bottom + 8, b1);
}

// 8 codes, widened to a lane each.
static inline __m256i codes8(const unsigned char *code)
{
    long long bytes;
    memcpy(&bytes, code, 8);
    return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes));
}

// A row of 8 windows or more ends with a full chunk that overlaps the one
// before it, the last 8 windows: their elements are written twice with the
// same values. That is cheaper than masked stores, which on Zen 3 cost many
// times a plain one (conv1's rows are 13 windows).
static inline void row8(const float *g, const float *y, const unsigned char *code, int pw, int ow,
                        float *top, float *bottom)
{
    for (int q = 0; q < pw; q += 8) {
        int s = q + 8 <= pw ? q : pw - 8;
        unpool8(_mm256_loadu_ps(g + s), _mm256_loadu_ps(y + s), codes8(code + s), top + 2 * s,
                bottom + 2 * s);
    }
    for (int j = 2 * pw; j < ow; j++)
        top[j] = bottom[j] = 0.0f;
}
// end listing

// listing: relu_pool_plane_backward_avx2
// A whole plane (pool_row.h) in one call. A row of fewer than 8 windows
// (conv2's are 5) is one chunk: masked loads (which, unlike masked stores,
// cost little on Zen 3) give its missing windows y = 0, so their lanes are
// +0, and its 16-float stores run past the row's end into the rows below,
// which are written after it; a row whose stores would leave the plane goes
// to the plain loop. The plane, just written and still in L1, is summed in
// row_sum's 32 parts, four vectors of 8 lanes.
float relu_pool_plane_backward_avx2(const float *g, const float *y, const unsigned char *code,
                                    int ph, int pw, int oh, int ow, float *plane)
{
    long size = (long)oh * ow, windows = (long)ph * pw;
    for (int r = 0; r < ph; r++) {
        long at = (long)r * pw, from = 2L * r * ow;  // the row of windows, its top row
        float *top = plane + from, *bottom = top + ow;
        if (pw >= 8) {
            row8(g + at, y + at, code + at, pw, ow, top, bottom);
        } else if (from + ow + 16 <= size) {
            __m256i m = first_lanes(pw);
            unsigned char bytes[8] = {0};
            if (at + 8 <= windows)
                memcpy(bytes, code + at, 8);  // in the plane: the lanes past pw are masked
            else
                for (int q = 0; q < pw; q++)
                    bytes[q] = code[at + q];
            unpool8(_mm256_maskload_ps(g + at, m), _mm256_maskload_ps(y + at, m), codes8(bytes),
                    top, bottom);
        } else {
            relu_pool_row_backward_scalar(g + at, y + at, code + at, pw, ow, top, bottom);
        }
    }
    if (oh > 2 * ph) {
        // The odd last row: zeros, its last chunk overlapping the one before.
        float *last = plane + 2L * ph * ow;
        if (ow >= 8)
            for (int j = 0; j < ow; j += 8)
                _mm256_storeu_ps(last + (j + 8 <= ow ? j : ow - 8), _mm256_setzero_ps());
        else
            for (int j = 0; j < ow; j++)
                last[j] = 0.0f;
    }
    // row_sum's 32 parts in four vectors, part 8k + l in lane l of sum[k]:
    // each block of 32 floats adds its four vectors into the four sums; after
    // the last whole block, the vectors left go into sum[0], sum[1], ... in
    // order, and the floats left into the parts that follow.
    __m256 sum[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    long p = 0;
    for (; p + ROW_SUM_PARTS <= size; p += ROW_SUM_PARTS)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            sum[k] = _mm256_add_ps(sum[k], _mm256_loadu_ps(plane + p + 8 * k));
    int k = 0;
    for (; p + 8 <= size; p += 8, k++)
        sum[k] = _mm256_add_ps(sum[k], _mm256_loadu_ps(plane + p));
    float part[ROW_SUM_PARTS];
    for (int j = 0; j < 4; j++)
        _mm256_storeu_ps(part + 8 * j, sum[j]);
    for (int l = 8 * k; p < size; p++, l++)
        part[l] += plane[p];
    return row_sum_parts(part);
}
// end listing
