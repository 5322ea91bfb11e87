#ifndef VEC_H
#define VEC_H

#include <stdint.h>

#include "cpu.h"

// The elementwise loops the ops spend their non-GEMM time in, over n floats.
// Each has a plain C version (the reference, vec_*_scalar) and, where it
// pays, an AVX2, AVX-512 or NEON one chosen at run time. The vector versions
// do the same operations in the same order per element (no FMA), so every
// path gives the same bits.
struct vec_kernels {
    enum isa isa;
    void (*add)(long n, float *out, const float *a, const float *b);  // out = a + b
    void (*add_to)(long n, float *dst, const float *src);             // dst += src
    void (*relu)(long n, float *out, const float *x);                 // out = max(x, 0)
    // dx += dy where y > 0 (y is relu's output)
    void (*relu_backward)(long n, float *dx, const float *y, const float *dy);
    // A ReLU's mask, one bit an element (a 32nd of the floats): bit i % 8 of
    // bits[i / 8] is y[i] > 0, (n + 7) / 8 bytes; and the backward from it,
    // dx = 0 + (bit ? dy : 0), which is relu_backward's into zeros, bit for bit.
    void (*relu_mask)(long n, uint8_t *bits, const float *y);
    void (*relu_mask_backward)(long n, float *dx, const uint8_t *bits, const float *dy);
};

// The kernels of isa, which must be one this CPU runs (isa_supported): the
// ops ask for their tape's ISA (tape_config(t)->isa), the rest for the ISA
// of the context they are handed.
const struct vec_kernels *vec_kernels(enum isa isa);

void vec_add_scalar(long n, float *out, const float *a, const float *b);
void vec_add_to_scalar(long n, float *dst, const float *src);
void vec_relu_scalar(long n, float *out, const float *x);
void vec_relu_backward_scalar(long n, float *dx, const float *y, const float *dy);
void vec_relu_mask_scalar(long n, uint8_t *bits, const float *y);
void vec_relu_mask_backward_scalar(long n, float *dx, const uint8_t *bits, const float *dy);

void vec_add_avx2(long n, float *out, const float *a, const float *b);
void vec_add_to_avx2(long n, float *dst, const float *src);
void vec_relu_avx2(long n, float *out, const float *x);
void vec_relu_backward_avx2(long n, float *dx, const float *y, const float *dy);
void vec_relu_mask_avx2(long n, uint8_t *bits, const float *y);
void vec_relu_mask_backward_avx2(long n, float *dx, const uint8_t *bits, const float *dy);

void vec_add_avx512(long n, float *out, const float *a, const float *b);
void vec_add_to_avx512(long n, float *dst, const float *src);
void vec_relu_avx512(long n, float *out, const float *x);
void vec_relu_backward_avx512(long n, float *dx, const float *y, const float *dy);

void vec_add_neon(long n, float *out, const float *a, const float *b);
void vec_add_to_neon(long n, float *dst, const float *src);
void vec_relu_neon(long n, float *out, const float *x);
void vec_relu_backward_neon(long n, float *dx, const float *y, const float *dy);

#endif
