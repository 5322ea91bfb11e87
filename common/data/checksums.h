#ifndef CHECKSUMS_H
#define CHECKSUMS_H

#include <stddef.h>

// datasets/SHA256SUMS in memory, and what it says of one dataset file.
// Each line of the list is
//   <sha256>  <set>/<file>
// the checksum of the file's decompressed IDX bytes, except for names ending
// in .gz: those are upstream archives, checked as the exact bytes fetched.

struct checksum {
    char hash[65];  // 64 hex digits
    char set[64];   // "fashion"
    char file[64];  // "train-images-idx3-ubyte", without its .gz
    int archive;    // listed as file.gz: hash is the archive's own bytes'
};

struct checksums {
    struct checksum *list;
    int count;
};

// Reads the list at path. Returns 0, or -1 with a message in err (a line
// that is not "<sha256>  <set>/<file>" is an error: readers add lines).
int checksums_read(const char *path, struct checksums *c, char *err, size_t errlen);
void checksums_free(struct checksums *c);

// 1 when the list has files of the set named set, else 0.
int checksums_has_set(const struct checksums *c, const char *set);

enum { CHECKSUM_LISTED = 0, CHECKSUM_UNLISTED = 1 };

// What the list says of file (a standard name, "train-images-idx3-ubyte")
// of the set named set, read from path, whose IDX bytes have SHA-256
// idx_sha. Returns CHECKSUM_LISTED, CHECKSUM_UNLISTED, or -1 with a message
// in err that ends with hint. The rule is in checksums.c.
int checksums_check(const struct checksums *c, const char *set, const char *file,
                    const char *path, const char idx_sha[65], const char *hint, char *err,
                    size_t errlen);

#endif
