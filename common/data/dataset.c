// Loading a dataset: find its four files, read them, check each against
// datasets/SHA256SUMS, check images against labels.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "sha256.h"

// The repository root, set by common/build.mk, so a program finds datasets/
// and build/datasets/ from whatever directory it runs in.
#ifndef DATASET_ROOT
#define DATASET_ROOT "."
#endif

const char *dataset_root(void) { return DATASET_ROOT; }

static const char *const FILES[4] = {
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int file_exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    fclose(f);
    return 1;
}

// The SHA-256 of a whole file's bytes (for a .gz compared as an archive).
static int hash_file(const char *path, char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    struct sha256 s;
    sha256_init(&s);
    unsigned char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        sha256_update(&s, buf, got);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return -1;
    unsigned char d[32];
    sha256_final(&s, d);
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
    return 0;
}

// Checks one file against datasets/SHA256SUMS. Its lines are
//   <sha256>  <set>/<file>
// where the checksum is over the decompressed IDX bytes, except for names
// ending in .gz: those are upstream archives, checked as the bytes fetched.
// set is NULL for a directory given by path: any set's entry may match.
static int verify(const char *path, const struct idx *x, const char *set, const char *base,
                  char *err, size_t errlen)
{
    char sums[4200];
    snprintf(sums, sizeof sums, "%s/datasets/SHA256SUMS", DATASET_ROOT);
    FILE *f = fopen(sums, "r");
    if (f == NULL)
        return fail(err, errlen, "%s: cannot open it (%s), so %s cannot be checked", sums,
                    strerror(errno), path);

    char have[65], have_gz[65] = "";
    sha256_hex(x->bytes, x->nbytes, have);
    size_t blen = strlen(base), plen = strlen(path);
    int is_gz = plen > 3 && strcmp(path + plen - 3, ".gz") == 0;
    int known = 0, match = 0;
    char line[512];
    while (!match && fgets(line, sizeof line, f) != NULL) {
        char hash[65], name[400];
        if (line[0] == '#' || sscanf(line, "%64s %399s", hash, name) != 2)
            continue;
        char *slash = strrchr(name, '/');
        const char *file = slash ? slash + 1 : name;
        if (set != NULL && (slash == NULL || (size_t)(slash - name) != strlen(set) ||
                            strncmp(name, set, strlen(set)) != 0))
            continue;
        if (strcmp(file, base) == 0) {
            known = 1;
            match = strcmp(hash, have) == 0;
        } else if (is_gz && strncmp(file, base, blen) == 0 && strcmp(file + blen, ".gz") == 0) {
            known = 1;
            if (have_gz[0] == '\0' && hash_file(path, have_gz) != 0)
                continue;
            match = strcmp(hash, have_gz) == 0;
        }
    }
    fclose(f);
    if (match)
        return 0;
    if (known && set != NULL)
        return fail(err, errlen,
                    "%s: checksum mismatch: its IDX bytes have SHA-256 %s, not the one "
                    "datasets/SHA256SUMS lists for %s/%s; the file is damaged or is another "
                    "dataset's; run `make datasets` to fetch it again",
                    path, have, set, base);
    if (known)
        return fail(err, errlen,
                    "%s: checksum mismatch: its IDX bytes have SHA-256 %s, which "
                    "datasets/SHA256SUMS lists for no %s of any set; the file is damaged or "
                    "unknown; run `make datasets` to fetch a known one",
                    path, have, base);
    return fail(err, errlen,
                "%s: not a file datasets/SHA256SUMS knows (its IDX bytes have SHA-256 %s); "
                "run `make datasets` to fetch a known one",
                path, have);
}

// Reads DIR/base or DIR/base.gz into x and checks it.
static int load_file(const char *dir, const char *base, const char *set, int sample,
                     struct idx *x, char *path, size_t pathlen, char *err, size_t errlen)
{
    snprintf(path, pathlen, "%s/%s", dir, base);
    if (!file_exists(path)) {
        snprintf(path, pathlen, "%s/%s.gz", dir, base);
        if (!file_exists(path))
            return fail(err, errlen, "%s/%s: missing (neither it nor %s.gz is there); %s", dir,
                        base, base,
                        sample ? "the sample is part of the repository: restore it with "
                                 "`git checkout datasets/sample`"
                               : "run `make datasets` to fetch it");
    }
    if (idx_read(path, x, err, errlen) != 0)
        return -1;
    if (verify(path, x, set, base, err, errlen) != 0) {
        idx_free(x);
        return -1;
    }
    return 0;
}

static int load_split(const char *dir, const char *set, int sample, int which,
                      struct dataset_split *s, char *err, size_t errlen)
{
    char ipath[4200], lpath[4200];
    if (load_file(dir, FILES[2 * which], set, sample, &s->image_file, ipath, sizeof ipath, err,
                  errlen) != 0)
        return -1;
    if (load_file(dir, FILES[2 * which + 1], set, sample, &s->label_file, lpath, sizeof lpath,
                  err, errlen) != 0)
        return -1;
    if (idx_check_pair(&s->image_file, ipath, &s->label_file, lpath, DATASET_CLASSES, err,
                       errlen) != 0)
        return -1;
    s->count = (int)s->image_file.count;  // < 2^30: idx caps a file at 1 GiB
    s->rows = (int)s->image_file.dims[1];
    s->cols = (int)s->image_file.dims[2];
    s->pixels = s->rows * s->cols;
    s->images = s->image_file.data;
    s->labels = s->label_file.data;
    return 0;
}

int dataset_load(const char *name, const char *data_dir, struct dataset *ds, char *err,
                 size_t errlen)
{
    memset(ds, 0, sizeof *ds);
    const char *set = name;
    int sample = 0;
    if (strchr(name, '/') != NULL) {
        // A directory: its files may be any known set's.
        snprintf(ds->dir, sizeof ds->dir, "%s", name);
        const char *end = name + strlen(name);
        while (end > name && end[-1] == '/')
            end--;
        const char *start = end;
        while (start > name && start[-1] != '/')
            start--;
        snprintf(ds->name, sizeof ds->name, "%.*s", (int)(end - start), start);
        set = NULL;
    } else if (strcmp(name, "mnist") != 0 && strcmp(name, "fashion") != 0 &&
               strcmp(name, "sample") != 0) {
        return fail(err, errlen,
                    "unknown dataset '%s': give mnist, fashion, sample or a directory "
                    "(a path with a '/')",
                    name);
    } else if (strcmp(name, "sample") == 0) {
        snprintf(ds->dir, sizeof ds->dir, "%s/datasets/sample", DATASET_ROOT);
        snprintf(ds->name, sizeof ds->name, "%s", name);
        sample = 1;
    } else {
        const char *env = getenv("DATA_DIR");
        if (data_dir != NULL && data_dir[0] != '\0')
            snprintf(ds->dir, sizeof ds->dir, "%s/%s", data_dir, name);
        else if (env != NULL && env[0] != '\0')
            snprintf(ds->dir, sizeof ds->dir, "%s/%s", env, name);
        else
            snprintf(ds->dir, sizeof ds->dir, "%s/build/datasets/%s", DATASET_ROOT, name);
        snprintf(ds->name, sizeof ds->name, "%s", name);
    }

    if (load_split(ds->dir, set, sample, 0, &ds->train, err, errlen) != 0 ||
        load_split(ds->dir, set, sample, 1, &ds->test, err, errlen) != 0) {
        dataset_free(ds);
        return -1;
    }
    if (ds->test.rows != ds->train.rows || ds->test.cols != ds->train.cols) {
        fail(err, errlen, "%s: test images are %d×%d, training images %d×%d; run `make datasets`",
             ds->dir, ds->test.rows, ds->test.cols, ds->train.rows, ds->train.cols);
        dataset_free(ds);
        return -1;
    }
    return 0;
}

void dataset_free(struct dataset *ds)
{
    idx_free(&ds->train.image_file);
    idx_free(&ds->train.label_file);
    idx_free(&ds->test.image_file);
    idx_free(&ds->test.label_file);
    memset(&ds->train, 0, sizeof ds->train);
    memset(&ds->test, 0, sizeof ds->test);
}
