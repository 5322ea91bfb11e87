// The optimizers' update loops with NEON: 4 floats a vector; the last n % 4
// elements take the scalar loop. The same operations in the same order as
// optim.c's scalar loops and no fused multiply-add (vmulq then vaddq, never
// vmlaq/vfmaq), so every path gives the same bits.
// optim.h sits outside the guard so the file is never an empty translation unit.
#include "optim.h"

#if defined(__aarch64__)

#include <arm_neon.h>

enum { L = 4 };

void sgd_update_neon(long n, float *p, const float *g, float *v, float lr, float momentum,
                     float wd)
{
    const float32x4_t vlr = vdupq_n_f32(lr), vmu = vdupq_n_f32(momentum), vwd = vdupq_n_f32(wd);
    long i = 0;
    for (; i + L <= n; i += L) {
        float32x4_t pi = vld1q_f32(p + i);
        float32x4_t gi = vaddq_f32(vld1q_f32(g + i), vmulq_f32(vwd, pi));
        float32x4_t vi = vaddq_f32(vmulq_f32(vmu, vld1q_f32(v + i)), gi);
        vst1q_f32(v + i, vi);
        vst1q_f32(p + i, vsubq_f32(pi, vmulq_f32(vlr, vi)));
    }
    sgd_update_scalar(n - i, p + i, g + i, v + i, lr, momentum, wd);
}

void adam_update_neon(long n, float *p, const float *g, float *m, float *v,
                      const struct adam_step *s)
{
    // BEGIN SOLUTION task 7.2: the scalar update with 4 floats a vector, same order, no FMA
    const float32x4_t lr = vdupq_n_f32(s->lr), wd = vdupq_n_f32(s->weight_decay);
    const float32x4_t b1 = vdupq_n_f32(s->beta1), c1 = vdupq_n_f32(1.0f - s->beta1);
    const float32x4_t b2 = vdupq_n_f32(s->beta2), c2 = vdupq_n_f32(1.0f - s->beta2);
    const float32x4_t bias1 = vdupq_n_f32(s->bias1), bias2 = vdupq_n_f32(s->bias2);
    const float32x4_t eps = vdupq_n_f32(s->eps);
    long i = 0;
    for (; i + L <= n; i += L) {
        float32x4_t gi = vaddq_f32(vld1q_f32(g + i), vmulq_f32(wd, vld1q_f32(p + i)));
        float32x4_t mi = vaddq_f32(vmulq_f32(b1, vld1q_f32(m + i)), vmulq_f32(c1, gi));
        float32x4_t vi = vaddq_f32(vmulq_f32(b2, vld1q_f32(v + i)),
                                   vmulq_f32(c2, vmulq_f32(gi, gi)));
        vst1q_f32(m + i, mi);
        vst1q_f32(v + i, vi);
        float32x4_t mhat = vdivq_f32(mi, bias1), vhat = vdivq_f32(vi, bias2);
        float32x4_t step = vdivq_f32(vmulq_f32(lr, mhat), vaddq_f32(vsqrtq_f32(vhat), eps));
        vst1q_f32(p + i, vsubq_f32(vld1q_f32(p + i), step));
    }
    adam_update_scalar(n - i, p + i, g + i, m + i, v + i, s);
    // stub: adam_update_scalar(n, p, g, m, v, s);
    // END SOLUTION
}

#endif
