// Loading a dataset: find its four files, read them, check each against
// datasets/SHA256SUMS (the rule is in checksums.c), check images against
// labels.
#define _XOPEN_SOURCE 700  // realpath, stat
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkout.h"
#include "checksums.h"
#include "dataset.h"
#include "sha256.h"

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

// What reading a set's files needs besides the files: the list, the name
// they are looked up under, what to tell the reader when one is missing or
// not the list's, and (out) the checksums for the note.
struct lookup {
    const struct checksums *sums;
    const char *set;
    const char *missing_hint, *mismatch_hint;
    int own;       // a set the reader made (the list knows no set of its name)
    int unlisted;  // files the list does not know
    char sha[4][65];
};

// idx.c's messages end with the hint to fetch the file again, which is right
// for the book's sets; a reader's own files are theirs to mend.
static void own_hint(char *err, size_t errlen)
{
    size_t n = strlen(err), h = strlen(IDX_HINT);
    if (n >= h && strcmp(err + n - h, IDX_HINT) == 0)
        snprintf(err + n - h, errlen - (n - h), "%s",
                 "mend the file, or make it again (`make datasets` fetches only the book's sets)");
}

// Reads DIR/FILES[which] or its .gz into x and checks it.
static int load_file(const char *dir, int which, struct lookup *l, struct idx *x, char *path,
                     size_t pathlen, char *err, size_t errlen)
{
    const char *base = FILES[which];
    snprintf(path, pathlen, "%s/%s", dir, base);
    if (!file_exists(path)) {
        snprintf(path, pathlen, "%s/%s.gz", dir, base);
        if (!file_exists(path))
            return fail(err, errlen, "%s/%s: missing (neither it nor %s.gz is there); %s", dir,
                        base, base, l->missing_hint);
    }
    if (idx_read(path, x, err, errlen) != 0) {
        if (l->own)
            own_hint(err, errlen);
        return -1;
    }
    sha256_hex(x->bytes, x->nbytes, l->sha[which]);
    int known = checksums_check(l->sums, l->set, base, path, l->sha[which], l->mismatch_hint,
                                err, errlen);
    if (known < 0) {
        idx_free(x);
        return -1;
    }
    l->unlisted += known == CHECKSUM_UNLISTED;
    return 0;
}

static int load_split(const char *dir, struct lookup *l, int which, struct dataset_split *s,
                      char *err, size_t errlen)
{
    char ipath[4200], lpath[4200];
    if (load_file(dir, 2 * which, l, &s->image_file, ipath, sizeof ipath, err, errlen) != 0 ||
        load_file(dir, 2 * which + 1, l, &s->label_file, lpath, sizeof lpath, err, errlen) != 0)
        return -1;
    if (idx_check_pair(&s->image_file, ipath, &s->label_file, lpath, DATASET_CLASSES, err,
                       errlen) != 0) {
        if (l->own)
            own_hint(err, errlen);
        return -1;
    }
    s->count = (int)s->image_file.count;  // < 2^30: idx caps a file at 1 GiB
    s->rows = (int)s->image_file.dims[1];
    s->cols = (int)s->image_file.dims[2];
    s->pixels = s->rows * s->cols;
    s->images = s->image_file.data;
    s->labels = s->label_file.data;
    return 0;
}

// A directory the reader names, written any way: ds->dir as written (less
// trailing slashes), ds->name the directory's own name with links followed,
// so that `.` inside build/datasets/fashion is "fashion".
static int reader_dir(const char *name, struct dataset *ds, char *err, size_t errlen)
{
    struct stat st;
    if (stat(name, &st) != 0) {
        if (strchr(name, '/') == NULL)
            return fail(err, errlen,
                        "unknown dataset '%s': give mnist, fashion, sample or a directory "
                        "(there is no directory '%s' here)",
                        name, name);
        return fail(err, errlen,
                    "%s: no such directory (%s); give mnist, fashion, sample or a directory "
                    "of the four IDX files",
                    name, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return fail(err, errlen,
                    "%s: not a directory; give mnist, fashion, sample or a directory of the "
                    "four IDX files",
                    name);
    size_t n = strlen(name);
    while (n > 1 && name[n - 1] == '/')
        n--;
    snprintf(ds->dir, sizeof ds->dir, "%.*s", (int)n, name);
    char *real = realpath(name, NULL);
    const char *full = real ? real : ds->dir, *slash = strrchr(full, '/');
    // A name of more than 63 bytes is cut, the same way every time.
    snprintf(ds->name, sizeof ds->name, "%.63s", slash && slash[1] ? slash + 1 : full);
    free(real);
    return 0;
}

// The note for a set the list does not know: one line, the four checksums
// as lines of datasets/SHA256SUMS would give them.
static void write_note(struct dataset *ds, const struct lookup *l)
{
    size_t at = (size_t)snprintf(
        ds->note, sizeof ds->note,
        "datasets/SHA256SUMS does not list %s: its files were checked for what needs no list "
        "(IDX headers and lengths, images against labels, labels 0 to 9); to list them, add",
        ds->name);
    for (int f = 0; f < 4 && at < sizeof ds->note; f++)
        at += (size_t)snprintf(ds->note + at, sizeof ds->note - at, "%s %s  %s/%s",
                               f ? "," : ":", l->sha[f], ds->name, FILES[f]);
}

int dataset_load(const char *name, const char *data_dir, struct dataset *ds, char *err,
                 size_t errlen)
{
    memset(ds, 0, sizeof *ds);
    // The checkout's datasets/ and build/datasets/, from whatever directory
    // the program runs in and wherever the checkout has moved.
    const char *root = checkout_root();
    if (root == NULL) {
        if (err != NULL && errlen > 0)
            checkout_missing(err, (int)errlen);
        return -1;
    }
    int is_dir = 0;  // a directory the reader names
    struct lookup l = {.missing_hint = "run `make datasets` to fetch it",
                       .mismatch_hint = "run `make datasets` to fetch it again"};
    if (strcmp(name, "sample") == 0) {
        snprintf(ds->dir, sizeof ds->dir, "%s/datasets/sample", root);
        snprintf(ds->name, sizeof ds->name, "%s", name);
        l.missing_hint = l.mismatch_hint =
            "the sample is part of the repository: restore it with `git checkout "
            "datasets/sample`";
    } else if (strcmp(name, "mnist") == 0 || strcmp(name, "fashion") == 0) {
        if (data_dir != NULL && data_dir[0] != '\0')
            snprintf(ds->dir, sizeof ds->dir, "%s/%s", data_dir, name);
        else
            snprintf(ds->dir, sizeof ds->dir, "%s/build/datasets/%s", root, name);
        snprintf(ds->name, sizeof ds->name, "%s", name);
    } else {
        if (reader_dir(name, ds, err, errlen) != 0)
            return -1;
        is_dir = 1;
        l.missing_hint = "a dataset directory holds the four IDX files train-images-idx3-ubyte, "
                         "train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
                         "t10k-labels-idx1-ubyte, each raw or .gz";
        l.mismatch_hint = "a directory named like a set of that list is checked as that set: "
                          "run `make datasets` to fetch it again, or put a set of your own in a "
                          "directory of another name";
    }
    l.set = ds->name;

    char list[4200];
    struct checksums sums;
    snprintf(list, sizeof list, "%s/datasets/SHA256SUMS", root);
    if (checksums_read(list, &sums, err, errlen) != 0)
        return -1;
    l.sums = &sums;
    l.own = is_dir && !checksums_has_set(&sums, ds->name);
    int bad = load_split(ds->dir, &l, 0, &ds->train, err, errlen) != 0 ||
              load_split(ds->dir, &l, 1, &ds->test, err, errlen) != 0;
    checksums_free(&sums);
    if (!bad && (ds->test.rows != ds->train.rows || ds->test.cols != ds->train.cols)) {
        fail(err, errlen, "%s: test images are %d×%d, training images %d×%d; %s", ds->dir,
             ds->test.rows, ds->test.cols, ds->train.rows, ds->train.cols,
             l.own ? "a set's images all have one size" : "run `make datasets`");
        bad = 1;
    }
    if (bad) {
        dataset_free(ds);
        return -1;
    }
    if (l.unlisted > 0)
        write_note(ds, &l);
    return 0;
}

int dataset_load_for_bench(const char *name, const char *data_dir, struct dataset *ds, char *err,
                           size_t errlen)
{
    int status;
    if (name)
        status = dataset_load(name, data_dir, ds, err, errlen);
    else if ((status = dataset_load("fashion", data_dir, ds, err, errlen)) != 0) {
        fprintf(stderr, "note: no Fashion-MNIST (make datasets); timing on the sample\n");
        status = dataset_load("sample", NULL, ds, err, errlen);
    }
    if (status == 0 && ds->note[0])
        fprintf(stderr, "note: %s\n", ds->note);
    return status;
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
