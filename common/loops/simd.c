#include "cpu.h"
#include "simd.h"

// listing: dispatch
// One kernel per instruction set, in a table indexed by enum isa. The AVX
// kernels exist only in an x86-64 build and the NEON one only in an AArch64
// build, so each entry sits behind the matching #if; a program's ISA is
// never one this build lacks.
static matmul_simd_fn *const by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = matmul_simd_scalar,
#if defined(__x86_64__)
    [ISA_AVX2] = matmul_simd_avx2,
    [ISA_AVX512] = matmul_simd_avx512,
#endif
#if defined(__aarch64__)
    [ISA_NEON] = matmul_simd_neon,
#endif
};

// The caller says which ISA: the one its program runs (chapter 4's
// context carries it; the GEMM backend "simd" passes its context's).
// isa_count_use counts the call, so a test can see which ISAs ran.
matmul_simd_fn *matmul_simd_for(enum isa isa)
{
    isa_count_use(isa);
    return by_isa[isa];
}
// end listing
