#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "mat.h"

float *mat_alloc(int rows, int ld)
{
    if (rows <= 0 || ld <= 0)
        return NULL;
    size_t bytes = (size_t)rows * (size_t)ld * sizeof(float);
    bytes = (bytes + 63) / 64 * 64;  // aligned_alloc wants a multiple of the alignment
    return aligned_alloc(64, bytes);
}

void mat_free(float *M)
{
    free(M);
}

// splitmix64: tiny, fast, and good enough to fill test matrices.
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void mat_fill_random(float *M, int rows, int cols, int ld, uint64_t seed)
{
    uint64_t state = seed;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            // The top 24 bits give a float in [0, 1) exactly.
            float u = (float)(next_random(&state) >> 40) * 0x1p-24f;
            M[(size_t)i * ld + j] = 2.0f * u - 1.0f;
        }
}

void mat_fill(float *M, int rows, int cols, int ld, float value)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            M[(size_t)i * ld + j] = value;
}

struct mat_problem mat_product(int m, int n, int k, const float *A, int lda,
                               const float *B, int ldb)
{
    struct mat_problem p = {
        .transa = 0, .transb = 0, .m = m, .n = n, .k = k, .alpha = 1.0f, .beta = 0.0f,
        .A = A, .lda = lda, .B = B, .ldb = ldb, .C0 = NULL, .ldc0 = 0,
    };
    return p;
}

static double op_a(const struct mat_problem *p, int i, int l)
{
    return p->transa ? p->A[(size_t)l * p->lda + i] : p->A[(size_t)i * p->lda + l];
}

static double op_b(const struct mat_problem *p, int l, int j)
{
    return p->transb ? p->B[(size_t)j * p->ldb + l] : p->B[(size_t)l * p->ldb + j];
}

// listing: error_bound
// The error bound. Each product a·b and each addition in float rounds with a
// relative error of at most u = 2^-24 (half of FLT_EPSILON). Summing k
// products in any order, with or without FMA, gives (Higham, "Accuracy and
// Stability of Numerical Algorithms", §3.1)
//
//     |fl(Σ a·b) − Σ a·b|  ≤  γ_k · Σ |a|·|b|,    γ_k = k·u / (1 − k·u).
//
// Scaling by alpha and adding beta·C0 costs two more roundings, so we use
// γ_{k+2} on |alpha|·Σ|a||b| + |beta|·|c0|. The reference is summed in double,
// whose own error is ~2^29 times smaller and does not matter. The bound is
// rigorous: a correct kernel can never exceed it, and a kernel that drops or
// repeats one product almost always does. FLT_MIN covers underflow.
double mat_error_bound(int k, double magnitude)
{
    double u = 0.5 * FLT_EPSILON;
    double n = (double)k + 2.0;
    return n * u / (1.0 - n * u) * magnitude + FLT_MIN;
}
// end listing

// normwise > 0: the bound of every element; else gemm()'s elementwise one.
static void check_one(const struct mat_problem *p, const float *C, int ldc, int i, int j,
                      double normwise, struct mat_check *r)
{
    double sum = 0.0, magnitude = 0.0;
    for (int l = 0; l < p->k; l++) {
        double ab = op_a(p, i, l) * op_b(p, l, j);
        sum += ab;
        magnitude += fabs(ab);
    }
    double want = p->alpha * sum;
    magnitude *= fabs(p->alpha);
    if (p->beta != 0.0f) {
        double c0 = p->C0[(size_t)i * p->ldc0 + j];
        want += p->beta * c0;
        magnitude += fabs(p->beta * c0);
    }
    double got = C[(size_t)i * ldc + j];
    r->checked++;
    if (!isfinite(got)) {
        if (!r->not_finite) {
            r->not_finite = 1;
            r->ratio = INFINITY;
            r->i = i, r->j = j, r->got = got, r->want = want;
        }
        return;
    }
    double bound = normwise > 0.0 ? normwise : mat_error_bound(p->k, magnitude);
    double ratio = fabs(got - want) / bound;
    if (ratio > r->ratio || r->checked == 1) {
        r->ratio = ratio;
        r->i = i, r->j = j, r->got = got, r->want = want;
    }
}

static struct mat_check check_gemm(const struct mat_problem *p, const float *C, int ldc,
                                   long max_checks, double normwise)
{
    struct mat_check r = {0};
    if (p->m <= 0 || p->n <= 0)
        return r;
    if ((long)p->m * p->n <= max_checks) {
        for (int i = 0; i < p->m; i++)
            for (int j = 0; j < p->n; j++)
                check_one(p, C, ldc, i, j, normwise, &r);
        return r;
    }
    int corners[4][2] = {{0, 0}, {0, p->n - 1}, {p->m - 1, 0}, {p->m - 1, p->n - 1}};
    for (int c = 0; c < 4; c++)
        check_one(p, C, ldc, corners[c][0], corners[c][1], normwise, &r);
    uint64_t state = 12345;
    for (long s = 0; s < max_checks; s++) {
        int i = (int)(next_random(&state) % (uint64_t)p->m);
        int j = (int)(next_random(&state) % (uint64_t)p->n);
        check_one(p, C, ldc, i, j, normwise, &r);
    }
    return r;
}

struct mat_check mat_check_gemm(const struct mat_problem *p, const float *C, int ldc,
                                long max_checks)
{
    return check_gemm(p, C, ldc, max_checks, 0.0);
}

struct mat_check mat_check_gemm_normwise(const struct mat_problem *p, const float *C, int ldc,
                                         long max_checks, double bound)
{
    return check_gemm(p, C, ldc, max_checks, bound);
}
