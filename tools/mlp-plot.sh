#!/bin/sh
# mlp-plot.sh: stage 07's figures, from the CSVs of `make stage-07 bench`,
# `run` and `compare`. Given the speed CSV, it finds the others beside it
# (each, when missing, from plots/data/, the reference results) and draws
# each it finds:
#   OUT.svg            seconds per epoch per GEMM backend, 1 and 2 threads:
#                      what each chapter of the book bought
#   OUT-batch.svg      images per second against the batch size (auto)
#   OUT-breakdown.svg  where an epoch goes: GEMMs, elementwise and loss,
#                      optimizer, data
#   OUT-train.svg      loss and test accuracy per epoch; ours and PyTorch's in
#                      one plot when the comparison ran
# each also as .png.
#   tools/mlp-plot.sh IN.csv OUT_BASENAME
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"

# --- seconds per epoch per backend ------------------------------------------
if speed_input; then
    # 784-256-10 at batch 64: one row per backend (in the book's order), one
    # column per thread count; '-' where one is missing.
    rows "$in" | awk -F, '$1 == "784-256-10" && $5 == 64 {
            if (!($3 in have)) { have[$3] = 1; b[++nb] = $3 }
            if (!($4 in th)) { th[$4] = 1; t[++nt] = $4 }
            v[$3, $4] = $6 }
        END { printf "backend"; for (j = 1; j <= nt; j++) printf "\t%s thread%s", t[j], t[j] == 1 ? "" : "s"
              printf "\n"
              for (i = 1; i <= nb; i++) { printf "%s", b[i]
                  for (j = 1; j <= nt; j++) { x = v[b[i], t[j]]; printf "\t%s", x == "" ? "-" : x }
                  printf "\n" } }' > "$tmp/speed"
    nt=$(head -n 1 "$tmp/speed" | awk -F'\t' '{ print NF - 1 }')
    if [ "$(wc -l < "$tmp/speed")" -gt 1 ]; then
        { echo "set title \"784-256-10, batch 64, Adam: one epoch of 60,000 images  ·  $cpu\""
          echo "set ylabel 'seconds per epoch (log scale)'; set logscale y"
          echo "set style data histograms; set style histogram clustered gap 1"
          echo "set style fill solid 0.8 border -1; set boxwidth 0.9"
          echo "set datafile missing '-'; set datafile separator '\\t'"
          echo "set grid ytics lc rgb '#dddddd'; set key top right"
          printf "plot '%s/speed' using 2:xtic(1) title columnheader(2)" "$tmp"
          for j in $(seq 2 "$nt"); do printf ", '' using %d title columnheader(%d)" $((j + 1)) $((j + 1)); done
          echo; } > "$tmp/plot.gp"
        draw "$out" 900,520
    fi
    # The batch sweep: the auto backend on its largest thread count.
    rows "$in" | awk -F, '$1 == "784-256-10" && $3 == "auto" { if ($4 > top) top = $4; r[NR] = $0 }
        END { for (i in r) { split(r[i], c, ","); if (c[4] == top) print c[5] "\t" c[7] } }' |
        sort -n > "$tmp/batch"
    if [ "$(wc -l < "$tmp/batch")" -gt 1 ]; then
        { echo "set title \"784-256-10, Adam, auto backend: speed against batch size  ·  $cpu\""
          echo "set xlabel 'batch size (log scale)'; set ylabel 'images per second'"
          echo "set logscale x 2; set grid lc rgb '#dddddd'; set key off; set yrange [0:*]"
          echo "plot '$tmp/batch' using 1:2 with linespoints lw 2 pt 7"; } > "$tmp/plot.gp"
        draw "$out-batch" 800,480
    fi
fi

# --- the breakdown -----------------------------------------------------------
bd=$(find_csv "$base-breakdown")
if [ -n "$bd" ]; then
    rows "$bd" | awk -F, '$5 != "total" {
            key = $1 ", batch " $4
            if (!(key in seen)) { seen[key] = 1; k[++nk] = key }
            if (!($5 in have)) { have[$5] = 1; p[++np] = $5 }
            v[key, $5] = $6 }
        END { printf "model"; for (j = 1; j <= np; j++) printf "\t%s", p[j]; printf "\n"
              for (i = 1; i <= nk; i++) { printf "%s", k[i]
                  for (j = 1; j <= np; j++) printf "\t%s", v[k[i], p[j]] + 0
                  printf "\n" } }' > "$tmp/bd"
    np=$(head -n 1 "$tmp/bd" | awk -F'\t' '{ print NF - 1 }')
    if [ "$(wc -l < "$tmp/bd")" -gt 1 ]; then
        { echo "set title 'Where an epoch goes (auto backend)'"
          echo "set ylabel 'seconds per epoch of 60,000 images'"
          echo "set style data histograms; set style histogram rowstacked"
          echo "set style fill solid 0.8 border -1; set boxwidth 0.6"
          echo "set datafile separator '\\t'; set key outside right top"
          echo "set grid ytics lc rgb '#dddddd'; set yrange [0:*]"
          printf "plot '%s/bd' using 2:xtic(1) title columnheader(2)" "$tmp"
          for j in $(seq 2 "$np"); do printf ", '' using %d title columnheader(%d)" $((j + 1)) $((j + 1)); done
          echo; } > "$tmp/plot.gp"
        draw "$out-breakdown" 900,480
    fi
fi

draw_curves
draw_compare

if [ "$drawn" -eq 0 ]; then
    echo "error: mlp-plot.sh: no stage-07 results to draw from ($dir/$base.csv and its -train," \
         "-breakdown, -compare-train files; run make stage-07 bench, run or compare)" >&2
    exit 1
fi
