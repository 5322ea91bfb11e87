#ifndef TAPE_H
#define TAPE_H

#include "gemm_backend.h"
#include "tensor.h"

struct arena;
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
};
// end listing

// A tape for one model: its arena (all per-step memory), the nodes of the
// current step, the GEMM backend every matmul goes through, and the first
// error of the step. backend NULL means "auto" (gemm()). NULL when out of
// memory.
struct tape *tape_new(const struct gemm_backend *backend);
void tape_free(struct tape *t);

// Forgets the step: nodes, step tensors, the error. Keeps the arena's memory.
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

const struct gemm_backend *tape_backend(const struct tape *t);
struct arena *tape_arena(struct tape *t);
int tape_node_count(const struct tape *t);

// For the ops: record the first error (printf-style) and return NULL.
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void *tape_fail(struct tape *t, const char *fmt, ...);

// For the ops: an output tensor of the given shape whose requires_grad is
// set when recording and any input needs a gradient; NULL with the error set.
struct tensor *tape_output(struct tape *t, int ndim, const int *shape,
                           const struct tensor *a, const struct tensor *b);

// For the ops: appends a node for out (call it only when out->requires_grad).
// NULL when out of memory, with the error set.
struct tape_node *tape_record(struct tape *t, const char *op, tape_backward_fn *backward,
                              struct tensor *out, struct tensor *a, struct tensor *b);

// For the ops: C = op(A)·op(B) + beta·C through the tape's GEMM backend
// (gemm()'s arguments, alpha 1). Returns 0, or -1 with the error set, naming
// op, when the backend ran out of memory.
int tape_gemm(struct tape *t, const char *op, enum gemm_trans ta, enum gemm_trans tb, int m,
              int n, int k, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc);

// For the backward functions: x's gradient, allocated zeroed on first use.
float *tape_grad(struct tape *t, struct tensor *x);

#endif
