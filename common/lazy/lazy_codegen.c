// The code generator: each kernel becomes one C function, loops over its
// shape with the fused expression inside, that the system's compiler turns
// into machine code. Nothing here is clever: the loops are the ones you would
// write by hand, and the compiler (-O2 and the --isa of the run) vectorises them.
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lazy_kernel.h"

// A growing string.
struct sb {
    char *p;
    size_t len, cap;
    int failed;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(struct sb *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        int n = b->failed ? 0 : vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (b->failed || n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? 2 * b->cap : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

enum { UPCAST = 8 };  // floats per AVX2 register: the innermost loop's step

struct gen {
    const struct lazy_schedule *s;
    struct lazy_kernel *k;
    struct sb out;
    int depth;                              // indentation
    int *scope_of;                          // node id → the scope its temporary lives in
    int scope;
    int *level;                             // reduce kernels: node id → level, −1 unknown
    unsigned char *array;                   // reduce kernels: node id → 1 when an outer
                                            //   value is kept in an array of its own
    char idx[LAZY_MAX_DIMS][32];            // the index of each dimension of k->shape
    char q[200];                            // reduce kernels: index into the outer arrays
    int outer;                              // 1: in a loop over the outer shape only
    int flat;                               // 1: one loop over every element
    int split;                              // 1: dimension 0 runs from lo to hi, the
                                            //   share of the thread running compute()
};

static void line(struct gen *G, const char *fmt, ...)
{
    va_list ap;
    char buf[1024];
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    put(&G->out, "%*s%s\n", 4 * G->depth, "", buf);
}

static int arg_index(const struct lazy_kernel *k, const struct lazy_node *n)
{
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i] == n)
            return i;
    return -1;
}

// The variable a stored member is written through: its own argument, or,
// when it replaces a buffer this kernel also reads (a weight updated in
// place), that input's, so that one restrict pointer reads and writes it.
static int store_arg(const struct gen *G, const struct lazy_node *n)
{
    const struct lazy_kernel *k = G->k;
    for (int i = 0; i < G->s->noutputs; i++) {
        const struct lazy_output *o = &G->s->outputs[i];
        if (o->node != n || !o->into)
            continue;
        for (int a = 0; a < k->ninputs; a++)
            if (k->args[a]->op == LAZY_LOAD && k->args[a]->buf == o->into)
                return a;
    }
    return arg_index(k, n);
}

static void literal(float v, char *name, size_t len)
{
    if (isnan(v))
        snprintf(name, len, "NAN");
    else if (isinf(v))
        snprintf(name, len, v > 0 ? "INFINITY" : "(-INFINITY)");
    else {
        char num[48];
        snprintf(num, sizeof num, "%.9g", (double)v);
        int plain = !strpbrk(num, ".e");
        snprintf(name, len, v < 0 ? "(%s%sf)" : "%s%sf", num, plain ? ".0" : "");
    }
}

static int is_outer_shaped(const struct lazy_kernel *k, const struct lazy_node *n)
{
    if (k->kind != KERNEL_REDUCE || n->ndim != k->ndim)
        return 0;
    for (int d = 0; d < k->ndim; d++)
        if (n->shape[d] != (d == k->axis ? 1 : k->shape[d]))
            return 0;
    return k->shape[k->axis] != 1 || n->op == LAZY_SUM || n->op == LAZY_RMAX;
}

// The offset of element (idx) of a value laid out with these strides.
static void offset_expr(const struct gen *G, int ndim, const long *strides, long offset,
                        char *buf, size_t len)
{
    int at = 0;
    buf[0] = '\0';
    if (G->flat) {
        // Every access of a flat kernel is contiguous over the whole shape.
        at = snprintf(buf, len, "%s", G->idx[0]);
    } else {
        for (int d = 0; d < ndim; d++) {
            if (strides[d] == 0 || !strcmp(G->idx[d], "0"))
                continue;
            if (strides[d] == 1)
                at += snprintf(buf + at, len - (size_t)at, "%s%s", at ? " + " : "", G->idx[d]);
            else
                at += snprintf(buf + at, len - (size_t)at, "%s%s * %ld", at ? " + " : "",
                               G->idx[d], strides[d]);
        }
    }
    if (offset)
        at += snprintf(buf + at, len - (size_t)at, "%s%ld", at ? " + " : "", offset);
    if (!at)
        snprintf(buf, len, "0");
}

static void contiguous(int ndim, const int *shape, long *strides)
{
    long st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = st;
        st *= shape[d];
    }
}

static void value(struct gen *G, const struct lazy_node *n, char *name, size_t len);

// A temporary for n in the current scope: 1 when it is already there.
static int have(struct gen *G, const struct lazy_node *n, char *name, size_t len)
{
    snprintf(name, len, "t%d", n->id);
    return G->scope_of[n->id] == G->scope;
}

static void load(struct gen *G, const struct lazy_node *key, const struct lazy_node *base,
                 const long *strides, long offset, char *name, size_t len)
{
    if (have(G, key, name, len))
        return;
    char off[256];
    offset_expr(G, key->ndim, strides, offset, off, sizeof off);
    line(G, "float %s = b%d[%s];", name, arg_index(G->k, base), off);
    G->scope_of[key->id] = G->scope;
}

// listing: emit_op
// One node's value as C, its inputs' values first.
static void emit(struct gen *G, const struct lazy_node *n, char *name, size_t len)
{
    if (have(G, n, name, len))
        return;
    char a[256] = "", b[256] = "";
    value(G, n->src[0], a, sizeof a);
    if (n->src[1])
        value(G, n->src[1], b, sizeof b);
    switch (n->op) {
    case LAZY_NEG:   line(G, "float %s = -%s;", name, a); break;
    case LAZY_RECIP: line(G, "float %s = 1.0f / %s;", name, a); break;
    case LAZY_EXP:   line(G, "float %s = expf(%s);", name, a); break;
    case LAZY_LOG:   line(G, "float %s = logf(%s);", name, a); break;
    case LAZY_SQRT:  line(G, "float %s = sqrtf(%s);", name, a); break;
    case LAZY_COPY:  line(G, "float %s = %s;", name, a); break;
    case LAZY_ADD:   line(G, "float %s = %s + %s;", name, a, b); break;
    case LAZY_MUL:   line(G, "float %s = %s * %s;", name, a, b); break;
    case LAZY_MAX:   line(G, "float %s = %s > %s ? %s : %s;", name, a, b, a, b); break;
    case LAZY_CMPGT: line(G, "float %s = %s > %s ? 1.0f : 0.0f;", name, a, b); break;
    default:         line(G, "#error \"%s cannot be computed inline\"", lazy_op_name(n->op));
    }
    G->scope_of[n->id] = G->scope;
}
// end listing

static void value(struct gen *G, const struct lazy_node *n, char *name, size_t len)
{
    const struct lazy_kernel *k = G->k;
    long st[LAZY_MAX_DIMS];
    switch (lazy_access(G->s, k, n)) {
    case 'c':
        literal(n->value, name, len);
        return;
    case 'l':
        contiguous(n->ndim, n->shape, st);
        load(G, n, n, st, 0, name, len);
        return;
    case 'v':
        if (lazy_access(G->s, k, n->src[0]) == 'm') {
            snprintf(name, len, "o%d[%s]", n->src[0]->id, G->q);  // broadcast along the axis
            return;
        }
        load(G, n, n->src[0], n->strides, n->offset, name, len);
        return;
    default:
        break;
    }
    if (n == k->matmul) {
        if (!have(G, n, name, len)) {
            line(G, "float %s = acc[i0 * %d + %s];", name, k->shape[1], G->idx[1]);
            G->scope_of[n->id] = G->scope;
        }
        return;
    }
    if (lazy_access(G->s, k, n) == 'm' && is_outer_shaped(k, n) && G->array[n->id]) {
        snprintf(name, len, "o%d[%s]", n->id, G->q);
        return;
    }
    emit(G, n, name, len);
}

// Stores every stored member that `want` selects, in the current scope.
static void store_members(struct gen *G, int (*want)(const struct gen *, const struct lazy_node *))
{
    const struct lazy_kernel *k = G->k;
    for (int j = k->ninputs; j < k->nargs; j++) {
        const struct lazy_node *n = k->args[j];
        if (!want(G, n) || n == k->matmul)
            continue;  // (the GEMM wrote a stored product already)
        char v[256], off[256];
        long st[LAZY_MAX_DIMS];
        value(G, n, v, sizeof v);
        contiguous(n->ndim, n->shape, st);
        offset_expr(G, n->ndim, st, 0, off, sizeof off);
        line(G, "b%d[%s] = %s;", store_arg(G, n), off, v);
    }
}

static int any_member(const struct gen *G, const struct lazy_node *n)
{
    (void)G;
    (void)n;
    return 1;
}

// Loops over dimensions lo..hi-1 of the kernel's shape (named i<d>), the
// innermost stepped UPCAST at a time with a fixed inner loop the compiler
// vectorises even at -O2, then a scalar tail; body() runs in each.
// A reduce kernel's index into its outer arrays, from the indices of the
// dimensions after the axis as the loops name them now.
static void refresh_q(struct gen *G)
{
    const struct lazy_kernel *k = G->k;
    int at = 0;
    long st = 1;
    G->q[0] = '\0';
    if (k->kind != KERNEL_REDUCE)
        return;
    for (int d = k->ndim - 1; d > k->axis; d--) {
        at += snprintf(G->q + at, sizeof G->q - (size_t)at, "%s%s", at ? " + " : "", G->idx[d]);
        if (st != 1)
            at += snprintf(G->q + at, sizeof G->q - (size_t)at, " * %ld", st);
        st *= k->shape[d];
    }
    if (!at)
        snprintf(G->q, sizeof G->q, "0");
}

static void run_body(struct gen *G, void (*body)(struct gen *, void *), void *ctx)
{
    G->scope++;
    refresh_q(G);
    body(G, ctx);
}

static void loops(struct gen *G, int lo, int hi, const int *extent,
                  void (*body)(struct gen *, void *), void *ctx)
{
    if (lo == hi) {
        run_body(G, body, ctx);
        return;
    }
    int d = lo, n = extent[d];
    int innermost = d == hi - 1, ranged = G->split && d == 0;
    char from[16], to[16];
    snprintf(from, sizeof from, ranged ? "lo" : "0");
    snprintf(to, sizeof to, ranged ? "hi" : "%d", n);
    if (!innermost || (!ranged && (n % UPCAST == 0 || n < UPCAST))) {
        line(G, "for (long i%d = %s; i%d < %s; i%d++) {", d, from, d, to, d);
        G->depth++;
        snprintf(G->idx[d], sizeof G->idx[d], "i%d", d);
        loops(G, lo + 1, hi, extent, body, ctx);
        G->depth--;
        line(G, "}");
        return;
    }
    // listing: upcast
    // The trip count is not a known multiple of the vector width: gcc -O2
    // vectorises only loops that need no scalar tail, so give it an inner
    // loop of exactly UPCAST steps, and the tail after it.
    line(G, "{");
    G->depth++;
    line(G, "long i%d = %s;", d, from);
    line(G, "for (; i%d + %d <= %s; i%d += %d) {", d, UPCAST, to, d, UPCAST);
    G->depth++;
    line(G, "for (long u = 0; u < %d; u++) {", UPCAST);
    G->depth++;
    snprintf(G->idx[d], sizeof G->idx[d], "(i%d + u)", d);
    run_body(G, body, ctx);
    G->depth--;
    line(G, "}");
    G->depth--;
    line(G, "}");
    line(G, "for (; i%d < %s; i%d++) {", d, to, d);
    // end listing
    G->depth++;
    snprintf(G->idx[d], sizeof G->idx[d], "i%d", d);
    run_body(G, body, ctx);
    G->depth--;
    line(G, "}");
    G->depth--;
    line(G, "}");
}

static void body_store_all(struct gen *G, void *ctx)
{
    (void)ctx;
    store_members(G, any_member);
}

// --- elementwise kernels ----------------------------------------------------------

// 1 when every read of the kernel (loads and views, recursively through what
// it recomputes inline) is contiguous over its whole shape: then one flat
// loop covers it.
static int all_flat(const struct gen *G, const struct lazy_node *n, int *seen)
{
    long want[LAZY_MAX_DIMS];
    const struct lazy_kernel *k = G->k;
    if (seen[n->id])
        return 1;
    seen[n->id] = 1;
    switch (lazy_access(G->s, k, n)) {
    case 'c':
    case 'l':
        return 1;
    case 'v':
        contiguous(n->ndim, n->shape, want);
        for (int d = 0; d < n->ndim; d++)
            if (n->shape[d] != 1 && n->strides[d] != want[d])
                return 0;
        return 1;
    default:
        for (int i = 0; i < 2; i++)
            if (n->src[i] && !all_flat(G, n->src[i], seen))
                return 0;
        return 1;
    }
}

// listing: gen_elementwise
static void gen_elementwise(struct gen *G)
{
    const struct lazy_kernel *k = G->k;
    int *seen = calloc((size_t)G->s->nslots, sizeof *seen), flat = seen != NULL;
    for (int j = k->ninputs; flat && j < k->nargs; j++)
        flat = all_flat(G, k->args[j], seen);
    free(seen);
    // BEGIN SOLUTION task 9.2: a loop over every element when every access is contiguous, else a loop per dimension; the body stores each stored member
    if (flat) {
        long size = 1;
        for (int d = 0; d < k->ndim; d++)
            size *= k->shape[d];
        G->flat = 1;
        loops(G, 0, 1, (int[]){(int)size}, body_store_all, NULL);
    } else {
        loops(G, 0, k->ndim, k->shape, body_store_all, NULL);
    }
    // stub: (void)flat;
    // END SOLUTION
}
// end listing

// --- reduce kernels ---------------------------------------------------------------

// A node's level inside a reduce kernel: how many passes over the reduced
// axis must run before its value exists. Inputs: 0; a reduce: one more
// than its input; anything else: the most of its inputs'.
static int level(struct gen *G, const struct lazy_node *n)
{
    if (G->level[n->id] >= 0)
        return G->level[n->id];
    int l = 0;
    switch (lazy_access(G->s, G->k, n)) {
    case 'c':
    case 'l':
        break;
    case 'v':
        if (lazy_access(G->s, G->k, n->src[0]) == 'm')
            l = level(G, n->src[0]);
        break;
    default:
        for (int i = 0; i < 2; i++)
            if (n->src[i]) {
                int li = level(G, n->src[i]);
                l = li > l ? li : l;
            }
        if (n->op == LAZY_SUM || n->op == LAZY_RMAX)
            l++;
    }
    return G->level[n->id] = l;
}

struct pass {
    int level;
};

// One pass over the reduced axis: every reduce of this level accumulates.
static void body_accumulate(struct gen *G, void *ctx)
{
    const struct pass *p = ctx;
    const struct lazy_kernel *k = G->k;
    for (int m = 0; m < k->nmembers; m++) {
        const struct lazy_node *r = k->members[m];
        if ((r->op != LAZY_SUM && r->op != LAZY_RMAX) || level(G, r) != p->level)
            continue;
        char v[256];
        value(G, r->src[0], v, sizeof v);
        if (r->op == LAZY_SUM)
            line(G, "o%d[%s] += %s;", r->id, G->q, v);
        else
            line(G, "o%d[%s] = %s > o%d[%s] ? %s : o%d[%s];", r->id, G->q, v, r->id, G->q, v,
                 r->id, G->q);
    }
}

// After a pass: the outer-shaped values of this level that a later pass
// reads (into their arrays), and the stores of those that go to memory.
static void body_outer(struct gen *G, void *ctx)
{
    const struct pass *p = ctx;
    const struct lazy_kernel *k = G->k;
    for (int m = 0; m < k->nmembers; m++) {
        const struct lazy_node *n = k->members[m];
        if (!is_outer_shaped(k, n) || level(G, n) != p->level)
            continue;
        char v[256];
        if (n->op != LAZY_SUM && n->op != LAZY_RMAX && G->array[n->id]) {
            emit(G, n, v, sizeof v);
            line(G, "o%d[%s] = %s;", n->id, G->q, v);
        }
        if (G->s->stored[n->id]) {
            char off[256];
            long st[LAZY_MAX_DIMS];
            value(G, n, v, sizeof v);
            contiguous(n->ndim, n->shape, st);
            offset_expr(G, n->ndim, st, 0, off, sizeof off);
            line(G, "b%d[%s] = %s;", store_arg(G, n), off, v);
        }
    }
}

// Which outer values need an array: the reduces (they accumulate), and
// values read by a later pass (through a broadcast, or by a value of a
// higher level). The others live in a temporary of the loop that makes them.
static void mark_arrays(struct gen *G, const struct lazy_node *n, unsigned char *seen)
{
    const struct lazy_kernel *k = G->k;
    if (seen[n->id])
        return;
    seen[n->id] = 1;
    if (n->op == LAZY_SUM || n->op == LAZY_RMAX)
        G->array[n->id] = 1;
    for (int i = 0; i < 2; i++) {
        const struct lazy_node *x = n->src[i];
        if (!x)
            continue;
        int a = lazy_access(G->s, k, x);
        if (a == 'v' && lazy_access(G->s, k, x->src[0]) == 'm')
            G->array[x->src[0]->id] = 1;
        else if (a == 'm' && is_outer_shaped(k, x) && level(G, x) < level(G, n))
            G->array[x->id] = 1;
        if (a == 'm' || a == 'i')
            mark_arrays(G, x, seen);
    }
}

static int full_shaped_stored(const struct gen *G, const struct lazy_node *n)
{
    return !is_outer_shaped(G->k, n);
}

static void body_store_full(struct gen *G, void *ctx)
{
    (void)ctx;
    store_members(G, full_shaped_stored);
}

static void gen_reduce(struct gen *G)
{
    const struct lazy_kernel *k = G->k;
    int a = k->axis, nd = k->ndim, outer[LAZY_MAX_DIMS];
    long q = 1;
    for (int d = a + 1; d < nd; d++)
        q *= k->shape[d];
    memcpy(outer, k->shape, sizeof outer);
    outer[a] = 1;
    int passes = 0;
    unsigned char *seen = calloc((size_t)G->s->nslots, 1);
    for (int m = 0; seen && m < k->nmembers; m++)
        mark_arrays(G, k->members[m], seen);
    free(seen);
    // The arrays of outer values: one set per thread when the rows are
    // shared among threads (declared inside the loop), else one static set.
    for (int m = 0; m < k->nmembers; m++) {
        int l = level(G, k->members[m]);
        passes = l > passes ? l : passes;
        if (G->array[k->members[m]->id] && !k->parallel)
            line(G, "static float o%d[%ld];", k->members[m]->id, q);
    }
    for (int d = 0; d < a; d++) {
        if (G->split && d == 0)
            line(G, "for (long i0 = lo; i0 < hi; i0++) {");
        else
            line(G, "for (long i%d = 0; i%d < %d; i%d++) {", d, d, k->shape[d], d);
        G->depth++;
        snprintf(G->idx[d], sizeof G->idx[d], "i%d", d);
    }
    for (int m = 0; m < k->nmembers; m++)
        if (G->array[k->members[m]->id] && k->parallel)
            line(G, "float o%d[%ld];", k->members[m]->id, q);
    for (int l = 0; l <= passes; l++) {
        struct pass p = {l};
        if (l > 0) {
            for (int m = 0; m < k->nmembers; m++) {
                const struct lazy_node *r = k->members[m];
                if ((r->op == LAZY_SUM || r->op == LAZY_RMAX) && level(G, r) == l)
                    line(G, "for (long j = 0; j < %ld; j++) o%d[j] = %s;", q, r->id,
                         r->op == LAZY_SUM ? "0.0f" : "-INFINITY");
            }
            line(G, "// pass %d over axis %d", l, a);
            loops(G, a, nd, k->shape, body_accumulate, &p);
        }
        int any = 0;
        for (int m = 0; m < k->nmembers; m++)
            any |= is_outer_shaped(k, k->members[m]) && level(G, k->members[m]) == l &&
                   (G->array[k->members[m]->id] || G->s->stored[k->members[m]->id]);
        snprintf(G->idx[a], sizeof G->idx[a], "0");
        if (any)
            loops(G, a + 1, nd, outer, body_outer, &p);
    }
    int any_full = 0;
    for (int j = k->ninputs; j < k->nargs; j++)
        any_full |= !is_outer_shaped(k, k->args[j]);
    if (any_full) {
        line(G, "// the stores over the whole shape");
        loops(G, a, nd, k->shape, body_store_full, NULL);
    }
    for (int d = 0; d < a; d++) {
        G->depth--;
        line(G, "}");
    }
}

// --- matmul kernels ------------------------------------------------------------

// The arguments compute() takes: every buffer but an output written through
// the input it replaces (a weight updated in place), and, in a matmul
// kernel, not the stored product, which compute() reads as acc.
static int passed(const struct gen *G, int i)
{
    const struct lazy_kernel *k = G->k;
    if (k->matmul && k->args[i] == k->matmul)
        return 0;
    return i < k->ninputs || store_arg(G, k->args[i]) == i;
}

// listing: gen_matmul
// C = op(A)·op(B) through gemm(), a panel of rows at a time, each panel's
// epilogue run right after the GEMM wrote it, while it is in cache. When
// the product itself is not stored, the panel is a scratch buffer the size
// of one panel: C never exists whole in memory.
static void gen_matmul(struct gen *G, struct sb *f, const char *call)
{
    const struct lazy_kernel *k = G->k;
    const struct lazy_node *M = k->matmul, *A = M->src[0], *B = M->src[1];
    int m = k->shape[0], n = k->shape[1], kk = A->shape[1], ta, tb;
    long lda, ldb, offa, offb;
    lazy_gemm_operand(A, &ta, &lda, &offa);
    lazy_gemm_operand(B, &tb, &ldb, &offb);
    int ia = arg_index(k, A->op == LAZY_VIEW ? A->src[0] : A);
    int ib = arg_index(k, B->op == LAZY_VIEW ? B->src[0] : B);
    int stored = G->s->stored[M->id];
    long rows = k->panel_rows;
    if (!stored)
        put(f, "    static float panel[%ld * %d] __attribute__((aligned(64)));\n", rows, n);
    if (rows >= m)
        put(f, "    const long r0 = 0;\n    const int rows = %d;\n    {\n", m);
    else
        put(f, "    for (long r0 = 0; r0 < %d; r0 += %ld) {\n"
               "        int rows = %d - r0 < %ld ? (int)(%d - r0) : %ld;\n", m, rows, m, rows, m, rows);
    if (stored)
        put(f, "        float *acc = args[%d] + r0 * %d;\n", arg_index(k, M), n);
    else
        put(f, "        float *acc = panel;\n");
    // Row r0 of op(A): row r0 of A, or column r0 of A when it is transposed.
    char arow[96], aoff[32] = "", boff[32] = "";
    snprintf(arow, sizeof arow, ta ? "r0" : "r0 * %ld", lda);
    if (offa)
        snprintf(aoff, sizeof aoff, " + %ld", offa);
    if (offb)
        snprintf(boff, sizeof boff, " + %ld", offb);
    put(f, "        if (gemm(%d, %d, rows, %d, %d, args[%d]%s + %s, %ld, args[%d]%s, %ld, acc, %d) != 0)\n"
           "            return -1;\n", ta, tb, n, kk, ia, aoff, arow, lda, ib, boff, ldb, n);
    if (call)
        put(f, "%s", call);
    put(f, "    }\n");
}

// The epilogue, inside compute(): rows r0.. of C, from acc.
static void gen_epilogue(struct gen *G)
{
    int ext[LAZY_MAX_DIMS] = {G->k->shape[0], G->k->shape[1]};
    snprintf(G->idx[0], sizeof G->idx[0], "(r0 + i0)");
    line(G, "for (long i0 = lo; i0 < hi; i0++) {");
    G->depth++;
    loops(G, 1, 2, ext, body_store_all, NULL);
    G->depth--;
    line(G, "}");
}
// end listing

// --- the file ------------------------------------------------------------------

static void param(struct gen *G, struct sb *f, int i, int first, int last)
{
    const struct lazy_kernel *k = G->k;
    const struct lazy_node *n = k->args[i];
    char sh[64];
    lazy_shape_str(n->ndim, n->shape, sh, sizeof sh);
    put(f, "%*sfloat *restrict b%d%s  // ", first ? 0 : 20, "", i, last ? ")" : ",");
    if (n->op == LAZY_LOAD)
        put(f, "%s, %s\n", n->buf->name ? n->buf->name : "buffer", sh);
    else
        put(f, "%s %s, %s\n", lazy_op_name(n->op), sh,
            i < k->ninputs ? "stored by an earlier kernel" : "stored here");
}

// The call of compute() over n rows of dimension 0 (an expression), shared
// among the threads when the kernel is big enough to repay starting them.
static void call_compute(const struct gen *G, struct sb *f, const char *n, const char *args,
                         const char *indent)
{
    if (!G->k->parallel) {
        put(f, "%scompute(0, %s%s);\n", indent, n, args);
        return;
    }
    put(f, "%s#pragma omp parallel\n%s{\n"
           "%s    long t = omp_get_thread_num(), nt = omp_get_num_threads();\n"
           "%s    compute(%s * t / nt, %s * (t + 1) / nt%s);\n%s}\n",
        indent, indent, indent, indent, n, n, args, indent);
}

// listing: codegen
// A kernel's file: compute(), the loops, with a restrict pointer per buffer
// (so the compiler knows no two overlap, and vectorises), over rows lo..hi
// of its first dimension; and kernel(), the entry point the program calls
// with its buffers in an array, which may share the rows among threads.
int lazy_codegen(const struct lazy_schedule *s, struct lazy_kernel *k)
{
    struct gen G = {.s = s, .k = k};
    struct sb f = {0};
    G.scope_of = calloc((size_t)s->nslots, sizeof *G.scope_of);
    G.level = malloc(sizeof *G.level * (size_t)s->nslots);
    G.array = calloc((size_t)s->nslots, 1);
    if (!G.scope_of || !G.level || !G.array) {
        free(G.scope_of);
        free(G.level);
        free(G.array);
        return -1;
    }
    for (int i = 0; i < s->nslots; i++)
        G.level[i] = -1;
    G.depth = 1;
    G.split = k->kind != KERNEL_REDUCE || k->axis > 0;
    switch (k->kind) {
    case KERNEL_ELEMENTWISE:
        gen_elementwise(&G);
        break;
    case KERNEL_REDUCE:
        gen_reduce(&G);
        break;
    case KERNEL_MATMUL:
        if (k->nmembers > 1)
            gen_epilogue(&G);
        break;
    }
    // end listing
    static const char *const kinds[] = {"elementwise", "reduce", "matmul"};
    char sh[64];
    lazy_shape_str(k->ndim, k->shape, sh, sizeof sh);
    put(&f, "// %s: %s %s kernel over %s", k->name, k->kind == KERNEL_ELEMENTWISE ? "an" : "a",
        kinds[k->kind], sh);
    if (k->kind == KERNEL_REDUCE)
        put(&f, ", reducing axis %d", k->axis);
    put(&f, "\n// computes:");
    for (int m = 0; m < k->nmembers; m++)
        put(&f, " %s%s", lazy_op_name(k->members[m]->op), s->stored[k->members[m]->id] ? "*" : "");
    put(&f, " (* stored)\n// reads %ld bytes, writes %ld; one kernel per op would move %ld\n",
        k->bytes_read, k->bytes_written, k->bytes_unfused);
    put(&f, "// Written by common/lazy/lazy_codegen.c.\n#include <math.h>\n%s\n"
            "typedef int gemm_fn(int ta, int tb, int m, int n, int k, const float *A, int lda,\n"
            "                    const float *B, int ldb, float *C, int ldc);\n\n",
        k->parallel ? "#include <omp.h>\n" : "");
    // The arguments, for compute()'s parameters and for the call.
    char args[2048] = "";
    int at = 0, matmul = k->kind == KERNEL_MATMUL;
    if (G.out.len > 0) {
        int last = -1;
        for (int i = 0; i < k->nargs; i++)
            if (passed(&G, i))
                last = i;
        put(&f, "static void compute(long lo, long hi,\n");
        for (int i = 0; i < k->nargs; i++)
            if (passed(&G, i)) {
                param(&G, &f, i, 0, i == last && !matmul);
                if (at >= 0 && (size_t)at < sizeof args)
                    at += snprintf(args + at, sizeof args - (size_t)at, ", args[%d]", i);
            }
        if (matmul) {
            put(&f, "                    long r0, int rows, const float *restrict acc)\n");
            if (at >= 0 && (size_t)at < sizeof args)
                snprintf(args + at, sizeof args - (size_t)at, ", r0, rows, acc");
        }
        put(&f, "{\n%s%s}\n\n", G.split ? "" : "    (void)lo;\n    (void)hi;\n", G.out.p);
    }
    put(&f, "int kernel(float *const *args, gemm_fn *gemm)\n{\n");
    if (matmul) {
        struct sb call = {0};
        if (G.out.len > 0)
            call_compute(&G, &call, "rows", args, "        ");
        gen_matmul(&G, &f, call.p);
        free(call.p);
    } else {
        char n[32];
        long size = k->shape[0];
        for (int d = 1; G.flat && d < k->ndim; d++)
            size *= k->shape[d];
        snprintf(n, sizeof n, "%ld", size);
        put(&f, "    (void)gemm;\n");
        call_compute(&G, &f, n, args, "    ");
    }
    put(&f, "    return 0;\n}\n");
    free(G.scope_of);
    free(G.level);
    free(G.array);
    free(G.out.p);
    if (f.failed) {
        free(f.p);
        return -1;
    }
    free(k->source);
    k->source = f.p;
    return 0;
}
