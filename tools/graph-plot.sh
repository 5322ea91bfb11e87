#!/bin/sh
# graph-plot.sh: a lazy graph written by `run_compiled --dot FILE` (chapter
# 9's drawing of one layer), drawn by Graphviz's dot when it is installed
# (Debian: graphviz), else as text: one line per node, its inputs after it,
# drawn by gnuplot.
#   tools/graph-plot.sh IN.dot OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
[ $# -eq 2 ] || { echo "usage: tools/graph-plot.sh IN.dot OUT_BASENAME" >&2; exit 2; }
in=$1; out=$2
[ -r "$in" ] || { echo "error: graph-plot.sh: cannot read $in" >&2; exit 1; }
head -n 1 "$in" | grep -q '^digraph lazy' ||
    { echo "error: graph-plot.sh: $in is not a graph written by run_compiled --dot" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
if command -v dot >/dev/null 2>&1; then
    dot -Tsvg "$in" -o "$out.svg"
    dot -Tpng -Gdpi=110 "$in" -o "$out.png"
    exit 0
fi
command -v gnuplot >/dev/null 2>&1 ||
    { echo "error: neither dot (apt-get install graphviz) nor gnuplot (apt-get install gnuplot-nox) found" >&2; exit 1; }
echo "note: Graphviz's dot not found (apt-get install graphviz): drawing the graph as text" >&2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/graph.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# One line per node, in the order the graph made them: "n9  add 64×256  <- n7, n8".
awk '
    / \[label=/ { id = $1; match($0, /label="[^"]*"/); lab[id] = substr($0, RSTART + 7, RLENGTH - 8)
                  sub(/\\n/, "  ", lab[id]); order[++n] = id }
    / -> / { sub(/;$/, "", $3); ins[$3] = ins[$3] (ins[$3] == "" ? "" : ", ") $1 }
    END { for (i = 1; i <= n; i++) { k = order[i]
              printf "%-5s %-24s%s\n", k, lab[k], ins[k] == "" ? "" : "<- " ins[k] } }
' "$in" > "$tmp/lines"
lines=$(wc -l < "$tmp/lines")
{
    echo "set termoption noenhanced; unset border; unset tics; unset key"
    echo "set xrange [0:1]; set yrange [0:$((lines + 1))]"
    echo "set title 'The graph, one node a line, inputs first (each node lists the nodes it reads)'"
    awk -v n="$lines" '{ gsub(/\x27/, ""); gsub(/"/, ""); printf "set label %d \"%s\" at 0.02,%d font \"monospace,11\"\n", NR, $0, n + 1 - NR }' "$tmp/lines"
    echo "plot NaN"
} > "$tmp/script"
{ echo "set terminal svg size 800,$((40 + 22 * lines)) font 'sans,12' background '#ffffff'"; echo "set output '$out.svg'"; cat "$tmp/script"; } | gnuplot
{ echo "set terminal pngcairo size 800,$((40 + 22 * lines)) font 'sans,10'"; echo "set output '$out.png'"; cat "$tmp/script"; } | gnuplot
