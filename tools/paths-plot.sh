#!/bin/sh
# paths-plot.sh: the path study of `make stage-05 run`: for each k, GFLOPS
# against n (m fixed) of the small path (A read in place), the packed path,
# and gemm()'s choice, on the largest thread count in the file.
#   tools/paths-plot.sh IN.csv OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"
plot_input
rows=$(rows "$in")
tmax=$(echo "$rows" | cut -d, -f3 | sort -n | tail -1)
# The sweep's m: the most common m among the rows.
m=$(echo "$rows" | cut -d, -f4 | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
ks=$(echo "$rows" | awk -F, -v m="$m" '$4 == m { print $6 }' | sort -nu)
for k in $ks; do
    for kernel in small_path packed_path gemm; do
        echo "$rows" | awk -F, -v m="$m" -v k="$k" -v t="$tmax" -v kern="$kernel" \
            '$1 == kern && $3 == t && $4 == m && $6 == k { print $5, $8 }' | sort -n \
            > "$tmp/$kernel-$k"
    done
done
nk=$(echo "$ks" | wc -w)
{
    echo "set multiplot layout $(((nk + 1) / 2)),2 title \"gemm()'s two paths, m = $m, $tmax thread(s)  ·  $cpu\""
    echo "set grid ytics lc rgb '#dddddd'; set key top left; set yrange [0:*]"
    echo "set xlabel 'n (columns of C)'; set ylabel 'GFLOPS'; set logscale x 2"
    for k in $ks; do
        echo "set title 'k = $k'"
        echo "plot '$tmp/small_path-$k' with linespoints lw 2 pt 7 lc rgb '#0072B2' title 'small path (A in place)', \\"
        echo "     '$tmp/packed_path-$k' with linespoints lw 2 pt 5 lc rgb '#D55E00' title 'packed path', \\"
        echo "     '$tmp/gemm-$k' with lines lw 5 lc rgb '#00000060' dt 2 title 'gemm() chooses'"
    done
    echo "unset multiplot"
} > "$tmp/plot.gp"
draw "$out" 1000,$((260 * ((nk + 1) / 2) + 80)) 12
