#!/bin/sh
# compile-plot.sh: stage 09's figures, from the CSVs of `make stage-09 bench`
# and `run`. Given the speed CSV, it finds the others beside it (each, when
# missing, from plots/data/, the reference results) and draws each it finds:
#   OUT.svg        seconds per epoch per engine (the eager tape, compiled,
#                  compiled one kernel per op, ...), batch 64 and 256
#   OUT-bytes.svg  bytes moved per training step by phase, eager and compiled
#   OUT-train.svg  loss and test accuracy per epoch
# each also as .png.
#   tools/compile-plot.sh IN.csv OUT_BASENAME
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"

# --- seconds per epoch per engine ---------------------------------------------
if speed_input; then
    # One row per engine (in the file's order), one column per batch size.
    rows "$in" | awk -F, '$1 == "784-256-10" {
            if (!($3 in have)) { have[$3] = 1; e[++ne] = $3 }
            if (!($5 in bs)) { bs[$5] = 1; b[++nb] = $5 }
            v[$3, $5] = $6; th = $4 }
        END { printf "engine"; for (j = 1; j <= nb; j++) printf "\tbatch %s", b[j]; printf "\n"
              for (i = 1; i <= ne; i++) { printf "%s", e[i]
                  for (j = 1; j <= nb; j++) { x = v[e[i], b[j]]; printf "\t%s", x == "" ? "-" : x }
                  printf "\n" } }' > "$tmp/speed"
    threads=$(rows "$in" | head -n 1 | cut -d, -f4)
    nb=$(head -n 1 "$tmp/speed" | awk -F'\t' '{ print NF - 1 }')
    if [ "$(wc -l < "$tmp/speed")" -gt 1 ]; then
        { echo "set title \"784-256-10, Adam, $threads threads: one epoch of 60,000 images  ·  $cpu\""
          echo "set ylabel 'seconds per epoch (log scale)'; set logscale y"
          echo "set style data histograms; set style histogram clustered gap 1"
          echo "set style fill solid 0.8 border -1; set boxwidth 0.9"
          echo "set datafile missing '-'; set datafile separator '\\t'"
          echo "set grid ytics lc rgb '#dddddd'; set key top left"
          printf "plot '%s/speed' using 2:xtic(1) title columnheader(2)" "$tmp"
          for j in $(seq 2 "$nb"); do printf ", '' using %d title columnheader(%d)" $((j + 1)) $((j + 1)); done
          echo; } > "$tmp/plot.gp"
        draw "$out" 900,520
    fi
fi

# --- bytes per step by phase ----------------------------------------------------
by=$(find_csv "$base-bytes")
if [ -n "$by" ]; then
    # Per batch size, two bars (eager, compiled), each stacked by phase.
    rows "$by" | awk -F, '$4 != "total" {
            if (!($4 in have)) { have[$4] = 1; p[++np] = $4 }
            if (!($3 in bs)) { bs[$3] = 1; b[++nb] = $3 }
            eg[$3, $4] = $6 / 1e6; co[$3, $4] = $8 / 1e6 }
        END { printf "step"; for (j = 1; j <= np; j++) printf "\t%s", p[j]; printf "\n"
              for (i = 1; i <= nb; i++) {
                  printf "eager, %s", b[i]; for (j = 1; j <= np; j++) printf "\t%s", eg[b[i], p[j]] + 0; printf "\n"
                  printf "compiled, %s", b[i]; for (j = 1; j <= np; j++) printf "\t%s", co[b[i], p[j]] + 0; printf "\n" } }' > "$tmp/bytes"
    np=$(head -n 1 "$tmp/bytes" | awk -F'\t' '{ print NF - 1 }')
    if [ "$(wc -l < "$tmp/bytes")" -gt 1 ]; then
        { echo "set title 'Bytes moved per training step, 784-256-10 with Adam (counted by the scheduler and by hand)'"
          echo "set ylabel 'MB read and written per step'; set xlabel 'engine, batch size'"
          echo "set style data histograms; set style histogram rowstacked"
          echo "set style fill solid 0.8 border -1; set boxwidth 0.6"
          echo "set datafile separator '\\t'; set key outside right top"
          echo "set grid ytics lc rgb '#dddddd'; set yrange [0:*]"
          printf "plot '%s/bytes' using 2:xtic(1) title columnheader(2)" "$tmp"
          for j in $(seq 2 "$np"); do printf ", '' using %d title columnheader(%d)" $((j + 1)) $((j + 1)); done
          echo; } > "$tmp/plot.gp"
        draw "$out-bytes" 1000,480
    fi
fi

draw_curves

if [ "$drawn" -eq 0 ]; then
    echo "error: compile-plot.sh: no stage-09 results to draw from ($dir/$base.csv and its -bytes," \
         "-train files; run make stage-09 bench or run)" >&2
    exit 1
fi
