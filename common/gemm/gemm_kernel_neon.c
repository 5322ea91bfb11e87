// gemm_kernel_neon.c: NEON micro-kernel for AArch64, 8×12.
//
// Why 8×12: AArch64 has 32 128-bit registers. An 8×12 block of C is
// 8 rows × 3 vectors = 24 accumulators (plenty to cover FMA latency on two or
// more pipes), plus 3 for a row of B and 1 for the element of A in use: 28.
// Each element of A is passed as a scalar to vfmaq_n_f32, so how many
// registers A takes is the compiler's choice; gcc 12.2 gives each of the 8
// its own register and spills accumulators. (Two vld1q_f32 of the packed A and
// vfmaq_laneq_f32 would hold them in 2 registers: 29.)

// gemm.h sits outside the guard so the file is never an empty translation unit.
#include "gemm_parts.h"

#if defined(__aarch64__)

#include <arm_neon.h>

// listing: microkernel_neon
void gemm_kernel_neon(int m, int n, int kc, const float *a, const float *b,
                      float *C, int ldc, float alpha, float beta)
{
    enum { MR = GEMM_NEON_MR, NR = GEMM_NEON_NR, V = NR / 4 };
    float32x4_t acc[MR][V];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < V; v++)
            acc[i][v] = vdupq_n_f32(0.0f);

    // a is MR×kc (a[p*MR + i]); b is kc×NR (b[p*NR + j]).
    for (int p = 0; p < kc; p++) {
        float32x4_t bv[V];
        for (int v = 0; v < V; v++)
            bv[v] = vld1q_f32(b + 4 * v);
        for (int i = 0; i < MR; i++)
            for (int v = 0; v < V; v++)
                acc[i][v] = vfmaq_n_f32(acc[i][v], bv[v], a[i]);
        a += MR;
        b += NR;
    }

    // C is m×n (m ≤ MR, n ≤ NR). NEON has no masked loads or stores, so a
    // partial row goes through a small buffer; the arithmetic stays the same.
    float32x4_t va = vdupq_n_f32(alpha);
    float32x4_t vb = vdupq_n_f32(beta);
    for (int i = 0; i < MR; i++) {
        if (i >= m) // a constant bound keeps acc[][] in registers
            break;
        float row[NR] = {0.0f};
        float *c = n == NR ? C + (long)i * ldc : row;
        if (n < NR && beta != 0.0f)
            for (int j = 0; j < n; j++)
                row[j] = C[(long)i * ldc + j];
        for (int v = 0; v < V; v++) {
            float32x4_t r = vmulq_f32(va, acc[i][v]);
            if (beta != 0.0f)
                r = vaddq_f32(r, vmulq_f32(vb, vld1q_f32(c + 4 * v)));
            vst1q_f32(c + 4 * v, r);
        }
        if (n < NR)
            for (int j = 0; j < n; j++)
                C[(long)i * ldc + j] = row[j];
    }
}
// end listing

#endif
