#ifndef LAZY_H
#define LAZY_H

#include <stdint.h>
#include <stdio.h>

#include "gemm_backend.h"

// A tensor library that records instead of computing. Each op returns a
// node of a graph: (op, inputs, shape, constant). Nothing is computed until
// a program made from the graph runs: the program rewrites the graph,
// groups it into kernels, writes each kernel as C, compiles it with the
// system's C compiler and runs the result (chapter 10).
//
//   lazy_graph.c     nodes, hash-consing, broadcasting, shapes, Graphviz
//   lazy_grad.c      the backward of a loss as a new graph (no tape)
//   lazy_rewrite.c   rewrite rules, run to a fixed point
//   lazy_schedule.c  kernels: which nodes share a loop, which are stored
//   lazy_codegen.c   each kernel as C source
//   lazy_compile.c   cc, the cache under build/, dlopen
//   lazy_program.c   the whole pipeline, the buffers, running it
//
// Shapes have 1 to 4 dimensions, row-major. Every function that makes a node
// returns NULL on an error (a shape mismatch, an input that is NULL, out of
// memory) and keeps the graph's first error message, so a whole expression
// can be written as nested calls and checked once.

enum { LAZY_MAX_DIMS = 4 };

// listing: lazy_ops
enum lazy_op {
    LAZY_LOAD,      // read a buffer the caller owns (an input, a weight)
    LAZY_CONST,     // one value, in every element of its shape
    LAZY_NEG,       // unary: −x, 1/x, eˣ, ln x, √x, x itself (a copy)
    LAZY_RECIP,
    LAZY_EXP,
    LAZY_LOG,
    LAZY_SQRT,
    LAZY_COPY,
    LAZY_ADD,       // binary, same shapes: a + b, a·b, max(a, b), a > b ? 1 : 0
    LAZY_MUL,
    LAZY_MAX,
    LAZY_CMPGT,
    LAZY_SUM,       // reduce one axis to length 1: Σ, max
    LAZY_RMAX,
    LAZY_MATMUL,    // a is m×k, b is k×n
    LAZY_RESHAPE,   // views: the same elements seen another way, no copy
    LAZY_EXPAND,
    LAZY_PERMUTE,
    LAZY_VIEW,      // what the rewrites fold the three above into: strides
    LAZY_DETACH,    // x, with no gradient flowing through it
    LAZY_OP_COUNT
};

struct lazy_node {
    enum lazy_op op;
    struct lazy_node *src[2];
    int ndim;
    int shape[LAZY_MAX_DIMS];
    long size;                      // product of the shape
    float value;                    // CONST
    int axis;                       // SUM, RMAX
    int perm[LAZY_MAX_DIMS];        // PERMUTE: dimension d of the result is perm[d] of src
    long strides[LAZY_MAX_DIMS];    // VIEW: element (i0, i1, ...) is element
    long offset;                    //   offset + Σ i_d·strides[d] of src, laid out flat
    struct lazy_buffer *buf;        // LOAD
    int inputs_only;                // 1: depends on loads and constants alone
    int id;                         // creation order: every input has a smaller id
    uint64_t hash;
    struct lazy_node *chain;        // the next node in the same hash bucket
};
// end listing

// Memory a graph reads (LOAD) or a program writes into: floats, row-major,
// owned by the caller, who may change their contents between runs.
struct lazy_buffer {
    const char *name;               // for messages and the generated code's comments
    float *data;
    int ndim;
    int shape[LAZY_MAX_DIMS];
    long size;
};

// Sets a buffer's fields; data may be NULL until the program runs. Returns
// 0, or -1 for a bad shape.
int lazy_buffer_init(struct lazy_buffer *b, const char *name, float *data, int ndim,
                     const int *shape);

struct lazy_graph;

struct lazy_graph *lazy_graph_new(void);
void lazy_graph_free(struct lazy_graph *g);
// The first error since lazy_graph_new ("" when none).
const char *lazy_error(const struct lazy_graph *g);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void *lazy_fail(struct lazy_graph *g, const char *fmt, ...);
// Nodes made so far (hash-consing makes a node only once per expression).
int lazy_node_count(const struct lazy_graph *g);
const char *lazy_op_name(enum lazy_op op);
// "64×784"
void lazy_shape_str(int ndim, const int *shape, char *buf, int len);

// The ops. Binary ops broadcast like NumPy: shapes are aligned at the right
// and a dimension of 1 stretches to match; the result is a node of the
// common shape.
struct lazy_node *lazy_load(struct lazy_graph *g, struct lazy_buffer *b);
struct lazy_node *lazy_const(struct lazy_graph *g, float value, int ndim, const int *shape);
struct lazy_node *lazy_neg(struct lazy_graph *g, struct lazy_node *x);
struct lazy_node *lazy_recip(struct lazy_graph *g, struct lazy_node *x);
struct lazy_node *lazy_exp(struct lazy_graph *g, struct lazy_node *x);
struct lazy_node *lazy_log(struct lazy_graph *g, struct lazy_node *x);
struct lazy_node *lazy_sqrt(struct lazy_graph *g, struct lazy_node *x);
struct lazy_node *lazy_add(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b);
struct lazy_node *lazy_mul(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b);
struct lazy_node *lazy_max(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b);
struct lazy_node *lazy_cmpgt(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b);
// a − b and a / b, as a + (−b) and a·(1/b).
struct lazy_node *lazy_sub(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b);
struct lazy_node *lazy_div(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b);
// x with a constant: x + c, x·c.
struct lazy_node *lazy_add_const(struct lazy_graph *g, struct lazy_node *x, float c);
struct lazy_node *lazy_mul_const(struct lazy_graph *g, struct lazy_node *x, float c);
// max(x, 0).
struct lazy_node *lazy_relu(struct lazy_graph *g, struct lazy_node *x);
// The sum or the largest element along axis, which keeps length 1.
struct lazy_node *lazy_sum(struct lazy_graph *g, struct lazy_node *x, int axis);
struct lazy_node *lazy_max_reduce(struct lazy_graph *g, struct lazy_node *x, int axis);
struct lazy_node *lazy_matmul(struct lazy_graph *g, struct lazy_node *a, struct lazy_node *b);
struct lazy_node *lazy_reshape(struct lazy_graph *g, struct lazy_node *x, int ndim,
                               const int *shape);
// Stretches dimensions of length 1 to the shape's (same ndim).
struct lazy_node *lazy_expand(struct lazy_graph *g, struct lazy_node *x, int ndim,
                              const int *shape);
struct lazy_node *lazy_permute(struct lazy_graph *g, struct lazy_node *x, const int *perm);
// A 2-D x, transposed.
struct lazy_node *lazy_transpose(struct lazy_graph *g, struct lazy_node *x);
struct lazy_node *lazy_detach(struct lazy_graph *g, struct lazy_node *x);
// A copy, through a view, into memory of its own; the rewrites use it where
// a reshape cannot be a view.
struct lazy_node *lazy_copy(struct lazy_graph *g, struct lazy_node *x);
// A view with explicit strides over src (the rewrites make these).
struct lazy_node *lazy_view(struct lazy_graph *g, struct lazy_node *src, int ndim,
                            const int *shape, const long *strides, long offset);

// A node like n (its op, shape and constants) over other inputs.
struct lazy_node *lazy_remake(struct lazy_graph *g, const struct lazy_node *n, struct lazy_node *a,
                              struct lazy_node *b);

// Every node the roots depend on, inputs before the nodes that use them
// (ascending id). Returns the count, or -1 when out of memory; *out is
// malloc'd.
int lazy_toposort(struct lazy_node *const *roots, int nroots, struct lazy_node ***out);

// The graph under roots in Graphviz's language: one box per node.
void lazy_write_dot(FILE *f, struct lazy_node *const *roots, int nroots);

// --- autograd as a graph transform (lazy_grad.c) ---------------------------
// The gradient of a one-element loss with respect to each of wrt[0..n),
// built as new nodes of the same graph: grads[i] has wrt[i]'s shape (a
// constant 0 when the loss does not depend on it). Returns 0, or -1 with the
// graph's error set.
int lazy_grad(struct lazy_graph *g, struct lazy_node *loss, int n, struct lazy_node *const *wrt,
              struct lazy_node **grads);

// --- rewrites (lazy_rewrite.c) ---------------------------------------------
struct lazy_rewrite_stats {
    int fired[16];                  // per rule, how often it fired
    int passes;                     // passes until nothing changed
};
const char *lazy_rule_name(int rule);
int lazy_rule_count(void);
// Rewrites the graph under roots[0..n) until no rule applies, writing the
// new roots into out (which may be roots). Returns 0, or -1 with the error set.
int lazy_rewrite(struct lazy_graph *g, int n, struct lazy_node *const *roots,
                 struct lazy_node **out, struct lazy_rewrite_stats *stats);

// --- programs (lazy_schedule.c, lazy_codegen.c, lazy_compile.c, lazy_program.c)
// An output of a program: the node to compute, and where its value goes.
// into NULL: a buffer the program owns (lazy_program_output gives it);
// into a buffer the graph also loads (a weight): its new value replaces the
// old, after every kernel that reads the old one has run.
struct lazy_output {
    struct lazy_node *node;
    struct lazy_buffer *into;
};

struct lazy_options {
    const struct gemm_backend *gemm;  // NULL: auto (gemm())
    const struct gemm_context *kernels;  // the GEMMs' context, whose ISA the
                                      // kernels are compiled for too; NULL:
                                      // gemm_context_default(), the program's
    int no_fusion;                    // 1: one kernel per op (what fusion saves)
    int serial;                       // 1: every kernel on one thread (what threads save)
    long panel_bytes;                 // > 0: a matmul calls gemm() on row panels of C of
                                      // at most this many bytes, each followed by its
                                      // epilogue; 0: one gemm() call for the whole of C
    const char *cache_dir;            // NULL: the checkout's build/lazy-cache (a
                                      // program passes $LAZY_CACHE)
    const char *cc;                   // the kernels' compiler, words allowed
                                      // ("ccache gcc"); NULL: cc (a program passes $CC)
    int verbose;                      // 1: a line per compiled kernel on stderr
};

struct lazy_program;

// Rewrites, schedules, generates and compiles (or finds in the cache) the
// kernels that compute the outputs. NULL with a message in err (a graph
// error, a compiler error naming the kernel's source file, no compiler).
struct lazy_program *lazy_program_new(struct lazy_graph *g, int n,
                                      const struct lazy_output *outputs,
                                      const struct lazy_options *o, char *err, size_t errlen);
void lazy_program_free(struct lazy_program *p);
// Runs every kernel once, in order, reading the loaded buffers' current
// contents. Returns 0, or -1 with err (a GEMM out of memory).
int lazy_program_run(struct lazy_program *p, char *err, size_t errlen);
// Where output i's value is after a run (the program's own buffer, or into's).
const float *lazy_program_output(const struct lazy_program *p, int i);

// What the scheduler made, for the benchmark and the chapter.
struct lazy_program_stats {
    int kernels;
    int matmul_kernels, reduce_kernels, elementwise_kernels;
    long bytes_read, bytes_written;     // per run, as the scheduler counts them
    long bytes_unfused;                 // the same graph, one kernel per op
    long bytes_floor;                   // every input read once, every output written once
    int compiled, cached;               // kernels compiled now, found in the cache
    double compile_seconds;             // rewriting to loading, all of it
    struct lazy_rewrite_stats rewrites;
    int nodes_before, nodes_after;      // under the outputs, before and after the rewrites
};
void lazy_program_stats(const struct lazy_program *p, struct lazy_program_stats *s);

// One line per kernel: its name, what it fused, its bytes and what the
// fusion saved against one kernel per op; then the totals.
void lazy_program_report(const struct lazy_program *p, FILE *f);
// Every kernel's generated C source, each under its file's path and between
// markers named `prefix-NAME` ("step-k00_matmul_add_max"), so that a saved
// dump can be quoted kernel by kernel (chapter 10 does).
void lazy_program_dump(const struct lazy_program *p, const char *prefix, FILE *f);
// Timing each kernel of every run (on: also clears the sums).
void lazy_program_profile(struct lazy_program *p, int on);
int lazy_program_kernel_count(const struct lazy_program *p);
// Kernel k (in run order) as the scheduler made it.
struct lazy_kernel_info {
    const char *name;               // "k00_matmul_add_max"
    const char *kind;               // "matmul", "reduce" or "elementwise"
    char loops[64];                 // the shape it loops over, "64×256"
    long bytes;                     // read and written per run
    long bytes_unfused;             // by its ops, one kernel each
    double seconds;                 // summed over the runs profiled
    const char *source, *path;      // its C, and the file in the cache
};
void lazy_program_kernel(const struct lazy_program *p, int k, struct lazy_kernel_info *info);

// Computes one node into out (node->size floats): a program made, run once
// and freed. For the tests and small jobs. Returns 0, or -1 with err.
int lazy_realize(struct lazy_graph *g, struct lazy_node *node, float *out,
                 const struct lazy_options *o, char *err, size_t errlen);

#endif
