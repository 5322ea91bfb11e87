// gemm_kernel_scalar.c: portable C micro-kernel, 4×8.
//
// 4×8 = 32 accumulators: few enough for a compiler to keep in registers on
// any 64-bit target (as 8 SSE or NEON vectors when it vectorizes the j loop),
// enough independent sums to hide the latency of the adds.
#include "gemm_parts.h"

// listing: microkernel_scalar
void gemm_kernel_scalar(int m, int n, int kc, const float *a, const float *b,
                        float *C, int ldc, float alpha, float beta)
{
    enum { MR = GEMM_SCALAR_MR, NR = GEMM_SCALAR_NR };
    float acc[MR][NR] = {{0.0f}};

    // BEGIN SOLUTION task 4.4
    // stub: (void)kc; (void)a; (void)b;
    // a is MR×kc (a[p*MR + i]), b is kc×NR (b[p*NR + j]): one rank-1 update
    // of the MR×NR block per step p.
    for (int p = 0; p < kc; p++) {
        for (int i = 0; i < MR; i++) {
            float ai = a[p * MR + i];
            for (int j = 0; j < NR; j++)
                acc[i][j] += ai * b[p * NR + j];
        }
    }
    // END SOLUTION

    // C is m×n with m ≤ MR, n ≤ NR. beta == 0 must not read C (it may be NaN).
    for (int i = 0; i < m; i++) {
        float *c = C + (long)i * ldc;
        for (int j = 0; j < n; j++) {
            if (beta == 0.0f)
                c[j] = alpha * acc[i][j];
            else
                c[j] = alpha * acc[i][j] + beta * c[j];
        }
    }
}
// end listing
