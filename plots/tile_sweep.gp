# tile_sweep.gp: GFLOPS against the working set of one block, for
# tools/sweep-plot.sh, which sets varsfile, datafile and outbase.
# The vertical lines are the cache sizes the program read from the system.
load varsfile

set title title1 . "\n" . title2 font ",12"
set xlabel "working set of one block (kb×nb of B + mb×nb of C + mb×kb of A), log scale"
set ylabel "GFLOPS (higher is better)"
set logscale x 2
set grid ytics lc rgb "#DDDDDD" lw 1 lt 1
set border 3
set tics nomirror
set xtics ("1 KiB" 1024, "4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, \
           "256 KiB" 262144, "1 MiB" 1048576, "4 MiB" 4194304, "16 MiB" 16777216, \
           "64 MiB" 67108864)
right = (xmax > l3 ? xmax : l3) * 2
set xrange [xmin / 1.5 : right]
set yrange [0 : ymax * 1.35]

# Cache sizes: a dashed line each, labelled at the top.
set arrow 1 from l1, graph 0 to l1, graph 1 nohead lc rgb "#B22222" lw 1.5 dt 2 back
set arrow 2 from l2, graph 0 to l2, graph 1 nohead lc rgb "#B22222" lw 1.5 dt 2 back
set arrow 3 from l3, graph 0 to l3, graph 1 nohead lc rgb "#B22222" lw 1.5 dt 2 back
set label 1 sprintf("L1d %d KiB", l1 / 1024) at l1, graph 0.97 right offset -0.5, 0 \
    textcolor rgb "#B22222" front
set label 2 sprintf("L2 %d KiB", l2 / 1024) at l2, graph 0.97 right offset -0.5, 0 \
    textcolor rgb "#B22222" front
set label 3 sprintf("L3 %d MiB", l3 / 1048576) at l3, graph 0.97 right offset -0.5, 0 \
    textcolor rgb "#B22222" front

set key below center horizontal Left reverse spacing 1.2 samplen 3.5 width 2 nobox

array color[4] = ["#1F77B4", "#FF7F0E", "#2CA02C", "#9467BD"]
array point[4] = [7, 5, 9, 11]

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
    # Each point of the first series is labelled with its block, mb×nb×kb.
    plot for [i = 1:nseries] datafile index (i - 1) using 1:2 with linespoints \
             lc rgb color[(i - 1) % 4 + 1] lw 2.2 pt point[(i - 1) % 4 + 1] ps 1.1 \
             title sname[i], \
         datafile index 0 using 1:2:3 with labels rotate by 45 left offset 0.4, 0.6 \
             font ",8" textcolor rgb "#555555" notitle
    unset output
}
