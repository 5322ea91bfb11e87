#ifndef NN_H
#define NN_H

#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

struct tape;

// The models the training chapters build on the tape of common/autograd: a
// model is a list of parameters and a forward function, whatever its
// layers. model.c holds what every model shares, mlp.c and cnn.c the two
// of the book.

enum { NN_MAX_LAYERS = 8, NN_MAX_PARAMS = 32 };

struct nn_model;
// The forward pass: x is b×inputs (a batch of flattened images), the result
// is b×classes logits, or NULL with the tape's error set.
typedef struct tensor *nn_forward_fn(struct nn_model *m, struct tape *t, struct tensor *x);

// A model: what it is (a description the checkpoint records and checks,
// e.g. "mlp 784,256,10"), its parameters in a fixed order (the optimizer's
// and the checkpoint's order), its forward, the width of one input, and what
// one example costs, counted by the model's init.
struct nn_model {
    char desc[64];
    int nparams;
    struct tensor *params[NN_MAX_PARAMS];
    nn_forward_fn *forward;
    int inputs;            // floats per example: 784 for a flattened 28×28 image
    double forward_flops;  // one forward pass of one example through its layers
    double train_flops;    // one training step per example (forward, dW, dX)
};

// An MLP with nsizes-1 Linear layers (sizes[0] inputs ... sizes[nsizes-1]
// classes) and a ReLU between each two. Weights He-initialised (normal,
// standard deviation √(2/in)) from seed, biases zero. Returns 0, or -1 with
// a message in err (a size out of 1..65536, too many layers, out of memory).
int nn_mlp_init(struct nn_model *m, int nsizes, const int *sizes, uint64_t seed, char *err,
                size_t errlen);
// Parses "784,256,10" into sizes (at most max). Returns the count, or -1.
int nn_parse_sizes(const char *text, int *sizes, int max);
// The FLOPs per example of that MLP's matmuls: a forward pass (2·in·out per
// Linear layer) and a training step (the forward and dW of every layer, and
// dX of every layer but the first: the images need no gradient). 406,528 and
// 818,176 for 784-256-10, so a step is not 3 × the forward.
void nn_mlp_flops(int nsizes, const int *sizes, double *forward, double *train);

// Chapter 8's network (the one of the Keras and PyTorch MNIST examples):
// conv 3×3 1→32 (28→26), ReLU, maxpool 2 (→13), conv 3×3 32→64 (→11), ReLU,
// maxpool 2 (→5), flatten (1,600), Linear 1600→128, ReLU, Linear 128→10.
// Its input is b×784, like the MLP's, seen as b×1×28×28. He-initialised from
// seed. Returns 0, or -1 with a message in err.
int nn_cnn_init(struct nn_model *m, uint64_t seed, char *err, size_t errlen);
// The CNN's FLOPs per image (its convolutions and Linear layers): forward
// 5,262,080; a training step 15,396,864 (forward, every dW, dX but the
// first layer's). nn_cnn_init stores them in the model.
double nn_cnn_forward_flops(void);
double nn_cnn_train_flops(void);
// How many of the CNN's two convolutions run with their ReLU and pooling as
// one op, op_conv2d_relu_maxpool2, instead of op_conv2d_relu then
// op_maxpool2, when the tape's config leaves it to the model (fused_pools
// -1): both, the fastest measured (chapter 8). The same bits, another
// speed; the bench and the tests set the config's fused_pools to compare.
enum { NN_CNN_FUSED = 2 };

// What every model shares (model.c).
void nn_model_free(struct nn_model *m);
// The number of floats in every parameter.
long nn_param_count(const struct nn_model *m);
// Sets every parameter's gradient to zero.
void nn_zero_grad(struct nn_model *m);
// The same without a pass over them: the next backward writes each gradient
// where it would add into zeros (tensor_forget_grad).
void nn_forget_grad(struct nn_model *m);
// Appends a parameter of that shape, zeroed, to m. Returns it, or NULL when
// out of memory or m has NN_MAX_PARAMS already.
struct tensor *nn_add_param(struct nn_model *m, int ndim, const int *shape);
// He's initialisation: w drawn normal with standard deviation √(2/fan_in),
// from *state (which it advances), fan_in what one output sums over.
void nn_he_fill(struct tensor *w, int fan_in, uint64_t *state);
// A normal sample (Box-Muller over splitmix64): the same numbers on every
// machine for a given state.
double nn_normal(uint64_t *state);

#endif
