#ifndef TRAIN_H
#define TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "nn.h"
#include "optim.h"

struct gemm_backend;
struct tape;
struct tape_config;

// The training loop stages 07 and 08 share: batches from a dataset split,
// forward, loss, backward, update; evaluation without a tape.

// One step on one batch: x is b×m->inputs (the model's input width), y
// its b labels. Clears the tape, runs the forward and the cross-entropy
// loss, zeroes the gradients, runs the backward and the optimizer. Returns
// 0 and the batch's loss in *loss, or -1 with the tape's error set.
int train_step(struct tape *t, struct nn_model *m, struct optim *o, const float *x,
               const int *y, int b, float *loss);

struct trainer {
    struct tape *tape;
    int batch;
    int pixels;
    float *x;           // batch × pixels: one batch as floats, reused
    int *y;
    int *order;         // the epoch's shuffled order of the train split
    int norder;
    int progress;       // 1: a progress bar on stdout; trainer_init sets 0, the
                        // training run progress_wanted's answer
    int batch_threads;  // threads that convert a training batch: train_pass_threads()
};

struct epoch_stats {
    int epoch;
    double seconds;     // the epoch's training time (no evaluation)
    double images_per_s;
    double train_loss;  // mean loss over the epoch's batches, weighted by size
    double test_loss;
    double test_acc;    // 0..1
};

// The threads for a step's passes outside its GEMMs (the batch's conversion,
// the optimizer's update) on a GEMM backend: 0, all of OpenMP's, when the
// backend's GEMMs run on them too, so that a core updates what it wrote;
// else 1: beside a GEMM on one core, a second core would only move the
// data between the two, and beside OpenBLAS's threads OpenMP's would spin
// on the cores they need. trainer_init sets batch_threads from it; whoever
// makes the optimizer passes it on (optim_set_threads).
int train_pass_threads(const struct gemm_backend *gemm);

// A trainer for batches of batch images of `pixels` floats, on a tape made
// with config (NULL: the default; tape.h). Returns 0, or -1 with err.
int trainer_init(struct trainer *tr, const struct tape_config *config, int batch, int pixels,
                 int ntrain, char *err, size_t errlen);
void trainer_free(struct trainer *tr);

// One epoch over the split, in an order shuffled from seed + epoch. Fills
// seconds, images_per_s and train_loss. Returns 0, or -1 with err.
int train_epoch(struct trainer *tr, struct nn_model *m, struct optim *o,
                const struct dataset_split *s, uint64_t seed, int epoch, struct epoch_stats *st,
                char *err, size_t errlen);

// Mean loss and accuracy over a split, in batches, recording nothing; the
// tape's recording setting is as it was afterwards. Returns 0, or -1 with err.
int evaluate(struct trainer *tr, struct nn_model *m, const struct dataset_split *s,
             double *loss, double *acc, char *err, size_t errlen);

// The process's peak resident memory so far, in MB (getrusage).
double peak_rss_mb(void);

#endif
