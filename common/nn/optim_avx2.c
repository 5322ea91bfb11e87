// The optimizers' update loops with AVX2: 8 floats a vector; the last n % 8
// elements take the scalar loop. The same operations in the same order as
// optim.c's scalar loops and no FMA (add, mul, div and sqrt are correctly
// rounded in both), so every path gives the same bits.
// optim.h sits outside the guard so the file is never an empty translation unit.
#include "optim.h"

#if defined(__x86_64__)

#include <immintrin.h>

enum { L = 8 };

void sgd_update_avx2(long n, float *p, const float *g, float *v, float lr, float momentum,
                     float wd)
{
    const __m256 vlr = _mm256_set1_ps(lr), vmu = _mm256_set1_ps(momentum),
                 vwd = _mm256_set1_ps(wd);
    long i = 0;
    for (; i + L <= n; i += L) {
        __m256 pi = _mm256_loadu_ps(p + i);
        __m256 gi = _mm256_add_ps(_mm256_loadu_ps(g + i), _mm256_mul_ps(vwd, pi));
        __m256 vi = _mm256_add_ps(_mm256_mul_ps(vmu, _mm256_loadu_ps(v + i)), gi);
        _mm256_storeu_ps(v + i, vi);
        _mm256_storeu_ps(p + i, _mm256_sub_ps(pi, _mm256_mul_ps(vlr, vi)));
    }
    sgd_update_scalar(n - i, p + i, g + i, v + i, lr, momentum, wd);
}

// listing: adam_avx2
void adam_update_avx2(long n, float *p, const float *g, float *m, float *v,
                      const struct adam_step *s)
{
    // BEGIN SOLUTION task 7.2: the scalar update with 8 floats a vector, same order, no FMA
    const __m256 lr = _mm256_set1_ps(s->lr), wd = _mm256_set1_ps(s->weight_decay);
    const __m256 b1 = _mm256_set1_ps(s->beta1), c1 = _mm256_set1_ps(1.0f - s->beta1);
    const __m256 b2 = _mm256_set1_ps(s->beta2), c2 = _mm256_set1_ps(1.0f - s->beta2);
    const __m256 bias1 = _mm256_set1_ps(s->bias1), bias2 = _mm256_set1_ps(s->bias2);
    const __m256 eps = _mm256_set1_ps(s->eps);
    long i = 0;
    for (; i + L <= n; i += L) {
        __m256 gi = _mm256_add_ps(_mm256_loadu_ps(g + i),
                                  _mm256_mul_ps(wd, _mm256_loadu_ps(p + i)));
        __m256 mi = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)),
                                  _mm256_mul_ps(c1, gi));
        __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                  _mm256_mul_ps(c2, _mm256_mul_ps(gi, gi)));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        __m256 mhat = _mm256_div_ps(mi, bias1), vhat = _mm256_div_ps(vi, bias2);
        __m256 step = _mm256_div_ps(_mm256_mul_ps(lr, mhat),
                                    _mm256_add_ps(_mm256_sqrt_ps(vhat), eps));
        _mm256_storeu_ps(p + i, _mm256_sub_ps(_mm256_loadu_ps(p + i), step));
    }
    adam_update_scalar(n - i, p + i, g + i, m + i, v + i, s);
    // stub: adam_update_scalar(n, p, g, m, v, s);
    // END SOLUTION
}
// end listing

#endif
