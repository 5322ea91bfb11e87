// libFuzzer target for the IDX reader: any bytes, raw or gzip, must give
// either a file whose sizes agree with its header or an error message,
// never a crash, a leak or a read out of bounds (AddressSanitizer watches).
//
//   make fuzz-idx FUZZ_SECONDS=60
//
// The seeds in idx-seeds/ are small valid files: 2 sample images, their
// 10 labels, and both gzipped (made from datasets/sample with idxio.py).
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[600];
    struct idx x;
    // The name matters: one ending in .gz must hold gzip data.
    const char *name = size > 0 && (data[0] & 1) ? "input.gz" : "input";
    if (idx_parse(data, size, name, &x, err, sizeof err) == 0) {
        // What the header says is what is there.
        size_t want = 4 + 4 * (size_t)x.ndims + x.count * x.item_size;
        if (x.nbytes != want || x.data != x.bytes + 4 + 4 * (size_t)x.ndims)
            __builtin_trap();
        volatile unsigned sum = 0;  // touch every byte: ASan checks them
        for (size_t i = 0; i < x.count * x.item_size; i++)
            sum += x.data[i];
        (void)sum;
        idx_free(&x);
    } else if (strstr(err, name) == NULL || strstr(err, "make datasets") == NULL) {
        // Every error names the input and gives the fix.
        fprintf(stderr, "bad message: %s\n", err);
        __builtin_trap();
    }
    return 0;
}
