// The implicit GEMM (conv_implicit.h): the packed GEMM's loops, with the
// micro-panels of B packed from the images themselves.
//
// Why. For the book's second convolution a run of 16 images has a col
// matrix of 288 × 1936 floats, 2.2 MB: four times this machine's L2. im2col
// writes it out to L3, the GEMM's packing reads it back and writes it again
// in micro-panels, and the micro-kernel reads those: the same 2.2 MB three
// times through L3, for data that sits in the images' 21.6 KB each. Here
// each micro-panel (kc × nr floats, 18 KB) is gathered from the images
// just before the micro-kernel uses it, while it is in L1.
#include "conv_implicit.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "conv.h"
#include "cpu.h"
#include "gemm_parts.h"

// The widest micro-panel of any ISA's kernel (AVX-512's nr).
enum { MAX_NR = GEMM_AVX512_NR };

static long min_long(long a, long b)
{
    return a < b ? a : b;
}

// Column j of the run is output (r, q) of image i = j / P: where its
// top-left input lies (it may be in the padding), as an offset from the
// run's first float and as a row and column of the image. The packing walks
// the columns in order, one step at a time: no division per element.
struct column {
    long at;
    int r, q, iy, ix;
};

static struct column column_of(const struct conv_geom *g, long xs, long j)
{
    long P = (long)g->oh * g->ow, p = j % P;
    struct column c = {(j / P) * xs, (int)(p / g->ow), (int)(p % g->ow), 0, 0};
    c.iy = c.r * g->stride - g->pad;
    c.ix = c.q * g->stride - g->pad;
    c.at += (long)c.iy * g->w + c.ix;
    return c;
}

static void next_column(const struct conv_geom *g, long xs, struct column *c)
{
    if (++c->q < g->ow) {
        c->ix += g->stride;
        c->at += g->stride;
        return;
    }
    c->at -= c->ix;  // back to the row's start, then down a row or to the next image
    c->q = 0;
    c->ix = -g->pad;
    if (++c->r < g->oh) {
        c->iy += g->stride;
        c->at += (long)g->stride * g->w;
    } else {
        c->at += xs - (long)c->iy * g->w;
        c->r = 0;
        c->iy = -g->pad;
        c->at += (long)c->iy * g->w;
    }
    c->at += c->ix;
}

// Row k of COL is channel ch through tap (u, v): its offset from a column's
// top-left input. Walked in order too.
struct tap {
    long off;
    int ch, u, v;
};

static struct tap tap_of(const struct conv_geom *g, long k)
{
    int taps = g->kh * g->kw, t = (int)(k % taps);
    struct tap tp = {0, (int)(k / taps), t / g->kw, t % g->kw};
    tp.off = ((long)tp.ch * g->h + tp.u) * g->w + tp.v;
    return tp;
}

static inline void next_tap(const struct conv_geom *g, struct tap *t)
{
    if (++t->v < g->kw) {
        t->off++;
        return;
    }
    t->v = 0;
    if (++t->u == g->kh) {
        t->u = 0;
        t->ch++;
    }
    t->off = ((long)t->ch * g->h + t->u) * g->w;
}

// COL[k][j], or 0 where it falls in the padding.
static float col_at(const struct conv_geom *g, const float *x, const struct column *c,
                    const struct tap *t)
{
    if ((unsigned)(c->iy + t->u) >= (unsigned)g->h || (unsigned)(c->ix + t->v) >= (unsigned)g->w)
        return 0.0f;
    return x[c->at + t->off];
}

// The gather for full micro-panels where the CPU has AVX2: 16 columns at a
// time, AVX2's kernel width; an AVX-512 CPU's panels of 32 in two halves.
static void gather(enum isa isa, const float *x, const long *rows, int kc, const int *cols, int nj,
                   int nr, float *b)
{
#if defined(__x86_64__)
    if (nj == nr && nr % 16 == 0 && (isa == ISA_AVX2 || isa == ISA_AVX512)) {
        for (int h = 0; h < nr; h += 16)
            conv_gather16_avx2(x, rows, kc, cols + h, nr, b + h);
        return;
    }
#else
    (void)isa;
#endif
    conv_gather_scalar(x, rows, kc, cols, nj, nr, b);
}

// The transpose in 8×8 blocks of registers where the CPU has AVX2 (every
// AVX-512 CPU does) and the panel is whole blocks wide.
static void transpose(enum isa isa, const float *x, long span, long at, int len, const int *cols,
                      int nj, int nr, float *b)
{
#if defined(__x86_64__)
    if (nr % 8 == 0 && (isa == ISA_AVX2 || isa == ISA_AVX512)) {
        conv_transpose_avx2(x, span, at, len, cols, nj, nr, b);
        return;
    }
#else
    (void)isa;
    (void)span;
#endif
    conv_transpose_scalar(x, at, len, cols, nj, nr, b);
}

// Rows are packed CHUNK at a time, their offsets in a small array.
enum { CHUNK = 256 };

// listing: pack_cols
// One micro-panel of B for the forward: rows k0 … k0+kc−1 of COL, columns
// j0 … j0+nj−1 (nj ≤ nr), stored b[p·nr + j] as pack_b_panel stores them;
// missing columns are 0. Without padding every tap of every output lies
// inside its image: element (p, j) is at the column's offset plus the
// tap's, a gather with no test.
static void pack_cols(const struct conv_geom *g, const float *x, long xs, long span, long k0,
                      int kc, long j0, int nj, int nr, float *b)
{
    (void)span;  // the gather reads only the floats it takes
    struct column c = column_of(g, xs, j0);
    long first = c.at;
    // With padding, or a panel too far across the images for an int offset,
    // element by element.
    if (g->pad != 0 || column_of(g, xs, j0 + nj - 1).at - first > INT_MAX) {
        struct column cols[MAX_NR];
        for (int j = 0; j < nj; j++, next_column(g, xs, &c))
            cols[j] = c;
        struct tap t = tap_of(g, k0);
        for (int p = 0; p < kc; p++, b += nr, next_tap(g, &t)) {
            for (int j = 0; j < nj; j++)
                b[j] = col_at(g, x, &cols[j], &t);
            for (int j = nj; j < nr; j++)
                b[j] = 0.0f;
        }
        return;
    }
    int at[MAX_NR];  // from the first column's: a panel spans a few images
    for (int j = 0; j < nj; j++, next_column(g, xs, &c))
        at[j] = (int)(c.at - first);
    long hw = (long)g->h * g->w, rows[CHUNK];
    int taps = g->kh * g->kw;
    for (int p0 = 0; p0 < kc; p0 += CHUNK) {
        int count = kc - p0 < CHUNK ? kc - p0 : CHUNK;
        // One channel's worth of taps a step at a time; from there on, each
        // row is one of those taps in a later channel, hw floats on for each.
        int walk = count < taps ? count : taps;
        struct tap t = tap_of(g, k0 + p0);
        for (int p = 0; p < walk; p++, next_tap(g, &t))
            rows[p] = first + t.off;
        for (int p = walk; p < count; p += taps) {
            long on = p / taps * hw;
            for (int q = 0; q < taps && p + q < count; q++)
                rows[p + q] = rows[q] + on;
        }
        gather(g->gemm->kernel.isa, x, rows, count, at, nj, nr, b + (long)p0 * nr);
    }
}
// end listing

// listing: pack_taps
// One micro-panel of B for dW, a block of COLᵀ: rows i0 … i0+kc−1 of COLᵀ
// (columns of COL, output positions), columns k0 … k0+nk−1 (nk ≤ nr; taps),
// b[p·nr + j] = COL[k0 + j][i0 + p].
static void pack_taps(const struct conv_geom *g, const float *x, long xs, long span, long i0,
                      int kc, long k0, int nk, int nr, float *b)
{
    struct tap taps[MAX_NR];
    taps[0] = tap_of(g, k0);
    for (int j = 1; j < nk; j++) {
        taps[j] = taps[j - 1];
        next_tap(g, &taps[j]);
    }
    struct column c = column_of(g, xs, i0);
    if (g->pad != 0 || taps[nk - 1].off - taps[0].off > INT_MAX) {
        for (int p = 0; p < kc; p++, b += nr, next_column(g, xs, &c)) {
            for (int j = 0; j < nk; j++)
                b[j] = col_at(g, x, &c, &taps[j]);
            for (int j = nk; j < nr; j++)
                b[j] = 0.0f;
        }
        return;
    }
    int off[MAX_NR];  // from the first tap's: a panel spans a channel or two
    for (int j = 0; j < nk; j++)
        off[j] = (int)(taps[j].off - taps[0].off);
    if (g->stride == 1) {
        // The panel's rows, output positions, go along output rows: the
        // outputs of one row are consecutive inputs, and each tap's values
        // over them a run of x. So the panel is made a stretch of one output
        // row at a time (11 outputs here), each stretch a transpose.
        for (int p = 0; p < kc;) {
            int len = (int)min_long(g->ow - c.q, kc - p);
            transpose(g->gemm->kernel.isa, x, span, c.at + taps[0].off, len, off, nk, nr,
                      b + (long)p * nr);
            p += len;
            c.q += len - 1;  // to the stretch's last output, then a step on
            c.ix += len - 1;
            c.at += len - 1;
            next_column(g, xs, &c);
        }
        return;
    }
    long rows[CHUNK];
    for (int p0 = 0; p0 < kc; p0 += CHUNK) {
        int count = kc - p0 < CHUNK ? kc - p0 : CHUNK;
        for (int p = 0; p < count; p++, next_column(g, xs, &c))
            rows[p] = c.at + taps[0].off;
        gather(g->gemm->kernel.isa, x, rows, count, off, nk, nr, b + (long)p0 * nr);
    }
}
// end listing

// A's rows × kc block in slivers of mr, as pack_a_panel(GEMM_NOTRANS, …)
// packs it. For dW, A is DY, 64 × 1,936 floats per run: pack_a_panel moves
// a sliver's last two of six rows a float at a time, and on AVX2 the whole
// slivers go through 8×8 transposes instead.
static void pack_a(enum isa isa, int rows, int kc, const float *A, long lda, int mr, float *a)
{
    int i0 = 0;
#if defined(__x86_64__)
    if (mr == 6 && isa == ISA_AVX2)
        for (; i0 + 6 <= rows; i0 += 6)
            conv_pack_sliver6_avx2(kc, A + i0 * lda, lda, a + (long)i0 * kc);
#else
    (void)isa;
#endif
    if (i0 < rows)
        pack_a_panel(GEMM_NOTRANS, rows - i0, kc, A + i0 * lda, (int)lda, mr, a + (long)i0 * kc);
}

// Packs rows k0 … k0+kc−1, columns j0 … j0+nj−1 of op(B) as one
// micro-panel: pack_cols (op(B) = COL) or pack_taps (COLᵀ).
typedef void pack_fn(const struct conv_geom *g, const float *x, long xs, long span, long k0,
                     int kc, long j0, int nj, int nr, float *b);

// listing: implicit_gemm
// C (rows × n) = A (rows × k, its rows lda apart) · op(B) (k × n) + beta·C,
// with op(B)'s micro-panels packed from the run's m images by pack: the
// packed GEMM's loops (chapter 4) with all of A's rows (a few dozen
// filters) in one packed block, and one micro-panel of B at a time, packed
// just before the micro-kernel uses it, while it is in L1.
static int implicit_gemm(const struct conv_geom *g, const float *x, long xs, int m, pack_fn *pack,
                         int rows, long k, long n, const float *A, long lda, float beta, float *C,
                         long ldc, conv_done_fn *done, void *ctx)
{
    const struct gemm_kernel *kernel = &g->gemm->kernel;
    struct gemm_blocking bl = kernel->blocking;
    isa_count_use(kernel->isa);
    int kc = (int)min_long(bl.kc, k), mr = bl.mr, nr = bl.nr;
    float *a = gemm_buffer(GEMM_BUFFER_A, (long)(rows + mr - 1) / mr * mr * kc);
    float *b = gemm_buffer(GEMM_BUFFER_B, (long)nr * kc);
    if (!a || !b || nr > MAX_NR)
        return -1;
    for (long pc = 0; pc < k; pc += kc) {
        int k_now = (int)min_long(kc, k - pc);
        float beta_now = pc == 0 ? beta : 1.0f;  // later passes over k add
        pack_a(kernel->isa, rows, k_now, A + pc, lda, mr, a);
        for (long jr = 0; jr < n; jr += nr) {
            int n_now = (int)min_long(nr, n - jr);
            pack(g, x, xs, m * xs, pc, k_now, jr, n_now, nr, b);
            for (int ir = 0; ir < rows; ir += mr) {
                int m_now = (int)min_long(mr, rows - ir);
                kernel->run(m_now, n_now, k_now, a + (long)ir * k_now, b, C + ir * ldc + jr,
                            (int)ldc, 1.0f, beta_now);
            }
            if (done && pc + k_now == k)
                done(ctx, jr + n_now);
        }
    }
    return 0;
}
// end listing

// g as it is, or with the default GEMM context when it names none (*def
// holds it).
static struct conv_geom in_context(const struct conv_geom *g, struct gemm_context *def)
{
    struct conv_geom c = *g;
    if (!c.gemm) {
        *def = gemm_context_default();
        c.gemm = def;
    }
    return c;
}

int conv_implicit_forward(const struct conv_geom *geom, const float *x, long xs, int m,
                          const float *w, int oc, float *out, conv_done_fn *done, void *ctx)
{
    struct gemm_context def;
    struct conv_geom gc = in_context(geom, &def);
    const struct conv_geom *g = &gc;
    long K = (long)g->c * g->kh * g->kw, n = (long)m * g->oh * g->ow;
    return implicit_gemm(g, x, xs, m, pack_cols, oc, K, n, w, K, 0.0f, out, n, done, ctx);
}

int conv_implicit_dw(const struct conv_geom *geom, const float *x, long xs, int m, const float *dy,
                     int oc, float *dw)
{
    struct gemm_context def;
    struct conv_geom gc = in_context(geom, &def);
    const struct conv_geom *g = &gc;
    // The GEMM's k runs over the run's output positions.
    long K = (long)g->c * g->kh * g->kw, n = (long)m * g->oh * g->ow;
    return implicit_gemm(g, x, xs, m, pack_taps, oc, n, K, dy, n, 1.0f, dw, K, NULL, NULL);
}

// col2im into dx for one image: the gather above at stride 1 (with vectors
// where the CPU has them), col2im itself at any other.
static void col2im_image(const struct conv_geom *g, const float *col, long ldcol, float *dx)
{
    if (g->stride != 1) {
        col2im(col, ldcol, g->c, g->h, g->w, g->kh, g->kw, g->stride, g->pad, dx);
        return;
    }
    enum isa isa = g->gemm->kernel.isa;
#if defined(__x86_64__)
    if (isa == ISA_AVX512) {
        conv_col2im_avx512(g, col, ldcol, dx);
        return;
    }
    if (isa == ISA_AVX2) {
        conv_col2im_avx2(g, col, ldcol, dx);
        return;
    }
#endif
#if defined(__aarch64__)
    if (isa == ISA_NEON) {
        conv_col2im_neon(g, col, ldcol, dx);
        return;
    }
#endif
    (void)isa;
    conv_col2im_scalar(g, col, ldcol, dx);
}

// listing: implicit_dx
// The data gradient, a few panels at a time: DCOL = wᵀ · DY, the packed
// GEMM's loops again, with col2im of each image's block DCOL_i (K×P) into
// dx_i as soon as its columns are made, while its 139 KB (the book's conv2)
// are still in L2. One GEMM over the run would write 16 times that, 2.2 MB,
// out to L3 for col2im to read back. wᵀ (K × oc, 72 KB here) is packed
// once for the run, not once per image.
//
// The micro-panels run across the whole run (16 columns each on AVX2):
// 1,936 columns are 121 whole panels, where one image's 121 would be 7
// panels and a last one of 9, whose other 7 columns the micro-kernel
// computes anyway. dcol holds the run's columns from base on, base the
// start of the panel that the next image begins in: when an image is done,
// that last panel (which holds the next image's first columns) moves to
// dcol's front. So dcol's rows need room for an image that begins nr − 1
// columns into a panel, rounded up to whole panels of any ISA's kernel:
// 160 floats for P = 121, a whole number of cache lines.
static long dcol_row(const struct conv_geom *g)
{
    long P = (long)g->oh * g->ow;
    return (P + 2 * MAX_NR - 2) / MAX_NR * MAX_NR;
}

long conv_implicit_dx_scratch(const struct conv_geom *g)
{
    return (long)g->c * g->kh * g->kw * dcol_row(g);
}

// One micro-panel of DY: b[p·nr + j] = dy[p·ld + j] for j < n, 0 for
// n ≤ j < nr, as pack_b_panel packs it. A full panel of AVX2's 16 columns or
// AVX-512's 32 is copied with a constant size, a few moves, where
// pack_b_panel calls memcpy for every row.
static void pack_dy(int k, int n, const float *dy, long ld, int nr, float *b)
{
    if (n == 16 && nr == 16) {
        for (int p = 0; p < k; p++)
            memcpy(b + (long)p * 16, dy + p * ld, 16 * sizeof(float));
    } else if (n == 32 && nr == 32) {
        for (int p = 0; p < k; p++)
            memcpy(b + (long)p * 32, dy + p * ld, 32 * sizeof(float));
    } else {
        pack_b_panel(GEMM_NOTRANS, k, n, dy, (int)ld, nr, b);
    }
}

// Columns from … from+nr−1 of dcol's K rows to columns 0 … nr−1 (from ≥ nr);
// AVX2's 16 and AVX-512's 32 with a constant size, as in pack_dy.
static void move_panel(long K, int nr, long from, float *dcol, long ldc)
{
    for (long r = 0; r < K; r++) {
        float *row = dcol + r * ldc;
        if (nr == 16)
            memcpy(row, row + from, 16 * sizeof(float));
        else if (nr == 32)
            memcpy(row, row + from, 32 * sizeof(float));
        else
            memcpy(row, row + from, sizeof(float) * (size_t)nr);
    }
}

int conv_implicit_dx(const struct conv_geom *geom, const float *w, int oc, const float *dy, int m,
                     float *dcol, float *dx, long xs, float beta)
{
    struct gemm_context def;
    struct conv_geom gc = in_context(geom, &def);
    const struct conv_geom *g = &gc;
    const struct gemm_kernel *kernel = &g->gemm->kernel;
    struct gemm_blocking bl = kernel->blocking;
    isa_count_use(kernel->isa);
    long K = (long)g->c * g->kh * g->kw, P = (long)g->oh * g->ow, ld = m * P;
    int kc = (int)min_long(bl.kc, oc), mr = bl.mr, nr = bl.nr;
    long slivers = (K + mr - 1) / mr * mr;  // op(A)'s rows, in whole slivers
    long ldc = dcol_row(g);
    float *a = gemm_buffer(GEMM_BUFFER_A, slivers * oc);
    float *b = gemm_buffer(GEMM_BUFFER_B, (long)nr * kc);
    if (!a || !b || (P + 2 * nr - 2) / nr * nr > ldc)  // the last: a kernel wider than MAX_NR
        return -1;
    // op(A) = wᵀ in kc-deep blocks, one after another.
    for (int pc = 0; pc < oc; pc += kc)
        pack_a_panel(GEMM_TRANS, (int)K, (int)min_long(kc, oc - pc), w + (long)pc * K, (int)K,
                     mr, a + slivers * pc);
    long base = 0, done = 0;  // dcol holds the run's columns base … done−1
    for (int j = 0; j < m; j++) {
        long end = (j + 1) * P;  // image j is the run's columns j·P … end−1
        for (; done < end; done += nr) {
            int n_now = (int)min_long(nr, ld - done);
            // Past the run's end, whole stores into dcol's spare columns:
            // the micro-kernel's masked ones are slow.
            int n_store = done - base + nr <= ldc ? nr : n_now;
            float *c = dcol + (done - base);
            for (int pc = 0; pc < oc; pc += kc) {
                int k_now = (int)min_long(kc, oc - pc);
                float beta_now = pc == 0 ? 0.0f : 1.0f;  // later passes over k add
                pack_dy(k_now, n_now, dy + pc * ld + done, ld, nr, b);
                for (long ir = 0; ir < K; ir += mr) {
                    int m_now = (int)min_long(mr, K - ir);
                    const float *sliver = a + slivers * pc + ir * k_now;
                    kernel->run(m_now, n_store, k_now, sliver, b, c + ir * ldc, (int)ldc,
                                1.0f, beta_now);
                }
            }
        }
        if (beta == 0.0f)  // a fresh dx: zeros in cache, not a pass over memory first
            memset(dx + j * xs, 0, sizeof(float) * (size_t)g->c * g->h * g->w);
        col2im_image(g, dcol + (j * P - base), ldc, dx + j * xs);
        long next = end / nr * nr;  // the panel that image j+1 begins in
        if (next > base && next < done)
            move_panel(K, nr, next - base, dcol, ldc);
        base = next;
    }
    return 0;
}
// end listing
