// The stage-05 benchmark: the packed GEMM shared among OpenMP threads
// (common/gemm/gemm_parallel.c), the library's front door gemm(), which picks
// a path and a thread count from the shape, and Strassen's algorithm
// (common/gemm/gemm_strassen.c), against OpenBLAS on as many threads.
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gemm.h"

static void parallel(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                     float *C, int ldc)
{
    gemm_parallel(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

static void front_door(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                       float *C, int ldc)
{
    gemm(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

// The two paths gemm() chooses between for a skinny shape, each forced, on
// all the threads it is given: the path study of `make stage-05 run`.
static void small_path(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                       float *C, int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    gemm_small_threads(&ctx, omp_get_max_threads(), GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A,
                       lda, B, ldb, 0.0f, C, ldc);
}

static void packed_path(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    int threads = omp_get_max_threads();
    struct gemm_context ctx = gemm_context_default();
    if (threads == 1)
        gemm_packed_ctx(&ctx, GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C,
                        ldc);
    else
        gemm_parallel_threads(&ctx, threads, GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B,
                              ldb, 0.0f, C, ldc);
}

// Strassen's algorithm (common/gemm/gemm_strassen.c) on all the threads it
// is given: as gemm() would run it if the rule let it (levels from the
// rule), and the forms the Strassen study of `make stage-05 strassen`
// compares: one level and two of the fused form, one of the plain form.
static void strassen(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                     float *C, int ldc)
{
    gemm_strassen(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

static void strassen1(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    gemm_strassen_threads(&ctx, omp_get_max_threads(), 1, GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f,
                          A, lda, B, ldb, 0.0f, C, ldc);
}

static void strassen2(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    gemm_strassen_threads(&ctx, omp_get_max_threads(), 2, GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f,
                          A, lda, B, ldb, 0.0f, C, ldc);
}

static void strassen_plain(int m, int n, int k, const float *A, int lda, const float *B,
                           int ldb, float *C, int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    gemm_strassen_plain_threads(&ctx, omp_get_max_threads(), 1, GEMM_NOTRANS, GEMM_NOTRANS, m, n, k,
                                1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

// Each row names its ISA, and the harness makes it every kernel family's
// while the row runs. Those after the three parallel_* run on the program's
// own: set in main, once --isa has been read.
static struct bench_kernel kernels[] = {
    {"parallel_avx2", ISA_AVX2, 1, parallel},
    {"parallel_avx512", ISA_AVX512, 1, parallel},
    {"parallel_neon", ISA_NEON, 1, parallel},
    {"gemm", ISA_SCALAR, 1, front_door},
    {"small_path", ISA_SCALAR, 1, small_path},
    {"packed_path", ISA_SCALAR, 1, packed_path},
    {"strassen", ISA_SCALAR, 1, strassen},
    {"strassen1", ISA_SCALAR, 1, strassen1},
    {"strassen2", ISA_SCALAR, 1, strassen2},
    {"strassen_plain", ISA_SCALAR, 1, strassen_plain},
};

// Strassen's kernels are checked against their own bound, which is normwise
// (gemm_strassen_error_bound); `strassen` takes the rule's levels, at most two.
static double strassen_bound(const char *kernel, int k, double ab)
{
    int kc = gemm_context_default().kernel.blocking.kc;
    if (strcmp(kernel, "strassen1") == 0 || strcmp(kernel, "strassen_plain") == 0)
        return gemm_strassen_error_bound(1, k, kc, ab, 0.0);
    if (strcmp(kernel, "strassen2") == 0 || strcmp(kernel, "strassen") == 0)
        return gemm_strassen_error_bound(2, k, kc, ab, 0.0);
    return 0.0;
}

int main(int argc, char **argv)
{
    // When gemm() may use Strassen: the rule `make stage-05 strassen` measured.
    gemm_strassen_use_file(env_read().strassen_rule);
    struct bench_stage stage = {
        .name = "stage-05",
        .kernels = kernels,
        .nkernels = sizeof kernels / sizeof kernels[0],
        .sizes = "256,512,768,1024,1536,2048",
        .quick_sizes = "128,256,512,1024",
        .normwise_bound = strassen_bound,
    };
    struct bench_options o;
    int rc = bench_parse(&stage, argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    for (size_t i = 3; i < sizeof kernels / sizeof kernels[0]; i++)
        kernels[i].isa = gemm_context_default().kernel.isa;
    return bench_run(&stage, &o);
}
