#!/bin/sh
# sweep-plot.sh: draw the stage-02 tile sweep, GFLOPS against the working set
# of one block, with the cache sizes marked.
#
#   tools/sweep-plot.sh IN.csv OUT_BASENAME
#
# writes OUT_BASENAME.svg and OUT_BASENAME.png. IN.csv is what run_sweep
# writes: '#' lines (l1d_kib, l2_kib, l3_kib, n, cpu, ...), then
# shape,tile,mb,nb,kb,working_set_bytes,gflops
# (columns are found by name). One line per shape.
set -eu

. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"
plot_input
script=$root/plots/tile_sweep.gp
[ -r "$script" ] || { echo "error: sweep-plot.sh: cannot read $script" >&2; exit 1; }

awk -F, -v datafile="$tmp/series.dat" -v varsfile="$tmp/vars.gp" -v src="$in" '
function q(s) { gsub(/\047/, "\047\047", s); return "\047" s "\047" }
function trim(s) { gsub(/^[ \t\r]+|[ \t\r]+$/, "", s); return s }
/^[ \t]*#/ {
    line = $0
    sub(/^[ \t]*#[ \t]*/, "", line)
    c = index(line, ":")
    if (c > 0) meta[trim(substr(line, 1, c - 1))] = trim(substr(line, c + 1))
    next
}
/^[ \t\r]*$/ { next }
!have_header {
    for (i = 1; i <= NF; i++) col[trim($i)] = i
    if (!("working_set_bytes" in col) || !("gflops" in col)) {
        printf "error: sweep-plot.sh: %s: header lacks working_set_bytes or gflops\n", src > "/dev/stderr"
        bad = 1; exit 1
    }
    have_header = 1
    next
}
{
    s = ("shape" in col) ? trim($col["shape"]) : "blocks"
    if (!(s in sid)) { ns++; sid[s] = ns; sname[ns] = s }
    k = sid[s]
    np[k]++
    X[k, np[k]] = trim($col["working_set_bytes"]) + 0
    Y[k, np[k]] = trim($col["gflops"]) + 0
    L[k, np[k]] = ("mb" in col) ? trim($col["mb"]) "×" trim($col["nb"]) "×" trim($col["kb"]) : ""
    if (Y[k, np[k]] > ymax) ymax = Y[k, np[k]]
    if (xmin == "" || X[k, np[k]] < xmin) xmin = X[k, np[k]]
    if (X[k, np[k]] > xmax) xmax = X[k, np[k]]
}
END {
    if (bad) exit 1
    if (ns == 0) { printf "error: sweep-plot.sh: %s: no data rows\n", src > "/dev/stderr"; exit 1 }
    for (k = 1; k <= ns; k++) {
        printf "# %s\n", sname[k] > datafile
        for (a = 1; a <= np[k]; a++) printf "%s %s \"%s\"\n", X[k, a], Y[k, a], L[k, a] > datafile
        printf "\n\n" > datafile
    }
    print "nseries = " ns > varsfile
    print "array sname[" ns "]" > varsfile
    for (k = 1; k <= ns; k++) {
        nb = ""
        if (sname[k] == "square") t = "square blocks, mb = nb = kb"
        else if (sname[k] == "wide") t = "wide blocks, nb = 256, mb = kb"
        else t = sname[k]
        print "sname[" k "] = " q(t) > varsfile
    }
    printf "l1 = %s\nl2 = %s\nl3 = %s\n", meta["l1d_kib"] * 1024, meta["l2_kib"] * 1024, meta["l3_kib"] * 1024 > varsfile
    printf "xmin = %s\nxmax = %s\nymax = %s\n", xmin, xmax, ymax > varsfile
    t1 = "stage 02: GFLOPS of matmul_tiled by block working set"
    if ("n" in meta) t1 = t1 ", n = " meta["n"]
    t2 = ("cpu" in meta) ? meta["cpu"] : "unknown CPU"
    if (meta["caches_assumed"] + 0) t2 = t2 "  ·  cache sizes assumed, not reported"
    print "title1 = " q(t1) > varsfile
    print "title2 = " q(t2) > varsfile
}
' "$in"

draw_gp "$script"
