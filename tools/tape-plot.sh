#!/bin/sh
# tape-plot.sh: a tape written by `run_spirals --dot FILE`, drawn by
# Graphviz's dot when it is installed (Debian: graphviz), else as text: the
# file's nodes and edges, one line each, drawn by gnuplot.
#   tools/tape-plot.sh IN.dot OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
[ $# -eq 2 ] || { echo "usage: tools/tape-plot.sh IN.dot OUT_BASENAME" >&2; exit 2; }
in=$1; out=$2
[ -r "$in" ] || { echo "error: tape-plot.sh: cannot read $in" >&2; exit 1; }
head -n 1 "$in" | grep -q '^digraph tape' ||
    { echo "error: tape-plot.sh: $in is not a tape written by --dot" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
if command -v dot >/dev/null 2>&1; then
    dot -Tsvg "$in" -o "$out.svg"
    dot -Tpng -Gdpi=110 "$in" -o "$out.png"
    exit 0
fi
command -v gnuplot >/dev/null 2>&1 ||
    { echo "error: neither dot (apt-get install graphviz) nor gnuplot (apt-get install gnuplot-nox) found" >&2; exit 1; }
echo "note: Graphviz's dot not found (apt-get install graphviz): drawing the tape as text" >&2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tape.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# One line per node, newest first, as the file lists them: "9: cross_entropy
# <- 200×2  -> 1".
awk '
    / \[shape=ellipse/ { id = $1; match($0, /label="[^"]*"/); lab[id] = substr($0, RSTART + 7, RLENGTH - 8) }
    / \[shape=box/ { match($0, /label="[^"]*"/); op[$1] = substr($0, RSTART + 7, RLENGTH - 8); order[++n] = $1 }
    / -> / { sub(/;$/, "", $3); if ($1 ~ /^n/) outs[$1] = lab[$3]; else ins[$3] = ins[$3] (ins[$3] == "" ? "" : ", ") lab[$1] }
    END { for (i = 1; i <= n; i++) { k = order[i]; printf "%s   (%s)  ->  %s\n", op[k], ins[k], outs[k] } }
' "$in" > "$tmp/lines"
lines=$(wc -l < "$tmp/lines")
{
    echo "set termoption noenhanced; unset border; unset tics; unset key"
    echo "set xrange [0:1]; set yrange [0:$((lines + 1))]"
    echo "set title 'The tape, newest node first (tape_backward walks it in this order)'"
    awk -v n="$lines" '{ gsub(/\x27/, ""); printf "set label %d \"%s\" at 0.02,%d font \"monospace,11\"\n", NR, $0, n + 1 - NR }' "$tmp/lines"
    echo "plot NaN"
} > "$tmp/script"
{ echo "set terminal svg size 800,$((40 + 22 * lines)) font 'sans,12' background '#ffffff'"; echo "set output '$out.svg'"; cat "$tmp/script"; } | gnuplot
{ echo "set terminal pngcairo size 800,$((40 + 22 * lines)) font 'sans,10'"; echo "set output '$out.png'"; cat "$tmp/script"; } | gnuplot
