#!/bin/sh
# lifetime-plot.sh: the lifetime chart of one training step, from the CSV the
# planner writes (tape_write_lifetimes, through `bench_mlp --lifetimes` or
# `bench_cnn --lifetimes`): every buffer a rectangle, from its birth to its
# death along the step (one tick per op of the forward, one per node of the
# backward), at its offset in the planned block. Buffers whose lifetimes do
# not overlap share bytes: one rectangle sits above another's time, never on
# it. Colour by kind: values, gradients, what an op saved for its backward,
# scratch. Draws OUT.svg and OUT.png.
#   tools/lifetime-plot.sh IN.csv OUT_BASENAME
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"

case $(header "$in") in
    buffer,kind,op,bytes,birth,death,offset) ;;
    *) echo "error: lifetime-plot.sh: $in is not a lifetimes file (bench_cnn --lifetimes)" >&2
       exit 1 ;;
esac
cpu=$(sed -n 's/^# cpu: //p' "$in" | head -n 1)
model=$(sed -n 's/^# model: //p' "$in" | head -n 1)
batch=$(sed -n 's/^# batch: //p' "$in" | head -n 1)
# Megabytes when the block is large, kilobytes when not.
top=$(rows "$in" | awk -F, '$7 >= 0 && $7 + $4 > t { t = $7 + $4 } END { print t + 0 }')
if [ "$top" -ge 4000000 ]; then unit=1048576; uname=MiB; else unit=1024; uname=KiB; fi
# One block per kind (gnuplot's index), each row a rectangle:
# x, y, xlow, xhigh, ylow, yhigh.
rows "$in" | awk -F, -v u="$unit" '$7 >= 0 {
        k = $2; if (!(k in seen)) { seen[k] = 1; kinds[++n] = k }
        lo = $7 / u; hi = ($7 + $4) / u
        d[k] = d[k] sprintf("%g\t%g\t%d\t%d\t%g\t%g\n", ($5 + $6 + 1) / 2, (lo + hi) / 2, $5, $6 + 1, lo, hi) }
    END { for (i = 1; i <= n; i++) printf "\"%s\"\n%s\n\n", kinds[i], d[kinds[i]] }' > "$tmp/boxes"
nk=$(grep -c '^"' "$tmp/boxes" || true)
[ "$nk" -ge 1 ] || { echo "error: lifetime-plot.sh: no planned buffers in $in" >&2; exit 1; }
# The backward begins where the first gradient is born.
back=$(rows "$in" | awk -F, '$2 == "grad" && (b == "" || $5 < b) { b = $5 } END { print b }')
{ echo "set title \"One training step's buffers in the planned block: ${model:-the model}${batch:+, batch $batch}  ·  $cpu\""
  echo "set xlabel 'moment of the step (one per op forward, one per node backward)'"
  echo "set ylabel 'offset in the block ($uname)'"
  echo "set grid lc rgb '#dddddd'; set key outside right top"
  echo "set style fill solid 0.55 border lc rgb '#444444'"
  echo "set linetype 1 lc rgb '#2f78b5'; set linetype 2 lc rgb '#c0392b'"
  echo "set linetype 3 lc rgb '#4f9a45'; set linetype 4 lc rgb '#d98f1e'"
  echo "set linetype 5 lc rgb '#7b3fb0'"
  echo "set datafile separator '\\t'; set yrange [0:*]; set xrange [0:*]"
  [ -n "$back" ] && echo "set arrow from $back, graph 0 to $back, graph 1 nohead dt 2 lc rgb '#555555'" &&
      echo "set label 'backward' at $back, graph 0.97 offset 0.5,0"
  printf "plot "
  for i in $(seq 0 $((nk - 1))); do
      [ "$i" -gt 0 ] && printf ", "
      printf "'%s/boxes' index %d using 1:2:3:4:5:6 with boxxyerror lt %d title columnheader(1)" "$tmp" "$i" $((i + 1))
  done
  echo; } > "$tmp/plot.gp"
draw "$out" 1000,560
