// gemm_macro.c: the macro-kernel, the two loops (jr, ir) around the
// micro-kernel that both packed paths run on each block of A and panel of B.
#include "gemm_parts.h"

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

// listing: macro_kernel
void gemm_macro_kernel(const struct gemm_kernel *kernel, int mc, int nc,
                       int kc, const float *a_packed, const float *b_packed,
                       float *C, int ldc, float alpha, float beta)
{
    // C is the mc×nc block to update; a_packed holds ceil(mc/mr) slivers of
    // mr×kc, b_packed ceil(nc/nr) micro-panels of kc×nr.
    int mr = kernel->blocking.mr, nr = kernel->blocking.nr;
    for (int jr = 0; jr < nc; jr += nr) {
        for (int ir = 0; ir < mc; ir += mr) {
            kernel->run(min_int(mr, mc - ir), min_int(nr, nc - jr), kc,
                        a_packed + (long)ir * kc, b_packed + (long)jr * kc,
                        C + (long)ir * ldc + jr, ldc, alpha, beta);
        }
    }
}
// end listing
