#!/bin/sh
# median-rows.sh: one row per measurement from several rounds of a GEMM
# benchmark, the round whose GFLOPS is the median.
#
#   tools/median-rows.sh ROUNDS.csv > RESULTS.csv
#
# ROUNDS.csv is the `#` lines and header row of the first round, then the
# rows of every round (kernel,isa,threads,m,n,k,...,gflops,...), in any
# order. Rows with the same kernel, isa, threads, m, n and k are one
# measurement repeated; the row written is the median of its rounds by
# gflops (the lower middle one for an even count), whole, so its seconds,
# pct_peak and vs_openblas stay those of one run. Rows keep the order in
# which each measurement first appears. On a machine shared with others, a
# single round can land on a busy minute; the median of three does not.
set -eu
[ $# -eq 1 ] || { echo "usage: tools/median-rows.sh ROUNDS.csv" >&2; exit 2; }
[ -r "$1" ] || { echo "error: median-rows.sh: cannot read $1" >&2; exit 1; }
awk -F, '
/^#/ { print; next }
!header { header = $0; for (i = 1; i <= NF; i++) at[$i] = i; print; next }
$0 == header { next }
{
    key = $at["kernel"] "," $at["isa"] "," $at["threads"] "," $at["m"] "," $at["n"] "," $at["k"]
    if (!(key in count)) order[++keys] = key
    row[key, ++count[key]] = $0
    g[key, count[key]] = $at["gflops"] + 0
}
END {
    if (!("gflops" in at) || !("kernel" in at)) {
        print "error: median-rows.sh: no header row with kernel and gflops" > "/dev/stderr"
        exit 1
    }
    for (o = 1; o <= keys; o++) {
        key = order[o]; n = count[key]
        for (i = 1; i <= n; i++) idx[i] = i
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
            if (g[key, idx[j]] < g[key, idx[i]]) { x = idx[i]; idx[i] = idx[j]; idx[j] = x }
        print row[key, idx[int((n + 1) / 2)]]
    }
}' "$1"
