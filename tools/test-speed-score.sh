#!/bin/sh
# The speed scores of stages 08 and 09 time the student's code: a copy of the
# tree whose task code is made slower (a busy loop put into col2im and the
# max-pool backward, tasks 8.2 and 8.3; into every elementwise kernel the
# generator of task 9.2 writes) scores less than the same copy unchanged, each against
# the repository's own stage as the book's solution. Timings are short and
# noisy, so the slowdown is large (several times a step).
#   tools/test-speed-score.sh [08|09]...
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
die() { echo "test-speed-score: $*" >&2; exit 1; }

score() {  # score TREE STAGE_NAME: the speed points against the repository's stage
    python3 "$root/tools/grade_platform.py" "$1/stages/$2" --format gradescope \
        --out "$tmp/r.json" --speed-only 1 --rounds 2 --reference "$root/stages/$2" \
        >"$tmp/log" 2>&1
    python3 - "$tmp/r.json" <<'PY' || { cat "$tmp/log" >&2; return 1; }
import json, sys
print([t for t in json.load(open(sys.argv[1]))["tests"] if t["name"] == "speed"][0]["score"])
PY
}

for stage in ${*:-08 09}; do
    name=$(cd "$root/stages" && ls -d "${stage}"_* | head -n 1)
    tree="$tmp/tree-$stage"
    mkdir -p "$tree"
    cp -r "$root/common" "$root/stages" "$root/tests" "$root/tools" "$root/plots" \
          "$root/datasets" "$tree/" || die "copy"
    full=$(score "$tree" "$name") || die "stage $stage: no score for the copy as it is"
    case $stage in
        08) # every call of col2im and of the max-pool backward spins first
            sed -i '/BEGIN SOLUTION task 8.2: add each/a\                for (volatile long z = 0; z < 20000; z++) {}' \
                "$tree/common/conv/im2col.c"
            sed -i '/BEGIN SOLUTION task 8.3/a\        for (volatile long z = 0; z < 200000; z++) {}' \
                "$tree/common/conv/pool.c" ;;
        09) # every generated kernel spins first
            sed -i '/BEGIN SOLUTION task 9.2/a\    line(G, "for (volatile long z_ = 0; z_ < 200000; z_++) {}");' \
                "$tree/common/lazy/lazy_codegen.c" ;;
        *) die "stage $stage: no slower variant here" ;;
    esac
    cmp -s "$root/common/conv/im2col.c" "$tree/common/conv/im2col.c" &&
        cmp -s "$root/common/lazy/lazy_codegen.c" "$tree/common/lazy/lazy_codegen.c" &&
        die "stage $stage: the slower variant was not put in"
    slow=$(score "$tree" "$name") || die "stage $stage: no score for the slower copy"
    echo "stage $stage: speed score $full of 20 as it is, $slow slowed"
    grep "yours" "$tmp/r.json" | sed "s/^ */  slowed: /"
    awk -v f="$full" -v s="$slow" 'BEGIN { exit !(s < f - 2) }' ||
        die "stage $stage: the slower code did not score less"
done
echo "test-speed-score: ok"
