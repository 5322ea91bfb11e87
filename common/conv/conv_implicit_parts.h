#ifndef CONV_IMPLICIT_PARTS_H
#define CONV_IMPLICIT_PARTS_H

#include "gemm_parts.h"

// What the implicit GEMM (conv_implicit.c) hands to a loop of its own per
// ISA: the gather and the transpose that pack B's micro-panels from the
// images, the packing of A's slivers, and col2im. The plain loops are in
// conv_implicit_scalar.c, the vector ones in conv_implicit_{avx2,avx512,
// neon}.c; conv_implicit.c chooses among them. Each vector loop gives the
// bits of its plain one.

// One convolution's sizes: the image c×h×w, the filter kh×kw, the output
// oh×ow.
struct conv_geom {
    int c, h, w, kh, kw, stride, pad, oh, ow;
    // The GEMM context the products run in: its micro-kernel and blocking,
    // and the ISA of the packing loops (the tape's). NULL: the default one.
    const struct gemm_context *gemm;
};

// dx (c×h×w) += col2im of col (K × P, rows ldcol floats apart) at stride 1
// (g->stride is taken as 1): the same bits as col2im, each element of dx
// read once, its taps summed in col2im's order, written once. The vector
// versions take a row of dx 16 (AVX-512), 8 (AVX2) or 4 (NEON) floats at a
// time.
void conv_col2im_scalar(const struct conv_geom *g, const float *col, long ldcol, float *dx);
void conv_col2im_avx2(const struct conv_geom *g, const float *col, long ldcol, float *dx);
void conv_col2im_avx512(const struct conv_geom *g, const float *col, long ldcol, float *dx);
void conv_col2im_neon(const struct conv_geom *g, const float *col, long ldcol, float *dx);

// b[p·nr + j] = x[rows[p] + cols[j]] for p < kc, j < nj (≤ nr), and 0 for
// nj ≤ j < nr: one packed micro-panel gathered from the images. The AVX2
// version takes 16 full columns (the AVX2 kernel's nr), its rows ldb floats
// apart in b (16, or 32 for each half of an AVX-512 panel); where cols
// ascend, as both packings' do, it reads nothing outside x[rows[p] + cols[0]
// … rows[p] + cols[15]], and it hands any other panel to the scalar loop.
void conv_gather_scalar(const float *x, const long *rows, int kc, const int *cols, int nj, int nr,
                        float *b);
void conv_gather16_avx2(const float *x, const long *rows, int kc, const int *cols, long ldb,
                        float *b);

// b[p·nr + j] = x[at + p + cols[j]] for p < len, j < nj (≤ nr), and 0 for
// nj ≤ j < nr: the gather with rows[p] = at + p. At stride 1, len outputs of
// one row have this form in dW's panels of COLᵀ: each tap's values over them
// lie side by side in x, so the panel is a transpose of nj short rows of x.
// cols ascend (as taps' offsets do). The AVX2 version takes nr a multiple
// of 8; it may read, and ignore, any float of x[0 … span) near the ones it
// takes.
void conv_transpose_scalar(const float *x, long at, int len, const int *cols, int nj, int nr,
                           float *b);
void conv_transpose_avx2(const float *x, long span, long at, int len, const int *cols, int nj,
                         int nr, float *b);

// One full sliver of A for the AVX2 micro-kernel (mr = 6), laid out as
// pack_a_panel lays it: a[p·6 + i] = A[i·lda + p] for i < 6, p < kc.
void conv_pack_sliver6_avx2(int kc, const float *A, long lda, float *a);

#endif
