#ifndef OPS_H
#define OPS_H

#include <stddef.h>

#include "tape.h"

// The ops of the autograd. Each computes its output into the tape's arena
// and, when recording and an input needs a gradient, appends a node whose
// backward adds the input's share of the gradient. Each returns NULL, with
// the tape's error set (naming the op and the shapes), on a shape mismatch,
// on a NULL input (the error of the op that failed stands) or out of memory.
// Shapes are given as rows×columns.

// a is m×k, b is k×n: a·b, m×n. Through the tape's GEMM backend.
struct tensor *op_matmul(struct tape *t, struct tensor *a, struct tensor *b);
// Its backward, for any node laid out as op_matmul's: in[0] = a, in[1] = b,
// out = a·b (the Linear layer's node is, with its bias as in[2]).
int op_matmul_backward(struct tape *t, struct tape_node *node);
// The Linear layer of chapter 7: x is b×in, w is in×out, bias has out
// elements: x·w + bias, b×out. One node on the tape (not a matmul node and
// a bias node): its backward makes dx, dw and dbias from dy in one visit.
struct tensor *op_linear(struct tape *t, struct tensor *x, struct tensor *w, struct tensor *bias);
// x is m×n, bias has n elements: x[i][j] + bias[j] (the bias broadcast over
// the m rows of a batch).
struct tensor *op_bias_add(struct tape *t, struct tensor *x, struct tensor *bias);
// Same shapes: a + b, a ⊙ b (elementwise).
struct tensor *op_add(struct tape *t, struct tensor *a, struct tensor *b);
struct tensor *op_mul(struct tape *t, struct tensor *a, struct tensor *b);
// s·x.
struct tensor *op_scale(struct tape *t, struct tensor *x, float s);
// Elementwise max(x, 0), 1/(1+e^-x), tanh x.
struct tensor *op_relu(struct tape *t, struct tensor *x);
struct tensor *op_sigmoid(struct tape *t, struct tensor *x);
struct tensor *op_tanh(struct tape *t, struct tensor *x);
// The sum and the mean of every element: a one-element tensor.
struct tensor *op_sum(struct tape *t, struct tensor *x);
struct tensor *op_mean(struct tape *t, struct tensor *x);
// The same data seen with another shape of the same size: a view, no copy.
struct tensor *op_reshape(struct tape *t, struct tensor *x, int ndim, const int *shape);
// logits is b×c, labels[i] in 0..c-1 for each of the b rows:
// −(1/b) Σᵢ log softmax(logitsᵢ)[labelsᵢ], one element. nlabels must be b.
struct tensor *op_cross_entropy(struct tape *t, struct tensor *logits, const int *labels,
                                int nlabels);

#endif
