#include "cpu.h"
#include "simd.h"

// The AVX kernels exist only in an x86-64 build and the NEON one only in an
// AArch64 build, so each call sits behind the matching #if as well as the
// run-time check.
// listing: dispatch
void matmul_simd(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc)
{
#if defined(__x86_64__)
    if (isa_supported(ISA_AVX512)) {
        matmul_simd_avx512(m, n, k, A, lda, B, ldb, C, ldc);
        return;
    }
    if (isa_supported(ISA_AVX2)) {
        matmul_simd_avx2(m, n, k, A, lda, B, ldb, C, ldc);
        return;
    }
#endif
#if defined(__aarch64__)
    matmul_simd_neon(m, n, k, A, lda, B, ldb, C, ldc);
#else
    matmul_simd_scalar(m, n, k, A, lda, B, ldb, C, ldc);
#endif
}
// end listing
