#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "tape.h"

// 1 MiB blocks: a small model's step fits in one, a large one takes a few.
static const size_t FIRST_BLOCK = (size_t)1 << 20;

struct tape {
    struct arena *arena;
    struct tape_config config;
    struct tape_node *last;  // the most recent node; each points to the one before
    int nodes;
    int recording;
    int walked;  // tape_backward has run since the last clear
    char error[256];
};

struct tape_config tape_config_default(void)
{
    return (struct tape_config){.gemm = NULL, .conv = CONV_AUTO, .isa = isa_active()};
}

struct tape *tape_new(const struct tape_config *config)
{
    struct tape_config c = config ? *config : tape_config_default();
    if (!isa_supported(c.isa))
        return NULL;
    if (!c.gemm)
        c.gemm = gemm_backend_find("auto");
    struct tape *t = arena_heap_alloc(sizeof *t);
    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    t->arena = arena_create(FIRST_BLOCK);
    if (!t->arena) {
        arena_heap_free(t);
        return NULL;
    }
    t->config = c;
    t->recording = 1;
    return t;
}

void tape_free(struct tape *t)
{
    if (!t)
        return;
    arena_destroy(t->arena);
    arena_heap_free(t);
}

void tape_clear(struct tape *t)
{
    arena_reset(t->arena);
    t->last = NULL;
    t->nodes = 0;
    t->walked = 0;
    t->error[0] = '\0';
}

int tape_set_recording(struct tape *t, int on)
{
    int was = t->recording;
    t->recording = on != 0;
    return was;
}

int tape_recording(const struct tape *t)
{
    return t->recording;
}

const char *tape_error(const struct tape *t)
{
    return t->error;
}

int tape_failed(const struct tape *t)
{
    return t->error[0] != '\0';
}

const struct tape_config *tape_config(const struct tape *t)
{
    return &t->config;
}

struct arena *tape_arena(struct tape *t)
{
    return t->arena;
}

int tape_node_count(const struct tape *t)
{
    return t->nodes;
}

void *tape_fail(struct tape *t, const char *fmt, ...)
{
    if (t->error[0] != '\0')
        return NULL;  // the first error is the one that explains the rest
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->error, sizeof t->error, fmt, ap);
    va_end(ap);
    return NULL;
}

// Step tensors: a struct and its floats from the arena.
struct tensor *tensor_new(struct tape *t, int ndim, const int *shape)
{
    if (!t)
        return NULL;
    long size = tensor_shape_size(ndim, shape);
    if (size < 0) {
        tape_fail(t, "tensor: a shape needs 1 to %d dimensions, each at least 1", TENSOR_MAX_DIMS);
        return NULL;
    }
    struct tensor *x = arena_alloc(t->arena, sizeof *x);
    float *data = arena_alloc(t->arena, sizeof(float) * (size_t)size);
    if (!x || !data) {
        tape_fail(t, "tensor: out of memory for %ld floats", size);
        return NULL;
    }
    tensor_set_shape(x, ndim, shape, size);
    x->data = data;
    return x;
}

struct tensor *tensor_from(struct tape *t, int ndim, const int *shape, const float *values,
                           long count)
{
    struct tensor *x = tensor_new(t, ndim, shape);
    if (!x)
        return NULL;
    if (!values || count != x->size) {
        tape_fail(t, "tensor: %ld values given for a tensor of %ld", count, x->size);
        return NULL;
    }
    memcpy(x->data, values, sizeof(float) * (size_t)count);
    return x;
}

struct tensor *tensor_view(struct tape *t, const struct tensor *x, int ndim, const int *shape)
{
    struct tensor *v = arena_alloc(t->arena, sizeof *v);
    if (!v)
        return tape_fail(t, "tensor: out of memory for a view");
    tensor_set_shape(v, ndim, shape, x->size);
    v->data = x->data;
    return v;
}

struct tensor *tape_output(struct tape *t, int ndim, const int *shape, const struct tensor *a,
                           const struct tensor *b)
{
    struct tensor *out = tensor_new(t, ndim, shape);
    if (out)
        out->requires_grad =
            t->recording && ((a && a->requires_grad) || (b && b->requires_grad));
    return out;
}

// listing: tape_record
struct tape_node *tape_record(struct tape *t, const char *op, tape_backward_fn *backward,
                              struct tensor *out, struct tensor *a, struct tensor *b)
{
    struct tape_node *n = arena_alloc(t->arena, sizeof *n);
    if (!n)
        return tape_fail(t, "%s: out of memory for the tape", op);
    memset(n, 0, sizeof *n);
    n->op = op;
    n->backward = backward;
    n->out = out;
    n->in[0] = a;
    n->in[1] = b;
    n->prev = t->last;
    t->last = n;
    t->nodes++;
    return n;
}
// end listing

int tape_gemm(struct tape *t, const char *op, enum gemm_trans ta, enum gemm_trans tb, int m,
              int n, int k, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc)
{
    const struct gemm_backend *be = t->config.gemm;
    if (be->run(ta, tb, m, n, k, 1.0f, A, lda, B, ldb, beta, C, ldc) != 0) {
        tape_fail(t, "%s: the %s GEMM backend ran out of memory", op, be->name);
        return -1;
    }
    return 0;
}

float *tape_grad(struct tape *t, struct tensor *x)
{
    if (!x->grad)
        x->grad = arena_calloc(t->arena, sizeof(float) * (size_t)x->size);
    if (!x->grad)
        tape_fail(t, "backward: out of memory for a gradient of %ld floats", x->size);
    return x->grad;
}

static int recorded(const struct tape *t, const struct tensor *x)
{
    // BEGIN SOLUTION task 6.4: is x the output of one of the tape's nodes? Look from the last
    for (const struct tape_node *n = t->last; n; n = n->prev)
        if (n->out == x)
            return 1;
    return 0;
    // stub: (void)t; (void)x;
    // stub: return 1;
    // END SOLUTION
}

int tape_backward(struct tape *t, struct tensor *loss)
{
    if (tape_failed(t))
        return -1;  // the forward already failed: its message stands
    if (!loss) {
        tape_fail(t, "backward: no loss (the forward returned NULL)");
        return -1;
    }
    if (t->walked) {
        tape_fail(t, "backward: this tape was already walked; call tape_clear and run the "
                     "forward again");
        return -1;
    }
    char shape[64];
    tensor_shape_str(loss, shape, sizeof shape);
    if (loss->size != 1) {
        tape_fail(t, "backward: the loss must be one number, not a %s tensor (take its sum "
                     "or mean)", shape);
        return -1;
    }
    if (!isfinite(loss->data[0])) {
        tape_fail(t, "backward: the loss is %s", isnan(loss->data[0]) ? "NaN" : "infinite");
        return -1;
    }
    if (!loss->requires_grad || !recorded(t, loss)) {
        tape_fail(t, "backward: the loss was not recorded on this tape (was recording off, "
                     "or does it depend on no parameter?)");
        return -1;
    }
    t->walked = 1;
    float *seed = tape_grad(t, loss);
    if (!seed)
        return -1;
    seed[0] = 1.0f;  // ∂loss/∂loss
    // listing: reverse_walk
    // BEGIN SOLUTION task 6.4: walk the nodes from the last to the first, calling each backward
    // Newest first: when a node runs, every node that used its output has
    // already added its share into out->grad. A node whose output got no
    // gradient (it does not lead to the loss) has nothing to pass on.
    for (struct tape_node *n = t->last; n; n = n->prev) {
        if (!n->out->grad)
            continue;
        if (n->backward(t, n) != 0)
            return -1;
    }
    // END SOLUTION
    // end listing
    return 0;
}

// Tensors are numbered in the order the walk from the newest node meets them,
// so the same tape gives the same file on every run.
enum { DOT_MAX_TENSORS = 512 };

static int dot_tensor(FILE *f, const struct tensor **seen, int *count, const struct tensor *x)
{
    for (int i = 0; i < *count; i++)
        if (seen[i] == x)
            return i;
    if (*count == DOT_MAX_TENSORS)
        return -1;
    seen[*count] = x;
    char shape[64];
    tensor_shape_str(x, shape, sizeof shape);
    const char *kind = x->owned ? "param " : !x->requires_grad ? "input " : "";
    const char *style = x->owned ? ", style=filled, fillcolor=\"#dde8f5\"" : "";
    fprintf(f, "  t%d [shape=ellipse, label=\"%s%s\"%s];\n", *count, kind, shape, style);
    return (*count)++;
}

int tape_write_dot(const struct tape *t, FILE *f)
{
    const struct tensor *seen[DOT_MAX_TENSORS];
    int count = 0, k = t->nodes;
    fprintf(f, "digraph tape {\n  rankdir=TB;\n  node [fontname=\"sans\", fontsize=11];\n");
    // BEGIN SOLUTION task 6.4: the same walk as the backward's, writing each node and its edges
    for (const struct tape_node *n = t->last; n; n = n->prev, k--) {
        fprintf(f, "  n%d [shape=box, style=\"rounded,filled\", fillcolor=\"#f5e6c8\", "
                   "label=\"%d: %s\"];\n", k, k, n->op);
        int out = dot_tensor(f, seen, &count, n->out);
        if (out < 0)
            return -1;
        fprintf(f, "  n%d -> t%d;\n", k, out);
        for (int i = 0; i < 3; i++) {
            if (!n->in[i])
                continue;
            int in = dot_tensor(f, seen, &count, n->in[i]);
            if (in < 0)
                return -1;
            fprintf(f, "  t%d -> n%d;\n", in, k);
        }
    }
    // stub: (void)t; (void)seen; (void)count; (void)k; (void)dot_tensor;
    // END SOLUTION
    fprintf(f, "}\n");
    return ferror(f) ? -1 : 0;
}
