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

// One row of the ReLU and pooling that op_conv2d_relu_maxpool2 fuses after a
// convolution computed by a GEMM: from two rows of a plane of the GEMM's
// output, top and bottom, and the plane's bias, ow outputs
//   y[q] = the largest of relu(top[2q] + bias), relu(top[2q+1] + bias),
//          relu(bottom[2q] + bias), relu(bottom[2q+1] + bias)
//   code[q] = 0, 1, 2 or 3: which of the four, the first on a tie.
// relu(v) is v > 0 ? v : 0, so the four are never NaN and the rule is the
// one above: a later one wins only when it is larger. The bias is added
// first, as the unfused copy does: every path gives the bits of op_conv2d_relu
// then op_maxpool2.
typedef void relu_pool_row_fn(const float *top, const float *bottom, int ow, float bias, float *y,
                              unsigned char *code);

relu_pool_row_fn relu_pool_row_scalar;
relu_pool_row_fn relu_pool_row_avx2;
relu_pool_row_fn relu_pool_row_neon;

// The kernel of isa, as maxpool_row_kernel.
relu_pool_row_fn *relu_pool_row_kernel(enum isa isa);

// The fused ReLU and pooling of a whole plane (one channel of one image):
// from the GEMM's oh rows of ow floats and the plane's bias, its ph = oh/2
// rows of pw = ow/2 windows, each row as relu_pool_row, into y and code
// (ph·pw each, row after row); an odd last row or column belongs to no
// window. One call a plane, not one a row; it reads nothing outside the
// plane and writes nothing outside its ph·pw outputs. Every path gives the
// same bits.
typedef void relu_pool_plane_fn(const float *plane, int oh, int ow, float bias, float *y,
                                unsigned char *code);

relu_pool_plane_fn relu_pool_plane_scalar;
relu_pool_plane_fn relu_pool_plane_avx2;
relu_pool_plane_fn relu_pool_plane_neon;

// The kernel of isa, as maxpool_row_kernel.
relu_pool_plane_fn *relu_pool_plane_kernel(enum isa isa);

// The backward of that row: the pooling's, then the ReLU's. From pw pooled
// gradients g, the pooled outputs y and their codes, both rows of the
// convolution's gradient that the windows cover, top and bottom, ow floats
// each (ow is 2·pw or 2·pw + 1; the odd column belongs to no window):
//   the element code[q] names in window q gets 0.0f + g[q] when y[q] > 0,
//   every other element of the two rows gets 0.
// 0.0f + g is what the unfused ops' sums into zeroed gradients give: a −0
// becomes +0. Every path gives the same bits, and writes nothing else.
typedef void relu_pool_row_backward_fn(const float *g, const float *y, const unsigned char *code,
                                       int pw, int ow, float *top, float *bottom);

// The plain loop; the vector versions live inside the plane kernels below.
relu_pool_row_backward_fn relu_pool_row_backward_scalar;

// Σ v[0..n−1] as ROW_SUM_PARTS = 32 interleaved partial sums, part[p mod 32]
// += v[p] in order, added at the end by row_sum_parts: 32 independent chains
// of additions instead of one (which waits an add's latency per element),
// in a fixed order, so the same bits on every run. Eight chains, one vector
// of AVX2, were not enough: each vector add waited for the one before it,
// where the core could have started several, so a plane's sum waited on
// its one chain. The plane kernels below give these bits too, the parts in
// four vectors of AVX2's eight lanes (eight of NEON's four).
enum { ROW_SUM_PARTS = 32 };

float row_sum(const float *v, long n);

// The 32 parts added in one fixed order: part l, l + 8, l + 16 and l + 24
// as (part[l] + part[l + 8]) + (part[l + 16] + part[l + 24]), which is what
// adding four vectors of eight lanes as (a + b) + (c + d) gives, then those
// eight sums s as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
float row_sum_parts(const float part[ROW_SUM_PARTS]);

// The backward of a whole plane (one channel of one image) of the fused op:
// its ph rows of pw windows (g, y and code hold ph·pw each, row after row)
// sent back into the convolution's gradient plane, oh rows of ow floats
// (oh is 2·ph or 2·ph + 1, ow is 2·pw or 2·pw + 1), every element of it
// written: each row of windows as relu_pool_row_backward, a last odd row
// zero. Returns row_sum of the plane, its share of the bias's gradient.
// One call a plane, not one a row, and the sum taken while the plane is
// still in L1; nothing outside the plane is written. Every path gives the
// same bits.
typedef float relu_pool_plane_backward_fn(const float *g, const float *y, const unsigned char *code,
                                          int ph, int pw, int oh, int ow, float *plane);

relu_pool_plane_backward_fn relu_pool_plane_backward_scalar;
relu_pool_plane_backward_fn relu_pool_plane_backward_avx2;
relu_pool_plane_backward_fn relu_pool_plane_backward_neon;

// The kernel of isa, as maxpool_row_kernel.
relu_pool_plane_backward_fn *relu_pool_plane_backward_kernel(enum isa isa);

#endif
