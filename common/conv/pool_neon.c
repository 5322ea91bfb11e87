// The max-pooling row and the fused row's backward (pool_row.h) with NEON:
// 4 windows at a time, the rest by the plain loop. vld2q splits 8 floats
// into the even columns (each window's left element) and the odd ones (its
// right) as it loads them; vst2q joins them as it stores.
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

// The fused row's backward (pool_row.h), 4 windows at a time: the masked
// gradient of each window, one vector for each of its four places (the
// gradient where the code names it, +0 elsewhere), and vst2q interleaves the
// left and right ones into a row as it stores them.
void relu_pool_row_backward_neon(const float *g, const float *y, const unsigned char *code,
                                 int pw, int ow, float *top, float *bottom)
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

#endif
