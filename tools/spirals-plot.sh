#!/bin/sh
# spirals-plot.sh: chapter 6's two spirals, from `make stage-06 run`.
#   tools/spirals-plot.sh IN.csv OUT_BASENAME   → OUT_BASENAME.svg and .png
# IN is either file run_spirals writes: --csv (step,loss,accuracy: the loss
# and accuracy as it learns) or --boundary (kind,step,x,y,value: the
# probability of class 1 over the plane at four steps, with the points).
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"
plot_input
head=$(header "$in")
case $head in
    step,loss,accuracy) what=curve ;;
    kind,step,x,y,value) what=boundary ;;
    *) echo "error: spirals-plot.sh: $in is not a file of run_spirals --csv or --boundary (header: $head)" >&2
       exit 1 ;;
esac
rows "$in" > "$tmp/rows"

if [ "$what" = curve ]; then
    cat > "$tmp/plot.gp" <<GP
set datafile separator ','
set title "Two spirals, 2-32-32-2 tanh, gradient descent with momentum  ·  $cpu"
set xlabel 'step'; set ylabel 'loss (cross-entropy)'; set y2label 'accuracy on the 200 points'
set y2range [0:1]; set y2tics; set ytics nomirror; set grid lc rgb '#dddddd'
set key outside bottom center horizontal
plot '$tmp/rows' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'loss', \\
     '' using 1:3 axes x1y2 with lines lw 2 lc rgb '#d62728' title 'accuracy'
GP
    draw "$out" 900,480
    exit 0
fi

# boundary: one panel per step, in the order the file has them.
awk -F, '$1 == "point" { print $3, $4, $5 > "'"$tmp"'/points" }
         $1 == "grid" { if (!($2 in seen)) { seen[$2] = 1; print $2 > "'"$tmp"'/steps" }
                        print $3, $4, $5 > ("'"$tmp"'/grid-" $2) }' "$tmp/rows"
[ -s "$tmp/steps" ] || { echo "error: spirals-plot.sh: no grid rows in $in" >&2; exit 1; }
n=$(wc -l < "$tmp/steps")
{
    echo "set multiplot layout 1,$n title \"The network's probability of class 1 as it learns  ·  $cpu\""
    echo "set size ratio -1; unset key; set xrange [-1.25:1.25]; set yrange [-1.25:1.25]"
    echo "set cbrange [0:1]; unset colorbox; set xtics 1; set ytics 1"
    echo "set palette defined (0 '#4a7fc1', 0.5 '#f7f7f7', 1 '#d9534f')"
    while read -r s; do
        echo "set title 'step $s'"
        echo "plot '$tmp/grid-$s' using 1:2:3 with image, \\"
        echo "     '$tmp/points' using 1:2:(\$3 == 0 ? 0x1f4e99 : 0xa11d1d) with points pt 7 ps 0.5 lc rgb variable"
    done < "$tmp/steps"
    echo "unset multiplot"
} > "$tmp/plot.gp"
draw "$out" 1200,380 12
