// Checking a dataset file against datasets/SHA256SUMS.
//
// The rule. A file is known to the list by its name there, SET/FILE: FILE is
// one of the four standard names, SET is the set it belongs to, which is the
// name given to the loader (mnist, fashion, sample) or, for a directory, the
// directory's own name (`--data ~/data/fashion/` and `--data .` inside
// build/datasets/fashion are both "fashion"). Then, in this order:
//   1. The list has SET/FILE (or SET/FILE.gz). The file must have those
//      bytes: anything else is that file damaged, or another file in its
//      place, and an error. The named sets are always this case.
//   2. Its bytes are listed under another set, as FILE: a copy of that
//      set's file (the sample's four files copied anywhere). Listed.
//   3. Its bytes are listed under another file name: a test file where the
//      training file belongs, say. Swapped or misnamed, and an error.
//   4. Its bytes are not in the list at all: a set of the reader's own.
//      Unlisted: the loader says so and goes on.
// So "in the list under another name or set" is decided by the name the
// file is reached under (rule 1) and by its bytes (rules 2 and 3), never by
// a guess at what the file looks like.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksums.h"
#include "sha256.h"

static int is_hex64(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return n == 64 && s[64] == '\0';
}

// One line "<sha256>  <set>/<file>" into e; 0, or -1 when it is not one.
static int parse_line(const char *line, struct checksum *e)
{
    char hash[128], name[400], extra[2];
    if (sscanf(line, "%127s %399s %1s", hash, name, extra) != 2 || !is_hex64(hash))
        return -1;
    const char *slash = strrchr(name, '/');
    if (slash == NULL || slash == name || slash[1] == '\0')
        return -1;
    // sha256sum -b writes "<sha256> *<name>".
    const char *set = name[0] == '*' ? name + 1 : name;
    if (slash == set)
        return -1;
    size_t setlen = (size_t)(slash - set), filelen = strlen(slash + 1);
    e->archive = filelen > 3 && strcmp(slash + 1 + filelen - 3, ".gz") == 0;
    if (e->archive)
        filelen -= 3;
    if (setlen >= sizeof e->set || filelen >= sizeof e->file)
        return -1;
    memcpy(e->hash, hash, 65);
    snprintf(e->set, sizeof e->set, "%.*s", (int)setlen, set);
    snprintf(e->file, sizeof e->file, "%.*s", (int)filelen, slash + 1);
    return 0;
}

int checksums_read(const char *path, struct checksums *c, char *err, size_t errlen)
{
    c->list = NULL;
    c->count = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open it (%s), so no dataset file can be checked", path,
                 strerror(errno));
        return -1;
    }
    char line[512];
    int cap = 0, lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        size_t skip = strspn(line, " \t\r\n");
        if (line[skip] == '\0' || line[skip] == '#')
            continue;
        if (c->count == cap) {
            cap = cap ? 2 * cap : 32;
            struct checksum *grown = realloc(c->list, (size_t)cap * sizeof *grown);
            if (grown == NULL) {
                snprintf(err, errlen, "%s: out of memory reading it", path);
                rc = -1;
                break;
            }
            c->list = grown;
        }
        if (parse_line(line, &c->list[c->count]) != 0) {
            snprintf(err, errlen,
                     "%s:%d: not a line of the form `<sha256>  <set>/<file>` (64 lowercase hex "
                     "digits, then a set and a file name)",
                     path, lineno);
            rc = -1;
        } else {
            c->count++;
        }
    }
    fclose(f);
    if (rc != 0)
        checksums_free(c);
    return rc;
}

void checksums_free(struct checksums *c)
{
    free(c->list);
    c->list = NULL;
    c->count = 0;
}

int checksums_has_set(const struct checksums *c, const char *set)
{
    for (int i = 0; i < c->count; i++)
        if (strcmp(c->list[i].set, set) == 0)
            return 1;
    return 0;
}

// The SHA-256 of a whole file's bytes (a .gz compared as an archive).
static int hash_file(const char *path, char hex[65])
{
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
    sha256_final_hex(&s, hex);
    return 0;
}

// Does entry e hold the file's bytes? 1 or 0, or -1 when the file cannot be
// read. An archive entry is compared with the .gz file's own bytes, hashed
// the first time one is needed (gz_sha is "" until then).
static int same_bytes(const struct checksum *e, const char *path, const char idx_sha[65],
                      char gz_sha[65])
{
    if (!e->archive)
        return strcmp(e->hash, idx_sha) == 0;
    size_t n = strlen(path);
    if (n < 3 || strcmp(path + n - 3, ".gz") != 0)
        return 0;
    if (gz_sha[0] == '\0' && hash_file(path, gz_sha) != 0)
        return -1;
    return strcmp(e->hash, gz_sha) == 0;
}

int checksums_check(const struct checksums *c, const char *set, const char *file,
                    const char *path, const char idx_sha[65], const char *hint, char *err,
                    size_t errlen)
{
    char gz_sha[65] = "";
    int own = 0, same = 0;
    // Rule 1: the list's file of this name.
    for (int i = 0; i < c->count && same == 0; i++) {
        const struct checksum *e = &c->list[i];
        if (strcmp(e->set, set) == 0 && strcmp(e->file, file) == 0) {
            own = 1;
            same = same_bytes(e, path, idx_sha, gz_sha);
        }
    }
    if (same == 1)
        return CHECKSUM_LISTED;
    // Whose bytes these are, if anyone's.
    const struct checksum *match = NULL;
    for (int i = 0; i < c->count && same == 0; i++) {
        same = same_bytes(&c->list[i], path, idx_sha, gz_sha);
        if (same == 1)
            match = &c->list[i];
    }
    if (same < 0) {
        snprintf(err, errlen, "%s: cannot read it (%s)", path, strerror(errno));
        return -1;
    }
    char whose[200] = "";
    if (match != NULL)
        snprintf(whose, sizeof whose, " (they are those of %s/%s%s)", match->set, match->file,
                 match->archive ? ".gz" : "");
    if (own) {
        snprintf(err, errlen,
                 "%s: checksum mismatch: its IDX bytes have SHA-256 %s, not the one "
                 "datasets/SHA256SUMS lists for %s/%s%s; the file is damaged or is another "
                 "dataset's; %s",
                 path, idx_sha, set, file, whose, hint);
        return -1;
    }
    if (match == NULL)
        return CHECKSUM_UNLISTED;  // rule 4
    if (strcmp(match->file, file) == 0)
        return CHECKSUM_LISTED;  // rule 2
    snprintf(err, errlen,
             "%s: its bytes are those datasets/SHA256SUMS lists for %s/%s%s, not a %s: the "
             "files are swapped or misnamed; give each file its standard name",
             path, match->set, match->file, match->archive ? ".gz" : "", file);
    return -1;  // rule 3
}
