#!/bin/sh
# autograd-plot.sh: the tape's overhead over its GEMMs, from the CSV of
# `make stage-06 bench`: one group of bars per model and batch, one bar per
# GEMM backend, the height the time of a training step beyond its GEMMs, in
# percent of the GEMM time.
#   tools/autograd-plot.sh IN.csv OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"
plot_input
head=$(header "$in")
case $head in
    model,batch,backend,*) ;;
    *) echo "error: autograd-plot.sh: $in is not a stage-06 results file (header: $head)" >&2
       exit 1 ;;
esac
# A table: one row per model and batch, one column per backend (in the order
# they first appear), the overhead in percent; '-' where a backend is missing.
# One bar per backend: where a backend has several rows (both memory modes),
# the last one (planned, the tape's default, comes after the arena).
rows "$in" | awk -F, '
    { key = $1 ", batch " $2
      if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
      if (!($3 in have)) { have[$3] = 1; backends[++nb] = $3 }
      v[key, $3] = $8 }
    END { printf "group"; for (j = 1; j <= nb; j++) printf "\t%s", backends[j]; printf "\n"
          for (i = 1; i <= nk; i++) {
              printf "%s", keys[i]
              for (j = 1; j <= nb; j++) {
                  x = v[keys[i], backends[j]]; printf "\t%s", (x == "" ? "-" : x) }
              printf "\n" } }' > "$tmp/data"
nb=$(head -n 1 "$tmp/data" | awk -F'\t' '{ print NF - 1 }')
[ "$nb" -ge 1 ] || { echo "error: autograd-plot.sh: no rows in $in" >&2; exit 1; }

{
    echo "set title \"A training step beyond its GEMMs  ·  $cpu\""
    echo "set ylabel 'overhead (% of the GEMM time)'"
    echo "set style data histograms; set style histogram clustered gap 1"
    echo "set style fill solid 0.8 border -1; set boxwidth 0.9"
    echo "set datafile missing '-'; set datafile separator '\\t'"
    echo "set grid ytics lc rgb '#dddddd'; set key outside right top"
    echo "set xtics rotate by -20; set yrange [*:*]"
    printf "plot "
    for j in $(seq 1 "$nb"); do
        [ "$j" -gt 1 ] && printf ", \\\\\n     "
        if [ "$j" -eq 1 ]; then
            printf "'%s/data' using %d:xtic(1) title columnheader(%d)" "$tmp" $((j + 1)) $((j + 1))
        else
            printf "'' using %d title columnheader(%d)" $((j + 1)) $((j + 1))
        fi
    done
    echo
} > "$tmp/plot.gp"
draw "$out" 900,560
