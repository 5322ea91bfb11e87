// The scheduler: which nodes share a loop (fusion), which values go to
// memory, in which order the kernels run, and how many bytes each moves.
//
// listing: schedule_rules
// The rules, in the order they are applied:
//   1. A matmul starts a kernel of its own (a GEMM), and so does a reduce
//      (a loop over the rows it reduces), and so does an elementwise value
//      that must be in memory: an output, a GEMM operand, the base of a view.
//   2. A kernel grows by its consumers while they fit its loops: a matmul
//      takes elementwise nodes of its m×n (its epilogue: bias, ReLU, the
//      optimizer's update of a weight from its gradient); a reduce takes
//      elementwise nodes of its full or reduced shape and the other reduces
//      over the same axis of the same shape (softmax's max and sum, the
//      loss's picked logit), so that they share one kernel.
//   3. Any other elementwise node is not stored but recomputed, inside each
//      kernel that uses it, from values in memory: reading its inputs costs
//      what reading it would, and its arithmetic is free next to memory.
//   4. A value goes to memory when a later kernel reads it (or it is an
//      output); everything else lives in registers within its kernel.
// end listing
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "lazy_kernel.h"

enum { PARALLEL_MIN = 32768 };

struct sched {
    const struct lazy_options *o;
    struct lazy_schedule *s;
    struct lazy_node **order;
    int count;
    int *pos;                   // node id → its index in order
    unsigned char *must;        // node id → 1: needs a kernel (rule 1)
    int *avail;                 // node id → k + 1 when known computable inside kernel k
    int *inl;                   // node id → k + 1 when kernel k already inlines it
    unsigned char *attributed;  // node id → its one-kernel-per-op cost is counted
    int capk;
    char *err;
    size_t errlen;
};

static int fail(struct sched *S, const char *msg, const struct lazy_node *n)
{
    char sh[64] = "";
    if (n)
        lazy_shape_str(n->ndim, n->shape, sh, sizeof sh);
    snprintf(S->err, S->errlen, "schedule: %s%s%s%s%s", msg, n ? " (" : "",
             n ? lazy_op_name(n->op) : "", n ? " " : "", n ? sh : "");
    if (n)
        strncat(S->err, ")", S->errlen - strlen(S->err) - 1);
    return -1;
}

static int is_elementwise(const struct lazy_node *n)
{
    return n->op >= LAZY_NEG && n->op <= LAZY_CMPGT;
}

static int is_reduce(const struct lazy_node *n)
{
    return n->op == LAZY_SUM || n->op == LAZY_RMAX;
}

static int computed(const struct lazy_node *n)
{
    return is_elementwise(n) || is_reduce(n) || n->op == LAZY_MATMUL;
}

static int same_shape(const struct lazy_node *n, int ndim, const int *shape)
{
    return n->ndim == ndim && !memcmp(n->shape, shape, sizeof(int) * (size_t)ndim);
}

static void contiguous(int ndim, const int *shape, long *strides)
{
    long st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = st;
        st *= shape[d];
    }
}

int lazy_gemm_operand(const struct lazy_node *n, int *trans, long *ld, long *offset)
{
    if (n->ndim != 2)
        return 0;
    int rows = n->shape[0], cols = n->shape[1];
    if (n->op != LAZY_VIEW) {
        *trans = 0;
        *ld = cols;
        *offset = 0;
        return 1;
    }
    // A dimension of length 1 may carry any stride: it is never stepped.
    long s0 = rows == 1 ? cols : n->strides[0], s1 = cols == 1 ? 1 : n->strides[1];
    *offset = n->offset;
    if (s1 == 1 && s0 >= cols) {
        *trans = 0;
        *ld = s0;
        return 1;
    }
    s0 = rows == 1 ? 1 : n->strides[0];
    s1 = cols == 1 ? rows : n->strides[1];
    if (s0 == 1 && s1 >= rows) {
        *trans = 1;
        *ld = s1;
        return 1;
    }
    return 0;
}

// The reduced ("outer") shape of a reduce kernel: its shape with axis 1.
static void outer_shape(const struct lazy_kernel *k, int *o)
{
    memcpy(o, k->shape, sizeof(int) * (size_t)k->ndim);
    o[k->axis] = 1;
}

// v, a view of a member of reduce kernel k, used by c: legal when it only
// broadcasts an outer-shaped member along the reduced axis, so that inside
// the loop over that axis the value is the same scalar.
static int broadcast_of_member(const struct lazy_kernel *k, const struct lazy_node *v,
                               const struct lazy_node *c)
{
    int o[LAZY_MAX_DIMS];
    long want[LAZY_MAX_DIMS];
    if (k->kind != KERNEL_REDUCE || !same_shape(c, k->ndim, k->shape) ||
        !same_shape(v, k->ndim, k->shape) || v->offset != 0)
        return 0;
    outer_shape(k, o);
    if (!same_shape(v->src[0], k->ndim, o))
        return 0;
    contiguous(k->ndim, o, want);
    for (int d = 0; d < k->ndim; d++) {
        if (d == k->axis ? v->strides[d] != 0 : (o[d] != 1 && v->strides[d] != want[d]))
            return 0;
    }
    return 1;
}

static int group_of(const struct sched *S, const struct lazy_node *n)
{
    return n->id < S->s->nslots ? S->s->group[n->id] : -1;
}

static int fits(const struct lazy_kernel *k, const struct lazy_node *c)
{
    int o[LAZY_MAX_DIMS];
    switch (k->kind) {
    case KERNEL_MATMUL:
    case KERNEL_ELEMENTWISE:
        return is_elementwise(c) && same_shape(c, k->ndim, k->shape);
    case KERNEL_REDUCE:
        outer_shape(k, o);
        if (is_reduce(c))
            return c->axis == k->axis && same_shape(c->src[0], k->ndim, k->shape);
        return is_elementwise(c) &&
               (same_shape(c, k->ndim, k->shape) || same_shape(c, k->ndim, o));
    }
    return 0;
}

static int inline_ok(struct sched *S, int k, const struct lazy_node *n);

// Can c, in kernel k (or inlined into it), read its input x?
static int can_use(struct sched *S, int k, const struct lazy_node *c, const struct lazy_node *x)
{
    if (x->op == LAZY_LOAD || x->op == LAZY_CONST)
        return 1;
    if (x->op == LAZY_VIEW) {
        const struct lazy_node *b = x->src[0];
        int g = group_of(S, b);
        if (b->op == LAZY_LOAD)
            return 1;
        if (g == k)
            return broadcast_of_member(&S->s->kernels[k], x, c);
        return g >= 0;  // an earlier kernel stores it; read through the view
    }
    int g = group_of(S, x);
    if (g == k) {
        // A reduce reads its input inside the loop over the full shape.
        const struct lazy_kernel *K = &S->s->kernels[k];
        return !is_reduce(c) || same_shape(x, K->ndim, K->shape);
    }
    if (g >= 0)
        return 1;
    return is_elementwise(x) && inline_ok(S, k, x);
}

// An elementwise node no kernel computes yet: can kernel k compute it from
// what it has (rule 3)?
static int inline_ok(struct sched *S, int k, const struct lazy_node *n)
{
    if (S->avail[n->id] == k + 1)
        return 1;
    for (int i = 0; i < 2; i++)
        if (n->src[i] && !can_use(S, k, n, n->src[i]))
            return 0;
    S->avail[n->id] = k + 1;
    return 1;
}

static int add_member(struct sched *S, int k, struct lazy_node *n)
{
    struct lazy_kernel *K = &S->s->kernels[k];
    struct lazy_node **m = realloc(K->members, sizeof *m * (size_t)(K->nmembers + 1));
    if (!m)
        return -1;
    K->members = m;
    K->members[K->nmembers++] = n;
    S->s->group[n->id] = k;
    return 0;
}

// listing: try_join
// Rule 2: c joins kernel k when it fits k's loops and can read each of its
// inputs there. An input that no kernel computes yet and that fits too (a
// second reduce over the same rows, say) is pulled in first.
static int try_join(struct sched *S, int k, struct lazy_node *c, int depth)
{
    // BEGIN SOLUTION task 9.3: join when c fits kernel k's loops and can read each input there; an input no kernel computes yet may join first (not a matmul)
    if (group_of(S, c) >= 0 || !fits(&S->s->kernels[k], c) || depth > 64)
        return 0;
    for (int i = 0; i < 2; i++) {
        struct lazy_node *x = c->src[i];
        if (!x || can_use(S, k, c, x))
            continue;
        if (!computed(x) || x->op == LAZY_MATMUL || !try_join(S, k, x, depth + 1) ||
            !can_use(S, k, c, x))
            return 0;
    }
    return add_member(S, k, c) == 0;
    // stub: (void)S; (void)k; (void)c; (void)depth; (void)fits;
    // stub: return 0;  // nothing joins: an epilogue or a second reduce is a kernel of its own
    // END SOLUTION
}
// end listing

static int touches(const struct sched *S, int k, const struct lazy_node *c)
{
    for (int i = 0; i < 2; i++) {
        const struct lazy_node *x = c->src[i];
        if (x && (group_of(S, x) == k || (x->op == LAZY_VIEW && group_of(S, x->src[0]) == k)))
            return 1;
    }
    return 0;
}

static void grow(struct sched *S, int k, int from)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = from + 1; i < S->count; i++) {
            struct lazy_node *c = S->order[i];
            if (computed(c) && group_of(S, c) < 0 && touches(S, k, c) && try_join(S, k, c, 0))
                changed = 1;
        }
    }
}

// 1 when member x of kernel k will be stored whatever becomes of c: it is
// needed in memory, or something outside k but c reads it.
static int stored_anyway(const struct sched *S, int k, const struct lazy_node *x,
                         const struct lazy_node *c)
{
    if (S->must[x->id])
        return 1;
    for (int i = 0; i < S->count; i++) {
        const struct lazy_node *y = S->order[i];
        if (y == c || group_of(S, y) == k)
            continue;
        for (int j = 0; j < 2; j++)
            if (y->src[j] == x && (y->op != LAZY_VIEW || S->s->kernels[k].kind != KERNEL_REDUCE))
                return 1;
    }
    return 0;
}

// After growing: a member no other member uses, that the kernel need not
// store and whose inputs here are stored anyway, is better recomputed by
// the kernels that use it (a ReLU's mask from the stored ReLU output) than
// stored here and read back.
static void prune(struct sched *S, int k)
{
    struct lazy_kernel *K = &S->s->kernels[k];
    for (int changed = 1; changed;) {
        changed = 0;
        for (int m = 1; m < K->nmembers; m++) {
            struct lazy_node *c = K->members[m];
            int keep = !is_elementwise(c) || S->must[c->id];
            for (int j = 0; !keep && j < K->nmembers; j++)
                for (int i = 0; i < 2; i++) {
                    const struct lazy_node *x = K->members[j]->src[i];
                    if (x && (x == c || (x->op == LAZY_VIEW && x->src[0] == c)))
                        keep = 1;
                }
            for (int i = 0; !keep && i < 2; i++) {
                const struct lazy_node *x = c->src[i];
                if (x && x->op == LAZY_VIEW)
                    x = x->src[0];
                if (x && group_of(S, x) == k && !stored_anyway(S, k, x, c))
                    keep = 1;
            }
            if (keep)
                continue;
            S->s->group[c->id] = -1;
            K->members[m] = K->members[--K->nmembers];
            changed = 1;
            break;
        }
    }
    // What inline_ok found available may have leant on a pruned member.
    memset(S->avail, 0, sizeof *S->avail * (size_t)S->s->nslots);
}

static int new_kernel(struct sched *S, struct lazy_node *n)
{
    struct lazy_schedule *s = S->s;
    if (s->nkernels == S->capk) {
        int cap = S->capk ? 2 * S->capk : 16;
        struct lazy_kernel *ks = realloc(s->kernels, sizeof *ks * (size_t)cap);
        if (!ks)
            return -1;
        s->kernels = ks;
        S->capk = cap;
    }
    int k = s->nkernels++;
    struct lazy_kernel *K = &s->kernels[k];
    memset(K, 0, sizeof *K);
    K->created = k;
    if (n->op == LAZY_MATMUL) {
        K->kind = KERNEL_MATMUL;
        K->matmul = n;
    } else if (is_reduce(n)) {
        K->kind = KERNEL_REDUCE;
        K->axis = n->axis;
    } else {
        K->kind = KERNEL_ELEMENTWISE;
    }
    const struct lazy_node *space = is_reduce(n) ? n->src[0] : n;
    K->ndim = space->ndim;
    memcpy(K->shape, space->shape, sizeof K->shape);
    if (add_member(S, k, n) != 0)
        return -1;
    return k;
}

int lazy_access(const struct lazy_schedule *s, const struct lazy_kernel *k,
                const struct lazy_node *n)
{
    if (n->op == LAZY_LOAD)
        return 'l';
    if (n->op == LAZY_CONST)
        return 'c';
    if (n->op == LAZY_VIEW)
        return 'v';
    int g = n->id < s->nslots ? s->group[n->id] : -1;
    if (g == k->created)
        return 'm';
    return g >= 0 && g < k->created ? 'l' : 'i';
}

// --- bytes --------------------------------------------------------------------

// Elements of its base a read through n touches: a view touches the product
// of its dimensions that move (stride ≠ 0), at most the whole base.
static long touched(const struct lazy_node *n)
{
    if (n->op != LAZY_VIEW)
        return n->op == LAZY_CONST ? 0 : n->size;
    long e = 1;
    for (int d = 0; d < n->ndim; d++)
        if (n->strides[d] != 0)
            e *= n->shape[d];
    return e < n->src[0]->size ? e : n->src[0]->size;
}

static const struct lazy_node *base_of(const struct lazy_node *n)
{
    return n->op == LAZY_VIEW ? n->src[0] : n;
}

// One kernel per op: n writes its value and reads each distinct input.
static long unfused_bytes(const struct lazy_node *n)
{
    long bytes = 4 * n->size;
    for (int i = 0; i < 2; i++) {
        const struct lazy_node *x = n->src[i];
        if (x && !(i == 1 && base_of(n->src[0]) == base_of(x)))
            bytes += 4 * touched(x);
    }
    return bytes;
}

static int add_arg(struct lazy_kernel *K, struct lazy_node *base, long elems, int view)
{
    for (int i = 0; i < K->nargs; i++)
        if (K->args[i] == base) {
            // The same buffer read twice (directly and through a view, say)
            // is counted once, as its larger read.
            if (elems > K->arg_elems[i]) {
                K->bytes_read += 4 * (elems - K->arg_elems[i]);
                K->arg_elems[i] = elems;
            }
            K->arg_view[i] |= (unsigned char)view;
            return 0;
        }
    struct lazy_node **a = realloc(K->args, sizeof *a * (size_t)(K->nargs + 1));
    if (a)
        K->args = a;
    long *e = realloc(K->arg_elems, sizeof *e * (size_t)(K->nargs + 1));
    if (e)
        K->arg_elems = e;
    unsigned char *v = realloc(K->arg_view, (size_t)K->nargs + 1);
    if (v)
        K->arg_view = v;
    if (!a || !e || !v)
        return -1;
    K->args[K->nargs] = base;
    K->arg_elems[K->nargs] = elems;
    K->arg_view[K->nargs] = (unsigned char)view;
    K->nargs++;
    K->bytes_read += 4 * elems;
    return 0;
}

// listing: visit
// Walks what kernel k reads, the way the code generator will: a load from
// memory (an input, or a value an earlier kernel stores, which is then
// marked stored), a view of one, or an expression recomputed inline here.
static int visit(struct sched *S, struct lazy_kernel *K, struct lazy_node *n)
{
    struct lazy_schedule *s = S->s;
    switch (lazy_access(s, K, n)) {
    case 'l':
        if (computed(n))
            s->stored[n->id] = 1;
        return add_arg(K, n, n->size, 0);
    case 'v': {
        struct lazy_node *b = n->src[0];
        if (group_of(S, b) == K->created)
            return 0;  // a member broadcast along the reduced axis
        if (computed(b))
            s->stored[b->id] = 1;
        return add_arg(K, b, touched(n), 1);
    }
    case 'i':
        if (!is_elementwise(n))
            return fail(S, "a reduce or matmul would be recomputed inline", n);
        if (S->inl[n->id] == K->created + 1)
            return 0;
        S->inl[n->id] = K->created + 1;
        if (!S->attributed[n->id]) {
            S->attributed[n->id] = 1;
            K->bytes_unfused += unfused_bytes(n);
        }
        for (int i = 0; i < 2; i++)
            if (n->src[i] && visit(S, K, n->src[i]) != 0)
                return -1;
        return 0;
    default:
        return 0;  // a member or a constant: already here
    }
}
// end listing

// --- the run order ---------------------------------------------------------------

static const struct lazy_output *output_into(const struct lazy_schedule *s, const struct lazy_node *n)
{
    for (int i = 0; i < s->noutputs; i++)
        if (s->outputs[i].node == n && s->outputs[i].into)
            return &s->outputs[i];
    return NULL;
}

// 1 when kernel r reads buffer b (an input's LOAD).
static int reads_buffer(const struct lazy_kernel *r, const struct lazy_buffer *b)
{
    for (int i = 0; i < r->ninputs; i++)
        if (r->args[i]->op == LAZY_LOAD && r->args[i]->buf == b)
            return 1;
    return 0;
}

// Kernel w writes output node n into buffer b, which it may read too: only
// element for element, as a plain load of n's own shape outside any GEMM
// operand. (Reading b[i] then writing b[i] is safe; reading b[j] is not.)
static int in_place_ok(const struct lazy_kernel *w, const struct lazy_node *n,
                       const struct lazy_buffer *b)
{
    if (w->matmul)
        for (int i = 0; i < 2; i++) {
            const struct lazy_node *x = base_of(w->matmul->src[i]);
            if (x->op == LAZY_LOAD && x->buf == b)
                return 0;
        }
    for (int i = 0; i < w->ninputs; i++) {
        const struct lazy_node *x = w->args[i];
        if (x->op == LAZY_LOAD && x->buf == b &&
            (w->arg_view[i] || !same_shape(x, n->ndim, n->shape)))
            return 0;
    }
    return 1;
}

// Kahn's algorithm over "must run before", preferring the order the
// kernels were made in.
static int order_kernels(struct sched *S)
{
    struct lazy_schedule *s = S->s;
    int n = s->nkernels;
    unsigned char *before = calloc((size_t)n * (size_t)n + 1, 1);  // before[a*n+b]: a before b
    int *indeg = calloc((size_t)n + 1, sizeof *indeg), *done = calloc((size_t)n + 1, sizeof *done);
    struct lazy_kernel *sorted = malloc(sizeof *sorted * (size_t)(n ? n : 1));
    if (!before || !indeg || !done || !sorted) {
        free(before);
        free(indeg);
        free(done);
        free(sorted);
        return fail(S, "out of memory", NULL);
    }
    for (int r = 0; r < n; r++) {
        struct lazy_kernel *R = &s->kernels[r];
        for (int i = 0; i < R->ninputs; i++) {
            int g = group_of(S, R->args[i]);
            if (g >= 0 && g != r)
                before[g * n + r] = 1;
        }
    }
    for (int w = 0; w < n; w++) {
        struct lazy_kernel *W = &s->kernels[w];
        for (int m = 0; m < W->nmembers; m++) {
            const struct lazy_output *out = output_into(s, W->members[m]);
            if (!out)
                continue;
            if (!in_place_ok(W, W->members[m], out->into)) {
                snprintf(S->err, S->errlen,
                         "schedule: kernel %d writes buffer %s in place but also reads it "
                         "at other elements; write the new value elsewhere", w,
                         out->into->name ? out->into->name : "?");
                free(before);
                free(indeg);
                free(done);
                free(sorted);
                return -1;
            }
            for (int r = 0; r < n; r++)
                if (r != w && reads_buffer(&s->kernels[r], out->into))
                    before[r * n + w] = 1;
        }
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            indeg[b] += before[a * n + b];
    int placed = 0;
    while (placed < n) {
        int pick = -1;
        for (int k = 0; k < n && pick < 0; k++)
            if (!done[k] && indeg[k] == 0)
                pick = k;
        if (pick < 0)
            break;
        done[pick] = 1;
        sorted[placed] = s->kernels[pick];
        sorted[placed].index = placed;
        placed++;
        for (int b = 0; b < n; b++)
            indeg[b] -= before[pick * n + b];
    }
    int status = 0;
    if (placed < n)
        status = fail(S, "no order runs: a buffer written in place is read after its "
                         "new value is", NULL);
    else
        memcpy(s->kernels, sorted, sizeof *sorted * (size_t)n);
    free(before);
    free(indeg);
    free(done);
    free(sorted);
    return status;
}

static void name_kernel(struct lazy_kernel *K)
{
    int at = snprintf(K->name, sizeof K->name, "k%02d", K->index);
    for (int m = 0; m < K->nmembers; m++) {
        const char *op = lazy_op_name(K->members[m]->op);
        int seen = 0;
        for (int j = 0; j < m && !seen; j++)
            seen = K->members[j]->op == K->members[m]->op;
        if (!seen && at + (int)strlen(op) + 2 < (int)sizeof K->name)
            at += snprintf(K->name + at, sizeof K->name - (size_t)at, "_%s", op);
    }
}

// --- the schedule -------------------------------------------------------------

static int by_id(const void *a, const void *b)
{
    const struct lazy_node *x = *(struct lazy_node *const *)a, *y = *(struct lazy_node *const *)b;
    return (x->id > y->id) - (x->id < y->id);
}

int lazy_schedule_make(struct lazy_schedule *s, int n, const struct lazy_output *outputs,
                       const struct lazy_options *o, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    struct sched S = {.o = o, .s = s, .err = err, .errlen = errlen};
    struct lazy_node **roots = malloc(sizeof *roots * (size_t)(n ? n : 1));
    if (!roots)
        return fail(&S, "out of memory", NULL);
    for (int i = 0; i < n; i++)
        roots[i] = outputs[i].node;
    S.count = lazy_toposort(roots, n, &S.order);
    free(roots);
    if (S.count < 0)
        return fail(&S, "out of memory", NULL);
    s->outputs = outputs;
    s->noutputs = n;
    s->nslots = S.count ? S.order[S.count - 1]->id + 1 : 1;
    size_t slots = (size_t)s->nslots;
    s->group = malloc(sizeof *s->group * slots);
    s->stored = calloc(slots, 1);
    S.pos = malloc(sizeof *S.pos * slots);
    S.must = calloc(slots, 1);
    S.avail = calloc(slots, sizeof *S.avail);
    S.inl = calloc(slots, sizeof *S.inl);
    S.attributed = calloc(slots, 1);
    int status = -1;
    if (!s->group || !s->stored || !S.pos || !S.must || !S.avail || !S.inl || !S.attributed) {
        fail(&S, "out of memory", NULL);
        goto out;
    }
    for (size_t i = 0; i < slots; i++)
        s->group[i] = -1;
    // Rule 1: what needs a kernel of its own.
    for (int i = 0; i < S.count; i++) {
        struct lazy_node *x = S.order[i];
        S.pos[x->id] = i;
        if (x->op == LAZY_RESHAPE || x->op == LAZY_EXPAND || x->op == LAZY_PERMUTE ||
            x->op == LAZY_DETACH) {
            fail(&S, "an op the rewrites should have removed", x);
            goto out;
        }
        if (x->op == LAZY_VIEW && computed(x->src[0]))
            S.must[x->src[0]->id] = 1;
        if (x->op == LAZY_MATMUL)
            for (int k = 0; k < 2; k++) {
                int trans;
                long ld, off;
                const struct lazy_node *b = base_of(x->src[k]);
                if (!lazy_gemm_operand(x->src[k], &trans, &ld, &off)) {
                    fail(&S, "a matmul operand gemm() cannot read in place", x->src[k]);
                    goto out;
                }
                if (computed(b))
                    S.must[b->id] = s->stored[b->id] = 1;
            }
    }
    for (int i = 0; i < n; i++) {
        if (!computed(outputs[i].node)) {
            fail(&S, "an output that computes nothing (wrap it in lazy_copy)", outputs[i].node);
            goto out;
        }
        S.must[outputs[i].node->id] = s->stored[outputs[i].node->id] = 1;
    }
    // listing: schedule_loop
    // Rules 1 and 2, in topological order: a kernel is made for each node
    // that needs one and no earlier kernel took, and grows by its consumers.
    // With no_fusion, every node is a kernel of one op.
    for (int i = 0; i < S.count; i++) {
        struct lazy_node *x = S.order[i];
        if (!computed(x) || group_of(&S, x) >= 0)
            continue;
        if (!o->no_fusion && is_elementwise(x) && !S.must[x->id])
            continue;  // rule 3: recomputed wherever it is used
        int k = new_kernel(&S, x);
        if (k < 0) {
            fail(&S, "out of memory", NULL);
            goto out;
        }
        if (!o->no_fusion) {
            grow(&S, k, i);
            prune(&S, k);
        }
    }
    // end listing
    // Members in topological order, for the code generator.
    for (int k = 0; k < s->nkernels; k++)
        qsort(s->kernels[k].members, (size_t)s->kernels[k].nmembers,
              sizeof *s->kernels[k].members, by_id);
    // Rule 4, and what each kernel reads: its inputs come first in its
    // argument list, then the members it stores.
    for (int k = 0; k < s->nkernels; k++) {
        struct lazy_kernel *K = &s->kernels[k];
        for (int m = 0; m < K->nmembers; m++) {
            struct lazy_node *x = K->members[m];
            S.attributed[x->id] = 1;
            K->bytes_unfused += unfused_bytes(x);
            for (int j = 0; j < 2; j++)
                if (x->src[j] && visit(&S, K, x->src[j]) != 0)
                    goto out;
        }
        K->ninputs = K->nargs;
    }
    for (int k = 0; k < s->nkernels; k++) {
        struct lazy_kernel *K = &s->kernels[k];
        for (int m = 0; m < K->nmembers; m++) {
            struct lazy_node *x = K->members[m];
            if (!s->stored[x->id])
                continue;
            struct lazy_node **a = realloc(K->args, sizeof *a * (size_t)(K->nargs + 1));
            if (!a) {
                fail(&S, "out of memory", NULL);
                goto out;
            }
            K->args = a;
            K->args[K->nargs++] = x;
            K->bytes_written += 4 * x->size;
        }
        if (K->nargs == K->ninputs) {
            fail(&S, "a kernel that stores nothing", K->members[0]);
            goto out;
        }
        // listing: parallel_rule
        // A kernel shares its rows among the threads when it has at least
        // PARALLEL_MIN elements: below that, starting the threads costs
        // more than they save. A reduce kernel needs rows before its axis,
        // and arrays small enough for each thread to have its own.
        long elems = 1, after = 1;
        for (int d = 0; d < K->ndim; d++)
            elems *= K->shape[d];
        for (int d = K->axis + 1; K->kind == KERNEL_REDUCE && d < K->ndim; d++)
            after *= K->shape[d];
        K->parallel = !o->serial && elems >= PARALLEL_MIN &&
                      (K->kind != KERNEL_REDUCE || (K->axis > 0 && after <= 1024));
        // end listing
        if (K->kind == KERNEL_MATMUL) {
            // listing: panels
            // One gemm() call for the whole product, its epilogue after it;
            // or, with panel_bytes, a call per panel of rows, each panel's
            // epilogue right after its GEMM, while the panel is in cache (but
            // each call packs op(B) again: chapter 10 measures both). A
            // product the kernel does not store lives in a scratch panel:
            // when that is larger than half of L2 it is written to memory
            // and read back, and counted so.
            long rows = K->shape[0], cols = K->shape[1], l2 = cpu_caches().l2;
            K->panel_rows = rows;
            if (K->nmembers > 1 && o->panel_bytes > 0) {
                K->panel_rows = o->panel_bytes / (4 * cols);
                K->panel_rows = K->panel_rows < 1 ? 1 : K->panel_rows > rows ? rows : K->panel_rows;
            }
            if (K->nmembers > 1 && !s->stored[K->matmul->id] &&
                4 * K->panel_rows * cols > l2 / 2) {
                K->bytes_written += 4 * rows * cols;
                K->bytes_read += 4 * rows * cols;
            }
            // end listing
        }
    }
    if (order_kernels(&S) != 0)
        goto out;
    // The kernels moved; group[] keeps the index they were made with,
    // which lazy_access compares against each kernel's `created`.
    for (int k = 0; k < s->nkernels; k++)
        name_kernel(&s->kernels[k]);
    for (int i = 0; i < S.count; i++)
        if (computed(S.order[i]))
            s->bytes_unfused += unfused_bytes(S.order[i]);
    for (int i = 0; i < S.count; i++)
        if (S.order[i]->op == LAZY_LOAD)
            s->bytes_floor += 4 * S.order[i]->size;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = outputs[j].node == outputs[i].node;
        if (!seen)
            s->bytes_floor += 4 * outputs[i].node->size;
    }
    status = 0;
out:
    free(S.order);
    free(S.pos);
    free(S.must);
    free(S.avail);
    free(S.inl);
    free(S.attributed);
    if (status != 0)
        lazy_schedule_free(s);
    return status;
}

void lazy_schedule_free(struct lazy_schedule *s)
{
    for (int k = 0; k < s->nkernels; k++) {
        free(s->kernels[k].members);
        free(s->kernels[k].args);
        free(s->kernels[k].arg_elems);
        free(s->kernels[k].arg_view);
        free(s->kernels[k].source);
    }
    free(s->kernels);
    free(s->group);
    free(s->stored);
    memset(s, 0, sizeof *s);
}
