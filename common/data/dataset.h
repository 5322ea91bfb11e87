#ifndef DATASET_H
#define DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "idx.h"

// A dataset: the four standard IDX files of MNIST and its kin, read into
// memory as they are, uint8 pixels (60,000 images are 47 MB as bytes, 188 MB
// as floats: a batch is turned into floats only when it is used).

enum { DATASET_CLASSES = 10 };

struct dataset_split {
    int count;                    // images
    int rows, cols, pixels;       // 28, 28, 784
    const unsigned char *images;  // count × pixels, row-major, 0..255
    const unsigned char *labels;  // count, each 0..9
    struct idx image_file, label_file;
};

struct dataset {
    char name[64];       // "fashion", "mnist", "sample", or the directory's
    char dir[4096];      // where the files were read from
    struct dataset_split train, test;
    // "" when datasets/SHA256SUMS knows every file; else one line for the
    // program to print: the list does not know this set, and the four
    // files' SHA-256 in the list's own form, so a reader can add them.
    char note[1536];
};

// Loads a dataset by name:
//   "mnist", "fashion"  from DIR/NAME/, DIR being data_dir when not NULL
//                       (a program passes $DATA_DIR), else the checkout's
//                       build/datasets (base/checkout.h finds the checkout);
//   "sample"            the small set committed in datasets/sample/;
//   anything else       a directory, however it is written (mysplit,
//                       mysplit/, ./mysplit, /data/mysplit).
// Each file may be raw or .gz. Every file is checked: its IDX header and
// length, images against labels (labels 0..9, train and test images of one
// size), and its SHA-256 against datasets/SHA256SUMS by the rule in
// checksums.c. A named set must be the list's; a directory the list does
// not know loads, with a note in ds->note.
// Returns 0, or -1 with a message (what, which file, how to fix it) in err.
int dataset_load(const char *name, const char *data_dir, struct dataset *ds, char *err,
                 size_t errlen);
// The set a benchmark times on: name when it is not NULL (an error when it
// does not load), else Fashion-MNIST when `make datasets` fetched it, else the
// committed sample, with a note on stderr. Real data either way, so the data
// time in a step is real. data_dir as for dataset_load. A set the list does
// not know gets its note (ds->note) on stderr too. Returns 0, or -1 with a
// message in err.
int dataset_load_for_bench(const char *name, const char *data_dir, struct dataset *ds, char *err,
                           size_t errlen);
void dataset_free(struct dataset *ds);

// order[0..n) becomes a permutation of 0..n-1 that depends only on seed
// (Fisher-Yates with a splitmix64 generator): the same on every machine.
// Give each epoch its own seed, e.g. seed + epoch.
void dataset_shuffle(int *order, int n, uint64_t seed);

// Fills one batch: images order[start..start+count) (or start.. when order
// is NULL) scaled to [0, 1] as x (count × pixels, row-major) and their labels
// as y. Returns how many it filled: fewer than count at the end of the split.
// The images are shared among OpenMP's threads.
int dataset_batch(const struct dataset_split *s, const int *order, int start, int count,
                  float *x, int *y);
// The same on `threads` threads (0: OpenMP's count; 1: the calling thread).
// The same floats on any count.
int dataset_batch_threads(const struct dataset_split *s, const int *order, int start,
                          int count, float *x, int *y, int threads);

// A training split cut in two: val holds n of its images, chosen by seed (the
// same n and seed give the same images on every machine), train the rest;
// no image is in both. Each part keeps the file's order. index[i] is the
// original position of the training part's image i (i < train.count), then
// of the validation part's (index[train.count + j]). The parts own copies of
// their bytes: free them with dataset_holdout_free.
struct dataset_holdout {
    struct dataset_split train, val;
    int *index;
    unsigned char *images, *labels;
};
// Returns 0, or -1 with a message in err (n out of 1..count-1, out of memory).
int dataset_holdout(const struct dataset_split *all, int n, uint64_t seed,
                    struct dataset_holdout *h, char *err, size_t errlen);
void dataset_holdout_free(struct dataset_holdout *h);

#endif
