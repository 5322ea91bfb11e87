// The Winograd path (conv_winograd.h): F(4×4, 3×3), forward and backward:
// the filters' transform, the three steps of each pass, and the choice of
// the loops that run them (conv_winograd_parts.h: plain ones in
// conv_winograd_scalar.c, AVX2 ones in conv_winograd_avx2.c).
//
// Layout. The transforms work on channels side by side: each image is
// copied into a padded block of pixels (h×w×c, a pixel's channels next to
// each other), so that one step of a transform takes eight channels of the
// same pixel, a vector. V_ξ is tiles × cp, row-major: the GEMM reads it as
// A where it lies. U_ξ is cp × ocp, its B, read in place. M_ξ comes out
// tiles × ocp, and the output transform writes an image as pixels of ocp
// floats, which one transpose makes the oc planes of NCHW. The channel
// counts are rounded up to whole vectors (cp, ocp) with zero channels and
// zero filters, which add nothing.
//
// Chunks. A chunk of whole images, about TILES tiles, goes through the
// three steps together: its V and M (36 · tiles · (cp + ocp) floats, 500 KB
// for the book's second convolution) stay in or near L2 between the
// transforms and the GEMMs, and each GEMM has tiles rows, enough to keep
// the micro-kernel busy.
#include "conv_winograd.h"

#include <string.h>

#include "conv_winograd_parts.h"
#include "gemm.h"

enum { TILES = 36 };

static int round_up(int v, int to)
{
    return (v + to - 1) / to * to;
}

int conv_winograd_takes(int kh, int kw, int stride)
{
    return kh == 3 && kw == 3 && stride == 1;
}

// ---------------------------------------------------------------------------
// The filters.

long conv_winograd_filters_floats(int c, int oc)
{
    return 36L * round_up(c, WINO_LANES) * round_up(oc, WINO_LANES);
}

// listing: winograd_filter
// U = G g Gᵀ for one 3×3 filter g: 36 floats, u[a·6 + b]. G's rows
// interpolate g at the points 0, 1, −1, 2, −2 and ∞ of Lavin and Gray's
// F(4×4, 3×3); made in double and rounded once.
static const double G[6][3] = {
    {1.0 / 4, 0, 0},
    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6},
    {1.0 / 24, -1.0 / 12, 1.0 / 6},
    {0, 0, 1},
};

static void filter_transform(const float *g, float *u)
{
    double gg[6][3];  // G g
    for (int a = 0; a < 6; a++)
        for (int j = 0; j < 3; j++)
            gg[a][j] = G[a][0] * g[j] + G[a][1] * g[3 + j] + G[a][2] * g[6 + j];
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++)
            u[a * 6 + b] = (float)(gg[a][0] * G[b][0] + gg[a][1] * G[b][1] + gg[a][2] * G[b][2]);
}
// end listing

// One row of the layout at a time (a channel's filters, or a filter's
// channels), so that each of its 36 rows is written whole and in order:
// 36 stores a filter straight into U, 8 KB apart for the book's conv2,
// would all fall in one set of L1's and throw each other out. Zeros only
// where c or oc was rounded up.
enum { MOST_ROW = 64 };

void conv_winograd_filters(const float *w, int oc, int c, int turned, float *u)
{
    int cp = round_up(c, WINO_LANES), ocp = round_up(oc, WINO_LANES);
    if (cp != c || ocp != oc)
        memset(u, 0, sizeof(float) * (size_t)conv_winograd_filters_floats(c, oc));
    int outer = turned ? oc : c, inner = turned ? c : oc;
    long rows = turned ? ocp : cp, row = turned ? cp : ocp;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < outer; i++)
        for (int j0 = 0; j0 < inner; j0 += MOST_ROW) {
            float t[MOST_ROW][36];
            int n = inner - j0 < MOST_ROW ? inner - j0 : MOST_ROW;
            for (int j = 0; j < n; j++) {
                int o = turned ? i : j0 + j, ch = turned ? j0 + j : i;
                filter_transform(w + ((long)o * c + ch) * 9, t[j]);
            }
            for (int xi = 0; xi < 36; xi++) {
                float *to = u + ((long)xi * rows + i) * row + j0;
                for (int j = 0; j < n; j++)
                    to[j] = t[j][xi];
            }
        }
}

static const struct wino_kernels scalar = {
    wino_input_scalar,     wino_output_scalar,    wino_output_backward_scalar,
    wino_input_backward_scalar, wino_filter_backward_scalar, wino_to_pixels_scalar,
    wino_to_planes_scalar,
};

#if defined(__x86_64__)
static const struct wino_kernels avx2 = {
    wino_input_avx2,     wino_output_avx2,    wino_output_backward_avx2,
    wino_input_backward_avx2, wino_filter_backward_avx2, wino_to_pixels_avx2,
    wino_to_planes_avx2,
};
#endif

const struct wino_kernels *wino_kernels(enum isa isa)
{
    isa_count_use(isa);
#if defined(__x86_64__)
    if (isa == ISA_AVX2 || isa == ISA_AVX512)
        return &avx2;
#endif
    (void)isa;
    return &scalar;
}

// The vector loops take channels in blocks of 8; the plain loop the rest.
static void to_pixels(const struct wino_kernels *k, int c, int h, int w, const float *planes,
                      long cs, float *px, int wp, int cp, int off)
{
    int done = k->to_pixels(0, c, h, w, planes, cs, px, wp, cp, off);
    wino_to_pixels_scalar(done, c, h, w, planes, cs, px, wp, cp, off);
}

static void to_planes(const struct wino_kernels *k, int c, int h, int w, const float *px, int wp,
                      int cp, int off, float *planes, long cs, int add)
{
    int done = k->to_planes(0, c, h, w, px, wp, cp, off, planes, cs, add);
    wino_to_planes_scalar(done, c, h, w, px, wp, cp, off, planes, cs, add);
}

// ---------------------------------------------------------------------------
// The three steps.

// The sizes of one call, from the geometry.
struct wino {
    int cp, ocp;    // c and oc rounded up to WINO_LANES
    int ty, tx;     // tiles down and across an image
    int hp, wp;     // the padded image: every tile's 6×6 patch inside it
    int chunk;      // images per chunk
    long padded;    // hp·wp·cp, the padded image's floats
    long out;       // 4ty·4tx·ocp, the tiled output's floats
    long most;      // the most tiles in a chunk
};

static struct wino wino_of(const struct conv_geom *g, int oc)
{
    struct wino s;
    s.cp = round_up(g->c, WINO_LANES);
    s.ocp = round_up(oc, WINO_LANES);
    s.ty = (g->oh + 3) / 4;
    s.tx = (g->ow + 3) / 4;
    s.hp = 4 * s.ty + 2;
    s.wp = 4 * s.tx + 2;
    int per_image = s.ty * s.tx;
    s.chunk = (TILES + per_image / 2) / per_image;
    s.chunk = s.chunk < 1 ? 1 : s.chunk;
    s.padded = (long)s.hp * s.wp * s.cp;
    s.out = 16L * per_image * s.ocp;
    s.most = (long)s.chunk * per_image;
    return s;
}

long conv_winograd_scratch(const struct conv_geom *g, int oc)
{
    struct wino s = wino_of(g, oc);
    return s.padded + 36 * s.most * (s.cp + s.ocp) + s.out + (long)oc * g->oh * g->ow;
}

long conv_winograd_backward_scratch(const struct conv_geom *g, int oc)
{
    struct wino s = wino_of(g, oc);
    return 2 * s.padded + 36 * s.most * (s.cp + s.ocp) + s.out + 36L * s.ocp * s.cp;
}

// C (m×n) = op(A) (m×k) · B (k×n) + beta·C on the calling thread: the small
// path where the ISA has a micro-kernel that reads A where it lies (V_ξ and
// M_ξ are already rows of floats side by side: packing them would copy them
// once more), else the five loops.
static void product(const struct gemm_context *ctx, enum gemm_trans ta, int m, int n, int k,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (ctx->kernel.run_direct)
        gemm_small_threads(ctx, 1, ta, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, beta, C, ldc);
    else
        gemm_packed_ctx(ctx, ta, GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

// The context g names, or the default one (*def holds it).
static const struct gemm_context *context_of(const struct conv_geom *g, struct gemm_context *def)
{
    if (g->gemm)
        return g->gemm;
    *def = gemm_context_default();
    return def;
}

// The next chunk's inputs, which the transforms will read from L3 or
// memory, line by line, each line a wait: while this chunk's GEMMs run,
// each of the 36 asks for a 36th of them (__builtin_prefetch), so that they
// arrive in the meantime. The prefetches are written out in the loops that
// run the GEMMs: gcc 12 takes a function that only prefetches for one with
// no effect, and deletes its calls.
struct ahead {
    const float *p;       // rows of len floats, ld apart; NULL: nothing ahead
    long rows, len, ld;
};

static long ahead_lines(const struct ahead *a)
{
    return a->p ? a->rows * ((a->len + 15) / 16) : 0;
}

// Where line i of the region starts (16 floats, 64 bytes, a line).
static const float *ahead_line(const struct ahead *a, long i)
{
    long per_row = (a->len + 15) / 16;
    return a->p + i / per_row * a->ld + i % per_row * 16;
}

// The next chunk's images: images of xs floats from x on, none when
// first + images reaches m.
static struct ahead next_images(const float *x, long xs, int first, int images, int m,
                                int chunk)
{
    int after = first + images, count = m - after < chunk ? m - after : chunk;
    struct ahead a = {count > 0 ? x + after * xs : NULL, 1, count * xs, 0};
    return a;
}

// V of the chunk's images: V_ξ at v + ξ·tiles·cp, tile t's row at t·cp.
static void transform_inputs(const struct wino_kernels *k, const struct conv_geom *g,
                             const struct wino *s, const float *x, long xs, int images,
                             float *xp, float *v)
{
    long tiles = (long)images * s->ty * s->tx, row = (long)s->wp * s->cp;
    for (int j = 0; j < images; j++) {
        to_pixels(k, g->c, g->h, g->w, x + j * xs, (long)g->h * g->w, xp, s->wp, s->cp, g->pad);
        for (int ty = 0; ty < s->ty; ty++)
            for (int tx = 0; tx < s->tx; tx++) {
                long t = ((long)j * s->ty + ty) * s->tx + tx;
                k->input(xp + 4 * ty * row + 4 * tx * s->cp, row, s->cp, v + t * s->cp,
                         tiles * s->cp);
            }
    }
}

// listing: winograd_forward
void conv_winograd_forward(const struct conv_geom *g, const float *x, long xs, int m,
                           const float *u, int oc, enum isa isa, float *scratch,
                           conv_image_fn *done, void *ctx)
{
    struct gemm_context def;
    const struct gemm_context *gemm = context_of(g, &def);
    const struct wino_kernels *k = wino_kernels(isa);
    struct wino s = wino_of(g, oc);
    float *xp = scratch, *v = xp + s.padded, *mm = v + 36 * s.most * s.cp,
          *y = mm + 36 * s.most * s.ocp, *planes = y + s.out;
    long P = (long)g->oh * g->ow, row = 4L * s.tx * s.ocp;
    // The padding and the channels past c stay zero: each image writes
    // only its own pixels.
    memset(xp, 0, sizeof(float) * (size_t)s.padded);
    for (int first = 0; first < m; first += s.chunk) {
        int images = m - first < s.chunk ? m - first : s.chunk;
        int tiles = images * s.ty * s.tx;
        transform_inputs(k, g, &s, x + first * xs, xs, images, xp, v);
        // M_ξ (tiles × ocp) = V_ξ (tiles × cp) · U_ξ (cp × ocp), 36 times,
        // while the next chunk's images come in.
        struct ahead next = next_images(x, xs, first, images, m, s.chunk);
        long lines = ahead_lines(&next);
        for (int xi = 0; xi < 36; xi++) {
            for (long i = xi * lines / 36; i < (xi + 1) * lines / 36; i++)
                __builtin_prefetch(ahead_line(&next, i), 0, 2);
            product(gemm, GEMM_NOTRANS, tiles, s.ocp, s.cp, v + (long)xi * tiles * s.cp, s.cp,
                    u + (long)xi * s.cp * s.ocp, s.ocp, 0.0f, mm + (long)xi * tiles * s.ocp, s.ocp);
        }
        // Each image's tiles, 4ty × 4tx pixels, then its oc planes of
        // oh × ow, cut from them.
        for (int j = 0; j < images; j++) {
            for (int ty = 0; ty < s.ty; ty++)
                for (int tx = 0; tx < s.tx; tx++) {
                    long t = ((long)j * s.ty + ty) * s.tx + tx;
                    k->output(mm + t * s.ocp, (long)tiles * s.ocp, s.ocp,
                              y + 4 * ty * row + 4 * tx * s.ocp, row);
                }
            to_planes(k, oc, g->oh, g->ow, y, 4 * s.tx, s.ocp, 0, planes, P, 0);
            done(ctx, first + j, planes);
        }
    }
}
// end listing

// listing: winograd_backward
void conv_winograd_backward(const struct conv_geom *g, const float *x, long xs, int m,
                            const float *dy, long ld, const float *u, int oc, enum isa isa,
                            float *dw, float *dx, float beta, float *scratch)
{
    struct gemm_context def;
    const struct gemm_context *gemm = context_of(g, &def);
    const struct wino_kernels *k = wino_kernels(isa);
    struct wino s = wino_of(g, oc);
    float *xp = scratch, *v = xp + s.padded, *dm = v + 36 * s.most * s.cp,
          *dyp = dm + 36 * s.most * s.ocp, *du = dyp + s.out, *dxp = du + 36L * s.ocp * s.cp;
    long P = (long)g->oh * g->ow, plane = (long)g->h * g->w;
    long row = 4L * s.tx * s.ocp, xrow = (long)s.wp * s.cp;
    memset(xp, 0, sizeof(float) * (size_t)s.padded);
    // dY's tiles past the output's edge stay zero: those outputs were
    // never made.
    memset(dyp, 0, sizeof(float) * (size_t)s.out);
    for (int first = 0; first < m; first += s.chunk) {
        int images = m - first < s.chunk ? m - first : s.chunk;
        int tiles = images * s.ty * s.tx;
        // dM = A dY Aᵀ of every tile.
        for (int j = 0; j < images; j++) {
            to_pixels(k, oc, g->oh, g->ow, dy + (first + j) * P, ld, dyp, 4 * s.tx, s.ocp, 0);
            for (int ty = 0; ty < s.ty; ty++)
                for (int tx = 0; tx < s.tx; tx++) {
                    long t = ((long)j * s.ty + ty) * s.tx + tx;
                    k->output_backward(dyp + 4 * ty * row + 4 * tx * s.ocp, row, s.ocp,
                                       dm + t * s.ocp, (long)tiles * s.ocp);
                }
        }
        // dU_ξᵀ (ocp × cp) += dM_ξᵀ (ocp × tiles) · V_ξ (tiles × cp): the
        // forward's V made again, then summed over this chunk's tiles.
        // Meanwhile the next chunk's images come in, and then its dY (the
        // oc rows of DY, each the images side by side).
        struct ahead next_x = next_images(x, xs, first, images, m, s.chunk);
        struct ahead next_dy = next_images(dy, P, first, images, m, s.chunk);
        next_dy.rows = oc;
        next_dy.ld = ld;
        long x_lines = dw ? ahead_lines(&next_x) : 0, dy_lines = ahead_lines(&next_dy);
        if (dw) {
            transform_inputs(k, g, &s, x + first * xs, xs, images, xp, v);
            for (int xi = 0; xi < 36; xi++) {
                for (long i = xi * x_lines / 36; i < (xi + 1) * x_lines / 36; i++)
                    __builtin_prefetch(ahead_line(&next_x, i), 0, 2);
                product(gemm, GEMM_TRANS, s.ocp, s.cp, tiles, dm + (long)xi * tiles * s.ocp, s.ocp,
                        v + (long)xi * tiles * s.cp, s.cp, first == 0 ? 0.0f : 1.0f,
                        du + (long)xi * s.ocp * s.cp, s.cp);
            }
        }
        if (!dx)
            continue;
        // dV_ξ (tiles × cp) = dM_ξ (tiles × ocp) · U_ξᵀ (ocp × cp), into
        // V's place; then each image's patches, B dV Bᵀ, added up in its
        // padded pixels, and its planes cut from them.
        for (int xi = 0; xi < 36; xi++) {
            for (long i = xi * dy_lines / 36; i < (xi + 1) * dy_lines / 36; i++)
                __builtin_prefetch(ahead_line(&next_dy, i), 0, 2);
            product(gemm, GEMM_NOTRANS, tiles, s.cp, s.ocp, dm + (long)xi * tiles * s.ocp, s.ocp,
                    u + (long)xi * s.ocp * s.cp, s.cp, 0.0f, v + (long)xi * tiles * s.cp, s.cp);
        }
        for (int j = 0; j < images; j++) {
            memset(dxp, 0, sizeof(float) * (size_t)s.padded);
            for (int ty = 0; ty < s.ty; ty++)
                for (int tx = 0; tx < s.tx; tx++) {
                    long t = ((long)j * s.ty + ty) * s.tx + tx;
                    k->input_backward(v + t * s.cp, (long)tiles * s.cp, s.cp,
                                      dxp + 4 * ty * xrow + 4 * tx * s.cp, xrow);
                }
            to_planes(k, g->c, g->h, g->w, dxp, s.wp, s.cp, g->pad, dx + (first + j) * xs, plane,
                      beta != 0.0f);
        }
    }
    // dw += Gᵀ dU G for every filter.
    if (dw && m > 0)
        for (int o = 0; o < oc; o++)
            k->filter_backward(du + (long)o * s.cp, (long)s.ocp * s.cp, g->c,
                               dw + (long)o * g->c * 9);
}
// end listing
