#ifndef ARRAYS_H
#define ARRAYS_H
// The arrays the tests of stages 07 and 08 make: random floats, and a copy
// widened to double for the double-precision references.
#include <stdint.h>
#include <stdlib.h>

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

#endif
