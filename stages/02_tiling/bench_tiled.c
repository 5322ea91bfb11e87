// The stage-02 benchmark: the tiled kernels against OpenBLAS. Sizes near
// 1024 show what a power-of-two leading dimension does to a cache.
#include "bench.h"
#include "tiled.h"

static const struct bench_kernel kernels[] = {
    {"tiled_l1", ISA_SCALAR, 0, matmul_tiled_l1},
    {"tiled_l2", ISA_SCALAR, 0, matmul_tiled_l2},
};

int main(int argc, char **argv)
{
    struct cpu_caches c = cpu_caches();
    struct tile_sizes l1 = tile_sizes_for_cache(c.l1d), l2 = tile_sizes_for_cache(c.l2);
    fprintf(stderr, "caches%s: L1d %ld KiB, L2 %ld KiB, L3 %ld KiB; blocks: L1 %dx%dx%d, L2 %dx%dx%d\n",
            c.assumed ? " (some assumed, the system did not report them)" : "", c.l1d / 1024,
            c.l2 / 1024, c.l3 / 1024, l1.mb, l1.nb, l1.kb, l2.mb, l2.nb, l2.kb);
    struct bench_stage stage = {
        .name = "stage-02",
        .kernels = kernels,
        .nkernels = sizeof kernels / sizeof kernels[0],
        .sizes = "256,512,1000,1024,1040",
        .quick_sizes = "128,256,512",
    };
    return bench_main(&stage, argc, argv);
}
