// Stage 01: every loop order against the double-precision reference.
#include <criterion/criterion.h>

#include "bench.h"
#include "naive.h"

// Sizes chosen to break kernels: 1, primes, one past a power of two.
static const int sizes[] = {1, 2, 7, 17, 64, 65, 127, 300};
static const int shapes[][3] = {{7, 65, 17}, {127, 1, 300}, {1, 300, 7}, {300, 17, 1}, {65, 127, 2}};

static void check_all_sizes(bench_matmul_fn fn, const char *name)
{
    int nsizes = sizeof sizes / sizeof sizes[0];
    for (int i = 0; i < nsizes; i++) {
        int s = sizes[i];
        struct mat_check c = bench_check_kernel(fn, s, s, s, i % 3);
        cr_assert(c.ratio >= 0.0 && c.ratio <= 1.0,
                  "%s at %d: C[%d][%d] = %g, want %g (%.3g × the error bound)", name, s, c.i,
                  c.j, c.got, c.want, c.ratio);
    }
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        struct mat_check c = bench_check_kernel(fn, m, n, k, 5);
        cr_assert(c.ratio >= 0.0 && c.ratio <= 1.0,
                  "%s at %dx%dx%d: C[%d][%d] = %g, want %g (%.3g × the error bound)", name, m, n,
                  k, c.i, c.j, c.got, c.want, c.ratio);
    }
}

Test(task_1_1, ijk_at_awkward_sizes)
{
    check_all_sizes(matmul_ijk, "matmul_ijk");
}

Test(task_1_2, ikj_at_awkward_sizes)
{
    check_all_sizes(matmul_ikj, "matmul_ikj");
}

// jik and kij are ijk and ikj with the outer loops swapped: the same tasks.
Test(task_1_1, jik_at_awkward_sizes)
{
    check_all_sizes(matmul_jik, "matmul_jik");
}

Test(task_1_2, kij_at_awkward_sizes)
{
    check_all_sizes(matmul_kij, "matmul_kij");
}

Test(stage_01, the_other_two_orders)
{
    check_all_sizes(matmul_jki, "matmul_jki");
    check_all_sizes(matmul_kji, "matmul_kji");
}
