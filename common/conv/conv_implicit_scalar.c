// The implicit GEMM's plain loops (conv_implicit_parts.h): the gather and
// the transpose that pack a micro-panel of B from the images, and col2im
// at stride 1 as a gather. Every CPU runs them; the vector versions in
// conv_implicit_{avx2,avx512,neon}.c hand them what they do not take.
#include "conv.h"
#include "conv_implicit_parts.h"

// listing: conv_gather
// b[p·nr + j] = x[rows[p] + cols[j]] for p < kc, j < nj, and 0 for
// nj ≤ j < nr: a micro-panel whose element is at a row's offset plus a
// column's. Without padding both packings are this loop.
void conv_gather_scalar(const float *x, const long *rows, int kc, const int *cols, int nj, int nr,
                        float *b)
{
    for (int p = 0; p < kc; p++, b += nr) {
        const float *row = x + rows[p];
        for (int j = 0; j < nj; j++)
            b[j] = row[cols[j]];
        for (int j = nj; j < nr; j++)
            b[j] = 0.0f;
    }
}
// end listing

// b[p·nr + j] = x[at + p + cols[j]] for p < len, j < nj, and 0 for
// nj ≤ j < nr: the gather whose rows are len consecutive offsets. Column j
// of the panel is then a run of x, x[at + cols[j]] onwards: the panel is
// those nj runs, turned round.
void conv_transpose_scalar(const float *x, long at, int len, const int *cols, int nj, int nr,
                           float *b)
{
    for (int p = 0; p < len; p++, b += nr) {
        const float *row = x + at + p;
        for (int j = 0; j < nj; j++)
            b[j] = row[cols[j]];
        for (int j = nj; j < nr; j++)
            b[j] = 0.0f;
    }
}

// listing: col2im_gather
// col2im at stride 1, walked the other way round: for each element of dx,
// its taps in col2im's order, (u, v) by (u, v), added into one sum, written
// once. col2im adds a row of col onto a row of dx nine times over, each
// time shifted by a float: every element is read and written back nine
// times. The sums are the same, term for term: the same bits.
// It is a working col2im at stride 1, so the stage-08 kit has col2im itself
// here (task 8.2), not this loop.
void conv_col2im_scalar(const struct conv_geom *g, const float *col, long ldcol, float *dx)
{
    // BEGIN SOLUTION task 8.2: col2im at stride 1, as a gather
    for (int ch = 0; ch < g->c; ch++)
        for (int iy = 0; iy < g->h; iy++)
            for (int ix = 0; ix < g->w; ix++) {
                float *at = dx + ((long)ch * g->h + iy) * g->w + ix;
                float sum = *at;
                for (int u = 0; u < g->kh; u++) {
                    int r = iy + g->pad - u;
                    if (r < 0 || r >= g->oh)
                        continue;
                    for (int v = 0; v < g->kw; v++) {
                        int q = ix + g->pad - v;
                        if (q >= 0 && q < g->ow)
                            sum += col[((long)(ch * g->kh + u) * g->kw + v) * ldcol +
                                       (long)r * g->ow + q];
                    }
                }
                *at = sum;
            }
    // in the kit: col2im(col, ldcol, g->c, g->h, g->w, g->kh, g->kw, 1, g->pad, dx);
    // END SOLUTION
}
// end listing
