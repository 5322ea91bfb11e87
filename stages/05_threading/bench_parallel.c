// The stage-05 benchmark: the packed GEMM shared among OpenMP threads
// (common/gemm/gemm_parallel.c), and the library's front door gemm(), which picks
// a path and a thread count from the shape, against OpenBLAS on as many threads.
#include <omp.h>

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
    gemm_small_threads(omp_get_max_threads(), GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A,
                       lda, B, ldb, 0.0f, C, ldc);
}

static void packed_path(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    int threads = omp_get_max_threads();
    if (threads == 1)
        gemm_packed(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
    else
        gemm_parallel_threads(threads, GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B,
                              ldb, 0.0f, C, ldc);
}

// Each row names its ISA, and the harness makes it every kernel family's
// while the row runs. The last three run on the program's own: set in main,
// once --isa has been read.
static struct bench_kernel kernels[] = {
    {"parallel_avx2", ISA_AVX2, 1, parallel},
    {"parallel_avx512", ISA_AVX512, 1, parallel},
    {"parallel_neon", ISA_NEON, 1, parallel},
    {"gemm", ISA_SCALAR, 1, front_door},
    {"small_path", ISA_SCALAR, 1, small_path},
    {"packed_path", ISA_SCALAR, 1, packed_path},
};

int main(int argc, char **argv)
{
    struct bench_stage stage = {
        .name = "stage-05",
        .kernels = kernels,
        .nkernels = sizeof kernels / sizeof kernels[0],
        .sizes = "256,512,768,1024,1536,2048",
        .quick_sizes = "128,256,512,1024",
    };
    struct bench_options o;
    int rc = bench_parse(&stage, argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    kernels[3].isa = kernels[4].isa = kernels[5].isa = isa_active();
    return bench_run(&stage, &o);
}
