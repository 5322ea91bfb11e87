// gemm_strassen_rule.c: when gemm() may use Strassen's algorithm, and how
// deep. Like the blocking, it is a fact about the machine, so it is measured
// there: `make stage-05 strassen` times Strassen against the five loops,
// measures its error, and writes what it found into a file
// (tools/strassen-rule.sh). A program reads the file at its start into its
// default context (gemm_strassen_set_rule); without one gemm() never picks
// Strassen.
#include "gemm_parts.h"

#include <stdio.h>
#include <string.h>

int gemm_strassen_read_rule(const char *path, struct gemm_strassen_rule *out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    struct gemm_strassen_rule r = {0, 0, 0};
    char line[256], key[64];
    long value;
    int ok = 1;
    while (ok && fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
            continue;
        char extra;
        if (sscanf(line, "%63s %ld %c", key, &value, &extra) != 2 || value < 0 ||
            value > 1000000)
            ok = 0;
        else if (strcmp(key, "faster_from") == 0)
            r.faster_from = (int)value;
        else if (strcmp(key, "within_bound") == 0 && value <= 1)
            r.within_bound = (int)value;
        else if (strcmp(key, "two_levels_from") == 0)
            r.two_levels_from = (int)value;
        else
            ok = 0;
    }
    fclose(f);
    if (!ok)
        return -1;
    *out = r;
    return 0;
}

static int smallest(int m, int n, int k)
{
    int s = m < n ? m : n;
    return s < k ? s : k;
}

// listing: strassen_pays
int gemm_strassen_pays(const struct gemm_strassen_rule *r, int m, int n, int k)
{
    // Both halves of the rule, each measured: faster at this size, and
    // within gemm()'s error bound. The shape decides, never the thread count,
    // so the bits do not depend on it.
    return r->within_bound && r->faster_from > 0 && smallest(m, n, k) >= r->faster_from;
}
// end listing

int gemm_strassen_levels(const struct gemm_strassen_rule *r, int m, int n, int k)
{
    return r->two_levels_from > 0 && smallest(m, n, k) >= r->two_levels_from ? 2 : 1;
}
