// The drivers' number flags (--batch 64, --lr 0.001), read with strtol and
// strtod, which accept "12abc" as 12 unless told otherwise: here the whole
// string must be the number. Also comma-separated lists of numbers and names.
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

int args_long(const char *s, long lo, long hi, long *out)
{
    if (!s)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int args_int(const char *s, int lo, int hi, int *out)
{
    long v;
    if (args_long(s, lo, hi, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

int args_double(const char *s, double lo, double hi, double *out)
{
    if (!s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int args_counts(const char *list, long lo, long hi, int *out, int max)
{
    int n = 0;
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        char item[32];
        long v;
        if (n == max || len == 0 || len >= sizeof item)
            return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        if (args_long(item, lo, hi, &v) != 0)
            return -1;
        out[n++] = (int)v;
        if (p[len] == '\0')
            return n;
        p += len + 1;
    }
}
