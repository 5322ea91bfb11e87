# plot-lib.sh: what every plot script of tools/ shares. A script sources it
# first and hands plot_begin its arguments:
#   . "$(dirname "$0")/plot-lib.sh"
#   plot_begin "$@"
# plot_begin checks them (IN.csv OUT_BASENAME) and that gnuplot is installed,
# and sets
#   in out    the two arguments
#   me        the script's name, for its messages
#   root      the repository's root
#   dir base  IN's directory, and IN's name without .csv
#   tmp       a directory for scratch files, removed when the script ends
# A script drawing one file calls plot_input next: IN must be readable, and
# cpu is set to the CPU its `#` lines name. Then it writes a gnuplot script
# into $tmp/plot.gp and calls draw, which draws it as SVG and as PNG, in the
# one look every figure of the book has. The training stages' scripts
# (mlp-, cnn- and compile-plot.sh) also draw the training curves and the
# comparison with PyTorch from here (draw_curves, draw_compare).

plot_begin() {
    me=$(basename "$0")
    [ $# -eq 2 ] || { echo "usage: tools/$me IN.csv OUT_BASENAME" >&2; exit 2; }
    in=$1; out=$2
    command -v gnuplot >/dev/null 2>&1 ||
        { echo "error: $me: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
    root=$(cd "$(dirname "$0")/.." && pwd)
    dir=$(dirname "$in")
    base=$(basename "$in" .csv)
    mkdir -p "$(dirname "$out")"
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/plot.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT INT TERM
    drawn=0
}

plot_input() {
    [ -r "$in" ] || { echo "error: $me: cannot read $in" >&2; exit 1; }
    cpu=$(meta cpu)
}

# The value of IN's `# KEY: value` line (the first one), empty when none.
meta() { sed -n "s/^# $1: //p" "$in" | head -n 1; }
# The file NAME.csv beside IN, else the reference one; empty when neither.
find_csv() {
    for f in "$dir/$1.csv" "$root/plots/data/$1.csv"; do
        if [ -r "$f" ]; then echo "$f"; return 0; fi
    done
    return 0
}
rows() { grep -v '^#' "$1" | tail -n +2; }
header() { grep -v '^#' "$1" | head -n 1; }
# The header row of results schema NAME (speed, train, train_val, gemm), as
# common/base/schemas.c declares it for the programs that write it.
schema() {
    awk -v decl=" SCHEMA_$(echo "$1" | tr a-z A-Z)[] =" \
        'index($0, decl) { on = 1 } on { print } on && /;/ { exit }' "$root/common/base/schemas.c" |
        grep -o '"[^"]*"' | tr -d '"\n'
}
# A training stage's speed file, beside IN or the reference's, into in, its
# header checked against the speed schema, and its CPU into cpu; false when
# there is none. A file written before the rounds kept their yardstick has
# the schema's columns up to vs_pytorch, which is all the plots read.
speed_input() {
    in=$(find_csv "$base")
    [ -n "$in" ] || return 1
    case "$(schema speed),:$(header "$in")" in
        "$(header "$in"),"*:*,vs_pytorch*) ;;
        *) echo "error: $me: $in is not a training stage's speed file (header: $(header "$in"))" >&2
           exit 1 ;;
    esac
    cpu=$(sed -n 's/^# cpu: //p' "$in" | head -n 1)
}
# Draws the script in $tmp/plot.gp as NAME.svg and NAME.png, W,H pixels,
# the SVG's font FONT points (default 13) and the PNG's two less. The SVG
# scales to the page, unless the fourth argument is "fixed" (a text drawn
# as a figure, kept at its size). The script runs twice, not through
# `replot`, which cannot redraw a multiplot.
draw() {
    name=$1; size=$2; font=${3:-13}; scale=dynamic
    [ "${4:-}" = fixed ] && scale=fixed
    { echo "set terminal svg size $size $scale font 'sans,$font' background '#ffffff'"
      echo "set output '$name.svg'"; echo "set termoption noenhanced"
      cat "$tmp/plot.gp"
      echo "set terminal pngcairo size $size font 'sans,$((font - 2))' background '#ffffff'"
      echo "set output '$name.png'"; echo "set termoption noenhanced"
      cat "$tmp/plot.gp"; echo "unset output"; } > "$tmp/full.gp"
    gnuplot "$tmp/full.gp"
    echo "plots: $name.svg $name.png"
    drawn=$((drawn + 1))
}

# Runs SCRIPT, a gnuplot file of plots/ that draws $out.svg and $out.png
# itself, given the variables in $tmp/vars.gp and the data in
# $tmp/series.dat (as varsfile, datafile and outbase).
draw_gp() {
    esc() { printf '%s' "$1" | sed "s/'/''/g"; }
    gnuplot -e "varsfile='$(esc "$tmp/vars.gp")'; datafile='$(esc "$tmp/series.dat")'; outbase='$(esc "$out")'" "$1"
}

# The curves: loss and test accuracy per epoch, one line per framework and
# dataset, from the comparison when it ran, else the training run: yours
# (beside IN) first, then the reference's, as tools/book.lua captions them.
draw_curves() {
    tr=""
    for f in "$dir/$base-compare-train.csv" "$dir/$base-train.csv" \
             "$root/plots/data/$base-compare-train.csv" "$root/plots/data/$base-train.csv"; do
        if [ -r "$f" ]; then tr=$f; break; fi
    done
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

# The comparison with PyTorch at its best (tools/compare.py), when its
# speed CSV holds the probes: left, every arrangement's first probe, fastest
# first, coloured by malloc, against the medians of the rounds (ours and
# PyTorch's fastest); right, each round's seconds per epoch, both sides, a
# round whose yardstick ran slow (left out of the medians) as an open circle.
draw_compare() {
    cmp=$(find_csv "$base-compare")
    [ -n "$cmp" ] || return 0
    name=$(rows "$cmp" | awk -F, '$1 ~ /\/probe$/ { sub(/\/probe$/, "", $1); print $1; exit }')
    [ -n "$name" ] || return 0
    rows "$cmp" | awk -F, -v m="$name/probe" '$1 == m {
            split($3, p, "/"); c = p[2] == "tcmalloc" ? 2 : p[2] == "jemalloc" ? 3 : 1
            print $6 "\t" c "\t" $3 }' | sort -g | awk -F'\t' '{ print NR - 1 "\t" $0 }' > "$tmp/probes"
    rows "$cmp" | awk -F, -v m="$name" '$1 ~ "^" m "/round[0-9]+$" {
            r = substr($1, length(m) + 7); print r "\t" $2 "\t" $6 "\t" ($12 == 1) }' > "$tmp/rounds"
    ours=$(rows "$cmp" | awk -F, -v m="$name" '$1 == m && $2 == "ours" { print $6 }')
    peer=$(rows "$cmp" | awk -F, -v m="$name" '$1 == m && $2 == "pytorch" { print $6 }')
    [ -s "$tmp/probes" ] && [ -n "$ours" ] && [ -n "$peer" ] || return 0
    awk -F'\t' '$2 == "ours" && !$4 { print $1 "\t" $3 }' "$tmp/rounds" > "$tmp/rounds-ours"
    awk -F'\t' '$2 == "pytorch" && !$4 { print $1 "\t" $3 }' "$tmp/rounds" > "$tmp/rounds-pytorch"
    awk -F'\t' '$4 { print $1 "\t" $3 }' "$tmp/rounds" > "$tmp/rounds-slow"
    slow_points=
    [ -s "$tmp/rounds-slow" ] &&
        slow_points=", '$tmp/rounds-slow' using 1:2 with points lt 1 pt 6 ps 1.5 title 'slow round, left out'"
    n=$(wc -l < "$tmp/probes")
    # The machine, as its '#' lines name it: the CPU and its widest ISA.
    mach="$(sed -n 's/^# cpu: //p' "$cmp" | head -n 1), $(sed -n 's/^# isa_best: //p' "$cmp" | head -n 1)"
    { echo "set multiplot"
      echo "set datafile separator '\\t'; set grid ytics lc rgb '#dddddd'"
      echo "set linetype 1 lc rgb '#9a9a9a'; set linetype 2 lc rgb '#2f78b5'; set linetype 3 lc rgb '#d98f1e'"
      echo "set linetype 4 lc rgb '#c0392b' lw 2; set linetype 5 lc rgb '#2f78b5' lw 2 dt 2"
      echo "set size 0.7,1; set origin 0,0; set bmargin 12; set lmargin 14; unset xlabel"
      echo "set title '$name against PyTorch on $mach: every arrangement probed (torch x OpenBLAS threads / malloc / ...)'"
      echo "set ylabel 'seconds per epoch'; set yrange [0:*]; set xrange [-0.6:$n - 0.4]"
      echo "set xtics rotate by 60 right font ',8'; set style fill solid 0.8 border -1; set boxwidth 0.8"
      echo "set key top left"
      echo "plot '$tmp/probes' using 1:2:3:xtic(4) with boxes lc variable notitle, \\"
      echo "  NaN with boxes lt 1 title 'glibc', NaN with boxes lt 2 title 'tcmalloc', NaN with boxes lt 3 title 'jemalloc', \\"
      echo "  $ours with lines lt 4 title 'ours, median of the rounds', \\"
      echo "  $peer with lines lt 5 title 'PyTorch fastest, median of the rounds'"
      echo "set size 0.3,1; set origin 0.7,0; set bmargin 12; set lmargin 10"
      echo "set title 'the rounds, taking turns'; set xtics norotate font ',11' 1; set xlabel 'round'"
      echo "set xrange [0.5:*]; set yrange [0:*]; set key bottom right"
      echo "plot '$tmp/rounds-ours' using 1:2 with linespoints lt 4 pt 7 title 'ours', \\"
      echo "  '$tmp/rounds-pytorch' using 1:2 with linespoints lt 5 pt 7 title 'PyTorch'$slow_points"
      echo "unset multiplot"; } > "$tmp/plot.gp"
    draw "$out-compare" 1300,560
}
