#!/bin/sh
# paths-plot.sh: the path study of `make stage-05 run`: for each k, GFLOPS
# against n (m fixed) of the small path (A read in place), the packed path,
# and gemm()'s choice, on the largest thread count in the file.
#   tools/paths-plot.sh IN.csv OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
[ $# -eq 2 ] || { echo "usage: tools/paths-plot.sh IN.csv OUT_BASENAME" >&2; exit 2; }
in=$1; out=$2
[ -r "$in" ] || { echo "error: paths-plot.sh: cannot read $in" >&2; exit 1; }
command -v gnuplot >/dev/null 2>&1 ||
    { echo "error: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/paths.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

cpu=$(sed -n 's/^# cpu: //p' "$in" | head -n 1)
rows=$(grep -v '^#' "$in" | tail -n +2)
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
    echo "set terminal svg size 1000,$((260 * ((nk + 1) / 2) + 80)) dynamic font 'sans,12' background '#ffffff'"
    echo "set output '$out.svg'"
    echo "set termoption noenhanced"
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
sed -e "s|set terminal svg size \([0-9]*\),\([0-9]*\) dynamic font 'sans,12'|set terminal pngcairo size \1,\2 font 'sans,10'|" \
    -e "s|set output '$out.svg'|set output '$out.png'|" "$tmp/plot.gp" > "$tmp/plot-png.gp"
gnuplot "$tmp/plot.gp" && gnuplot "$tmp/plot-png.gp"
echo "plots: $out.svg $out.png"
