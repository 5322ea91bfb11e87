#ifndef MEMORY_H
#define MEMORY_H

#include <stddef.h>
#include <stdio.h>

// Where a tape's step keeps its memory (tape.c asks; nothing else does).
//
// MEMORY_ARENA: today's arena (arena.h). Every request is a bump of its
// cursor and lives until the step ends.
//
// MEMORY_PLANNED: every request is a buffer with a lifetime in ticks (tape.c
// moves the clock: one tick per op, one per node of the backward) and is
// told when it is read. A step that follows the plan gets each buffer at
// the offset the plan gave it in one block, so that buffers whose lifetimes
// do not overlap share bytes (plan.h). A buffer the plan cannot place (the
// first step, when there is no plan; a larger one; one born earlier than
// planned) goes on the heap, and is freed as soon as it is known dead; when
// the step ends the plan is widened to cover it (every lifetime the hull of
// the two) and packed again, so the next such step needs no malloc. A step
// may be smaller than its plan (the last, smaller batch of an epoch): every
// buffer of it fits in its planned place and lives within its planned
// lifetime. Training and evaluation steps (recording on and off) differ in
// everything, so each has a plan; both use the same block.
//
// A buffer in the block read after its planned death may have been given
// to another: memory_use then returns -1 and the tape reports it; if its
// bytes are still untouched, the rest of the step goes on the heap instead.

// Where a step's tensors live (tape_config's memory):
//   arena    one cursor through blocks kept from step to step; nothing is
//            released before the step ends
//   planned  each buffer at an offset a plan gave it in one block, shared
//            with the buffers whose lifetimes do not overlap its own
enum memory_mode { MEMORY_ARENA, MEMORY_PLANNED };

enum buffer_kind {
    BUFFER_RECORD,   // a tensor's struct, a node: until the step ends
    BUFFER_VALUE,    // a tensor's data
    BUFFER_GRAD,     // a tensor's gradient
    BUFFER_SAVED,    // what an op keeps for its backward (an argmax, probabilities)
    BUFFER_SCRATCH,  // an op's working memory, dead when the op returns
    BUFFER_KINDS
};

struct memory;

// NULL when out of memory.
struct memory *memory_new(enum memory_mode mode);
void memory_free(struct memory *m);

// A buffer of `bytes` (64-byte aligned, contents undefined), born now; key
// (0 evaluation, 1 training) picks the plan when it is the step's first.
// *id is its number in the step (-1 in the arena). NULL when out of memory.
void *memory_alloc(struct memory *m, enum buffer_kind kind, size_t bytes, int key, int *id);
// How many buffers the step has asked for so far; a buffer's kind.
int memory_count(const struct memory *m);
enum buffer_kind memory_kind(const struct memory *m, int id);
// Names buffers from .. to - 1 by the op that made them (the lifetimes CSV).
void memory_name(struct memory *m, int from, int to, const char *op);

// The clock: the next op, or the next node of the backward.
void memory_tick(struct memory *m);
int memory_now(const struct memory *m);
// Buffer id is read at tick `when` (≥ now): it lives at least until then.
// 0, or -1 when its bytes were freed or given to another buffer first.
int memory_use(struct memory *m, int id, int when);
// Buffer id lives until the step ends (the same -1 as memory_use).
int memory_hold(struct memory *m, int id);
// A saved buffer whose op recorded a node: it waits for that node's
// backward (tape.c tells its last use), not for the op's end. Buffers of
// other kinds are left as they are.
void memory_own(struct memory *m, int id);
// No later read of buffer id but the backward's, which the tape has ruled
// out: its death is final, and it goes when that tick has passed.
void memory_done(struct memory *m, int id);
// The backward has begun and told every buffer's last use: what is not read
// again is dead from now on.
void memory_settle(struct memory *m);

// The plan for the next steps, from this one (when it did not fit the old
// plan): tape_backward calls it when it ends, so the block is ready before
// the next step; memory_clear again if the step went on. -1 out of memory.
int memory_replan(struct memory *m);
// The step is over: heap buffers freed, a new plan and block put in place.
// -1 when out of memory for them (the old plan stays).
int memory_clear(struct memory *m);

// The step's live bytes (the most alive at one tick; for the arena, all it
// handed out) and reserved bytes (all memory held for steps).
size_t memory_live(const struct memory *m);
size_t memory_reserved(const struct memory *m);
struct arena *memory_arena(struct memory *m);  // NULL when planned

// Writes the step's buffers, one row each: number, kind, op, bytes, birth,
// death, offset in the block (-1 on the heap). -1 when writing fails.
int memory_write(const struct memory *m, FILE *f);

#endif
