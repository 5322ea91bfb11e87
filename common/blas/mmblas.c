// mmblas.c: SGEMM and cblas_sgemm over the book's gemm() (common/gemm/).
// The product itself is gemm()'s; what lives here is the BLAS's contract:
// column-major storage, the argument checks and their positions, the quick
// returns, and a count of the calls by shape.
#include "mmblas.h"

#include <stdlib.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "gemm.h"

// Fortran's LSAME: the same letter in either case.
static int same_letter(const char *c, char upper)
{
    return *c == upper || *c == upper - 'A' + 'a';
}

static int at_least_one(int x)
{
    return x > 1 ? x : 1;
}

// ---------------------------------------------------------------------------
// The count: one row per door, layout, transposes and shape.
enum { SHAPES = 256, REPORTED = 24 }; // shapes counted, shapes printed
struct shape_count {
    const char *door; // "sgemm_" or "cblas_sgemm"
    char layout;      // 'C' column-major, 'R' row-major
    char ta, tb;      // 'N' or 'T', as the caller passed them
    int m, n, k;
    long calls;
};
static struct shape_count counts[SHAPES];
static int shapes_seen;
static long calls_total, calls_uncounted;

static void count_call(const char *door, char layout, char ta, char tb, int m, int n, int k)
{
#if defined(_OPENMP)
#pragma omp critical(mmblas_count)
#endif
    {
        int i = 0;
        while (i < shapes_seen &&
               !(counts[i].door == door && counts[i].layout == layout && counts[i].ta == ta &&
                 counts[i].tb == tb && counts[i].m == m && counts[i].n == n && counts[i].k == k))
            i++;
        calls_total++;
        if (i < shapes_seen) {
            counts[i].calls++;
        } else if (shapes_seen < SHAPES) {
            counts[shapes_seen++] = (struct shape_count){door, layout, ta, tb, m, n, k, 1};
        } else {
            calls_uncounted++; // more shapes than the table holds: counted, not named
        }
    }
}

static int most_calls_first(const void *a, const void *b)
{
    long x = ((const struct shape_count *)a)->calls, y = ((const struct shape_count *)b)->calls;
    return (x < y) - (x > y);
}

void mmblas_report(FILE *f)
{
    struct shape_count sorted[SHAPES];
    int n = shapes_seen;
    for (int i = 0; i < n; i++)
        sorted[i] = counts[i];
    qsort(sorted, (size_t)n, sizeof sorted[0], most_calls_first);
    fprintf(f, "mmblas: the book's gemm() answered %ld calls in %d shapes\n", calls_total, n);
    fprintf(f, "mmblas:    calls  door         layout  op     m x n x k\n");
    long rest = calls_uncounted;
    for (int i = REPORTED; i < n; i++)
        rest += sorted[i].calls;
    for (int i = 0; i < n && i < REPORTED; i++)
        fprintf(f, "mmblas: %8ld  %-11s  %-6s  %c %c    %dx%dx%d\n", sorted[i].calls,
                sorted[i].door, sorted[i].layout == 'R' ? "row" : "column", sorted[i].ta,
                sorted[i].tb, sorted[i].m, sorted[i].n, sorted[i].k);
    if (rest > 0)
        fprintf(f, "mmblas: %8ld  in the other shapes\n", rest);
}

// ---------------------------------------------------------------------------
// Threads, as OpenBLAS takes them: a number fixed when the library loads,
// whatever the calling program set for its own OpenMP loops since.
static int threads_wanted;

void mmblas_set_threads(int threads)
{
    threads_wanted = threads > 0 ? threads : 0;
}

// gemm() takes omp_get_max_threads() threads; the caller's own setting (a
// PyTorch that called torch.set_num_threads) is put back afterwards.
static void run_gemm(enum gemm_trans ta, enum gemm_trans tb, int m, int n, int k, float alpha,
                     const float *A, int lda, const float *B, int ldb, float beta, float *C,
                     int ldc)
{
#if defined(_OPENMP)
    int callers = omp_get_max_threads();
    if (threads_wanted > 0)
        omp_set_num_threads(threads_wanted);
#endif
    gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
#if defined(_OPENMP)
    if (threads_wanted > 0)
        omp_set_num_threads(callers);
#endif
}

// ---------------------------------------------------------------------------
// SGEMM. The checks, in the reference BLAS's order; the first bad argument
// is reported by its position and nothing is computed.
static void fortran_sgemm(const char *transa, const char *transb, int m, int n, int k,
                          float alpha, const float *A, int lda, const float *B, int ldb,
                          float beta, float *C, int ldc, const char *door, char layout)
{
    // listing: sgemm_checks
    int nota = same_letter(transa, 'N'), notb = same_letter(transb, 'N');
    int rows_a = nota ? m : k; // A is rows_a × (nota ? k : m), column-major
    int rows_b = notb ? k : n;
    int bad = 0;
    if (!nota && !same_letter(transa, 'T') && !same_letter(transa, 'C'))
        bad = 1;
    else if (!notb && !same_letter(transb, 'T') && !same_letter(transb, 'C'))
        bad = 2;
    else if (m < 0)
        bad = 3;
    else if (n < 0)
        bad = 4;
    else if (k < 0)
        bad = 5;
    else if (lda < at_least_one(rows_a))
        bad = 8;
    else if (ldb < at_least_one(rows_b))
        bad = 10;
    else if (ldc < at_least_one(m))
        bad = 13;
    if (bad != 0) {
        xerbla_("SGEMM ", &bad, 6);
        return;
    }
    // end listing
    // Counted as the caller passed them: a row-major call swapped them.
    if (layout == 'R')
        count_call(door, layout, notb ? 'N' : 'T', nota ? 'N' : 'T', n, m, k);
    else
        count_call(door, layout, nota ? 'N' : 'T', notb ? 'N' : 'T', m, n, k);

    // listing: sgemm_quick
    // Nothing to do: no element of C, or C stays as it is.
    if (m == 0 || n == 0 || ((alpha == 0.0f || k == 0) && beta == 1.0f))
        return;
    // No product: C = beta·C, without reading A or B (they may hold
    // anything, even NaN) nor, when beta is 0, C.
    if (alpha == 0.0f || k == 0) {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++)
                C[i + (long)j * ldc] = beta == 0.0f ? 0.0f : beta * C[i + (long)j * ldc];
        return;
    }
    // end listing

    // listing: column_major
    // Column-major C (m×n, ldc) is, read row-major, Cᵀ (n×m, ldc); and
    // Cᵀ = op(B)ᵀ·op(A)ᵀ. B's memory read row-major is Bᵀ, so op(B)ᵀ is B's
    // memory with B's own transpose flag, and likewise for A: the row-major
    // gemm() gets n and m swapped, B in A's place and A in B's.
    run_gemm(notb ? GEMM_NOTRANS : GEMM_TRANS, nota ? GEMM_NOTRANS : GEMM_TRANS, n, m, k,
             alpha, B, ldb, A, lda, beta, C, ldc);
    // end listing
}

void mmblas_sgemm(const char *transa, const char *transb, const int *m, const int *n,
                  const int *k, const float *alpha, const float *A, const int *lda,
                  const float *B, const int *ldb, const float *beta, float *C, const int *ldc)
{
    fortran_sgemm(transa, transb, *m, *n, *k, *alpha, A, *lda, B, *ldb, *beta, C, *ldc,
                  "sgemm_", 'C');
}

// ---------------------------------------------------------------------------
// cblas_sgemm: the layout and transposes are checked here, the rest by SGEMM.
static const char *letter_of(int trans)
{
    switch (trans) {
    case MMBLAS_NO_TRANS: return "N";
    case MMBLAS_TRANS: return "T";
    case MMBLAS_CONJ_TRANS: return "C";
    default: return NULL;
    }
}

void mmblas_cblas_sgemm(int layout, int transa, int transb, int m, int n, int k, float alpha,
                        const float *A, int lda, const float *B, int ldb, float beta, float *C,
                        int ldc)
{
    // listing: cblas_sgemm
    const char *ta = letter_of(transa), *tb = letter_of(transb);
    if (layout != MMBLAS_ROW_MAJOR && layout != MMBLAS_COL_MAJOR) {
        cblas_xerbla(1, "cblas_sgemm", "Illegal layout setting, %d\n", layout);
        return;
    }
    if (ta == NULL) {
        cblas_xerbla(2, "cblas_sgemm", "Illegal TransA setting, %d\n", transa);
        return;
    }
    if (tb == NULL) {
        cblas_xerbla(3, "cblas_sgemm", "Illegal TransB setting, %d\n", transb);
        return;
    }
    if (layout == MMBLAS_COL_MAJOR)
        fortran_sgemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, "cblas_sgemm", 'C');
    else // row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ
        fortran_sgemm(tb, ta, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc, "cblas_sgemm", 'R');
    // end listing
}
