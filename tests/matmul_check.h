// Checks shared by the tests of chapters 2 and 3: a plain C = A·B kernel
// against the double-precision reference at every shape with m, n, k in
// 1..40, random shapes up to 300, and one big 1000×1024×1040 problem.
#ifndef MATMUL_CHECK_H
#define MATMUL_CHECK_H

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "bench.h"

enum { MAX_SMALL = 40, RANDOM_SHAPES = 12, MAX_RANDOM = 300, C_PAD = 3 };

// The worst error seen, as a fraction of the rounding-error bound.
struct worst {
    double ratio;
    int m, n, k;
};

static void note(struct worst *w, struct mat_check c, int m, int n, int k)
{
    if (c.ratio > w->ratio) {
        w->ratio = c.ratio;
        w->m = m, w->n = n, w->k = k;
    }
}

static void assert_check(struct mat_check c, const char *name, int m, int n, int k)
{
    cr_assert(c.ratio >= 0.0 && c.ratio <= 1.0,
              "%s at %dx%dx%d: C[%d][%d] = %g, want %g (%.3g × the error bound)", name, m, n, k,
              c.i, c.j, c.got, c.want, c.ratio);
}

// For the small shapes, A and B are the top-left corners of two fixed
// 40×40 matrices, so the reference C = A·B for m×n×k is the top-left m×n
// corner of sum[k], where sum[k][i][j] = Σ_{p<k} A0[i][p]·B0[p][j] in double:
// one table serves all 64,000 shapes.
static float A0[MAX_SMALL][MAX_SMALL], B0[MAX_SMALL][MAX_SMALL];
static double sum[MAX_SMALL + 1][MAX_SMALL][MAX_SMALL];
static double magnitude[MAX_SMALL + 1][MAX_SMALL][MAX_SMALL];  // Σ |A0[i][p]·B0[p][j]|

static void make_small_reference(void)
{
    mat_fill_random(&A0[0][0], MAX_SMALL, MAX_SMALL, MAX_SMALL, 1);
    mat_fill_random(&B0[0][0], MAX_SMALL, MAX_SMALL, MAX_SMALL, 2);
    for (int k = 1; k <= MAX_SMALL; k++)
        for (int i = 0; i < MAX_SMALL; i++)
            for (int j = 0; j < MAX_SMALL; j++) {
                double ab = (double)A0[i][k - 1] * B0[k - 1][j];
                sum[k][i][j] = sum[k - 1][i][j] + ab;
                magnitude[k][i][j] = magnitude[k - 1][i][j] + fabs(ab);
            }
}

// The rounding-error bound of mat.c: γ_{k+2}·Σ|a·b| + FLT_MIN, u = 2^-24.
static double error_bound(int k, double magnitude)
{
    double u = 0.5 * FLT_EPSILON, n = k + 2.0;
    return n * u / (1.0 - n * u) * magnitude + FLT_MIN;
}

static struct mat_check check_small(const float *C, int ldc, int m, int n, int k)
{
    struct mat_check r = {0};
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double got = C[i * ldc + j], want = sum[k][i][j];
            double ratio = isfinite(got) ? fabs(got - want) / error_bound(k, magnitude[k][i][j])
                                         : INFINITY;
            r.checked++;
            if (ratio > r.ratio || r.checked == 1) {
                r.ratio = ratio;
                r.i = i, r.j = j, r.got = got, r.want = want;
            }
        }
    return r;
}

// Every m, n, k in 1..MAX_SMALL. A and B are allocated at exactly their size
// (lda = k, ldb = n), so AddressSanitizer stops a kernel that reads past
// them; C has C_PAD extra columns filled with NaN that must stay NaN.
static void check_every_small_shape(bench_matmul_fn fn, const char *name, struct worst *w)
{
    make_small_reference();
    for (int m = 1; m <= MAX_SMALL; m++)
        for (int n = 1; n <= MAX_SMALL; n++)
            for (int k = 1; k <= MAX_SMALL; k++) {
                int ldc = n + C_PAD;
                float *A = malloc(sizeof(float) * m * k), *B = malloc(sizeof(float) * k * n);
                float *C = malloc(sizeof(float) * m * ldc);
                cr_assert(A && B && C, "out of memory");
                for (int i = 0; i < m; i++)
                    for (int p = 0; p < k; p++)
                        A[i * k + p] = A0[i][p];
                for (int p = 0; p < k; p++)
                    for (int j = 0; j < n; j++)
                        B[p * n + j] = B0[p][j];
                mat_fill(C, m, ldc, ldc, NAN);
                fn(m, n, k, A, k, B, n, C, ldc);
                for (int i = 0; i < m; i++)
                    for (int j = n; j < ldc; j++)
                        cr_assert(isnan(C[i * ldc + j]),
                                  "%s at %dx%dx%d wrote C[%d][%d], past the last column", name,
                                  m, n, k, i, j);
                struct mat_check c = check_small(C, ldc, m, n, k);
                assert_check(c, name, m, n, k);
                note(w, c, m, n, k);
                free(A);
                free(B);
                free(C);
            }
}

static void check_shape(bench_matmul_fn fn, const char *name, int m, int n, int k, int pad,
                        struct worst *w)
{
    struct mat_check c = bench_check_kernel(fn, m, n, k, pad);
    assert_check(c, name, m, n, k);
    note(w, c, m, n, k);
}

// Random shapes up to MAX_RANDOM, the same ones on every run.
static void check_random_shapes(bench_matmul_fn fn, const char *name, struct worst *w)
{
    srand(3);
    for (int s = 0; s < RANDOM_SHAPES; s++) {
        int m = 1 + rand() % MAX_RANDOM, n = 1 + rand() % MAX_RANDOM, k = 1 + rand() % MAX_RANDOM;
        check_shape(fn, name, m, n, k, s % 4, w);
    }
}

// The big sizes: every element would take too long under the sanitizers, so
// 2000 sampled ones plus the four corners.
static void check_big(bench_matmul_fn fn, const char *name, int m, int n, int k,
                      struct worst *w)
{
    float *A = mat_alloc(m, k), *B = mat_alloc(k, n), *C = mat_alloc(m, n);
    cr_assert(A && B && C, "out of memory");
    mat_fill_random(A, m, k, k, 4);
    mat_fill_random(B, k, n, n, 5);
    mat_fill(C, m, n, n, NAN);
    fn(m, n, k, A, k, B, n, C, n);
    struct mat_problem prob = mat_product(m, n, k, A, k, B, n);
    struct mat_check c = mat_check_gemm(&prob, C, n, 2000);
    assert_check(c, name, m, n, k);
    note(w, c, m, n, k);
    mat_free(A);
    mat_free(B);
    mat_free(C);
}

static void report(const char *name, struct worst w)
{
    cr_log_info("%s: worst error %.3g of the bound (at %dx%dx%d)", name, w.ratio, w.m, w.n,
                w.k);
}

static void check_kernel(bench_matmul_fn fn, const char *name)
{
    struct worst w = {0.0, 0, 0, 0};
    check_every_small_shape(fn, name, &w);
    check_random_shapes(fn, name, &w);
    // One shape holds all three big sizes, each in a different role: the
    // cube of each would take minutes under the sanitizers.
    check_big(fn, name, 1000, 1024, 1040, &w);
    report(name, w);
}

#endif
