// gemm_kernel.c: which micro-kernel runs, and with which blocking: the one
// of the active ISA (isa_active(): the widest this CPU has, unless --isa
// forced another), blocked for this machine's caches.
#include "gemm_parts.h"

#include <pthread.h>
#include <stddef.h>

// listing: kernel_table
// The micro-kernels by ISA, with their register block. Only the kernels this
// architecture can hold are compiled in.
static const struct {
    gemm_microkernel *run;
    gemm_microkernel_direct *run_direct;  // NULL: this ISA has none
    int mr, nr;
} by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = {gemm_kernel_scalar, NULL, GEMM_SCALAR_MR, GEMM_SCALAR_NR},
#if defined(__x86_64__)
    [ISA_AVX2] = {gemm_kernel_avx2, gemm_kernel_avx2_direct, GEMM_AVX2_MR, GEMM_AVX2_NR},
    [ISA_AVX512] = {gemm_kernel_avx512, gemm_kernel_avx512_direct, GEMM_AVX512_MR,
                    GEMM_AVX512_NR},
#endif
#if defined(__aarch64__)
    [ISA_NEON] = {gemm_kernel_neon, NULL, GEMM_NEON_MR, GEMM_NEON_NR},
#endif
};
// end listing

// Each supported ISA's kernel with the blocking for this machine's caches,
// made once, before the first GEMM (threads may call gemm() at the same
// time, so the table is filled under pthread_once, never lazily per entry).
static struct gemm_kernel kernels[ISA_COUNT];
static pthread_once_t made = PTHREAD_ONCE_INIT;

static void make_kernels(void)
{
    // The reader's own caches: the same code blocks for a laptop with
    // 256 KiB of L2 and a server with 1 MiB. (KC sets the order in which the k terms are
    // summed, so results may differ in the last bits between machines; on
    // one machine they never depend on the thread count.)
    struct cpu_caches c = cpu_caches();
    for (int i = 0; i < ISA_COUNT; i++) {
        if (!isa_supported((enum isa)i))
            continue;
        kernels[i] = (struct gemm_kernel){
            (enum isa)i, by_isa[i].run, by_isa[i].run_direct,
            gemm_blocking_for_caches(c.l2, c.l3, by_isa[i].mr, by_isa[i].nr)};
    }
}

const struct gemm_kernel *gemm_current_kernel(void)
{
    pthread_once(&made, make_kernels);
    return &kernels[isa_active()];
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
    kernels[kernel->isa].blocking = b;
    return 0;
}

int gemm_set_microkernel(gemm_microkernel *run)
{
    if (run == NULL)
        return -1;
    kernels[gemm_current_kernel()->isa].run = run;
    return 0;
}

void gemm_reset_kernels(void)
{
    pthread_once(&made, make_kernels);
    make_kernels();
}
