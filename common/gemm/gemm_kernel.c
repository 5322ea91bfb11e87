// gemm_kernel.c: the contexts a GEMM runs in: an ISA's micro-kernel,
// blocked for this machine's caches, and the default context of a program
// (the ISA isa_active() gives: the widest this CPU has, unless --isa forced
// another). The one place of the library that reads isa_active().
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

static struct gemm_strassen_rule default_rule; // all zero: never

void gemm_strassen_set_rule(struct gemm_strassen_rule rule)
{
    default_rule = rule;
}

int gemm_strassen_use_file(const char *path)
{
    struct gemm_strassen_rule r = {0, 0, 0};
    if (path == NULL || *path == '\0')
        return 0;
    int status = gemm_strassen_read_rule(path, &r);
    gemm_strassen_set_rule(r);
    return status;
}

struct gemm_context gemm_context_for(enum isa isa)
{
    pthread_once(&made, make_kernels);
    return (struct gemm_context){.kernel = kernels[isa], .strassen = {0, 0, 0}};
}

struct gemm_context gemm_context_default(void)
{
    struct gemm_context ctx = gemm_context_for(isa_active());
    ctx.strassen = default_rule;
    return ctx;
}

int gemm_context_set_blocking(struct gemm_context *ctx, struct gemm_blocking b)
{
    struct gemm_blocking now = ctx->kernel.blocking;
    if (b.mr != now.mr || b.nr != now.nr || b.mc < b.mr || b.kc < 1 || b.nc < b.nr)
        return -1;
    ctx->kernel.blocking = b;
    return 0;
}

int gemm_context_set_microkernel(struct gemm_context *ctx, gemm_microkernel *run)
{
    if (run == NULL)
        return -1;
    ctx->kernel.run = run;
    return 0;
}
