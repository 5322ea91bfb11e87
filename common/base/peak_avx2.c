// Built with -mavx2 -mfma; called only when the CPU has both.
#include "peak.h"

#if defined(__x86_64__)
#include <immintrin.h>

static volatile float sink;

double peak_throughput_avx2(long iters)
{
    // Twelve accumulators: more than latency (≈4 cycles) × FMA units (2).
    __m256 a0 = _mm256_set1_ps(0.1f), a1 = _mm256_set1_ps(0.2f), a2 = _mm256_set1_ps(0.3f);
    __m256 a3 = _mm256_set1_ps(0.4f), a4 = _mm256_set1_ps(0.5f), a5 = _mm256_set1_ps(0.6f);
    __m256 a6 = _mm256_set1_ps(0.7f), a7 = _mm256_set1_ps(0.8f), a8 = _mm256_set1_ps(0.9f);
    __m256 a9 = _mm256_set1_ps(1.0f), a10 = _mm256_set1_ps(1.1f), a11 = _mm256_set1_ps(1.2f);
    __m256 x = _mm256_set1_ps(sink + 0.999999f), y = _mm256_set1_ps(1e-6f);
    for (long i = 0; i < iters; i++) {
        a0 = _mm256_fmadd_ps(a0, x, y);
        a1 = _mm256_fmadd_ps(a1, x, y);
        a2 = _mm256_fmadd_ps(a2, x, y);
        a3 = _mm256_fmadd_ps(a3, x, y);
        a4 = _mm256_fmadd_ps(a4, x, y);
        a5 = _mm256_fmadd_ps(a5, x, y);
        a6 = _mm256_fmadd_ps(a6, x, y);
        a7 = _mm256_fmadd_ps(a7, x, y);
        a8 = _mm256_fmadd_ps(a8, x, y);
        a9 = _mm256_fmadd_ps(a9, x, y);
        a10 = _mm256_fmadd_ps(a10, x, y);
        a11 = _mm256_fmadd_ps(a11, x, y);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    sink = _mm256_cvtss_f32(s);
    return 2.0 * 8.0 * 12.0 * (double)iters;
}

double peak_chain_avx2(long iters)
{
    __m256 a = _mm256_set1_ps(0.1f), x = _mm256_set1_ps(sink + 0.999999f);
    __m256 y = _mm256_set1_ps(1e-6f);
    for (long i = 0; i < iters; i++)
        a = _mm256_fmadd_ps(a, x, y);
    sink = _mm256_cvtss_f32(a);
    return (double)iters;
}
#endif
