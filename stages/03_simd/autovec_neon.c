// The register block of simd_neon.c (8×12) in plain C (common/loops/simd_block.h,
// the code of simd_scalar.c), built with the AArch64 defaults at -O3: the compiler has
// to find the vectors, the broadcasts and the FMAs by itself. Compare the two
// in the benchmark. autovec.h sits outside the guard so the file is never an
// empty translation unit.
#include "autovec.h"

#if defined(__aarch64__)

enum { MR = 8, NR = 12 };

#include "simd_block.h"

void matmul_auto_neon(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc)
{
    block_matmul(m, n, k, A, lda, B, ldb, C, ldc);
}

#endif
