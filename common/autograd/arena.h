#ifndef ARENA_H
#define ARENA_H

#include <stddef.h>

// A bump allocator for everything one training step makes and then forgets:
// activations, gradients, the tape's nodes, scratch. Allocating is moving a
// cursor; freeing is arena_reset(), which moves it back to the start and
// keeps every block. The first step reserves what a step needs; a later step
// that asks for the same sizes in the same order reuses those blocks and
// never calls malloc.
struct arena;

// An empty arena; its first block (at least min_block bytes) is reserved on
// the first allocation. NULL when out of memory.
struct arena *arena_create(size_t min_block);
void arena_destroy(struct arena *a);

// bytes of 64-byte aligned memory (one cache line, one AVX-512 vector), valid
// until the next arena_reset. Its contents are whatever was there last step.
// NULL when out of memory or when bytes is absurd (more than 2^40).
void *arena_alloc(struct arena *a, size_t bytes);
// The same, zeroed.
void *arena_calloc(struct arena *a, size_t bytes);

// Forgets every allocation; keeps the memory for the next step.
void arena_reset(struct arena *a);
// arena_reset, and when the arena holds several blocks, one block of
// arena_peak bytes in their place. A first training step leaves blocks
// sized by the order it asked in; a step that asks in another order (the
// last, smaller batch of an epoch, an evaluation) would find them too small
// in places and reserve more, and the arena would grow epoch after epoch.
// In one block only the total counts, and no later step asks for more than
// the peak. Returns 0, or -1 when out of memory (the arena is then empty).
int arena_fit(struct arena *a);

size_t arena_used(const struct arena *a);      // handed out since the last reset
size_t arena_peak(const struct arena *a);      // the most ever handed out between resets
size_t arena_reserved(const struct arena *a);  // obtained from the system, in total

// How many times the autograd code has called malloc (arena blocks,
// parameters, tapes) since the program started: the zero-allocation test
// reads it before and after a step.
long arena_heap_allocations(void);
// malloc and free for the rest of common/autograd, counted. aligned to 64.
void *arena_heap_alloc(size_t bytes);
void arena_heap_free(void *p);
// For a large buffer that dies long before the program ends (the planner's
// first step, memory.c): pages straight from the system (mmap), given back
// when it is freed, so that the process's resident memory falls when the
// buffer dies. malloc keeps what it frees for the next malloc. Counted too;
// aligned to the page. NULL when out of memory.
void *arena_map(size_t bytes);
void arena_unmap(void *p, size_t bytes);

#endif
