// From C source to a function we can call: the system's compiler builds each
// kernel into a shared object, dlopen loads it. Each kernel is cached under
// build/lazy-cache/ (or the program's own cache) by a hash of its source (and of the compiler and its
// flags), so a second run of the same program compiles nothing.
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkout.h"
#include "cpu.h"
#include "lazy_kernel.h"

extern char **environ;

// listing: compile_flags
// The flags of the book's own release build, for a shared object, and two
// promises that change no result: -fno-math-errno (sqrtf need not set
// errno, so it is one instruction that vectorises) and -fno-trapping-math
// (no floating-point trap is ever enabled, so a comparison may run on every
// element as a mask, not as a branch). -fopenmp for the kernels that share
// their rows among threads.
static const char *const flags[] = {"-O2", "-fno-math-errno", "-fno-trapping-math",
                                    "-fopenmp", "-shared", "-fPIC"};

// The instructions the compiler may use follow the ISA of the context the
// program is handed (--isa): a table indexed by enum isa, as every kernel
// family keeps. The scalar path is the target's baseline with no
// vectorising at all.
enum { ISA_FLAGS_MAX = 3 };
static const char *const isa_flags[ISA_COUNT][ISA_FLAGS_MAX] = {
    [ISA_SCALAR] = {"-fno-tree-vectorize"},
#if defined(__x86_64__)
    [ISA_AVX2] = {"-mavx2", "-mfma"},
    [ISA_AVX512] = {"-mavx512f", "-mavx2", "-mfma"},
#endif
#if defined(__aarch64__)
    [ISA_NEON] = {"-mcpu=native"},
#endif
};
// end listing

// The flags of the ISA of o's context. Under `make test-avx512` the CPU has
// no AVX-512, and the generated C has no intrinsics for SIMDe to stand in
// for: the AVX-512 path's kernels are built as the AVX2 path's.
static const char *const *isa_flags_of(const struct lazy_options *o)
{
    enum isa isa = o->kernels->kernel.isa;
#if defined(EMULATE_AVX512)
    if (isa == ISA_AVX512)
        isa = ISA_AVX2;
#endif
    return isa_flags[isa];
}

// The compiler the program was given ($CC, read at its edge), else cc.
static const char *compiler(const struct lazy_options *o)
{
    return o->cc && *o->cc ? o->cc : "cc";
}

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static int make_dirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

// The cache the program named ($LAZY_CACHE, or one of its own), else the
// checkout's build/lazy-cache. Returns 0, or -1 with err.
static int cache_dir_of(const char *given, char *dir, size_t len, char *err, size_t errlen)
{
    const char *root = checkout_root();
    if (given && *given)
        snprintf(dir, len, "%s", given);
    else if (root)
        snprintf(dir, len, "%s/build/lazy-cache", root);
    else {
        checkout_missing(err, (int)errlen);
        return -1;
    }
    return 0;
}

// 1 when path holds exactly text.
static int same_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = strlen(text), i = 0;
    int c, same = 1;
    while (same && (c = fgetc(f)) != EOF)
        same = i < n && (unsigned char)text[i++] == c;
    fclose(f);
    return same && i == n;
}

static int write_file(const char *path, const char *text)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%.4095s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return -1;
    }
    return 0;
}

// The paths of k's source, object and log in dir: NAME-HASH.{c,so,log}.
static void paths(const struct lazy_kernel *k, const char *dir, const char *cc,
                  const char *const *isa, char *stem, size_t len)
{
    uint64_t h = fnv(0xcbf29ce484222325ull, cc);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        h = fnv(h, flags[i]);
    for (int i = 0; i < ISA_FLAGS_MAX && isa[i]; i++)
        h = fnv(h, isa[i]);
    h = fnv(h, k->source);
    snprintf(stem, len, "%s/%s-%016llx", dir, k->name, (unsigned long long)h);
}

static int load(struct lazy_kernel *k, const char *so, char *err, size_t errlen)
{
    k->handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    void *sym = k->handle ? dlsym(k->handle, "kernel") : NULL;
    if (!sym) {
        snprintf(err, errlen, "cannot load the compiled kernel %s: %s", so, dlerror());
        if (k->handle)
            dlclose(k->handle);
        k->handle = NULL;
        return -1;
    }
    memcpy(&k->fn, &sym, sizeof sym);
    return 0;
}

// Starts `CC flags -o so.tmp src -lm`, its output into log. Returns the
// child's pid, or -1 with err.
static pid_t start(const char *stem, const char *compiler, const char *const *isa, char *err,
                   size_t errlen)
{
    char src[4096], tmp[4096], log[4096], cc[256];
    snprintf(src, sizeof src, "%s.c", stem);
    snprintf(tmp, sizeof tmp, "%s.so.%ld.tmp", stem, (long)getpid());
    snprintf(log, sizeof log, "%s.log", stem);
    // CC may be a command with words ("ccache gcc"): split it at spaces.
    snprintf(cc, sizeof cc, "%s", compiler);
    char *argv[32];
    int argc = 0;
    for (char *w = strtok(cc, " "); w && argc < 20; w = strtok(NULL, " "))
        argv[argc++] = w;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        argv[argc++] = (char *)flags[i];
    for (int i = 0; i < ISA_FLAGS_MAX && isa[i]; i++)
        argv[argc++] = (char *)isa[i];
    argv[argc++] = "-o";
    argv[argc++] = tmp;
    argv[argc++] = src;
    argv[argc++] = "-lm";
    argv[argc] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) {
        if (e == ENOENT)
            snprintf(err, errlen,
                     "no C compiler to build the generated kernels: '%s' not found "
                     "(install gcc, or set CC to your compiler)", argv[0]);
        else
            snprintf(err, errlen, "cannot run the compiler '%s': %s", argv[0], strerror(e));
        return -1;
    }
    return pid;
}

// After the compiler exited with status: the object in place, or err with
// the source's path and the compiler's first lines.
static int finish(const char *stem, const char *cc, int status, char *err, size_t errlen)
{
    char so[4096], tmp[4096], log[4096];
    snprintf(so, sizeof so, "%s.so", stem);
    snprintf(tmp, sizeof tmp, "%s.so.%ld.tmp", stem, (long)getpid());
    snprintf(log, sizeof log, "%s.log", stem);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && rename(tmp, so) == 0)
        return 0;
    remove(tmp);
    int at = snprintf(err, errlen, "the generated kernel %s.c did not compile (%s %s %d); the "
                      "compiler said:", stem, cc,
                      WIFEXITED(status) ? "exited with" : "was stopped by signal",
                      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    FILE *f = fopen(log, "r");
    char text[256];
    for (int lines = 0; f && lines < 6 && fgets(text, sizeof text, f); lines++)
        if (at > 0 && (size_t)at < errlen)
            at += snprintf(err + at, errlen - (size_t)at, "\n  %.*s", (int)strcspn(text, "\n"),
                           text);
    if (f)
        fclose(f);
    if (at > 0 && (size_t)at < errlen)
        snprintf(err + at, errlen - (size_t)at, "\n(all of it: %s)", log);
    return -1;
}

// listing: compile_all
int lazy_compile_all(struct lazy_kernel *ks, int n, const struct lazy_options *o, char *err,
                     size_t errlen)
{
    char dir[3800];
    const char *cc = compiler(o);
    const char *const *isa = isa_flags_of(o);
    if (cache_dir_of(o->cache_dir, dir, sizeof dir, err, errlen) != 0)
        return -1;
    if (make_dirs(dir) != 0) {
        snprintf(err, errlen, "cannot make the kernel cache %s: %s", dir, strerror(errno));
        return -1;
    }
    char (*stems)[3900] = malloc(sizeof *stems * (size_t)(n ? n : 1));
    pid_t *pids = malloc(sizeof *pids * (size_t)(n ? n : 1));
    if (!stems || !pids) {
        free(stems);
        free(pids);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int status = 0, running = 0, next = 0, jobs = cpu_count() > 0 ? cpu_count() : 1;
    // A kernel whose source is in the cache, with its object, is loaded as
    // it is; the others are compiled, as many at once as there are cores.
    for (int i = 0; i < n; i++) {
        char so[4096], src[4096];
        pids[i] = 0;
        paths(&ks[i], dir, cc, isa, stems[i], sizeof stems[i]);
        snprintf(src, sizeof src, "%s.c", stems[i]);
        snprintf(so, sizeof so, "%s.so", stems[i]);
        ks[i].cached = same_file(src, ks[i].source) && access(so, R_OK) == 0;
        snprintf(ks[i].path, sizeof ks[i].path, "%s", src);
        if (!ks[i].cached && write_file(src, ks[i].source) != 0) {
            snprintf(err, errlen, "cannot write %s: %s", src, strerror(errno));
            status = -1;
        }
    }
    while (status == 0 && (next < n || running > 0)) {
        while (status == 0 && next < n && running < jobs) {
            int i = next++;
            if (ks[i].cached)
                continue;
            if (o->verbose)
                fprintf(stderr, "compiling %s.c\n", stems[i]);
            if ((pids[i] = start(stems[i], cc, isa, err, errlen)) < 0)
                status = -1;
            else
                running++;
        }
        if (running == 0)
            break;
        // Wait for the earliest started of those running (only our own
        // children: the program may have others).
        int i = 0, ws;
        while (pids[i] <= 0)
            i++;
        if (waitpid(pids[i], &ws, 0) < 0) {
            snprintf(err, errlen, "waiting for the compiler: %s", strerror(errno));
            status = -1;
            break;
        }
        pids[i] = 0;
        running--;
        if (finish(stems[i], cc, ws, err, errlen) != 0)
            status = -1;
    }
    // On an error, wait for the compilers still running before returning.
    for (int i = 0; i < n; i++)
        if (pids[i] > 0) {
            int ws;
            waitpid(pids[i], &ws, 0);
            char tmp[4096];
            snprintf(tmp, sizeof tmp, "%s.so.%ld.tmp", stems[i], (long)getpid());
            remove(tmp);
        }
    for (int i = 0; status == 0 && i < n; i++) {
        char so[4096];
        snprintf(so, sizeof so, "%s.so", stems[i]);
        status = load(&ks[i], so, err, errlen);
    }
    free(stems);
    free(pids);
    return status;
}
// end listing

int lazy_compile(struct lazy_kernel *k, const struct lazy_options *o, char *err, size_t errlen)
{
    return lazy_compile_all(k, 1, o, err, errlen);
}

void lazy_unload(struct lazy_kernel *k)
{
    if (k->handle)
        dlclose(k->handle);
    k->handle = NULL;
    k->fn = NULL;
}
