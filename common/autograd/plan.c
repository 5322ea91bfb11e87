// Interval packing: offsets for buffers with lifetimes, in one block.
//
// Finding the smallest block is NP-hard in general (it is the dynamic
// storage allocation problem), so compilers use a greedy rule. This one is
// greedy by size, the rule of TensorFlow Lite's memory planner and of XLA's
// heap simulator: take the buffers largest first, and put each at the
// lowest offset where it shares no byte with a buffer already placed that
// is alive at the same time. Largest first because a step's block is decided
// by its few large tensors (a convolution's output, its gradient): placed
// first, they settle against each other, and the many small ones fill the
// gaps left between them. In the order of birth instead, a small early
// buffer can sit where a large later one needed to go and push it up.
// No one order is best for every step, so, as XLA's heap simulator does,
// plan_pack packs in two and keeps the smaller block: largest first, and
// largest area first (bytes × ticks alive), which places a long-lived
// buffer before a larger one that lives a tick or two, so that the short
// ones are packed around it rather than under it.
#include <stdlib.h>

#include "arena.h"
#include "plan.h"

int plan_overlap(const struct plan_buffer *a, const struct plan_buffer *b)
{
    return a->birth <= b->death && b->birth <= a->death;
}

struct entry {
    double key;  // bytes, or bytes × ticks alive: larger first
    int birth, index;
};

// Largest key first; of equal keys, the earlier born, then the lower index,
// so that the plan is the same on every machine (qsort is not stable).
static int larger_first(const void *x, const void *y)
{
    const struct entry *a = x, *b = y;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    if (a->birth != b->birth)
        return a->birth < b->birth ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

// A byte range [from, to) of the block taken by a placed buffer.
struct taken {
    size_t from, to;
};

static int lower_first(const void *x, const void *y)
{
    const struct taken *a = x, *b = y;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    return a->to < b->to ? -1 : a->to > b->to;
}

// listing: lowest_fit
// The lowest offset where `bytes` fit beside the n ranges taken by the
// buffers alive at the same time, sorted by where they start: the first gap
// between them that is wide enough, or the end of the last.
static size_t lowest_fit(const struct taken *t, int n, size_t bytes)
{
    // BEGIN SOLUTION task 6.6: which is the first gap between the taken ranges that holds bytes, and where do they go when none does?
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (at + bytes <= t[i].from)
            break;  // the gap before range i is wide enough
        if (t[i].to > at)
            at = t[i].to;  // skip past range i (ranges may overlap each other)
    }
    return at;
    // stub: // Past every range: correct, but nothing ever shares (the arena).
    // stub: size_t end = 0;
    // stub: for (int i = 0; i < n; i++)
    // stub:     end = t[i].to > end ? t[i].to : end;
    // stub: (void)bytes;
    // stub: return end;
    // END SOLUTION
}
// end listing

// Places the buffers in the order given, each at the lowest offset where it
// fits beside those placed before it that live when it does; returns the
// block size. taken is scratch for n ranges.
static size_t pack_in_order(struct plan_buffer *b, int n, const struct entry *order,
                            struct taken *taken)
{
    size_t size = 0;
    for (int k = 0; k < n; k++) {
        struct plan_buffer *x = &b[order[k].index];
        // The ranges of the buffers placed so far that live when x does.
        int m = 0;
        for (int j = 0; j < k; j++) {
            const struct plan_buffer *y = &b[order[j].index];
            if (plan_overlap(x, y))
                taken[m++] = (struct taken){y->offset, y->offset + y->bytes};
        }
        qsort(taken, (size_t)m, sizeof *taken, lower_first);
        x->offset = lowest_fit(taken, m, x->bytes);
        if (x->offset + x->bytes > size)
            size = x->offset + x->bytes;
    }
    return size;
}

// listing: plan_pack
size_t plan_pack(struct plan_buffer *b, int n)
{
    if (n <= 0)
        return 0;
    struct entry *order = arena_heap_alloc(sizeof *order * (size_t)n);
    struct taken *taken = arena_heap_alloc(sizeof *taken * (size_t)n);
    size_t *first = arena_heap_alloc(sizeof *first * (size_t)n);
    if (!order || !taken || !first) {
        arena_heap_free(order);
        arena_heap_free(taken);
        arena_heap_free(first);
        return 0;
    }
    // Largest first; keep its offsets.
    for (int i = 0; i < n; i++)
        order[i] = (struct entry){(double)b[i].bytes, b[i].birth, i};
    qsort(order, (size_t)n, sizeof *order, larger_first);
    size_t size = pack_in_order(b, n, order, taken);
    for (int i = 0; i < n; i++)
        first[i] = b[i].offset;
    // Largest area first; back to the first offsets unless it did better.
    for (int i = 0; i < n; i++)
        order[i] = (struct entry){(double)b[i].bytes * (b[i].death - b[i].birth + 1.0),
                                  b[i].birth, i};
    qsort(order, (size_t)n, sizeof *order, larger_first);
    size_t by_area = pack_in_order(b, n, order, taken);
    if (by_area < size)
        size = by_area;
    else
        for (int i = 0; i < n; i++)
            b[i].offset = first[i];
    arena_heap_free(order);
    arena_heap_free(taken);
    arena_heap_free(first);
    return size;
}
// end listing

// The bytes alive at one tick change only where a buffer is born, so the
// most alive at any tick is the most alive at some buffer's birth.
size_t plan_live(const struct plan_buffer *b, int n)
{
    size_t most = 0;
    for (int i = 0; i < n; i++) {
        size_t alive = 0;
        for (int j = 0; j < n; j++)
            if (b[j].birth <= b[i].birth && b[i].birth <= b[j].death)
                alive += b[j].bytes;
        if (alive > most)
            most = alive;
    }
    return most;
}
