// The rows of max pooling (pool_row.h) with NEON, 4 windows at a time: the
// plain one (its last windows by the plain loop), the one fused with the
// bias and ReLU, and that one's backward, a plane at a time. vld2q splits 8
// floats into the even columns (each window's left element) and the odd
// ones (its right) as it loads them; vst2q joins them as it stores.
// pool_row.h sits outside the guard so the file is never an empty
// translation unit.
#include "pool_row.h"

#if defined(__aarch64__)

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

static void take(float32x4_t v, float32x4_t *best, int32x4_t *k, int offset)
{
    // v is larger than best, or a NaN where best is not
    uint32x4_t win = vandq_u32(vmvnq_u32(vcleq_f32(v, *best)), vceqq_f32(*best, *best));
    *best = vbslq_f32(win, v, *best);
    *k = vbslq_s32(win, vdupq_n_s32(offset), *k);
}

void maxpool_row_neon(const float *top, const float *bottom, int w, int ow, int first, float *y,
                      int *where)
{
    const int32x4_t lanes = {0, 2, 4, 6};
    int q = 0;
    for (; q + 4 <= ow; q += 4) {
        float32x4x2_t t = vld2q_f32(top + 2 * q), b = vld2q_f32(bottom + 2 * q);
        float32x4_t best = t.val[0];
        int32x4_t k = vdupq_n_s32(0);
        take(t.val[1], &best, &k, 1);
        take(b.val[0], &best, &k, w);
        take(b.val[1], &best, &k, w + 1);
        int32x4_t at = vaddq_s32(vdupq_n_s32(first + 2 * q), lanes);
        vst1q_f32(y + q, best);
        vst1q_s32(where + q, vaddq_s32(at, k));
    }
    maxpool_row_scalar(top + 2 * q, bottom + 2 * q, w, ow - q, first + 2 * q, y + q, where + q);
}

// The fused row (pool_row.h): 4 windows of the rows t and d at a time, each
// of the four elements given its bias, then clipped as vec_relu_neon clips
// (vmaxq_f32 would pass a NaN on). Writes the first n ≤ 4 maxima and codes.
static void relu_pool4(const float *t, const float *d, float32x4_t bias, int n, float *y,
                       unsigned char *code)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    float32x4x2_t tv = vld2q_f32(t), dv = vld2q_f32(d);
    float32x4_t v[4] = {tv.val[0], tv.val[1], dv.val[0], dv.val[1]};
    float32x4_t best = vaddq_f32(v[0], bias);
    best = vreinterpretq_f32_u32(
        vandq_u32(vcgtq_f32(best, zero), vreinterpretq_u32_f32(best)));
    uint32x4_t k = vdupq_n_u32(0);
    for (int at = 1; at < 4; at++) {
        float32x4_t r = vaddq_f32(v[at], bias);
        r = vreinterpretq_f32_u32(vandq_u32(vcgtq_f32(r, zero), vreinterpretq_u32_f32(r)));
        uint32x4_t win = vcgtq_f32(r, best);
        best = vbslq_f32(win, r, best);
        k = vbslq_u32(win, vdupq_n_u32((uint32_t)at), k);
    }
    // The codes are the lanes' low bytes, narrowed twice.
    unsigned char kb[8];
    vst1_u8(kb, vmovn_u16(vcombine_u16(vmovn_u32(k), vdup_n_u16(0))));
    memcpy(code, kb, (size_t)n);
    if (n == 4) {
        vst1q_f32(y, best);
        return;
    }
    float yb[4];
    vst1q_f32(yb, best);
    memcpy(y, yb, sizeof(float) * (size_t)n);
}

// The last n < 4 windows take the same path, their rows copied into
// buffers of zeros: conv2's rows are 5 windows wide, and relu_pool_row_avx2
// found a plain loop over a row's end cost more than the fusion saves.
void relu_pool_row_neon(const float *top, const float *bottom, int ow, float bias, float *y,
                        unsigned char *code)
{
    const float32x4_t b = vdupq_n_f32(bias);
    int q = 0;
    for (; q + 4 <= ow; q += 4)
        relu_pool4(top + 2 * q, bottom + 2 * q, b, 4, y + q, code + q);
    if (q < ow) {
        float t[8] = {0}, d[8] = {0};
        memcpy(t, top + 2 * q, sizeof(float) * 2 * (size_t)(ow - q));
        memcpy(d, bottom + 2 * q, sizeof(float) * 2 * (size_t)(ow - q));
        relu_pool4(t, d, b, ow - q, y + q, code + q);
    }
}

// The fused plane (pool_row.h), a row at a time, 4 windows at a time. A
// row's last n < 4 windows load their 8 floats straight from the plane (the
// floats past the row's end are the next row's, computed and not kept);
// only where those loads would leave the plane do they go through the
// buffers of zeros of relu_pool_row_neon.
void relu_pool_plane_neon(const float *plane, int oh, int ow, float bias, float *y,
                          unsigned char *code)
{
    const float32x4_t b = vdupq_n_f32(bias);
    int ph = oh / 2, pw = ow / 2;
    const float *end = plane + (long)oh * ow;
    for (int r = 0; r < ph; r++) {
        const float *top = plane + 2L * r * ow, *bottom = top + ow;
        float *yr = y + (long)r * pw;
        unsigned char *cr = code + (long)r * pw;
        int q = 0;
        for (; q + 4 <= pw; q += 4)
            relu_pool4(top + 2 * q, bottom + 2 * q, b, 4, yr + q, cr + q);
        if (q == pw)
            continue;
        if (bottom + 2 * q + 8 <= end)
            relu_pool4(top + 2 * q, bottom + 2 * q, b, pw - q, yr + q, cr + q);
        else
            relu_pool_row_neon(top + 2 * q, bottom + 2 * q, pw - q, bias, yr + q, cr + q);
    }
}

// The fused row's backward (pool_row.h), 4 windows at a time: the masked
// gradient of each window, one vector for each of its four places (the
// gradient where the code names it, +0 elsewhere), and vst2q interleaves the
// left and right ones into a row as it stores them.
static inline void row_backward(const float *g, const float *y, const unsigned char *code, int pw,
                                int ow, float *top, float *bottom)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    int q = 0;
    for (; q + 4 <= pw; q += 4) {
        uint32_t bytes;
        memcpy(&bytes, code + q, 4);
        uint32x4_t k = vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(bytes))));
        uint32x4_t pos = vcgtq_f32(vld1q_f32(y + q), zero);
        uint32x4_t v = vandq_u32(pos, vreinterpretq_u32_f32(vaddq_f32(zero, vld1q_f32(g + q))));
        float32x4x2_t t, b;
        t.val[0] = vreinterpretq_f32_u32(vandq_u32(v, vceqq_u32(k, vdupq_n_u32(0))));
        t.val[1] = vreinterpretq_f32_u32(vandq_u32(v, vceqq_u32(k, vdupq_n_u32(1))));
        b.val[0] = vreinterpretq_f32_u32(vandq_u32(v, vceqq_u32(k, vdupq_n_u32(2))));
        b.val[1] = vreinterpretq_f32_u32(vandq_u32(v, vceqq_u32(k, vdupq_n_u32(3))));
        vst2q_f32(top + 2 * q, t);
        vst2q_f32(bottom + 2 * q, b);
    }
    relu_pool_row_backward_scalar(g + q, y + q, code + q, pw - q, ow - 2 * q, top + 2 * q,
                                  bottom + 2 * q);
}

// A whole plane (pool_row.h) in one call: its rows as above, a last odd row
// zero, and the sum of the plane while it is in L1, row_sum's 32 parts in
// eight vectors of 4.
float relu_pool_plane_backward_neon(const float *g, const float *y, const unsigned char *code,
                                    int ph, int pw, int oh, int ow, float *plane)
{
    long size = (long)oh * ow;
    for (int r = 0; r < ph; r++) {
        long at = (long)r * pw;
        float *top = plane + 2L * r * ow;
        row_backward(g + at, y + at, code + at, pw, ow, top, top + ow);
    }
    for (long j = 2L * ph * ow; j < size; j++)
        plane[j] = 0.0f;
    float32x4_t sum[8];
    for (int k = 0; k < 8; k++)
        sum[k] = vdupq_n_f32(0.0f);
    long p = 0;
    for (; p + ROW_SUM_PARTS <= size; p += ROW_SUM_PARTS)
        for (int k = 0; k < 8; k++)
            sum[k] = vaddq_f32(sum[k], vld1q_f32(plane + p + 4 * k));
    int k = 0;
    for (; p + 4 <= size; p += 4, k++)
        sum[k] = vaddq_f32(sum[k], vld1q_f32(plane + p));
    float part[ROW_SUM_PARTS];
    for (int j = 0; j < 8; j++)
        vst1q_f32(part + 4 * j, sum[j]);
    for (int l = 4 * k; p < size; p++, l++)
        part[l] += plane[p];
    return row_sum_parts(part);
}

#endif
