// Stage 05: the GEMM on threads (common/gemm/gemm_parallel.c), the front door
// gemm() and the backend table, against the double-precision reference;
// Strassen's algorithm (common/gemm/gemm_strassen.c) against its own bound;
// and the same bits whatever the thread count.
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "gemm.h"
#include "gemm_backend.h"
#include "gemm_check.h"
#include "mat.h"

static void on_one_thread(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb,
                          int m, int n, int k, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc)
{
    gemm_parallel_threads(ctx, 1, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void on_all_threads(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb,
                           int m, int n, int k, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc)
{
    gemm_parallel_threads(ctx, omp_get_max_threads(), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta,
                          C, ldc);
}

Test(task_5_1, parallel_every_shape_to_40, .timeout = 900)
{
    omp_set_num_threads(3);
    small_grid(on_all_threads, "gemm_parallel");
}

Test(task_5_1, parallel_random_shapes_to_600, .timeout = 900)
{
    omp_set_num_threads(4);
    random_shapes(on_all_threads, "gemm_parallel", 60, 600, 0);
    random_shapes(on_all_threads, "gemm_parallel", 30, 300, 1);
    random_shapes(on_one_thread, "gemm_parallel_threads(1)", 20, 600, 0);
}

Test(stage_05, front_door_every_shape_to_40, .timeout = 900)
{
    small_grid(gemm_ctx, "gemm");
    random_shapes(gemm_ctx, "gemm", 40, 600, 0);
}

// Each element of C is summed by one thread in one order, so the thread
// count cannot change a single bit.
Test(task_5_1, same_bits_on_1_to_4_threads, .timeout = 600)
{
    const int shapes[][3] = {{600, 600, 600}, {517, 263, 1000}, {1, 700, 300}, {700, 1, 300},
                             {128, 10, 256},  {2000, 32, 9},    {300, 64, 288}};
    struct gemm_context ctx = gemm_context_default();
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
            gemm_parallel_threads(&ctx, 1, ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, C1, n);
            // gemm() may take another path (the small one) than the parallel
            // loops: it is compared with itself on one thread.
            omp_set_num_threads(1);
            mat_fill_random(G1, m, n, n, 5);
            gemm(ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, G1, n);
            for (int threads = 2; threads <= 4; threads++) {
                mat_fill_random(Ct, m, n, n, 5);
                gemm_parallel_threads(&ctx, threads, ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f,
                                      Ct, n);
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
    struct gemm_context ctx = gemm_context_for(isa_best());
    use_small_blocks(&ctx);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *A = mat_alloc(m, k), *B = mat_alloc(k, n);
        float *C1 = mat_alloc(m, n), *Ct = mat_alloc(m, n);
        mat_fill_random(A, m, k, k, 3);
        mat_fill_random(B, k, n, n, 4);
        mat_fill_random(C1, m, n, n, 5);
        gemm_parallel_threads(&ctx, 1, GEMM_NOTRANS, GEMM_TRANS, m, n, k, 0.7f, A, k, B, k, 0.3f,
                              C1, n);
        for (int threads = 2; threads <= 4; threads++) {
            mat_fill_random(Ct, m, n, n, 5);
            gemm_parallel_threads(&ctx, threads, GEMM_NOTRANS, GEMM_TRANS, m, n, k, 0.7f, A, k, B,
                                  k, 0.3f, Ct, n);
            cr_assert(memcmp(C1, Ct, sizeof(float) * (size_t)m * n) == 0,
                      "%dx%dx%d in small blocks: %d threads differ from 1", m, n, k, threads);
        }
        mat_free(A);
        mat_free(B);
        mat_free(C1);
        mat_free(Ct);
    }
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
    mat_free(A);
    mat_free(B);
    mat_free(C0);
    mat_free(C);
}

// Every backend of the table is a full GEMM, transposes and all.
static const struct gemm_backend *current_backend;

static void through_backend(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb,
                            int m, int n, int k, float alpha, const float *A, int lda,
                            const float *B, int ldb, float beta, float *C, int ldc)
{
    cr_assert_eq(current_backend->run(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc),
                 0);
}

Test(backends, each_is_a_full_gemm)
{
    int count;
    const struct gemm_backend *all = gemm_backend_all(&count);
    cr_assert(count >= 7);
    for (int i = 0; i < count; i++) {
        current_backend = &all[i];
        struct gemm_context ctx = gemm_context_default();
        struct operands o = operands_new(140);
        for (int t = 0; t < 4; t++)
            for (int s = 0; s < 6; s++) {
                int m = 1 + 37 * s % 131, n = 1 + 53 * s % 127, k = 1 + 29 * s % 129;
                run_one(through_backend, &ctx, &o, transposes[t / 2], transposes[t % 2], m, n, k,
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

// ---------------------------------------------------------------------------
// Strassen's algorithm (common/gemm/gemm_strassen.c). Its error bound is
// normwise (chapter 5 derives it): every element of C is held to
// gemm_strassen_error_bound, which grows with max|op(A)|·max|op(B)|, not with
// the element's own Σ|a·b| as gemm()'s bound does.

static int strassen_levels, strassen_threads;

static void fused_form(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb,
                       int m, int n, int k, float alpha, const float *A, int lda, const float *B,
                       int ldb, float beta, float *C, int ldc)
{
    gemm_strassen_threads(ctx, strassen_threads, strassen_levels, ta, tb, m, n, k, alpha, A, lda, B,
                          ldb, beta, C, ldc);
}

static void plain_form(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb,
                       int m, int n, int k, float alpha, const float *A, int lda, const float *B,
                       int ldb, float beta, float *C, int ldc)
{
    gemm_strassen_plain_threads(ctx, strassen_threads, strassen_levels, ta, tb, m, n, k, alpha, A,
                                lda, B, ldb, beta, C, ldc);
}

static double op_at(enum gemm_trans t, const float *X, int ld, int r, int c)
{
    return t ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

// Runs fn once and checks C against the double-precision reference and
// Strassen's bound: every element when m·n ≤ 4000, else 4000 of them at
// random and the four corners. Returns the worst |error| / bound.
static double strassen_one(gemm_fn *fn, const struct gemm_context *ctx, const char *name,
                           struct operands *o, enum gemm_trans ta, enum gemm_trans tb, int m, int n,
                           int k, float alpha, float beta, int pad)
{
    const float *A = o->A, *B = o->B, *C0 = o->C0;
    float *C = o->C;
    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++)
            C[(size_t)i * ldc + j] = j >= n ? 12345.0f : beta == 0.0f ? NAN : C0[(size_t)i * ldc + j];
    fn(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    double max_a = 0.0, max_b = 0.0;
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++)
            max_a = fmax(max_a, fabs(op_at(ta, A, lda, i, p)));
    for (int p = 0; p < k; p++)
        for (int j = 0; j < n; j++)
            max_b = fmax(max_b, fabs(op_at(tb, B, ldb, p, j)));
    double ab = fabs(alpha) * max_a * max_b, worst = 0.0;
    long all = (long)m * n, checks = all <= 4000 ? all : 4004;
    unsigned seed = 99;
    for (long s = 0; s < checks; s++) {
        int i, j;
        if (all <= 4000) {
            i = (int)(s / n), j = (int)(s % n);
        } else if (s < 4) {
            i = s < 2 ? 0 : m - 1, j = s % 2 ? n - 1 : 0;
        } else {
            i = rand_r(&seed) % m, j = rand_r(&seed) % n;
        }
        double want = 0.0;
        for (int p = 0; p < k; p++)
            want += op_at(ta, A, lda, i, p) * op_at(tb, B, ldb, p, j);
        double c0 = C0[(size_t)i * ldc + j];
        want = alpha * want + beta * c0;
        double got = C[(size_t)i * ldc + j];
        double bound = gemm_strassen_error_bound(strassen_levels, k, ctx->kernel.blocking.kc, ab,
                                                 fabs(beta * c0));
        double r = fabs(got - want) / bound;
        cr_assert(r <= 1.0,
                  "%s, %d level(s), %d thread(s), ta=%d tb=%d %dx%dx%d alpha=%g beta=%g pad=%d: "
                  "C[%d][%d] = %g, want %g (%.3g × Strassen's bound)",
                  name, strassen_levels, strassen_threads, ta, tb, m, n, k, alpha, beta, pad, i,
                  j, got, want, r);
        worst = fmax(worst, r);
    }
    for (int i = 0; i < m; i++)
        for (int j = n; j < ldc; j++)
            cr_assert_eq(C[(size_t)i * ldc + j], 12345.0f, "%s wrote past column n at %dx%dx%d",
                         name, m, n, k);
    return worst;
}

// Sizes around every edge: below 2 and 4 (nothing to cut), odd (a row,
// column or k left to peel at one level), 2 mod 4 (at two levels), and
// halves and quarters around the micro-kernels' mr and nr.
static const int edge_sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 17, 33, 40};
enum { EDGE_SIZES = sizeof edge_sizes / sizeof edge_sizes[0] };

static void strassen_grid(gemm_fn *fn, const char *name)
{
    struct operands o = operands_new(48);
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        if (!isa_supported(isas[s]))
            continue;
        struct gemm_context ctx = gemm_context_for(isas[s]);
        double worst = 0.0;
        long calls = 0;
        for (int levels = 1; levels <= 2; levels++) {
            strassen_levels = levels;
            for (int a = 0; a < EDGE_SIZES; a++)
                for (int b = 0; b < EDGE_SIZES; b++)
                    for (int c = 0; c < EDGE_SIZES; c++) {
                        int m = edge_sizes[a], n = edge_sizes[b], k = edge_sizes[c];
                        // Every transpose pair, alpha, beta and padding in
                        // turn, so that each meets every edge many times.
                        int combo = (a * 7 + b * 5 + c * 3 + levels) % 24;
                        int t = combo / 6, al = combo / 3 % 2, be = combo % 3;
                        double r =
                            strassen_one(fn, &ctx, name, &o, transposes[t / 2], transposes[t % 2],
                                         m, n, k, alphas[al], betas[be], (a + b + c) % 8);
                        worst = fmax(worst, r);
                        calls++;
                    }
        }
        cr_log_info("%s on %s: %ld calls, worst error %.3f of Strassen's bound", name,
                    isa_name(isas[s]), calls, worst);
    }
    operands_free(&o);
}

Test(task_5_2, strassen_plain_every_edge_to_40, .timeout = 600)
{
    strassen_threads = 1;
    strassen_grid(plain_form, "gemm_strassen_plain_threads");
}

Test(task_5_2, strassen_fused_every_edge_to_40, .timeout = 600)
{
    strassen_threads = 1;
    strassen_grid(fused_form, "gemm_strassen_threads");
}

// Random shapes up to 600 on 1 and 3 threads, both forms and depths, with
// the library's blocking and with blocks small enough that every one of
// the five loops has an edge inside the half- and quarter-size products.
Test(task_5_2, strassen_random_shapes_to_600, .timeout = 900)
{
    struct operands o = operands_new(608);
    unsigned seed = 17;
    struct gemm_context ctx = gemm_context_for(isa_best());
    for (int small = 0; small < 2; small++) {
        if (small)
            use_small_blocks(&ctx);
        for (int i = 0; i < 16; i++) {
            int m = 1 + rand_r(&seed) % 600, n = 1 + rand_r(&seed) % 600;
            int k = 1 + rand_r(&seed) % 600, t = rand_r(&seed) % 4;
            strassen_levels = 1 + i % 2;
            strassen_threads = i % 4 < 2 ? 1 : 3;
            gemm_fn *fn = i % 8 < 4 ? fused_form : plain_form;
            strassen_one(fn, &ctx, i % 8 < 4 ? "fused" : "plain", &o, transposes[t / 2],
                         transposes[t % 2], m, n, k, alphas[i % 2], betas[i % 3],
                         rand_r(&seed) % 8);
        }
    }
    operands_free(&o);
}

// The thread count changes no bit of Strassen either: the products run one
// after another, each element of a product is summed by one thread in one
// order, and the additions are element by element.
Test(task_5_2, strassen_same_bits_on_1_to_4_threads, .timeout = 600)
{
    const int shapes[][3] = {{600, 600, 600}, {517, 263, 301}, {300, 64, 288}, {129, 700, 65}};
    struct gemm_context ctx = gemm_context_default();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *A = mat_alloc(m, k), *B = mat_alloc(k, n);
        float *C1 = mat_alloc(m, n), *Ct = mat_alloc(m, n);
        mat_fill_random(A, m, k, k, 3);
        mat_fill_random(B, k, n, n, 4);
        for (int form = 0; form < 2; form++)
            for (int levels = 1; levels <= 2; levels++) {
                gemm_fn *fn = form == 0 ? fused_form : plain_form;
                enum gemm_trans ta = transposes[(s + levels) % 2], tb = transposes[s % 2];
                int lda = ta ? m : k, ldb = tb ? k : n;
                strassen_levels = levels;
                strassen_threads = 1;
                mat_fill_random(C1, m, n, n, 5);
                fn(&ctx, ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, C1, n);
                for (int threads = 2; threads <= 4; threads++) {
                    strassen_threads = threads;
                    mat_fill_random(Ct, m, n, n, 5);
                    fn(&ctx, ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, Ct, n);
                    cr_assert(memcmp(C1, Ct, sizeof(float) * (size_t)m * n) == 0,
                              "%s form, %d level(s), %dx%dx%d: %d threads differ from 1",
                              form == 0 ? "fused" : "plain", levels, m, n, k, threads);
                }
            }
        mat_free(A);
        mat_free(B);
        mat_free(C1);
        mat_free(Ct);
    }
}

// Data of mixed magnitude: rows of A and columns of B scaled by powers of
// two from 2^-12 to 2^12. The plain GEMM's error follows each element's own
// size; Strassen's follows the largest, so it keeps its normwise bound but
// not gemm()'s elementwise one (which is why gemm() does not pick it).
Test(stage_05, strassen_error_is_normwise, .timeout = 600)
{
    enum { N = 256 };
    struct operands o = operands_new(N);
    float *A = o.A, *B = o.B;
    unsigned seed = 53;
    for (int i = 0; i < N; i++) {
        float row = ldexpf(1.0f, rand_r(&seed) % 25 - 12), col = ldexpf(1.0f, rand_r(&seed) % 25 - 12);
        for (int j = 0; j < N; j++) {
            A[i * N + j] *= row;
            B[j * N + i] *= col;
        }
    }
    struct gemm_context ctx = gemm_context_for(isa_best());
    strassen_threads = 2;
    for (int levels = 1; levels <= 2; levels++) {
        strassen_levels = levels;
        strassen_one(fused_form, &ctx, "fused, mixed magnitudes", &o, GEMM_NOTRANS, GEMM_NOTRANS, N,
                     N, N, 1.0f, 0.0f, 0);
        struct mat_problem p = mat_product(N, N, N, A, N, B, N);
        cr_log_info("mixed magnitudes, %d level(s): worst error %.3g × gemm()'s elementwise "
                    "bound", levels, mat_check_gemm(&p, o.C, N, (long)N * N).ratio);
    }
    operands_free(&o);
}

// gemm() takes Strassen only where the rule says both: faster, and within
// its bound. With the rule saying so from 64 up, gemm() gives the bits of
// gemm_strassen_threads at 100×120×96 and its usual ones below.
Test(task_5_2, gemm_follows_the_strassen_rule, .timeout = 300)
{
    enum { M = 100, N = 120, K = 96 };
    float *A = mat_alloc(M, K), *B = mat_alloc(K, N), *G = mat_alloc(M, N);
    float *S = mat_alloc(M, N), *P = mat_alloc(M, N);
    mat_fill_random(A, M, K, K, 61);
    mat_fill_random(B, K, N, N, 62);
    isa_force(isa_best());
    omp_set_num_threads(2);
    struct gemm_context ctx = gemm_context_default();
    gemm_strassen_threads(&ctx, 2, 1, GEMM_NOTRANS, GEMM_NOTRANS, M, N, K, 1.0f, A, K, B, N, 0.0f,
                          S, N);
    gemm_packed(GEMM_NOTRANS, GEMM_NOTRANS, M, N, K, 1.0f, A, K, B, N, 0.0f, P, N);
    cr_assert(memcmp(S, P, sizeof(float) * M * N) != 0, "Strassen and the five loops agree to "
                                                        "the bit: this test cannot tell them apart");
    struct gemm_strassen_rule yes = {64, 1, 0}, slow = {0, 1, 0}, inexact = {64, 0, 0};
    struct gemm_strassen_rule rules[] = {yes, slow, inexact};
    for (int r = 0; r < 3; r++) {
        ctx.strassen = rules[r];
        gemm_ctx(&ctx, GEMM_NOTRANS, GEMM_NOTRANS, M, N, K, 1.0f, A, K, B, N, 0.0f, G, N);
        cr_assert(memcmp(G, r == 0 ? S : P, sizeof(float) * M * N) == 0,
                  "rule %d: gemm() did not take the %s", r, r == 0 ? "Strassen path" : "five loops");
    }
    // Below the rule's size (k = 60 < 64): the five loops.
    ctx.strassen = yes;
    gemm_ctx(&ctx, GEMM_NOTRANS, GEMM_NOTRANS, M, N, 60, 1.0f, A, K, B, N, 0.0f, G, N);
    gemm_packed(GEMM_NOTRANS, GEMM_NOTRANS, M, N, 60, 1.0f, A, K, B, N, 0.0f, P, N);
    cr_assert(memcmp(G, P, sizeof(float) * M * N) == 0, "gemm() took Strassen below the rule");
    // The default context takes the rule a program sets at its start.
    gemm_strassen_set_rule(yes);
    gemm(GEMM_NOTRANS, GEMM_NOTRANS, M, N, K, 1.0f, A, K, B, N, 0.0f, G, N);
    cr_assert(memcmp(G, S, sizeof(float) * M * N) == 0, "gemm() did not follow the default rule");
    struct gemm_strassen_rule never = {0, 0, 0};
    gemm_strassen_set_rule(never);
    mat_free(A);
    mat_free(B);
    mat_free(G);
    mat_free(S);
    mat_free(P);
}

Test(stage_05, strassen_rule_file)
{
    char path[] = "/tmp/strassen-rule-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# measured\nfaster_from 2048\nwithin_bound 1\n\ntwo_levels_from 8192\n");
    fclose(f);
    struct gemm_strassen_rule r = {0, 0, 0};
    cr_assert_eq(gemm_strassen_read_rule(path, &r), 0);
    cr_assert(r.faster_from == 2048 && r.within_bound == 1 && r.two_levels_from == 8192);
    cr_assert(gemm_strassen_pays(&r, 4096, 2048, 3000) &&
              !gemm_strassen_pays(&r, 4096, 2047, 3000));
    cr_assert(gemm_strassen_levels(&r, 8192, 8192, 8192) == 2 &&
              gemm_strassen_levels(&r, 8191, 9000, 9000) == 1);
    cr_assert_eq(gemm_strassen_use_file(path), 0);
    cr_assert(gemm_context_default().strassen.faster_from == 2048, "the file made the default");
    const char *bad[] = {"faster_from\n", "faster_from 12 13\n", "within_bound 2\n",
                         "fastest_from 12\n", "faster_from -5\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = fopen(path, "w");
        fputs(bad[i], f);
        fclose(f);
        struct gemm_strassen_rule keep = {7, 1, 9};
        cr_assert_eq(gemm_strassen_read_rule(path, &keep), -1, "accepted '%s'", bad[i]);
        cr_assert(keep.faster_from == 7 && keep.two_levels_from == 9, "changed the rule on '%s'",
                  bad[i]);
    }
    remove(path);
    cr_assert_eq(gemm_strassen_read_rule(path, &r), -1);
    struct gemm_strassen_rule never = {0, 0, 0};
    gemm_strassen_set_rule(never);
}
