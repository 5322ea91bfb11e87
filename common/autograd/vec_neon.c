// The elementwise loops with NEON: 4 floats a vector; the last n % 4
// elements take the scalar loop. No FMA: the same bits as the scalar reference.
// vec.h sits outside the guard so the file is never an empty translation unit.
#include "vec.h"

#if defined(__aarch64__)

#include <arm_neon.h>

enum { L = 4 };

void vec_add_neon(long n, float *out, const float *a, const float *b)
{
    long i = 0;
    for (; i + L <= n; i += L)
        vst1q_f32(out + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
    vec_add_scalar(n - i, out + i, a + i, b + i);
}

void vec_add_to_neon(long n, float *dst, const float *src)
{
    long i = 0;
    for (; i + L <= n; i += L)
        vst1q_f32(dst + i, vaddq_f32(vld1q_f32(dst + i), vld1q_f32(src + i)));
    vec_add_to_scalar(n - i, dst + i, src + i);
}

void vec_relu_neon(long n, float *out, const float *x)
{
    // Not vmaxq_f32: it passes a NaN through, where the scalar loop gives 0.
    const float32x4_t zero = vdupq_n_f32(0.0f);
    long i = 0;
    for (; i + L <= n; i += L) {
        float32x4_t v = vld1q_f32(x + i);
        uint32x4_t keep = vcgtq_f32(v, zero);
        vst1q_f32(out + i, vreinterpretq_f32_u32(vandq_u32(keep, vreinterpretq_u32_f32(v))));
    }
    vec_relu_scalar(n - i, out + i, x + i);
}

void vec_relu_backward_neon(long n, float *dx, const float *y, const float *dy)
{
    // BEGIN SOLUTION task 6.2: the scalar loop with 4 floats a vector, the same bits
    const float32x4_t zero = vdupq_n_f32(0.0f);
    long i = 0;
    for (; i + L <= n; i += L) {
        uint32x4_t keep = vcgtq_f32(vld1q_f32(y + i), zero);
        float32x4_t g = vreinterpretq_f32_u32(
            vandq_u32(keep, vreinterpretq_u32_f32(vld1q_f32(dy + i))));
        vst1q_f32(dx + i, vaddq_f32(vld1q_f32(dx + i), g));
    }
    vec_relu_backward_scalar(n - i, dx + i, y + i, dy + i);
    // stub: vec_relu_backward_scalar(n, dx, y, dy);
    // END SOLUTION
}

#endif
