#!/bin/sh
# tape-plot.sh: a graph in Graphviz's language, drawn by Graphviz's dot when
# it is installed (Debian: graphviz), else as text, one line per node, drawn
# by gnuplot. Two kinds of file:
#   a tape written by `run_spirals --dot FILE` (chapter 6): each op with its
#     inputs and output, newest first, the order the backward walks them;
#   a lazy graph written by `run_compiled --dot FILE` (chapter 10): each node
#     with the nodes it reads, in the order the graph made them.
#   tools/tape-plot.sh IN.dot OUT_BASENAME   → OUT_BASENAME.svg and .png
set -eu
[ $# -eq 2 ] || { echo "usage: tools/tape-plot.sh IN.dot OUT_BASENAME" >&2; exit 2; }
in=$1; out=$2
[ -r "$in" ] || { echo "error: tape-plot.sh: cannot read $in" >&2; exit 1; }
# The file starts with the machine lines of every results file ("# ...",
# which Graphviz skips); the graph begins on the first line after them.
kind=$(grep -v '^#' "$in" | head -n 1 | sed -n 's/^digraph \(tape\|lazy\) .*/\1/p')
[ -n "$kind" ] ||
    { echo "error: tape-plot.sh: $in is not a graph written by run_spirals --dot or run_compiled --dot" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
if command -v dot >/dev/null 2>&1; then
    dot -Tsvg "$in" -o "$out.svg"
    dot -Tpng -Gdpi=110 "$in" -o "$out.png"
    exit 0
fi
# Without dot, gnuplot draws it (plot-lib.sh says when that is missing too).
what=tape; [ "$kind" = tape ] || what=graph
echo "note: Graphviz's dot not found (apt-get install graphviz): drawing the $what as text" >&2
. "$(dirname "$0")/plot-lib.sh"
plot_begin "$@"
if [ "$kind" = tape ]; then
    # One line per node, newest first, as the file lists them: "9: cross_entropy
    # <- 200×2  -> 1".
    title='The tape, newest node first (tape_backward walks it in this order)'
    awk '
        /^#/ { next }
        / \[shape=ellipse/ { id = $1; match($0, /label="[^"]*"/); lab[id] = substr($0, RSTART + 7, RLENGTH - 8) }
        / \[shape=box/ { match($0, /label="[^"]*"/); op[$1] = substr($0, RSTART + 7, RLENGTH - 8); order[++n] = $1 }
        / -> / { sub(/;$/, "", $3); if ($1 ~ /^n/) outs[$1] = lab[$3]; else ins[$3] = ins[$3] (ins[$3] == "" ? "" : ", ") lab[$1] }
        END { for (i = 1; i <= n; i++) { k = order[i]; printf "%s   (%s)  ->  %s\n", op[k], ins[k], outs[k] } }
    ' "$in" > "$tmp/lines"
else
    # One line per node, in the order the graph made them: "n9  add  64×256  <- n7, n8".
    title='The graph, one node a line, inputs first (each node lists the nodes it reads)'
    awk '
        /^#/ { next }
        / \[label=/ { id = $1; match($0, /label="[^"]*"/); lab[id] = substr($0, RSTART + 7, RLENGTH - 8)
                      sub(/\\n/, "  ", lab[id]); order[++n] = id }
        / -> / { sub(/;$/, "", $3); ins[$3] = ins[$3] (ins[$3] == "" ? "" : ", ") $1 }
        END { for (i = 1; i <= n; i++) { k = order[i]
                  printf "%-5s %-24s%s\n", k, lab[k], ins[k] == "" ? "" : "<- " ins[k] } }
    ' "$in" > "$tmp/lines"
fi
lines=$(wc -l < "$tmp/lines")
{
    echo "set termoption noenhanced; unset border; unset tics; unset key"
    echo "set xrange [0:1]; set yrange [0:$((lines + 1))]"
    echo "set title '$title'"
    awk -v n="$lines" '{ gsub(/\x27/, ""); gsub(/"/, ""); printf "set label %d \"%s\" at 0.02,%d font \"monospace,11\"\n", NR, $0, n + 1 - NR }' "$tmp/lines"
    echo "plot NaN"
} > "$tmp/plot.gp"
draw "$out" 800,$((40 + 22 * lines)) 12 fixed >/dev/null
