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
    struct gemm_blocking now = gemm_current_blocking();
    struct cpu_caches c = cpu_caches();
    gemm_set_blocking(gemm_blocking_for_l1(c.l1d, c.l2, c.l3, now.mr, now.nr));
    gemm_packed(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
    gemm_reset_kernels();
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
    {"step1_blocked_avx2", ISA_AVX2, 0, stair_blocked},
    {"step2_packed_avx2", ISA_AVX2, 0, stair_packed_loops},
    {"step1_blocked_avx512", ISA_AVX512, 0, stair_blocked},
    {"step2_packed_avx512", ISA_AVX512, 0, stair_packed_loops},
    {"step3_simd_avx512", ISA_AVX512, 0, stair_simd_no_prefetch},
    {"step1_blocked_neon", ISA_NEON, 0, stair_blocked},
    {"step2_packed_neon", ISA_NEON, 0, stair_packed_loops},
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
