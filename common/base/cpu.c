#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"

static const char *isa_names[ISA_COUNT] = {"scalar", "avx2", "avx512", "neon"};

const char *isa_name(enum isa isa)
{
    return isa >= 0 && isa < ISA_COUNT ? isa_names[isa] : "?";
}

int isa_parse(const char *name, enum isa *out)
{
    for (int i = 0; i < ISA_COUNT; i++)
        if (strcmp(name, isa_names[i]) == 0) {
            *out = (enum isa)i;
            return 0;
        }
    return -1;
}

// listing: isa_supported
int isa_supported(enum isa isa)
{
    switch (isa) {
    case ISA_SCALAR:
        return 1;
#if defined(__x86_64__)
    case ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case ISA_AVX512:
#if defined(EMULATE_AVX512)
        // `make test-avx512`: SIMDe runs the AVX-512 kernels with AVX2.
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#endif
#endif
#if defined(__aarch64__)
    case ISA_NEON:
        return 1;  // Advanced SIMD is mandatory on AArch64
#endif
    default:
        return 0;
    }
}
// end listing

enum isa isa_best(void)
{
    enum isa order[] = {ISA_AVX512, ISA_AVX2, ISA_NEON};
    for (int i = 0; i < 3; i++)
        if (isa_supported(order[i]))
            return order[i];
    return ISA_SCALAR;
}

// listing: isa_active
// -1 until isa_force: then isa_best() decides, which is cheap enough to ask
// on every call (the CPU's features are read once, when the program starts).
static int forced = -1;

enum isa isa_active(void)
{
    return forced >= 0 ? (enum isa)forced : isa_best();
}

int isa_force(enum isa isa)
{
    if (!isa_supported(isa))
        return -1;
    forced = (int)isa;
    return 0;
}
// end listing

static _Atomic long uses[ISA_COUNT];

void isa_count_use(enum isa isa)
{
    atomic_fetch_add_explicit(&uses[isa], 1, memory_order_relaxed);
}

long isa_uses(enum isa isa)
{
    return atomic_load_explicit(&uses[isa], memory_order_relaxed);
}

void isa_uses_clear(void)
{
    for (int i = 0; i < ISA_COUNT; i++)
        atomic_store_explicit(&uses[i], 0, memory_order_relaxed);
}

void isa_unsupported_message(enum isa isa, char *buf, int size)
{
    int len = snprintf(buf, (size_t)size, "this CPU (%s) cannot run %s code; it runs", cpu_model(),
                       isa_name(isa));
    for (int i = 0; i < ISA_COUNT && len > 0 && len < size; i++)
        if (isa_supported((enum isa)i))
            len += snprintf(buf + len, (size_t)(size - len), "%s %s", i ? "," : "",
                            isa_name((enum isa)i));
}

int isa_lanes(enum isa isa)
{
    switch (isa) {
    case ISA_AVX2:
        return 8;
    case ISA_AVX512:
        return 16;
    case ISA_NEON:
        return 4;
    default:
        return 1;
    }
}

static char model[128];

const char *cpu_model(void)
{
    if (model[0])
        return model;
    snprintf(model, sizeof model, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return model;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        // x86 says "model name", some AArch64 kernels say "Model" or nothing.
        if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Model", 5) == 0) {
            char *colon = strchr(line, ':');
            if (!colon)
                continue;
            char *s = colon + 1;
            while (*s == ' ' || *s == '\t')
                s++;
            s[strcspn(s, "\n")] = '\0';
            if (*s) {
                snprintf(model, sizeof model, "%s", s);
                break;
            }
        }
    }
    fclose(f);
    return model;
}

// The number after "key<blanks>:" in a /proc/cpuinfo line, or -1 when the
// line is another key's.
static long cpuinfo_number(const char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0)
        return -1;
    const char *s = line + n;
    while (*s == ' ' || *s == '\t')
        s++;
    // "model" must not take "model name"'s line
    return *s == ':' ? strtol(s + 1, NULL, 10) : -1;
}

static char id[128];

const char *cpu_id(void)
{
    if (id[0])
        return id;
    snprintf(id, sizeof id, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return id;
    long family = -1, number = -1, stepping = -1;
    char line[512];
    // The first processor's lines only: they end at its first blank line.
    while (fgets(line, sizeof line, f) && line[0] != '\n') {
        long v;
        if ((v = cpuinfo_number(line, "cpu family")) >= 0)
            family = v;
        else if ((v = cpuinfo_number(line, "model")) >= 0)
            number = v;
        else if ((v = cpuinfo_number(line, "stepping")) >= 0)
            stepping = v;
    }
    fclose(f);
    if (family >= 0 && number >= 0)
        snprintf(id, sizeof id, "family %ld, model %ld, stepping %ld", family, number, stepping);
    return id;
}

int cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

// "48K", "1024K", "32M" as sysfs writes them.
static long parse_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 'K')
        v *= 1024;
    else if (*end == 'M')
        v *= 1024 * 1024;
    return v;
}

static int read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok ? 0 : -1;
}

static void caches_from_sysfs(struct cpu_caches *c)
{
    for (int index = 0; index < 8; index++) {
        char path[128], level[16], type[32], size[32];
        const char *dir = "/sys/devices/system/cpu/cpu0/cache/index";
        snprintf(path, sizeof path, "%s%d/level", dir, index);
        if (read_line(path, level, sizeof level) != 0)
            break;
        snprintf(path, sizeof path, "%s%d/type", dir, index);
        if (read_line(path, type, sizeof type) != 0 || strcmp(type, "Instruction") == 0)
            continue;
        snprintf(path, sizeof path, "%s%d/size", dir, index);
        if (read_line(path, size, sizeof size) != 0)
            continue;
        long bytes = parse_size(size);
        if (level[0] == '1')
            c->l1d = bytes;
        else if (level[0] == '2')
            c->l2 = bytes;
        else if (level[0] == '3')
            c->l3 = bytes;
        snprintf(path, sizeof path, "%s%d/coherency_line_size", dir, index);
        if (read_line(path, size, sizeof size) == 0 && atol(size) > 0)
            c->line = atol(size);
    }
}

static void caches_from_sysconf(struct cpu_caches *c)
{
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    if (c->l1d <= 0)
        c->l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    if (c->l2 <= 0)
        c->l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (c->line <= 0)
        c->line = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
    if (c->l3 <= 0)
        c->l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#else
    (void)c;
#endif
}

// listing: caches
// Read once: the sizes do not change while we run, and reading sysfs costs
// more than a small matrix multiply (the GEMM derives its blocking from them
// whenever its kernel is chosen).
struct cpu_caches cpu_caches(void)
{
    static struct cpu_caches known;
    static int done;
    if (done)
        return known;
    struct cpu_caches c = {0, 0, 0, 0, 0};
    caches_from_sysfs(&c);
    caches_from_sysconf(&c);
    // Sizes of a typical desktop core of the last decade.
    long fallback[3] = {32 * 1024, 512 * 1024, 8 * 1024 * 1024};
    long *level[3] = {&c.l1d, &c.l2, &c.l3};
    for (int i = 0; i < 3; i++)
        if (*level[i] <= 0) {
            *level[i] = fallback[i];
            c.assumed = 1;
        }
    if (c.line <= 0)
        c.line = 64;
    // No core of today sees more than 32 MiB of L3 (one Zen CCD; Intel's
    // slices are smaller). Some virtual machines report the whole package's
    // L3, 512 MiB and more, which would size blocks that live in no cache.
    if (c.l3 > CPU_L3_MAX)
        c.l3 = CPU_L3_MAX;
    known = c;
    done = 1;
    return c;
}
// end listing
