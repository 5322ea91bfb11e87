// A program: the outputs of a graph, rewritten, scheduled, generated,
// compiled and loaded once; then run as often as the caller likes, each run
// reading the loaded buffers' current contents.
#include <stdlib.h>
#include <string.h>

#include "lazy_kernel.h"
#include "timer.h"

struct lazy_program {
    struct lazy_schedule s;
    struct lazy_output *outputs;
    int noutputs;
    float **memory;                 // node id → the program's own buffer, or NULL
    float ***argv;                  // per kernel: its argument pointers
    const struct gemm_backend *gemm;
    struct gemm_context kernels;    // the context its GEMMs run in
    int profile;
    struct lazy_program_stats stats;
};

// The generated kernels call this for their GEMMs. The backend is the one of
// the program running now: programs run one at a time.
static const struct gemm_backend *running_gemm;
static struct gemm_context running_context;

static int call_gemm(int ta, int tb, int m, int n, int k, const float *A, int lda,
                     const float *B, int ldb, float *C, int ldc)
{
    return running_gemm->run(&running_context, ta ? GEMM_TRANS : GEMM_NOTRANS,
                             tb ? GEMM_TRANS : GEMM_NOTRANS, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C,
                             ldc);
}

static int computed(const struct lazy_node *n)
{
    return n->op != LAZY_LOAD && n->op != LAZY_CONST && n->op != LAZY_VIEW;
}

static const struct lazy_output *output_of(const struct lazy_program *p, const struct lazy_node *n)
{
    for (int i = 0; i < p->noutputs; i++)
        if (p->outputs[i].node == n)
            return &p->outputs[i];
    return NULL;
}

// Where stored node n lives: the buffer it replaces, or the program's own.
static float *memory_of(const struct lazy_program *p, const struct lazy_node *n)
{
    if (n->op == LAZY_LOAD)
        return n->buf->data;
    const struct lazy_output *o = output_of(p, n);
    if (o && o->into)
        return o->into->data;
    return p->memory[n->id];
}

// A view that only reshapes a computed value (same elements, same order)
// stands for that value: an output needs no copy of it.
static struct lazy_node *unreshaped(struct lazy_node *n)
{
    if (n->op != LAZY_VIEW || !computed(n->src[0]) || n->offset != 0 ||
        n->size != n->src[0]->size)
        return n;
    long st = 1;
    for (int d = n->ndim - 1; d >= 0; d--) {
        if (n->shape[d] != 1 && n->strides[d] != st)
            return n;
        st *= n->shape[d];
    }
    return n->src[0];
}

static int count_nodes(struct lazy_node *const *roots, int n)
{
    struct lazy_node **all;
    int count = lazy_toposort(roots, n, &all);
    if (count > 0)
        free(all);
    return count;
}

// listing: program_new
struct lazy_program *lazy_program_new(struct lazy_graph *g, int n,
                                      const struct lazy_output *outputs,
                                      const struct lazy_options *o, char *err, size_t errlen)
{
    // The options, with the context filled in: the kernels are compiled
    // for its ISA, and the GEMMs run in it.
    struct lazy_options given = o ? *o : (struct lazy_options){0};
    struct gemm_context kernels = given.kernels ? *given.kernels : gemm_context_default();
    given.kernels = &kernels;
    o = &given;
    double start = timer_now();
    struct lazy_program *p = calloc(1, sizeof *p);
    struct lazy_node **roots = malloc(sizeof *roots * (size_t)(n ? n : 1));
    if (p)
        p->outputs = malloc(sizeof *p->outputs * (size_t)(n ? n : 1));
    if (!p || !roots || !p->outputs) {
        snprintf(err, errlen, "out of memory for a program");
        goto fail;
    }
    p->noutputs = n;
    p->gemm = o->gemm ? o->gemm : gemm_backend_find("auto");
    p->kernels = kernels;
    for (int i = 0; i < n; i++) {
        roots[i] = outputs[i].node;
        if (!roots[i]) {
            snprintf(err, errlen, "%s", lazy_error(g)[0] ? lazy_error(g) : "an output is NULL");
            goto fail;
        }
        if (outputs[i].into && outputs[i].into->size != roots[i]->size) {
            snprintf(err, errlen, "output %d has %ld elements, its buffer %s %ld", i,
                     roots[i]->size, outputs[i].into->name ? outputs[i].into->name : "",
                     outputs[i].into->size);
            goto fail;
        }
    }
    // 1. Rewrite to the fixed point.
    p->stats.nodes_before = count_nodes(roots, n);
    if (lazy_rewrite(g, n, roots, roots, &p->stats.rewrites) != 0) {
        snprintf(err, errlen, "%s", lazy_error(g));
        goto fail;
    }
    p->stats.nodes_after = count_nodes(roots, n);
    // An output that computes nothing (a load, a constant, a view) or is
    // another output's node again gets a copy, so that each output is one
    // value one kernel stores.
    for (int i = 0; i < n; i++) {
        roots[i] = unreshaped(roots[i]);
        int again = 0;
        for (int j = 0; j < i; j++)
            again |= p->outputs[j].node == roots[i];
        p->outputs[i] = outputs[i];
        p->outputs[i].node = computed(roots[i]) && !again ? roots[i] : lazy_copy(g, roots[i]);
        if (!p->outputs[i].node) {
            snprintf(err, errlen, "%s", lazy_error(g));
            goto fail;
        }
    }
    // 2. Group into kernels.
    if (lazy_schedule_make(&p->s, n, p->outputs, o, err, errlen) != 0)
        goto fail;
    // 3. Write each kernel's C, 4. compile what the cache does not have.
    for (int k = 0; k < p->s.nkernels; k++)
        if (lazy_codegen(&p->s, &p->s.kernels[k]) != 0) {
            snprintf(err, errlen, "out of memory writing kernel %s", p->s.kernels[k].name);
            goto fail;
        }
    if (lazy_compile_all(p->s.kernels, p->s.nkernels, o, err, errlen) != 0)
        goto fail;
    // end listing
    // 5. Memory for every stored value that is not written into a buffer of
    // the caller's, and each kernel's argument list.
    p->memory = calloc((size_t)p->s.nslots, sizeof *p->memory);
    p->argv = calloc((size_t)p->s.nkernels + 1, sizeof *p->argv);
    if (!p->memory || !p->argv) {
        snprintf(err, errlen, "out of memory for a program");
        goto fail;
    }
    for (int k = 0; k < p->s.nkernels; k++) {
        struct lazy_kernel *K = &p->s.kernels[k];
        p->argv[k] = calloc((size_t)K->nargs, sizeof **p->argv);
        if (!p->argv[k]) {
            snprintf(err, errlen, "out of memory for a program");
            goto fail;
        }
        for (int a = K->ninputs; a < K->nargs; a++) {
            const struct lazy_node *x = K->args[a];
            const struct lazy_output *out = output_of(p, x);
            if ((out && out->into) || p->memory[x->id])
                continue;
            p->memory[x->id] = malloc(sizeof(float) * (size_t)x->size);
            if (!p->memory[x->id]) {
                snprintf(err, errlen, "out of memory for %ld floats", x->size);
                goto fail;
            }
        }
    }
    struct lazy_program_stats *st = &p->stats;
    st->kernels = p->s.nkernels;
    for (int k = 0; k < p->s.nkernels; k++) {
        const struct lazy_kernel *K = &p->s.kernels[k];
        st->matmul_kernels += K->kind == KERNEL_MATMUL;
        st->reduce_kernels += K->kind == KERNEL_REDUCE;
        st->elementwise_kernels += K->kind == KERNEL_ELEMENTWISE;
        st->bytes_read += K->bytes_read;
        st->bytes_written += K->bytes_written;
        st->compiled += !K->cached;
        st->cached += K->cached;
    }
    st->bytes_unfused = p->s.bytes_unfused;
    st->bytes_floor = p->s.bytes_floor;
    st->compile_seconds = timer_now() - start;
    free(roots);
    return p;
fail:
    free(roots);
    lazy_program_free(p);
    return NULL;
}

void lazy_program_free(struct lazy_program *p)
{
    if (!p)
        return;
    for (int k = 0; k < p->s.nkernels; k++) {
        lazy_unload(&p->s.kernels[k]);
        if (p->argv)
            free(p->argv[k]);
    }
    if (p->memory)
        for (int i = 0; i < p->s.nslots; i++)
            free(p->memory[i]);
    free(p->memory);
    free(p->argv);
    lazy_schedule_free(&p->s);
    free(p->outputs);
    free(p);
}

// listing: program_run
int lazy_program_run(struct lazy_program *p, char *err, size_t errlen)
{
    running_gemm = p->gemm;
    running_context = p->kernels;
    for (int k = 0; k < p->s.nkernels; k++) {
        struct lazy_kernel *K = &p->s.kernels[k];
        for (int a = 0; a < K->nargs; a++) {
            p->argv[k][a] = memory_of(p, K->args[a]);
            if (!p->argv[k][a]) {
                snprintf(err, errlen, "kernel %s: buffer %s has no memory", K->name,
                         K->args[a]->op == LAZY_LOAD && K->args[a]->buf->name
                             ? K->args[a]->buf->name : "?");
                return -1;
            }
        }
        double t0 = p->profile ? timer_now() : 0.0;
        if (K->fn(p->argv[k], call_gemm) != 0) {
            snprintf(err, errlen, "kernel %s: its GEMM ran out of memory", K->name);
            return -1;
        }
        if (p->profile)
            K->seconds += timer_now() - t0;
    }
    return 0;
}
// end listing

const float *lazy_program_output(const struct lazy_program *p, int i)
{
    return i >= 0 && i < p->noutputs ? memory_of(p, p->outputs[i].node) : NULL;
}

void lazy_program_stats(const struct lazy_program *p, struct lazy_program_stats *s)
{
    *s = p->stats;
}

void lazy_program_profile(struct lazy_program *p, int on)
{
    p->profile = on;
    for (int k = 0; k < p->s.nkernels; k++)
        p->s.kernels[k].seconds = 0.0;
}

int lazy_program_kernel_count(const struct lazy_program *p)
{
    return p->s.nkernels;
}

void lazy_program_kernel(const struct lazy_program *p, int k, struct lazy_kernel_info *info)
{
    static const char *const kinds[] = {"elementwise", "reduce", "matmul"};
    const struct lazy_kernel *K = &p->s.kernels[k];
    memset(info, 0, sizeof *info);
    info->name = K->name;
    info->kind = kinds[K->kind];
    lazy_shape_str(K->ndim, K->shape, info->loops, sizeof info->loops);
    info->bytes = K->bytes_read + K->bytes_written;
    info->bytes_unfused = K->bytes_unfused;
    info->seconds = K->seconds;
    info->source = K->source;
    info->path = K->path;
}

void lazy_program_report(const struct lazy_program *p, FILE *f)
{
    fprintf(f, "%-40s %-11s %-9s %10s %10s %10s\n", "kernel", "kind", "loops", "bytes",
            "unfused", "saved");
    for (int k = 0; k < p->s.nkernels; k++) {
        struct lazy_kernel_info i;
        lazy_program_kernel(p, k, &i);
        fprintf(f, "%-40s %-11s %-9s %10ld %10ld %10ld\n", i.name, i.kind, i.loops, i.bytes,
                i.bytes_unfused, i.bytes_unfused - i.bytes);
    }
    const struct lazy_program_stats *s = &p->stats;
    fprintf(f, "%d kernels; %ld bytes read, %ld written; one kernel per op: %ld; the floor "
               "(every input read once, every output written once): %ld\n",
            s->kernels, s->bytes_read, s->bytes_written, s->bytes_unfused, s->bytes_floor);
}

void lazy_program_dump(const struct lazy_program *p, const char *prefix, FILE *f)
{
    for (int k = 0; k < p->s.nkernels; k++)
        fprintf(f, "// ---- %s\n// listing: %s-%s\n%s// end listing\n\n", p->s.kernels[k].path,
                prefix, p->s.kernels[k].name, p->s.kernels[k].source);
}

int lazy_realize(struct lazy_graph *g, struct lazy_node *node, float *out,
                 const struct lazy_options *o, char *err, size_t errlen)
{
    struct lazy_output want = {node, NULL};
    struct lazy_program *p = lazy_program_new(g, 1, &want, o, err, errlen);
    if (!p)
        return -1;
    int status = lazy_program_run(p, err, errlen);
    if (status == 0)
        memcpy(out, lazy_program_output(p, 0), sizeof(float) * (size_t)node->size);
    lazy_program_free(p);
    return status;
}
