#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include <stddef.h>

#include "nn.h"

// A model's parameters on disk. The file holds, little-endian:
//   "MNISTCKP" (8 bytes), version (u32), the model's desc (64 bytes),
//   the parameter count (u32), each parameter's ndim and 4 dims (u32),
//   then every parameter's floats in order, and last the SHA-256 of all the
//   bytes before it.

enum { CHECKPOINT_VERSION = 1 };

// Writes m's parameters to path: into path.tmp first, flushed, then renamed,
// so a crash never leaves a half-written file under path. Returns 0, or -1
// with a message in err.
int checkpoint_save(const char *path, const struct nn_model *m, char *err, size_t errlen);

// Reads path into m's parameters. m must already be the same model (desc,
// count and shapes); nothing of m changes unless the whole file is good.
// Returns 0, or -1 with a message naming the file and what is wrong
// (missing, not a checkpoint, another version, truncated, checksum,
// another model or shape).
int checkpoint_load(const char *path, struct nn_model *m, char *err, size_t errlen);

#endif
