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

#include "conv_implicit_parts.h"

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

#endif
