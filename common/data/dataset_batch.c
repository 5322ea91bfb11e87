// What a training loop does with a dataset each step: shuffle the order
// once per epoch, then turn one batch of uint8 images into floats.
#include <stdint.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "dataset.h"

// splitmix64: a tiny generator whose output depends only on the seed.
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

// A uniform integer in 0..bound-1: draws above the last whole multiple of
// bound are thrown away, so no value is more likely than another.
static uint64_t below(uint64_t *state, uint64_t bound)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do
        r = splitmix64(state);
    while (r >= limit);
    return r % bound;
}

// listing: dataset_shuffle
void dataset_shuffle(int *order, int n, uint64_t seed)
{
    uint64_t state = seed;
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)below(&state, (uint64_t)i + 1);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}
// end listing

// listing: dataset_batch
int dataset_batch(const struct dataset_split *s, const int *order, int start, int count,
                  float *x, int *y)
{
    return dataset_batch_threads(s, order, start, count, x, y, 0);
}

// Each image is converted on its own, so threads can share a batch: a
// contiguous run of images each, about the rows of x that the same thread
// then packs for the first GEMM (its threads share that packing the same way).
int dataset_batch_threads(const struct dataset_split *s, const int *order, int start,
                          int count, float *x, int *y, int threads)
{
    if (start < 0 || start >= s->count || count <= 0)
        return 0;
    if (count > s->count - start)
        count = s->count - start;
    // Scaled to [0, 1], not normalised: the numbers PyTorch's ToTensor
    // gives, so both frameworks train on the same inputs. A byte has 256
    // values, so 256 divisions make a table and each of the 50,176 pixels
    // of a batch of 64 costs a load instead of a division.
    float scale[256];
    for (int v = 0; v < 256; v++)
        scale[v] = (float)v / 255.0f;
#if defined(_OPENMP)
    if (threads <= 0)
        threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    // A thread must get a few images' worth (about 10 µs) to repay waking it.
    if (threads > count / 4)
        threads = count / 4 > 1 ? count / 4 : 1;
#else
    threads = 1;
#endif
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int b = 0; b < count; b++) {
        int i = order ? order[start + b] : start + b;
        const unsigned char *src = s->images + (size_t)i * s->pixels;
        float *dst = x + (size_t)b * s->pixels;
        // In a shuffled order the next image is anywhere in 47 MB: ask for
        // its cache lines now, so they arrive while this one is converted.
        if (b + 1 < count) {
            int next = order ? order[start + b + 1] : start + b + 1;
            const unsigned char *ahead = s->images + (size_t)next * s->pixels;
            for (int p = 0; p < s->pixels; p += 64)
                __builtin_prefetch(ahead + p);
        }
        for (int p = 0; p < s->pixels; p++)
            dst[p] = scale[src[p]];
        y[b] = s->labels[i];
    }
    return count;
}
// end listing
