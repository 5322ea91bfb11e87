#ifndef CONV_WINOGRAD_PARTS_H
#define CONV_WINOGRAD_PARTS_H

// What the Winograd path (conv_winograd.c) hands to a loop of its own per
// ISA: the transforms of one tile and the layout changes around them. The
// plain loops are in conv_winograd_scalar.c, the AVX2 ones (which an
// AVX-512 CPU runs too) in conv_winograd_avx2.c; AArch64 runs the plain
// loops, which its compiler vectorizes. conv_winograd.c chooses among them.

#include "cpu.h"

// Every loop takes channels (or filters) a vector of WINO_LANES at a time,
// and the path rounds its channel counts up to a multiple of it.
enum { WINO_LANES = 8 };

// The transforms of one tile, a vector of channels (or filters) at a time:
// cp is a multiple of WINO_LANES. A patch is 6×6 pixels of cp floats, its rows row
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
    // blocks of WINO_LANES from ch0 on and return where they stopped.
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


// The loops isa runs (conv_winograd.c).
const struct wino_kernels *wino_kernels(enum isa isa);

#endif
