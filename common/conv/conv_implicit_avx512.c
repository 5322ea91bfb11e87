// The implicit GEMM's AVX-512 part: the col2im of its data gradient
// (conv_implicit_parts.h). conv_implicit_parts.h sits outside the guard so
// the file is never an empty translation unit.
#include "conv_implicit_parts.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "lanes_avx512.h"

// listing: col2im_avx512
// conv_col2im_avx2 with 16 floats of a row of dx a vector, and AVX-512's
// mask registers in place of its −0 filler: each tap's floats are loaded
// under the mask of the lanes that have one and added under the same mask,
// so every other lane keeps its sum as it was. Each sum is still a chain of
// dependent adds in col2im's order; the chains of the next rows are
// independent of it, and the core runs them alongside. Rows or filters
// wider than the mask table go to the plain loop.
enum { L = 16, MAX_CHUNKS = 8, MAX_KW = 8 };

void conv_col2im_avx512(const struct conv_geom *g, const float *col, long ldcol, float *dx)
{
    // BEGIN SOLUTION task 8.2: col2im at stride 1, as a gather, 16 floats at a time
    int chunks = (g->w + L - 1) / L;
    if (chunks > MAX_CHUNKS || g->kw > MAX_KW) {
        conv_col2im_scalar(g, col, ldcol, dx);
        return;
    }
    // inside[k]: the lanes of chunk k inside dx's row. take[k][v]: those
    // whose tap v has a float in col's row, 0 ≤ x0 + l + pad − v < ow.
    __mmask16 inside[MAX_CHUNKS], take[MAX_CHUNKS][MAX_KW];
    for (int k = 0; k < chunks; k++) {
        int x0 = L * k;
        inside[k] = lanes_between(0, g->w - x0);
        for (int v = 0; v < g->kw; v++)
            take[k][v] = inside[k] & lanes_between(v - g->pad - x0, g->ow + v - g->pad - x0);
    }
    for (int ch = 0; ch < g->c; ch++)
        for (int iy = 0; iy < g->h; iy++) {
            float *row = dx + ((long)ch * g->h + iy) * g->w;
            for (int k = 0; k < chunks; k++) {
                int x0 = L * k;
                __m512 s = _mm512_maskz_loadu_ps(inside[k], row + x0);
                for (int u = 0; u < g->kh; u++) {
                    int r = iy + g->pad - u;
                    if (r < 0 || r >= g->oh)
                        continue;
                    // Tap (u, v)'s float for lane l is at from[l − v].
                    const float *from = col + ((long)(ch * g->kh + u) * g->kw) * ldcol +
                                        (long)r * g->ow + x0 + g->pad;
                    for (int v = 0; v < g->kw; v++, from += ldcol) {
                        __mmask16 m = take[k][v];
                        s = _mm512_mask_add_ps(s, m, s, _mm512_maskz_loadu_ps(m, from - v));
                    }
                }
                _mm512_mask_storeu_ps(row + x0, inside[k], s);
            }
        }
    // in the kit: conv_col2im_scalar(g, col, ldcol, dx);
    // END SOLUTION
}
// end listing

#endif
