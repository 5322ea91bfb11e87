#ifndef SCHEMAS_H
#define SCHEMAS_H

// The header rows of the results files more than one program writes or
// reads, each declared once (the row, after the `#` lines). The C programs
// write them from here; tools/schema.py and tools/plot-lib.sh read
// schemas.c, so the Python tools and the plot scripts check against the
// same text.
extern const char SCHEMA_GEMM[];       // a GEMM benchmark's rows (stages 01-05)
extern const char SCHEMA_TRAIN[];      // a training run's epochs (stages 07-09)
extern const char SCHEMA_TRAIN_VAL[];  // the same with --val: held-out images
extern const char SCHEMA_SPEED[];      // a training stage's speed: seconds per epoch

#endif
