#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE  // MAP_ANONYMOUS
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arena.h"

enum { ALIGN = 64 };
static const size_t MAX_BYTES = (size_t)1 << 40;

// The blocks form a list in the order they were reserved. After a reset the
// cursor goes back to the first one; an allocation that does not fit in the
// current block moves on to the next kept block before it reserves a new one.
struct block {
    struct block *next;
    size_t size;  // usable bytes after the header
    unsigned char *data;
};

struct arena {
    struct block *first, *current;
    size_t offset;     // bytes used in current
    size_t used_before; // bytes used in the blocks before current
    size_t peak, reserved, min_block;
};

static long heap_allocations;

long arena_heap_allocations(void)
{
    return heap_allocations;
}

void *arena_heap_alloc(size_t bytes)
{
    void *p = NULL;
    size_t rounded = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    if (bytes == 0 || bytes > MAX_BYTES || posix_memalign(&p, ALIGN, rounded) != 0)
        return NULL;
    heap_allocations++;
    return p;
}

void arena_heap_free(void *p)
{
    free(p);
}

void *arena_map(size_t bytes)
{
    if (bytes == 0 || bytes > MAX_BYTES)
        return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    heap_allocations++;
    return p;
}

void arena_unmap(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

struct arena *arena_create(size_t min_block)
{
    struct arena *a = arena_heap_alloc(sizeof *a);
    if (!a)
        return NULL;
    memset(a, 0, sizeof *a);
    a->min_block = min_block < 4096 ? 4096 : min_block;
    return a;
}

void arena_destroy(struct arena *a)
{
    if (!a)
        return;
    for (struct block *b = a->first, *next; b; b = next) {
        next = b->next;
        arena_heap_free(b->data);
        arena_heap_free(b);
    }
    arena_heap_free(a);
}

static struct block *new_block(struct arena *a, size_t bytes)
{
    size_t size = bytes > a->min_block ? bytes : a->min_block;
    struct block *b = arena_heap_alloc(sizeof *b);
    unsigned char *data = arena_heap_alloc(size);
    if (!b || !data) {
        arena_heap_free(b);
        arena_heap_free(data);
        return NULL;
    }
    b->next = NULL;
    b->size = size;
    b->data = data;
    a->reserved += size;
    return b;
}

// listing: arena_alloc
void *arena_alloc(struct arena *a, size_t bytes)
{
    if (!a || bytes > MAX_BYTES)
        return NULL;
    size_t need = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    if (need == 0)
        need = ALIGN;
    // Move on until a block has room: the kept ones first, then a new one.
    while (!a->current || a->offset + need > a->current->size) {
        struct block *next = a->current ? a->current->next : a->first;
        if (!next || need > next->size) {
            struct block *b = new_block(a, need);
            if (!b)
                return NULL;
            // A new block goes right after the current one, so the next
            // step, asking for the same sizes, finds it in the same place.
            if (a->current) {
                b->next = a->current->next;
                a->current->next = b;
            } else {
                b->next = a->first;
                a->first = b;
            }
            next = b;
        }
        if (a->current)
            a->used_before += a->offset;
        a->current = next;
        a->offset = 0;
    }
    void *p = a->current->data + a->offset;
    a->offset += need;
    size_t used = a->used_before + a->offset;
    if (used > a->peak)
        a->peak = used;
    return p;
}
// end listing

void *arena_calloc(struct arena *a, size_t bytes)
{
    void *p = arena_alloc(a, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

void arena_reset(struct arena *a)
{
    if (!a)
        return;
    a->current = NULL;
    a->offset = 0;
    a->used_before = 0;
}

int arena_fit(struct arena *a)
{
    if (!a)
        return 0;
    arena_reset(a);
    if (!a->first || !a->first->next)
        return 0;
    for (struct block *b = a->first, *next; b; b = next) {
        next = b->next;
        arena_heap_free(b->data);
        arena_heap_free(b);
    }
    a->first = NULL;
    a->reserved = 0;
    a->first = new_block(a, a->peak);
    return a->first ? 0 : -1;
}

size_t arena_used(const struct arena *a)
{
    return a->used_before + a->offset;
}

size_t arena_peak(const struct arena *a)
{
    return a->peak;
}

size_t arena_reserved(const struct arena *a)
{
    return a->reserved;
}
