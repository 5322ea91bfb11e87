// AArch64 only: Advanced SIMD is part of every AArch64 core.
#include "peak.h"

#if defined(__aarch64__)
#include <arm_neon.h>

static volatile float sink;

double peak_throughput_neon(long iters)
{
    // Twelve accumulators: more than latency (≈4 cycles) × FMA units (2–4).
    float32x4_t a0 = vdupq_n_f32(0.1f), a1 = vdupq_n_f32(0.2f), a2 = vdupq_n_f32(0.3f);
    float32x4_t a3 = vdupq_n_f32(0.4f), a4 = vdupq_n_f32(0.5f), a5 = vdupq_n_f32(0.6f);
    float32x4_t a6 = vdupq_n_f32(0.7f), a7 = vdupq_n_f32(0.8f), a8 = vdupq_n_f32(0.9f);
    float32x4_t a9 = vdupq_n_f32(1.0f), a10 = vdupq_n_f32(1.1f), a11 = vdupq_n_f32(1.2f);
    float32x4_t x = vdupq_n_f32(sink + 0.999999f), y = vdupq_n_f32(1e-6f);
    for (long i = 0; i < iters; i++) {
        // vfmaq_f32(acc, b, c) is acc + b·c.
        a0 = vfmaq_f32(y, a0, x);
        a1 = vfmaq_f32(y, a1, x);
        a2 = vfmaq_f32(y, a2, x);
        a3 = vfmaq_f32(y, a3, x);
        a4 = vfmaq_f32(y, a4, x);
        a5 = vfmaq_f32(y, a5, x);
        a6 = vfmaq_f32(y, a6, x);
        a7 = vfmaq_f32(y, a7, x);
        a8 = vfmaq_f32(y, a8, x);
        a9 = vfmaq_f32(y, a9, x);
        a10 = vfmaq_f32(y, a10, x);
        a11 = vfmaq_f32(y, a11, x);
    }
    float32x4_t s = vaddq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)),
                              vaddq_f32(vaddq_f32(a4, a5), vaddq_f32(a6, a7)));
    s = vaddq_f32(s, vaddq_f32(vaddq_f32(a8, a9), vaddq_f32(a10, a11)));
    sink = vgetq_lane_f32(s, 0);
    return 2.0 * 4.0 * 12.0 * (double)iters;
}

double peak_chain_neon(long iters)
{
    float32x4_t a = vdupq_n_f32(0.1f), x = vdupq_n_f32(sink + 0.999999f);
    float32x4_t y = vdupq_n_f32(1e-6f);
    for (long i = 0; i < iters; i++)
        a = vfmaq_f32(y, a, x);
    sink = vgetq_lane_f32(a, 0);
    return (double)iters;
}
#endif
