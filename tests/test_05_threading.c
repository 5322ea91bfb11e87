// Stage 05: the GEMM on threads (common/gemm/gemm_parallel.c), the front door
// gemm() and the backend table, against the double-precision reference; and
// the same bits whatever the thread count.
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "gemm_backend.h"
#include "gemm_check.h"
#include "mat.h"

static void on_one_thread(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k, float alpha,
                          const float *A, int lda, const float *B, int ldb, float beta, float *C,
                          int ldc)
{
    gemm_parallel_threads(1, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

Test(task_5_1, parallel_every_shape_to_40, .timeout = 900)
{
    omp_set_num_threads(3);
    small_grid(gemm_parallel, "gemm_parallel");
}

Test(task_5_1, parallel_random_shapes_to_600, .timeout = 900)
{
    omp_set_num_threads(4);
    random_shapes(gemm_parallel, "gemm_parallel", 60, 600, 0);
    random_shapes(gemm_parallel, "gemm_parallel", 30, 300, 1);
    random_shapes(on_one_thread, "gemm_parallel_threads(1)", 20, 600, 0);
}

Test(stage_05, front_door_every_shape_to_40, .timeout = 900)
{
    small_grid(gemm, "gemm");
    random_shapes(gemm, "gemm", 40, 600, 0);
}

// Each element of C is summed by one thread in one order, so the thread
// count cannot change a single bit.
Test(task_5_1, same_bits_on_1_to_4_threads, .timeout = 600)
{
    const int shapes[][3] = {{600, 600, 600}, {517, 263, 1000}, {1, 700, 300}, {700, 1, 300},
                             {128, 10, 256},  {2000, 32, 9},    {300, 64, 288}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *A = mat_alloc(m, k), *B = mat_alloc(k, n);
        float *C1 = mat_alloc(m, n), *Ct = mat_alloc(m, n), *G1 = mat_alloc(m, n);
        mat_fill_random(A, m, k, k, 3);
        mat_fill_random(B, k, n, n, 4);
        for (int t = 0; t < 4; t++) {
            enum gemm_trans ta = transposes[t / 2], tb = transposes[t % 2];
            int lda = ta ? m : k, ldb = tb ? k : n;
            mat_fill_random(C1, m, n, n, 5);
            gemm_parallel_threads(1, ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, C1, n);
            // gemm() may take another path (the small one) than the parallel
            // loops: it is compared with itself on one thread.
            omp_set_num_threads(1);
            mat_fill_random(G1, m, n, n, 5);
            gemm(ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, G1, n);
            for (int threads = 2; threads <= 4; threads++) {
                mat_fill_random(Ct, m, n, n, 5);
                gemm_parallel_threads(threads, ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, Ct, n);
                cr_assert(memcmp(C1, Ct, sizeof(float) * (size_t)m * n) == 0,
                          "%dx%dx%d ta=%d tb=%d: %d threads differ from 1", m, n, k, ta, tb,
                          threads);
                omp_set_num_threads(threads);
                mat_fill_random(Ct, m, n, n, 5);
                gemm(ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, Ct, n);
                cr_assert(memcmp(G1, Ct, sizeof(float) * (size_t)m * n) == 0,
                          "gemm() on %d threads differs from one thread at %dx%dx%d", threads, m, n,
                          k);
            }
        }
        mat_free(A);
        mat_free(B);
        mat_free(C1);
        mat_free(Ct);
        mat_free(G1);
    }
}

// The same with blocks small enough that these shapes cross every block edge,
// where the threads split the rows or the columns of each block.
Test(task_5_1, same_bits_on_1_to_4_threads_in_small_blocks, .timeout = 600)
{
    const int shapes[][3] = {{300, 200, 250}, {517, 263, 100}, {20, 700, 80}};
    isa_force(isa_best());
    gemm_reset_kernels();
    struct gemm_blocking b = gemm_current_blocking();
    b.mc = 3 * b.mr;
    b.kc = 37;
    b.nc = 2 * b.nr;
    cr_assert_eq(gemm_set_blocking(b), 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *A = mat_alloc(m, k), *B = mat_alloc(k, n);
        float *C1 = mat_alloc(m, n), *Ct = mat_alloc(m, n);
        mat_fill_random(A, m, k, k, 3);
        mat_fill_random(B, k, n, n, 4);
        mat_fill_random(C1, m, n, n, 5);
        gemm_parallel_threads(1, GEMM_NOTRANS, GEMM_TRANS, m, n, k, 0.7f, A, k, B, k, 0.3f, C1,
                              n);
        for (int threads = 2; threads <= 4; threads++) {
            mat_fill_random(Ct, m, n, n, 5);
            gemm_parallel_threads(threads, GEMM_NOTRANS, GEMM_TRANS, m, n, k, 0.7f, A, k, B, k,
                                  0.3f, Ct, n);
            cr_assert(memcmp(C1, Ct, sizeof(float) * (size_t)m * n) == 0,
                      "%dx%dx%d in small blocks: %d threads differ from 1", m, n, k, threads);
        }
        mat_free(A);
        mat_free(B);
        mat_free(C1);
        mat_free(Ct);
    }
    isa_force(isa_best());
    gemm_reset_kernels();
}

// A C larger than 8 MiB takes the small path's non-temporal stores (the
// first convolution layer's shape, with fewer rows); beta 0.3 takes the
// ordinary stores of the same path. Every ISA this CPU runs, 1 and 2 threads.
Test(stage_05, small_path_with_a_large_c, .timeout = 600)
{
    enum { M = 70001, N = 32, K = 9 };
    float *A = mat_alloc(M, K), *B = mat_alloc(K, N), *C0 = mat_alloc(M, N);
    float *C = mat_alloc(M, N);
    cr_assert(A && B && C0 && C, "out of memory");
    mat_fill_random(A, M, K, K, 21);
    mat_fill_random(B, K, N, N, 22);
    mat_fill_random(C0, M, N, N, 23);
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        if (isa_force(isas[s]) != 0)
            continue;
        for (int threads = 1; threads <= 2; threads++) {
            omp_set_num_threads(threads);
            for (int b = 0; b < 2; b++) {
                float beta = b == 0 ? 0.0f : 0.3f;
                memcpy(C, C0, sizeof(float) * M * N);
                gemm(GEMM_NOTRANS, GEMM_NOTRANS, M, N, K, 1.0f, A, K, B, N, beta, C, N);
                struct mat_problem p = {GEMM_NOTRANS, GEMM_NOTRANS, M, N, K, 1.0f, beta,
                                        A, K, B, N, C0, N};
                struct mat_check c = mat_check_gemm(&p, C, N, (long)M * N);
                cr_assert(c.ratio <= 1.0,
                          "%s, %d thread(s), beta %g: C[%d][%d] = %g, want %g (%.3g × the bound)",
                          isa_name(isas[s]), threads, beta, c.i, c.j, c.got, c.want, c.ratio);
            }
        }
    }
    isa_force(isa_best());
    gemm_reset_kernels();
    mat_free(A);
    mat_free(B);
    mat_free(C0);
    mat_free(C);
}

// Every backend of the table is a full GEMM, transposes and all.
static const struct gemm_backend *current_backend;

static void through_backend(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k,
                            float alpha, const float *A, int lda, const float *B, int ldb,
                            float beta, float *C, int ldc)
{
    cr_assert_eq(current_backend->run(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc), 0);
}

Test(backends, each_is_a_full_gemm)
{
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    cr_assert(count >= 7);
    for (int i = 0; i < count; i++) {
        current_backend = &all[i];
        struct operands o = operands_new(140);
        for (int t = 0; t < 4; t++)
            for (int s = 0; s < 6; s++) {
                int m = 1 + 37 * s % 131, n = 1 + 53 * s % 127, k = 1 + 29 * s % 129;
                run_one(through_backend, &o, transposes[t / 2], transposes[t % 2], m, n, k,
                        alphas[s % 2], betas[s % 3], s % 4, 1L << 20);
            }
        operands_free(&o);
    }
}

Test(backends, chosen_by_name)
{
    cr_assert_null(gemm_backend_find("cublas"));
    cr_assert_str_eq(gemm_backend_find("naive")->name, "naive");
    cr_assert_str_eq(gemm_backend_find("auto")->name, "auto");
}
