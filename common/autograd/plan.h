#ifndef PLAN_H
#define PLAN_H

#include <stddef.h>

// Buffer assignment, as a compiler does it for the temporaries of a
// program: given every buffer of a training step with its size and its
// lifetime (the first and the last moment it holds something a later
// moment reads), give each an offset in one block so that two buffers
// alive at the same moment never share a byte. Moments are ticks: one per
// op of the forward, one per node of the backward (tape.c counts them).

// A lifetime that reaches the end of the step: a tensor the caller reads
// after the step (the loss, the batch), or the tape's own records.
enum { PLAN_END = 1 << 30 };

struct plan_buffer {
    size_t bytes;      // a multiple of 64
    int birth, death;  // the first and the last tick it is alive; birth ≤ death
    size_t offset;     // set by plan_pack: a multiple of 64
};

// Two buffers may share bytes when their lifetimes do not overlap.
int plan_overlap(const struct plan_buffer *a, const struct plan_buffer *b);

// Sets every buffer's offset and returns the block size they need: the
// largest offset + bytes. Greedy, in two orders (see plan.c). Returns 0 with no
// offset set when out of memory for its scratch.
size_t plan_pack(struct plan_buffer *b, int n);

// The most bytes alive at any one tick: what any packing needs at least,
// and what a step truly holds at its worst moment.
size_t plan_live(const struct plan_buffer *b, int n);

#endif
