// The elementwise loops with AVX2: 8 floats a vector; the last n % 8 elements
// take the scalar loop. No FMA: the same bits as the scalar reference.
// vec.h sits outside the guard so the file is never an empty translation unit.
#include "vec.h"

#if defined(__x86_64__)

#include <immintrin.h>

enum { L = 8 };

void vec_add_avx2(long n, float *out, const float *a, const float *b)
{
    long i = 0;
    for (; i + L <= n; i += L)
        _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    vec_add_scalar(n - i, out + i, a + i, b + i);
}

void vec_add_to_avx2(long n, float *dst, const float *src)
{
    long i = 0;
    for (; i + L <= n; i += L)
        _mm256_storeu_ps(dst + i, _mm256_add_ps(_mm256_loadu_ps(dst + i), _mm256_loadu_ps(src + i)));
    vec_add_to_scalar(n - i, dst + i, src + i);
}

void vec_relu_avx2(long n, float *out, const float *x)
{
    const __m256 zero = _mm256_setzero_ps();
    long i = 0;
    for (; i + L <= n; i += L)
        _mm256_storeu_ps(out + i, _mm256_max_ps(_mm256_loadu_ps(x + i), zero));
    vec_relu_scalar(n - i, out + i, x + i);
}

// listing: relu_backward_avx2
// The comparison y > 0 gives a mask of all-ones lanes; AND with dy keeps dy
// where y > 0 and makes 0.0f elsewhere.
void vec_relu_backward_avx2(long n, float *dx, const float *y, const float *dy)
{
    // BEGIN SOLUTION task 6.2: the scalar loop with 8 floats a vector, the same bits
    const __m256 zero = _mm256_setzero_ps();
    long i = 0;
    for (; i + L <= n; i += L) {
        __m256 keep = _mm256_cmp_ps(_mm256_loadu_ps(y + i), zero, _CMP_GT_OQ);
        __m256 g = _mm256_and_ps(keep, _mm256_loadu_ps(dy + i));
        _mm256_storeu_ps(dx + i, _mm256_add_ps(_mm256_loadu_ps(dx + i), g));
    }
    vec_relu_backward_scalar(n - i, dx + i, y + i, dy + i);
    // stub: vec_relu_backward_scalar(n, dx, y, dy);
    // END SOLUTION
}
// end listing

// The mask: movemask takes the sign bits of the comparison, 8 lanes → 8 bits.
void vec_relu_mask_avx2(long n, uint8_t *bits, const float *y)
{
    const __m256 zero = _mm256_setzero_ps();
    long i = 0;
    for (; i + L <= n; i += L)
        bits[i / 8] = (uint8_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(y + i), zero,
                                                                _CMP_GT_OQ));
    vec_relu_mask_scalar(n - i, bits + i / 8, y + i);
}

// And back: lane l of a byte spread to all lanes is on when bit l is.
void vec_relu_mask_backward_avx2(long n, float *dx, const uint8_t *bits, const float *dy)
{
    const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256 zero = _mm256_setzero_ps();
    long i = 0;
    for (; i + L <= n; i += L) {
        __m256i b = _mm256_and_si256(_mm256_set1_epi32(bits[i / 8]), lane);
        __m256 on = _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, lane));
        _mm256_storeu_ps(dx + i, _mm256_add_ps(zero, _mm256_and_ps(on, _mm256_loadu_ps(dy + i))));
    }
    vec_relu_mask_backward_scalar(n - i, dx + i, bits + i / 8, dy + i);
}

#endif
