// The NEON kernels, cross-built for AArch64 and run under qemu-aarch64 by
// tools/test-neon.sh (Criterion exists only for the host). Each matrix
// multiply is checked against the double-precision reference over every
// m, n, k in 1..24 and a few larger shapes; the other kernels (pooling,
// convolution, elementwise loops, optimizers) against the scalar ones or
// the unfused path. The last line says how many passed.
//
// To test another matrix multiply, add a row to `kernels` (wrap it in a
// function with this signature if its own differs); another kernel, a
// function to `checks`; and its sources to SRCS in tools/test-neon.sh.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autovec.h"
#include "conv.h"
#include "conv_direct.h"
#include "conv_implicit.h"
#include "conv_winograd.h"
#include "pool_row.h"
#include "gemm.h"
#include "mat.h"
#include "optim.h"
#include "simd.h"
#include "vec.h"

typedef void (*matmul_fn)(int m, int n, int k, const float *A, int lda, const float *B,
                          int ldb, float *C, int ldc);

// The library GEMM (chapters 4 and 5) with the NEON and the scalar micro-kernel.
static void packed_neon(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    isa_force(ISA_NEON);
    gemm_packed(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

static void packed_scalar(int m, int n, int k, const float *A, int lda, const float *B,
                          int ldb, float *C, int ldc)
{
    isa_force(ISA_SCALAR);
    gemm_packed(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

static void front_door(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                       float *C, int ldc)
{
    isa_force(isa_best());
    gemm(GEMM_NOTRANS, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

// The dispatcher, asked for the program's ISA.
static void simd_active(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                        float *C, int ldc)
{
    matmul_simd_for(isa_active())(m, n, k, A, lda, B, ldb, C, ldc);
}

static const struct {
    const char *name;
    matmul_fn fn;
} kernels[] = {
    {"matmul_simd_neon", matmul_simd_neon},
    {"matmul_auto_neon", matmul_auto_neon},
    {"matmul_simd_scalar", matmul_simd_scalar},
    {"matmul_simd_for", simd_active},
    {"gemm_packed (neon)", packed_neon},
    {"gemm_packed (scalar)", packed_scalar},
    {"gemm", front_door},
};

enum { MAX_SMALL = 24, PAD = 3 };

static const int larger[][3] = {{100, 37, 65}, {97, 120, 300}, {256, 256, 256}, {1, 300, 17}};

// Runs fn on one m×n×k problem, leading dimensions PAD wider than needed and
// C's padding filled with NaN, which must stay NaN. Returns the worst error
// as a fraction of the bound, or INFINITY after printing what went wrong.
static double check(const char *name, matmul_fn fn, int m, int n, int k)
{
    int lda = k + PAD, ldb = n + PAD, ldc = n + PAD;
    float *A = mat_alloc(m, lda), *B = mat_alloc(k, ldb), *C = mat_alloc(m, ldc);
    double ratio = INFINITY;
    if (!A || !B || !C) {
        printf("FAIL %s %dx%dx%d: out of memory\n", name, m, n, k);
        goto done;
    }
    mat_fill_random(A, m, lda, lda, 1);
    mat_fill_random(B, k, ldb, ldb, 2);
    mat_fill(C, m, ldc, ldc, NAN);
    fn(m, n, k, A, lda, B, ldb, C, ldc);
    for (int i = 0; i < m; i++)
        for (int j = n; j < ldc; j++)
            if (!isnan(C[(size_t)i * ldc + j])) {
                printf("FAIL %s %dx%dx%d: wrote C[%d][%d], past the last column\n", name, m, n,
                       k, i, j);
                goto done;
            }
    struct mat_problem p = mat_product(m, n, k, A, lda, B, ldb);
    struct mat_check c = mat_check_gemm(&p, C, ldc, 4000);
    if (c.ratio > 1.0)
        printf("FAIL %s %dx%dx%d: C[%d][%d] = %g, want %g (%.3g × the error bound)\n", name, m,
               n, k, c.i, c.j, c.got, c.want, c.ratio);
    else
        ratio = c.ratio;
done:
    mat_free(A);
    mat_free(B);
    mat_free(C);
    return ratio;
}

// The autograd's elementwise loops (common/autograd/vec_neon.c) must give the
// scalar loops' bits at every length around the vector width, NaN and −0
// among the inputs. Returns 1 when they do.
static int vec_neon_same_bits(void)
{
    float a[40], b[40], want[40], got[40];
    for (int n = 0; n <= 40; n++) {
        mat_fill_random(a, 1, 40, 40, 1 + n);
        mat_fill_random(b, 1, 40, 40, 100 + n);
        a[n / 2] = NAN;
        a[n / 3] = -0.0f;
        for (int op = 0; op < 4; op++) {
            for (int pass = 0; pass < 2; pass++) {
                float *out = pass ? got : want;
                for (int i = 0; i < 40; i++)
                    out[i] = b[i];
                if (op == 0)
                    (pass ? vec_add_neon : vec_add_scalar)(n, out, a, b);
                else if (op == 1)
                    (pass ? vec_add_to_neon : vec_add_to_scalar)(n, out, a);
                else if (op == 2)
                    (pass ? vec_relu_neon : vec_relu_scalar)(n, out, a);
                else
                    (pass ? vec_relu_backward_neon : vec_relu_backward_scalar)(n, out, a, b);
            }
            for (int i = 0; i < 40; i++)
                if (memcmp(&want[i], &got[i], sizeof want[i]) != 0) {
                    printf("FAIL vec op %d at n = %d, element %d: %g, scalar %g\n", op, n, i,
                           got[i], want[i]);
                    return 0;
                }
        }
    }
    printf("pass vec_neon: the same bits as the scalar loops\n");
    return 1;
}

// The optimizers' update loops (common/nn/optim_neon.c) must give the
// scalar loops' bits too: Adam's divisions and square root are correctly
// rounded on both paths, and neither may fuse a multiply into an add.
// Returns 1 when they do.
static int optim_neon_same_bits(void)
{
    enum { N = 1000 };
    static float p[2][N], g[N], m[2][N], v[2][N];
    const long sizes[] = {1, 3, 4, 5, 7, 17, 65, N};
    const struct adam_step step = {.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                                   .weight_decay = 0.01f, .bias1 = 0.19f, .bias2 = 0.002f};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        long n = sizes[s];
        for (int adam = 0; adam < 2; adam++) {
            mat_fill_random(p[0], 1, N, N, 1 + s);
            mat_fill_random(g, 1, N, N, 50 + s);
            mat_fill_random(m[0], 1, N, N, 100 + s);
            mat_fill_random(v[0], 1, N, N, 150 + s);
            for (long i = 0; i < N; i++)
                v[0][i] = fabsf(v[0][i]) * 0.01f;  // a second moment is never negative
            g[n / 2] = 0.0f;
            p[0][n / 3] = -0.0f;
            memcpy(p[1], p[0], sizeof p[0]);
            memcpy(m[1], m[0], sizeof m[0]);
            memcpy(v[1], v[0], sizeof v[0]);
            if (adam) {
                adam_update_scalar(n, p[0], g, m[0], v[0], &step);
                adam_update_neon(n, p[1], g, m[1], v[1], &step);
            } else {
                sgd_update_scalar(n, p[0], g, m[0], 0.1f, 0.9f, 0.01f);
                sgd_update_neon(n, p[1], g, m[1], 0.1f, 0.9f, 0.01f);
            }
            if (memcmp(p[0], p[1], sizeof p[0]) != 0 || memcmp(m[0], m[1], sizeof m[0]) != 0 ||
                memcmp(v[0], v[1], sizeof v[0]) != 0) {
                printf("FAIL optim_neon: %s differs from the scalar loop at n = %ld\n",
                       adam ? "adam" : "sgd", n);
                return 0;
            }
        }
    }
    if (isa_force(ISA_NEON) != 0 || optim_kernels(isa_active())->adam != adam_update_neon) {
        printf("FAIL optim_neon: the dispatch does not choose the NEON loops\n");
        return 0;
    }
    printf("pass optim_neon: the same bits as the scalar loops\n");
    return 1;
}

// The direct 3×3 convolution (common/conv/conv_direct_neon.c) against the
// scalar one at every row length around the vector width, both paddings and
// a few channel counts. It fuses multiply and add, so it agrees to a few
// roundings of the terms' magnitudes (Σ |terms|, from the scalar kernel on
// the absolute values). Returns 1 when it does.
static int conv_direct_neon_agrees(void)
{
    enum { MAX = 5 * 12 * 14 };
    static float x[MAX], k[MAX], want[MAX], got[MAX], mag[MAX], ax[MAX], ak[MAX];
    const int channels[] = {1, 2, 5};
    for (int pad = 0; pad <= 1; pad++)
        for (int ci = 0; ci < 3; ci++)
            for (int h = 3 - 2 * pad; h <= 5; h++)
                for (int w = 3 - 2 * pad; w <= 14; w++) {
                    int c = channels[ci], oc = 3, oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
                    long xs = (long)c * h * w, ks = (long)oc * c * 9, ys = (long)oc * oh * ow;
                    mat_fill_random(x, 1, (int)xs, (int)xs, 1 + w);
                    mat_fill_random(k, 1, (int)ks, (int)ks, 2 + h);
                    mat_fill_random(want, 1, (int)ys, (int)ys, 3 + c);
                    for (long j = 0; j < ys; j++) {
                        got[j] = want[j];
                        mag[j] = fabsf(want[j]);
                    }
                    for (long j = 0; j < xs; j++)
                        ax[j] = fabsf(x[j]);
                    for (long j = 0; j < ks; j++)
                        ak[j] = fabsf(k[j]);
                    conv_direct_scalar(x, c, h, w, k, oc, pad, want);
                    conv_direct_neon(x, c, h, w, k, oc, pad, got);
                    conv_direct_scalar(ax, c, h, w, ak, oc, pad, mag);
                    for (long j = 0; j < ys; j++)
                        if (!(fabsf(got[j] - want[j]) <= 1e-6f * mag[j] + 1e-7f)) {
                            printf("FAIL conv_direct_neon c %d, %d×%d, pad %d: y[%ld] = %.9g, "
                                   "scalar %.9g\n", c, h, w, pad, j, got[j], want[j]);
                            return 0;
                        }
                }
    if (isa_force(ISA_NEON) != 0 || conv_direct_kernel(isa_active()) != conv_direct_neon) {
        printf("FAIL conv_direct_neon: the dispatch does not choose the NEON kernel\n");
        return 0;
    }
    printf("pass conv_direct_neon: agrees with the scalar kernel\n");
    return 1;
}

// The max-pooling row (common/conv/pool_neon.c) against the scalar one, bit
// for bit, at every width around the vector width, on values with many
// ties, negative zeros and NaNs. Returns 1 when they agree.
static int maxpool_row_neon_agrees(void)
{
    enum { MAXW = 41 };
    static float x[2 * MAXW], want[MAXW], got[MAXW];
    static int at_want[MAXW], at_got[MAXW];
    for (int w = 2; w <= MAXW; w++) {
        unsigned s = 12345u + (unsigned)w;
        for (int j = 0; j < 2 * w; j++) {
            s = s * 1664525u + 1013904223u;
            int v = (int)(s >> 28);
            x[j] = v == 15 ? NAN : v == 14 ? -0.0f : (float)(v % 4) - 1.0f;
        }
        int ow = w / 2;
        maxpool_row_scalar(x, x + w, w, ow, 1000, want, at_want);
        maxpool_row_neon(x, x + w, w, ow, 1000, got, at_got);
        for (int q = 0; q < ow; q++)
            if (memcmp(&got[q], &want[q], sizeof(float)) != 0 || at_got[q] != at_want[q]) {
                printf("FAIL maxpool_row_neon w %d: y[%d] = %g at %d, scalar %g at %d\n", w, q,
                       got[q], at_got[q], want[q], at_want[q]);
                return 0;
            }
    }
    if (isa_force(ISA_NEON) != 0 || maxpool_row_kernel(isa_active()) != maxpool_row_neon) {
        printf("FAIL maxpool_row_neon: the dispatch does not choose the NEON kernel\n");
        return 0;
    }
    printf("pass maxpool_row_neon: the same bits as the scalar loop\n");
    return 1;
}

// The fused convolution, ReLU and pooling (conv_pool_neon) against the NEON
// direct kernel from the bias, then the ReLU, then the pooling row: the same
// sums in the same order, so the same bits and the same codes, at every
// width around the vector width, both paddings, several channel counts and
// filter counts on both sides of the kernel's blocks of 16. Returns 1 when
// they agree.
static int conv_pool_neon_equals_unfused(void)
{
    enum { C = 5, OC = 32, H = 7, W = 21 };
    static float x[C * H * W], k[OC * C * 9], kt[OC * C * 9], bias[OC], conv[OC * H * W];
    static float want[OC * H * W], got[OC * H * W];
    static int where[OC * H * W];
    static unsigned char code[OC * H * W];
    const int channels[] = {1, 2, 5}, filters[] = {1, 8, 17, 32};
    for (int pad = 0; pad <= 1; pad++)
        for (int ci = 0; ci < 3; ci++)
            for (int fi = 0; fi < 4; fi++)
                for (int h = 4 - 2 * pad; h <= H; h++)
                    for (int w = 4 - 2 * pad; w <= W; w++) {
                        int c = channels[ci], oc = filters[fi];
                        int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2, ph = oh / 2, pw = ow / 2;
                        int xs = c * h * w, ks = oc * c * 9;
                        mat_fill_random(x, 1, xs, xs, 1300 + w);
                        mat_fill_random(k, 1, ks, ks, 1400 + h);
                        mat_fill_random(bias, 1, oc, oc, 1500 + c);
                        for (int o = 0; o < oc; o++)
                            for (int j = 0; j < c * 9; j++)
                                kt[j * oc + o] = k[o * c * 9 + j];
                        for (int o = 0; o < oc; o++)
                            for (int j = 0; j < oh * ow; j++)
                                conv[o * oh * ow + j] = bias[o];
                        conv_direct_neon(x, c, h, w, k, oc, pad, conv);
                        for (int j = 0; j < oc * oh * ow; j++)
                            conv[j] = conv[j] > 0.0f ? conv[j] : 0.0f;
                        for (int o = 0; o < oc; o++)
                            for (int r = 0; r < ph; r++) {
                                const float *top = conv + (o * oh + 2 * r) * ow;
                                int at = (o * ph + r) * pw;
                                maxpool_row_neon(top, top + ow, ow, pw, 0, want + at, where + at);
                            }
                        conv_pool_neon(x, c, h, w, kt, bias, oc, pad, got, code);
                        for (int o = 0; o < oc; o++)
                            for (int r = 0; r < ph; r++)
                                for (int q = 0; q < pw; q++) {
                                    int j = (o * ph + r) * pw + q;
                                    int k_want = where[j] - 2 * q;
                                    k_want = k_want >= ow ? 2 + k_want - ow : k_want;
                                    if (memcmp(&want[j], &got[j], sizeof(float)) != 0 ||
                                        code[j] != k_want) {
                                        printf("FAIL conv_pool_neon c %d oc %d %d×%d pad %d: "
                                               "y[%d] = %.9g (code %d), unfused %.9g (code %d)\n",
                                               c, oc, h, w, pad, j, got[j], code[j], want[j],
                                               k_want);
                                        return 0;
                                    }
                                }
                    }
    if (isa_force(ISA_NEON) != 0 || conv_pool_kernel(isa_active()) != conv_pool_neon) {
        printf("FAIL conv_pool_neon: the dispatch does not choose the NEON kernel\n");
        return 0;
    }
    printf("pass conv_pool_neon: the same bits as the NEON direct kernel, ReLU and pooling\n");
    return 1;
}

// The direct path's dW kernel (conv_dw_neon) against the scalar one: sums of
// up to oh·ow products in another order, so within a few roundings of the
// sum of the terms' magnitudes, at every row length around the vector
// width, both paddings, dy's planes apart (ldy > oh·ow). Returns 1 when it
// agrees.
static int conv_dw_neon_agrees(void)
{
    enum { C = 3, OC = 3, H = 6, W = 27, LDY = H * W + 5 };
    static float x[C * H * W], dy[OC * LDY], want[OC * C * 9], got[OC * C * 9],
        mag[OC * C * 9], ax[C * H * W], ady[OC * LDY];
    const int channels[] = {1, 3};
    for (int pad = 0; pad <= 1; pad++)
        for (int ci = 0; ci < 2; ci++)
            for (int h = 3 - 2 * pad; h <= H; h++)
                for (int w = 3 - 2 * pad; w <= W; w++) {
                    int c = channels[ci], oc = OC, oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
                    int xs = c * h * w, ldy = oh * ow + 5, ks = oc * c * 9;
                    mat_fill_random(x, 1, xs, xs, 1600 + w);
                    mat_fill_random(dy, 1, oc * ldy, oc * ldy, 1700 + h);
                    mat_fill_random(want, 1, ks, ks, 1800 + c);
                    for (int j = 0; j < ks; j++) {
                        got[j] = want[j];
                        mag[j] = 0.0f;
                    }
                    for (int j = 0; j < xs; j++)
                        ax[j] = fabsf(x[j]);
                    for (int j = 0; j < oc * ldy; j++)
                        ady[j] = fabsf(dy[j]);
                    conv_dw_scalar(x, c, h, w, dy, ldy, oc, pad, want);
                    conv_dw_neon(x, c, h, w, dy, ldy, oc, pad, got);
                    conv_dw_scalar(ax, c, h, w, ady, ldy, oc, pad, mag);  // Σ |terms|
                    for (int j = 0; j < ks; j++)
                        if (!(fabsf(got[j] - want[j]) <= 1e-6f * (mag[j] + 1.0f))) {
                            printf("FAIL conv_dw_neon c %d, %d×%d, pad %d: dw[%d] = %.9g, "
                                   "scalar %.9g\n", c, h, w, pad, j, got[j], want[j]);
                            return 0;
                        }
                }
    if (isa_force(ISA_NEON) != 0 || conv_dw_kernel(isa_active()) != conv_dw_neon) {
        printf("FAIL conv_dw_neon: the dispatch does not choose the NEON kernel\n");
        return 0;
    }
    printf("pass conv_dw_neon: agrees with the scalar kernel\n");
    return 1;
}

// The fused ReLU-and-pooling row (relu_pool_row_neon) against the scalar
// one, bit for bit, at every width from 1 to 40 (the buffered last windows
// among them), on values with many ties (a grid of quarters) and many below
// zero, and nothing written past the row. Returns 1 when they agree.
static int relu_pool_row_neon_agrees(void)
{
    for (int ow = 1; ow <= 40; ow++) {
        int w = 2 * ow + ow % 2;
        float x[2 * 81], want[41], got[41];
        unsigned char k_want[41], k_got[41];
        mat_fill_random(x, 1, 2 * w, 2 * w, 1900 + ow);
        for (int j = 0; j < 2 * w; j++)
            x[j] = floorf(x[j] * 4.0f) / 4.0f;
        got[ow] = -1.0f;  // past the row: never written
        k_got[ow] = 9;
        relu_pool_row_scalar(x, x + w, ow, 0.25f, want, k_want);
        relu_pool_row_neon(x, x + w, ow, 0.25f, got, k_got);
        if (got[ow] != -1.0f || k_got[ow] != 9) {
            printf("FAIL relu_pool_row_neon ow %d wrote past the row\n", ow);
            return 0;
        }
        for (int q = 0; q < ow; q++)
            if (memcmp(&got[q], &want[q], sizeof(float)) != 0 || k_got[q] != k_want[q]) {
                printf("FAIL relu_pool_row_neon ow %d: y[%d] = %g (code %d), scalar %g "
                       "(code %d)\n", ow, q, got[q], k_got[q], want[q], k_want[q]);
                return 0;
            }
    }
    if (isa_force(ISA_NEON) != 0 || relu_pool_row_kernel(isa_active()) != relu_pool_row_neon) {
        printf("FAIL relu_pool_row_neon: the dispatch does not choose the NEON kernel\n");
        return 0;
    }
    printf("pass relu_pool_row_neon: the same bits as the scalar loop\n");
    return 1;
}

// The fused ReLU and pooling of a whole plane (relu_pool_plane_neon)
// against the scalar one, bit for bit: planes of 2 to 9 rows of 2 to 19
// floats (odd last rows and columns among them), values with many ties and
// many below zero, and nothing written on either side of the outputs.
// Returns 1 when they agree.
static int relu_pool_plane_neon_agrees(void)
{
    enum { GUARD = 9 };
    for (int oh = 2; oh <= 9; oh++)
        for (int ow = 2; ow <= 19; ow++) {
            int n = (oh / 2) * (ow / 2);
            float plane[9 * 19], want[81], got[81 + 2 * GUARD];
            unsigned char k_want[81], k_got[81 + 2 * GUARD];
            mat_fill_random(plane, 1, oh * ow, oh * ow, 2000 + oh * 20 + ow);
            for (int j = 0; j < oh * ow; j++)
                plane[j] = floorf(plane[j] * 4.0f) / 4.0f;
            for (int j = 0; j < n + 2 * GUARD; j++) {
                got[j] = -1.0f;
                k_got[j] = 9;
            }
            relu_pool_plane_scalar(plane, oh, ow, 0.25f, want, k_want);
            relu_pool_plane_neon(plane, oh, ow, 0.25f, got + GUARD, k_got + GUARD);
            for (int j = 0; j < n + 2 * GUARD; j++) {
                int q = j - GUARD, outside = q < 0 || q >= n;
                if (outside ? got[j] != -1.0f || k_got[j] != 9
                            : memcmp(&got[j], &want[q], sizeof(float)) != 0 ||
                                  k_got[j] != k_want[q]) {
                    printf("FAIL relu_pool_plane_neon %d×%d: not the scalar loop's bits at %d\n",
                           oh, ow, q);
                    return 0;
                }
            }
        }
    if (isa_force(ISA_NEON) != 0 || relu_pool_plane_kernel(isa_active()) != relu_pool_plane_neon) {
        printf("FAIL relu_pool_plane_neon: the dispatch does not choose it\n");
        return 0;
    }
    printf("pass relu_pool_plane_neon: the same bits as the scalar loop\n");
    return 1;
}

// The fused op's plane backward (common/conv/pool_neon.c) against the scalar
// one, bit for bit: planes of 1 to 7 rows of 1 to 13 windows, with and
// without an odd last row and column; −0 gradients, maxima of zero, every
// code; every element of the plane written, nothing on either side of it, and
// the sum returned that of row_sum. Returns 1 when they agree.
static int relu_pool_plane_backward_neon_agrees(void)
{
    enum { MOST_H = 7, MOST_W = 13, GUARD = 8, MOST = (2 * MOST_H + 1) * (2 * MOST_W + 1) };
    static float g[MOST_H * MOST_W], y[MOST_H * MOST_W], want[MOST + 2 * GUARD],
        got[MOST + 2 * GUARD];
    static unsigned char code[MOST_H * MOST_W];
    for (int ph = 1; ph <= MOST_H; ph++)
        for (int pw = 1; pw <= MOST_W; pw++)
            for (int odd = 0; odd < 4; odd++) {
                int oh = 2 * ph + odd / 2, ow = 2 * pw + odd % 2;
                unsigned s = 777u + (unsigned)(ph * 64 + pw * 4 + odd);
                for (int q = 0; q < ph * pw; q++) {
                    s = s * 1664525u + 1013904223u;
                    g[q] = q % 5 == 1 ? -0.0f : (float)(int)(s >> 24) / 16.0f - 8.0f;
                    y[q] = q % 3 == 0 ? 0.0f : (float)(s >> 28) + 0.5f;
                    code[q] = (unsigned char)((s >> 8) % 4);
                }
                for (int j = 0; j < MOST + 2 * GUARD; j++)
                    want[j] = got[j] = -1.0f;
                float sum_want =
                    relu_pool_plane_backward_scalar(g, y, code, ph, pw, oh, ow, want + GUARD);
                float sum_got =
                    relu_pool_plane_backward_neon(g, y, code, ph, pw, oh, ow, got + GUARD);
                float sum = row_sum(want + GUARD, (long)oh * ow);
                if (memcmp(got, want, sizeof got) != 0 || want[GUARD + oh * ow] != -1.0f ||
                    memcmp(&sum_got, &sum, sizeof sum) != 0 ||
                    memcmp(&sum_want, &sum, sizeof sum) != 0) {
                    printf("FAIL relu_pool_plane_backward_neon %d×%d windows (plane %d×%d): "
                           "not the scalar loop's bits\n", ph, pw, oh, ow);
                    return 0;
                }
            }
    if (isa_force(ISA_NEON) != 0 ||
        relu_pool_plane_backward_kernel(isa_active()) != relu_pool_plane_backward_neon) {
        printf("FAIL relu_pool_plane_backward_neon: the dispatch does not choose it\n");
        return 0;
    }
    printf("pass relu_pool_plane_backward_neon: the same bits as the scalar loop\n");
    return 1;
}

// The implicit path's col2im (common/conv/conv_implicit_neon.c) against
// col2im, bit for bit, at stride 1: rows of dx of 1 to 19 floats (around
// the vector's 4), filters of 1×1 to 3×5, padding 0 to 2, −0 in col and dx;
// nothing on either side of dx written. Then the implicit data gradient on
// NEON's micro-kernel against the packed GEMM and col2im. Returns 1 when
// they agree.
static int col2im_neon_agrees(void)
{
    enum { GUARD = 8, MOST = 2 * 9 * 19, MOST_COL = 2 * 15 * 400 };
    static float col[MOST_COL], want[MOST + 2 * GUARD], got[MOST + 2 * GUARD];
    const int filters[][2] = {{1, 1}, {3, 3}, {2, 3}, {3, 5}};
    for (int w = 1; w <= 19; w++)
        for (size_t f = 0; f < sizeof filters / sizeof filters[0]; f++)
            for (int pad = 0; pad <= 2; pad++) {
                struct conv_geom g = {2, 9, w, filters[f][0], filters[f][1], 1, pad, 0, 0, NULL};
                g.oh = g.h + 2 * pad - g.kh + 1;
                g.ow = g.w + 2 * pad - g.kw + 1;
                if (g.oh < 1 || g.ow < 1)
                    continue;
                long P = (long)g.oh * g.ow, ldcol = P + 1, K = (long)g.c * g.kh * g.kw;
                long xs = (long)g.c * g.h * g.w;
                mat_fill_random(col, 1, (int)(K * ldcol), (int)(K * ldcol), 300u + (unsigned)w);
                mat_fill_random(want, 1, MOST + 2 * GUARD, MOST + 2 * GUARD, 400u + (unsigned)w);
                for (long i = 0; i < K * ldcol; i += 5)
                    col[i] = -0.0f;
                for (long i = 0; i < MOST + 2 * GUARD; i += 3)
                    want[i] = -0.0f;
                memcpy(got, want, sizeof got);
                col2im(col, ldcol, g.c, g.h, g.w, g.kh, g.kw, 1, pad, want + GUARD);
                conv_col2im_neon(&g, col, ldcol, got + GUARD);
                if (memcmp(got, want, sizeof got) != 0) {
                    printf("FAIL conv_col2im_neon 2×9×%d, filter %d×%d, pad %d: not col2im's "
                           "bits (%ld floats)\n", w, g.kh, g.kw, pad, xs);
                    return 0;
                }
            }
    // The data gradient, an image at a time, on NEON's micro-kernel.
    if (isa_force(ISA_NEON) != 0) {
        printf("FAIL conv_implicit_dx: NEON refused\n");
        return 0;
    }
    struct conv_geom g = {5, 13, 13, 3, 3, 1, 0, 11, 11, NULL};
    enum { N = 3, OC = 13, K = 45, P = 121, XS = 5 * 13 * 13 };
    static float wt[OC * K], dy[OC * N * P], dcol[K * 160], dx_want[N * XS], dx_got[N * XS];
    mat_fill_random(wt, 1, OC * K, OC * K, 501);
    mat_fill_random(dy, 1, OC * N * P, OC * N * P, 502);
    mat_fill_random(dx_want, 1, N * XS, N * XS, 503);
    memcpy(dx_got, dx_want, sizeof dx_got);
    static float dcol_run[K * N * P];
    gemm_packed(GEMM_TRANS, GEMM_NOTRANS, K, N * P, OC, 1.0f, wt, K, dy, N * P, 0.0f, dcol_run,
                N * P);
    for (int j = 0; j < N; j++)
        col2im(dcol_run + j * P, N * P, 5, 13, 13, 3, 3, 1, 0, dx_want + j * XS);
    if (conv_implicit_dx_scratch(&g) > K * 160 ||
        conv_implicit_dx(&g, wt, OC, dy, N, dcol, dx_got, XS, 1.0f) != 0 ||
        memcmp(dx_got, dx_want, sizeof dx_got) != 0) {
        printf("FAIL conv_implicit_dx on NEON: not the packed GEMM's and col2im's bits\n");
        return 0;
    }
    printf("pass conv_col2im_neon, conv_implicit_dx: the same bits as col2im\n");
    return 1;
}

// The Winograd path on AArch64 (its plain loops, the GEMMs on NEON's
// micro-kernel through the five loops): forward and backward of 3 images,
// 5 channels of 9×10 padded by 1, 11 filters, against the definition in
// double, within 1e-5 of the largest value (as the host's tests compare
// the paths). Returns 1 when they agree.
struct wino_out {
    float *y;
    long ys;
};

static void keep_image(void *ctx, int image, const float *out)
{
    struct wino_out *o = ctx;
    memcpy(o->y + image * o->ys, out, sizeof(float) * (size_t)o->ys);
}

static int near(const char *what, const float *got, const double *want, long n)
{
    double big = 0.0;
    for (long i = 0; i < n; i++)
        big = fabs(want[i]) > big ? fabs(want[i]) : big;
    for (long i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > 1e-5 * big + 1e-7) {
            printf("FAIL winograd on NEON: %s[%ld] = %.9g, want %.9g\n", what, i, got[i],
                   want[i]);
            return 0;
        }
    return 1;
}

static int winograd_neon_agrees(void)
{
    enum { M = 3, C = 5, H = 9, W = 10, OC = 11, PAD = 1, OH = 9, OW = 10, P = OH * OW };
    enum { XS = C * H * W, YS = OC * P };
    struct conv_geom g = {C, H, W, 3, 3, 1, PAD, OH, OW, NULL};
    static float x[M * XS], w[OC * C * 9], dy[M * YS], y[M * YS], dx[M * XS], dw[OC * C * 9];
    static double y_want[M * YS], dx_want[M * XS], dw_want[OC * C * 9];
    mat_fill_random(x, 1, M * XS, M * XS, 601);
    mat_fill_random(w, 1, OC * C * 9, OC * C * 9, 602);
    mat_fill_random(dy, 1, M * YS, M * YS, 603);  // image j's plane o at j·P + o·M·P
    memset(dx_want, 0, sizeof dx_want);
    memset(dw_want, 0, sizeof dw_want);
    for (int j = 0; j < M; j++)
        for (int o = 0; o < OC; o++)
            for (int r = 0; r < OH; r++)
                for (int q = 0; q < OW; q++) {
                    double s = 0.0, d = dy[j * P + o * M * P + r * OW + q];
                    for (int ch = 0; ch < C; ch++)
                        for (int u = 0; u < 3; u++)
                            for (int v = 0; v < 3; v++) {
                                int iy = r + u - PAD, ix = q + v - PAD;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                    continue;
                                long at = ((long)(j * C + ch) * H + iy) * W + ix;
                                long wt = ((long)(o * C + ch) * 3 + u) * 3 + v;
                                s += (double)w[wt] * x[at];
                                dx_want[at] += (double)w[wt] * d;
                                dw_want[wt] += (double)x[at] * d;
                            }
                    y_want[(j * OC + o) * P + r * OW + q] = s;
                }
    if (isa_force(ISA_NEON) != 0) {
        printf("FAIL winograd: NEON refused\n");
        return 0;
    }
    long scratch = conv_winograd_scratch(&g, OC), back = conv_winograd_backward_scratch(&g, OC);
    float *u = malloc(sizeof(float) * (size_t)conv_winograd_filters_floats(C, OC));
    float *s = malloc(sizeof(float) * (size_t)(scratch > back ? scratch : back));
    if (!u || !s) {
        printf("FAIL winograd: out of memory\n");
        return 0;
    }
    conv_winograd_filters(w, OC, C, 0, u);
    struct wino_out out = {y, YS};
    conv_winograd_forward(&g, x, XS, M, u, OC, ISA_NEON, s, keep_image, &out);
    conv_winograd_filters(w, OC, C, 1, u);
    memset(dw, 0, sizeof dw);
    conv_winograd_backward(&g, x, XS, M, dy, M * P, u, OC, ISA_NEON, dw, dx, 0.0f, s);
    free(u);
    free(s);
    if (!near("y", y, y_want, M * YS) || !near("dx", dx, dx_want, M * XS) ||
        !near("dw", dw, dw_want, OC * C * 9))
        return 0;
    printf("pass winograd: forward, dx and dw agree with the definition\n");
    return 1;
}

// The checks that are not GEMMs, each 1 when it passes.
static int (*const checks[])(void) = {
    maxpool_row_neon_agrees,
    conv_direct_neon_agrees,
    conv_pool_neon_equals_unfused,
    conv_dw_neon_agrees,
    relu_pool_row_neon_agrees,
    relu_pool_plane_neon_agrees,
    relu_pool_plane_backward_neon_agrees,
    col2im_neon_agrees,
    winograd_neon_agrees,
    vec_neon_same_bits,
    optim_neon_same_bits,
};

int main(void)
{
    int passed = 0, failed = 0;
    for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++)
        if (checks[c]())
            passed++;
        else
            failed++;
    for (size_t t = 0; t < sizeof kernels / sizeof kernels[0]; t++) {
        // One check per kernel counts: all its shapes pass, or it fails.
        double worst = 0.0;
        int ok = 1;
        for (int m = 1; m <= MAX_SMALL && ok; m++)
            for (int n = 1; n <= MAX_SMALL && ok; n++)
                for (int k = 1; k <= MAX_SMALL && ok; k++) {
                    double r = check(kernels[t].name, kernels[t].fn, m, n, k);
                    ok = r <= 1.0;
                    worst = ok && r > worst ? r : worst;
                }
        for (size_t s = 0; s < sizeof larger / sizeof larger[0] && ok; s++) {
            double r = check(kernels[t].name, kernels[t].fn, larger[s][0], larger[s][1],
                             larger[s][2]);
            ok = r <= 1.0;
            worst = ok && r > worst ? r : worst;
        }
        if (ok) {
            printf("pass %s: worst error %.3g of the bound\n", kernels[t].name, worst);
            passed++;
        } else {
            failed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
