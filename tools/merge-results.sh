#!/bin/sh
# merge-results.sh: what a stage's plot draws, as one CSV on stdout:
#   - the stage's own rows at its largest thread count (a stage run on one
#     thread keeps all of them), OpenBLAS's among them;
#   - the previous stage's best kernel on one thread, as one reference line:
#     of the kernels plots/carried.txt lists for that stage, the one fastest
#     at the largest size it ran, when its results are found beside this one.
# The full set stays in the CSV and in the chapter's tables.
#   tools/merge-results.sh DIR/stage-NN.csv > merged.csv
set -eu
[ $# -eq 1 ] || { echo "usage: tools/merge-results.sh DIR/stage-NN.csv" >&2; exit 2; }
in=$1
[ -r "$in" ] || { echo "error: merge-results.sh: cannot read $in" >&2; exit 1; }
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(dirname "$in")
this=$(basename "$in" .csv)

# Rows of the largest thread count (column 3), with the # lines and header.
tmax=$(grep -v '^#' "$in" | tail -n +2 | cut -d, -f3 | sort -n | tail -1)
awk -F, -v t="$tmax" '/^#/ || !header { print; if (!/^#/) header = 1; next } $3 == t' "$in"

# The previous stage: the last one before this in carried.txt's order.
prev=$(grep -v '^#' "$here/plots/carried.txt" | awk -v this="$this" '$1 < this { p = $1 } END { print p }')
[ -n "$prev" ] && [ -r "$dir/$prev.csv" ] || exit 0
kernels=$(grep "^$prev " "$here/plots/carried.txt" | cut -d' ' -f2-)
best=$(grep -v '^#' "$dir/$prev.csv" | awk -F, -v list=" $kernels " '
    index(list, " " $1 " ") && $3 == 1 && $4 == $5 && $5 == $6 {
        if ($4 > size || ($4 == size && $8 > g)) { size = $4; g = $8; k = $1 }
    }
    END { print k }')
[ -n "$best" ] && grep "^$best,[^,]*,1," "$dir/$prev.csv" || true
