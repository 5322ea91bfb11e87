// mmblas.h: the book's gemm() behind the two standard BLAS doors, SGEMM of
// Fortran's BLAS and cblas_sgemm of CBLAS, so that a program written for any
// BLAS (NumPy, PyTorch, netlib's tester) can run on it. The exported names,
// sgemm_ and cblas_sgemm, are given to these functions by abi/exports.c,
// which only build/lib/libmmblas.so links (`make blas`).
//
// Fortran's BLAS is column-major: element (i, j) of a matrix with leading
// dimension ld is X[i + j*ld]. It passes every argument by address, and a
// transpose as a character: 'N', 'T' or 'C' (the same as 'T' for real
// matrices), in either case.
#ifndef MMBLAS_H
#define MMBLAS_H

#include <stddef.h>
#include <stdio.h>

// SGEMM: C = alpha·op(A)·op(B) + beta·C, column-major, where op(A) is m×k,
// op(B) is k×n and C is m×n. Checks its arguments as the reference BLAS does
// and calls xerbla_("SGEMM ", &position) for the first bad one: 1 transa,
// 2 transb, 3 m, 4 n, 5 k, 8 lda, 10 ldb, 13 ldc. Reads neither A nor B when
// alpha or k is 0, and never reads C when beta is 0.
void mmblas_sgemm(const char *transa, const char *transb, const int *m, const int *n,
                  const int *k, const float *alpha, const float *A, const int *lda,
                  const float *B, const int *ldb, const float *beta, float *C, const int *ldc);

// CBLAS's layouts and transposes, the numbers cblas.h gives them.
enum mmblas_layout { MMBLAS_ROW_MAJOR = 101, MMBLAS_COL_MAJOR = 102 };
enum mmblas_trans { MMBLAS_NO_TRANS = 111, MMBLAS_TRANS = 112, MMBLAS_CONJ_TRANS = 113 };

// cblas_sgemm: the same product in either layout, arguments by value. As the
// reference CBLAS does, a bad layout or transpose goes to cblas_xerbla
// (position 1, 2 or 3), and the rest are checked by SGEMM itself, called
// with A and B swapped for a row-major product (the error then names SGEMM's
// position, as the reference's does).
void mmblas_cblas_sgemm(int layout, int transa, int transb, int m, int n, int k, float alpha,
                        const float *A, int lda, const float *B, int ldb, float beta, float *C,
                        int ldc);

// The BLAS's error handlers. The library defines neither: a program may
// define its own (netlib's tester does, to check that every bad argument is
// caught), else they are the system BLAS's, which print the position.
// (cblas_xerbla's strings are not const: as OpenBLAS's cblas.h declares it.)
void xerbla_(const char *name, const int *position, size_t name_length);
void cblas_xerbla(int position, char *routine, char *form, ...);

// The threads every product uses (0: as many as OpenMP would give).
void mmblas_set_threads(int threads);

// Calls counted by door and shape; mmblas_report prints one line per shape,
// the most called first, the first 24 of them.
void mmblas_report(FILE *f);

#endif
