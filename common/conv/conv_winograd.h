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

// ---------------------------------------------------------------------------
// The loops each ISA has its own version of: plain ones in conv_winograd.c,
// AVX2 ones (which an AVX-512 CPU runs too) in conv_winograd_avx2.c.
// AArch64 runs the plain loops, which its compiler vectorizes.
//
// The transforms of one tile, a vector of channels (or filters) at a time:
// cp is a multiple of 8. A patch is 6×6 pixels of cp floats, its rows row
// floats apart; a tile's transform is 36 rows of cp floats, ξ = a·6 + b at
// v + ξ·vs; a tile of the output 4×4 pixels of cp floats.
//   input     v = Bᵀ d B                  the 6×6 patch d → 36 rows
//   output    y = Aᵀ m A                  36 rows → the 4×4 tile y
//   output_backward    m = A y Aᵀ         the 4×4 tile y → 36 rows
//   input_backward     d += B v Bᵀ        36 rows → added into the patch d
//   filter_backward    dg += Gᵀ du G      36 rows → added into c filters
// filter_backward takes one filter's row of every dU_ξᵀ (du + ξ·ds, its
// channel ch at du[ξ·ds + ch]) and adds into its c channels' 3×3s at dg.
struct wino_kernels {
    void (*input)(const float *d, long row, int cp, float *v, long vs);
    void (*output)(const float *m, long ms, int cp, float *y, long row);
    void (*output_backward)(const float *y, long row, int cp, float *m, long ms);
    void (*input_backward)(const float *v, long vs, int cp, float *d, long row);
    void (*filter_backward)(const float *du, long ds, int c, float *dg);
    // Channels ch0 … c − 1 of an image between planes and pixels: planes
    // of h×w floats, cs floats apart; pixels of cp floats, rows of wp
    // pixels, pixel (y, x) of the planes at (y + off, x + off). to_planes
    // writes (add 0) or adds (add 1). The AVX2 versions take channels in
    // blocks of 8 from ch0 on and return where they stopped.
    int (*to_pixels)(int ch0, int c, int h, int w, const float *planes, long cs, float *px,
                     int wp, int cp, int off);
    int (*to_planes)(int ch0, int c, int h, int w, const float *px, int wp, int cp, int off,
                     float *planes, long cs, int add);
};

void wino_input_scalar(const float *d, long row, int cp, float *v, long vs);
void wino_output_scalar(const float *m, long ms, int cp, float *y, long row);
void wino_output_backward_scalar(const float *y, long row, int cp, float *m, long ms);
void wino_input_backward_scalar(const float *v, long vs, int cp, float *d, long row);
void wino_filter_backward_scalar(const float *du, long ds, int c, float *dg);
int wino_to_pixels_scalar(int ch0, int c, int h, int w, const float *planes, long cs, float *px,
                          int wp, int cp, int off);
int wino_to_planes_scalar(int ch0, int c, int h, int w, const float *px, int wp, int cp, int off,
                          float *planes, long cs, int add);

void wino_input_avx2(const float *d, long row, int cp, float *v, long vs);
void wino_output_avx2(const float *m, long ms, int cp, float *y, long row);
void wino_output_backward_avx2(const float *y, long row, int cp, float *m, long ms);
void wino_input_backward_avx2(const float *v, long vs, int cp, float *d, long row);
void wino_filter_backward_avx2(const float *du, long ds, int c, float *dg);
int wino_to_pixels_avx2(int ch0, int c, int h, int w, const float *planes, long cs, float *px,
                        int wp, int cp, int off);
int wino_to_planes_avx2(int ch0, int c, int h, int w, const float *px, int wp, int cp, int off,
                        float *planes, long cs, int add);

// The loops isa runs.
const struct wino_kernels *wino_kernels(enum isa isa);

#endif
