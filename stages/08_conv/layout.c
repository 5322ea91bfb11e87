// The NHWC forward of layout.h: what the convolution looks like when a
// pixel's channels sit side by side.
#include <string.h>

#include "gemm.h"
#include "layout.h"

// listing: im2row_nhwc
void im2row_nhwc(const float *x, int c, int h, int w, int kh, int kw, int stride, int pad,
                 float *rows)
{
    int oh = (h + 2 * pad - kh) / stride + 1, ow = (w + 2 * pad - kw) / stride + 1;
    long K = (long)kh * kw * c;
    // BEGIN SOLUTION task 8.1: the same copy in NHWC: each output (r, q) is one row of rows; where in x is tap (u, v)'s run of c channels, and what goes where it falls in the padding?
    for (int r = 0; r < oh; r++)
        for (int q = 0; q < ow; q++) {
            float *row = rows + ((long)r * ow + q) * K;
            for (int u = 0; u < kh; u++)
                for (int v = 0; v < kw; v++) {
                    int iy = r * stride + u - pad, ix = q * stride + v - pad;
                    float *tap = row + (long)(u * kw + v) * c;
                    if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                        memset(tap, 0, sizeof(float) * (size_t)c);
                    else  // the pixel's channels: one contiguous run
                        memcpy(tap, x + ((long)iy * w + ix) * c, sizeof(float) * (size_t)c);
                }
        }
    // stub: (void)x; (void)c; (void)h; (void)w; (void)stride; (void)pad; (void)rows; (void)oh; (void)ow; (void)K;
    // END SOLUTION
}
// end listing

void conv_forward_nhwc(const float *x, int n, int c, int h, int w, const float *wk,
                       const float *bias, int oc, int kh, int kw, int stride, int pad, int run,
                       float *rows, float *y)
{
    int oh = (h + 2 * pad - kh) / stride + 1, ow = (w + 2 * pad - kw) / stride + 1;
    long K = (long)kh * kw * c, P = (long)oh * ow, xs = (long)h * w * c;
    for (int first = 0; first < n; first += run) {
        int m = n - first < run ? n - first : run;
        for (int j = 0; j < m; j++)
            im2row_nhwc(x + (first + j) * xs, c, h, w, kh, kw, stride, pad, rows + j * P * K);
        float *out = y + first * P * oc;
        for (long p = 0; p < m * P; p++)
            memcpy(out + p * oc, bias, sizeof(float) * (size_t)oc);
        gemm(GEMM_NOTRANS, GEMM_NOTRANS, (int)(m * P), oc, (int)K, 1.0f, rows, (int)K, wk, oc,
             1.0f, out, oc);
    }
}
