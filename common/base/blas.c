#include <cblas.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

// Appends printf-style text to buf (size bytes), never past its end.
static void add(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (*used < size)
        *used += (size_t)vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
}

int blas_limit_note_for(enum isa blas, const char *core, enum isa best, const char *coretype,
                        const char *l2_size, const char *stage, char *buf, size_t size)
{
    int core_set = coretype != NULL && coretype[0] != '\0';
    int l2_set = l2_size != NULL && l2_size[0] != '\0';
    // Fewer lanes than the CPU's widest: OpenBLAS's peak is that much lower.
    // (A core name blas_isa() does not know comes back as scalar; only the
    // variable can be blamed for it then.)
    int lesser = isa_lanes(blas) < isa_lanes(best) && (blas != ISA_SCALAR || core_set);
    if (size > 0)
        buf[0] = '\0';
    if (!lesser && !l2_set)
        return 0;
    size_t used = 0;
    add(buf, size, &used, "OpenBLAS is not on its best path for this CPU:");
    if (lesser) {
        int ratio = isa_lanes(best) / isa_lanes(blas);
        if (core_set)
            add(buf, size, &used, " OPENBLAS_CORETYPE=%s holds it to its %s kernels", coretype,
                core);
        else
            add(buf, size, &used, " this OpenBLAS build chose its %s kernels", core);
        if (ratio == 2)
            add(buf, size, &used, " (%s) on a CPU that runs %s, vectors half as wide: expect"
                " about half its best speed;", isa_name(blas), isa_name(best));
        else
            add(buf, size, &used, " (%s) on a CPU that runs %s, vectors 1/%d as wide: expect"
                " about 1/%d of its best speed;", isa_name(blas), isa_name(best), ratio, ratio);
    }
    if (l2_set)
        add(buf, size, &used,
            " OPENBLAS_L2_SIZE=%s changes its blocking and how many threads it uses;", l2_size);
    add(buf, size, &used, " ratios against it flatter our code.");
    if (core_set || l2_set)
        add(buf, size, &used, " For its best path: env%s%s make %s bench",
            core_set ? " -u OPENBLAS_CORETYPE" : "", l2_set ? " -u OPENBLAS_L2_SIZE" : "", stage);
    return 1;
}

int blas_limit_note(const char *stage, const struct environment *env, char *buf, size_t size)
{
    return blas_limit_note_for(blas_isa(), blas_core(), isa_best(),
                               env ? env->openblas_coretype : NULL,
                               env ? env->openblas_l2_size : NULL, stage, buf, size);
}
