// The Winograd path's loops in plain C (conv_winograd_parts.h). Each row of
// a matrix has at most five terms, grouped so that its sums are shared:
//   Bᵀ = [4 0 −5 0 1 0; 0 −4 −4 1 1 0; 0 4 −4 −1 1 0;
//         0 −2 −1 2 1 0; 0 2 −1 −2 1 0; 0 4 0 −5 0 1]
//   Aᵀ = [1 1 1 1 1 0; 0 1 −1 2 −2 0; 0 1 1 4 4 0; 0 1 −1 8 −8 1]
// Each transform applies its matrix down the columns of the tile, then
// along the rows of the result, WINO_LANES channels at a time.

#include "conv_winograd_parts.h"

// listing: winograd_input
// t = Bᵀ d: six rows of a patch's column (d[0], d[s], … d[5s]) into six.
static void bt_column(const float *d, long s, float *t, long ts)
{
    for (int l = 0; l < WINO_LANES; l++) {
        float d0 = d[l], d1 = d[s + l], d2 = d[2 * s + l], d3 = d[3 * s + l],
              d4 = d[4 * s + l], d5 = d[5 * s + l];
        t[l] = 4 * d0 - 5 * d2 + d4;
        t[ts + l] = -4 * (d1 + d2) + d3 + d4;
        t[2 * ts + l] = 4 * (d1 - d2) - d3 + d4;
        t[3 * ts + l] = 2 * (d3 - d1) - d2 + d4;
        t[4 * ts + l] = 2 * (d1 - d3) - d2 + d4;
        t[5 * ts + l] = 4 * d1 - 5 * d3 + d5;
    }
}

// V = Bᵀ d B: down the patch's six columns, then along the six rows of t.
void wino_input_scalar(const float *d, long row, int cp, float *v, long vs)
{
    for (int c0 = 0; c0 < cp; c0 += WINO_LANES) {
        float t[6][6][WINO_LANES];  // t[a][col] = (Bᵀ d)[a][col]
        for (int col = 0; col < 6; col++)
            bt_column(d + col * cp + c0, row, t[0][col], 6 * WINO_LANES);
        for (int a = 0; a < 6; a++)
            bt_column(t[a][0], WINO_LANES, v + a * 6 * vs + c0, vs);
    }
}
// end listing

// listing: winograd_output
// y = Aᵀ m: six rows into four.
static void at_column(const float *m, long s, float *y, long ys)
{
    for (int l = 0; l < WINO_LANES; l++) {
        float m0 = m[l], m1 = m[s + l], m2 = m[2 * s + l], m3 = m[3 * s + l],
              m4 = m[4 * s + l], m5 = m[5 * s + l];
        y[l] = m0 + (m1 + m2) + (m3 + m4);
        y[ys + l] = (m1 - m2) + 2 * (m3 - m4);
        y[2 * ys + l] = (m1 + m2) + 4 * (m3 + m4);
        y[3 * ys + l] = (m1 - m2) + 8 * (m3 - m4) + m5;
    }
}

// Y = Aᵀ m A: down the six columns of the 6×6, then along the four rows.
void wino_output_scalar(const float *m, long ms, int cp, float *y, long row)
{
    for (int c0 = 0; c0 < cp; c0 += WINO_LANES) {
        float t[4][6][WINO_LANES];  // t[r][b] = (Aᵀ m)[r][b]
        for (int b = 0; b < 6; b++)
            at_column(m + b * ms + c0, 6 * ms, t[0][b], 6 * WINO_LANES);
        for (int r = 0; r < 4; r++)
            at_column(t[r][0], WINO_LANES, y + r * row + c0, cp);
    }
}
// end listing

// The backward's transforms are the transposes of the forward's.
// m = A y: four rows into six (A is Aᵀ's transpose, 6×4).
static void a_column(const float *y, long s, float *m, long ms)
{
    for (int l = 0; l < WINO_LANES; l++) {
        float y0 = y[l], y1 = y[s + l], y2 = y[2 * s + l], y3 = y[3 * s + l];
        float even = y0 + y2, odd = y1 + y3, e4 = y0 + 4 * y2, o4 = 2 * y1 + 8 * y3;
        m[l] = y0;
        m[ms + l] = even + odd;
        m[2 * ms + l] = even - odd;
        m[3 * ms + l] = e4 + o4;
        m[4 * ms + l] = e4 - o4;
        m[5 * ms + l] = y3;
    }
}

// dM = A dY Aᵀ.
void wino_output_backward_scalar(const float *y, long row, int cp, float *m, long ms)
{
    for (int c0 = 0; c0 < cp; c0 += WINO_LANES) {
        float t[6][4][WINO_LANES];  // t[a][q] = (A dY)[a][q]
        for (int q = 0; q < 4; q++)
            a_column(y + q * cp + c0, row, t[0][q], 4 * WINO_LANES);
        for (int a = 0; a < 6; a++)
            a_column(t[a][0], WINO_LANES, m + a * 6 * ms + c0, ms);
    }
}

// d += B v: six rows into six (B is Bᵀ's transpose).
static void b_column(const float *v, long s, float *d, long ds, int add)
{
    for (int l = 0; l < WINO_LANES; l++) {
        float v0 = v[l], v1 = v[s + l], v2 = v[2 * s + l], v3 = v[3 * s + l],
              v4 = v[4 * s + l], v5 = v[5 * s + l];
        float r[6] = {4 * v0,
                      4 * (v2 - v1) + 2 * (v4 - v3) + 4 * v5,
                      -5 * v0 - 4 * (v1 + v2) - (v3 + v4),
                      (v1 - v2) + 2 * (v3 - v4) - 5 * v5,
                      v0 + (v1 + v2) + (v3 + v4),
                      v5};
        for (int i = 0; i < 6; i++)
            d[i * ds + l] = add ? d[i * ds + l] + r[i] : r[i];
    }
}

// d += B dV Bᵀ, into the patch.
void wino_input_backward_scalar(const float *v, long vs, int cp, float *d, long row)
{
    for (int c0 = 0; c0 < cp; c0 += WINO_LANES) {
        float t[6][6][WINO_LANES];  // t[y][b] = (B dV)[y][b]
        for (int b = 0; b < 6; b++)
            b_column(v + b * vs + c0, 6 * vs, t[0][b], 6 * WINO_LANES, 0);
        for (int y = 0; y < 6; y++)
            b_column(t[y][0], WINO_LANES, d + y * row + c0, cp, 1);
    }
}

// x = Gᵀ u: six rows into three (Gᵀ is 3×6), for the backward of
// filter_transform; in float, as the sums it takes apart were made.
static void gt_column(const float *u, long s, float *x, long xs)
{
    for (int l = 0; l < WINO_LANES; l++) {
        float u0 = u[l], u1 = u[s + l], u2 = u[2 * s + l], u3 = u[3 * s + l],
              u4 = u[4 * s + l], u5 = u[5 * s + l];
        float s12 = u1 + u2, s34 = u3 + u4;
        x[l] = u0 / 4 - s12 / 6 + s34 / 24;
        x[xs + l] = (u2 - u1) / 6 + (u3 - u4) / 12;
        x[2 * xs + l] = (s34 - s12) / 6 + u5;
    }
}

// dg += Gᵀ dU G, WINO_LANES channels at a time, their 3×3s side by side in dg.
void wino_filter_backward_scalar(const float *du, long ds, int c, float *dg)
{
    for (int c0 = 0; c0 < c; c0 += WINO_LANES) {
        float t[3][6][WINO_LANES], g[3][3][WINO_LANES];  // t[i][b] = (Gᵀ dU)[i][b]
        for (int b = 0; b < 6; b++)
            gt_column(du + b * ds + c0, 6 * ds, t[0][b], 6 * WINO_LANES);
        for (int i = 0; i < 3; i++)
            gt_column(t[i][0], WINO_LANES, g[i][0], WINO_LANES);
        for (int l = 0; l < WINO_LANES && c0 + l < c; l++)
            for (int k = 0; k < 9; k++)
                dg[(c0 + l) * 9 + k] += g[k / 3][k % 3][l];
    }
}

int wino_to_pixels_scalar(int ch0, int c, int h, int w, const float *planes, long cs, float *px,
                          int wp, int cp, int off)
{
    for (int ch = ch0; ch < c; ch++)
        for (int y = 0; y < h; y++) {
            const float *from = planes + ch * cs + (long)y * w;
            float *to = px + ((long)(y + off) * wp + off) * cp + ch;
            for (int x = 0; x < w; x++)
                to[(long)x * cp] = from[x];
        }
    return c;
}

int wino_to_planes_scalar(int ch0, int c, int h, int w, const float *px, int wp, int cp, int off,
                          float *planes, long cs, int add)
{
    for (int ch = ch0; ch < c; ch++)
        for (int y = 0; y < h; y++) {
            const float *from = px + ((long)(y + off) * wp + off) * cp + ch;
            float *to = planes + ch * cs + (long)y * w;
            for (int x = 0; x < w; x++)
                to[x] = add ? to[x] + from[(long)x * cp] : from[(long)x * cp];
        }
    return c;
}

