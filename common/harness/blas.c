#include <cblas.h>
#include <string.h>

#include "blas.h"

void blas_sgemm(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, A, lda, B, ldb,
                0.0f, C, ldc);
}

void blas_gemm(int transa, int transb, int m, int n, int k, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    cblas_sgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans,
                transb ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, B, ldb, beta, C,
                ldc);
}

void blas_set_threads(int threads)
{
    openblas_set_num_threads(threads);
}

const char *blas_config(void)
{
    return openblas_get_config();
}

const char *blas_core(void)
{
    return openblas_get_corename();
}

enum isa blas_isa(void)
{
    // OpenBLAS names its x86 kernel sets after the CPU they were tuned for.
    static const char *avx512[] = {"skylakex", "cooperlake", "sapphirerapids"};
    static const char *avx2[] = {"haswell", "zen", "skylake"};
    const char *core = blas_core();
    char lower[64];
    size_t i;
    for (i = 0; core[i] && i + 1 < sizeof lower; i++)
        lower[i] = (char)(core[i] >= 'A' && core[i] <= 'Z' ? core[i] - 'A' + 'a' : core[i]);
    lower[i] = '\0';
    for (i = 0; i < sizeof avx512 / sizeof *avx512; i++)
        if (strcmp(lower, avx512[i]) == 0)
            return ISA_AVX512;
    for (i = 0; i < sizeof avx2 / sizeof *avx2; i++)
        if (strcmp(lower, avx2[i]) == 0)
            return ISA_AVX2;
    if (strncmp(lower, "armv8", 5) == 0 || strncmp(lower, "neoverse", 8) == 0 ||
        strncmp(lower, "cortex", 6) == 0)
        return ISA_NEON;
    return ISA_SCALAR;
}
