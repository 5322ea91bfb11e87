// The register block of simd_avx512.c (14×32) in plain C (common/loops/simd_block.h,
// the code of simd_scalar.c), built with -mavx512f -mfma at -O3: the compiler has
// to find the vectors, the broadcasts and the FMAs by itself. Compare the two
// in the benchmark. autovec.h sits outside the guard so the file is never an
// empty translation unit.
#include "autovec.h"

#if defined(__x86_64__)

enum { MR = 14, NR = 32 };

#include "simd_block.h"

void matmul_auto_avx512(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    block_matmul(m, n, k, A, lda, B, ldb, C, ldc);
}

#endif
