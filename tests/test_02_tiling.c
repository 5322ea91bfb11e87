// Stage 02: the tiled kernels against the double-precision reference: every
// shape with m, n, k in 1..40, random shapes up to 300, and 1000×1024×1040.
// Each test logs its worst error as a fraction of the rounding-error bound
// (run with --verbose).
#include "matmul_check.h"
#include "tiled.h"

// matmul_tiled with blocks small and odd enough that 40 is many blocks with a
// partial one at each edge. Each wrapper has the kernel signature.
static void tiled_3x5x7(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    matmul_tiled(3, 5, 7, m, n, k, A, lda, B, ldb, C, ldc);
}

static void tiled_8x16x8(int m, int n, int k, const float *A, int lda, const float *B,
                         int ldb, float *C, int ldc)
{
    matmul_tiled(8, 16, 8, m, n, k, A, lda, B, ldb, C, ldc);
}

Test(task_2_1, tiled_small_blocks)
{
    check_kernel(tiled_3x5x7, "matmul_tiled 3x5x7");
}

Test(task_2_1, tiled_l1)
{
    check_kernel(matmul_tiled_l1, "matmul_tiled_l1");
    // Blocks of 8×16×8 across random shapes: many full and partial blocks.
    struct worst w = {0.0, 0, 0, 0};
    check_random_shapes(tiled_8x16x8, "matmul_tiled 8x16x8", &w);
    report("matmul_tiled 8x16x8", w);
}

Test(task_2_2, tiled_l2)
{
    check_kernel(matmul_tiled_l2, "matmul_tiled_l2");
}

// The working set of the derived blocks fits the cache, they are multiples
// of 8, and a cache too small for any sensible block still gets 8×8×8.
Test(stage_02, block_sizes_fit_the_cache)
{
    long caches[] = {16 * 1024, 32 * 1024, 48 * 1024, 512 * 1024, 1024 * 1024, 2048 * 1024};
    for (size_t i = 0; i < sizeof caches / sizeof caches[0]; i++) {
        struct tile_sizes t = tile_sizes_for_cache(caches[i]);
        cr_assert(t.mb >= 8 && t.nb >= 8 && t.kb >= 8, "blocks of %dx%dx%d for %ld bytes",
                  t.mb, t.nb, t.kb, caches[i]);
        cr_assert(t.mb % 8 == 0 && t.nb % 8 == 0 && t.kb % 8 == 0,
                  "blocks of %dx%dx%d are not multiples of 8", t.mb, t.nb, t.kb);
        cr_assert(tile_working_set(t) <= caches[i],
                  "blocks of %dx%dx%d need %ld bytes, more than the cache's %ld", t.mb, t.nb,
                  t.kb, tile_working_set(t), caches[i]);
    }
    struct tile_sizes tiny = tile_sizes_for_cache(1024);
    cr_assert(tiny.mb == 8 && tiny.nb == 8 && tiny.kb == 8, "a 1 KiB cache got %dx%dx%d",
              tiny.mb, tiny.nb, tiny.kb);
}
