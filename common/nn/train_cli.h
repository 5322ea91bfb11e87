#ifndef TRAIN_CLI_H
#define TRAIN_CLI_H

#include <stdio.h>

#include "dataset.h"
#include "gemm_backend.h"
#include "nn.h"
#include "optim.h"
#include "train.h"

// What the training drivers (stage 07's run_mlp, stage 08's run_cnn) share:
// their common flags, and the run itself: the dataset, the optimizer, the
// epochs with a line and a CSV row each, --load and --save. A driver adds
// its model's flags and a function that builds the model.

struct train_options {
    const char *data;          // mnist, fashion, sample or a directory
    long batch, epochs, seed;
    long threads;              // 0: OpenMP's default (all cores)
    enum optim_kind optim;
    double lr, wd;             // lr < 0 until train_options_finish sets the default
    int cosine;                // 1: the learning rate decays per epoch (train_lr)
    const struct gemm_backend *gemm;
    const char *save, *load, *csv;
    int append;
};

// The shared defaults, with the driver's batch and epochs. Returns 0, or -1
// when $GEMM_BACKEND names no backend.
int train_options_init(struct train_options *o, long batch, long epochs);
// Takes flag (and its value, the next argument) when it is a shared one:
// returns the number of arguments used (1 or 2); 0 when flag is not a
// shared one; -1 after printing "error: ..." for a bad value.
int train_options_flag(struct train_options *o, const char *flag, const char *value);
// After every flag: the learning rate's default, and the flags that cannot
// go together. Returns 0, or -1 after printing the problem.
int train_options_finish(struct train_options *o);
// The learning rate of epoch e (1 ≤ e ≤ epochs): lr, or with --lr-decay
// cosine half a cosine from lr down towards 0 over the run,
//   lr · (1 + cos(π·(e − 1)/epochs)) / 2
// so the first epoch takes lr and the last a small fraction of it.
double train_lr(const struct train_options *o, long e);
// "adam" or "adam-cosine": the CSVs' optimizer column.
const char *train_recipe_name(const struct train_options *o);
// The usage lines of the shared flags (the driver's defaults in o).
void train_options_usage(FILE *f, const struct train_options *o);

// What a driver gives train_run about its model.
struct train_model {
    const char *stage;    // "stage-07": the CSV's machine lines
    const char *name;     // the CSV's model column: "784-256-10", "cnn"
    const char *backend;  // the CSV's backend column: "auto", "im2col+openblas"
    // Builds the model for the loaded dataset (weights from o->seed).
    // Returns 0, or -1 with a message in err.
    int (*build)(struct nn_model *m, const struct dataset *ds, const struct train_options *o,
                 const void *ctx, char *err, size_t errlen);
    const void *ctx;
};

// A training stage's results CSV (path "-": stdout): the machine lines of
// the GEMM benches and the dataset's, unless append finds the file already
// started; *fresh says whether the caller writes its header row. NULL after
// printing the problem. train_csv_close returns status, or 1 when writing
// failed.
FILE *train_csv_open(const char *path, const char *stage, const struct dataset *ds, int threads,
                     int append, int *fresh);
int train_csv_close(FILE *f, const char *path, int status);

// For the benchmarks: steps training steps on whole batches of s, in tr's
// order from *at on (wrapping round the split, so that every step does the
// same work), adding the time spent making batches to *data_s. Returns 0,
// or -1 with the error printed.
int train_fixed_steps(struct trainer *tr, struct nn_model *m, struct optim *o,
                      const struct dataset_split *s, int steps, int *at, double *data_s);

// Loads the data, builds the model (and --load), then trains o->epochs
// epochs, printing a line and writing a CSV row for each, or with
// --epochs 0 only evaluates; then --save. Returns the exit status.
int train_run(const struct train_options *o, const struct train_model *tm);

#endif
