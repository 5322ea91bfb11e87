// The golden files of tests/golden/ (written by tools/torch_golden_NN.py):
// read a file's tensors by name and compare ours with them. Used by the test
// files of the stages that train (06 onwards).
#ifndef GOLDEN_H
#define GOLDEN_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tensor.h"

// Where the golden files are: next to this source file, whichever directory
// the tests were compiled and are run from (the root or a stage directory).
static inline FILE *open_golden(const char *name)
{
    char path[1024];
    const char *src = __FILE__, *slash = strrchr(src, '/');
    int dir = slash ? (int)(slash - src) : 0;
    snprintf(path, sizeof path, "%.*s%sgolden/%s", dir, src, slash ? "/" : "", name);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(path, sizeof path, "tests/golden/%s", name);
        f = fopen(path, "r");
    }
    cr_assert_not_null(f, "cannot open golden file %s (from %s)", name, __FILE__);
    return f;
}

struct golden {
    char name[32];
    int ndim, shape[4];
    long size;
    float v[1024];
};

// Reads the next tensor of the file; 0 at the end.
static inline int read_golden(FILE *f, struct golden *g)
{
    int c;
    while ((c = fgetc(f)) == '#' || c == '\n')
        if (c == '#')
            while ((c = fgetc(f)) != '\n' && c != EOF) {
            }
    if (c == EOF)
        return 0;
    ungetc(c, f);
    cr_assert_eq(fscanf(f, "%31s %d", g->name, &g->ndim), 2, "bad golden line");
    cr_assert(g->ndim >= 1 && g->ndim <= 4);
    g->size = 1;
    for (int i = 0; i < g->ndim; i++) {
        cr_assert_eq(fscanf(f, "%d", &g->shape[i]), 1);
        g->size *= g->shape[i];
    }
    cr_assert(g->size <= 1024);
    for (long i = 0; i < g->size; i++)
        cr_assert_eq(fscanf(f, "%f", &g->v[i]), 1, "%s: value %ld", g->name, i);
    return 1;
}

// The golden tensors of one file, by name.
struct golden_set {
    struct golden g[16];
    int n;
};

static inline void load_golden(const char *file, struct golden_set *s)
{
    FILE *f = open_golden(file);
    s->n = 0;
    while (s->n < 16 && read_golden(f, &s->g[s->n]))
        s->n++;
    fclose(f);
}

static inline const struct golden *find(const struct golden_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->g[i].name, name) == 0)
            return &s->g[i];
    cr_assert_fail("golden tensor %s missing", name);
    return NULL;
}

static inline struct tensor *golden_param(const struct golden_set *s, const char *name)
{
    const struct golden *g = find(s, name);
    struct tensor *p = tensor_param(g->ndim, g->shape);
    memcpy(p->data, g->v, sizeof(float) * (size_t)g->size);
    return p;
}

// Float against float, two libraries summing in different orders: 1e-5 of
// the largest value is about 100 roundings.
static inline void expect_close(const char *what, const float *got, const struct golden *want)
{
    float big = 0.0f;
    for (long i = 0; i < want->size; i++)
        big = fmaxf(big, fabsf(want->v[i]));
    for (long i = 0; i < want->size; i++)
        cr_assert(fabsf(got[i] - want->v[i]) <= 1e-5f * big + 1e-7f,
                  "%s[%ld] = %.9g, PyTorch %.9g", what, i, got[i], want->v[i]);
}

#endif
