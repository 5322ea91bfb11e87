// The stage-03 benchmark: the register-blocked kernels for each instruction
// set, hand-written with intrinsics and left to the auto-vectorizer, against
// OpenBLAS. Only the kernels built for this architecture are listed.
#include "bench.h"
#include "autovec.h"
#include "simd.h"

static const struct bench_kernel kernels[] = {
    {"simd_scalar", ISA_SCALAR, 0, matmul_simd_scalar},
#if defined(__x86_64__)
    {"simd_avx2", ISA_AVX2, 0, matmul_simd_avx2},
    {"auto_avx2", ISA_AVX2, 0, matmul_auto_avx2},
    {"simd_avx512", ISA_AVX512, 0, matmul_simd_avx512},
    {"auto_avx512", ISA_AVX512, 0, matmul_auto_avx512},
#endif
#if defined(__aarch64__)
    {"simd_neon", ISA_NEON, 0, matmul_simd_neon},
    {"auto_neon", ISA_NEON, 0, matmul_auto_neon},
#endif
};

int main(int argc, char **argv)
{
    struct bench_stage stage = {
        .name = "stage-03",
        .kernels = kernels,
        .nkernels = sizeof kernels / sizeof kernels[0],
        .sizes = "128,256,512,1000,1024,1040",
        .quick_sizes = "128,256,512",
    };
    return bench_main(&stage, argc, argv);
}
