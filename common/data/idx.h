#ifndef IDX_H
#define IDX_H

#include <stddef.h>
#include <stdint.h>

// The IDX format of MNIST: a big-endian header, then the data.
//   bytes 0-1  zero
//   byte  2    the element type: 0x08, unsigned byte (the only one read here)
//   byte  3    the number of dimensions: 1 (labels) or 3 (images)
//   then one 32-bit big-endian size per dimension, then the elements,
//   row-major, dims[0]·dims[1]·… bytes and not one more.
// A file may be gzip-compressed (it then starts with 0x1f 0x8b).

struct idx {
    int ndims;                  // 1 or 3
    uint32_t dims[3];           // dims[0] items, each dims[1]×dims[2] bytes
    size_t count;               // dims[0]
    size_t item_size;           // bytes per item: 1 for labels, rows·cols for images
    const unsigned char *data;  // count × item_size bytes, inside bytes
    unsigned char *bytes;       // the whole decompressed file, header included
    size_t nbytes;
};

// Reads path (raw or gzip) into out. Returns 0, or -1 with a message in
// err[0..errlen) naming the file, what is wrong and how to fix it; out then
// holds nothing to free. Never reads past what the header declares.
int idx_read(const char *path, struct idx *out, char *err, size_t errlen);

// The same for a file already in memory (raw or gzip); name is only used in
// messages. The input is not kept: out owns a copy.
int idx_parse(const unsigned char *file, size_t n, const char *name, struct idx *out,
              char *err, size_t errlen);

void idx_free(struct idx *x);

// The check the training stages need on top: images (3 dimensions) and
// labels (1 dimension) of the same count, every label in 0..classes-1.
int idx_check_pair(const struct idx *images, const char *images_name, const struct idx *labels,
                   const char *labels_name, int classes, char *err, size_t errlen);

// The hint every error ends with.
#define IDX_HINT "run `make datasets` to fetch it again"

#endif
