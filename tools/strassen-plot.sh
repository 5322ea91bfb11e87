#!/bin/sh
# strassen-plot.sh: the crossover plot of the Strassen study (make stage-05
# strassen): each kernel's GFLOPS as a ratio to our gemm() at the same size
# and thread count, against n, for the square sizes. Strassen's ceilings
# are drawn too: 8/7 for one level, 64/49 for two (fewer multiplications,
# nothing else).
#   tools/strassen-plot.sh IN.csv OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"
plot_input
core=$(meta openblas_core)
# One data block per (kernel, threads): "n ratio" lines, sorted by n.
grep -v '^#' "$in" | awk -F, -v dir="$tmp" '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["m"] == $c["n"] && $c["n"] == $c["k"] {
        g[$c["kernel"], $c["threads"], $c["m"]] = $c["gflops"]
        kern[$c["kernel"]] = 1; thr[$c["threads"]] = 1; size[$c["m"]] = 1
    }
    END {
        ns = 0
        for (s in size) list[++ns] = s + 0
        for (a = 1; a <= ns; a++) for (b = a + 1; b <= ns; b++)
            if (list[b] < list[a]) { x = list[a]; list[a] = list[b]; list[b] = x }
        split("strassen1 strassen2 strassen_plain openblas", order, " ")
        block = 0
        for (o = 1; o <= 4; o++) {
            k = order[o]
            if (!(k in kern)) continue
            for (t in thr) {
                any = 0
                for (a = 1; a <= ns; a++)
                    if ((k, t, list[a]) in g && ("gemm", t, list[a]) in g && g["gemm", t, list[a]] > 0) {
                        printf "%d %.4f\n", list[a], g[k, t, list[a]] / g["gemm", t, list[a]] > (dir "/data")
                        any = 1
                    }
                if (any) {
                    printf "\n\n" > (dir "/data")
                    printf "%d %s %d\n", block++, k, t > (dir "/series")
                }
            }
        }
        printf "%d %d\n", list[1], list[ns] > (dir "/range")
    }'
[ -s "$tmp/series" ] || { echo "error: strassen-plot.sh: $in has no square rows of gemm and another kernel" >&2; exit 1; }
read -r xmin xmax < "$tmp/range"
tmax=$(awk '{ print $3 }' "$tmp/series" | sort -n | tail -1)

{
    printf 'set title "Strassen against our gemm(): GFLOPS ratio, same size and threads\\n%s  ·  OpenBLAS core %s"\n' "$cpu" "$core"
    echo "set xlabel 'n  (m = n = k)'; set ylabel 'GFLOPS / GFLOPS of gemm()'"
    echo "set logscale x 2; set xrange [$xmin / 1.2 : $xmax * 1.2]; set xtics ($(echo "$xmin $xmax" | awk '{ s = ""; for (n = $1; n <= $2; n *= 2) s = s (s == "" ? "" : ", ") n; print s }'))"
    echo "set grid ytics lc rgb '#dddddd'; set key below horizontal maxrows 4"
    echo "set yrange [0.4<*:*<1.6]"
    echo "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lc rgb '#444444' lw 1.5 back"
    echo "set arrow 2 from graph 0, first 8.0/7 to graph 1, first 8.0/7 nohead lc rgb '#B22222' dt 2 lw 1.2 back"
    echo "set label 2 'one level at best: 8/7 = 1.143' at graph 0.01, first 8.0/7 offset 0, 0.6 textcolor rgb '#B22222'"
    echo "set arrow 3 from graph 0, first 64.0/49 to graph 1, first 64.0/49 nohead lc rgb '#B22222' dt 3 lw 1.2 back"
    echo "set label 3 'two levels at best: 64/49 = 1.306' at graph 0.01, first 64.0/49 offset 0, 0.6 textcolor rgb '#B22222'"
    printf "plot "
    first=1
    while read -r block kernel threads; do
        case $kernel in
            strassen1) color='#0072B2'; name='Strassen, one level (fused)' ;;
            strassen2) color='#009E73'; name='Strassen, two levels (fused)' ;;
            strassen_plain) color='#D55E00'; name='Strassen, one level (temporaries)' ;;
            *) color='#000000'; name='OpenBLAS' ;;
        esac
        dash=1; pt=7; [ "$threads" != "$tmax" ] && { dash=2; pt=6; }
        label="$name, $threads thread$([ "$threads" = 1 ] || echo s)"
        [ $first = 1 ] || printf ", \\\\\n     "
        printf "'%s/data' index %d with linespoints lw 2 pt %d dt %d lc rgb '%s' title '%s'" \
            "$tmp" "$block" "$pt" "$dash" "$color" "$label"
        first=0
    done < "$tmp/series"
    echo
} > "$tmp/plot.gp"
draw "$out" 900,560
