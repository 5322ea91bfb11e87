#ifndef POOL_ROW_H
#define POOL_ROW_H

#include "cpu.h"

// One row of 2×2 max pooling, the inner loop of op_maxpool2: from the two
// input rows top and bottom (bottom = top + w in the plane), ow outputs
//   y[q] = the largest of top[2q], top[2q+1], bottom[2q], bottom[2q+1]
//   where[q] = first + the offset of that element (0, 1, w or w + 1, plus 2q)
// where first is top[0]'s index in the batch. The four are taken in that
// (reading) order, and a later one wins only when it is larger, or a NaN
// when the best so far is not: ties go to the first, a NaN is passed on,
// as in PyTorch. Every path gives the same outputs and indices.
typedef void maxpool_row_fn(const float *top, const float *bottom, int w, int ow, int first,
                            float *y, int *where);

maxpool_row_fn maxpool_row_scalar;
maxpool_row_fn maxpool_row_avx2;
maxpool_row_fn maxpool_row_avx512;
maxpool_row_fn maxpool_row_neon;

// The row kernel of isa, which must be one this CPU runs (isa_supported):
// op_maxpool2 asks for its tape's ISA.
maxpool_row_fn *maxpool_row_kernel(enum isa isa);

#endif
