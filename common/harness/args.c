// The drivers' number flags (--batch 64, --lr 0.001), read with strtol and
// strtod, which accept "12abc" as 12 unless told otherwise: here the whole
// string must be the number. Also the comma-separated lists of --kernels.
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

int args_in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}
