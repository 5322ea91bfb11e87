// The stage-04 benchmark: the packed five-loop GEMM of common/gemm/gemm_packed.c
// on one thread, with each ISA's micro-kernel, against OpenBLAS on one thread.
// The *_l1kc kernels are the same GEMM with the textbook blocking, KC sized
// for L1, to measure what the library's longer KC buys. The step* kernels
// are chapter 4's staircase (staircase.c): the same GEMM built one step at a
// time, each with the blocking of its ISA's kernel; step 4 is packed_*.
// Each row names its ISA, and the harness makes it the active one (every
// kernel family's) while the row runs.
#include "bench.h"
#include "cpu.h"
#include "gemm.h"
#include "staircase.h"

static void packed(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                   float *C, int ldc)
{
    gemm_packed(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

static void packed_l1kc(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    struct gemm_blocking now = ctx.kernel.blocking;
    struct cpu_caches c = cpu_caches();
    gemm_context_set_blocking(&ctx, gemm_blocking_for_l1(c.l1d, c.l2, c.l3, now.mr, now.nr));
    gemm_packed_ctx(&ctx, GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

// The staircase's steps in the default context: the row's ISA's kernel.
static void step1(int m, int n, int k, const float *A, int lda, const float *B, int ldb, float *C,
                  int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    stair_blocked(&ctx, m, n, k, A, lda, B, ldb, C, ldc);
}

static void step2(int m, int n, int k, const float *A, int lda, const float *B, int ldb, float *C,
                  int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    stair_packed_loops(&ctx, m, n, k, A, lda, B, ldb, C, ldc);
}

static void step3(int m, int n, int k, const float *A, int lda, const float *B, int ldb, float *C,
                  int ldc)
{
    struct gemm_context ctx = gemm_context_default();
    stair_simd_no_prefetch(&ctx, m, n, k, A, lda, B, ldb, C, ldc);
}

static const struct bench_kernel kernels[] = {
    {"packed_scalar", ISA_SCALAR, 0, packed},
    {"packed_avx2", ISA_AVX2, 0, packed},
    {"packed_avx512", ISA_AVX512, 0, packed},
    {"packed_neon", ISA_NEON, 0, packed},
    {"packed_avx2_l1kc", ISA_AVX2, 0, packed_l1kc},
    {"packed_avx512_l1kc", ISA_AVX512, 0, packed_l1kc},
    {"packed_neon_l1kc", ISA_NEON, 0, packed_l1kc},
    // the staircase: step 3 of AVX2 and NEON, and step 4 of all, is packed_*
    {"step1_blocked_avx2", ISA_AVX2, 0, step1},
    {"step2_packed_avx2", ISA_AVX2, 0, step2},
    {"step1_blocked_avx512", ISA_AVX512, 0, step1},
    {"step2_packed_avx512", ISA_AVX512, 0, step2},
    {"step3_simd_avx512", ISA_AVX512, 0, step3},
    {"step1_blocked_neon", ISA_NEON, 0, step1},
    {"step2_packed_neon", ISA_NEON, 0, step2},
};

int main(int argc, char **argv)
{
    struct bench_stage stage = {
        .name = "stage-04",
        .kernels = kernels,
        .nkernels = sizeof kernels / sizeof kernels[0],
        .sizes = "256,512,768,1024,1536,2048",
        .quick_sizes = "128,256,512,1024",
    };
    return bench_main(&stage, argc, argv);
}
