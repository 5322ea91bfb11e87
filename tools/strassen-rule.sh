#!/bin/sh
# strassen-rule.sh: the rule that lets gemm() use Strassen's algorithm on
# this machine, from the two CSVs of the Strassen study (make stage-05 strassen):
#
#   tools/strassen-rule.sh TIMES.csv ERRORS.csv > build/strassen-rule.txt
#
# TIMES.csv holds the bench rows (kernel,isa,threads,m,n,k,...,gflops,...) of
# gemm, strassen1 and strassen2; ERRORS.csv the rows of run_strassen_error.
# It writes three lines that common/gemm/gemm_strassen_rule.c reads, each
# with the measurement behind it as a comment:
#   faster_from N      the smallest square size n from which strassen1 was at
#                      least MARGIN times as fast as gemm at every measured
#                      size, on every thread count; 0 when there is none
#   within_bound 0|1   1 when every error of strassen1 and strassen2 stayed
#                      within gemm()'s elementwise bound (elementwise ≤ 1)
#   two_levels_from N  the same as faster_from, for strassen2 against strassen1
# MARGIN (default 1.02) keeps a difference smaller than the run-to-run noise
# of a median from deciding anything.
set -eu
[ $# -eq 2 ] || { echo "usage: tools/strassen-rule.sh TIMES.csv ERRORS.csv" >&2; exit 2; }
for f in "$1" "$2"; do
    [ -r "$f" ] || { echo "error: strassen-rule.sh: cannot read $f" >&2; exit 1; }
done
margin=${MARGIN:-1.02}
cpu=$(sed -n 's/^# cpu: //p' "$1" | head -n 1)

# From the first row (the header) the columns are found by name.
awk -F, -v margin="$margin" -v cpu="$cpu" -v times="$1" -v errors="$2" '
function col(name, file) {
    if (!((file, name) in at)) {
        printf "error: strassen-rule.sh: %s has no column %s\n", file, name > "/dev/stderr"
        bad = 1; exit 1
    }
    return at[file, name]
}
FNR == 1 { header[FILENAME] = 0 }
/^#/ || /^[ \t\r]*$/ { next }
!header[FILENAME] {
    for (i = 1; i <= NF; i++) at[FILENAME, $i] = i
    header[FILENAME] = 1
    next
}
FILENAME == times {
    m = $col("m", times); n = $col("n", times); k = $col("k", times)
    if (m != n || n != k) next
    t = $col("threads", times)
    g[$col("kernel", times), t, n] = $col("gflops", times)
    sizes[n] = 1; threads[t] = 1
    next
}
FILENAME == errors {
    kern = $col("kernel", errors)
    if (kern != "strassen1" && kern != "strassen2") next
    e = $col("elementwise", errors) + 0
    if (e > worst) { worst = e; worst_at = $col("data", errors) " data, n = " $col("n", errors) ", " kern }
    nerr++
}
# The smallest size from which `fast` beat `slow` by margin at every
# larger measured size and thread count; 0 when none.
function from(fast, slow,    s, t, ok, best, list, count, a, b, x) {
    count = 0
    for (s in sizes) list[++count] = s + 0
    for (a = 1; a <= count; a++) for (b = a + 1; b <= count; b++)
        if (list[b] < list[a]) { x = list[a]; list[a] = list[b]; list[b] = x }
    best = 0
    for (a = count; a >= 1; a--) {
        ok = 1
        for (t in threads) {
            if (!((fast, t, list[a]) in g) || !((slow, t, list[a]) in g)) { ok = 0; break }
            if (g[fast, t, list[a]] < margin * g[slow, t, list[a]]) { ok = 0; break }
        }
        if (!ok) break
        best = list[a]
    }
    return best
}
function ratios(fast, slow,    s, t, out) {
    out = ""
    for (s in sizes) for (t in threads)
        if ((fast, t, s) in g && (slow, t, s) in g && g[slow, t, s] > 0)
            out = out sprintf(" n=%d/%dt:%.3f", s, t, g[fast, t, s] / g[slow, t, s])
    return out
}
END {
    if (bad) exit 1
    if (nerr == 0) { print "error: strassen-rule.sh: no strassen rows in " errors > "/dev/stderr"; exit 1 }
    print "# When gemm() may use Strassen'"'"'s algorithm on this machine (" cpu "),"
    print "# from " times " and " errors
    print "# (tools/strassen-rule.sh, margin " margin "). strassen1 / gemm, GFLOPS:"
    print "#" ratios("strassen1", "gemm")
    print "faster_from " from("strassen1", "gemm")
    printf "# worst error of strassen1 and strassen2: %.4g times gemm()'"'"'s elementwise bound (%s)\n", worst, worst_at
    print "within_bound " (worst <= 1 ? 1 : 0)
    print "# strassen2 / strassen1, GFLOPS:"
    print "#" ratios("strassen2", "strassen1")
    print "two_levels_from " from("strassen2", "strassen1")
}' "$1" "$2"
