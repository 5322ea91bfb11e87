#!/bin/sh
# plot.sh: draw GFLOPS against matrix size from a bench results CSV.
#
#   tools/plot.sh IN.csv OUT_BASENAME [TITLE_SUFFIX]
#
# writes OUT_BASENAME.svg and OUT_BASENAME.png. The CSV is the one the bench
# drivers write: '#' lines describing the machine, then the header row
# kernel,isa,threads,m,n,k,seconds,gflops,pct_peak,vs_openblas,yardstick,slow
# (columns are found by name, so their order does not matter).
#
# One series per (kernel, threads) pair (and per ISA when a kernel was run
# with more than one). Only square shapes (m = n = k) are drawn; a file with
# no square shape at all is drawn against (m·n·k)^(1/3). The y axis ends just
# above the measured peak of the largest thread count in the file.
set -eu

usage() {
    echo "usage: tools/plot.sh IN.csv OUT_BASENAME [TITLE_SUFFIX]" >&2
    exit 2
}

[ $# -ge 2 ] && [ $# -le 3 ] || usage
suffix=${3:-}
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$1" "$2"
plot_input
script=${GFLOPS_GP:-$root/plots/gflops.gp}
[ -r "$script" ] || { echo "error: plot.sh: cannot read $script" >&2; exit 1; }

awk -F, -v datafile="$tmp/series.dat" -v varsfile="$tmp/vars.gp" \
    -v suffix="$suffix" -v src="$in" '
function q(s) { gsub(/\047/, "\047\047", s); return "\047" s "\047" }
function trim(s) { gsub(/^[ \t\r]+|[ \t\r]+$/, "", s); return s }
function num(s) { return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }

/^[ \t]*#/ {
    line = $0
    sub(/^[ \t]*#[ \t]*/, "", line)
    c = index(line, ":")
    if (c > 0) {
        key = trim(substr(line, 1, c - 1))
        if (!(key in meta)) meta[key] = trim(substr(line, c + 1))
    }
    next
}
/^[ \t\r]*$/ { next }
!have_header {
    for (i = 1; i <= NF; i++) col[trim($i)] = i
    if (!("kernel" in col) || !("gflops" in col) || !("m" in col)) {
        printf "error: plot.sh: %s: header row lacks kernel, m or gflops\n", src > "/dev/stderr"
        bad = 1; exit 1
    }
    have_header = 1
    next
}
{
    g = trim($col["gflops"])
    if (!num(g)) next
    # The rounds of a race (KERNEL/roundN) stay in the CSV; the plot draws the medians.
    if (trim($col["kernel"]) ~ /\/round[0-9]+$/) next
    nr++
    K[nr] = trim($col["kernel"])
    I[nr] = ("isa" in col) ? trim($col["isa"]) : ""
    T[nr] = ("threads" in col) ? trim($col["threads"]) + 0 : 1
    M[nr] = trim($col["m"]) + 0
    N[nr] = ("n" in col) ? trim($col["n"]) + 0 : M[nr]
    Kd[nr] = ("k" in col) ? trim($col["k"]) + 0 : M[nr]
    G[nr] = g + 0
    if (M[nr] == N[nr] && N[nr] == Kd[nr]) nsquare++
    if (!(T[nr] in tseen)) { tseen[T[nr]] = 1; nthr++; tlist[nthr] = T[nr] }
    if (T[nr] > tmax) tmax = T[nr]
    ki = K[nr] SUBSEP I[nr]
    if (!(ki in kiseen)) { kiseen[ki] = 1; nisa[K[nr]]++ }
}
END {
    if (bad) exit 1
    if (!have_header) {
        printf "error: plot.sh: %s: no header row\n", src > "/dev/stderr"; exit 1
    }
    if (nr == 0) {
        printf "error: plot.sh: %s: no data rows\n", src > "/dev/stderr"; exit 1
    }
    # thread counts in ascending order
    for (a = 1; a <= nthr; a++) for (b = a + 1; b <= nthr; b++)
        if (tlist[b] < tlist[a]) { t = tlist[a]; tlist[a] = tlist[b]; tlist[b] = t }
    for (a = 1; a <= nthr; a++) trank[tlist[a]] = a

    cube = (nsquare == 0)
    dropped = 0
    ns = 0; nk = 0
    for (r = 1; r <= nr; r++) {
        if (!cube && !(M[r] == N[r] && N[r] == Kd[r])) { dropped++; continue }
        x = cube ? exp(log(M[r] * N[r] * Kd[r]) / 3) : M[r]
        if (cube) x = int(x + 0.5)
        key = K[r] SUBSEP (nisa[K[r]] > 1 ? I[r] : "") SUBSEP T[r]
        if (!(key in sid)) {
            ns++; sid[key] = ns
            skern[ns] = K[r]; sisa[ns] = (nisa[K[r]] > 1 ? I[r] : ""); sthr[ns] = T[r]
            kk = K[r] SUBSEP sisa[ns]
            if (!(kk in kidx)) { if (tolower(K[r]) !~ /^openblas/) nk++; kidx[kk] = nk }
            skidx[ns] = kidx[kk]
        }
        s = sid[key]
        np[s]++
        PX[s, np[s]] = x; PY[s, np[s]] = G[r]
        if (!(x in xseen)) { xseen[x] = 1; nx++; xl[nx] = x }
        if (xmin == "" || x < xmin) xmin = x
        if (xmax == "" || x > xmax) xmax = x
        if (G[r] > ymax) ymax = G[r]
    }
    if (ns == 0) {
        printf "error: plot.sh: %s: nothing to plot\n", src > "/dev/stderr"; exit 1
    }

    # data: one gnuplot index block per series, points sorted by size
    for (s = 1; s <= ns; s++) {
        n = np[s]
        for (a = 1; a <= n; a++) for (b = a + 1; b <= n; b++)
            if (PX[s, b] < PX[s, a]) {
                t = PX[s, a]; PX[s, a] = PX[s, b]; PX[s, b] = t
                t = PY[s, a]; PY[s, a] = PY[s, b]; PY[s, b] = t
            }
        printf "# %s %s threads=%s\n", skern[s], sisa[s], sthr[s] > datafile
        for (a = 1; a <= n; a++) printf "%s %s\n", PX[s, a], PY[s, a] > datafile
        printf "\n\n" > datafile
    }

    # styles: a colour per kernel, OpenBLAS thick black dashed;
    # thread counts differ by dash pattern and open/filled points
    split("#0072B2 #D55E00 #009E73 #CC79A7 #E69F00 #56B4E9 #8C564B #7F3C8D #B8A100 #E41A1C", pal, " ")
    split("7 5 9 13 11 15", ptf, " ")
    split("6 4 8 12 10 14", pto, " ")
    npal = 10
    print "nseries = " ns > varsfile
    print "array stitle[" ns "]" > varsfile
    print "array scolor[" ns "]" > varsfile
    print "array sdt[" ns "]" > varsfile
    print "array slw[" ns "]" > varsfile
    print "array spt[" ns "]" > varsfile
    print "array sps[" ns "]" > varsfile
    for (s = 1; s <= ns; s++) {
        title = skern[s]
        if (sisa[s] != "") title = title " (" sisa[s] ")"
        if (nthr > 1) title = title ", " sthr[s] (sthr[s] == 1 ? " thread" : " threads")
        tr = trank[sthr[s]]        # 1 = fewest threads
        last = (tr == nthr)
        if (tolower(skern[s]) ~ /^openblas/) {
            color = "#000000"; lw = 3.5; dt = (last ? 2 : 4); pt = (last ? 5 : 4); ps = 0.9
        } else {
            color = pal[(skidx[s] - 1) % npal + 1]
            lw = 2.2
            dt = (last ? 1 : 2)
            pi = (skidx[s] - 1) % 6 + 1
            pt = (last ? ptf[pi] : pto[pi]); ps = 1.0
        }
        printf "stitle[%d] = %s; scolor[%d] = %s; sdt[%d] = %d; slw[%d] = %s; spt[%d] = %d; sps[%d] = %s\n", \
            s, q(title), s, q(color), s, dt, s, lw, s, pt, s, ps > varsfile
    }

    peak = ("peak.machine." tmax in meta) ? meta["peak.machine." tmax] + 0 : 0
    peak1 = (nthr > 1 && tmax != 1 && ("peak.machine.1" in meta)) ? meta["peak.machine.1"] + 0 : 0
    printf "peak = %s\npeak1 = %s\nymaxdata = %s\ntmax = %d\n", peak, peak1, ymax, tmax > varsfile
    printf "xmin = %s\nxmax = %s\n", xmin, xmax > varsfile
    logx = (xmin > 0 && xmax / xmin > 8)
    printf "logx = %d\n", logx > varsfile

    # ticks at the measured sizes when there are few of them
    for (a = 1; a <= nx; a++) for (b = a + 1; b <= nx; b++)
        if (xl[b] < xl[a]) { t = xl[a]; xl[a] = xl[b]; xl[b] = t }
    ticks = ""
    if (nx <= 12) for (a = 1; a <= nx; a++) ticks = ticks (a > 1 ? " " : "") xl[a]
    print "xticklist = " q(ticks) > varsfile

    stage = ("stage" in meta) ? meta["stage"] : src
    if (!("stage" in meta)) { sub(/.*\//, "", stage); sub(/\.csv$/, "", stage) }
    t1 = stage ": GFLOPS by matrix size"
    if (suffix != "") t1 = t1 " " suffix
    cpu = ("cpu" in meta) ? meta["cpu"] : "unknown CPU"
    comp = ("compiler" in meta) ? meta["compiler"] : ""
    if ("cflags" in meta) comp = comp " " meta["cflags"]
    if (nthr == 1) thr = tlist[1] (tlist[1] == 1 ? " thread" : " threads")
    else { thr = ""; for (a = 1; a <= nthr; a++) thr = thr (a > 1 ? (a == nthr ? " and " : ", ") : "") tlist[a]; thr = thr " threads" }
    t2 = cpu
    if (comp != "") t2 = t2 "  ·  " comp
    t2 = t2 "  ·  " thr
    if ("openblas_core" in meta) t2 = t2 "  ·  OpenBLAS core " meta["openblas_core"]
    # OpenBLAS held to a lesser path (the header says so): the note goes
    # under the title, wrapped, so no one reads the ratios without it.
    t2expr = q(t2)
    if ("openblas_note" in meta) {
        # The command that lifts it gets a line of its own, unbroken.
        text = meta["openblas_note"]; cmd = ""
        c = index(text, " For its best path: ")
        if (c > 0) { cmd = substr(text, c + 1); text = substr(text, 1, c - 1) }
        nw = split(text, words, " ")
        line = ""
        for (w = 1; w <= nw; w++) {
            if (line != "" && length(line) + length(words[w]) + 1 > 110) {
                t2expr = t2expr " . \"\\n\" . " q(line); line = words[w]
            } else line = line (line == "" ? "" : " ") words[w]
        }
        if (line != "") t2expr = t2expr " . \"\\n\" . " q(line)
        if (cmd != "") t2expr = t2expr " . \"\\n\" . " q(cmd)
    }
    print "title1 = " q(t1) > varsfile
    print "title2 = " t2expr > varsfile
    xlab = cube ? "size (m·n·k)^(1/3)" : "matrix size n  (m = n = k)"
    if (dropped > 0) xlab = xlab ", square shapes only"
    print "xlab = " q(xlab) > varsfile
}
' "$in"

draw_gp "$script"
