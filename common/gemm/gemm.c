// gemm.c: the front door. Chooses the micro-kernel for this CPU, the blocking
// that goes with it, and (from the shape alone) the path and thread count.
#include "gemm.h"

#include <stddef.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

// listing: blocking_l1
struct gemm_blocking gemm_blocking_for_l1(long l1_bytes, long l2_bytes,
                                          long l3_bytes, int mr, int nr)
{
    struct gemm_blocking b = {.mr = mr, .nr = nr};
    long fsize = (long)sizeof(float);

    // kc: the micro-kernel reuses one kc×nr micro-panel of B for every
    // sliver of A, so that panel and the mr×kc sliver streaming past it
    // should both fit in L1: (mr + nr)·kc floats ≤ L1.
    long kc = l1_bytes / (fsize * (mr + nr)) / 16 * 16;
    kc = kc < 16 ? 16 : kc > 512 ? 512 : kc;

    // mc: the packed mc×kc block of A is read once per micro-panel of B, so
    // it should stay in L2. Half of L2 leaves room for the B micro-panels
    // and the rows of C passing through.
    long mc = l2_bytes / 2 / (fsize * kc) / mr * mr;
    mc = mc < mr ? mr : mc;

    // nc: the packed kc×nc panel of B is read once per block of A, so it
    // should stay in L3, which other cores share: use a quarter of it.
    long nc = l3_bytes / 4 / (fsize * kc) / nr * nr;
    nc = nc < nr ? nr : nc > 8192 ? 8192 / nr * nr : nc;

    b.kc = (int)kc;
    b.mc = (int)mc;
    b.nc = (int)nc;
    return b;
}
// end listing

// listing: blocking
struct gemm_blocking gemm_blocking_for_caches(long l2_bytes, long l3_bytes,
                                              int mr, int nr)
{
    struct gemm_blocking b = {.mr = mr, .nr = nr};
    long fsize = (long)sizeof(float);

    // kc: every pass of the pc loop reads and writes all of C, k / kc passes
    // in all, so kc should be as long as the caches allow. The limit is the
    // kc×nr micro-panel of B, which every sliver of A meets in turn: it must
    // stay in L2 while they stream past, with room to spare for them and for
    // C (an eighth of L2). A multiple of 16 keeps packed rows aligned.
    long kc = l2_bytes / 8 / (fsize * nr) / 16 * 16;
    kc = kc < 64 ? 64 : kc > 4096 ? 4096 : kc;

    // mc: the packed mc×kc block of A is read once per micro-panel of B.
    // With a long kc it no longer fits in L2, so it lives in L3, an eighth
    // of it, leaving room for the other cores' blocks and the panel of B.
    long mc = l3_bytes / 8 / (fsize * kc) / mr * mr;
    mc = mc < mr ? mr : mc;

    // nc: the packed kc×nc panel of B is read once per block of A, so it
    // should stay in L3 too: a quarter of it.
    long nc = l3_bytes / 4 / (fsize * kc) / nr * nr;
    nc = nc < nr ? nr : nc > 8192 ? 8192 / nr * nr : nc;

    b.kc = (int)kc;
    b.mc = (int)mc;
    b.nc = (int)nc;
    return b;
}
// end listing

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

// listing: front_door
void gemm(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
          float alpha, const float *A, int lda, const float *B, int ldb,
          float beta, float *C, int ldc)
{
    // Everything here depends on the shape only, never on the thread count,
    // so the result does not either.
    double flops = 2.0 * m * n * k;
    int max_threads = 1;
#if defined(_OPENMP)
    max_threads = omp_get_max_threads();
#endif
    const struct gemm_kernel *kernel = gemm_current_kernel();
    int nr = kernel->blocking.nr;
    long b_floats = (long)k * ((n + nr - 1) / nr * nr);

    // Small or skinny: packing op(A) is a full pass over A, repaid only when
    // each element is then used for many columns. With n ≤ 64 (or a tiny
    // problem) it is not, so read A in place; op(B), every row of A meets all
    // of it, must fit comfortably in L2. (Only ISAs with a direct micro-kernel.)
    int small = kernel->run_direct != NULL && (n <= 2 * nr || flops < 4e6) &&
                b_floats <= 128 * 1024;
    // A thread must get enough work to repay starting it (about 2 Mflop);
    // below that, more threads are slower than one.
    int threads = flops < 2e6 * max_threads ? (int)(flops / 2e6) : max_threads;
    if (threads < 1)
        threads = 1;

    if (small)
        gemm_small_threads(threads, ta, tb, m, n, k, alpha, A, lda, B, ldb,
                           beta, C, ldc);
    else
        gemm_parallel_threads(threads, ta, tb, m, n, k, alpha, A, lda, B, ldb,
                              beta, C, ldc);
}
// end listing
