#ifndef ARRAYS_H
#define ARRAYS_H
// The arrays the tests of stages 07 and 08 make: random floats, a copy
// widened to double for the double-precision references, and where two runs'
// floats first differ in their bits.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mat.h"

static float *filled(long n, uint64_t seed)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    mat_fill_random(v, 1, (int)n, (int)n, seed);
    return v;
}

static double *widened(const float *v, long n)
{
    double *d = malloc(sizeof(double) * (size_t)n);
    for (long i = 0; i < n; i++)
        d[i] = v[i];
    return d;
}

// The first index where a and b differ bit for bit, or -1.
static inline long first_difference(const float *a, const float *b, long n)
{
    for (long i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0)
            return i;
    return -1;
}

#endif
