// The max-pooling row (pool_row.h) with NEON: 4 outputs at a time, the
// rest by the plain loop. vld2q splits 8 floats into the even columns (each
// window's left element) and the odd ones (its right) as it loads them.
// pool_row.h sits outside the guard so the file is never an empty
// translation unit.
#include "pool_row.h"

#if defined(__aarch64__)

#include <arm_neon.h>

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

#endif
