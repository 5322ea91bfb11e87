#ifndef LANES_AVX512_H
#define LANES_AVX512_H

// The lanes l of a 16-float vector with lo ≤ l < hi, as a mask: the masks of
// the AVX-512 kernels in conv_direct_avx512.c and conv_implicit_avx512.c,
// where a row of floats starts or ends inside a vector. For files built with
// AVX-512 only.
#include <immintrin.h>

static inline __mmask16 lanes_between(int lo, int hi)
{
    if (lo < 0)
        lo = 0;
    if (hi > 16)
        hi = 16;
    if (hi <= lo)
        return 0;
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

#endif
