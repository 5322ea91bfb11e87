// The stage-04 benchmark: the packed five-loop GEMM of common/gemm/gemm_packed.c
// on one thread, with each ISA's micro-kernel, against OpenBLAS on one thread.
// The *_l1kc kernels are the same GEMM with the textbook blocking, KC sized
// for L1, to measure what the library's longer KC buys. The step* kernels
// are chapter 4's staircase (staircase.c): the same GEMM built one step at a
// time, each with the blocking of its ISA's kernel; step 4 is packed_*.
#include "bench.h"
#include "cpu.h"
#include "gemm.h"
#include "staircase.h"

static void packed(enum isa isa, int m, int n, int k, const float *A, int lda,
                   const float *B, int ldb, float *C, int ldc)
{
    gemm_set_isa(isa);
    gemm_packed(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
    gemm_set_best_isa();
}

static void packed_scalar(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                          float *C, int ldc)
{
    packed(ISA_SCALAR, m, n, k, A, lda, B, ldb, C, ldc);
}

static void packed_avx2(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    packed(ISA_AVX2, m, n, k, A, lda, B, ldb, C, ldc);
}

static void packed_avx512(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                          float *C, int ldc)
{
    packed(ISA_AVX512, m, n, k, A, lda, B, ldb, C, ldc);
}

static void packed_neon(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    packed(ISA_NEON, m, n, k, A, lda, B, ldb, C, ldc);
}

static void packed_l1kc(enum isa isa, int m, int n, int k, const float *A, int lda,
                        const float *B, int ldb, float *C, int ldc)
{
    gemm_set_isa(isa);
    struct gemm_blocking now = gemm_current_blocking();
    struct cpu_caches c = cpu_caches();
    gemm_set_blocking(gemm_blocking_for_l1(c.l1d, c.l2, c.l3, now.mr, now.nr));
    gemm_packed(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
    gemm_set_best_isa();
}

static void packed_avx2_l1kc(int m, int n, int k, const float *A, int lda, const float *B,
                             int ldb, float *C, int ldc)
{
    packed_l1kc(ISA_AVX2, m, n, k, A, lda, B, ldb, C, ldc);
}

static void packed_avx512_l1kc(int m, int n, int k, const float *A, int lda, const float *B,
                               int ldb, float *C, int ldc)
{
    packed_l1kc(ISA_AVX512, m, n, k, A, lda, B, ldb, C, ldc);
}

static void packed_neon_l1kc(int m, int n, int k, const float *A, int lda, const float *B,
                             int ldb, float *C, int ldc)
{
    packed_l1kc(ISA_NEON, m, n, k, A, lda, B, ldb, C, ldc);
}

// One step of the staircase with the blocking (and, from step 3, the
// micro-kernel) of isa.
static void step(enum isa isa, bench_matmul_fn fn, int m, int n, int k, const float *A, int lda,
                 const float *B, int ldb, float *C, int ldc)
{
    gemm_set_isa(isa);
    fn(m, n, k, A, lda, B, ldb, C, ldc);
    gemm_set_best_isa();
}

static void step1_blocked_avx2(int m, int n, int k, const float *A, int lda, const float *B,
                               int ldb, float *C, int ldc)
{
    step(ISA_AVX2, stair_blocked, m, n, k, A, lda, B, ldb, C, ldc);
}

static void step2_packed_avx2(int m, int n, int k, const float *A, int lda, const float *B,
                              int ldb, float *C, int ldc)
{
    step(ISA_AVX2, stair_packed_loops, m, n, k, A, lda, B, ldb, C, ldc);
}

static void step1_blocked_avx512(int m, int n, int k, const float *A, int lda, const float *B,
                                 int ldb, float *C, int ldc)
{
    step(ISA_AVX512, stair_blocked, m, n, k, A, lda, B, ldb, C, ldc);
}

static void step2_packed_avx512(int m, int n, int k, const float *A, int lda, const float *B,
                                int ldb, float *C, int ldc)
{
    step(ISA_AVX512, stair_packed_loops, m, n, k, A, lda, B, ldb, C, ldc);
}

static void step3_simd_avx512(int m, int n, int k, const float *A, int lda, const float *B,
                              int ldb, float *C, int ldc)
{
    step(ISA_AVX512, stair_simd_no_prefetch, m, n, k, A, lda, B, ldb, C, ldc);
}

static void step1_blocked_neon(int m, int n, int k, const float *A, int lda, const float *B,
                               int ldb, float *C, int ldc)
{
    step(ISA_NEON, stair_blocked, m, n, k, A, lda, B, ldb, C, ldc);
}

static void step2_packed_neon(int m, int n, int k, const float *A, int lda, const float *B,
                              int ldb, float *C, int ldc)
{
    step(ISA_NEON, stair_packed_loops, m, n, k, A, lda, B, ldb, C, ldc);
}

static const struct bench_kernel kernels[] = {
    {"packed_scalar", ISA_SCALAR, 0, packed_scalar},
    {"packed_avx2", ISA_AVX2, 0, packed_avx2},
    {"packed_avx512", ISA_AVX512, 0, packed_avx512},
    {"packed_neon", ISA_NEON, 0, packed_neon},
    {"packed_avx2_l1kc", ISA_AVX2, 0, packed_avx2_l1kc},
    {"packed_avx512_l1kc", ISA_AVX512, 0, packed_avx512_l1kc},
    {"packed_neon_l1kc", ISA_NEON, 0, packed_neon_l1kc},
    // the staircase: step 3 of AVX2 and NEON, and step 4 of all, is packed_*
    {"step1_blocked_avx2", ISA_AVX2, 0, step1_blocked_avx2},
    {"step2_packed_avx2", ISA_AVX2, 0, step2_packed_avx2},
    {"step1_blocked_avx512", ISA_AVX512, 0, step1_blocked_avx512},
    {"step2_packed_avx512", ISA_AVX512, 0, step2_packed_avx512},
    {"step3_simd_avx512", ISA_AVX512, 0, step3_simd_avx512},
    {"step1_blocked_neon", ISA_NEON, 0, step1_blocked_neon},
    {"step2_packed_neon", ISA_NEON, 0, step2_packed_neon},
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
