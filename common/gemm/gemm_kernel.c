// gemm_kernel.c: which micro-kernel runs, and with which blocking. Chosen
// once for this CPU (the best ISA it has) unless a program asks for another.
#include "gemm_parts.h"

#include <stddef.h>

static struct gemm_kernel make_kernel(enum isa isa, gemm_microkernel *run,
                                      int mr, int nr)
{
    // The reader's own caches: the same code blocks for a laptop with
    // 256 KiB of L2 and a server with 1 MiB. (KC sets the order in which the k terms are
    // summed, so results may differ in the last bits between machines; on
    // one machine they never depend on the thread count.)
    struct cpu_caches c = cpu_caches();
    struct gemm_kernel k = {isa, run, NULL, gemm_blocking_for_caches(c.l2, c.l3, mr, nr)};
    return k;
}

static struct gemm_kernel current;
static int current_is_set;

int gemm_set_isa(enum isa isa)
{
    if (!isa_supported(isa))
        return -1;
    switch (isa) {
#if defined(__x86_64__)
    case ISA_AVX2:
        current = make_kernel(isa, gemm_kernel_avx2, GEMM_AVX2_MR, GEMM_AVX2_NR);
        current.run_direct = gemm_kernel_avx2_direct;
        break;
    case ISA_AVX512:
        current = make_kernel(isa, gemm_kernel_avx512, GEMM_AVX512_MR,
                              GEMM_AVX512_NR);
        current.run_direct = gemm_kernel_avx512_direct;
        break;
#endif
#if defined(__aarch64__)
    case ISA_NEON:
        current = make_kernel(isa, gemm_kernel_neon, GEMM_NEON_MR, GEMM_NEON_NR);
        break;
#endif
    default:
        current = make_kernel(ISA_SCALAR, gemm_kernel_scalar,
                              GEMM_SCALAR_MR, GEMM_SCALAR_NR);
        break;
    }
    current_is_set = 1;
    return 0;
}

void gemm_set_best_isa(void)
{
    gemm_set_isa(isa_best());
}

const struct gemm_kernel *gemm_current_kernel(void)
{
    if (!current_is_set)
        gemm_set_best_isa();
    return &current;
}

enum isa gemm_get_isa(void)
{
    return gemm_current_kernel()->isa;
}

struct gemm_blocking gemm_current_blocking(void)
{
    return gemm_current_kernel()->blocking;
}

int gemm_set_blocking(struct gemm_blocking b)
{
    const struct gemm_kernel *kernel = gemm_current_kernel();
    if (b.mr != kernel->blocking.mr || b.nr != kernel->blocking.nr || b.mc < b.mr ||
        b.kc < 1 || b.nc < b.nr)
        return -1;
    current.blocking = b;
    return 0;
}


int gemm_set_microkernel(gemm_microkernel *run)
{
    if (run == NULL)
        return -1;
    gemm_current_kernel(); // select the best ISA first if none was chosen
    current.run = run;
    return 0;
}
