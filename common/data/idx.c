// Reading IDX files, raw or gzip, trusting nothing in them: every size is
// checked against the header before it is used, so a damaged file is an
// error with its name on it, never a short read or a crash.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "idx.h"

// No dataset this book reads is near this; it bounds what a corrupt or
// hostile gzip stream can make us allocate (deflate expands at most ~1000×).
#define IDX_MAX_BYTES ((size_t)1 << 30)

// Writes "name: what; hint" into err and returns -1.
static int fail(char *err, size_t errlen, const char *name, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return -1;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%s: %s; %s", name, what, IDX_HINT);
    return -1;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int is_gzip(const unsigned char *p, size_t n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

// Where gunzip's input comes from: a buffer already in memory, or a file
// read 64 KiB at a time. Streaming the file matters for memory: Fashion-
// MNIST's training images are 26 MB of gzip that inflate to 47 MB, and
// holding both at once would set the training run's peak at 73 MB before
// it has trained anything.
struct source {
    const unsigned char *mem;  // the unread rest of a buffer, or NULL
    FILE *f;                   // or the file, positioned after what was fed
    size_t total;              // input bytes in all
    size_t fed;                // input bytes handed to zlib so far
    unsigned char chunk[1 << 16];
};

// Gives zlib more input once it has used what it had (keeping up to one
// unread byte in front, so a member's two magic bytes can be looked at
// together). Returns the bytes zlib now has.
static size_t refill(struct source *s, z_stream *z)
{
    if (z->avail_in > 1 || s->fed == s->total)
        return z->avail_in;
    if (s->mem != NULL) {
        // avail_in and avail_out are 32-bit: at most 1 GiB at a time. The
        // buffer is contiguous, so a byte left unread is just before mem.
        size_t n = s->total - s->fed;
        if (n > IDX_MAX_BYTES)
            n = IDX_MAX_BYTES;
        z->next_in = (unsigned char *)s->mem - z->avail_in;  // zlib only reads
        z->avail_in += (uInt)n;
        s->mem += n;
        s->fed += n;
        return z->avail_in;
    }
    size_t keep = z->avail_in;
    if (keep)
        s->chunk[0] = z->next_in[0];
    size_t n = fread(s->chunk + keep, 1, sizeof s->chunk - keep, s->f);
    z->next_in = s->chunk;
    z->avail_in = (uInt)(keep + n);
    s->fed += n;
    if (n == 0)
        s->total = s->fed;  // the file ended early or could not be read
    return z->avail_in;
}

// Inflates every gzip member of the source into a new buffer (*out, *outn),
// starting with room for cap bytes.
static int gunzip(struct source *src, size_t cap, const char *name, unsigned char **out,
                  size_t *outn, char *err, size_t errlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)  // 16+: gzip wrapper only
        return fail(err, errlen, name, "zlib could not start (out of memory?)");

    if (cap > IDX_MAX_BYTES)
        cap = IDX_MAX_BYTES;
    unsigned char *buf = malloc(cap);
    size_t used = 0;
    int rc = -1;
    if (buf == NULL) {
        fail(err, errlen, name, "out of memory for %zu bytes", cap);
        goto done;
    }
    for (;;) {
        if (used == cap) {
            if (cap == IDX_MAX_BYTES) {
                fail(err, errlen, name, "decompresses to more than %zu bytes, larger than any IDX file here",
                     (size_t)IDX_MAX_BYTES);
                goto done;
            }
            size_t bigger = cap > IDX_MAX_BYTES / 2 ? IDX_MAX_BYTES : 2 * cap;
            unsigned char *grown = realloc(buf, bigger);
            if (grown == NULL) {
                fail(err, errlen, name, "out of memory for %zu bytes", bigger);
                goto done;
            }
            buf = grown;
            cap = bigger;
        }
        refill(src, &z);
        z.next_out = buf + used;
        z.avail_out = (uInt)(cap - used);
        int zr = inflate(&z, Z_NO_FLUSH);
        used = cap - z.avail_out;
        if (zr == Z_STREAM_END) {
            size_t rest = refill(src, &z) + (src->total - src->fed);
            if (rest == 0)
                break;
            // Another gzip member may follow (gzip allows concatenation);
            // anything else is garbage the file should not hold.
            if (!is_gzip(z.next_in, z.avail_in)) {
                fail(err, errlen, name, "%zu bytes of trailing garbage after the gzip stream", rest);
                goto done;
            }
            inflateReset(&z);
            continue;
        }
        if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT) {
            fail(err, errlen, name, "corrupt gzip data (%s)", z.msg ? z.msg : "bad stream");
            goto done;
        }
        if (zr == Z_MEM_ERROR) {
            fail(err, errlen, name, "out of memory while decompressing");
            goto done;
        }
        // Z_BUF_ERROR with no input left: the stream stops before its end.
        if (zr == Z_BUF_ERROR && z.avail_in == 0 && src->fed == src->total) {
            fail(err, errlen, name, "truncated gzip stream (it ends before its end marker)");
            goto done;
        }
    }
    *out = buf;
    *outn = used;
    buf = NULL;
    rc = 0;
done:
    inflateEnd(&z);
    free(buf);
    return rc;
}

// Checks the header and the length of a decompressed IDX file in bytes.
static int check_idx(const unsigned char *b, size_t n, const char *name, struct idx *x,
                     char *err, size_t errlen)
{
    if (n == 0)
        return fail(err, errlen, name, "empty file");
    if (n < 4)
        return fail(err, errlen, name, "%zu bytes, too short for an IDX header", n);
    if (b[0] != 0 || b[1] != 0)
        return fail(err, errlen, name,
                    "not an IDX file (it starts with %02x %02x %02x %02x, IDX starts with 00 00)",
                    b[0], b[1], b[2], b[3]);
    if (b[2] != 0x08)
        return fail(err, errlen, name, "element type 0x%02x, expected 0x08 (unsigned bytes)", b[2]);
    int nd = b[3];
    if (nd != 1 && nd != 3)
        return fail(err, errlen, name, "%d dimensions, expected 1 (labels) or 3 (images)", nd);
    size_t header = 4 + 4 * (size_t)nd;
    if (n < header)
        return fail(err, errlen, name, "truncated header (%zu of its %zu bytes)", n, header);

    x->ndims = nd;
    x->dims[0] = x->dims[1] = x->dims[2] = 1;
    uint64_t body = 1;
    for (int d = 0; d < nd; d++) {
        x->dims[d] = be32(b + 4 + 4 * d);
        if (x->dims[d] == 0)
            return fail(err, errlen, name, "dimension %d is 0", d);
        // Each factor < 2^32 and body ≤ 2^30 before it: no overflow in 64 bits.
        body *= x->dims[d];
        if (body > IDX_MAX_BYTES)
            return fail(err, errlen, name, "its header declares more than %zu bytes",
                        (size_t)IDX_MAX_BYTES);
    }
    uint64_t want = header + body;
    if (n < want)
        return fail(err, errlen, name,
                    "truncated: its header declares %llu bytes (%u × %u × %u), the file has %zu",
                    (unsigned long long)want, x->dims[0], x->dims[1], x->dims[2], n);
    if (n > want)
        return fail(err, errlen, name, "%llu bytes of trailing garbage after the %llu its header declares",
                    (unsigned long long)(n - want), (unsigned long long)want);
    x->count = x->dims[0];
    x->item_size = (size_t)x->dims[1] * x->dims[2];
    x->nbytes = n;
    return 0;
}

// Takes ownership of the decompressed bytes: they become out's, or are freed.
static int adopt(unsigned char *bytes, size_t nbytes, const char *name, struct idx *out,
                 char *err, size_t errlen)
{
    struct idx x;
    memset(&x, 0, sizeof x);
    if (check_idx(bytes, nbytes, name, &x, err, errlen) != 0) {
        free(bytes);
        return -1;
    }
    x.bytes = bytes;
    x.data = bytes + 4 + 4 * (size_t)x.ndims;
    *out = x;
    return 0;
}

// A first guess of the inflated size: a gzip file ends with its last
// member's size mod 2^32 (ISIZE). Only a guess (a file may be damaged or
// hold several members): gunzip grows the buffer when it is wrong.
static size_t inflated_guess(const unsigned char tail[4], size_t n)
{
    size_t isize = (size_t)tail[0] | (size_t)tail[1] << 8 | (size_t)tail[2] << 16 |
                   (size_t)tail[3] << 24;
    if (isize < 16 || isize > IDX_MAX_BYTES)
        return n < (1 << 14) ? (1 << 16) : 4 * n;
    return isize + 1;  // one spare byte: the stream's end arrives with room left
}

static int not_gzip(const char *name, char *err, size_t errlen)
{
    return fail(err, errlen, name, "named .gz but not gzip data (corrupt gzip header)");
}

int idx_parse(const unsigned char *file, size_t n, const char *name, struct idx *out, char *err,
              size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (is_gzip(file, n)) {
        struct source *src = calloc(1, sizeof *src);
        if (src == NULL)
            return fail(err, errlen, name, "out of memory");
        src->mem = file;
        src->total = n;
        unsigned char *bytes = NULL;
        size_t nbytes = 0;
        size_t cap = n >= 18 ? inflated_guess(file + n - 4, n) : (1 << 16);
        int rc = gunzip(src, cap, name, &bytes, &nbytes, err, errlen);
        free(src);
        return rc != 0 ? -1 : adopt(bytes, nbytes, name, out, err, errlen);
    }
    if (ends_with(name, ".gz"))
        return not_gzip(name, err, errlen);
    unsigned char *copy = malloc(n > 0 ? n : 1);
    if (copy == NULL)
        return fail(err, errlen, name, "out of memory for %zu bytes", n);
    if (n > 0)
        memcpy(copy, file, n);
    return adopt(copy, n, name, out, err, errlen);
}

// The rest of an open file in memory, or -1 with a message.
static int slurp(FILE *f, const char *path, unsigned char **out, size_t *outn, char *err,
                 size_t errlen)
{
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (buf == NULL)
            return fail(err, errlen, path, "out of memory reading it");
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        if (cap >= 2 * IDX_MAX_BYTES) {
            free(buf);
            return fail(err, errlen, path, "larger than any IDX file here");
        }
        unsigned char *grown = realloc(buf, 2 * cap);
        if (grown == NULL)
            free(buf);
        buf = grown;
        cap *= 2;
    }
    if (ferror(f)) {
        free(buf);
        return fail(err, errlen, path, "cannot read it (%s)", strerror(errno));
    }
    *out = buf;
    *outn = n;
    return 0;
}

// A gzip file, inflated as it is read: the compressed bytes never sit in
// memory beside the inflated ones.
static int read_gzip(FILE *f, const char *path, struct idx *out, char *err, size_t errlen)
{
    struct source *src = calloc(1, sizeof *src);
    if (src == NULL)
        return fail(err, errlen, path, "out of memory");
    unsigned char tail[4];
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    if (size < 0 || fseek(f, size >= 18 ? -4 : 0, SEEK_END) != 0 ||
        (size >= 18 && fread(tail, 1, 4, f) != 4) || fseek(f, 0, SEEK_SET) != 0) {
        free(src);
        return fail(err, errlen, path, "cannot read it (%s)", strerror(errno));
    }
    src->f = f;
    src->total = (size_t)size;
    unsigned char *bytes = NULL;
    size_t nbytes = 0;
    size_t cap = size >= 18 ? inflated_guess(tail, (size_t)size) : (1 << 16);
    int rc = gunzip(src, cap, path, &bytes, &nbytes, err, errlen);
    int bad = ferror(f);
    free(src);
    if (rc != 0 && bad) {
        snprintf(err, errlen, "%s: cannot read it (%s); %s", path, strerror(errno), IDX_HINT);
        return -1;
    }
    return rc != 0 ? -1 : adopt(bytes, nbytes, path, out, err, errlen);
}

int idx_read(const char *path, struct idx *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return fail(err, errlen, path, "cannot open it (%s)", strerror(errno));
    unsigned char magic[2];
    size_t got = fread(magic, 1, 2, f);
    int rc;
    if (is_gzip(magic, got)) {
        rc = read_gzip(f, path, out, err, errlen);
    } else if (ends_with(path, ".gz")) {
        rc = not_gzip(path, err, errlen);
    } else {
        unsigned char *file = NULL;
        size_t n = 0;
        rewind(f);
        rc = slurp(f, path, &file, &n, err, errlen);
        if (rc == 0)
            rc = adopt(file, n, path, out, err, errlen);
    }
    fclose(f);
    return rc;
}

void idx_free(struct idx *x)
{
    free(x->bytes);
    memset(x, 0, sizeof *x);
}

int idx_check_pair(const struct idx *images, const char *images_name, const struct idx *labels,
                   const char *labels_name, int classes, char *err, size_t errlen)
{
    if (images->ndims != 3)
        return fail(err, errlen, images_name, "%d dimension(s), an image file has 3", images->ndims);
    if (labels->ndims != 1)
        return fail(err, errlen, labels_name, "%d dimensions, a label file has 1", labels->ndims);
    if (images->count != labels->count)
        return fail(err, errlen, labels_name, "%zu labels for the %zu images of %s", labels->count,
                    images->count, images_name);
    for (size_t i = 0; i < labels->count; i++)
        if (labels->data[i] >= classes)
            return fail(err, errlen, labels_name, "label %d at item %zu, expected 0 to %d",
                        labels->data[i], i, classes - 1);
    return 0;
}
