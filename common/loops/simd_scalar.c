// The portable kernel: the register block of the SIMD kernels in plain C,
// 4×8, for any CPU. The compiler may still put it in vector registers (SSE2
// is part of every x86-64), but it is only told the baseline instruction set.
#include "simd.h"

enum { MR = 4, NR = 8 };

#include "simd_block.h"

void matmul_simd_scalar(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    block_matmul(m, n, k, A, lda, B, ldb, C, ldc);
}
