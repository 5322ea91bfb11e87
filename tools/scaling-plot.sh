#!/bin/sh
# scaling-plot.sh: GFLOPS against thread count, one line per size, from the
# CSV of `make stage-05 run`; OpenBLAS dashed in the same colour.
#   tools/scaling-plot.sh IN.csv OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"
plot_input
# OpenBLAS held to a lesser path (the header says so): the note goes under
# the title, wrapped, with the command that lifts it on a line of its own.
note=$(sed -n 's/^# openblas_note: //p' "$in" | head -n 1 |
       sed 's/ For its best path: /\n&/' | sed 's/^ //' | fold -s -w 110 |
       sed 's/ *$//' | awk '{ printf "\\n%s", $0 }')
# One gnuplot data block per (kernel, size), rows sorted by threads.
rows "$in" | sort -t, -k1,1 -k4,4n -k3,3n | awk -F, -v dir="$tmp" '
    { key = $1 " n=" $4
      if (key != last) { if (last != "") printf "\n\n" > (dir "/data"); n++
                         title[n] = key; blas[n] = ($1 == "openblas"); size[n] = $4; last = key }
      print $3, $8 > (dir "/data") }
    END { for (i = 1; i <= n; i++) printf "%d %d %s\n", blas[i], size[i], title[i] > (dir "/series") }'

{
    # printf, not echo: dash's echo would turn the \n into line breaks.
    printf 'set title "GFLOPS against threads  ·  %s%s"\n' "$cpu" "$note"
    echo "set xlabel 'threads'; set ylabel 'GFLOPS (single precision)'"
    echo "set xtics 1; set grid ytics lc rgb '#dddddd'; set key outside right top"
    echo "set yrange [0:*]; set offsets 0.2, 0.2, 0, 0"
    printf "plot "
    i=0; sizes=""
    while read -r blas size title; do
        case " $sizes " in *" $size "*) ;; *) sizes="$sizes $size" ;; esac
        c=$(echo "$sizes" | tr ' ' '\n' | grep -n "^$size\$" | cut -d: -f1)
        dash=1; [ "$blas" = 1 ] && dash=2
        [ $i -gt 0 ] && printf ", \\\\\n     "
        printf "'%s/data' index %d with linespoints lw 2 pt 7 dt %d lc %d title '%s'" \
            "$tmp" "$i" "$dash" "$c" "$title"
        i=$((i + 1))
    done < "$tmp/series"
    echo
} > "$tmp/plot.gp"
draw "$out" 900,560
