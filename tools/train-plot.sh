# train-plot.sh: what the training stages' plot scripts (tools/mlp-plot.sh,
# tools/cnn-plot.sh) share, sourced by them with $1 (IN.csv) and $2
# (OUT_BASENAME) set: the setup, finding a CSV
# beside IN or in plots/data/, drawing a gnuplot script as SVG and PNG, and
# the training curves.
in=$1; out=$2
command -v gnuplot >/dev/null 2>&1 ||
    { echo "error: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(dirname "$in")
base=$(basename "$in" .csv)
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/plot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
drawn=0

# The file NAME.csv beside IN, else the reference one; empty when neither.
find_csv() {
    for f in "$dir/$1.csv" "$root/plots/data/$1.csv"; do
        if [ -r "$f" ]; then echo "$f"; return 0; fi
    done
    return 0
}
rows() { grep -v '^#' "$1" | tail -n +2; }
header() { grep -v '^#' "$1" | head -n 1; }
# Runs the script in $tmp/plot.gp twice: SVG, then PNG (not `replot`, which
# cannot redraw a multiplot).
draw() {
    name=$1; size=$2
    { echo "set terminal svg size $size dynamic font 'sans,13' background '#ffffff'"
      echo "set output '$name.svg'"; echo "set termoption noenhanced"
      cat "$tmp/plot.gp"
      echo "set terminal pngcairo size $size font 'sans,11' background '#ffffff'"
      echo "set output '$name.png'"; echo "set termoption noenhanced"
      cat "$tmp/plot.gp"; echo "unset output"; } > "$tmp/full.gp"
    gnuplot "$tmp/full.gp"
    echo "plots: $name.svg $name.png"
    drawn=$((drawn + 1))
}

# The curves: loss and test accuracy per epoch, one line per framework and
# dataset, from the comparison when it ran, else the training run.
draw_curves() {
    tr=$(find_csv "$base-compare-train")
    [ -n "$tr" ] || tr=$(find_csv "$base-train")
    if [ -n "$tr" ]; then
        # One block per framework and dataset, gnuplot's index separates them.
        rows "$tr" | awk -F, '{ key = $3 " · " $2 " · " $1
                if (!(key in seen)) { seen[key] = 1; k[++nk] = key }
                d[key] = d[key] $8 "\t" $11 "\t" $12 "\t" (100 * $13) "\n" }
            END { for (i = 1; i <= nk; i++) printf "\"%s\"\n%s\n\n", k[i], d[k[i]] }' > "$tmp/curves"
        n=$(grep -c '^"' "$tmp/curves" || true)
        if [ "$n" -ge 1 ]; then
            { echo "set multiplot layout 1,2 title 'Training curves: $(basename "$tr")'"
              echo "set xlabel 'epoch'; set grid lc rgb '#dddddd'; set key top right"
              echo "set ylabel 'loss'; set title 'train (solid) and test (dashed) loss'"
              printf "plot "
              for i in $(seq 0 $((n - 1))); do
                  [ "$i" -gt 0 ] && printf ", "
                  printf "'%s/curves' index %d using 1:2 with linespoints lw 2 lc %d title columnheader(1), " "$tmp" "$i" $((i + 1))
                  printf "'' index %d using 1:3 with lines dt 2 lw 2 lc %d notitle" "$i" $((i + 1))
              done
              echo
              echo "set ylabel 'test accuracy (%)'; set title 'test accuracy'; set key bottom right"
              printf "plot "
              for i in $(seq 0 $((n - 1))); do
                  [ "$i" -gt 0 ] && printf ", "
                  printf "'%s/curves' index %d using 1:4 with linespoints lw 2 lc %d title columnheader(1)" "$tmp" "$i" $((i + 1))
              done
              echo
              echo "unset multiplot"; } > "$tmp/plot.gp"
            draw "$out-train" 1100,480
        fi
    fi

}
