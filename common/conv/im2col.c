// im2col and its adjoint col2im: the copies that turn a convolution into one
// GEMM (the forward) and carry the GEMM's gradient back to the image.
#include <string.h>

#include "conv.h"

// listing: im2col
// col is (c·kh·kw) × (oh·ow), its rows ldcol floats apart: row
// (ch·kh + u)·kw + v is the input channel ch seen through tap (u, v) of the
// filter, one element per output position. Element (r, q) of that row is
// x[ch][r·s + u − p][q·s + v − p], or 0 where that falls in the padding.
// Row by row, the copy reads x's rows in order.
void im2col(const float *x, int c, int h, int w, int kh, int kw, int stride, int pad, float *col,
            long ldcol)
{
    int oh = (h + 2 * pad - kh) / stride + 1, ow = (w + 2 * pad - kw) / stride + 1;
    for (int ch = 0; ch < c; ch++)
        for (int u = 0; u < kh; u++)
            for (int v = 0; v < kw; v++) {
                float *row = col + ((long)(ch * kh + u) * kw + v) * ldcol;
                // BEGIN SOLUTION task 8.1: fill this row of col: which element of x does output (r, q) see through tap (u, v), and what goes where that falls in the padding?
                // Outputs q0 ≤ q < q1 read inside the row (0 ≤ q·s + v − p < w);
                // those before and after read padding.
                int q0 = 0, q1 = ow;
                while (q0 < ow && q0 * stride + v - pad < 0)
                    q0++;
                while (q1 > q0 && (q1 - 1) * stride + v - pad >= w)
                    q1--;
                for (int r = 0; r < oh; r++) {
                    int iy = r * stride + u - pad;
                    float *out = row + (long)r * ow;
                    if (iy < 0 || iy >= h) {
                        memset(out, 0, sizeof(float) * (size_t)ow);
                        continue;
                    }
                    const float *in = x + ((long)ch * h + iy) * w;
                    for (int q = 0; q < q0; q++)
                        out[q] = 0.0f;
                    if (stride == 1)  // a contiguous run: one copy
                        memcpy(out + q0, in + q0 + v - pad, sizeof(float) * (size_t)(q1 - q0));
                    else
                        for (int q = q0; q < q1; q++)
                            out[q] = in[q * stride + v - pad];
                    for (int q = q1; q < ow; q++)
                        out[q] = 0.0f;
                }
                // stub: (void)x; (void)h; (void)w; (void)stride; (void)pad; (void)row; (void)oh; (void)ow;
                // END SOLUTION
            }
}
// end listing

// listing: col2im
// The same walk as im2col, adding instead of copying: an element of x that
// several output positions read (a 3×3 filter at stride 1 reads each one up
// to nine times) gets the sum of their gradients. Padding takes nothing.
void col2im(const float *col, long ldcol, int c, int h, int w, int kh, int kw, int stride, int pad,
            float *dx)
{
    int oh = (h + 2 * pad - kh) / stride + 1, ow = (w + 2 * pad - kw) / stride + 1;
    for (int ch = 0; ch < c; ch++)
        for (int u = 0; u < kh; u++)
            for (int v = 0; v < kw; v++) {
                const float *row = col + ((long)(ch * kh + u) * kw + v) * ldcol;
                // BEGIN SOLUTION task 8.2: add each element of this row of col back into dx, where im2col took it from
                // As in im2col, outputs q0 ≤ q < q1 fall inside the row:
                // the loop over them has no test in it, and at stride 1 it
                // adds one run of floats onto another.
                int q0 = 0, q1 = ow;
                while (q0 < ow && q0 * stride + v - pad < 0)
                    q0++;
                while (q1 > q0 && (q1 - 1) * stride + v - pad >= w)
                    q1--;
                for (int r = 0; r < oh; r++) {
                    int iy = r * stride + u - pad;
                    if (iy < 0 || iy >= h)
                        continue;
                    float *out = dx + ((long)ch * h + iy) * w + v - pad;
                    const float *in = row + (long)r * ow;
                    if (stride == 1)
                        for (int q = q0; q < q1; q++)
                            out[q] += in[q];
                    else
                        for (int q = q0; q < q1; q++)
                            out[q * stride] += in[q];
                }
                // stub: (void)dx; (void)h; (void)w; (void)stride; (void)pad; (void)row; (void)oh; (void)ow;
                // END SOLUTION
            }
}
// end listing
