// Checks shared by the tests of chapters 4 and 5: the library GEMM against
// the double-precision reference over every transpose, alpha, beta, shape
// and leading dimension, per ISA.
#ifndef GEMM_CHECK_H
#define GEMM_CHECK_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "mat.h"

static const enum gemm_trans transposes[2] = {GEMM_NOTRANS, GEMM_TRANS};
static const float alphas[2] = {1.0f, -0.5f};
static const float betas[3] = {0.0f, 1.0f, 0.3f};

// A GEMM in the context it is handed (gemm_packed_ctx, gemm_ctx ...).
typedef void gemm_fn(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                     int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc);

// Operands big enough for every shape of a test, with room for padding.
struct operands {
    float *A, *B, *C0, *C;
    int cap; // rows and columns each buffer can hold, padding included
};

static struct operands operands_new(int cap)
{
    struct operands o = {mat_alloc(cap, cap), mat_alloc(cap, cap), mat_alloc(cap, cap),
                         mat_alloc(cap, cap), cap};
    cr_assert(o.A && o.B && o.C0 && o.C, "out of memory");
    mat_fill_random(o.A, cap, cap, cap, 11);
    mat_fill_random(o.B, cap, cap, cap, 12);
    mat_fill_random(o.C0, cap, cap, cap, 13);
    return o;
}

static void operands_free(struct operands *o)
{
    mat_free(o->A);
    mat_free(o->B);
    mat_free(o->C0);
    mat_free(o->C);
}

// Runs one call and checks it; pad widens every leading dimension.
static double run_one(gemm_fn *fn, const struct gemm_context *ctx, struct operands *o,
                      enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k, float alpha,
                      float beta, int pad, long max_checks)
{
    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    int ldc0 = ldc;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++)
            o->C[(size_t)i * ldc + j] =
                j < n ? o->C0[(size_t)i * ldc0 + j] : 12345.0f; // guard band
    // beta = 0 must not read C: NaN there would spread.
    if (beta == 0.0f)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                o->C[(size_t)i * ldc + j] = NAN;
    fn(ctx, ta, tb, m, n, k, alpha, o->A, lda, o->B, ldb, beta, o->C, ldc);
    for (int i = 0; i < m; i++)
        for (int j = n; j < ldc; j++)
            cr_assert_eq(o->C[(size_t)i * ldc + j], 12345.0f,
                         "wrote past column n at %dx%dx%d, C[%d][%d]", m, n, k, i, j);
    struct mat_problem p = {ta, tb, m, n, k, alpha, beta, o->A, lda, o->B, ldb, o->C0, ldc0};
    struct mat_check c = mat_check_gemm(&p, o->C, ldc, max_checks);
    cr_assert(c.ratio <= 1.0,
              "ta=%d tb=%d %dx%dx%d alpha=%g beta=%g pad=%d: C[%d][%d] = %g, want %g "
              "(%.3g × the bound)",
              ta, tb, m, n, k, alpha, beta, pad, c.i, c.j, c.got, c.want, c.ratio);
    return c.ratio;
}

static const enum isa isas[] = {ISA_SCALAR, ISA_AVX2, ISA_AVX512,
                                     ISA_NEON};

// Every m, n, k in 1..40 with every transpose pair, alpha and beta. A and
// B are stored both ways round with the same values, so op(A)·op(B) is one
// product for all four transpose pairs: its double reference is computed
// once per shape and serves 24 calls.
static void small_grid(gemm_fn *fn, const char *name)
{
    enum { N = 40, LD = 48 };
    float *A = mat_alloc(N, LD), *At = mat_alloc(N, LD), *B = mat_alloc(N, LD);
    float *Bt = mat_alloc(N, LD), *C0 = mat_alloc(N, LD), *C = mat_alloc(N, LD);
    double *ref = malloc(sizeof(double) * N * N), *mag = malloc(sizeof(double) * N * N);
    cr_assert(A && At && B && Bt && C0 && C && ref && mag);
    mat_fill_random(A, N, LD, LD, 11);
    mat_fill_random(B, N, LD, LD, 12);
    mat_fill_random(C0, N, LD, LD, 13);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            At[j * LD + i] = A[i * LD + j];
            Bt[j * LD + i] = B[i * LD + j];
        }
    enum isa best = isa_best();
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        if (!isa_supported(isas[s]))
            continue;
        struct gemm_context ctx = gemm_context_for(isas[s]);
        // The ISA this machine runs gets all 24 combinations at every shape;
        // the others one combination per shape, in turn, so each combination
        // still meets every edge case many times over (ASan makes the full
        // product too slow to run for every ISA).
        int full = isas[s] == best;
        double worst = 0.0;
        long calls = 0;
        for (int m = 1; m <= N; m++)
            for (int n = 1; n <= N; n++)
                for (int k = 1; k <= N; k++) {
                    for (int i = 0; i < m; i++)
                        for (int j = 0; j < n; j++) {
                            double sum = 0.0, abs_sum = 0.0;
                            for (int p = 0; p < k; p++) {
                                double ab = (double)A[i * LD + p] * B[p * LD + j];
                                sum += ab;
                                abs_sum += fabs(ab);
                            }
                            ref[i * N + j] = sum;
                            mag[i * N + j] = abs_sum;
                        }
                    for (int combo = 0; combo < 24; combo++) {
                        if (!full && combo != (m * 7 + n * 5 + k) % 24)
                            continue;
                        int t = combo / 6, a = combo / 3 % 2, b = combo % 3;
                        enum gemm_trans ta = transposes[t / 2], tb = transposes[t % 2];
                        float alpha = alphas[a], beta = betas[b];
                        for (int i = 0; i < m; i++)
                            for (int j = 0; j < LD; j++)
                                C[i * LD + j] = beta == 0.0f && j < n ? NAN : C0[i * LD + j];
                        fn(&ctx, ta, tb, m, n, k, alpha, ta ? At : A, LD, tb ? Bt : B, LD, beta, C,
                           LD);
                        calls++;
                        for (int i = 0; i < m; i++) {
                            for (int j = 0; j < n; j++) {
                                double c0 = C0[i * LD + j];
                                double want = alpha * ref[i * N + j] + beta * c0;
                                double bound = mat_error_bound(k, fabs(alpha) * mag[i * N + j] +
                                                                      fabs(beta * c0));
                                double got = C[i * LD + j];
                                double r = fabs(got - want) / bound;
                                cr_assert(r <= 1.0,
                                          "%s ta=%d tb=%d %dx%dx%d alpha=%g beta=%g: "
                                          "C[%d][%d] = %g, want %g (%.3g × the bound)",
                                          isa_name(isas[s]), ta, tb, m, n, k, alpha, beta, i,
                                          j, got, want, r);
                                worst = r > worst ? r : worst;
                            }
                            for (int j = n; j < LD; j++)
                                cr_assert_eq(C[i * LD + j], C0[i * LD + j],
                                             "wrote past column n at %dx%dx%d", m, n, k);
                        }
                    }
                }
        cr_log_info("%s on %s: %ld calls (%s), worst error %.3f of the bound", name,
                    isa_name(isas[s]), calls, full ? "every combination" : "rotating", worst);
    }
    mat_free(A);
    mat_free(At);
    mat_free(B);
    mat_free(Bt);
    mat_free(C0);
    mat_free(C);
    free(ref);
    free(mag);
}

// Cuts ctx's mc, kc and nc to a few slivers, 37 and two micro-panels, so
// that shapes of a few hundred still cross every block edge of the five
// loops (the blocking derived from the caches is larger than them).
static void use_small_blocks(struct gemm_context *ctx)
{
    struct gemm_blocking b = ctx->kernel.blocking;
    b.mc = 3 * b.mr;
    b.kc = 37;
    b.nc = 2 * b.nr;
    cr_assert_eq(gemm_context_set_blocking(ctx, b), 0);
}

// With small_blocks, the five loops run in small blocks (use_small_blocks).
static void random_shapes(gemm_fn *fn, const char *name, int count, int largest,
                          int small_blocks)
{
    struct operands o = operands_new(largest + 8);
    unsigned seed = 7;
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        if (!isa_supported(isas[s]))
            continue;
        struct gemm_context ctx = gemm_context_for(isas[s]);
        if (small_blocks)
            use_small_blocks(&ctx);
        double worst = 0.0;
        for (int i = 0; i < count; i++) {
            int m = 1 + rand_r(&seed) % largest, n = 1 + rand_r(&seed) % largest;
            int k = 1 + rand_r(&seed) % largest;
            int t = rand_r(&seed) % 4;
            double r = run_one(fn, &ctx, &o, transposes[t / 2], transposes[t % 2], m, n, k,
                               alphas[i % 2], betas[i % 3], rand_r(&seed) % 8, 4000);
            worst = r > worst ? r : worst;
        }
        cr_log_info("%s on %s: %d random shapes up to %d%s, worst error %.3f of the bound",
                    name, isa_name(isas[s]), count, largest,
                    small_blocks ? " in small blocks" : "", worst);
    }
    operands_free(&o);
}

#endif
