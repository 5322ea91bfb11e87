#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "gemm_backend.h"
#include "mat.h"
#include "naive.h"
#include "simd.h"
#include "tiled.h"

#if defined(_OPENMP)
#include <omp.h>
#else
static int omp_get_max_threads(void)
{
    return 1;
}
#endif

typedef void plain_matmul(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                          float *C, int ldc);

// The kernels of chapters 1–3 compute only C = A·B. To serve as a full GEMM,
// transposed operands are first copied the right way round, the product goes
// to a scratch matrix, and alpha and beta are applied on the way into C.
// That costs an extra pass over the data: fine for comparing, which is what
// these backends are for.
static int run_plain(plain_matmul *fn, enum gemm_trans ta, enum gemm_trans tb, int m, int n,
                     int k, float alpha, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc)
{
    if (!ta && !tb && alpha == 1.0f && beta == 0.0f) {
        fn(m, n, k, A, lda, B, ldb, C, ldc);
        return 0;
    }
    float *a = ta ? mat_alloc(m, k) : NULL, *b = tb ? mat_alloc(k, n) : NULL;
    float *t = mat_alloc(m, n);
    int ok = t && (!ta || a) && (!tb || b);
    if (ok) {
        for (int i = 0; ta && i < m; i++)
            for (int p = 0; p < k; p++)
                a[(size_t)i * k + p] = A[(size_t)p * lda + i];
        for (int p = 0; tb && p < k; p++)
            for (int j = 0; j < n; j++)
                b[(size_t)p * n + j] = B[(size_t)j * ldb + p];
        fn(m, n, k, ta ? a : A, ta ? k : lda, tb ? b : B, tb ? n : ldb, t, n);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                float *c = &C[(size_t)i * ldc + j];
                // beta = 0 means C is not read: it may hold NaN.
                *c = alpha * t[(size_t)i * n + j] + (beta == 0.0f ? 0.0f : beta * *c);
            }
    }
    mat_free(a);
    mat_free(b);
    mat_free(t);
    return ok ? 0 : -1;
}

static int naive(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                 int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc)
{
    (void)ctx;
    return run_plain(matmul_ikj, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

static int tiled(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                 int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc)
{
    (void)ctx;
    return run_plain(matmul_tiled_l2, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

static int simd(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc)
{
    return run_plain(matmul_simd_for(ctx->kernel.isa), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta,
                     C, ldc);
}

static int packed(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                  int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc)
{
    gemm_packed_ctx(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return 0;
}

static int parallel(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                    int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                    float beta, float *C, int ldc)
{
    gemm_parallel_threads(ctx, omp_get_max_threads(), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta,
                          C, ldc);
    return 0;
}

static int front_door(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                      int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                      float beta, float *C, int ldc)
{
    gemm_ctx(ctx, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return 0;
}

static int openblas(const struct gemm_context *ctx, enum gemm_trans ta, enum gemm_trans tb, int m,
                    int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                    float beta, float *C, int ldc)
{
    (void)ctx;
    blas_gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return 0;
}

static const struct gemm_backend backends[] = {
    {"auto", "gemm(): path and threads chosen from the shape", front_door, 1},
    {"naive", "the i-p-j loops of chapter 1", naive, 0},
    {"tiled", "the two-level cache blocking of chapter 2", tiled, 0},
    {"simd", "the unpacked register-blocked SIMD kernel of chapter 3", simd, 0},
    {"packed", "the packed five loops on one thread (chapter 4)", packed, 0},
    {"parallel", "the packed five loops on all threads (chapter 5)", parallel, 1},
    {"openblas", "OpenBLAS's sgemm", openblas, 0},
};

const struct gemm_backend *gemm_backend_all(int *count)
{
    *count = (int)(sizeof backends / sizeof backends[0]);
    return backends;
}

const struct gemm_backend *gemm_backend_find(const char *name)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (strcmp(backends[i].name, name) == 0)
            return &backends[i];
    return NULL;
}

// The names and their lines, NULL-terminated: filled on the first call (a
// program makes its flags before any thread).
enum { COUNT = sizeof backends / sizeof backends[0] };
static const char *names[COUNT + 1], *abouts[COUNT + 1];

static void fill_names(void)
{
    for (int i = 0; i < COUNT; i++) {
        names[i] = backends[i].name;
        abouts[i] = backends[i].about;
    }
}

const char *const *gemm_backend_names(void)
{
    fill_names();
    return names;
}

const char *const *gemm_backend_abouts(void)
{
    fill_names();
    return abouts;
}
