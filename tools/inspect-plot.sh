#!/bin/sh
# inspect-plot.sh: what a trained model shows, chapters 7 and 8's figures,
# from the files `make stage-07 inspect`, `make stage-07 seeds` and
# `make stage-08 inspect` write.
#   tools/inspect-plot.sh IN.csv OUT_BASENAME   → OUT_BASENAME.svg and .png
# IN is one of the files run_mlp and run_cnn write:
#   --csv with --val   accuracy on the held-out images per epoch, one line per
#                      learning rate (or per seed when the rate is the same),
#                      and the test accuracy read once at the end, a dot each
#   --confusion        the confusion matrix, each cell a share of its row
#   --wrong            the wrong test images the model was surest of
#   --templates, --filters, --maps   a matrix of tiles (weights or maps)
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"
plot_input
head=$(header "$in" | cut -c1-40)
case $(header "$in") in
    "$(schema train_val)") head=val ;;
    "$(schema train)")
        echo "error: inspect-plot.sh: $in has no val_acc column: write it with --val N" >&2; exit 1 ;;
esac
case $head in
    val) what=val ;;
    label,predicted,count,share) what=confusion ;;
    rank,index,label,predicted,confidenc*) what=wrong ;;
    *) if [ -n "$(meta tiles)" ]; then what=tiles; else
           echo "error: inspect-plot.sh: $in is no file of run_mlp or run_cnn's --val, --confusion, --wrong, --templates, --filters or --maps (header: $head)" >&2
           exit 1; fi ;;
esac
dataset=$(meta dataset)
recipe=$(meta recipe)
grep -v '^#' "$in" > "$tmp/all"
tail -n +2 "$tmp/all" > "$tmp/rows"

# The classes' names, for the axes and titles.
if [ "$dataset" = fashion ]; then
    names='T-shirt/top Trouser Pullover Dress Coat Sandal Shirt Sneaker Bag Ankle-boot'
else
    names='0 1 2 3 4 5 6 7 8 9'
fi
i=0; tics=
for n in $names; do tics="$tics${tics:+, }\"$n\" $i"; i=$((i + 1)); done


case $what in
val)
    # One line per learning rate; when every run has the same rate, per seed.
    col() { awk -F, -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) print i }' "$tmp/all"; }
    clr=$(col lr); cseed=$(col seed); cep=$(col epoch); cval=$(col val_acc); ctest=$(col test_acc)
    nlr=$(cut -d, -f"$clr" "$tmp/rows" | sort -u | wc -l)
    if [ "$nlr" -gt 1 ]; then key=$clr; label='lr'; else key=$cseed; label='seed'; fi
    awk -F, -v k="$key" -v e="$cep" -v v="$cval" -v t="$ctest" -v d="$tmp" '
        !($k in seen) { seen[$k] = 1; print $k > (d "/runs") }
        { print $e, $v > (d "/run-" $k) }
        $t != "" { print $e, $t > (d "/test-" $k) }' "$tmp/rows"
    val=$(meta train_images)
    {
        echo "set title \"Accuracy on the held-out images after each epoch (line), on the test set once at the end (dot)  ·  $cpu\""
        echo "set xlabel 'epoch'; set ylabel 'accuracy'; set grid lc rgb '#dddddd'"
        echo "set key outside right center vertical; set xtics 1"
        printf 'plot '
        sep=
        c=0
        while read -r r; do
            color=$(echo '#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e #8c564b #e377c2 #17becf' | cut -d' ' -f$((c % 8 + 1)))
            printf "%s'%s' using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb '%s' title '%s %s'" \
                "$sep" "$tmp/run-$r" "$color" "$label" "$r"
            sep=', \
     '
            [ -f "$tmp/test-$r" ] && printf "%s'%s' using 1:2 with points pt 9 ps 1.8 lc rgb '%s' notitle" \
                "$sep" "$tmp/test-$r" "$color"
            c=$((c + 1))
        done < "$tmp/runs"
        echo
    } > "$tmp/plot.gp"
    : "$val"
    draw "$out" 960,480 12
    ;;
confusion)
    total=$(awk -F, '{ s += $3 } END { print s }' "$tmp/rows")
    cat > "$tmp/plot.gp" <<GP
set datafile separator ','
set title "Test set's confusion matrix ($total images): share of each true class  ·  $cpu"
set xlabel 'predicted class'; set ylabel 'true class'
set xtics ($tics) rotate by 30 right; set ytics ($tics)
set xrange [-0.5:9.5]; set yrange [9.5:-0.5]; set size ratio -1
set cbrange [0:1]; set cblabel 'share of the true class'
set palette defined (0 '#ffffff', 0.05 '#fde0c5', 0.3 '#f59e72', 1 '#b2182b')
plot '$tmp/rows' using 2:1:4 with image notitle, \\
     '' using 2:1:(\$3 > 0 ? sprintf('%d', \$3) : '') with labels font ',9' notitle
GP
    draw "$out" 860,760 12
    ;;
wrong)
    awk -F, -v d="$tmp" '{
        f = d "/img-" $1; print $1 > (d "/ranks")
        printf "%s,%s,%s,%s\n", $1, $3, $4, $5 > (d "/info-" $1)
        for (y = 0; y < 28; y++) { line = ""
            for (x = 0; x < 28; x++) line = line (x ? " " : "") $(6 + y * 28 + x)
            print line > f }
    }' "$tmp/rows"
    [ -s "$tmp/ranks" ] || { echo "error: inspect-plot.sh: no wrong images in $in" >&2; exit 1; }
    n=$(wc -l < "$tmp/ranks"); cols=8; rows=$(( (n + cols - 1) / cols ))
    {
        echo "set multiplot layout $rows,$cols title \"The wrong test images the model was surest of: true class → predicted (its probability)  ·  $cpu\""
        echo "unset key; unset colorbox; unset xtics; unset ytics; unset border"
        echo "set size ratio -1; set xrange [-0.5:27.5]; set yrange [27.5:-0.5]"
        echo "set palette gray negative; set cbrange [0:255]"
        while read -r r; do
            IFS=, read -r _ label pred conf < "$tmp/info-$r"
            l=$(echo "$names" | cut -d' ' -f$((label + 1)))
            p=$(echo "$names" | cut -d' ' -f$((pred + 1)))
            pr=$(awk -v c="$conf" 'BEGIN { printf "%.3f", c }')
            printf 'set title "%s\\n→ %s (%s)" font ",9"\n' "$l" "$p" "$pr"
            echo "plot '$tmp/img-$r' matrix with image"
        done < "$tmp/ranks"
        echo "unset multiplot"
    } > "$tmp/plot.gp"
    draw "$out" 1200,$((rows * 190 + 60)) 12
    ;;
tiles)
    n=$(meta tiles); h=$(meta matrix_rows); w=$(meta matrix_cols)
    kind=$(meta what)
    case $kind in
        *"feature maps"*)
            title="conv1's $n feature maps after its ReLU ($(meta what | sed 's/.*for //'))"
            palette="set palette defined (0 '#ffffff', 0.5 '#6baed6', 1 '#08306b'); set cbrange [0:*]" ;;
        *filters*)
            title="conv1's $n learned 3×3 filters (red positive, blue negative, white zero)"
            big=$(grep -v '^#' "$in" | tr ',' '\n' | awk '{ v = $1 < 0 ? -$1 : $1; if (v > m) m = v } END { print m + 0 }')
            palette="set palette defined (-1 '#2166ac', 0 '#ffffff', 1 '#b2182b'); set cbrange [-$big:$big]" ;;
        *)
            title="The first layer's $n weight vectors as 28×28 templates (each scaled to its own largest weight)"
            palette="set palette defined (-1 '#2166ac', 0 '#ffffff', 1 '#b2182b'); set cbrange [-100:100]" ;;
    esac
    # Each tile's number above it, when there are few enough to read.
    gcols=$(meta grid_cols); th=$(meta tile_rows); tw=$(meta tile_cols)
    : > "$tmp/labels"
    if [ "$n" -le 64 ]; then
        i=0
        while [ "$i" -lt "$n" ]; do
            echo "set label $((i + 1)) '$i' at $(( (i % gcols) * (tw + 1) )) - 0.5, $(( (i / gcols) * (th + 1) )) - 0.5 front font ',8' tc rgb '#555555' offset 0,0.4" >> "$tmp/labels"
            i=$((i + 1))
        done
    fi
    cat > "$tmp/plot.gp" <<GP
set datafile separator ','
set title "$title  ·  $cpu" offset 0,1
unset key; unset xtics; unset ytics; unset border
$(cat "$tmp/labels")
set size ratio -1; set xrange [-0.5:$w - 0.5]; set yrange [$h - 0.5:-0.5]
$palette
plot '$tmp/all' matrix with image
GP
    if [ "$w" -ge "$h" ]; then W=1100; H=$(( 1100 * h / w + 120 )); else H=900; W=$(( 900 * w / h + 120 )); fi
    [ "$W" -lt 700 ] && W=700
    draw "$out" "$W","$H" 12
    ;;
esac
: "$recipe"
