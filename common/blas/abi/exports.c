// exports.c: the names a BLAS answers to, given to the functions of
// ../mmblas.c, and the library's edge: what it reads from the environment
// when it loads and what it prints when the process ends. Only
// build/lib/libmmblas.so links this file (`make blas`); it sits outside
// common/*/*.c so that no program of the book does, for a program that
// linked it would get our gemm() where it asks OpenBLAS, its peer, for one.
//
// exports.map keeps every other name of the library to itself, so the
// book's gemm(), isa_active() and the rest can clash with nothing in the
// process it is loaded into; xerbla_, cblas_xerbla and every other BLAS
// routine come from the program or the system BLAS (OpenBLAS, linked in).
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "mmblas.h"

// Fortran passes every argument by address, and the length of each
// character argument after the last one; SGEMM reads one letter of each, so
// it needs neither length.
void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const float *alpha, const float *A, const int *lda, const float *B, const int *ldb,
            const float *beta, float *C, const int *ldc)
{
    mmblas_sgemm(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

// The declaration is cblas.h's (OpenBLAS's), so the compiler checks that
// this one matches what every caller was compiled against.
void cblas_sgemm(const enum CBLAS_ORDER layout, const enum CBLAS_TRANSPOSE transa,
                 const enum CBLAS_TRANSPOSE transb, const blasint m, const blasint n,
                 const blasint k, const float alpha, const float *A, const blasint lda,
                 const float *B, const blasint ldb, const float beta, float *C,
                 const blasint ldc)
{
    mmblas_cblas_sgemm((int)layout, (int)transa, (int)transb, m, n, k, alpha, A, lda, B, ldb,
                       beta, C, ldc);
}

static int verbose;

// listing: edge
// A count of threads from the first of the variables OpenBLAS reads, in its
// order; 0 when none holds a number of 1 or more.
static int threads_from_environment(void)
{
    static const char *names[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *value = getenv(names[i]);
        char *end;
        long n = value ? strtol(value, &end, 10) : 0;
        if (value && end != value && n >= 1 && n <= 1024)
            return (int)n;
    }
    return 0;
}

// When the library is loaded (before main, under LD_PRELOAD), as OpenBLAS
// reads its variables then too.
__attribute__((constructor)) static void mmblas_load(void)
{
    mmblas_set_threads(threads_from_environment());
    const char *v = getenv("MMBLAS_VERBOSE");
    verbose = v != NULL && v[0] != '\0' && v[0] != '0';
}

// When the process exits: the count, if MMBLAS_VERBOSE asked for it.
__attribute__((destructor)) static void mmblas_unload(void)
{
    if (verbose)
        mmblas_report(stderr);
}
// end listing
