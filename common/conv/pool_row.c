// The row of 2×2 max pooling (pool_row.h): the plain loop, and the table of
// it and its vector versions by ISA.
#include <stddef.h>

#include "pool_row.h"

// listing: maxpool_row
// 1 when a takes b's place as the maximum: it is larger, or it is a NaN and
// b is not (a NaN is passed on, not hidden). !(a <= b) is true when a > b
// and when either is a NaN; b == b is false when b is a NaN, which then
// stays.
static int beats(float a, float b)
{
    return !(a <= b) & (b == b);
}

void maxpool_row_scalar(const float *top, const float *bottom, int w, int ow, int first, float *y,
                        int *where)
{
    for (int q = 0; q < ow; q++) {
        const float *t = top + 2 * q, *b = bottom + 2 * q;
        float best = t[0];
        int k = 0;  // where best is, from t[0]: 0, 1, w or w + 1
        if (beats(t[1], best)) {
            best = t[1];
            k = 1;
        }
        if (beats(b[0], best)) {
            best = b[0];
            k = w;
        }
        if (beats(b[1], best)) {
            best = b[1];
            k = w + 1;
        }
        y[q] = best;
        where[q] = first + 2 * q + k;
    }
}
// end listing

static maxpool_row_fn *const by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = maxpool_row_scalar,
#if defined(__x86_64__)
    [ISA_AVX2] = maxpool_row_avx2,
    [ISA_AVX512] = maxpool_row_avx512,
#endif
#if defined(__aarch64__)
    [ISA_NEON] = maxpool_row_neon,
#endif
};

maxpool_row_fn *maxpool_row_kernel(enum isa isa)
{
    isa_count_use(isa);
    return by_isa[isa];
}

// listing: relu_pool_row
void relu_pool_row_scalar(const float *top, const float *bottom, int ow, float bias, float *y,
                          unsigned char *code)
{
    for (int q = 0; q < ow; q++) {
        const float v[4] = {top[2 * q] + bias, top[2 * q + 1] + bias, bottom[2 * q] + bias,
                            bottom[2 * q + 1] + bias};
        float best = v[0] > 0.0f ? v[0] : 0.0f;
        int k = 0;
        for (int at = 1; at < 4; at++) {
            float r = v[at] > 0.0f ? v[at] : 0.0f;
            k = r > best ? at : k;
            best = r > best ? r : best;
        }
        y[q] = best;
        code[q] = (unsigned char)k;
    }
}
// end listing

// The fused row has no AVX-512 version: an AVX-512 CPU (ISA_AVX512) runs
// the AVX2 row, 8 windows at a time (AVX2 is part of AVX-512); AArch64
// (ISA_NEON) runs the NEON row, 4 at a time; ISA_SCALAR the plain loop.
static relu_pool_row_fn *const relu_by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = relu_pool_row_scalar,
#if defined(__x86_64__)
    [ISA_AVX2] = relu_pool_row_avx2,
    [ISA_AVX512] = relu_pool_row_avx2,
#endif
#if defined(__aarch64__)
    [ISA_NEON] = relu_pool_row_neon,
#endif
};

relu_pool_row_fn *relu_pool_row_kernel(enum isa isa)
{
    isa_count_use(isa);
    return relu_by_isa[isa];
}

// The plane, a row at a time.
void relu_pool_plane_scalar(const float *plane, int oh, int ow, float bias, float *y,
                            unsigned char *code)
{
    int ph = oh / 2, pw = ow / 2;
    for (int r = 0; r < ph; r++)
        relu_pool_row_scalar(plane + 2L * r * ow, plane + (2L * r + 1) * ow, pw, bias,
                             y + (long)r * pw, code + (long)r * pw);
}

// An AVX-512 CPU runs the AVX2 kernel, as above.
static relu_pool_plane_fn *const plane_by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = relu_pool_plane_scalar,
#if defined(__x86_64__)
    [ISA_AVX2] = relu_pool_plane_avx2,
    [ISA_AVX512] = relu_pool_plane_avx2,
#endif
#if defined(__aarch64__)
    [ISA_NEON] = relu_pool_plane_neon,
#endif
};

relu_pool_plane_fn *relu_pool_plane_kernel(enum isa isa)
{
    isa_count_use(isa);
    return plane_by_isa[isa];
}

// listing: relu_pool_row_backward
// Each window's gradient, masked by its maximum's ReLU, goes to the one of
// its four elements its code names; the odd column at the end of a row, if
// any, gets nothing.
void relu_pool_row_backward_scalar(const float *g, const float *y, const unsigned char *code,
                                   int pw, int ow, float *top, float *bottom)
{
    for (int q = 0; q < pw; q++) {
        float v = y[q] > 0.0f ? 0.0f + g[q] : 0.0f;
        int k = code[q];
        top[2 * q] = k == 0 ? v : 0.0f;
        top[2 * q + 1] = k == 1 ? v : 0.0f;
        bottom[2 * q] = k == 2 ? v : 0.0f;
        bottom[2 * q + 1] = k == 3 ? v : 0.0f;
    }
    for (int j = 2 * pw; j < ow; j++)
        top[j] = bottom[j] = 0.0f;
}
// end listing

float row_sum_parts(const float part[ROW_SUM_PARTS])
{
    float s[8];
    for (int l = 0; l < 8; l++)
        s[l] = (part[l] + part[l + 8]) + (part[l + 16] + part[l + 24]);
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

float row_sum(const float *v, long n)
{
    float part[ROW_SUM_PARTS] = {0};
    long p = 0;
    for (; p + ROW_SUM_PARTS <= n; p += ROW_SUM_PARTS)
        for (int l = 0; l < ROW_SUM_PARTS; l++)
            part[l] += v[p + l];
    for (int l = 0; p < n; p++, l++)
        part[l] += v[p];
    return row_sum_parts(part);
}

float relu_pool_plane_backward_scalar(const float *g, const float *y, const unsigned char *code,
                                      int ph, int pw, int oh, int ow, float *plane)
{
    for (int r = 0; r < ph; r++) {
        long at = (long)r * pw;
        float *top = plane + 2L * r * ow;
        relu_pool_row_backward_scalar(g + at, y + at, code + at, pw, ow, top, top + ow);
    }
    for (long j = 2L * ph * ow; j < (long)oh * ow; j++)
        plane[j] = 0.0f;
    return row_sum(plane, (long)oh * ow);
}

// An AVX-512 CPU runs the AVX2 kernel, as above.
static relu_pool_plane_backward_fn *const back_by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = relu_pool_plane_backward_scalar,
#if defined(__x86_64__)
    [ISA_AVX2] = relu_pool_plane_backward_avx2,
    [ISA_AVX512] = relu_pool_plane_backward_avx2,
#endif
#if defined(__aarch64__)
    [ISA_NEON] = relu_pool_plane_backward_neon,
#endif
};

relu_pool_plane_backward_fn *relu_pool_plane_backward_kernel(enum isa isa)
{
    isa_count_use(isa);
    return back_by_isa[isa];
}
