# gflops.gp: GFLOPS against matrix size, one line per (kernel, threads).
#
# Run through tools/plot.sh, which reads the results CSV and passes:
#   varsfile  gnuplot assignments: series titles and styles, peak, axes, titles
#   datafile  one index block per series: "size gflops" lines
#   outbase   output path without extension; writes outbase.svg and outbase.png

if (!exists("varsfile") || !exists("datafile") || !exists("outbase")) {
    print "usage: tools/plot.sh IN.csv OUT_BASENAME [TITLE_SUFFIX]"
    exit status 2
}
load varsfile

set termoption noenhanced
set encoding utf8

# --- axes ------------------------------------------------------------------
if (peak > 0) {
    ytop = (ymaxdata > peak ? ymaxdata : peak) * 1.08
} else {
    ytop = ymaxdata * 1.10
}
set yrange [0:ytop]
set ylabel "GFLOPS (single precision)"
set ytics nomirror
set mytics 2

if (peak > 0) {
    set y2range [0:100.0 * ytop / peak]
    set y2tics 0, 25, 100 format "%.0f %%" textcolor rgb "#555555"
    set my2tics 5
    set y2label "% of measured peak" textcolor rgb "#555555"
}

if (logx) {
    set logscale x 2
    set xrange [xmin / 1.25 : xmax * 1.25]
} else {
    pad = (xmax > xmin ? (xmax - xmin) * 0.05 : xmax * 0.1)
    set xrange [xmin - pad : xmax + pad]
}
set xtics nomirror
if (strlen(xticklist) > 0) {
    set xtics ()
    do for [w in xticklist] {
        set xtics add (w real(w))
    }
}
set xlabel xlab offset 0, 0.7

set border 3 + (peak > 0 ? 8 : 0) lw 1.2 lc rgb "#444444"
set grid xtics ytics mytics lc rgb "#e3e3e3" lw 1 dt 1, lc rgb "#f1f1f1" lw 1 dt 1
set title title1 . "\n" . title2

# --- the peak ----------------------------------------------------------------
if (peak > 0) {
    set arrow 1 from graph 0, first peak to graph 1, first peak nohead \
        lc rgb "#B22222" lw 1.6 dt 1 back
    set label 1 sprintf("peak (measured): %.1f GFLOPS, %d thread%s", peak, tmax, tmax == 1 ? "" : "s") \
        at graph 0.01, first peak offset 0, 0.6 left textcolor rgb "#B22222" front
}
if (peak1 > 0) {
    set arrow 2 from graph 0, first peak1 to graph 1, first peak1 nohead \
        lc rgb "#B22222" lw 1 dt 3 back
    set label 2 sprintf("peak (measured): %.1f GFLOPS, 1 thread", peak1) \
        at graph 0.01, first peak1 offset 0, 0.6 left textcolor rgb "#B22222" front
}

# --- legend: below the plot, so it never hides a line ----------------------
set key below center horizontal Left reverse noautotitle spacing 1.2 \
    samplen 3.5 width 2 height 0.8 maxrows 4 nobox

do for [fmt in "png svg"] {
    if (fmt eq "png") {
        set terminal pngcairo size 1000, 600 enhanced font "DejaVu Sans,11" \
            background rgb "white" linewidth 1
    } else {
        set terminal svg size 1000, 600 fixed font "DejaVu Sans,12" \
            background rgb "white" linewidth 1
    }
    set termoption noenhanced
    set output outbase . "." . fmt
    plot for [i = 1:nseries] datafile index (i - 1) using 1:2 \
        with linespoints lc rgb scolor[i] lw slw[i] dt sdt[i] pt spt[i] ps sps[i] \
        title stitle[i]
    unset output
}
