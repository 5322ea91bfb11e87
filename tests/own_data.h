// Datasets the tests write for themselves: IDX files, the committed sample
// copied uncompressed (a set datasets/SHA256SUMS knows), a small set of
// made-up images that no list knows (a reader's own), and a training driver
// run on them as a reader runs it (run_driver.h). Used by tests/test_data.c
// and the tests of stages 07 and 08.
#ifndef OWN_DATA_H
#define OWN_DATA_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <zlib.h>

#include "checkout.h"
#include "dataset.h"
#include "idx.h"
#include "run_driver.h"
#include "sha256.h"

static inline void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static inline void write_gz(const char *path, const void *data, size_t n)
{
    gzFile g = gzopen(path, "wb");
    cr_assert_not_null(g, "cannot write %s", path);
    cr_assert_eq(gzwrite(g, data, (unsigned)n), (int)n);
    gzclose(g);
}

// An IDX header for unsigned bytes with nd dimensions, then body bytes, into
// buf (4 + 4·nd + nbody bytes). Returns the file's length.
static inline size_t make_idx(unsigned char *buf, int nd, const uint32_t *dims,
                              const unsigned char *body, size_t nbody)
{
    buf[0] = buf[1] = 0;
    buf[2] = 0x08;
    buf[3] = (unsigned char)nd;
    for (int d = 0; d < nd; d++)
        for (int b = 0; b < 4; b++)
            buf[4 + 4 * d + b] = (unsigned char)(dims[d] >> (24 - 8 * b));
    memcpy(buf + 4 + 4 * nd, body, nbody);
    return 4 + 4 * (size_t)nd + nbody;
}

// The four files of a set, in the order of dataset.c and datasets/SHA256SUMS.
static inline const char *idx_file_name(int f)
{
    static const char *const names[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    return names[f];
}

static inline const char *sample_file(const char *name)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/datasets/sample/%s", checkout_root(), name);
    return path;
}

// Copies the sample's four files, decompressed, into dir (which exists).
static inline void copy_sample_raw(const char *dir)
{
    for (int f = 0; f < 4; f++) {
        char gz[300], out[300], err[600];
        snprintf(gz, sizeof gz, "%s.gz", idx_file_name(f));
        struct idx x;
        cr_assert_eq(idx_read(sample_file(gz), &x, err, sizeof err), 0, "%s", err);
        snprintf(out, sizeof out, "%s/%s", dir, idx_file_name(f));
        write_file(out, x.bytes, x.nbytes);
        idx_free(&x);
    }
}

// Writes a set no list knows into dir (which exists): train and test images
// of rows×cols pixels, labels 0..9 in turn, each image a bright band at the
// height of its label over faint noise, so that a network learns it fast.
// gz: the files gzipped. sha receives each file's SHA-256, over its IDX
// bytes, as datasets/SHA256SUMS would list it.
static inline void write_own_set(const char *dir, int train, int test, int rows, int cols,
                                 int gz, char sha[4][65])
{
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int split = 0; split < 2; split++) {
        uint32_t n = (uint32_t)(split ? test : train);
        size_t pixels = (size_t)rows * (size_t)cols;
        unsigned char *body = malloc(n * pixels), *labels = malloc(n);
        unsigned char *file = malloc(16 + n * pixels);
        cr_assert(body && labels && file);
        for (uint32_t i = 0; i < n; i++) {
            labels[i] = (unsigned char)(i % 10);
            for (size_t p = 0; p < pixels; p++) {
                x ^= x << 13;  // xorshift64
                x ^= x >> 7;
                x ^= x << 17;
                int band = (int)(p / (size_t)cols) * 10 / rows == labels[i];
                body[i * pixels + p] = (unsigned char)((x >> 58) + (band ? 180 : 0));
            }
        }
        for (int kind = 0; kind < 2; kind++) {
            int f = 2 * split + kind;
            size_t len = kind == 0
                             ? make_idx(file, 3, (uint32_t[]){n, (uint32_t)rows, (uint32_t)cols},
                                        body, n * pixels)
                             : make_idx(file, 1, (uint32_t[]){n}, labels, n);
            char path[300];
            snprintf(path, sizeof path, "%s/%s%s", dir, idx_file_name(f), gz ? ".gz" : "");
            if (gz)
                write_gz(path, file, len);
            else
                write_file(path, file, len);
            if (sha)
                sha256_hex(file, len, sha[f]);
        }
        free(body);
        free(labels);
        free(file);
    }
}

// The lines of text that start with prefix: how many, and the first.
static inline int lines_starting(const char *text, const char *prefix, const char **first)
{
    int count = 0;
    *first = NULL;
    for (const char *line = text; line && *line;) {
        if (strncmp(line, prefix, strlen(prefix)) == 0 && count++ == 0)
            *first = line;
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return count;
}

// write_own_set into a new directory dir/name.
static inline void write_own_set_in(const char *dir, const char *name, int train, int test,
                                    int rows, int gz, char sha[4][65])
{
    char sub[300];
    snprintf(sub, sizeof sub, "%s/%s", dir, name);
    cr_assert_eq(mkdir(sub, 0700), 0, "mkdir %s", sub);
    write_own_set(sub, train, test, rows, rows, gz, sha);
}

// Writes a set of the reader's own into dir/name (train and test images of
// 28×28) and trains driver on it with `--data name` and args: it must exit 0
// after one note that names the set and gives its four checksums as lines
// of datasets/SHA256SUMS, and print one line per epoch.
static inline void expect_training_with_a_note(const char *dir, const char *driver,
                                               const char *name, const char *args, int train,
                                               int test, int gz, int epochs)
{
    char all[600], sha[4][65], want[400];
    write_own_set_in(dir, name, train, test, 28, gz, sha);
    snprintf(all, sizeof all, "--data %s %s", name, args);
    int rc = run_driver(dir, driver, all);
    char *log = read_text(dir, "log");
    cr_assert_eq(rc, 0, "%s %s exited with %d:\n%s", driver, all, rc, log);
    const char *note, *epoch;
    cr_assert_eq(lines_starting(log, "note: ", &note), 1, "one note:\n%s", log);
    snprintf(want, sizeof want, "note: datasets/SHA256SUMS does not list %s: ", name);
    cr_assert(strncmp(note, want, strlen(want)) == 0, "%s", log);
    size_t note_len = strcspn(note, "\n");
    for (int f = 0; f < 4; f++) {
        snprintf(want, sizeof want, "%s  %s/%s", sha[f], name, idx_file_name(f));
        const char *at = strstr(note, want);
        cr_assert(at && at < note + note_len, "'%s' in the note:\n%s", want, log);
    }
    snprintf(want, sizeof want, "on %s (%d train, %d test images)", name, train, test);
    cr_assert_not_null(strstr(log, want), "%s", log);
    cr_assert_eq(lines_starting(log, "epoch ", &epoch), epochs, "%s", log);
    free(log);
}

// Runs driver with args in dir: it must stop with exit status 1 and the
// message want, before any epoch.
static inline void expect_refusal(const char *dir, const char *driver, const char *args,
                                  const char *want)
{
    int rc = run_driver(dir, driver, args);
    char *log = read_text(dir, "log");
    const char *epoch;
    cr_assert_eq(rc, 1, "%s %s exited with %d:\n%s", driver, args, rc, log);
    cr_assert_not_null(strstr(log, want), "'%s' in:\n%s", want, log);
    cr_assert_eq(lines_starting(log, "epoch ", &epoch), 0, "%s", log);
    free(log);
}

// The table of a results file dir/name past its `#` lines: its rows (with a
// header row, if it has one), the fields of the first (every row must have
// as many), and the sum of |value| over the fields that are numbers.
static inline void table_shape(const char *dir, const char *name, int *rows, int *fields,
                               double *sum)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    static char line[1 << 16];
    *rows = *fields = 0;
    *sum = 0.0;
    while (fgets(line, sizeof line, f)) {
        cr_assert_not_null(strchr(line, '\n'), "%s: a line longer than the test reads", path);
        if (line[0] == '#')
            continue;
        int n = 0;
        for (char *p = line; *p;) {
            char *end;
            double v = strtod(p, &end);
            if (end != p && (*end == ',' || *end == '\n'))
                *sum += v < 0 ? -v : v;
            end = p + strcspn(p, ",\n");
            n++;
            p = *end == ',' ? end + 1 : end + strlen(end);
        }
        if ((*rows)++ == 0)
            *fields = n;
        cr_assert_eq(n, *fields, "%s: row %d has %d fields, the first %d", path, *rows, n,
                     *fields);
    }
    fclose(f);
}

#endif
