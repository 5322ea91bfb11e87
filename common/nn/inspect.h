#ifndef INSPECT_H
#define INSPECT_H

#include <stdio.h>

#include "dataset.h"
#include "nn.h"
#include "train.h"

// What a trained model can show a student beyond its accuracy: which classes
// it confuses, the images it gets wrong with the most confidence, and its
// weights drawn as pictures. The training drivers write these files with
// --confusion, --wrong, --templates (run_mlp), --filters and --maps (run_cnn).

// Runs the model over split s without a tape: pred[i] is image i's class (the
// largest logit) and prob[i] the softmax probability the model gives it.
// Returns 0, or -1 with err.
int inspect_predict(struct trainer *tr, struct nn_model *m, const struct dataset_split *s,
                    int *pred, float *prob, char *err, size_t errlen);

// counts[label * DATASET_CLASSES + predicted]: how many images of each true
// class went to each predicted one. The counts add up to s->count.
void inspect_confusion(const struct dataset_split *s, const int *pred,
                       long counts[DATASET_CLASSES * DATASET_CLASSES]);
// The matrix as rows label,predicted,count,share (share: of that label's
// images), every cell, label-major.
void inspect_write_confusion(FILE *f, const long counts[DATASET_CLASSES * DATASET_CLASSES]);

// The k wrong images the model was surest of, surest first: rows
// rank,index,label,predicted,confidence,p0,...,p{pixels-1} (the pixels 0..255).
// Writes fewer when fewer are wrong. Returns how many it wrote, or -1 when
// out of memory.
int inspect_write_wrong(FILE *f, const struct dataset_split *s, const int *pred,
                        const float *prob, int k);

// n tiles of h×w floats (tile i at tiles + i·h·w, row-major) laid out as one
// matrix for gnuplot's `matrix with image`: cols tiles a row, rows of tiles
// as needed, a one-value gap of 0 between tiles, comma-separated. With
// scale_each each tile is divided by its largest |value| (so every tile
// spans -1..1 and a weak one is as visible as a strong one) and written in
// hundredths; else the values are written as they are. The `#` lines say the
// layout. Returns 0, or -1 when out of memory.
int inspect_write_mosaic(FILE *f, const float *tiles, int n, int h, int w, int cols,
                          int scale_each);

#endif
