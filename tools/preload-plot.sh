#!/bin/sh
# preload-plot.sh: NumPy and PyTorch on three BLAS libraries, from the CSVs
# of `make stage-05 preload` (tools/preload.py): on the left NumPy's float32
# matmul, GFLOPS against size, one line per library (the median of the
# rounds, each round a dot); on the right PyTorch's MLP, seconds per epoch
# (the median of the rounds, each round a dot), when IN-mlp.csv is there.
#   tools/preload-plot.sh IN.csv OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"
plot_input
mlp=$dir/$base-mlp.csv

threads=$(meta threads)
libs="openblas mmblas blis"
label() { case $1 in openblas) echo "OpenBLAS" ;; mmblas) echo "the book's gemm()" ;; blis) echo "BLIS" ;; esac; }

# NumPy: library,round,m,n,k,seconds,gflops,vs_openblas,error_ratio
for lib in $libs; do
    rows "$in" | awk -F, -v l="$lib" '$1 == l && $2 == "median" { print $3, $7 }' |
        sort -n > "$tmp/numpy-$lib.median"
    rows "$in" | awk -F, -v l="$lib" '$1 == l && $2 != "median" { print $3, $7 }' \
        > "$tmp/numpy-$lib.rounds"
done
# PyTorch: library,round,model,dataset,threads,batch,epochs,seconds_per_epoch,...
have_mlp=0
if [ -r "$mlp" ]; then
    i=0
    for lib in $libs; do
        i=$((i + 1))
        rows "$mlp" | awk -F, -v l="$lib" -v x="$i" -v name="$(label "$lib")" \
            '$1 == l && $2 == "median" { printf "%d \"%s\" %s\n", x, name, $8 }' > "$tmp/mlp-$lib.median"
        rows "$mlp" | awk -F, -v l="$lib" -v x="$i" \
            '$1 == l && $2 != "median" { print x, $8 }' > "$tmp/mlp-$lib.rounds"
        [ -s "$tmp/mlp-$lib.median" ] && have_mlp=1
    done
    model=$(rows "$mlp" | head -n 1 | cut -d, -f3,4 | tr , ' ')
fi

# One panel's plot command: for each library with data, its medians drawn
# as $2 and its rounds as $3, from $tmp/$1-LIBRARY.median and .rounds.
plot_libs() {
    printf "plot "
    c=0; first=1
    for lib in $libs; do
        c=$((c + 1))
        [ -s "$tmp/$1-$lib.median" ] || continue
        [ $first = 1 ] || printf ", \\\\\n     "
        first=0
        printf "'%s/%s-%s.median' %s lw 2 lc %d title \"%s\", '%s/%s-%s.rounds' %s lc %d notitle" \
            "$tmp" "$1" "$lib" "$2" "$c" "$(label "$lib")" "$tmp" "$1" "$lib" "$3" "$c"
    done
    echo
}

{
    # draw runs this twice (SVG, then PNG): start each from gnuplot's defaults.
    echo "reset"
    if [ $have_mlp = 1 ]; then echo "set multiplot layout 1,2 title 'Three BLAS libraries under NumPy and PyTorch  ·  $cpu, BLAS threads: $threads'"
    else echo "set title 'Three BLAS libraries under NumPy  ·  $cpu, BLAS threads: $threads'"; fi
    echo "set grid ytics lc rgb '#dddddd'; set key right bottom"
    echo "set title 'NumPy float32 a @ b'; set xlabel 'n (n×n×n)'; set ylabel 'GFLOPS'"
    echo "set logscale x 2; set yrange [0:*]; set offsets graph 0.05, graph 0.05, 0, 0"
    plot_libs numpy "with linespoints pt 7" "with points pt 1"
    if [ $have_mlp = 1 ]; then
        echo "unset logscale x; set xrange [0.4:3.6]; set xtics ('OpenBLAS' 1, 'the book' 2, 'BLIS' 3)"
        echo "set title 'PyTorch, MLP $model: one epoch'; set xlabel ''; set ylabel 'seconds per epoch'"
        echo "set style fill solid 0.5; set boxwidth 0.5; set key off"
        plot_libs mlp "using 1:3 with boxes" "using 1:2 with points pt 1"
        echo "unset multiplot"
    fi
} > "$tmp/plot.gp"
draw "$out" 1000,500
