#ifndef TRAIN_RUN_H
#define TRAIN_RUN_H

#include <stdio.h>

#include "dataset.h"
#include "env.h"
#include "nn.h"
#include "optim.h"
#include "tape.h"
#include "train.h"

struct flag_list;

// What the training drivers (stage 07's run_mlp, stage 08's run_cnn) share:
// their options, and the run itself: the dataset, the optimizer, the epochs
// with a line and a CSV row each, --load and --save. A driver adds its
// model's flags and a function that builds the model. The flags that set
// these options are read by train_flags.c.

struct train_options {
    const char *data;          // mnist, fashion, sample or a directory
    long batch, epochs, seed;
    int threads;               // 0: OpenMP's default (all cores)
    int optim;                 // enum optim_kind: --optim's index in optim_names()
    double lr, wd;             // lr < 0 until train_options_check sets the default
    int cosine;                // 1: the learning rate decays per epoch (train_lr)
    int gemm;                  // the GEMM backend: an index into gemm_backend_all()
    const struct conv_path *conv; // the convolutions' path (run_cnn's --conv); NULL: by shape
    int memory;                // where a step's tensors live, an enum memory_mode
    enum isa isa;              // --isa, or ISA_COUNT when not given
    const char *save, *load, *csv;
    int append;
    // --val N: N training images held out (chosen by seed) to evaluate on
    // after each epoch; the test set is then read once, after the last.
    long val;
    const char *confusion;     // --confusion FILE: the test set's confusion matrix
    const char *wrong;         // --wrong FILE: the wrong test images it was surest of
    int machine;               // --machine: print the machine lines and stop
    struct environment env;    // what the environment says (cli/env.h)
};

// The shared defaults, with the driver's batch and epochs, and the
// environment as the program found it (env_read).
void train_options_init(struct train_options *o, long batch, long epochs);
// After the flags: the learning rate's default, and the flags that cannot go
// together. Returns 0, or -1 with the problem in err.
int train_options_check(struct train_options *o, char *err, size_t errlen);
// The tape's config these options ask for: their GEMM backend, conv path and
// memory, on the ISA --isa named (else the default context's).
struct tape_config train_options_tape(const struct train_options *o);
// The learning rate of epoch e (1 ≤ e ≤ epochs): lr, or with --lr-decay
// cosine half a cosine from lr down towards 0 over the run,
//   lr · (1 + cos(π·(e − 1)/epochs)) / 2
// so the first epoch takes lr and the last a small fraction of it.
double train_lr(const struct train_options *o, long e);
// "adam" or "adam-cosine": the CSVs' optimizer column.
const char *train_recipe_name(const struct train_options *o);

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
    // What the driver writes about the trained model beyond the shared files
    // (run_mlp's --templates, run_cnn's --filters and --maps), or NULL.
    // Called once the training (or the --load) is done. Returns 0, or -1
    // with the error printed.
    int (*inspect)(struct nn_model *m, const struct dataset *ds, const struct train_options *o,
                   const struct train_model *tm, int threads);
    // Checks, before any training, that inspect can do what its flags ask of
    // this dataset (run_cnn's --image within the test set), or NULL. Returns
    // 0, or -1 with a message in err.
    int (*inspect_check)(const struct dataset *ds, const void *ctx, char *err, size_t errlen);
};

// A training stage's results CSV (path "-": stdout): the machine lines of
// the GEMM benches (with env's OPENBLAS_* variables) and the dataset's,
// unless append finds the file already started; *fresh says whether the
// caller writes its header row. NULL after printing the problem.
// train_csv_close returns status, or 1 when writing failed.
FILE *train_csv_open(const char *path, const char *stage, const struct dataset *ds, int threads,
                     enum isa isa, const struct environment *env, int append, int *fresh);
int train_csv_close(FILE *f, const char *path, int status);
// A benchmark's results file: train_csv_open's lines (never appending), then
// `# epoch_images: N`, the epoch its times are given per. NULL after printing
// the problem.
FILE *train_bench_open(const char *path, const char *stage, const struct dataset *ds, int threads,
                       enum isa isa, const struct environment *env, int epoch_images);

// What every training driver reports after an epoch: the line on stdout
// ("epoch   3  loss 0.31  test loss 0.34  test accuracy  87.90 %  ..."),
// judged naming what the second loss was measured on ("test", or "val" with
// --val); and its row of SCHEMA_TRAIN (framework ours, the peak memory last).
void train_epoch_print(const struct epoch_stats *st, const char *judged);
void train_epoch_row(FILE *csv, const char *model, const char *dataset, const char *backend,
                     int threads, long batch, const char *optimizer,
                     const struct epoch_stats *st);
// --save: the model into path, and a line saying so. Returns 0, or -1 after
// printing the problem.
int train_save(const char *path, const struct nn_model *m);

// A file of what a trained model shows (--confusion, --wrong, the drivers'
// pictures): the machine lines, the dataset's, and `# what:` saying what it
// holds (the training recipe and epochs). NULL after printing the problem.
FILE *train_result_open(const char *path, const struct train_options *o,
                        const struct train_model *tm, const struct dataset *ds, int threads,
                        const char *what);

// For the benchmarks: steps training steps on whole batches of s, in tr's
// order from *at on (wrapping round the split, so that every step does the
// same work), adding the time spent making batches to *data_s. Returns 0,
// or -1 with the error printed.
int train_fixed_steps(struct trainer *tr, struct nn_model *m, struct optim *o,
                      const struct dataset_split *s, int steps, int *at, double *data_s);

// For the benchmarks: inference, the forward alone with the tape recording
// nothing, on the batch tr->x holds (the last one train_fixed_steps made):
// warmup forwards, then steps timed. Returns the seconds per forward, or -1
// with the error printed. The tape records afterwards as it did before.
double train_time_forward(struct trainer *tr, struct nn_model *m, int warmup, int steps);

// For the benchmarks: arena against planned memory. The same model (build
// makes it alike each time) trained with Adam on one tape per memory mode of
// modes (enum memory_mode values), on whole batches of s: warmup steps on
// each, then rounds of steps steps, tape after tape, so that every mode sees
// the same minutes. Prints and writes to csv (when not NULL) one row per mode:
//   model,backend,threads,batch,memory,step_ms,live_bytes,reserved_bytes
// with the median round's time per step; the planned tape's last step goes
// to lifetimes (when not NULL; tape_write_lifetimes). Returns 0, or -1 with
// the error printed.
struct memory_study {
    const char *model;  // the CSV's model column
    int batch;
    struct tape_config config;  // its memory is each mode in turn
    int (*build)(struct nn_model *m, const void *ctx, char *err, size_t errlen);
    const void *ctx;
    int warmup, steps, rounds;
};
int train_memory_study(const struct memory_study *st, const struct dataset_split *s,
                       const struct flag_list *modes, int threads, FILE *csv, FILE *lifetimes);

// --machine: the `#` lines a training CSV of this stage starts with
// (machine_write's, on o's threads and ISA), on standard output. Returns
// the exit status.
int train_write_machine(const struct train_options *o, const char *stage);

// Loads the data, builds the model (and --load), then trains o->epochs
// epochs, printing a line and writing a CSV row for each, or with
// --epochs 0 only evaluates; then --save. With --machine it only writes the
// machine lines (train_write_machine). Returns the exit status.
int train_run(const struct train_options *o, const struct train_model *tm);

#endif
