// The graph: nodes made once per expression (hash-consing), shapes checked
// when a node is made, broadcasting spelled out as views.
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lazy.h"

struct lazy_graph {
    struct lazy_node **nodes;       // every node, in id order
    int count, cap;
    struct lazy_node **table;       // hash buckets, a power of two
    int buckets;
    char error[512];
};

static const char *const op_names[LAZY_OP_COUNT] = {
    "load", "const", "neg", "recip", "exp", "log", "sqrt", "copy", "add", "mul", "max",
    "cmpgt", "sum", "rmax", "matmul", "reshape", "expand", "permute", "view", "detach"};

const char *lazy_op_name(enum lazy_op op)
{
    return op >= 0 && op < LAZY_OP_COUNT ? op_names[op] : "?";
}

void lazy_shape_str(int ndim, const int *shape, char *buf, int len)
{
    int at = 0;
    buf[0] = '\0';
    for (int d = 0; d < ndim && at < len; d++)
        at += snprintf(buf + at, (size_t)(len - at), d ? "×%d" : "%d", shape[d]);
}

static long shape_size(int ndim, const int *shape)
{
    if (ndim < 1 || ndim > LAZY_MAX_DIMS)
        return -1;
    long n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 1 || n > (1L << 31) / shape[d])
            return -1;
        n *= shape[d];
    }
    return n;
}

int lazy_buffer_init(struct lazy_buffer *b, const char *name, float *data, int ndim,
                     const int *shape)
{
    long size = shape_size(ndim, shape);
    if (size < 0)
        return -1;
    memset(b, 0, sizeof *b);
    b->name = name;
    b->data = data;
    b->ndim = ndim;
    memcpy(b->shape, shape, sizeof(int) * (size_t)ndim);
    b->size = size;
    return 0;
}

struct lazy_graph *lazy_graph_new(void)
{
    struct lazy_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->buckets = 1024;
    g->table = calloc((size_t)g->buckets, sizeof *g->table);
    if (!g->table) {
        free(g);
        return NULL;
    }
    return g;
}

void lazy_graph_free(struct lazy_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->count; i++)
        free(g->nodes[i]);
    free(g->nodes);
    free(g->table);
    free(g);
}

const char *lazy_error(const struct lazy_graph *g)
{
    return g->error;
}

void *lazy_fail(struct lazy_graph *g, const char *fmt, ...)
{
    if (g->error[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->error, sizeof g->error, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

int lazy_node_count(const struct lazy_graph *g)
{
    return g->count;
}

// listing: hash_cons
// FNV-1a over everything that makes a node what it is: its op, the ids of
// its inputs, its shape and its constants. Two nodes with the same key are
// the same expression, so the second is never made.
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t node_hash(const struct lazy_node *n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    int ids[2] = {n->src[0] ? n->src[0]->id : -1, n->src[1] ? n->src[1]->id : -1};
    h = mix(h, &n->op, sizeof n->op);
    h = mix(h, ids, sizeof ids);
    h = mix(h, &n->ndim, sizeof n->ndim);
    h = mix(h, n->shape, sizeof(int) * (size_t)n->ndim);
    h = mix(h, &n->value, sizeof n->value);
    h = mix(h, &n->axis, sizeof n->axis);
    h = mix(h, n->perm, sizeof n->perm);
    h = mix(h, n->strides, sizeof n->strides);
    h = mix(h, &n->offset, sizeof n->offset);
    return mix(h, &n->buf, sizeof n->buf);
}

static int same_node(const struct lazy_node *a, const struct lazy_node *b)
{
    return a->op == b->op && a->src[0] == b->src[0] && a->src[1] == b->src[1] &&
           a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, sizeof(int) * (size_t)a->ndim) &&
           !memcmp(&a->value, &b->value, sizeof a->value) && a->axis == b->axis &&
           !memcmp(a->perm, b->perm, sizeof a->perm) &&
           !memcmp(a->strides, b->strides, sizeof a->strides) && a->offset == b->offset &&
           a->buf == b->buf;
}

// The node equal to *proto if the graph has one, else a new copy of it.
static struct lazy_node *intern(struct lazy_graph *g, const struct lazy_node *proto)
{
    uint64_t h = node_hash(proto);
    struct lazy_node **bucket = &g->table[h & (uint64_t)(g->buckets - 1)];
    for (struct lazy_node *n = *bucket; n; n = n->chain)
        if (n->hash == h && same_node(n, proto))
            return n;
    // end listing
    if (g->count == g->cap) {
        int cap = g->cap ? 2 * g->cap : 256;
        struct lazy_node **nodes = realloc(g->nodes, sizeof *nodes * (size_t)cap);
        if (!nodes)
            return lazy_fail(g, "out of memory for the graph's %d nodes", g->count);
        g->nodes = nodes;
        g->cap = cap;
    }
    struct lazy_node *n = malloc(sizeof *n);
    if (!n)
        return lazy_fail(g, "out of memory for the graph's %d nodes", g->count);
    *n = *proto;
    n->hash = h;
    n->id = g->count;
    n->chain = *bucket;
    *bucket = n;
    g->nodes[g->count++] = n;
    return n;
}

// A node prototype: zeroed (so that hashing sees no garbage), op, shape.
static struct lazy_node proto(enum lazy_op op, int ndim, const int *shape)
{
    struct lazy_node p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.ndim = ndim;
    memcpy(p.shape, shape, sizeof(int) * (size_t)ndim);
    p.size = shape_size(ndim, shape);
    return p;
}

static int check_shape(struct lazy_graph *g, const char *op, int ndim, const int *shape)
{
    if (shape_size(ndim, shape) > 0)
        return 0;
    lazy_fail(g, "%s: a shape of %d dimensions, each 1 or more (and 2^31 elements at most)",
              op, ndim);
    return -1;
}

struct lazy_node *lazy_load(struct lazy_graph *g, struct lazy_buffer *b)
{
    if (!b || check_shape(g, "load", b->ndim, b->shape) != 0)
        return b ? NULL : lazy_fail(g, "load: no buffer");
    struct lazy_node p = proto(LAZY_LOAD, b->ndim, b->shape);
    p.buf = b;
    p.inputs_only = 1;
    return intern(g, &p);
}

struct lazy_node *lazy_const(struct lazy_graph *g, float value, int ndim, const int *shape)
{
    if (check_shape(g, "const", ndim, shape) != 0)
        return NULL;
    struct lazy_node p = proto(LAZY_CONST, ndim, shape);
    // +0 and −0 are one constant (so x + 0 and x + −0 meet the same rule).
    p.value = value == 0.0f ? 0.0f : value;
    p.inputs_only = 1;
    return intern(g, &p);
}

static struct lazy_node *unary(struct lazy_graph *g, enum lazy_op op, struct lazy_node *x)
{
    if (!x)
        return NULL;
    struct lazy_node p = proto(op, x->ndim, x->shape);
    p.src[0] = x;
    p.inputs_only = x->inputs_only;
    return intern(g, &p);
}

struct lazy_node *lazy_neg(struct lazy_graph *g, struct lazy_node *x) { return unary(g, LAZY_NEG, x); }
struct lazy_node *lazy_recip(struct lazy_graph *g, struct lazy_node *x) { return unary(g, LAZY_RECIP, x); }
struct lazy_node *lazy_exp(struct lazy_graph *g, struct lazy_node *x) { return unary(g, LAZY_EXP, x); }
struct lazy_node *lazy_log(struct lazy_graph *g, struct lazy_node *x) { return unary(g, LAZY_LOG, x); }
struct lazy_node *lazy_sqrt(struct lazy_graph *g, struct lazy_node *x) { return unary(g, LAZY_SQRT, x); }
struct lazy_node *lazy_copy(struct lazy_graph *g, struct lazy_node *x) { return unary(g, LAZY_COPY, x); }
struct lazy_node *lazy_detach(struct lazy_graph *g, struct lazy_node *x) { return unary(g, LAZY_DETACH, x); }

// listing: broadcast
// NumPy's rule: align the shapes at the right; where one has 1 (or no
// dimension at all) and the other n, the 1 stretches to n. The stretch is
// explicit: a reshape that adds the missing leading 1s, then an expand. So
// every binary node below sees two inputs of one shape.
static struct lazy_node *broadcast_to(struct lazy_graph *g, struct lazy_node *x, int ndim,
                                      const int *shape)
{
    if (x->ndim < ndim) {
        int padded[LAZY_MAX_DIMS];
        int lead = ndim - x->ndim;
        for (int d = 0; d < ndim; d++)
            padded[d] = d < lead ? 1 : x->shape[d - lead];
        x = lazy_reshape(g, x, ndim, padded);
    }
    if (x && memcmp(x->shape, shape, sizeof(int) * (size_t)ndim) != 0)
        x = lazy_expand(g, x, ndim, shape);
    return x;
}

static struct lazy_node *binary(struct lazy_graph *g, enum lazy_op op, struct lazy_node *a,
                                struct lazy_node *b)
{
    if (!a || !b)
        return NULL;
    int ndim = a->ndim > b->ndim ? a->ndim : b->ndim, shape[LAZY_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        int da = d - (ndim - a->ndim), db = d - (ndim - b->ndim);
        int na = da >= 0 ? a->shape[da] : 1, nb = db >= 0 ? b->shape[db] : 1;
        if (na != nb && na != 1 && nb != 1) {
            char sa[64], sb[64];
            lazy_shape_str(a->ndim, a->shape, sa, sizeof sa);
            lazy_shape_str(b->ndim, b->shape, sb, sizeof sb);
            return lazy_fail(g, "%s: shapes %s and %s do not broadcast (dimension %d: %d and %d)",
                             lazy_op_name(op), sa, sb, d, na, nb);
        }
        shape[d] = na > nb ? na : nb;
    }
    a = broadcast_to(g, a, ndim, shape);
    b = broadcast_to(g, b, ndim, shape);
    if (!a || !b)
        return NULL;
    // end listing
    // a + b and b + a are one node: the commutative ops take their inputs
    // in id order (a constant, usually made later, comes second).
    if (op != LAZY_CMPGT && a->id > b->id) {
        struct lazy_node *t = a;
        a = b;
        b = t;
    }
    struct lazy_node p = proto(op, ndim, shape);
    p.src[0] = a;
    p.src[1] = b;
    p.inputs_only = a->inputs_only && b->inputs_only;
    return intern(g, &p);
}

struct lazy_node *lazy_add(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b) { return binary(g, LAZY_ADD, a, b); }
struct lazy_node *lazy_mul(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b) { return binary(g, LAZY_MUL, a, b); }
struct lazy_node *lazy_max(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b) { return binary(g, LAZY_MAX, a, b); }
struct lazy_node *lazy_cmpgt(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b) { return binary(g, LAZY_CMPGT, a, b); }

struct lazy_node *lazy_sub(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b)
{
    return lazy_add(g, a, lazy_neg(g, b));
}

struct lazy_node *lazy_div(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b)
{
    return lazy_mul(g, a, lazy_recip(g, b));
}

static struct lazy_node *scalar(struct lazy_graph *g, float c)
{
    return lazy_const(g, c, 1, (int[]){1});
}

struct lazy_node *lazy_add_const(struct lazy_graph *g, struct lazy_node *x, float c)
{
    return lazy_add(g, x, scalar(g, c));
}

struct lazy_node *lazy_mul_const(struct lazy_graph *g, struct lazy_node *x, float c)
{
    return lazy_mul(g, x, scalar(g, c));
}

struct lazy_node *lazy_relu(struct lazy_graph *g, struct lazy_node *x)
{
    return lazy_max(g, x, scalar(g, 0.0f));
}

static struct lazy_node *reduce(struct lazy_graph *g, enum lazy_op op, struct lazy_node *x,
                                int axis)
{
    if (!x)
        return NULL;
    if (axis < 0 || axis >= x->ndim) {
        char s[64];
        lazy_shape_str(x->ndim, x->shape, s, sizeof s);
        return lazy_fail(g, "%s: axis %d of a %s tensor (want 0..%d)", lazy_op_name(op), axis, s,
                         x->ndim - 1);
    }
    struct lazy_node p = proto(op, x->ndim, x->shape);
    p.shape[axis] = 1;
    p.size = x->size / x->shape[axis];
    p.src[0] = x;
    p.axis = axis;
    return intern(g, &p);
}

struct lazy_node *lazy_sum(struct lazy_graph *g, struct lazy_node *x, int axis)
{
    return reduce(g, LAZY_SUM, x, axis);
}

struct lazy_node *lazy_max_reduce(struct lazy_graph *g, struct lazy_node *x, int axis)
{
    return reduce(g, LAZY_RMAX, x, axis);
}

struct lazy_node *lazy_matmul(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b)
{
    if (!a || !b)
        return NULL;
    if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0]) {
        char sa[64], sb[64];
        lazy_shape_str(a->ndim, a->shape, sa, sizeof sa);
        lazy_shape_str(b->ndim, b->shape, sb, sizeof sb);
        return lazy_fail(g, "matmul: a is %s, b is %s (want m×k and k×n)", sa, sb);
    }
    struct lazy_node p = proto(LAZY_MATMUL, 2, (int[]){a->shape[0], b->shape[1]});
    p.src[0] = a;
    p.src[1] = b;
    return intern(g, &p);
}

static struct lazy_node *movement(struct lazy_graph *g, enum lazy_op op, struct lazy_node *x,
                                  int ndim, const int *shape)
{
    struct lazy_node p = proto(op, ndim, shape);
    p.src[0] = x;
    p.inputs_only = x->inputs_only;
    return intern(g, &p);
}

struct lazy_node *lazy_reshape(struct lazy_graph *g, struct lazy_node *x, int ndim,
                               const int *shape)
{
    if (!x || check_shape(g, "reshape", ndim, shape) != 0)
        return NULL;
    if (shape_size(ndim, shape) != x->size) {
        char sx[64], s[64];
        lazy_shape_str(x->ndim, x->shape, sx, sizeof sx);
        lazy_shape_str(ndim, shape, s, sizeof s);
        return lazy_fail(g, "reshape: %s to %s changes the number of elements", sx, s);
    }
    if (ndim == x->ndim && !memcmp(shape, x->shape, sizeof(int) * (size_t)ndim))
        return x;
    return movement(g, LAZY_RESHAPE, x, ndim, shape);
}

struct lazy_node *lazy_expand(struct lazy_graph *g, struct lazy_node *x, int ndim,
                              const int *shape)
{
    if (!x || check_shape(g, "expand", ndim, shape) != 0)
        return NULL;
    int ok = ndim == x->ndim;
    for (int d = 0; ok && d < ndim; d++)
        ok = x->shape[d] == shape[d] || x->shape[d] == 1;
    if (!ok) {
        char sx[64], s[64];
        lazy_shape_str(x->ndim, x->shape, sx, sizeof sx);
        lazy_shape_str(ndim, shape, s, sizeof s);
        return lazy_fail(g, "expand: %s to %s (only dimensions of 1 stretch)", sx, s);
    }
    if (!memcmp(shape, x->shape, sizeof(int) * (size_t)ndim))
        return x;
    return movement(g, LAZY_EXPAND, x, ndim, shape);
}

struct lazy_node *lazy_permute(struct lazy_graph *g, struct lazy_node *x, const int *perm)
{
    if (!x)
        return NULL;
    int seen = 0, shape[LAZY_MAX_DIMS], identity = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (perm[d] < 0 || perm[d] >= x->ndim || (seen & (1 << perm[d])))
            return lazy_fail(g, "permute: not a permutation of the %d dimensions", x->ndim);
        seen |= 1 << perm[d];
        shape[d] = x->shape[perm[d]];
        identity &= perm[d] == d;
    }
    if (identity)
        return x;
    struct lazy_node p = proto(LAZY_PERMUTE, x->ndim, shape);
    p.src[0] = x;
    memcpy(p.perm, perm, sizeof(int) * (size_t)x->ndim);
    p.inputs_only = x->inputs_only;
    return intern(g, &p);
}

struct lazy_node *lazy_transpose(struct lazy_graph *g, struct lazy_node *x)
{
    if (x && x->ndim != 2)
        return lazy_fail(g, "transpose: a tensor of %d dimensions (want 2)", x->ndim);
    return lazy_permute(g, x, (int[]){1, 0});
}

struct lazy_node *lazy_view(struct lazy_graph *g, struct lazy_node *src, int ndim,
                            const int *shape, const long *strides, long offset)
{
    if (!src || check_shape(g, "view", ndim, shape) != 0)
        return NULL;
    struct lazy_node p = proto(LAZY_VIEW, ndim, shape);
    p.src[0] = src;
    memcpy(p.strides, strides, sizeof(long) * (size_t)ndim);
    p.offset = offset;
    p.inputs_only = src->inputs_only;
    return intern(g, &p);
}

struct lazy_node *lazy_remake(struct lazy_graph *g, const struct lazy_node *n, struct lazy_node *a,
                              struct lazy_node *b)
{
    if (n->src[0] == a && n->src[1] == b)
        return (struct lazy_node *)n;
    switch (n->op) {
    case LAZY_NEG: case LAZY_RECIP: case LAZY_EXP: case LAZY_LOG: case LAZY_SQRT:
    case LAZY_COPY: case LAZY_DETACH:
        return unary(g, n->op, a);
    case LAZY_ADD: case LAZY_MUL: case LAZY_MAX: case LAZY_CMPGT:
        return binary(g, n->op, a, b);
    case LAZY_SUM: case LAZY_RMAX:
        return reduce(g, n->op, a, n->axis);
    case LAZY_MATMUL:
        return lazy_matmul(g, a, b);
    case LAZY_RESHAPE:
        return lazy_reshape(g, a, n->ndim, n->shape);
    case LAZY_EXPAND:
        return lazy_expand(g, a, n->ndim, n->shape);
    case LAZY_PERMUTE:
        return lazy_permute(g, a, n->perm);
    case LAZY_VIEW:
        return lazy_view(g, a, n->ndim, n->shape, n->strides, n->offset);
    default:
        return (struct lazy_node *)n;   // loads and constants have no inputs
    }
}

// Ascending id is a topological order: a node's inputs exist before it.
static int by_id(const void *a, const void *b)
{
    const struct lazy_node *x = *(struct lazy_node *const *)a, *y = *(struct lazy_node *const *)b;
    return (x->id > y->id) - (x->id < y->id);
}

int lazy_toposort(struct lazy_node *const *roots, int nroots, struct lazy_node ***out)
{
    // Every node under a root has a smaller id than it, so marks indexed by
    // id up to the largest root's cover the whole walk.
    int max_id = 0, count = 0, top = 0;
    for (int i = 0; i < nroots; i++)
        if (roots[i] && roots[i]->id > max_id)
            max_id = roots[i]->id;
    unsigned char *seen = calloc((size_t)max_id + 1, 1);
    struct lazy_node **list = malloc(sizeof *list * ((size_t)max_id + 1));
    struct lazy_node **stack = malloc(sizeof *stack * (2 * (size_t)max_id + 2 + (size_t)nroots));
    if (!seen || !list || !stack) {
        free(seen);
        free(list);
        free(stack);
        return -1;
    }
    for (int i = 0; i < nroots; i++)
        if (roots[i])
            stack[top++] = roots[i];
    while (top > 0) {
        struct lazy_node *n = stack[--top];
        if (seen[n->id])
            continue;
        seen[n->id] = 1;
        list[count++] = n;
        for (int s = 0; s < 2; s++)
            if (n->src[s] && !seen[n->src[s]->id])
                stack[top++] = n->src[s];
    }
    free(seen);
    free(stack);
    qsort(list, (size_t)count, sizeof *list, by_id);
    *out = list;
    return count;
}

void lazy_write_dot(FILE *f, struct lazy_node *const *roots, int nroots)
{
    struct lazy_node **all;
    int n = lazy_toposort(roots, nroots, &all);
    if (n < 0)
        return;
    fprintf(f, "digraph lazy {\n  rankdir=BT;\n  node [shape=box, fontname=\"sans\", "
               "fontsize=11, style=rounded];\n");
    for (int i = 0; i < n; i++) {
        const struct lazy_node *x = all[i];
        char s[64];
        lazy_shape_str(x->ndim, x->shape, s, sizeof s);
        fprintf(f, "  n%d [label=\"%s", x->id, lazy_op_name(x->op));
        if (x->op == LAZY_LOAD)
            fprintf(f, " %s", x->buf->name ? x->buf->name : "");
        else if (x->op == LAZY_CONST)
            fprintf(f, " %g", x->value);
        else if (x->op == LAZY_SUM || x->op == LAZY_RMAX)
            fprintf(f, " axis %d", x->axis);
        fprintf(f, "\\n%s\"%s];\n", s,
                x->op == LAZY_LOAD ? ", style=\"rounded,filled\", fillcolor=\"#e8eef8\"" : "");
        for (int k = 0; k < 2; k++)
            if (x->src[k])
                fprintf(f, "  n%d -> n%d;\n", x->src[k]->id, x->id);
    }
    fprintf(f, "}\n");
    free(all);
}
