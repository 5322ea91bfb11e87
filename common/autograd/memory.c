// A tape's step memory: the arena, or buffers placed by a plan (memory.h).
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "memory.h"
#include "plan.h"

enum { ALIGN = 64 };
static const size_t MAX_BYTES = (size_t)1 << 40;

// Where a buffer's bytes are: at its planned place in the block; in the
// block, past the last buffer, when the step's kind has no plan yet (the
// block is idle until the step ends), or in the bytes of such a buffer that
// died; on the heap, or mapped from the system when large (so that freeing
// it gives the pages back).
enum where { GONE, IN_BLOCK, IN_BUMP, IN_HOLE, ON_HEAP, MAPPED };

// From this size up, a buffer off the plan is mapped.
static const size_t MAP_FROM = (size_t)256 << 10;

struct buffer {
    unsigned char *p;
    size_t bytes;       // asked for, rounded up to 64
    int birth, death;   // death: the last tick known to read it
    unsigned char kind, where;
    unsigned char held;      // lives until the step ends
    unsigned char settled;   // no later read can come: death is final
    unsigned char owned;     // a saved buffer whose node will read it
    unsigned char poisoned;  // filled with NaN at its planned death (TAPE_POISON)
    const char *op;
};

struct plan {
    int n;
    struct plan_buffer *b;
    size_t size, live;
};

struct memory {
    enum memory_mode mode;
    struct arena *arena;    // MEMORY_ARENA
    // MEMORY_PLANNED: the step's buffers, in the order asked
    struct buffer *buf;
    int n, cap;
    int now;
    int key;      // the plan this step follows (0 evaluation, 1 training), -1 before its first
    int misses;   // buffers the plan could not place
    int hard;     // a buffer outlived its plan: nothing more goes in the block this step
    int on_heap;  // heap and mapped buffers not yet freed
    size_t bump;  // bytes of the block given to IN_BUMP buffers
    int holed;    // an IN_HOLE buffer was placed: the bump no longer shrinks
    int settled;  // the backward has begun: a buffer's death is known at its birth
    int dirty;    // a lifetime changed since memory_replan last ran
    int last_key; // the key of the last step that ended
    struct plan plans[2];
    struct plan next;        // made from this step, for the next steps of its key
    unsigned char *block;
    size_t block_size;
    unsigned char *next_block;  // a larger block for the next plan, put in place at clear
    size_t next_size;
};

static const char *const kind_names[BUFFER_KINDS] = {"record", "value", "grad", "saved",
                                                     "scratch"};

struct memory *memory_new(enum memory_mode mode)
{
    struct memory *m = arena_heap_alloc(sizeof *m);
    if (!m)
        return NULL;
    memset(m, 0, sizeof *m);
    m->mode = mode;
    m->key = -1;
    m->last_key = 1;
    if (mode == MEMORY_ARENA) {
        // 1 MiB blocks: a small model's step fits in one, a large one takes a few.
        m->arena = arena_create((size_t)1 << 20);
        if (!m->arena) {
            arena_heap_free(m);
            return NULL;
        }
    }
    return m;
}

static void plan_free(struct plan *p)
{
    arena_heap_free(p->b);
    memset(p, 0, sizeof *p);
}

static void free_buffer(struct buffer *b)
{
    if (b->where == ON_HEAP)
        arena_heap_free(b->p);
    else if (b->where == MAPPED)
        arena_unmap(b->p, b->bytes);
    else
        return;
    b->where = GONE;
}

static void free_heap_buffers(struct memory *m)
{
    for (int i = 0; i < m->n; i++)
        free_buffer(&m->buf[i]);
    m->on_heap = 0;
}

void memory_free(struct memory *m)
{
    if (!m)
        return;
    arena_destroy(m->arena);
    free_heap_buffers(m);
    arena_heap_free(m->buf);
    plan_free(&m->plans[0]);
    plan_free(&m->plans[1]);
    plan_free(&m->next);
    arena_unmap(m->block, m->block_size);
    arena_unmap(m->next_block, m->next_size);
    arena_heap_free(m);
}

struct arena *memory_arena(struct memory *m)
{
    return m->arena;
}

static int grow(struct memory *m)
{
    int cap = m->cap ? 2 * m->cap : 64;
    struct buffer *buf = arena_heap_alloc(sizeof *buf * (size_t)cap);
    if (!buf)
        return -1;
    if (m->n)
        memcpy(buf, m->buf, sizeof *buf * (size_t)m->n);
    arena_heap_free(m->buf);
    m->buf = buf;
    m->cap = cap;
    return 0;
}

// A dead buffer of the bump at least `need` bytes long, or -1: in a step
// with no plan, a buffer that does not fit past the bump may take its bytes.
static int dead_bump(const struct memory *m, size_t need)
{
    for (int i = 0; i < m->n; i++) {
        const struct buffer *b = &m->buf[i];
        if (b->where == IN_BUMP && !b->held && b->settled && b->death < m->now &&
            b->bytes >= need)
            return i;
    }
    return -1;
}

// listing: memory_alloc
void *memory_alloc(struct memory *m, enum buffer_kind kind, size_t bytes, int key, int *id)
{
    *id = -1;
    if (bytes > MAX_BYTES)
        return NULL;
    if (m->mode == MEMORY_ARENA)
        return arena_alloc(m->arena, bytes);
    size_t need = bytes == 0 ? ALIGN : (bytes + ALIGN - 1) / ALIGN * ALIGN;
    if (m->n == m->cap && grow(m) != 0)
        return NULL;
    if (m->key < 0)
        m->key = key != 0;
    int i = m->n;
    const struct plan *p = &m->plans[m->key];
    struct buffer *b = &m->buf[i];
    *b = (struct buffer){.bytes = need, .birth = m->now, .death = m->now, .kind = kind,
                         .settled = kind == BUFFER_SCRATCH || m->settled, .op = ""};
    m->dirty = 1;
    // The plan's place for the i-th buffer of the step holds this one if
    // it is no larger and born no earlier than planned (its reads are
    // checked against the planned death as they come: memory_use).
    if (!m->hard && i < p->n && need <= p->b[i].bytes && m->now >= p->b[i].birth) {
        b->p = m->block + p->b[i].offset;
        b->where = IN_BLOCK;
    } else {
        m->misses++;
        int hole = p->n == 0 ? dead_bump(m, need) : -1;
        if (p->n == 0 && m->bump + need <= m->block_size) {
            b->p = m->block + m->bump;  // the first step of its kind: nothing else in the block
            b->where = IN_BUMP;
            m->bump += need;
        } else if (hole >= 0) {
            b->p = m->buf[hole].p;  // what is left of the hole stays unused this step
            b->where = IN_HOLE;
            m->buf[hole].where = GONE;
            m->holed = 1;
        } else {
            b->where = need >= MAP_FROM ? MAPPED : ON_HEAP;
            b->p = b->where == MAPPED ? arena_map(need) : arena_heap_alloc(need);
            if (!b->p)
                return NULL;
            m->on_heap++;
        }
    }
    m->n++;
    *id = i;
    return b->p;
}
// end listing

int memory_count(const struct memory *m)
{
    return m->n;
}

enum buffer_kind memory_kind(const struct memory *m, int id)
{
    return (enum buffer_kind)m->buf[id].kind;
}

void memory_name(struct memory *m, int from, int to, const char *op)
{
    for (int i = from; i < to && i < m->n; i++)
        if (m->buf[i].op[0] == '\0')
            m->buf[i].op = op;
}

int memory_now(const struct memory *m)
{
    return m->now;
}

// Buffer id's bytes in the block were given to a buffer born after its
// planned death, and that buffer is already out (or they were poisoned).
static int reused(const struct memory *m, int id)
{
    if (m->buf[id].poisoned)
        return 1;
    const struct plan *p = &m->plans[m->key];
    const struct plan_buffer *x = &p->b[id];
    for (int j = 0; j < m->n; j++) {
        const struct plan_buffer *y = &p->b[j];
        if (m->buf[j].where == IN_BLOCK && y->birth > x->death && y->offset < x->offset + x->bytes &&
            x->offset < y->offset + y->bytes)
            return 1;
    }
    return 0;
}

int memory_use(struct memory *m, int id, int when)
{
    if (m->mode == MEMORY_ARENA || id < 0)
        return 0;
    struct buffer *b = &m->buf[id];
    if (b->where == GONE)
        return -1;  // freed as dead, and read after all
    if (when > b->death) {
        b->death = when;
        m->dirty = 1;
    }
    if (b->where == IN_BLOCK && when > m->plans[m->key].b[id].death) {
        if (reused(m, id))
            return -1;
        m->hard = 1;  // still intact: keep it so
    }
    return 0;
}

int memory_hold(struct memory *m, int id)
{
    if (m->mode == MEMORY_ARENA || id < 0)
        return 0;
    m->buf[id].held = 1;
    m->buf[id].settled = 1;
    return memory_use(m, id, PLAN_END);
}

void memory_own(struct memory *m, int id)
{
    if (m->mode == MEMORY_PLANNED && id >= 0 && m->buf[id].kind == BUFFER_SAVED)
        m->buf[id].owned = 1;
}

void memory_done(struct memory *m, int id)
{
    if (m->mode == MEMORY_PLANNED && id >= 0 && !m->buf[id].held)
        m->buf[id].settled = 1;
}

void memory_settle(struct memory *m)
{
    for (int i = 0; i < m->n; i++)
        m->buf[i].settled = 1;
    m->settled = 1;
}

#ifdef TAPE_POISON
// The test build fills a buffer with NaN when it dies (all bits set is a
// NaN as a float, and -1 as an int), so that a read after its death gives
// NaN, not the right number by luck.
static void poison(struct buffer *b)
{
    memset(b->p, 0xff, b->bytes);
    b->poisoned = 1;
}
#endif

// listing: memory_tick
void memory_tick(struct memory *m)
{
    if (m->mode == MEMORY_ARENA)
        return;
    m->now++;
#ifndef TAPE_POISON
    if (m->on_heap == 0 && m->bump == 0)
        return;  // a step that follows its plan has nothing to do here
#endif
    const struct plan *p = &m->plans[m->key < 0 ? 0 : m->key];
    for (int i = 0; i < m->n; i++) {
        struct buffer *b = &m->buf[i];
        // A saved buffer whose op recorded no node (recording off) dies
        // with the op.
        if (b->kind == BUFFER_SAVED && !b->owned && b->birth < m->now)
            b->settled = 1;
        if (b->held)
            continue;
        int dead = b->settled && b->death < m->now;
        if ((b->where == ON_HEAP || b->where == MAPPED) && dead) {
            free_buffer(b);
            m->on_heap--;
        }
#ifdef TAPE_POISON
        if (!b->poisoned && ((b->where == IN_BLOCK && p->b[i].death < m->now) ||
                             ((b->where == IN_BUMP || b->where == IN_HOLE) && dead)))
            poison(b);
#else
        (void)p;
#endif
    }
    // The first step of its kind bumps through the block: dead buffers on
    // top (an op's scratch, an argmax no node keeps) give their bytes back,
    // until a buffer has been put in a hole below the top.
    for (int i = m->n - 1; i >= 0 && m->bump > 0 && !m->holed; i--) {
        struct buffer *b = &m->buf[i];
        if (b->where != IN_BUMP)
            continue;
        if (b->held || !b->settled || b->death >= m->now)
            break;
        m->bump -= b->bytes;  // the top one: the bump hands out in the order asked
        b->where = GONE;
    }
}
// end listing

// The step's lifetimes merged into the plan of its key: each buffer the
// hull of the two (the larger size, the earlier birth, the later death),
// so that the plan holds both steps; then packed again.
int memory_replan(struct memory *m)
{
    if (m->mode == MEMORY_ARENA || m->key < 0 || (m->misses == 0 && !m->hard) || !m->dirty)
        return 0;
    const struct plan *old = &m->plans[m->key];
    int n = old->n > m->n ? old->n : m->n;
    struct plan next = {.n = n, .b = arena_heap_alloc(sizeof *next.b * (size_t)n)};
    if (!next.b)
        return -1;
    for (int i = 0; i < n; i++) {
        struct plan_buffer x = i < old->n ? old->b[i]
                                          : (struct plan_buffer){0, PLAN_END, 0, 0};
        if (i < m->n) {
            const struct buffer *b = &m->buf[i];
            int death = b->held ? PLAN_END : b->death;
            x.bytes = b->bytes > x.bytes ? b->bytes : x.bytes;
            x.birth = b->birth < x.birth ? b->birth : x.birth;
            x.death = death > x.death ? death : x.death;
        }
        next.b[i] = x;
    }
    next.size = plan_pack(next.b, n);
    next.live = plan_live(next.b, n);
    if (next.size == 0) {
        plan_free(&next);
        return -1;
    }
    size_t other = m->plans[!m->key].size;
    size_t want = next.size > other ? next.size : other;
    if (want > m->block_size && want > m->next_size) {
        arena_unmap(m->next_block, m->next_size);
        m->next_size = 0;
        m->next_block = arena_map(want);
        if (!m->next_block) {
            plan_free(&next);
            return -1;
        }
        m->next_size = want;
    }
    plan_free(&m->next);
    m->next = next;
    m->dirty = 0;
    return 0;
}

int memory_clear(struct memory *m)
{
    if (m->mode == MEMORY_ARENA) {
        arena_reset(m->arena);
        return 0;
    }
    int status = memory_replan(m);
    free_heap_buffers(m);
    if (m->key >= 0 && m->next.n > 0) {
        plan_free(&m->plans[m->key]);
        m->plans[m->key] = m->next;
        memset(&m->next, 0, sizeof m->next);
    }
    if (m->next_block) {
        arena_unmap(m->block, m->block_size);
        m->block = m->next_block;
        m->block_size = m->next_size;
        m->next_block = NULL;
        m->next_size = 0;
    }
    if (m->key >= 0)
        m->last_key = m->key;
    m->n = m->now = m->misses = m->hard = m->settled = m->dirty = 0;
    m->bump = 0;
    m->holed = 0;
    m->key = -1;
    return status;
}

size_t memory_live(const struct memory *m)
{
    if (m->mode == MEMORY_ARENA)
        return arena_peak(m->arena);
    return m->plans[m->last_key].live;
}

// The block, and the tape's own bookkeeping: the buffers' table and plans.
size_t memory_reserved(const struct memory *m)
{
    if (m->mode == MEMORY_ARENA)
        return arena_reserved(m->arena);
    size_t plans = sizeof(struct plan_buffer) *
                   (size_t)(m->plans[0].n + m->plans[1].n + m->next.n);
    return m->block_size + m->next_size + sizeof(struct buffer) * (size_t)m->cap + plans;
}

int memory_write(const struct memory *m, FILE *f)
{
    if (fprintf(f, "buffer,kind,op,bytes,birth,death,offset\n") < 0)
        return -1;
    if (m->mode == MEMORY_ARENA)
        return 0;
    const struct plan *p = &m->plans[m->key < 0 ? m->last_key : m->key];
    for (int i = 0; i < m->n; i++) {
        const struct buffer *b = &m->buf[i];
        // A held buffer's death is the end of the step: one tick past the last.
        int death = b->held || b->death >= PLAN_END ? m->now + 1 : b->death;
        long offset = b->where == IN_BLOCK ? (long)p->b[i].offset : -1;
        if (fprintf(f, "%d,%s,%s,%zu,%d,%d,%ld\n", i, kind_names[b->kind],
                    b->op[0] ? b->op : "-", b->bytes, b->birth, death, offset) < 0)
            return -1;
    }
    return 0;
}
