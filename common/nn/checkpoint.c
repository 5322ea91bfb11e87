// Checkpoints: a model's parameters in a file with a header, its shapes and
// a SHA-256, written atomically and read back only when every check passes.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "sha256.h"

// The layout (checkpoint.h): magic 8, version 4, desc 64, count 4, then 20
// bytes a parameter (ndim and 4 dims, unused dims 0), the floats, the digest.
enum { MAGIC_LEN = 8, DESC_LEN = 64, HEAD_LEN = MAGIC_LEN + 4 + DESC_LEN + 4, SHAPE_LEN = 20,
       DIGEST_LEN = 32 };
static const char magic[MAGIC_LEN] = {'M', 'N', 'I', 'S', 'T', 'C', 'K', 'P'};

// Little-endian by hand, byte by byte: the same file on every machine.
static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// The model's description in its 64-byte field, padded with NULs (a
// description is at most 63 characters: nn_model's desc field).
static void put_desc(unsigned char *p, const char *desc)
{
    memset(p, 0, DESC_LEN);
    memcpy(p, desc, strnlen(desc, DESC_LEN - 1));
}

static void put_shape(unsigned char *p, const struct tensor *t)
{
    put_u32(p, (uint32_t)t->ndim);
    for (int d = 0; d < 4; d++)
        put_u32(p + 4 + 4 * d, d < t->ndim ? (uint32_t)t->shape[d] : 0);
}

// The whole file's length for model m.
static size_t file_length(const struct nn_model *m)
{
    return HEAD_LEN + (size_t)m->nparams * SHAPE_LEN + sizeof(float) * (size_t)nn_param_count(m) +
           DIGEST_LEN;
}

// The file in memory: header, shapes, floats, digest.
static unsigned char *encode(const struct nn_model *m, size_t *len)
{
    *len = file_length(m);
    unsigned char *buf = calloc(1, *len), *p = buf;
    if (!buf)
        return NULL;
    memcpy(p, magic, MAGIC_LEN);
    put_u32(p + MAGIC_LEN, CHECKPOINT_VERSION);
    put_desc(p + MAGIC_LEN + 4, m->desc);
    put_u32(p + MAGIC_LEN + 4 + DESC_LEN, (uint32_t)m->nparams);
    p += HEAD_LEN;
    for (int i = 0; i < m->nparams; i++, p += SHAPE_LEN)
        put_shape(p, m->params[i]);
    for (int i = 0; i < m->nparams; i++)
        for (long j = 0; j < m->params[i]->size; j++, p += 4) {
            uint32_t bits;
            memcpy(&bits, &m->params[i]->data[j], 4);
            put_u32(p, bits);
        }
    struct sha256 s;
    sha256_init(&s);
    sha256_update(&s, buf, *len - DIGEST_LEN);
    sha256_final(&s, p);
    return buf;
}

// After the rename, the directory's entry for path must reach the disk too,
// or a power cut could bring back the old name. Best effort: a file system
// that cannot sync a directory still has the file.
static void sync_directory(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096] = ".";
    if (slash && (size_t)(slash - path) < sizeof dir) {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

// listing: checkpoint_save
// A crash (or a full disk) in the middle of writing must not leave a
// half-written file under path: write path.tmp, flush it to the disk, and
// only then rename it over path. rename() within a directory is atomic, so
// path holds the old model or the new one, never a mixture.
int checkpoint_save(const char *path, const struct nn_model *m, char *err, size_t errlen)
{
    size_t len;
    unsigned char *buf = encode(m, &len);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory for a checkpoint of %zu bytes", path, len);
        return -1;
    }
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) {
        free(buf);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    int rc = -1;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s (does its directory exist?)", tmp,
                 strerror(errno));
        goto done;
    }
    int bad = fwrite(buf, 1, len, f) != len || fflush(f) != 0 || fsync(fileno(f)) != 0;
    int saved_errno = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        saved_errno = errno;
    }
    if (bad) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(saved_errno));
        remove(tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        remove(tmp);
        goto done;
    }
    sync_directory(path);
    rc = 0;
done:
    free(tmp);
    free(buf);
    return rc;
}
// end listing

// Reads the whole file into a new buffer; NULL with a message.
static unsigned char *read_all(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, used = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        used += fread(buf + used, 1, cap - used, f);
        if (used < cap)
            break;
        unsigned char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory reading it", path);
        return NULL;
    }
    if (failed) {
        snprintf(err, errlen, "cannot read %s (is it a directory?)", path);
        free(buf);
        return NULL;
    }
    *len = used;
    return buf;
}

// A description from the file as printable text, for messages.
static void printable(char *out, const unsigned char *desc)
{
    int i = 0;
    for (; i < DESC_LEN - 1 && desc[i]; i++)
        out[i] = desc[i] >= 32 && desc[i] < 127 ? (char)desc[i] : '?';
    out[i] = '\0';
}

// Every check of the file against m; 0, or -1 with a message.
static int check(const char *path, const unsigned char *buf, size_t len,
                 const struct nn_model *m, char *err, size_t errlen)
{
    if (len < MAGIC_LEN || memcmp(buf, magic, MAGIC_LEN) != 0) {
        snprintf(err, errlen, "%s is not a checkpoint (it does not start with MNISTCKP)", path);
        return -1;
    }
    if (len < HEAD_LEN) {
        snprintf(err, errlen, "%s is truncated: %zu bytes, shorter than a checkpoint's header",
                 path, len);
        return -1;
    }
    uint32_t version = get_u32(buf + MAGIC_LEN);
    if (version != CHECKPOINT_VERSION) {
        snprintf(err, errlen, "%s is a version %u checkpoint; this program reads version %d",
                 path, version, CHECKPOINT_VERSION);
        return -1;
    }
    unsigned char want[DESC_LEN];
    put_desc(want, m->desc);
    if (memcmp(buf + MAGIC_LEN + 4, want, DESC_LEN) != 0) {
        char got[DESC_LEN];
        printable(got, buf + MAGIC_LEN + 4);
        snprintf(err, errlen, "%s holds the model \"%s\", not \"%s\"", path, got, m->desc);
        return -1;
    }
    uint32_t count = get_u32(buf + MAGIC_LEN + 4 + DESC_LEN);
    if (count != (uint32_t)m->nparams) {
        snprintf(err, errlen, "%s holds %u parameters; the model has %d", path, count,
                 m->nparams);
        return -1;
    }
    if (len < HEAD_LEN + (size_t)count * SHAPE_LEN) {
        snprintf(err, errlen, "%s is truncated: %zu bytes, it ends inside the shapes", path, len);
        return -1;
    }
    for (int i = 0; i < m->nparams; i++) {
        unsigned char shape[SHAPE_LEN];
        put_shape(shape, m->params[i]);
        if (memcmp(buf + HEAD_LEN + (size_t)i * SHAPE_LEN, shape, SHAPE_LEN) != 0) {
            char ours[64];
            tensor_shape_str(m->params[i], ours, sizeof ours);
            snprintf(err, errlen, "%s: parameter %d has another shape than the model's %s", path,
                     i, ours);
            return -1;
        }
    }
    size_t expect = file_length(m);
    if (len != expect) {
        snprintf(err, errlen, "%s is %s: %zu bytes, a checkpoint of this model has %zu", path,
                 len < expect ? "truncated" : "too long", len, expect);
        return -1;
    }
    unsigned char digest[DIGEST_LEN];
    struct sha256 s;
    sha256_init(&s);
    sha256_update(&s, buf, len - DIGEST_LEN);
    sha256_final(&s, digest);
    if (memcmp(digest, buf + len - DIGEST_LEN, DIGEST_LEN) != 0) {
        snprintf(err, errlen, "%s is damaged: its SHA-256 checksum does not match its contents",
                 path);
        return -1;
    }
    return 0;
}

int checkpoint_load(const char *path, struct nn_model *m, char *err, size_t errlen)
{
    size_t len = 0;
    unsigned char *buf = read_all(path, &len, err, errlen);
    if (!buf)
        return -1;
    if (check(path, buf, len, m, err, errlen) != 0) {
        free(buf);
        return -1;
    }
    // Every check passed: only now does the model change.
    const unsigned char *p = buf + HEAD_LEN + (size_t)m->nparams * SHAPE_LEN;
    for (int i = 0; i < m->nparams; i++)
        for (long j = 0; j < m->params[i]->size; j++, p += 4) {
            uint32_t bits = get_u32(p);
            memcpy(&m->params[i]->data[j], &bits, 4);
        }
    free(buf);
    return 0;
}
