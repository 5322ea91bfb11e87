#ifndef CONV_IMPLICIT_H
#define CONV_IMPLICIT_H

// The implicit GEMM of conv.h's "implicit" path: the im2col path's two
// GEMMs that read the col matrix, with that matrix never written. The
// GEMM's packing step, which copies each micro-panel of B into the order the
// micro-kernel reads, takes it straight from the images instead of from a
// col matrix that im2col wrote and the packing reads back.
//
// A run is m images side by side (their xs floats apart from x on): its col
// matrix COL is K × (m·P), K = c·kh·kw rows and one column per output
// position of each image (image j / P, position j % P), as im2col lays the
// images' matrices side by side. Every sum is the one the packed GEMM
// (common/gemm/gemm_packed.c) makes on COL with the same micro-kernel and
// blocking, term for term.

// One convolution's sizes: the image c×h×w, the filter kh×kw, the output
// oh×ow.
struct conv_geom {
    int c, h, w, kh, kw, stride, pad, oh, ow;
};

// Called with upto when columns 0 … upto−1 of the forward's out are final
// (each call's upto larger than the last's), so that the caller can use
// them while they are still in cache.
typedef void conv_done_fn(void *ctx, long upto);

// out (oc × m·P, its rows m·P floats apart) = w (oc×K) · COL, calling done
// (unless NULL) as out's columns become final, a micro-panel at a time.
// Returns 0, or -1 when there is no memory for the packing buffers.
int conv_implicit_forward(const struct conv_geom *g, const float *x, long xs, int m,
                          const float *w, int oc, float *out, conv_done_fn *done, void *ctx);

// dw (oc×K) += dy (oc × m·P, rows m·P floats apart) · COLᵀ.
// Returns 0, or -1 when there is no memory for the packing buffers.
int conv_implicit_dw(const struct conv_geom *g, const float *x, long xs, int m, const float *dy,
                     int oc, float *dw);

// dx (m images, xs floats apart) = beta·dx + the data gradient, beta 1 or
// 0 (dx's old contents not read): col2im of DCOL = wᵀ (K×oc) · dy
// (oc × m·P, rows m·P floats apart), made a few micro-panels at a time into
// dcol (conv_implicit_dx_scratch floats: K rows of P and a micro-panel,
// rounded up to any ISA's micro-panel), each image's block added into its
// dx as soon as it is whole. The same bits as the packed GEMM over the run,
// then col2im image by image (into zeros when beta is 0). Returns 0, or −1
// when there is no memory for the packing buffers.
int conv_implicit_dx(const struct conv_geom *g, const float *w, int oc, const float *dy, int m,
                     float *dcol, float *dx, long xs, float beta);
long conv_implicit_dx_scratch(const struct conv_geom *g);

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
