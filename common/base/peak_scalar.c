// Built with -fno-tree-vectorize: this is the peak of one-number-at-a-time code.
#include "peak.h"

static volatile float sink;

double peak_throughput_scalar(long iters)
{
    // Twelve independent chains: enough to hide the latency of any current
    // floating-point unit, so only the number of units limits us.
    float a0 = 0.1f, a1 = 0.2f, a2 = 0.3f, a3 = 0.4f, a4 = 0.5f, a5 = 0.6f;
    float a6 = 0.7f, a7 = 0.8f, a8 = 0.9f, a9 = 1.0f, a10 = 1.1f, a11 = 1.2f;
    float x = sink + 0.999999f, y = 1e-6f;
    for (long i = 0; i < iters; i++) {
        a0 = a0 * x + y;
        a1 = a1 * x + y;
        a2 = a2 * x + y;
        a3 = a3 * x + y;
        a4 = a4 * x + y;
        a5 = a5 * x + y;
        a6 = a6 * x + y;
        a7 = a7 * x + y;
        a8 = a8 * x + y;
        a9 = a9 * x + y;
        a10 = a10 * x + y;
        a11 = a11 * x + y;
    }
    sink = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
    return 2.0 * 12.0 * (double)iters;
}

double peak_chain_scalar(long iters)
{
    float a = 0.1f, x = sink + 0.999999f, y = 1e-6f;
    for (long i = 0; i < iters; i++)
        a = a * x + y;
    sink = a;
    return (double)iters;
}
