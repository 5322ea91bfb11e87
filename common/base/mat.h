#ifndef MAT_H
#define MAT_H

#include <stdint.h>

// Matrices are row-major float arrays with an explicit leading dimension:
// element (i, j) of an r×c matrix with leading dimension ld ≥ c is M[i*ld + j].

// A 64-byte aligned rows×ld float array (one cache line, one AVX-512 vector),
// or NULL when out of memory. Free with mat_free.
float *mat_alloc(int rows, int ld);
void mat_free(float *M);

// Uniform values in [-1, 1) from a small deterministic generator, so a run
// with the same seed sees the same matrix on every machine.
void mat_fill_random(float *M, int rows, int cols, int ld, uint64_t seed);
void mat_fill(float *M, int rows, int cols, int ld, float value);

// A GEMM problem, C = alpha·op(A)·op(B) + beta·C0, with op(X) = X or Xᵀ.
// op(A) is m×k and op(B) is k×n; C0 may be NULL when beta is 0.
struct mat_problem {
    int transa, transb;
    int m, n, k;
    float alpha, beta;
    const float *A;
    int lda;
    const float *B;
    int ldb;
    const float *C0;
    int ldc0;
};

// The plain product C = A·B (no transposes, alpha 1, beta 0).
struct mat_problem mat_product(int m, int n, int k, const float *A, int lda,
                               const float *B, int ldb);

// The result of comparing a float C with the double-precision reference.
// ratio is the worst |C - ref| / bound over the checked elements: a correct
// float kernel, whatever its summation order, has ratio ≤ 1 (see mat.c).
struct mat_check {
    double ratio;
    int i, j;          // where the worst element is
    double got, want;  // its value and the reference
    long checked;      // how many elements were compared
    int not_finite;    // C held a NaN or an infinity
};

// The most a float GEMM element may differ from the exact result when its
// sum has k products and |alpha|·Σ|a·b| + |beta·c0| = magnitude (see mat.c).
double mat_error_bound(int k, double magnitude);

// Compares every element when m·n ≤ max_checks, else max_checks elements
// picked at random plus the four corners (edge handling is where kernels break).
struct mat_check mat_check_gemm(const struct mat_problem *p, const float *C, int ldc,
                                long max_checks);
// The same against one bound for every element, for an algorithm whose error
// bound is normwise (Strassen's, chapter 5): ratio is the worst |C - ref| / bound.
struct mat_check mat_check_gemm_normwise(const struct mat_problem *p, const float *C, int ldc,
                                         long max_checks, double bound);

#endif
