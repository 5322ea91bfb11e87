#ifndef NN_H
#define NN_H

#include <stddef.h>
#include <stdint.h>

#include "tape.h"

// The layers and models the training chapters build on the tape of
// common/autograd: a fully connected layer as one fused op, and a model as
// a list of parameters with a forward function.

// x is b×in, w is in×out, bias has out elements: x·w + bias, b×out. One node
// on the tape (not a matmul node and a bias node): its backward makes dx,
// dw and dbias from dy in one pass over the layer.
struct tensor *op_linear(struct tape *t, struct tensor *x, struct tensor *w, struct tensor *bias);

enum { NN_MAX_LAYERS = 8, NN_MAX_PARAMS = 32 };

struct nn_model;
// The forward pass: x is b×in (a batch of flattened images), the result is
// b×classes logits, or NULL with the tape's error set.
typedef struct tensor *nn_forward_fn(struct nn_model *m, struct tape *t, struct tensor *x);

// A model: what it is (a description the checkpoint records and checks,
// e.g. "mlp 784,256,10"), its parameters in a fixed order (the optimizer's
// and the checkpoint's order), and its forward. Stage 08's CNN is another
// nn_model with a forward of its own.
struct nn_model {
    char desc[64];
    int nparams;
    struct tensor *params[NN_MAX_PARAMS];
    nn_forward_fn *forward;
    int nsizes;                    // the MLP's layer sizes, e.g. 3: 784, 256, 10
    int sizes[NN_MAX_LAYERS + 1];
    // FLOPs per image of a model whose layers are not all in sizes (the
    // CNN's convolutions), set by its init; 0: counted from sizes.
    double forward_flops, train_flops;
};

// An MLP with nsizes-1 Linear layers (sizes[0] inputs ... sizes[nsizes-1]
// classes) and a ReLU between each two. Weights He-initialised (normal,
// standard deviation √(2/in)) from seed, biases zero. Returns 0, or -1 with
// a message in err (a size out of 1..65536, too many layers, out of memory).
int nn_mlp_init(struct nn_model *m, int nsizes, const int *sizes, uint64_t seed, char *err,
                size_t errlen);
// Chapter 8's network (the one of the Keras and PyTorch MNIST examples):
// conv 3×3 1→32 (28→26), ReLU, maxpool 2 (→13), conv 3×3 32→64 (→11), ReLU,
// maxpool 2 (→5), flatten (1,600), Linear 1600→128, ReLU, Linear 128→10.
// Its input is b×784 (sizes[0] = 784, like the MLP's), seen as b×1×28×28.
// He-initialised from seed. Returns 0, or -1 with a message in err.
int nn_cnn_init(struct nn_model *m, uint64_t seed, char *err, size_t errlen);
// The CNN's FLOPs per image (its convolutions and Linear layers): forward
// 5,262,080; a training step 15,396,864 (forward, every dW, dX but the
// first layer's). nn_cnn_init stores them in the model, so nn_forward_flops
// and nn_train_flops return them for it.
double nn_cnn_forward_flops(void);
double nn_cnn_train_flops(void);

// Parses "784,256,10" into sizes (at most max). Returns the count, or -1.
int nn_parse_sizes(const char *text, int *sizes, int max);
void nn_model_free(struct nn_model *m);
// The number of floats in every parameter.
long nn_param_count(const struct nn_model *m);
// Sets every parameter's gradient to zero.
void nn_zero_grad(struct nn_model *m);
// FLOPs of one forward pass of one image through the model's matmuls
// (2·in·out per Linear layer; the CNN's convolutions too): a training step
// costs about three times this.
double nn_forward_flops(const struct nn_model *m);
// FLOPs of one training step per image through the model's matmuls: the
// forward and dW of every layer, and dX of every layer but the first (the
// images need no gradient). 818,176 for 784-256-10, not 3 × 406,528.
double nn_train_flops(const struct nn_model *m);

// A normal sample (Box-Muller over splitmix64): the same numbers on every
// machine for a given state.
double nn_normal(uint64_t *state);

#endif
