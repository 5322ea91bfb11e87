// Rewrite rules, applied bottom-up until none fires. Each rule replaces a
// node by a simpler one of the same value: the algebra a compiler does on
// integers (x·1, x + 0, folding constants), and the view rules that make
// fusion possible: every chain of reshapes, expands and permutes becomes one
// strided view, and a view lands on the buffer it reads, so a kernel loads
// through strides instead of copying.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lazy.h"

enum rule {
    RULE_FOLD,          // an op on constants: a constant
    RULE_ADD_ZERO,      // x + 0 → x
    RULE_MUL_ONE,       // x·1 → x
    RULE_MUL_ZERO,      // x·0 → 0
    RULE_NEG_NEG,       // −(−x) → x
    RULE_MAX_SAME,      // max(x, x) → x
    RULE_DETACH,        // detach(x) → x, once the gradients exist
    RULE_VIEW_CONST,    // a view of a constant: a constant of the view's shape
    RULE_VIEW_PUSH,     // a view of an op on inputs alone: the op on views of its inputs
    RULE_VIEW_FOLD,     // reshape, expand, permute: one strided view of the base
    RULE_VIEW_SAME,     // a view that changes nothing → its source
    RULE_COPY_SAME,     // a copy of anything but a view → itself
    RULE_COUNT
};

static const char *const rule_names[RULE_COUNT] = {
    "fold constants", "x + 0 → x", "x·1 → x", "x·0 → 0", "−(−x) → x", "max(x, x) → x",
    "detach(x) → x", "view of a constant", "view into an op's inputs", "views into one view",
    "view that changes nothing", "copy of a buffer"};

const char *lazy_rule_name(int rule)
{
    return rule >= 0 && rule < RULE_COUNT ? rule_names[rule] : "?";
}

int lazy_rule_count(void)
{
    return RULE_COUNT;
}

struct rewriter {
    struct lazy_graph *g;
    struct lazy_rewrite_stats *stats;
};

static struct lazy_node *simplify(struct rewriter *r, struct lazy_node *n);

static struct lazy_node *fired(struct rewriter *r, enum rule rule, struct lazy_node *to)
{
    if (to)
        r->stats->fired[rule]++;
    return to;
}

static int is_const(const struct lazy_node *n, float v)
{
    return n->op == LAZY_CONST && n->value == v;
}

static int is_elementwise(enum lazy_op op)
{
    return op >= LAZY_NEG && op <= LAZY_CMPGT;
}

static int is_movement(enum lazy_op op)
{
    return op == LAZY_RESHAPE || op == LAZY_EXPAND || op == LAZY_PERMUTE || op == LAZY_VIEW;
}

// What an op computes, on one element: constant folding must agree with the
// generated code bit for bit (lazy_codegen.c writes the same C).
static float apply(enum lazy_op op, float x, float y)
{
    switch (op) {
    case LAZY_NEG: return -x;
    case LAZY_RECIP: return 1.0f / x;
    case LAZY_EXP: return expf(x);
    case LAZY_LOG: return logf(x);
    case LAZY_SQRT: return sqrtf(x);
    case LAZY_COPY: return x;
    case LAZY_ADD: return x + y;
    case LAZY_MUL: return x * y;
    case LAZY_MAX: return x > y ? x : y;
    case LAZY_CMPGT: return x > y ? 1.0f : 0.0f;
    default: return 0.0f;
    }
}

// listing: rules_algebra
// The algebra. n's inputs are already simplified; the result may be one of
// them, a constant, or n itself when no rule applies.
static struct lazy_node *simplify_algebra(struct rewriter *r, struct lazy_node *n)
{
    struct lazy_graph *g = r->g;
    struct lazy_node *a = n->src[0], *b = n->src[1];
    // BEGIN SOLUTION task 9.1: x + 0, x·1, x·0, −(−x), max(x, x); constants sort second
    switch (n->op) {
    case LAZY_ADD:
        if (is_const(b, 0.0f))
            return fired(r, RULE_ADD_ZERO, a);
        if (is_const(a, 0.0f))
            return fired(r, RULE_ADD_ZERO, b);
        break;
    case LAZY_MUL:
        if (is_const(b, 1.0f))
            return fired(r, RULE_MUL_ONE, a);
        if (is_const(a, 1.0f))
            return fired(r, RULE_MUL_ONE, b);
        // Not IEEE for x = ±∞ or NaN (0·∞ is NaN): like every framework
        // that folds it, we take x·0 = 0 for the finite values we compute.
        if (is_const(a, 0.0f) || is_const(b, 0.0f))
            return fired(r, RULE_MUL_ZERO, lazy_const(g, 0.0f, n->ndim, n->shape));
        break;
    case LAZY_NEG:
        if (a->op == LAZY_NEG)
            return fired(r, RULE_NEG_NEG, a->src[0]);
        break;
    case LAZY_MAX:
        if (a == b)
            return fired(r, RULE_MAX_SAME, a);
        break;
    default:
        break;
    }
    // stub: (void)g; (void)a; (void)b; (void)is_const;
    // END SOLUTION
    return n;
}
// end listing

static struct lazy_node *fold(struct rewriter *r, struct lazy_node *n)
{
    struct lazy_node *a = n->src[0], *b = n->src[1];
    if (is_elementwise(n->op) && a->op == LAZY_CONST && (!b || b->op == LAZY_CONST))
        return fired(r, RULE_FOLD, lazy_const(r->g, apply(n->op, a->value, b ? b->value : 0.0f),
                                              n->ndim, n->shape));
    if ((n->op == LAZY_SUM || n->op == LAZY_RMAX) && a->op == LAZY_CONST) {
        float v = n->op == LAZY_SUM ? a->value * (float)a->shape[n->axis] : a->value;
        return fired(r, RULE_FOLD, lazy_const(r->g, v, n->ndim, n->shape));
    }
    if (n->op == LAZY_DETACH)
        return fired(r, RULE_DETACH, a);
    if (n->op == LAZY_COPY && a->op != LAZY_VIEW)
        return fired(r, RULE_COPY_SAME, a);
    return n;
}

// --- views ------------------------------------------------------------------

struct strided {
    struct lazy_node *base;
    int ndim, shape[LAZY_MAX_DIMS];
    long strides[LAZY_MAX_DIMS], offset;
};

static void contiguous(int ndim, const int *shape, long *strides)
{
    long s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d];
    }
}

static int is_contiguous(const struct strided *v)
{
    long want[LAZY_MAX_DIMS];
    contiguous(v->ndim, v->shape, want);
    for (int d = 0; d < v->ndim; d++)
        if (v->shape[d] != 1 && v->strides[d] != want[d])
            return 0;
    return 1;
}

// listing: view_fold
// A movement op m applied to x, as one strided view of x's base: permute
// permutes the strides, expand gives a stretched dimension stride 0, and a
// reshape keeps the strides when x is contiguous or the reshape only adds
// or drops dimensions of 1. Returns 0, or -1 when the result is no view
// (a reshape across a stretched or permuted dimension).
static int fold_view(const struct lazy_node *m, const struct lazy_node *x, struct strided *v)
{
    if (x->op == LAZY_VIEW) {
        v->base = x->src[0];
        memcpy(v->strides, x->strides, sizeof v->strides);
        v->offset = x->offset;
    } else {
        v->base = (struct lazy_node *)x;
        contiguous(x->ndim, x->shape, v->strides);
        v->offset = 0;
    }
    v->ndim = x->ndim;
    memcpy(v->shape, x->shape, sizeof v->shape);
    long s[LAZY_MAX_DIMS];
    switch (m->op) {
    case LAZY_PERMUTE:
        for (int d = 0; d < m->ndim; d++)
            s[d] = v->strides[m->perm[d]];
        break;
    case LAZY_EXPAND:
        for (int d = 0; d < m->ndim; d++)
            s[d] = v->shape[d] == m->shape[d] ? v->strides[d] : 0;
        break;
    case LAZY_RESHAPE:
        if (is_contiguous(v)) {
            contiguous(m->ndim, m->shape, s);
        } else {
            // Only 1s added or dropped: the other dimensions, in order, are
            // the same, and keep their strides.
            int from = 0;
            for (int d = 0; d < m->ndim; d++) {
                if (m->shape[d] == 1) {
                    s[d] = 0;
                    continue;
                }
                while (from < v->ndim && v->shape[from] == 1)
                    from++;
                if (from == v->ndim || v->shape[from] != m->shape[d])
                    return -1;
                s[d] = v->strides[from++];
            }
            while (from < v->ndim && v->shape[from] == 1)
                from++;
            if (from != v->ndim)
                return -1;
        }
        break;
    default:
        return -1;
    }
    v->ndim = m->ndim;
    memcpy(v->shape, m->shape, sizeof(int) * (size_t)m->ndim);
    memcpy(v->strides, s, sizeof(long) * (size_t)m->ndim);
    return 0;
}
// end listing

// The movement m (a reshape, expand, permute or view) applied to x instead
// of to the op over x (x has the op's shape, so the same movement fits it).
static struct lazy_node *moved(struct rewriter *r, const struct lazy_node *m, struct lazy_node *x)
{
    return simplify(r, lazy_remake(r->g, m, x, NULL));
}

static struct lazy_node *simplify_view(struct rewriter *r, struct lazy_node *n)
{
    struct lazy_graph *g = r->g;
    struct lazy_node *x = n->src[0];
    if (x->op == LAZY_CONST)
        return fired(r, RULE_VIEW_CONST, lazy_const(g, x->value, n->ndim, n->shape));
    // listing: view_push
    // A view of an expression over inputs alone is pushed into it: the
    // expression is then computed at the view's shape, reading its inputs
    // through the view. The bias row stretched over a batch becomes a load
    // with stride 0, not a b×n copy of the bias. (Not a copy: it is there
    // to put a view into memory of its own.)
    if (n->op != LAZY_VIEW && is_elementwise(x->op) && x->op != LAZY_COPY && x->inputs_only) {
        struct lazy_node *a = moved(r, n, x->src[0]);
        struct lazy_node *b = x->src[1] ? moved(r, n, x->src[1]) : NULL;
        return fired(r, RULE_VIEW_PUSH, simplify(r, lazy_remake(g, x, a, b)));
    }
    // end listing
    if (n->op == LAZY_VIEW) {
        struct strided v = {.base = x, .ndim = n->ndim, .offset = n->offset};
        memcpy(v.shape, n->shape, sizeof v.shape);
        memcpy(v.strides, n->strides, sizeof v.strides);
        if (n->offset == 0 && n->ndim == x->ndim &&
            !memcmp(n->shape, x->shape, sizeof(int) * (size_t)n->ndim) && is_contiguous(&v))
            return fired(r, RULE_VIEW_SAME, x);
        return n;
    }
    struct strided v;
    if (fold_view(n, x, &v) != 0) {
        // No view can say it: copy x into memory of its own first, then
        // reshape the copy (contiguous, so that always folds).
        struct lazy_node *c = lazy_copy(g, x);
        return c ? simplify(r, lazy_remake(g, n, c, NULL)) : NULL;
    }
    return fired(r, RULE_VIEW_FOLD,
                 simplify(r, lazy_view(g, v.base, v.ndim, v.shape, v.strides, v.offset)));
}

// Applies the rules to n until none fires; n's inputs are simplified.
static struct lazy_node *simplify(struct rewriter *r, struct lazy_node *n)
{
    for (;;) {
        if (!n)
            return NULL;
        struct lazy_node *to = n;
        if (is_movement(n->op))
            to = simplify_view(r, n);
        else if (n->src[0])
            to = fold(r, n);
        if (to == n && n->src[0])
            to = simplify_algebra(r, n);
        if (to == n)
            return n;
        n = to;
    }
}

// listing: rewrite_pass
// One pass rebuilds the graph bottom-up: each node over its inputs'
// rewritten versions, simplified. Passes repeat until one changes nothing,
// the fixed point.
static int pass(struct rewriter *r, int n, struct lazy_node *const *roots,
                struct lazy_node **out, int *changed)
{
    struct lazy_node **order;
    int count = lazy_toposort(roots, n, &order);
    if (count < 0)
        return -1;
    int top = count ? order[count - 1]->id : 0;
    struct lazy_node **to = calloc((size_t)top + 1, sizeof *to);
    if (!to) {
        free(order);
        return -1;
    }
    *changed = 0;
    for (int i = 0; i < count; i++) {
        struct lazy_node *x = order[i];
        struct lazy_node *a = x->src[0] ? to[x->src[0]->id] : NULL;
        struct lazy_node *b = x->src[1] ? to[x->src[1]->id] : NULL;
        struct lazy_node *y = simplify(r, lazy_remake(r->g, x, a, b));
        if (!y)
            break;
        to[x->id] = y;
        *changed |= y != x;
    }
    int status = 0;
    for (int i = 0; i < n; i++)
        if (!(out[i] = to[roots[i]->id]))
            status = -1;
    free(to);
    free(order);
    return status;
}
// end listing

int lazy_rewrite(struct lazy_graph *g, int n, struct lazy_node *const *roots,
                 struct lazy_node **out, struct lazy_rewrite_stats *stats)
{
    struct lazy_rewrite_stats none;
    struct rewriter r = {g, stats ? stats : &none};
    memset(r.stats, 0, sizeof *r.stats);
    for (int i = 0; i < n; i++)
        if (!roots[i])
            return -1;
    struct lazy_node **cur = malloc(sizeof *cur * (size_t)(n ? n : 1));
    if (!cur)
        return lazy_fail(g, "rewrite: out of memory"), -1;
    memcpy(cur, roots, sizeof *cur * (size_t)n);
    int changed = 1, status = 0;
    // Each pass leaves fewer or simpler nodes; 64 passes would mean a rule
    // that undoes another, a bug.
    while (changed && status == 0) {
        if (r.stats->passes == 64) {
            lazy_fail(g, "rewrite: no fixed point after 64 passes");
            status = -1;
            break;
        }
        r.stats->passes++;
        status = pass(&r, n, cur, cur, &changed);
    }
    if (status == 0)
        memcpy(out, cur, sizeof *cur * (size_t)n);
    else if (!lazy_error(g)[0])
        lazy_fail(g, "rewrite: out of memory");
    free(cur);
    return status;
}
