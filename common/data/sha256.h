#ifndef SHA256_H
#define SHA256_H

#include <stddef.h>
#include <stdint.h>

// SHA-256 (FIPS 180-4), to check a dataset file against datasets/SHA256SUMS
// in the program itself: a file swapped or damaged after `make datasets` is
// caught when it is read, not only when it is fetched.

struct sha256 {
    uint32_t h[8];          // the running hash
    uint64_t length;        // bytes hashed so far
    unsigned char block[64];
    size_t used;            // bytes waiting in block
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
void sha256_final(struct sha256 *s, unsigned char digest[32]);
// The same digest as 64 lowercase hex digits and a NUL.
void sha256_final_hex(struct sha256 *s, char hex[65]);

// The digest of data[0..n) as 64 lowercase hex digits and a NUL.
void sha256_hex(const void *data, size_t n, char hex[65]);

#endif
