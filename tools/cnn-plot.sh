#!/bin/sh
# cnn-plot.sh: stage 08's figures, from the CSVs of `make stage-08 bench`,
# `run` and `compare`. Given the speed CSV, it finds the others beside it
# (each, when missing, from plots/data/, the reference results) and draws
# each it finds:
#   OUT.svg          seconds per epoch of the CNN per conv path, 1 and 2
#                    threads, and PyTorch's when the comparison ran on the
#                    same machine at the same batch; OUT.caption says which
#   OUT-layers.svg   where a training step goes: every layer's forward and
#                    backward, stacked, per conv path (the most threads)
#   OUT-peak.svg     the convolutions' % of peak per path, forward and
#                    backward, on one thread
#   OUT-winograd.svg the fused convolutions on each path, taking turns
#                    (bench_cnn --turns, into stage-08-winograd.csv):
#                    milliseconds per batch, forward and backward
#   OUT-train.svg    loss and test accuracy per epoch; ours and PyTorch's in
#                    one plot when the comparison ran
# each also as .png.
#   tools/cnn-plot.sh IN.csv OUT_BASENAME
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"

# A clustered or stacked histogram of a tab-separated table whose first row
# names the columns: plot_columns FILE
plot_columns() {
    n=$(head -n 1 "$1" | awk -F'\t' '{ print NF - 1 }')
    printf "plot '%s' using 2:xtic(1) title columnheader(2)" "$1"
    for j in $(seq 2 "$n"); do printf ", '' using %d title columnheader(%d)" $((j + 1)) $((j + 1)); done
    echo
}

# A clustered histogram's table, one row per group and one column per conv
# path, from lines "group<TAB>path<TAB>value" on stdin, in the order they
# come; "-" where a group has no value for a path.
by_path() {
    awk -F'\t' '{
            if (!($1 in hp)) { hp[$1] = 1; p[++np] = $1 }
            if (!($2 in hk)) { hk[$2] = 1; k[++nk] = $2 }
            v[$1, $2] = $3 }
        END { printf "layer"; for (i = 1; i <= nk; i++) printf "\t%s", k[i]; printf "\n"
              for (j = 1; j <= np; j++) { printf "%s", p[j]
                  for (i = 1; i <= nk; i++) { x = v[p[j], k[i]]; printf "\t%s", x == "" ? "-" : x }
                  printf "\n" } }'
}

# --- seconds per epoch per conv path ------------------------------------------
# Beside OUT.svg, OUT.caption: the figure's caption in Markdown, saying what
# was drawn (the book takes it from there: tools/book.lua, caption="drawn").
meta() { sed -n "s/^# $2: //p" "$1" | head -n 1; }
# "1 and 2", "1, 2 and 4": the distinct values on stdin, in their order.
and_list() { awk '!seen[$0]++' | awk '{ v[NR] = $0 } END {
        for (i = 1; i <= NR; i++) printf "%s%s", v[i], i == NR ? "" : i == NR - 1 ? " and " : ", " }'; }
# "1 thread", "1 and 2 threads": the thread counts of the rows on stdin.
threads_of() { t=$(and_list); [ "$t" = 1 ] && echo "1 thread" || echo "$t threads"; }
# 60000 as 60,000.
thousands() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
# A dataset's name as the book says it.
set_name() {
    case $1 in
        fashion) echo "Fashion-MNIST" ;; mnist) echo "the MNIST digits" ;;
        sample) echo "the committed sample" ;; *) echo "$1" ;;
    esac
}
if speed_input; then
    epoch=$(thousands "$(meta "$in" epoch_images)")
    batch=$(rows "$in" | awk -F, '$1 == "cnn" { print $5 }' | and_list)
    threads=$(rows "$in" | awk -F, '$1 == "cnn" { print $4 }' | threads_of)
    # PyTorch's bar comes only from a comparison run on the same machine as
    # these bars (the compare file beside this one) at their batch. Two
    # machines may give the same CPU name (AMD EPYC, Zen 3 or Zen 5): the
    # widest ISA and the L1d tell them apart.
    cmp=$(dirname "$in")/$base-compare.csv
    machine() { echo "$(meta "$1" cpu), $(meta "$1" isa_best), L1d $(meta "$1" l1d_kib) KiB"; }
    if [ ! -r "$cmp" ]; then
        torch="No PyTorch bar: \`make stage-08 compare\` has not run here."
        cmp=""
    elif [ "$(machine "$cmp")" != "$(machine "$in")" ]; then
        torch="No PyTorch bar: \`make stage-08 compare\` ran on another machine ($(machine "$cmp"))."
        cmp=""
    elif ! rows "$cmp" | awk -F, -v b="$batch" '$1 == "cnn" && $2 == "pytorch" && $5 == b { ok = 1 } END { exit !ok }'; then
        torch="No PyTorch bar: \`make stage-08 compare\` ran at batch $(rows "$cmp" | awk -F, '$2 == "pytorch" { print $5 }' | and_list), these bars at batch $batch."
        cmp=""
    else
        torch="PyTorch's bar: the same network and recipe in \`make stage-08 compare\` on $(rows "$cmp" | awk -F, -v b="$batch" '$2 == "pytorch" && $5 == b { print $4 }' | threads_of), $(meta "$cmp" date | cut -c1-10)."
    fi
    # One row per conv path (PyTorch's last, from the comparison), one column
    # per thread count; '-' where one is missing.
    { rows "$in" | awk -F, '$1 == "cnn" { print "ours " $3 "," $4 "," $6 }'
      [ -n "$cmp" ] && rows "$cmp" | awk -F, -v b="$batch" '$1 == "cnn" && $2 == "pytorch" && $5 == b {
            print "pytorch," $4 "," $6 }'
      true; } | awk -F, '
            { if (!($1 in have)) { have[$1] = 1; k[++nk] = $1 }
              if (!($2 in th)) { th[$2] = 1; t[++nt] = $2 }
              v[$1, $2] = $3 }
        END { printf "path"; for (j = 1; j <= nt; j++) printf "\t%s thread%s", t[j], t[j] == 1 ? "" : "s"
              printf "\n"
              for (i = 1; i <= nk; i++) { printf "%s", k[i]
                  for (j = 1; j <= nt; j++) { x = v[k[i], t[j]]; printf "\t%s", x == "" ? "-" : x }
                  printf "\n" } }' > "$tmp/speed"
    peer=$([ -z "$cmp" ] || rows "$cmp" | awk -F, '$1 == "cnn" && $2 == "pytorch" && $3 != "torch" {
            print "\\nPyTorch in its fastest arrangement: " $3 }')
    if [ "$(wc -l < "$tmp/speed")" -gt 1 ]; then
        { printf '%s\n' "set title \"The CNN, batch $batch, Adam: seconds per epoch of $epoch images  ·  $cpu$peer\""
          echo "set ylabel 'seconds per epoch'; set yrange [0:*]"
          echo "set style data histograms; set style histogram clustered gap 1"
          echo "set style fill solid 0.8 border -1; set boxwidth 0.9"
          echo "set datafile missing '-'; set datafile separator '\\t'"
          # Top left: PyTorch's bar, the last and often the tallest, is on the right.
          echo "set grid ytics lc rgb '#dddddd'; set key top left"
          plot_columns "$tmp/speed"; } > "$tmp/plot.gp"
        draw "$out" 900,520
        if [ "$in" = "$root/plots/data/$base.csv" ]; then where="the reference machine"
        else where="your machine"; fi
        steps=$(meta "$in" steps)
        timed="timed${steps:+ over $steps training steps} on $(set_name "$(meta "$in" dataset)")"
        printf '%s\n' "Seconds per training epoch of the CNN ($epoch images, batch $batch, Adam) per conv path, on $threads: each $timed and scaled to the epoch, by \`make stage-08 bench\` on $where ($cpu, $(meta "$in" date | cut -c1-10)). $torch" > "$out.caption"
    fi
fi

# --- the layers --------------------------------------------------------------
lay=$(find_csv "$base-layers")
if [ -n "$lay" ]; then
    case $(header "$lay") in
        layer,path,taken,threads,batch,*) ;;
        *) echo "error: cnn-plot.sh: $lay is not a stage-08 layers file" >&2; exit 1 ;;
    esac
    # Where a step goes, on the most threads measured: one bar per conv path,
    # a stack of every layer's forward and backward (pooling and the Linear
    # layers, measured once, go in every bar).
    rows "$lay" | awk -F, '{ if ($4 > top) top = $4; r[NR] = $0 }
        END { for (i = 1; i <= NR; i++) if (i in r) { split(r[i], c, ","); if (c[4] == top) print r[i] } }' |
        awk -F, '
            { part = $1 " " ($10 == "forward" ? "fwd" : "bwd")
              if (!(part in hp)) { hp[part] = 1; p[++np] = part }
              if ($2 == "-") shared[part] = $14
              else { if (!($2 in hk)) { hk[$2] = 1; k[++nk] = $2 }; v[$2, part] = $14 } }
        END { printf "path"; for (j = 1; j <= np; j++) printf "\t%s", p[j]; printf "\n"
              for (i = 1; i <= nk; i++) { printf "%s", k[i]
                  for (j = 1; j <= np; j++) {
                      x = (p[j] in shared) ? shared[p[j]] : v[k[i], p[j]]
                      printf "\t%s", x == "" ? 0 : x }
                  printf "\n" } }' > "$tmp/layers"
    th=$(rows "$lay" | awk -F, '{ if ($4 > top) top = $4 } END { print top }')
    if [ "$(wc -l < "$tmp/layers")" -gt 1 ]; then
        { echo "set title 'Where a training step goes, layer by layer ($th thread(s), fwd and bwd)'"
          echo "set ylabel 'seconds per epoch of 60,000 images'"
          echo "set style data histograms; set style histogram rowstacked"
          # One hue per layer, light forward and dark backward (the parts come
          # in that order), instead of gnuplot's eight colours cycling.
          echo "set linetype 1 lc rgb '#c9a6e8'; set linetype 2 lc rgb '#7b3fb0'"
          echo "set linetype 3 lc rgb '#a9d3f0'; set linetype 4 lc rgb '#2f78b5'"
          echo "set linetype 5 lc rgb '#f6dc8a'; set linetype 6 lc rgb '#d98f1e'"
          echo "set linetype 7 lc rgb '#f4a9a0'; set linetype 8 lc rgb '#c0392b'"
          echo "set linetype 9 lc rgb '#b9e3b0'; set linetype 10 lc rgb '#4f9a45'"
          echo "set linetype 11 lc rgb '#d9d9d9'; set linetype 12 lc rgb '#777777'"
          echo "set style fill solid 0.8 border -1; set boxwidth 0.6"
          echo "set datafile separator '\\t'; set key outside right top"
          echo "set grid ytics lc rgb '#dddddd'; set yrange [0:*]"
          plot_columns "$tmp/layers"; } > "$tmp/plot.gp"
        draw "$out-layers" 1000,520
    fi
    # The convolutions' % of peak on one thread: one group per layer and
    # direction, one bar per path.
    rows "$lay" | awk -F, '$4 == 1 && $2 != "-" && $13 != "" {
                               print $1 " " $10 "\t" $2 "\t" $13 }' |
        by_path > "$tmp/peak"
    if [ "$(wc -l < "$tmp/peak")" -gt 1 ]; then
        { echo "set title 'The convolutions on one thread: % of the FMA peak per path'"
          echo "set ylabel '% of peak'; set yrange [0:100]"
          echo "set style data histograms; set style histogram clustered gap 1"
          echo "set style fill solid 0.8 border -1; set boxwidth 0.9"
          echo "set datafile missing '-'; set datafile separator '\\t'"
          echo "set grid ytics lc rgb '#dddddd'; set key top right"
          plot_columns "$tmp/peak"; } > "$tmp/plot.gp"
        draw "$out-peak" 900,480
    fi
fi

# --- the paths taking turns (bench_cnn --turns) --------------------------------
turns=$(find_csv "$base-winograd")
if [ -n "$turns" ]; then
    case $(header "$turns") in
        layer,path,taken,threads,batch,*) ;;
        *) echo "error: cnn-plot.sh: $turns is not a stage-08 layers file" >&2; exit 1 ;;
    esac
    # One group per layer, direction and thread count, one bar per path.
    rows "$turns" | awk -F, '{ dir = $10 == "forward" ? "fwd" : "bwd"
                               print $1 " " dir ", " $4 " th\t" $2 "\t" 1000 * $11 }' |
        by_path > "$tmp/turns"
    if [ "$(wc -l < "$tmp/turns")" -gt 1 ]; then
        { echo "set title 'The fused convolutions per path, taking turns: milliseconds per batch'"
          echo "set ylabel 'ms per batch'; set yrange [0:*]"
          echo "set style data histograms; set style histogram clustered gap 1"
          echo "set style fill solid 0.8 border -1; set boxwidth 0.9"
          echo "set datafile missing '-'; set datafile separator '\\t'"
          echo "set xtics rotate by -30; set grid ytics lc rgb '#dddddd'; set key top right"
          plot_columns "$tmp/turns"; } > "$tmp/plot.gp"
        draw "$out-winograd" 1000,520
    fi
fi

draw_curves
draw_compare

if [ "$drawn" -eq 0 ]; then
    echo "error: cnn-plot.sh: no stage-08 results to draw from ($dir/$base.csv and its -layers," \
         "-train, -compare, -compare-train files; run make stage-08 bench, run or compare)" >&2
    exit 1
fi
