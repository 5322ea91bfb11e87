// The Winograd path's loops in AVX2 (conv_winograd_parts.h): each transform
// is the plain loop's (conv_winograd_scalar.c) with eight channels in a
// register and the multiplications by constants folded into FMAs; the
// layout changes turn 8×8 blocks round in registers (transpose8_avx2.h),
// the edges that do not fill a block one float at a time.
// conv_winograd_parts.h sits outside the guard so the file is never an
// empty translation unit.
#include "conv_winograd_parts.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "transpose8_avx2.h"

static inline __m256 times(float k, __m256 a)
{
    return _mm256_mul_ps(_mm256_set1_ps(k), a);
}

// k·a + b
static inline __m256 fma_k(float k, __m256 a, __m256 b)
{
    return _mm256_fmadd_ps(_mm256_set1_ps(k), a, b);
}

// listing: winograd_bt_avx2
// t = Bᵀ d, six vectors into six (conv_winograd_scalar.c's bt_column).
static inline void bt(const __m256 d[6], __m256 t[6])
{
    __m256 d4_d2 = _mm256_sub_ps(d[4], d[2]), d3_d1 = _mm256_sub_ps(d[3], d[1]);
    t[0] = fma_k(4.0f, d[0], fma_k(-5.0f, d[2], d[4]));
    t[1] = fma_k(-4.0f, _mm256_add_ps(d[1], d[2]), _mm256_add_ps(d[3], d[4]));
    t[2] = fma_k(4.0f, _mm256_sub_ps(d[1], d[2]), _mm256_sub_ps(d[4], d[3]));
    t[3] = fma_k(2.0f, d3_d1, d4_d2);
    t[4] = fma_k(-2.0f, d3_d1, d4_d2);
    t[5] = fma_k(4.0f, d[1], fma_k(-5.0f, d[3], d[5]));
}
// end listing

void wino_input_avx2(const float *d, long row, int cp, float *v, long vs)
{
    for (int c0 = 0; c0 < cp; c0 += 8) {
        __m256 t[6][6];  // t[col][a] = (Bᵀ d)[a][col]
        for (int col = 0; col < 6; col++) {
            __m256 in[6];
            for (int y = 0; y < 6; y++)
                in[y] = _mm256_loadu_ps(d + y * row + col * cp + c0);
            bt(in, t[col]);
        }
        for (int a = 0; a < 6; a++) {
            __m256 in[6] = {t[0][a], t[1][a], t[2][a], t[3][a], t[4][a], t[5][a]}, out[6];
            bt(in, out);
            for (int b = 0; b < 6; b++)
                _mm256_storeu_ps(v + (a * 6 + b) * vs + c0, out[b]);
        }
    }
}

// y = Aᵀ m, six vectors into four (at_column).
static inline void at(const __m256 m[6], __m256 y[4])
{
    __m256 s12 = _mm256_add_ps(m[1], m[2]), d12 = _mm256_sub_ps(m[1], m[2]);
    __m256 s34 = _mm256_add_ps(m[3], m[4]), d34 = _mm256_sub_ps(m[3], m[4]);
    y[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
    y[1] = fma_k(2.0f, d34, d12);
    y[2] = fma_k(4.0f, s34, s12);
    y[3] = fma_k(8.0f, d34, _mm256_add_ps(d12, m[5]));
}

void wino_output_avx2(const float *m, long ms, int cp, float *y, long row)
{
    for (int c0 = 0; c0 < cp; c0 += 8) {
        __m256 t[6][4];  // t[b][r] = (Aᵀ m)[r][b]
        for (int b = 0; b < 6; b++) {
            __m256 in[6];
            for (int a = 0; a < 6; a++)
                in[a] = _mm256_loadu_ps(m + (a * 6 + b) * ms + c0);
            at(in, t[b]);
        }
        for (int r = 0; r < 4; r++) {
            __m256 in[6] = {t[0][r], t[1][r], t[2][r], t[3][r], t[4][r], t[5][r]}, out[4];
            at(in, out);
            for (int q = 0; q < 4; q++)
                _mm256_storeu_ps(y + r * row + q * cp + c0, out[q]);
        }
    }
}

// m = A y, four vectors into six (a_column).
static inline void a_times(const __m256 y[4], __m256 m[6])
{
    __m256 even = _mm256_add_ps(y[0], y[2]), odd = _mm256_add_ps(y[1], y[3]);
    __m256 e4 = fma_k(4.0f, y[2], y[0]), o4 = fma_k(8.0f, y[3], times(2.0f, y[1]));
    m[0] = y[0];
    m[1] = _mm256_add_ps(even, odd);
    m[2] = _mm256_sub_ps(even, odd);
    m[3] = _mm256_add_ps(e4, o4);
    m[4] = _mm256_sub_ps(e4, o4);
    m[5] = y[3];
}

void wino_output_backward_avx2(const float *y, long row, int cp, float *m, long ms)
{
    for (int c0 = 0; c0 < cp; c0 += 8) {
        __m256 t[4][6];  // t[q][a] = (A dY)[a][q]
        for (int q = 0; q < 4; q++) {
            __m256 in[4];
            for (int r = 0; r < 4; r++)
                in[r] = _mm256_loadu_ps(y + r * row + q * cp + c0);
            a_times(in, t[q]);
        }
        for (int a = 0; a < 6; a++) {
            __m256 in[4] = {t[0][a], t[1][a], t[2][a], t[3][a]}, out[6];
            a_times(in, out);
            for (int b = 0; b < 6; b++)
                _mm256_storeu_ps(m + (a * 6 + b) * ms + c0, out[b]);
        }
    }
}

// d = B v, six vectors into six (b_column).
static inline void b_times(const __m256 v[6], __m256 d[6])
{
    __m256 s12 = _mm256_add_ps(v[1], v[2]), s34 = _mm256_add_ps(v[3], v[4]);
    __m256 d12 = _mm256_sub_ps(v[1], v[2]), d34 = _mm256_sub_ps(v[3], v[4]);
    d[0] = times(4.0f, v[0]);
    d[1] = fma_k(-4.0f, d12, fma_k(-2.0f, d34, times(4.0f, v[5])));
    d[2] = fma_k(-5.0f, v[0], fma_k(-4.0f, s12, _mm256_sub_ps(_mm256_setzero_ps(), s34)));
    d[3] = fma_k(2.0f, d34, fma_k(-5.0f, v[5], d12));
    d[4] = _mm256_add_ps(_mm256_add_ps(v[0], s12), s34);
    d[5] = v[5];
}

void wino_input_backward_avx2(const float *v, long vs, int cp, float *d, long row)
{
    for (int c0 = 0; c0 < cp; c0 += 8) {
        __m256 t[6][6];  // t[b][y] = (B dV)[y][b]
        for (int b = 0; b < 6; b++) {
            __m256 in[6];
            for (int a = 0; a < 6; a++)
                in[a] = _mm256_loadu_ps(v + (a * 6 + b) * vs + c0);
            b_times(in, t[b]);
        }
        for (int y = 0; y < 6; y++) {
            __m256 in[6] = {t[0][y], t[1][y], t[2][y], t[3][y], t[4][y], t[5][y]}, out[6];
            b_times(in, out);
            for (int z = 0; z < 6; z++) {
                float *at = d + y * row + z * cp + c0;
                _mm256_storeu_ps(at, _mm256_add_ps(_mm256_loadu_ps(at), out[z]));
            }
        }
    }
}

// x = Gᵀ u, six vectors into three (gt_column).
static inline void gt(const __m256 u[6], __m256 x[3])
{
    __m256 s12 = _mm256_add_ps(u[1], u[2]), s34 = _mm256_add_ps(u[3], u[4]);
    x[0] = fma_k(1.0f / 24, s34, fma_k(-1.0f / 6, s12, times(0.25f, u[0])));
    x[1] = fma_k(1.0f / 12, _mm256_sub_ps(u[3], u[4]),
                 times(1.0f / 6, _mm256_sub_ps(u[2], u[1])));
    x[2] = fma_k(1.0f / 6, _mm256_sub_ps(s34, s12), u[5]);
}

void wino_filter_backward_avx2(const float *du, long ds, int c, float *dg)
{
    for (int c0 = 0; c0 < c; c0 += 8) {
        __m256 t[6][3];  // t[b][i] = (Gᵀ dU)[i][b]
        for (int b = 0; b < 6; b++) {
            __m256 in[6];
            for (int a = 0; a < 6; a++)
                in[a] = _mm256_loadu_ps(du + (a * 6 + b) * ds + c0);
            gt(in, t[b]);
        }
        // g[k][l]: tap k of channel c0 + l, turned round to the channels'
        // 3×3s side by side as dg holds them.
        float g[9][8];
        for (int i = 0; i < 3; i++) {
            __m256 in[6] = {t[0][i], t[1][i], t[2][i], t[3][i], t[4][i], t[5][i]}, out[3];
            gt(in, out);
            for (int j = 0; j < 3; j++)
                _mm256_storeu_ps(g[i * 3 + j], out[j]);
        }
        for (int l = 0; l < 8 && c0 + l < c; l++)
            for (int k = 0; k < 9; k++)
                dg[(c0 + l) * 9 + k] += g[k][l];
    }
}

// The lanes below n of a vector: mask(n) for 0 ≤ n ≤ 8.
static inline __m256i mask(int n)
{
    static const int lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(lanes + 8 - n));
}

// The first n (< 8) floats of v into p: four, two and one at a time.
static inline void store_first(float *p, __m256 v, int n)
{
    __m128 part = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(p, part);
        part = _mm256_extractf128_ps(v, 1);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)p, part);
        part = _mm_movehl_ps(part, part);
        p += 2;
        n -= 2;
    }
    if (n == 1)
        _mm_store_ss(p, part);
}

// Eight planes' rows of eight pixels in, eight pixels' vectors of channels
// out; a row's last pixels one at a time.
int wino_to_pixels_avx2(int ch0, int c, int h, int w, const float *planes, long cs, float *px,
                        int wp, int cp, int off)
{
    int ch = ch0;
    for (; ch + 8 <= c; ch += 8)
        for (int y = 0; y < h; y++) {
            const float *from = planes + ch * cs + (long)y * w;
            float *to = px + ((long)(y + off) * wp + off) * cp + ch;
            int x = 0;
            for (; x + 8 <= w; x += 8) {
                __m256 r[8];
                for (int i = 0; i < 8; i++)
                    r[i] = _mm256_loadu_ps(from + i * cs + x);
                transpose8(r);
                for (int j = 0; j < 8; j++)
                    _mm256_storeu_ps(to + (long)(x + j) * cp, r[j]);
            }
            if (x < w) {
                // The row's last pixels: loads under a mask, so that
                // nothing past the row is read.
                __m256i in = mask(w - x);
                __m256 r[8];
                for (int i = 0; i < 8; i++)
                    r[i] = _mm256_maskload_ps(from + i * cs + x, in);
                transpose8(r);
                for (int j = 0; j < w - x; j++)
                    _mm256_storeu_ps(to + (long)(x + j) * cp, r[j]);
            }
        }
    return ch;
}

// Eight pixels' vectors in, eight planes' rows out: written, or added.
int wino_to_planes_avx2(int ch0, int c, int h, int w, const float *px, int wp, int cp, int off,
                        float *planes, long cs, int add)
{
    int ch = ch0;
    for (; ch + 8 <= c; ch += 8)
        for (int y = 0; y < h; y++) {
            const float *from = px + ((long)(y + off) * wp + off) * cp + ch;
            float *to = planes + ch * cs + (long)y * w;
            int x = 0;
            for (; x + 8 <= w; x += 8) {
                __m256 r[8];
                for (int i = 0; i < 8; i++)
                    r[i] = _mm256_loadu_ps(from + (long)(x + i) * cp);
                transpose8(r);
                for (int j = 0; j < 8; j++) {
                    float *at = to + j * cs + x;
                    _mm256_storeu_ps(at, add ? _mm256_add_ps(_mm256_loadu_ps(at), r[j]) : r[j]);
                }
            }
            if (x < w) {
                // The row's last pixels: the stores cut to length
                // (store_first), not masked, which costs several times
                // more on AMD's cores.
                __m256i in = mask(w - x);
                __m256 r[8];
                for (int i = 0; i < 8; i++)
                    r[i] = i < w - x ? _mm256_loadu_ps(from + (long)(x + i) * cp)
                                     : _mm256_setzero_ps();
                transpose8(r);
                for (int j = 0; j < 8; j++) {
                    float *at = to + j * cs + x;
                    __m256 old = add ? _mm256_maskload_ps(at, in) : _mm256_setzero_ps();
                    store_first(at, _mm256_add_ps(old, r[j]), w - x);
                }
            }
        }
    return ch;
}

#endif
