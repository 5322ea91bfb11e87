#ifndef CONV_WINOGRAD_H
#define CONV_WINOGRAD_H

// The "winograd" path of conv.h: a 3×3, stride-1 convolution in fewer
// multiplications, by Winograd's minimal filtering F(4×4, 3×3) (Lavin and
// Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
//
// The output is cut into tiles of 4×4; each reads a 6×6 patch d of the
// input. For one channel and one filter g (3×3), a tile's 16 outputs are
//   Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A
// where ⊙ multiplies element by element and Bᵀ (6×6), G (6×3) and Aᵀ (4×6)
// are small constant matrices. The 36 products of ⊙ make 16 outputs that
// the plain loop makes with 16·9 = 144: four times fewer. Summed over the c
// channels, each of the 36 positions ξ of the transformed tile is a GEMM
// of its own over a chunk of tiles:
//   M_ξ (tiles × oc) = V_ξ (tiles × c) · U_ξ (c × oc)
// with V = Bᵀ d B of every tile and channel, and U = G g Gᵀ of every filter.
// The transforms are additions and multiplications by small constants; the
// multiplications that remain are the GEMMs.
//
// The backward runs the same steps in reverse (each step is linear, so its
// gradient is its transpose): dM = A dY Aᵀ per tile, then
//   dU_ξ = V_ξᵀ · dM_ξ   (summed over every tile)   dw = Gᵀ dU G
//   dV_ξ = dM_ξ · U_ξᵀ                               dd = B dV Bᵀ
// and each tile's dd is added into the patch it came from (patches overlap
// by two rows and two columns).

#include "conv_implicit_parts.h"
#include "cpu.h"

// conv_winograd_forward calls this with each image's output as soon as it
// is whole: oc planes of oh·ow floats, plane o at out + o·oh·ow (no bias).
typedef void conv_image_fn(void *ctx, int image, const float *out);

// 1 when the path takes the convolution: a 3×3 filter at stride 1 (any pad).
int conv_winograd_takes(int kh, int kw, int stride);

// The transformed filters, from w (oc × c × 3 × 3), made once per step and
// shared by every thread: the 36 U_ξ, each c × oc, for the forward, or
// (turned) the 36 U_ξᵀ, each oc × c, for the backward's data gradient; the
// counts are rounded up to whole vectors with zero channels and filters,
// which add nothing. conv_winograd_filters_floats(c, oc) floats.
long conv_winograd_filters_floats(int c, int oc);
void conv_winograd_filters(const float *w, int oc, int c, int turned, float *u);

// The scratch one thread needs for a forward or a backward call, in floats.
long conv_winograd_scratch(const struct conv_geom *g, int oc);
long conv_winograd_backward_scratch(const struct conv_geom *g, int oc);

// The convolution (no bias) of m images (xs floats apart from x on, their
// channels h·w floats apart), with the filters u made above, each image
// handed to done. The transforms and layout changes run isa's loops, the
// GEMMs the current GEMM kernel, on the calling thread.
void conv_winograd_forward(const struct conv_geom *g, const float *x, long xs, int m,
                           const float *u, int oc, enum isa isa, float *scratch,
                           conv_image_fn *done, void *ctx);

// The backward of that forward for the same m images, with the turned
// filters: dy holds their gradients, image j's plane o at dy + j·oh·ow +
// o·ld. dw (oc × c × 3 × 3),
// unless NULL, gets the filters' gradient added; dx, unless NULL, gets the
// images' gradient (xs floats apart) written (beta 0) or added (beta 1).
// The sums over tiles go in one fixed order, whatever the thread.
void conv_winograd_backward(const struct conv_geom *g, const float *x, long xs, int m,
                            const float *dy, long ld, const float *u, int oc, enum isa isa,
                            float *dw, float *dx, float beta, float *scratch);

#endif
