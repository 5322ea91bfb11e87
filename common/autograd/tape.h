#ifndef TAPE_H
#define TAPE_H

#include <stddef.h>
#include <stdio.h>

#include "cpu.h"
#include "gemm_backend.h"
#include "memory.h"
#include "tensor.h"

struct arena;
struct conv_path;  // a row of common/conv's table of paths (conv.h)
struct tape;
struct tape_node;

// One op's backward: reads node->out->grad and adds its share into the
// grad of each input that requires one. Returns 0, or -1 after tape_fail().
typedef int tape_backward_fn(struct tape *t, struct tape_node *node);

// listing: tape_node
// What an op leaves on the tape: enough to run its backward later.
struct tape_node {
    const char *op;             // "matmul", "relu", ... for messages
    tape_backward_fn *backward;
    struct tensor *out;
    struct tensor *in[3];       // in[1] is NULL for one-input ops; in[2] for
                                // three-input ops only (the Linear layer's bias)
    float scalar;               // scale's factor, mean's 1/n
    const int *ints;            // integers for the backward, in the arena: cross_entropy's
                                // labels, a convolution's stride and pad, max pooling's argmax
    float *saved;               // cross_entropy's probabilities
    struct tape_node *prev;     // the node recorded before this one
    // For the planner (MEMORY_PLANNED): whose data the backward reads, as
    // NEEDS_* bits (its op's struct tape_op says which), the node's number
    // in the step, and the buffers its op asked for (its saved ones among
    // them).
    unsigned needs;
    int seq;
    int first_buffer, end_buffer;
};
// end listing

// tape_node.needs: the backward reads in[0]'s, in[1]'s, in[2]'s or out's data.
enum { NEEDS_IN0 = 1, NEEDS_IN1 = 2, NEEDS_IN2 = 4, NEEDS_OUT = 8 };

// listing: tape_config
// The run-time choices the ops read from their tape: the same model, another
// way to compute it. Two tapes in one program can differ, so a benchmark or a
// test compares two ways side by side without setting anything back.
struct tape_config {
    const struct gemm_backend *gemm;  // every matmul; NULL: auto, gemm()
    struct gemm_context kernels;      // the GEMM's micro-kernel, its blocking
                                      // and Strassen rule, for every backend
                                      // and convolution path built on them
    const struct conv_path *conv;     // every convolution (conv.h); NULL: by shape
    enum isa isa;                     // the ops' own loops: elementwise, pooling,
                                      // the direct and Winograd convolutions,
                                      // and the optimizer that follows the tape
    enum memory_mode memory;          // where the step's tensors live
    int fused_pools;                  // how many of a network's first
                                      // convolutions run with their ReLU and
                                      // 2×2 max pooling as one op
                                      // (op_conv2d_relu_maxpool2); -1: as
                                      // many as the model's default
    int accumulate;                   // 1: every gradient zeroed first and each
                                      // contribution added, the first too (the
                                      // old way, for a benchmark); 0: the first
                                      // contribution writes (tape_grad_write)
    int plain_bias;                   // 1: the linear layer's bias rows and
                                      // column sums one float at a time (the
                                      // old way, for a benchmark); 0: a row at
                                      // a time (memcpy, the vector loop)
};
// end listing

// "arena", "planned" ("unknown" for another value).
const char *tape_memory_name(enum memory_mode m);

// gemm() for every matmul in the default GEMM context
// (gemm_context_default: the program's ISA, which --isa forces, and its
// Strassen rule), convolutions by shape, the same ISA for the ops' loops,
// and planned memory. The default context of the training chapters: the
// one place a tape learns the program's ISA.
struct tape_config tape_config_default(void);
// Makes every kernel family of c run isa (one this CPU and build run): the
// GEMM's micro-kernel, with its blocking, and the ops' loops. A program
// that wants the loops on one ISA and the GEMM on another (stage 06's
// bench) sets c->isa afterwards.
void tape_config_set_isa(struct tape_config *c, enum isa isa);

// A tape for one model: its arena (all per-step memory), the nodes of the
// current step, its config (NULL: the default) and the first error of the
// step. NULL when out of memory, or when config's isa is one this CPU or
// build cannot run.
struct tape *tape_new(const struct tape_config *config);
void tape_free(struct tape *t);
const struct tape_config *tape_config(const struct tape *t);

// Forgets the step: nodes, step tensors, the error. Keeps the memory for
// the next step (planned: the plan made from this step and its block).
void tape_clear(struct tape *t);

// Recording is on after tape_new. Off (evaluation), ops still compute their
// outputs but record no node and allocate nothing for gradients. Returns the
// previous setting.
int tape_set_recording(struct tape *t, int on);
int tape_recording(const struct tape *t);

// Walks the tape backwards from loss, a one-element tensor recorded on this
// tape, and leaves ∂loss/∂x in x->grad for every x that requires a gradient
// (parameters accumulate: zero them first). Returns 0, or -1 with an error
// message: loss is not one element, is NaN or infinite, was not recorded,
// or the tape was already walked (run the forward again).
int tape_backward(struct tape *t, struct tensor *loss);

// The first error since the last tape_clear ("" when none). Ops given a NULL
// input return NULL and keep that first message, so a whole forward can be
// written as nested calls and checked once at the end.
const char *tape_error(const struct tape *t);
int tape_failed(const struct tape *t);

// The arena of a tape whose memory is MEMORY_ARENA; NULL when planned.
struct arena *tape_arena(struct tape *t);
int tape_node_count(const struct tape *t);

// Writes the recorded graph in Graphviz's DOT language: one box per node
// (its op and its place in the recording order), one ellipse per tensor
// (its shape; parameters and the step's inputs marked), edges from inputs
// to op to output. `dot -Tsvg` draws it. Returns 0, or -1 on a write error.
int tape_write_dot(const struct tape *t, FILE *f);

// A step's memory, in either mode: its live bytes (the most it holds at one
// moment: for the arena, all it handed out, since it releases nothing
// before the step ends) and its reserved bytes (what the tape holds for
// steps, bookkeeping included), as of the last step that ended.
size_t tape_live_bytes(const struct tape *t);
size_t tape_reserved_bytes(const struct tape *t);
// Arena: arena_fit (one block of the peak, so that a smaller last batch or
// an evaluation does not grow it). Planned: nothing to do, 0. -1 when out of
// memory.
int tape_fit(struct tape *t);
// The step's buffers so far, for a lifetime chart (memory.h has the
// columns); call it before tape_clear. -1 when writing fails.
int tape_write_lifetimes(const struct tape *t, FILE *f);

// Step tensors (tensor_new, tensor_from, tensor_view: tensor.h) are gone at
// the next tape_clear(). With planned memory, a tensor's data lives from the
// op that makes it to the last op, forward or backward, that reads it; its
// gradient from the first node that adds into it to the node that made it.
// What the caller reads after that must be kept: the tensors made with
// tensor_new and tensor_from, their gradients, the loss given to
// tape_backward and the output of the step's last op are kept without
// asking; tape_keep keeps any other.
//
// Keeps x's data and gradient until the step ends, for a caller that reads
// them after the ops that use it have run (the logits after the loss).
void tape_keep(struct tape *t, struct tensor *x);

// The forward reads x no more. A step that follows a plan knows it; the
// first step of a kind does not, until its backward begins (no op says
// whether a later op reads x), and holds every value until then. Told, it
// lets x's bytes go once the op running now has returned, unless a recorded
// node's backward reads them. A later read of x is an error.
void tape_done(struct tape *t, struct tensor *x);

// For the ops: record the first error (printf-style) and return NULL.
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void *tape_fail(struct tape *t, const char *fmt, ...);

// An op's bookkeeping, said once. An op fills a struct tape_op, opens with
// it, computes its output, and closes with it:
//
//     struct tape_op op = {.name = "add", .backward = add_backward, .in = {a, b},
//                          .needs = 0};  // the backward reads dy alone
//     struct tensor *y = tape_op_open(t, &op, a->ndim, a->shape);
//     if (!y)
//         return NULL;
//     ... y->data from a->data and b->data ...
//     return tape_op_close(t, &op, y);
//
// What the op saves for its backward (tape_save, between the two calls) goes
// into op.ints or op.saved before it closes.
struct tape_op {
    const char *name;            // "matmul", "relu", ... for messages
    tape_backward_fn *backward;
    struct tensor *in[3];        // the inputs: in[1], in[2] NULL when fewer
    unsigned needs;              // NEEDS_* bits: whose data the backward reads;
                                 // 0: dy alone (and what the op saved)
    float scalar;                // the node's scalar, ints and saved
    const int *ints;             // (struct tape_node says what each holds)
    float *saved;
};

// Opens op: the output tensor of the given shape, whose requires_grad is set
// when recording and any input needs a gradient. It starts the op's moment
// and tells the planner that the op reads its inputs. NULL with the error set.
struct tensor *tape_op_open(struct tape *t, const struct tape_op *op, int ndim,
                            const int *shape);
// Closes op: when out needs a gradient, records its node (tape_record, with
// op's inputs, needs, scalar, ints and saved). Returns out; NULL when out is
// NULL or with the error set.
struct tensor *tape_op_close(struct tape *t, const struct tape_op *op, struct tensor *out);

// The calls beneath tape_op_open, which an op need not make itself: an
// output tensor whose requires_grad is set when recording and a or b needs
// a gradient (the op's moment begins; the op reads a and b, NULL for
// none), and a third input x read too. NULL or -1 with the error set.
struct tensor *tape_output(struct tape *t, int ndim, const int *shape,
                           const struct tensor *a, const struct tensor *b);
int tape_use(struct tape *t, const struct tensor *x);
// For the ops, after opening: bytes of working memory (64-byte aligned,
// contents undefined) that die when the op returns, and bytes the op keeps
// for its backward, which die once the node it records next has run its
// backward (when it records none, with the op). NULL when out of memory
// (the op reports it).
void *tape_scratch(struct tape *t, size_t bytes);
void *tape_save(struct tape *t, size_t bytes);

// Beneath tape_op_close: appends a node for out (call it only when
// out->requires_grad), every NEEDS_* bit set. NULL when out of memory, with
// the error set.
struct tape_node *tape_record(struct tape *t, const char *op, tape_backward_fn *backward,
                              struct tensor *out, struct tensor *a, struct tensor *b);

// For the ops: C = op(A)·op(B) + beta·C through the tape's GEMM backend
// (gemm()'s arguments, alpha 1). Returns 0, or -1 with the error set, naming
// op, when the backend ran out of memory.
int tape_gemm(struct tape *t, const char *op, enum gemm_trans ta, enum gemm_trans tb, int m,
              int n, int k, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc);

// For the backward functions: x's gradient, allocated zeroed on first use
// (a parameter's forgotten gradient, tensor_forget_grad, is zeroed then).
float *tape_grad(struct tape *t, struct tensor *x);
// For a backward that writes a whole gradient in one pass (a GEMM): x's
// gradient, and *beta. 0: this is the gradient's first contribution of the
// step (a new one, or a parameter's forgotten one) and its floats are
// undefined: write every one. 1: it holds contributions already: add.
// A tape whose config says accumulate zeroes it and always gives 1.
float *tape_grad_write(struct tape *t, struct tensor *x, float *beta);

#endif
