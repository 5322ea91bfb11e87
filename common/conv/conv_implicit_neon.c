// The implicit path's col2im (conv_implicit_parts.h) with NEON, a row of dx
// 4 floats at a time. conv_implicit_parts.h sits outside the guard so the
// file is never an empty translation unit.
#include "conv_implicit_parts.h"

#if defined(__aarch64__)

#include <arm_neon.h>

// The AVX2 version's walk (conv_implicit_avx2.c). NEON has no masked load:
// a chunk whose lanes all have their float of col loads it whole, one whose
// lanes have none adds nothing (adding −0 would change no sum), and the few
// in between, at the ends of a row, are put together a lane at a time, −0
// in the lanes with none.
enum { MAX_CHUNKS = 16, MAX_KW = 8 };

void conv_col2im_neon(const struct conv_geom *g, const float *col, long ldcol, float *dx)
{
    // BEGIN SOLUTION task 8.2: col2im at stride 1, as a gather, 4 floats at a time
    int chunks = (g->w + 3) / 4;
    if (chunks > MAX_CHUNKS || g->kw > MAX_KW) {
        conv_col2im_scalar(g, col, ldcol, dx);
        return;
    }
    // Lanes lo … hi−1 of chunk k have a float of col for tap v.
    signed char lo[MAX_CHUNKS][MAX_KW], hi[MAX_CHUNKS][MAX_KW];
    for (int k = 0; k < chunks; k++)
        for (int v = 0; v < g->kw; v++) {
            int first = 4, last = 0;
            for (int l = 0; l < 4; l++) {
                int x = 4 * k + l, q = x + g->pad - v;
                if (x < g->w && q >= 0 && q < g->ow) {
                    first = l < first ? l : first;
                    last = l + 1;
                }
            }
            lo[k][v] = (signed char)first;
            hi[k][v] = (signed char)last;
        }
    long taps = (long)g->kh * g->kw;
    for (int ch = 0; ch < g->c; ch++)
        for (int iy = 0; iy < g->h; iy++) {
            float *row = dx + ((long)ch * g->h + iy) * g->w;
            for (int k = 0; k < chunks; k++) {
                int x0 = 4 * k, n = g->w - x0 < 4 ? g->w - x0 : 4;
                float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                for (int l = 0; l < n; l++)
                    part[l] = row[x0 + l];
                float32x4_t sum = n == 4 ? vld1q_f32(row + x0) : vld1q_f32(part);
                for (int u = 0; u < g->kh; u++) {
                    int r = iy + g->pad - u;
                    if (r < 0 || r >= g->oh)
                        continue;
                    // Tap (u, v)'s float for lane l is at from[l − v].
                    const float *from = col + (ch * taps + (long)u * g->kw) * ldcol +
                                        (long)r * g->ow + x0 + g->pad;
                    for (int v = 0; v < g->kw; v++, from += ldcol) {
                        int a = lo[k][v], b = hi[k][v];
                        if (a == 0 && b == 4) {
                            sum = vaddq_f32(sum, vld1q_f32(from - v));
                        } else if (a < b) {
                            float t[4] = {-0.0f, -0.0f, -0.0f, -0.0f};
                            for (int l = a; l < b; l++)
                                t[l] = from[l - v];
                            sum = vaddq_f32(sum, vld1q_f32(t));
                        }
                    }
                }
                if (n == 4) {
                    vst1q_f32(row + x0, sum);
                } else {
                    vst1q_f32(part, sum);
                    for (int l = 0; l < n; l++)
                        row[x0 + l] = part[l];
                }
            }
        }
    // in the kit: conv_col2im_scalar(g, col, ldcol, dx);
    // END SOLUTION
}

#endif
