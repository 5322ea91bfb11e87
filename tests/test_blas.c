// The book's BLAS (common/blas/mmblas.c): SGEMM and cblas_sgemm against a
// double-precision reference in both layouts, at awkward sizes, with every
// transpose, alpha and beta; the quick returns; every bad argument reported
// to the error handler by its position, C left alone. The library itself,
// preloaded under netlib's tester, is `make blas-check`.
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mat.h"
#include "mmblas.h"

// ---------------------------------------------------------------------------
// The error handlers, our own, as netlib's tester has its own: they record
// what the library told them (this program calls no other BLAS routine with
// a bad argument, so nothing else reaches them).
static char xerbla_name[16];
static int xerbla_position, xerbla_calls;

void xerbla_(const char *name, const int *position, size_t name_length)
{
    size_t n = name_length < sizeof xerbla_name - 1 ? name_length : sizeof xerbla_name - 1;
    memcpy(xerbla_name, name, n);
    xerbla_name[n] = '\0';
    xerbla_position = *position;
    xerbla_calls++;
}

void cblas_xerbla(int position, char *routine, char *form, ...)
{
    (void)form;
    snprintf(xerbla_name, sizeof xerbla_name, "%s", routine);
    xerbla_position = position;
    xerbla_calls++;
}

static void xerbla_reset(void)
{
    xerbla_name[0] = '\0';
    xerbla_position = 0;
    xerbla_calls = 0;
}

// ---------------------------------------------------------------------------
// Element (r, c) of a matrix with leading dimension ld, in either layout.
static float at(const float *X, int ld, int r, int c, int col_major)
{
    return col_major ? X[r + (long)c * ld] : X[(long)r * ld + c];
}

static float *at_mut(float *X, int ld, int r, int c, int col_major)
{
    return col_major ? &X[r + (long)c * ld] : &X[(long)r * ld + c];
}

// One product through one door, checked element by element against the
// double-precision sum, within mat_error_bound; C's padding (the elements
// between m or n and ldc) must keep its guard value. beta = 0 starts C at NaN.
enum door { FORTRAN, CBLAS_COL, CBLAS_ROW };

static void check_one(enum door door, int ta, int tb, int m, int n, int k, float alpha,
                      float beta, int pad)
{
    int col = door != CBLAS_ROW;
    // op(A) is m×k: A is m×k, or k×m when transposed, stored in the layout.
    int a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
    int lda = (col ? a_rows : a_cols) + pad, ldb = (col ? b_rows : b_cols) + pad;
    int ldc = (col ? m : n) + pad;
    long a_size = (long)lda * (col ? a_cols : a_rows), b_size = (long)ldb * (col ? b_cols : b_rows);
    long c_size = (long)ldc * (col ? n : m);
    float *A = malloc(sizeof(float) * (size_t)(a_size ? a_size : 1));
    float *B = malloc(sizeof(float) * (size_t)(b_size ? b_size : 1));
    float *C0 = malloc(sizeof(float) * (size_t)c_size), *C = malloc(sizeof(float) * (size_t)c_size);
    cr_assert(A && B && C0 && C, "out of memory");
    mat_fill_random(A, 1, (int)a_size, (int)a_size, 21);
    mat_fill_random(B, 1, (int)b_size, (int)b_size, 22);
    mat_fill_random(C0, 1, (int)c_size, (int)c_size, 23);
    for (long i = 0; i < c_size; i++)
        C[i] = 12345.0f; // the guard value in the padding
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            *at_mut(C, ldc, i, j, col) = beta == 0.0f ? NAN : at(C0, ldc, i, j, col);

    static const char *letters[] = {"N", "T", "n", "t", "C"};
    const char *la = letters[ta ? 1 + 2 * (m % 2) : 2 * (k % 2)]; // both cases of each letter
    const char *lb = letters[tb ? (n % 3 == 0 ? 4 : 1) : 0];     // and 'C', the same as 'T'
    if (door == FORTRAN)
        mmblas_sgemm(la, lb, &m, &n, &k, &alpha, A, &lda, B, &ldb, &beta, C, &ldc);
    else
        mmblas_cblas_sgemm(col ? MMBLAS_COL_MAJOR : MMBLAS_ROW_MAJOR,
                           ta ? MMBLAS_TRANS : MMBLAS_NO_TRANS,
                           tb ? (n % 3 == 0 ? MMBLAS_CONJ_TRANS : MMBLAS_TRANS) : MMBLAS_NO_TRANS,
                           m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);

    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double sum = 0.0, magnitude = 0.0;
            for (int p = 0; p < k; p++) {
                double a = ta ? at(A, lda, p, i, col) : at(A, lda, i, p, col);
                double b = tb ? at(B, ldb, j, p, col) : at(B, ldb, p, j, col);
                sum += a * b;
                magnitude += fabs(a * b);
            }
            double c0 = beta == 0.0f ? 0.0 : at(C0, ldc, i, j, col);
            double want = alpha * sum + beta * c0;
            double bound = mat_error_bound(k, fabs(alpha) * magnitude + fabs(beta * c0));
            double got = at(C, ldc, i, j, col);
            cr_assert(fabs(got - want) <= bound,
                      "door %d op %s%s %dx%dx%d alpha %g beta %g pad %d: C(%d,%d) = %g, want %g",
                      door, la, lb, m, n, k, alpha, beta, pad, i, j, got, want);
        }
    int inner = col ? m : n, outer = col ? n : m;
    for (int o = 0; o < outer; o++)
        for (int i = inner; i < ldc; i++)
            cr_assert_eq(C[(long)o * ldc + i], 12345.0f,
                         "door %d %dx%dx%d: wrote into C's padding", door, m, n, k);
    cr_assert_eq(xerbla_calls, 0, "door %d %dx%dx%d: reported bad argument %d", door, m, n, k,
                 xerbla_position);
    free(A);
    free(B);
    free(C0);
    free(C);
}

static const int sizes[] = {1, 7, 17, 65, 127};
enum { SIZES = sizeof sizes / sizeof sizes[0] };
static const float alphas[] = {1.0f, -0.5f};
static const float betas[] = {0.0f, 1.0f, 0.3f};

// Every size for m, n and k, every transpose pair; alpha and beta in turn
// (every pair of them meets every transpose pair many times over).
static void every_shape(enum door door)
{
    xerbla_reset();
    int turn = 0;
    for (int a = 0; a < SIZES; a++)
        for (int b = 0; b < SIZES; b++)
            for (int c = 0; c < SIZES; c++)
                for (int t = 0; t < 4; t++, turn++)
                    check_one(door, t / 2, t % 2, sizes[a], sizes[b], sizes[c],
                              alphas[turn % 2], betas[turn / 2 % 3], turn % 3 == 0 ? 3 : 0);
}

Test(mmblas, sgemm_column_major_every_transpose, .timeout = 600)
{
    every_shape(FORTRAN);
}

Test(mmblas, cblas_sgemm_both_layouts_every_transpose, .timeout = 600)
{
    every_shape(CBLAS_COL);
    every_shape(CBLAS_ROW);
}

// Large enough for the packed path and both threads, not square.
Test(mmblas, large_not_square, .timeout = 600)
{
    xerbla_reset();
    for (int t = 0; t < 4; t++) {
        check_one(FORTRAN, t / 2, t % 2, 1000, 37, 300, 1.0f, 0.0f, 1);
        check_one(CBLAS_ROW, t / 2, t % 2, 300, 1000, 65, -0.5f, 0.3f, 0);
    }
}

// ---------------------------------------------------------------------------
// The quick returns: nothing is read that need not be.
Test(mmblas, quick_returns)
{
    xerbla_reset();
    float nan_ab[4] = {NAN, NAN, NAN, NAN};
    float C[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    int zero = 0, two = 2;
    float one = 1.0f, alpha0 = 0.0f, beta0 = 0.0f, beta2 = 2.0f, alpha1 = 1.0f;

    // m or n is 0: C is not touched, and A and B may be NULL.
    mmblas_sgemm("N", "N", &zero, &two, &two, &one, NULL, &two, NULL, &two, &beta0, C, &two);
    mmblas_sgemm("N", "N", &two, &zero, &two, &one, NULL, &two, NULL, &two, &beta0, C, &two);
    cr_assert(C[0] == 1.0f && C[3] == 4.0f, "an empty product wrote C");

    // alpha 0 and beta 1: C stays, A and B (NaN) unread.
    mmblas_sgemm("N", "N", &two, &two, &two, &alpha0, nan_ab, &two, nan_ab, &two, &one, C, &two);
    cr_assert(C[0] == 1.0f && C[3] == 4.0f, "alpha 0, beta 1 changed C");
    // k 0 and beta 1: the same.
    mmblas_sgemm("N", "N", &two, &two, &zero, &alpha1, NULL, &two, NULL, &two, &one, C, &two);
    cr_assert(C[0] == 1.0f && C[3] == 4.0f, "k 0, beta 1 changed C");

    // alpha 0, beta 2: C doubles, A and B unread.
    mmblas_sgemm("T", "T", &two, &two, &two, &alpha0, nan_ab, &two, nan_ab, &two, &beta2, C, &two);
    cr_assert(C[0] == 2.0f && C[3] == 8.0f, "alpha 0, beta 2: C = %g %g", C[0], C[3]);
    // k 0, beta 2: C doubles.
    mmblas_cblas_sgemm(MMBLAS_ROW_MAJOR, MMBLAS_NO_TRANS, MMBLAS_NO_TRANS, 2, 2, 0, 1.0f, NULL, 1,
                       NULL, 2, 2.0f, C, 2);
    cr_assert(C[0] == 4.0f && C[3] == 16.0f, "k 0, beta 2: C = %g %g", C[0], C[3]);

    // alpha 0, beta 0: C is zero, even where it held NaN; nothing is read.
    float Cn[4] = {NAN, NAN, NAN, NAN};
    mmblas_sgemm("N", "N", &two, &two, &two, &alpha0, nan_ab, &two, nan_ab, &two, &beta0, Cn, &two);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(Cn[i], 0.0f, "alpha 0, beta 0: C[%d] = %g", i, Cn[i]);
    cr_assert_eq(xerbla_calls, 0);
}

// ---------------------------------------------------------------------------
// Bad arguments: each reported once, by its position, and C left alone.
struct bad_call {
    const char *what;
    const char *ta, *tb;
    int m, n, k, lda, ldb, ldc;
    int position;
};

Test(mmblas, sgemm_reports_each_bad_argument_by_position)
{
    // A valid call is N N 2×3×4, lda 2, ldb 4, ldc 2; each row breaks one thing.
    static const struct bad_call calls[] = {
        {"transa", "X", "N", 2, 3, 4, 2, 4, 2, 1},
        {"transb", "N", "?", 2, 3, 4, 2, 4, 2, 2},
        {"m < 0", "N", "N", -1, 3, 4, 2, 4, 2, 3},
        {"n < 0", "N", "N", 2, -1, 4, 2, 4, 2, 4},
        {"k < 0", "N", "N", 2, 3, -1, 2, 4, 2, 5},
        {"lda < m", "N", "N", 2, 3, 4, 1, 4, 2, 8},
        {"lda < k (A transposed)", "T", "N", 2, 3, 4, 2, 4, 2, 8},
        {"ldb < k", "N", "N", 2, 3, 4, 2, 3, 2, 10},
        {"ldb < n (B transposed)", "N", "T", 2, 3, 4, 2, 2, 2, 10},
        {"ldc < m", "N", "N", 2, 3, 4, 2, 4, 1, 13},
        {"lda 0 when m is 0", "N", "N", 0, 3, 4, 0, 4, 1, 8},
        {"the first bad one: m and ldc", "N", "N", -1, 3, 4, 2, 4, 0, 3},
    };
    float A[64] = {0}, B[64] = {0}, C[64];
    float alpha = 1.0f, beta = 0.0f;
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        const struct bad_call *c = &calls[i];
        for (int j = 0; j < 64; j++)
            C[j] = 7.0f;
        xerbla_reset();
        mmblas_sgemm(c->ta, c->tb, &c->m, &c->n, &c->k, &alpha, A, &c->lda, B, &c->ldb, &beta, C,
                     &c->ldc);
        cr_assert_eq(xerbla_calls, 1, "%s: %d reports", c->what, xerbla_calls);
        cr_assert_str_eq(xerbla_name, "SGEMM ", "%s: reported as %s", c->what, xerbla_name);
        cr_assert_eq(xerbla_position, c->position, "%s: position %d, want %d", c->what,
                     xerbla_position, c->position);
        for (int j = 0; j < 64; j++)
            cr_assert_eq(C[j], 7.0f, "%s: C was written", c->what);
    }
}

Test(mmblas, cblas_sgemm_reports_each_bad_argument_by_position)
{
    float A[64] = {0}, B[64] = {0}, C[64];
    struct {
        const char *what;
        int layout, ta, tb, m, n, k, lda, ldb, ldc;
        const char *name;
        int position;
    } calls[] = {
        // The layout and the transposes: cblas_xerbla, CBLAS's positions.
        {"layout", 100, MMBLAS_NO_TRANS, MMBLAS_NO_TRANS, 2, 3, 4, 4, 3, 3, "cblas_sgemm", 1},
        {"transa", MMBLAS_ROW_MAJOR, 5, MMBLAS_NO_TRANS, 2, 3, 4, 4, 3, 3, "cblas_sgemm", 2},
        {"transb", MMBLAS_COL_MAJOR, MMBLAS_TRANS, 0, 2, 3, 4, 4, 3, 3, "cblas_sgemm", 3},
        // The rest: SGEMM's own check, at its position. Column-major: the
        // same arguments; row-major: SGEMM computes Cᵀ = Bᵀ·Aᵀ, so m is its
        // n (4), lda its ldb (10), ldb its lda (8).
        {"col m < 0", MMBLAS_COL_MAJOR, MMBLAS_NO_TRANS, MMBLAS_NO_TRANS, -1, 3, 4, 2, 4, 2,
         "SGEMM ", 3},
        {"col ldc < m", MMBLAS_COL_MAJOR, MMBLAS_NO_TRANS, MMBLAS_NO_TRANS, 2, 3, 4, 2, 4, 1,
         "SGEMM ", 13},
        {"row m < 0", MMBLAS_ROW_MAJOR, MMBLAS_NO_TRANS, MMBLAS_NO_TRANS, -1, 3, 4, 4, 3, 3,
         "SGEMM ", 4},
        {"row n < 0", MMBLAS_ROW_MAJOR, MMBLAS_NO_TRANS, MMBLAS_NO_TRANS, 2, -1, 4, 4, 3, 3,
         "SGEMM ", 3},
        {"row lda < k", MMBLAS_ROW_MAJOR, MMBLAS_NO_TRANS, MMBLAS_NO_TRANS, 2, 3, 4, 3, 3, 3,
         "SGEMM ", 10},
        {"row ldb < n", MMBLAS_ROW_MAJOR, MMBLAS_NO_TRANS, MMBLAS_NO_TRANS, 2, 3, 4, 4, 2, 3,
         "SGEMM ", 8},
        {"row ldc < n", MMBLAS_ROW_MAJOR, MMBLAS_NO_TRANS, MMBLAS_NO_TRANS, 2, 3, 4, 4, 3, 2,
         "SGEMM ", 13},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        for (int j = 0; j < 64; j++)
            C[j] = 7.0f;
        xerbla_reset();
        mmblas_cblas_sgemm(calls[i].layout, calls[i].ta, calls[i].tb, calls[i].m, calls[i].n,
                           calls[i].k, 1.0f, A, calls[i].lda, B, calls[i].ldb, 0.0f, C,
                           calls[i].ldc);
        cr_assert_eq(xerbla_calls, 1, "%s: %d reports", calls[i].what, xerbla_calls);
        cr_assert_str_eq(xerbla_name, calls[i].name, "%s: reported as %s", calls[i].what,
                         xerbla_name);
        cr_assert_eq(xerbla_position, calls[i].position, "%s: position %d, want %d",
                     calls[i].what, xerbla_position, calls[i].position);
        for (int j = 0; j < 64; j++)
            cr_assert_eq(C[j], 7.0f, "%s: C was written", calls[i].what);
    }
}

// ---------------------------------------------------------------------------
// The thread count the library was given: the same bits on one thread and
// on two, and the caller's own OpenMP setting as it was.
Test(mmblas, threads_change_no_bit_and_leave_the_callers_setting)
{
    enum { M = 300, N = 200, K = 257 };
    float *A = mat_alloc(M, K), *B = mat_alloc(K, N), *C1 = mat_alloc(N, M), *C2 = mat_alloc(N, M);
    cr_assert(A && B && C1 && C2);
    mat_fill_random(A, M, K, K, 31);
    mat_fill_random(B, K, N, N, 32);
    omp_set_num_threads(3);
    float alpha = 1.0f, beta = 0.0f;
    int m = M, n = N, k = K, lda = M, ldb = K, ldc = M;
    mmblas_set_threads(1);
    mmblas_sgemm("N", "N", &m, &n, &k, &alpha, A, &lda, B, &ldb, &beta, C1, &ldc);
    mmblas_set_threads(2);
    mmblas_sgemm("N", "N", &m, &n, &k, &alpha, A, &lda, B, &ldb, &beta, C2, &ldc);
    mmblas_set_threads(0);
    cr_assert_eq(memcmp(C1, C2, sizeof(float) * M * N), 0, "1 and 2 threads differ");
    cr_assert_eq(omp_get_max_threads(), 3, "the caller's thread count became %d",
                 omp_get_max_threads());
    mat_free(A);
    mat_free(B);
    mat_free(C1);
    mat_free(C2);
}

// The count names the door, the layout, the transposes and the shape as
// the caller passed them.
Test(mmblas, count_names_each_shape_as_called)
{
    float A[6 * 5] = {0}, B[5 * 4] = {0}, C[6 * 4];
    int m = 6, n = 4, k = 5, lda = 6, ldb = 5, ldc = 6;
    float alpha = 1.0f, beta = 0.0f;
    for (int i = 0; i < 3; i++)
        mmblas_sgemm("N", "N", &m, &n, &k, &alpha, A, &lda, B, &ldb, &beta, C, &ldc);
    mmblas_cblas_sgemm(MMBLAS_ROW_MAJOR, MMBLAS_TRANS, MMBLAS_NO_TRANS, 6, 4, 5, 1.0f, A, 6, B, 4,
                       0.0f, C, 4);
    char *text = NULL;
    size_t length = 0;
    FILE *f = open_memstream(&text, &length);
    cr_assert(f != NULL);
    mmblas_report(f);
    fclose(f);
    cr_assert(strstr(text, "sgemm_       column  N N    6x4x5") != NULL, "%s", text);
    cr_assert(strstr(text, "cblas_sgemm  row     T N    6x4x5") != NULL, "%s", text);
    free(text);
}
