// The stage-01 benchmark: the six loop orders against OpenBLAS.
// The Makefile builds this driver three times, with naive.c compiled at
// -O0, -O2 and -O3 -march=native, and tags each run's kernels with the flags.
#include "bench.h"
#include "naive.h"

static const struct bench_kernel kernels[] = {
    {"ijk", ISA_SCALAR, 0, matmul_ijk},
    {"ikj", ISA_SCALAR, 0, matmul_ikj},
    {"jik", ISA_SCALAR, 0, matmul_jik},
    {"jki", ISA_SCALAR, 0, matmul_jki},
    {"kij", ISA_SCALAR, 0, matmul_kij},
    {"kji", ISA_SCALAR, 0, matmul_kji},
};

int main(int argc, char **argv)
{
    struct bench_stage stage = {
        .name = "stage-01",
        .kernels = kernels,
        .nkernels = sizeof kernels / sizeof kernels[0],
        .sizes = "64,128,256,384,512,768,1024",
        .quick_sizes = "64,128,256,512",
    };
    return bench_main(&stage, argc, argv);
}
