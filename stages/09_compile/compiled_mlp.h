#ifndef COMPILED_MLP_H
#define COMPILED_MLP_H

#include <stddef.h>

#include "dataset.h"
#include "lazy.h"
#include "nn.h"
#include "optim.h"

// Chapter 7's MLP, trained through the compiler of common/lazy/: its whole
// training step (forward, loss, backward, optimizer) is one graph, built
// once, compiled once into a handful of kernels, and run once per batch.
// The weights are the nn_model's own (made by nn_mlp_init, saved by
// checkpoint_save): the compiled program reads and updates them in place.

struct compiled_mlp {
    struct nn_model *model;
    int layers, batch, pixels, classes;
    struct optim_config opt;
    long steps;                         // optimizer steps taken
    struct lazy_graph *g;
    // The batch: images, one-hot labels, 1 for a real row and 0 for padding
    // (the last batch of an epoch is padded to the full size, so one program
    // serves every batch), and 1/rows.
    struct lazy_buffer x, y, mask, inv_rows;
    float *x_data, *y_data, *mask_data, inv_rows_data;
    // The weights (the model's tensors; biases seen as 1×out), the
    // optimizer's state per weight (Adam's two moments, SGD's velocity), and
    // its per-step numbers: the learning rate and Adam's 1 − βᵗ.
    struct lazy_buffer param[NN_MAX_PARAMS], state[2 * NN_MAX_PARAMS];
    float *state_data[2 * NN_MAX_PARAMS];
    struct lazy_buffer lr, bias1, bias2;
    float lr_data, bias1_data, bias2_data;
    struct lazy_node *layer1, *logits, *loss;
    struct lazy_program *train;         // the step: the loss, and every update in place
    struct lazy_program *eval;          // logits and loss, nothing updated
};

// Builds the graphs for model m (an MLP from nn_mlp_init), batches of
// `batch` images and optimizer o, and compiles the training step and the
// evaluation. Returns 0, or -1 with err.
int compiled_mlp_init(struct compiled_mlp *c, struct nn_model *m, int batch,
                      const struct optim_config *o, const struct lazy_options *lo, char *err,
                      size_t errlen);
void compiled_mlp_free(struct compiled_mlp *c);

// One training step on the b ≤ batch images in c->x_data (b rows, the rest
// is padding the step zeroes) with labels y. Returns 0 and the mean loss, or
// -1 with err.
int compiled_mlp_step(struct compiled_mlp *c, const int *y, int b, float *loss, char *err,
                      size_t errlen);
// The same batch through the evaluation: the mean loss and the number of
// rows whose largest logit is the label.
int compiled_mlp_eval(struct compiled_mlp *c, const int *y, int b, float *loss, int *right,
                      char *err, size_t errlen);
void compiled_mlp_set_lr(struct compiled_mlp *c, float lr);

// The graph of the first layer's forward as it is built (before any
// rewrite), in Graphviz's language: the chapter's drawing.
void compiled_mlp_dot(const struct compiled_mlp *c, FILE *f);
// Every kernel of the training step, then of the evaluation, as
// lazy_program_dump writes them (markers "step-NAME" and "eval-NAME"), under
// a line naming the model: the file chapter 10 quotes its kernels from.
void compiled_mlp_kernels(const struct compiled_mlp *c, const char *model, FILE *f);

// An epoch over split s in an order shuffled from seed + epoch, and the
// mean loss and accuracy over a split, as common/nn/train.c's train_epoch
// and evaluate do for the tape. order holds s->count ints.
int compiled_mlp_epoch(struct compiled_mlp *c, const struct dataset_split *s, int *order,
                       uint64_t seed, int epoch, int progress, double *seconds,
                       double *train_loss, char *err, size_t errlen);
int compiled_mlp_evaluate(struct compiled_mlp *c, const struct dataset_split *s, double *loss,
                          double *acc, char *err, size_t errlen);

#endif
