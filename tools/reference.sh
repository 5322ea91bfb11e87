#!/bin/sh
# reference.sh: `make reference`, the one run that makes every results file
# the book reads, on one machine, into plots/data/.
#
#   tools/reference.sh            run every step, then copy what they wrote
#   tools/reference.sh --plan     print the steps: budget, command, files
#   tools/reference.sh --files    print every file the run writes, one a line
#
# Environment: DRY=1 prints the plan and the run id and runs nothing;
# QUICK=1 runs each step's smallest version (make's QUICK=1, one epoch,
# one round) and copies into build/reference-quick/ instead, so the book's
# data stays as it is; STEPS=3,7-9 runs only those steps (a run cut short
# goes on where it stopped: give it the same RUN_ID); OUT=DIR copies there.
#
# One run id names the whole run (date, host, commit, made once here) and
# reaches every program through the environment (RUN_ID; RUN_COMMIT the
# commit measured): each results file's `#` lines carry both, and
# `make check-book` holds the book to one run id. OpenBLAS runs on its best
# path for the CPU (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset).
#
# The budgets are the minutes each step took in the last two runs of
# 2026-11-29 on two cores of an AMD EPYC Zen 3 (AVX2, about 95 GFLOPS a core),
# the longer of the two to the nearest minute: 72 minutes in all, where the
# runs took 63 and 66. The GEMM sweeps of stages 03 to 05 and the Strassen
# study differ most between runs (stage 04: 9:33 and 10:12, 7:02 in a run
# before them), as their slow rounds are measured again, and they take half
# of it: three rounds at every size, and on that virtual machine many rounds
# ran slow by the yardstick. A step that overruns its budget by half says so
# in its progress line.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
MAKE=${MAKE:-make}

# step | budget in minutes | make arguments | files it writes in build/results
steps() {
    cat <<'EOF'
build, datasets|1|build && datasets|
stage-01 bench|5|stage-01 bench FULL=1|stage-01.csv
stage-02 bench, tile sweep|2|stage-02 bench FULL=1 && stage-02 run|stage-02.csv stage-02-sweep.csv
stage-03 bench|4|stage-03 bench FULL=1|stage-03.csv
stage-04 bench (with its staircase), blocking|10|stage-04 bench FULL=1 && stage-04 run|stage-04.csv stage-04-blocking.csv stage-04-staircase.csv
stage-05 bench, scaling, paths|12|stage-05 bench FULL=1 && stage-05 scaling && stage-05 paths|stage-05.csv stage-05-shapes.csv stage-05-scaling.csv stage-05-paths.csv
stage-05 strassen|8|stage-05 strassen|stage-05-strassen.csv stage-05-strassen-error.csv
stage-05 preload|2|stage-05 preload|stage-05-preload.csv stage-05-preload-mlp.csv stage-05-preload-calls.csv stage-05-preload-profile.csv
stage-06 bench, spirals|1|stage-06 bench && stage-06 run|stage-06.csv stage-06-spirals.csv stage-06-boundary.csv stage-06-tape.dot
stage-07 bench|1|stage-07 bench|stage-07.csv stage-07-breakdown.csv stage-07-memory.csv stage-07-lifetimes.csv stage-07-step.csv
stage-07 run|1|stage-07 run|stage-07-train.csv
stage-07 compare, profile|3|stage-07 compare && stage-07 profile|stage-07-compare.csv stage-07-compare-train.csv stage-07-torch-profile.csv
stage-07 inspect, seeds|1|stage-07 inspect && stage-07 seeds|stage-07-val.csv stage-07-confusion.csv stage-07-wrong.csv stage-07-templates.csv stage-07-seeds.csv
stage-08 bench|3|stage-08 bench|stage-08.csv stage-08-layers.csv stage-08-errors.csv stage-08-fusion.csv stage-08-bandwidth.csv stage-08-memory.csv stage-08-lifetimes.csv stage-08-layout.csv
stage-08 paths|2|stage-08 paths|stage-08-implicit.csv stage-08-winograd.csv
stage-08 run|2|stage-08 run|stage-08-train.csv
stage-08 compare, profile|9|stage-08 compare && stage-08 profile|stage-08-compare.csv stage-08-compare-train.csv stage-08-torch-profile.csv
stage-08 decay|2|stage-08 decay|stage-08-decay.csv
stage-08 memory, inspect|1|stage-08 memory && stage-08 inspect|stage-08-rss-arena.csv stage-08-rss-planned.csv stage-08-filters.csv stage-08-maps.csv stage-08-confusion.csv
stage-09 bench, run|1|stage-09 bench && stage-09 run|stage-09.csv stage-09-steps.csv stage-09-kernels.csv stage-09-bytes.csv stage-09-train.csv
stage-09 seeds, kernels|1|stage-09 seeds && stage-09 kernels|stage-09-seeds.csv stage-09-kernels.txt stage-09-graph.dot
EOF
}

plan() {
    steps | awk -F'|' '
        { n++; total += $2; cmd = $3; gsub(/&& /, "\\&\\& make ", cmd)
          printf "  %2d  %3d min  %-36s make %s\n", n, $2, $1, cmd }
        END { printf "      %3d min  in all (%d steps)\n", total, n }'
}

case ${1:-} in
    --plan) plan; exit 0 ;;
    --files) steps | cut -d'|' -f4 | tr ' ' '\n' | sed '/^$/d'; exit 0 ;;
    '') ;;
    *) echo "usage: tools/reference.sh [--plan | --files]" >&2; exit 2 ;;
esac

# Which steps to run: STEPS=3,7-9, else all.
n_steps=$(steps | wc -l)
if [ -n "${STEPS:-}" ] && ! echo "$STEPS" | grep -q -x -E '[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*'; then
    echo "error: reference: STEPS=$STEPS: give step numbers and ranges, e.g. STEPS=3,7-9 (1-$n_steps)" >&2
    exit 2
fi
wanted() {
    [ -n "${STEPS:-}" ] || return 0
    echo "$STEPS" | tr ',' '\n' | awk -F- -v i="$1" '
        NF == 1 && $1 == i { found = 1 }
        NF == 2 && i >= $1 && i <= $2 { found = 1 }
        END { exit found ? 0 : 1 }'
}

# The commit measured; "-dirty" when the code has changes not committed. The
# run's own results in plots/data/ do not count: a run cut short and resumed
# with STEPS= measures the same code.
commit=$(git -C "$root" describe --always --abbrev=12 --exclude '*' 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] &&
   [ -n "$(git -C "$root" status --porcelain --untracked-files=no -- . ':!plots/data' 2>/dev/null)" ]; then
    commit=$commit-dirty
fi
RUN_COMMIT=${RUN_COMMIT:-$commit}
RUN_ID=${RUN_ID:-$(date -u +%Y-%m-%dT%H%MZ)-$(hostname -s 2>/dev/null || echo host)-$RUN_COMMIT}
export RUN_ID RUN_COMMIT
results=$root/build/results
if [ -n "${QUICK:-}" ]; then
    OUT=${OUT:-$root/build/reference-quick}
    export QUICK EPOCHS=1 ROUNDS=1 SEEDS=1,2 LRS=0.001 INSPECT_EPOCHS=1
else
    OUT=${OUT:-$root/plots/data}
fi

echo "reference: run $RUN_ID (commit $RUN_COMMIT) -> $OUT"
case $RUN_COMMIT in
    *-dirty) echo "reference: warning: the tree has changes not committed;" \
                  "make check-book cannot tell whether these results are stale" >&2 ;;
esac
if [ -n "${DRY:-}" ]; then
    plan
    echo "reference: DRY=1: nothing run"
    exit 0
fi
if [ -z "${QUICK:-}" ] && [ -z "${STEPS:-}" ]; then
    # Our programs measure the peak afresh: nothing from another run. A run
    # resumed with STEPS= keeps the peak its first steps were measured with.
    rm -f "$root/build/peak.csv"
fi

mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

# "i budget" of each step this run takes
budgets=$(steps | awk -F'|' '{ print NR, $2 }' | while read -r j b; do
    if wanted "$j"; then echo "$j $b"; fi; done)

start=$(date +%s)
i=0 spent_budget=0
steps > "${TMPDIR:-/tmp}/reference-steps.$$"
trap 'rm -f "${TMPDIR:-/tmp}/reference-steps.$$"' EXIT
while IFS='|' read -r name budget args files; do
    i=$((i + 1))
    wanted "$i" || continue
    now=$(date +%s); elapsed=$((now - start))
    # What is left: the budgets of this step and the ones after it, scaled
    # by how the steps so far kept to theirs.
    left=$(echo "$budgets" | awk -v i="$i" -v e="$elapsed" -v b="$spent_budget" \
        '$1 >= i { s += $2 * 60 } END { printf "%d", (b > 0 ? s * e / b : s) }')
    echo "reference: step $i of $n_steps: $name (budget $budget min), elapsed $(mmss "$elapsed"), estimate left $(mmss "$left")"
    for f in $files; do rm -f "$results/$f"; done
    t0=$(date +%s)
    # "a && b": one make per part, each with OpenBLAS on its best path
    [ -z "${QUICK:-}" ] || args=$(echo "$args" | sed 's/ FULL=1//g')
    echo "$args" | tr '&' '\n' | sed '/^ *$/d' | while read -r part; do
        # shellcheck disable=SC2086
        env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $MAKE --no-print-directory -C "$root" $part \
                </dev/null ||
            { echo "reference: step $i ($name) failed: make $part" >&2; exit 1; }
    done
    took=$(($(date +%s) - t0))
    spent_budget=$((spent_budget + budget * 60))
    missing=
    for f in $files; do [ -f "$results/$f" ] || missing="$missing $f"; done
    if [ -n "$missing" ]; then
        echo "reference: step $i ($name) did not write:$missing" >&2
        exit 1
    fi
    over=
    [ "$took" -le $((budget * 90)) ] || over=" (over its budget by half)"
    echo "reference: step $i of $n_steps done in $(mmss "$took")$over"
    mkdir -p "$OUT"
    for f in $files; do cp "$results/$f" "$OUT/$f"; done
done < "${TMPDIR:-/tmp}/reference-steps.$$"

echo "reference: run $RUN_ID done in $(mmss $(($(date +%s) - start))); results in $OUT"
# Files left in OUT that no step writes: not from this run.
stale=$(cd "$OUT" && ls | grep -v -x -F "$("$here/reference.sh" --files)" || true)
if [ -n "$stale" ]; then
    echo "reference: $OUT also holds files no step writes (not from this run):" >&2
    echo "$stale" | sed 's/^/  /' >&2
fi
