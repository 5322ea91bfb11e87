#ifndef TRAIN_FLAGS_H
#define TRAIN_FLAGS_H

#include "flags.h"
#include "train_run.h"

// The flags of the training drivers (run_mlp, run_cnn), into o: --data,
// --batch, --epochs, --optim, --lr, --lr-decay, --wd, --seed, --threads,
// --gemm, --memory, --isa, --save, --load, --csv, --append. A driver adds its model's
// own (--layers, --conv) after them.
void train_flags_add(struct flags *f, struct train_options *o);

#endif
