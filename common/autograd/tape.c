#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "memory.h"
#include "plan.h"
#include "tape.h"

// What the planner knows of a step tensor (MEMORY_PLANNED): its buffers
// (memory.h; a view's data is its base's buffer), the node that made it,
// and whether the caller reads it after the step.
struct step_tensor {
    int data, grad;  // -1: none yet
    int node;        // its node's seq; -1: a leaf, or an op that recorded none
    int kept;        // made by the caller (tensor_new, tensor_from), or tape_keep
    const char *op;  // its node's op, to name its gradient in the lifetimes
};

struct tape {
    struct memory *mem;
    struct tape_config config;
    struct tape_node *last;  // the most recent node; each points to the one before
    int nodes;
    int recording;
    int walked;  // tape_backward has run since the last clear
    // MEMORY_PLANNED: the step's tensors, the first buffer of the op running
    // now, the tensor the latest op made, the tick the backward began at.
    struct step_tensor *tensors;
    int ntensors, cap;
    int op_first;
    int newest;
    int backward_tick;
    char error[256];
};

static const char *const memory_names[] = {"arena", "planned"};

const char *tape_memory_name(enum memory_mode m)
{
    return m == MEMORY_ARENA || m == MEMORY_PLANNED ? memory_names[m] : "unknown";
}

struct tape_config tape_config_default(void)
{
    struct gemm_context kernels = gemm_context_default();
    return (struct tape_config){.gemm = NULL,
                                .kernels = kernels,
                                .conv = NULL,
                                .isa = kernels.kernel.isa,
                                .memory = MEMORY_PLANNED,
                                .fused_pools = -1};
}

void tape_config_set_isa(struct tape_config *c, enum isa isa)
{
    c->kernels.kernel = gemm_context_for(isa).kernel;
    c->isa = isa;
}

struct tape *tape_new(const struct tape_config *config)
{
    struct tape_config c = config ? *config : tape_config_default();
    if (!isa_supported(c.isa) || !isa_supported(c.kernels.kernel.isa) || !c.kernels.kernel.run ||
        (c.memory != MEMORY_ARENA && c.memory != MEMORY_PLANNED) || c.fused_pools < -1)
        return NULL;
    if (!c.gemm)
        c.gemm = gemm_backend_find("auto");
    struct tape *t = arena_heap_alloc(sizeof *t);
    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    t->mem = memory_new(c.memory);
    if (!t->mem) {
        arena_heap_free(t);
        return NULL;
    }
    t->config = c;
    t->recording = 1;
    t->newest = -1;
    return t;
}

void tape_free(struct tape *t)
{
    if (!t)
        return;
    memory_free(t->mem);
    arena_heap_free(t->tensors);
    arena_heap_free(t);
}

static int planned(const struct tape *t)
{
    return t->config.memory == MEMORY_PLANNED;
}

void tape_clear(struct tape *t)
{
    // The last op's output is the step's result: the caller may read it.
    if (planned(t) && t->newest >= 0)
        memory_hold(t->mem, t->tensors[t->newest].data);
    // Out of memory for a new plan: the old one stays, and the steps it
    // does not fit go on the heap, as the first did.
    memory_clear(t->mem);
    t->last = NULL;
    t->nodes = 0;
    t->walked = 0;
    t->ntensors = 0;
    t->op_first = 0;
    t->newest = -1;
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
    return memory_arena(t->mem);
}

int tape_node_count(const struct tape *t)
{
    return t->nodes;
}

size_t tape_live_bytes(const struct tape *t)
{
    return memory_live(t->mem);
}

size_t tape_reserved_bytes(const struct tape *t)
{
    return memory_reserved(t->mem) + sizeof(struct step_tensor) * (size_t)t->cap;
}

int tape_fit(struct tape *t)
{
    return planned(t) ? 0 : arena_fit(memory_arena(t->mem));
}

int tape_write_lifetimes(const struct tape *t, FILE *f)
{
    return memory_write(t->mem, f);
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

// --- the planner's view of the step -------------------------------------------

static void *alloc(struct tape *t, enum buffer_kind kind, size_t bytes, int *id)
{
    return memory_alloc(t->mem, kind, bytes, t->recording, id);
}

// A new moment: an op begins (or the caller makes a tensor).
static void op_start(struct tape *t)
{
    memory_tick(t->mem);
    t->op_first = memory_count(t->mem);
}

static int add_tensor(struct tape *t, struct tensor *x, int data, int kept)
{
    if (!planned(t))
        return 0;
    if (t->ntensors == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        struct step_tensor *more = arena_heap_alloc(sizeof *more * (size_t)cap);
        if (!more)
            return -1;
        if (t->ntensors)
            memcpy(more, t->tensors, sizeof *more * (size_t)t->ntensors);
        arena_heap_free(t->tensors);
        t->tensors = more;
        t->cap = cap;
    }
    t->tensors[t->ntensors] = (struct step_tensor){data, -1, -1, kept, ""};
    x->id = t->ntensors++;
    if (kept)
        memory_hold(t->mem, data);
    return 0;
}

// x's data is read at tick `when`. 0, or -1 with the error set.
static int reads(struct tape *t, const struct tensor *x, int when)
{
    if (!x || x->id < 0)
        return 0;  // a parameter, or no input
    if (memory_use(t->mem, t->tensors[x->id].data, when) == 0)
        return 0;
    char sx[64];
    tensor_shape_str(x, sx, sizeof sx);
    tape_fail(t, "tape: a %s tensor is read after its planned memory went to another tensor "
                 "(this step reads it later than the steps the plan was made from, or after "
                 "tape_done; "
                 "tape_keep keeps a tensor to the end of the step)", sx);
    return -1;
}

int tape_use(struct tape *t, const struct tensor *x)
{
    return reads(t, x, memory_now(t->mem));
}

void tape_keep(struct tape *t, struct tensor *x)
{
    if (!x || x->id < 0)
        return;
    struct step_tensor *s = &t->tensors[x->id];
    s->kept = 1;
    if (reads(t, x, PLAN_END) == 0 && s->grad >= 0)
        memory_hold(t->mem, s->grad);
}

// Does a recorded node's backward read buffer `data`?
static int backward_reads(const struct tape *t, int data)
{
    const struct tape_node *n = t->last;
    while (n != NULL) {
        // NEEDS_IN0, IN1, IN2 and OUT are bits 0 to 3, in this order.
        const struct tensor *read[4] = {n->in[0], n->in[1], n->in[2], n->out};
        for (int i = 0; i < 4; i++)
            if ((n->needs >> i & 1) && read[i] && read[i]->id >= 0 &&
                t->tensors[read[i]->id].data == data)
                return 1;
        n = n->prev;
    }
    return 0;
}

void tape_done(struct tape *t, struct tensor *x)
{
    if (!planned(t) || !x || x->id < 0)
        return;
    const struct step_tensor *s = &t->tensors[x->id];
    if (s->kept || s->data < 0 || backward_reads(t, s->data))
        return;
    memory_done(t->mem, s->data);
}

// The tick at which the backward of node number seq runs: the walk takes
// one per node, newest first, after the tick that seeds the loss's gradient.
static int node_tick(const struct tape *t, int seq)
{
    return t->backward_tick + (t->nodes - seq);
}

// A tensor and its floats. kept: made by the caller, who may read it to
// the end of the step.
static struct tensor *new_tensor(struct tape *t, int ndim, const int *shape, int kept)
{
    long size = tensor_shape_size(ndim, shape);
    if (size < 0) {
        tape_fail(t, "tensor: a shape needs 1 to %d dimensions, each at least 1", TENSOR_MAX_DIMS);
        return NULL;
    }
    int record, data;
    struct tensor *x = alloc(t, BUFFER_RECORD, sizeof *x, &record);
    float *floats = x ? alloc(t, BUFFER_VALUE, sizeof(float) * (size_t)size, &data) : NULL;
    if (!x || !floats) {
        tape_fail(t, "tensor: out of memory for %ld floats", size);
        return NULL;
    }
    memory_hold(t->mem, record);
    tensor_set_shape(x, ndim, shape, size);
    x->data = floats;
    if (add_tensor(t, x, data, kept) != 0) {
        tape_fail(t, "tensor: out of memory for the tape's table of tensors");
        return NULL;
    }
    return x;
}

// Step tensors made by the caller.
struct tensor *tensor_new(struct tape *t, int ndim, const int *shape)
{
    if (!t)
        return NULL;
    op_start(t);
    return new_tensor(t, ndim, shape, 1);
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
    op_start(t);
    if (reads(t, x, memory_now(t->mem)) != 0)
        return NULL;
    int record;
    struct tensor *v = alloc(t, BUFFER_RECORD, sizeof *v, &record);
    if (!v)
        return tape_fail(t, "tensor: out of memory for a view");
    memory_hold(t->mem, record);
    tensor_set_shape(v, ndim, shape, x->size);
    v->data = x->data;
    // A view of a parameter shares no step buffer (-1), but its gradient is
    // a step buffer all the same.
    if (add_tensor(t, v, x->id >= 0 ? t->tensors[x->id].data : -1, 0) != 0)
        return tape_fail(t, "tensor: out of memory for the tape's table of tensors");
    if (v->id >= 0)
        t->newest = v->id;
    return v;
}

struct tensor *tape_output(struct tape *t, int ndim, const int *shape, const struct tensor *a,
                           const struct tensor *b)
{
    op_start(t);
    if (reads(t, a, memory_now(t->mem)) != 0 || reads(t, b, memory_now(t->mem)) != 0)
        return NULL;
    struct tensor *out = new_tensor(t, ndim, shape, 0);
    if (!out)
        return NULL;
    out->requires_grad = t->recording && ((a && a->requires_grad) || (b && b->requires_grad));
    if (out->id >= 0)
        t->newest = out->id;
    return out;
}

void *tape_scratch(struct tape *t, size_t bytes)
{
    int id;
    return alloc(t, BUFFER_SCRATCH, bytes, &id);
}

void *tape_save(struct tape *t, size_t bytes)
{
    int id;
    return alloc(t, BUFFER_SAVED, bytes, &id);
}

// listing: tape_record
struct tape_node *tape_record(struct tape *t, const char *op, tape_backward_fn *backward,
                              struct tensor *out, struct tensor *a, struct tensor *b)
{
    int record;
    struct tape_node *n = alloc(t, BUFFER_RECORD, sizeof *n, &record);
    if (!n)
        return tape_fail(t, "%s: out of memory for the tape", op);
    memory_hold(t->mem, record);
    memset(n, 0, sizeof *n);
    n->op = op;
    n->backward = backward;
    n->out = out;
    n->in[0] = a;
    n->in[1] = b;
    n->prev = t->last;
    n->needs = NEEDS_IN0 | NEEDS_IN1 | NEEDS_IN2 | NEEDS_OUT;
    n->seq = t->nodes;
    n->first_buffer = t->op_first;
    n->end_buffer = memory_count(t->mem);
    t->last = n;
    t->nodes++;
    if (out->id >= 0) {
        t->tensors[out->id].node = n->seq;
        t->tensors[out->id].op = op;
    }
    // What the op saved waits for this node's backward.
    for (int id = n->end_buffer - 1; id >= n->first_buffer; id--)
        memory_own(t->mem, id);
    memory_name(t->mem, n->first_buffer, n->end_buffer, op);
    return n;
}
// end listing

// listing: tape_op
struct tensor *tape_op_open(struct tape *t, const struct tape_op *op, int ndim, const int *shape)
{
    struct tensor *out = tape_output(t, ndim, shape, op->in[0], op->in[1]);
    if (!out || tape_use(t, op->in[2]) != 0)
        return NULL;
    if (t->recording && op->in[2] && op->in[2]->requires_grad)
        out->requires_grad = 1;
    return out;
}

struct tensor *tape_op_close(struct tape *t, const struct tape_op *op, struct tensor *out)
{
    if (!out || !out->requires_grad)
        return out;
    struct tape_node *n = tape_record(t, op->name, op->backward, out, op->in[0], op->in[1]);
    if (!n)
        return NULL;
    n->in[2] = op->in[2];
    n->scalar = op->scalar;
    n->ints = op->ints;
    n->saved = op->saved;
    n->needs = op->needs;
    return out;
}
// end listing

int tape_gemm(struct tape *t, const char *op, enum gemm_trans ta, enum gemm_trans tb, int m,
              int n, int k, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc)
{
    const struct gemm_backend *be = t->config.gemm;
    if (be->run(&t->config.kernels, ta, tb, m, n, k, 1.0f, A, lda, B, ldb, beta, C, ldc) != 0) {
        tape_fail(t, "%s: the %s GEMM backend ran out of memory", op, be->name);
        return -1;
    }
    return 0;
}

// listing: tape_grad
// A new gradient's floats are undefined, so is a parameter's forgotten one:
// the first contribution writes it (*beta = 0), the others add. With
// planned memory a step tensor's gradient dies once the node that made the
// tensor has run: that node is the last to read it (it turns it into its
// inputs' gradients). A tensor no node made (the caller's, or one of an op
// that recorded none) keeps it.
float *tape_grad_write(struct tape *t, struct tensor *x, float *beta)
{
    *beta = 1.0f;
    if (x->grad && x->grad_forgotten) {
        x->grad_forgotten = 0;
        *beta = 0.0f;
    } else if (x->grad) {
        if (x->id >= 0 && memory_use(t->mem, t->tensors[x->id].grad, memory_now(t->mem)) != 0)
            return tape_fail(t, "backward: a gradient's memory went to another tensor");
        return x->grad;
    } else {
        int id;
        x->grad = alloc(t, BUFFER_GRAD, sizeof(float) * (size_t)x->size, &id);
        if (!x->grad)
            return tape_fail(t, "backward: out of memory for a gradient of %ld floats", x->size);
        *beta = 0.0f;
        if (x->id >= 0) {
            struct step_tensor *s = &t->tensors[x->id];
            s->grad = id;
            memory_name(t->mem, id, id + 1, s->op);
            int held = s->node < 0 || s->kept;
            if ((held ? memory_hold(t->mem, id)
                      : memory_use(t->mem, id, node_tick(t, s->node))) != 0)
                return tape_fail(t, "backward: a gradient's memory went to another tensor");
        }
    }
    if (t->config.accumulate) {
        memset(x->grad, 0, sizeof(float) * (size_t)x->size);
        *beta = 1.0f;
    }
    return x->grad;
}
// end listing

// For the loops that add: the first contribution adds into zeros.
float *tape_grad(struct tape *t, struct tensor *x)
{
    float beta;
    float *g = tape_grad_write(t, x, &beta);
    if (g && beta == 0.0f)
        memset(g, 0, sizeof(float) * (size_t)x->size);
    return g;
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

// listing: last_uses
// Before the walk the tape knows every read the backward will make: node n,
// at its tick, reads the data its needs name and what its op saved (its own
// output's gradient too, but gradients are born during the walk, and
// tape_grad dates their deaths). Each read moves that buffer's last use
// later; a value no backward reads died at its last forward read. The loss,
// read by the caller after the step, lives to the end.
static int last_uses(struct tape *t, struct tensor *loss)
{
    int status = 0;
    // BEGIN SOLUTION task 6.5: each node, at node_tick(), reads the data of the tensors its needs name and its op's saved buffers
    for (struct tape_node *n = t->last; n; n = n->prev) {
        int when = node_tick(t, n->seq);
        for (int i = 0; i < 3; i++)
            if (n->needs & (NEEDS_IN0 << i))
                status |= reads(t, n->in[i], when);
        if (n->needs & NEEDS_OUT)
            status |= reads(t, n->out, when);
        for (int id = n->first_buffer; id < n->end_buffer; id++)
            if (memory_kind(t->mem, id) == BUFFER_SAVED)
                status |= memory_use(t->mem, id, when);
    }
    // stub: // Every buffer to the end of the step, as in the arena: right, and no saving.
    // stub: for (int id = 0; id < memory_count(t->mem); id++)
    // stub:     status |= memory_hold(t->mem, id);
    // END SOLUTION
    status |= reads(t, loss, PLAN_END);
    if (t->newest >= 0)
        status |= memory_hold(t->mem, t->tensors[t->newest].data);
    memory_settle(t->mem);
    return status ? -1 : 0;
}
// end listing

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
    memory_tick(t->mem);  // the seed's moment
    t->backward_tick = memory_now(t->mem);
    if (planned(t) && last_uses(t, loss) != 0)
        return -1;
    float *seed = tape_grad(t, loss);
    if (!seed)
        return -1;
    seed[0] = 1.0f;  // ∂loss/∂loss
    // listing: reverse_walk
    // BEGIN SOLUTION task 6.4: walk the nodes from the last to the first, calling each backward; each node, run or skipped, first moves the step's clock: memory_tick(t->mem)
    // Newest first: when a node runs, every node that used its output has
    // already added its share into out->grad. A node whose output got no
    // gradient (it does not lead to the loss) has nothing to pass on.
    for (struct tape_node *n = t->last; n; n = n->prev) {
        memory_tick(t->mem);  // the node's moment (the planner's clock)
        if (!n->out->grad)
            continue;
        if (n->backward(t, n) != 0)
            return -1;
    }
    // END SOLUTION
    // end listing
    memory_tick(t->mem);  // what the last node read is dead now
    // The step's lifetimes are known: when they did not fit the plan, the
    // next plan and its block are made now, so the next step calls no malloc.
    if (memory_replan(t->mem) != 0) {
        tape_fail(t, "backward: out of memory for the memory plan of the next steps");
        return -1;
    }
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
