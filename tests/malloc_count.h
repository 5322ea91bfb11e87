// malloc_count.h: how many times the process has asked for heap memory
// (malloc, calloc, realloc, posix_memalign, aligned_alloc), from any thread
// and any library: our code, libgomp's threads, libc. The tests build with
// AddressSanitizer, whose allocator serves every one of those calls and can
// call a hook after each; this header installs one that counts.
//
//   long before = malloc_calls();  ...  cr_assert_eq(malloc_calls(), before);
//
// malloc_calls() returns -1 in a build without AddressSanitizer, where there
// is nothing to hook: a test then skips, and says so.
#ifndef MALLOC_COUNT_H
#define MALLOC_COUNT_H

#include <stdatomic.h>
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define MALLOC_COUNT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MALLOC_COUNT_ASAN 1
#endif
#endif

#ifdef MALLOC_COUNT_ASAN
// From AddressSanitizer's runtime (sanitizer/allocator_interface.h, which
// gcc does not install): hooks called after each allocation and before each
// free. Returns how many hook pairs are installed, 0 on failure.
int __sanitizer_install_malloc_and_free_hooks(void (*on_malloc)(const volatile void *, size_t),
                                              void (*on_free)(const volatile void *));

static atomic_long malloc_count_total;

static void malloc_count_on_malloc(const volatile void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    atomic_fetch_add_explicit(&malloc_count_total, 1, memory_order_relaxed);
}

static void malloc_count_on_free(const volatile void *p)
{
    (void)p;
}
#endif

// Heap allocations since the first call (which installs the hook: make it
// before the code under test starts threads). -1 when this build cannot count.
static inline long malloc_calls(void)
{
#ifdef MALLOC_COUNT_ASAN
    static int installed;
    if (installed == 0)
        installed =
            __sanitizer_install_malloc_and_free_hooks(malloc_count_on_malloc, malloc_count_on_free)
                ? 1
                : -1;
    return installed > 0 ? atomic_load(&malloc_count_total) : -1;
#else
    return -1;
#endif
}

#endif
