#ifndef TENSOR_H
#define TENSOR_H

// A tensor: float data, row-major and contiguous, 1 to 4 dimensions, with
// its shape beside the data. A 64×784 batch of images has ndim 2 and shape
// {64, 784}; element (i, j) is data[i*784 + j].
//
// A tensor made during a step (tensor_new, below) lives in its tape's
// memory and is gone at the next tape_clear() (tape.h says when its bytes
// go). Parameters (tensor_param) live on the heap, outside the tape, and
// last until tensor_free(). The tape is built on tensors, not the other
// way: a step tensor's maker names its tape, and tape.c makes it.

enum { TENSOR_MAX_DIMS = 4 };

struct tensor {
    float *data;
    float *grad;        // ∂loss/∂data, same shape; NULL until backward needs it
    int ndim;
    int shape[TENSOR_MAX_DIMS];
    long size;          // product of the shape
    int requires_grad;  // 1: backward computes grad for this tensor
    int owned;          // 1: a parameter, data and grad on the heap
    int id;             // a step tensor's number on its tape (tape.c); -1 otherwise
    int grad_forgotten; // 1: grad's floats mean nothing (tensor_forget_grad) until
                        // the next backward's first contribution writes them
};

struct tape;

// A step tensor of that shape on tape t (contents undefined), or NULL with
// the tape's error set (bad shape, out of memory).
struct tensor *tensor_new(struct tape *t, int ndim, const int *shape);
// The same, holding a copy of count floats (count must equal the size).
struct tensor *tensor_from(struct tape *t, int ndim, const int *shape, const float *values,
                           long count);
// A tensor struct whose data is x's, seen with another shape of the same
// size (the caller checks the size). No copy; grad is its own.
struct tensor *tensor_view(struct tape *t, const struct tensor *x, int ndim, const int *shape);

// A parameter: zeroed data and gradient on the heap, requires_grad set.
// NULL for a bad shape or when out of memory.
struct tensor *tensor_param(int ndim, const int *shape);
void tensor_free(struct tensor *p);
// Sets a parameter's gradient to zero (before the backward of each step:
// gradients accumulate).
void tensor_zero_grad(struct tensor *p);
// The same for a step, without the pass over the gradient: its floats are
// forgotten, and the next backward's first contribution writes them instead
// of adding into zeros (PyTorch's zero_grad(set_to_none=True)). A reader
// that finds the gradient still forgotten reads zeros: tensor_grad_settle.
void tensor_forget_grad(struct tensor *p);
// Zeroes p's gradient if it is still forgotten (no backward reached p).
void tensor_grad_settle(struct tensor *p);

// Sets x to a tensor of that shape and size with no data, no gradient, no
// flags and no id (for the code that allocates tensors: tensor_param, tape.c).
void tensor_set_shape(struct tensor *x, int ndim, const int *shape, long size);
// 1 when a and b have the same shape.
int tensor_same_shape(const struct tensor *a, const struct tensor *b);
// Writes the shape, e.g. "64×784", into buf.
void tensor_shape_str(const struct tensor *a, char *buf, int len);
// The number of elements of a shape, or -1 when it is not 1..4 positive
// dimensions of at most 2^31 elements in all.
long tensor_shape_size(int ndim, const int *shape);

#endif
