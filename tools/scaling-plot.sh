#!/bin/sh
# scaling-plot.sh: GFLOPS against thread count, one line per size, from the
# CSV of `make stage-05 run`; OpenBLAS dashed in the same colour.
#   tools/scaling-plot.sh IN.csv OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
[ $# -eq 2 ] || { echo "usage: tools/scaling-plot.sh IN.csv OUT_BASENAME" >&2; exit 2; }
in=$1; out=$2
[ -r "$in" ] || { echo "error: scaling-plot.sh: cannot read $in" >&2; exit 1; }
command -v gnuplot >/dev/null 2>&1 ||
    { echo "error: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scaling.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

cpu=$(sed -n 's/^# cpu: //p' "$in" | head -n 1)
# OpenBLAS held to a lesser path (the header says so): the note goes under
# the title, wrapped, with the command that lifts it on a line of its own.
note=$(sed -n 's/^# openblas_note: //p' "$in" | head -n 1 |
       sed 's/ For its best path: /\n&/' | sed 's/^ //' | fold -s -w 110 |
       sed 's/ *$//' | awk '{ printf "\\n%s", $0 }')
# One gnuplot data block per (kernel, size), rows sorted by threads.
grep -v '^#' "$in" | tail -n +2 | sort -t, -k1,1 -k4,4n -k3,3n | awk -F, -v dir="$tmp" '
    { key = $1 " n=" $4
      if (key != last) { if (last != "") printf "\n\n" > (dir "/data"); n++
                         title[n] = key; blas[n] = ($1 == "openblas"); size[n] = $4; last = key }
      print $3, $8 > (dir "/data") }
    END { for (i = 1; i <= n; i++) printf "%d %d %s\n", blas[i], size[i], title[i] > (dir "/series") }'

{
    echo "set terminal svg size 900,560 dynamic font 'sans,13' background '#ffffff'"
    echo "set output '$out.svg'"
    echo "set termoption noenhanced"
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
    echo "set terminal pngcairo size 900,560 font 'sans,11' background '#ffffff'"
    echo "set output '$out.png'"
    echo "replot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "plots: $out.svg $out.png"
