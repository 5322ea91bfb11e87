// A driver of a stage run by its tests as a reader runs it, in a scratch
// directory: run_driver, the text it wrote, the directory removed after.
// Used by the tests of stages 06 to 08 (own_data.h includes it).
#ifndef RUN_DRIVER_H
#define RUN_DRIVER_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

// Runs a driver (run_mlp, bench_mlp, run_cnn ...: `make test` builds a
// stage's TESTED_DRIVERS with the sanitizers and sets TEST_DRIVERS) in dir
// with args, as a reader types them; its output, stdout and stderr, goes to
// dir/log. Returns its exit status. The test is skipped when the drivers
// were not built for the tests (no TEST_DRIVERS), and fails when they were
// but this one was not: a Makefile's list left it out.
static inline int run_driver(const char *dir, const char *driver, const char *args)
{
    const char *drivers = getenv("TEST_DRIVERS");
    char path[1024], command[4096];
    if (drivers == NULL)
        cr_skip_test("%s is not built for the tests (`make test` builds it and sets "
                     "TEST_DRIVERS)",
                     driver);
    snprintf(path, sizeof path, "%s/%s", drivers, driver);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "no %s in TEST_DRIVERS (%s): the Makefile's list of drivers "
                          "for the tests leaves it out",
                       driver, drivers);
    fclose(f);
    snprintf(command, sizeof command, "cd '%s' && '%s' %s >log 2>&1", dir, path, args);
    int rc = system(command);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The whole of a small text file, NUL-terminated (the caller frees it).
static inline char *read_text(const char *dir, const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    char *text = calloc(1, 1 << 16);
    cr_assert_not_null(text);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

// run_driver for a run that must succeed: the test fails with the driver's
// log when it exits with anything but 0.
static inline void run_driver_ok(const char *dir, const char *driver, const char *args)
{
    int rc = run_driver(dir, driver, args);
    char *log = read_text(dir, "log");
    cr_assert_eq(rc, 0, "%s %s exited with %d:\n%s", driver, args, rc, log);
    free(log);
}

// A new scratch directory, /tmp/PREFIX-XXXXXX, its name into dir.
static inline void make_scratch_dir(char *dir, size_t size, const char *prefix)
{
    snprintf(dir, size, "/tmp/%s-XXXXXX", prefix);
    cr_assert_not_null(mkdtemp(dir), "cannot make %s", dir);
}

// Removes a scratch directory and all it holds.
static inline void remove_tree(const char *dir)
{
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    cr_assert_eq(system(command), 0, "%s", command);
}

#endif
