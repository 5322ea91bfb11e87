// Stage 03: every register-blocked kernel, for each ISA this CPU runs,
// against the double-precision reference: every shape with m, n, k in 1..40,
// random shapes up to 300, and 1000×1024×1040. Each test logs its worst
// error as a fraction of the rounding-error bound (run with --verbose).
#include "autovec.h"
#include "cpu.h"
#include "matmul_check.h"
#include "simd.h"

// Only for a CPU that has the ISA; otherwise the test is skipped, not failed.
static int have(enum isa isa)
{
    if (isa_supported(isa))
        return 1;
    cr_skip_test("this CPU (%s) cannot run %s code", cpu_model(), isa_name(isa));
    return 0;
}

Test(stage_03, scalar)
{
    check_kernel(matmul_simd_scalar, "matmul_simd_scalar");
}

Test(stage_03, dispatcher)
{
    check_kernel(matmul_simd_for(isa_active()), "matmul_simd_for(isa_active())");
}

#if defined(__x86_64__)
Test(task_3_1, avx2)
{
    if (have(ISA_AVX2))
        check_kernel(matmul_simd_avx2, "matmul_simd_avx2");
}

// Full 14×32 blocks only, so the test passes before the edges are done:
// m a multiple of 14, n a multiple of 32, any k.
Test(task_3_2, avx512_full_blocks)
{
    if (!have(ISA_AVX512))
        return;
    struct worst w = {0.0, 0, 0, 0};
    for (int m = 14; m <= 42; m += 14)
        for (int n = 32; n <= 64; n += 32)
            for (int k = 1; k <= MAX_SMALL; k++)
                check_shape(matmul_simd_avx512, "matmul_simd_avx512", m, n, k, k % 3, &w);
    check_shape(matmul_simd_avx512, "matmul_simd_avx512", 140, 288, 300, 1, &w);
    check_big(matmul_simd_avx512, "matmul_simd_avx512", 1008, 1024, 1024, &w);
    report("matmul_simd_avx512 (full blocks)", w);
}

Test(task_3_3, avx512_every_shape)
{
    if (have(ISA_AVX512))
        check_kernel(matmul_simd_avx512, "matmul_simd_avx512");
}

Test(stage_03, auto_avx2)
{
    if (have(ISA_AVX2))
        check_kernel(matmul_auto_avx2, "matmul_auto_avx2");
}

Test(stage_03, auto_avx512)
{
    if (have(ISA_AVX512))
        check_kernel(matmul_auto_avx512, "matmul_auto_avx512");
}
#endif

#if defined(__aarch64__)
Test(stage_03, neon)
{
    check_kernel(matmul_simd_neon, "matmul_simd_neon");
}

Test(stage_03, auto_neon)
{
    check_kernel(matmul_auto_neon, "matmul_auto_neon");
}
#endif
