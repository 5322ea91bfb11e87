#!/bin/sh
# merge-results.sh: a stage's results CSV, plus the carried kernels
# (plots/carried.txt) of every earlier stage found beside it, on one thread.
#   tools/merge-results.sh DIR/stage-NN.csv > merged.csv
set -eu
[ $# -eq 1 ] || { echo "usage: tools/merge-results.sh DIR/stage-NN.csv" >&2; exit 2; }
in=$1
[ -r "$in" ] || { echo "error: merge-results.sh: cannot read $in" >&2; exit 1; }
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(dirname "$in")
this=$(basename "$in" .csv)
cat "$in"
grep -v '^#' "$here/plots/carried.txt" | while read -r name kernels; do
    # Only earlier stages: names sort in stage order.
    [ -n "$name" ] && [ "$name" \< "$this" ] || continue
    [ -r "$dir/$name.csv" ] || continue
    for kernel in $kernels; do
        grep "^$kernel,[^,]*,1," "$dir/$name.csv" || true
    done
done
