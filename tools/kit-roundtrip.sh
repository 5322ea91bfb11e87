#!/bin/sh
# Proves a stage's kit works: it builds, each task's tests fail on the stubs,
# and they pass once the solutions are put back.
#   tools/kit-roundtrip.sh 01_naive
# The kit's tests build without the sanitizers (make test runs them over the
# same code in the repository), and only the stage's task tests run, so the
# round trips of every stage fit in `make test`.
set -u
name="$1"
root=$(cd "$(dirname "$0")/.." && pwd)
kit=$(mktemp -d)/"$name"
trap 'rm -rf "$(dirname "$kit")"' EXIT
# The kit's own test build, without the sanitizers.
kmake() { make -s -C "$kit/stages/$name" MODE=test SANITIZE= "$@"; }

python3 "$root/tools/make_assignment.py" "$root" "$name" "$kit" || exit 1
# No leftovers of the solutions in the kit.
if grep -rn 'BEGIN SOLUTION\|END SOLUTION' "$kit" >/dev/null; then
    echo "kit-roundtrip: solution markers left in the kit" >&2; exit 1
fi
# The kit must build its tests with the stubs in place.
kmake test-build >"$kit.log" 2>&1 ||
    { tail -n 30 "$kit.log"; echo "kit-roundtrip: the kit does not build" >&2; exit 1; }
stage=$(echo "$name" | sed 's/^0*\([0-9]*\)_.*/\1/')
tasks=$(grep -rho "TODO task $stage\.[0-9]*" "$kit" | sed 's/TODO task //' | sort -u)
for task in $tasks; do
    if CRITERION_VERBOSITY_LEVEL=1 kmake test TASK="$task" >"$kit.log" 2>&1; then
        # A task whose every test was skipped because this CPU lacks its
        # instruction set (the AVX-512 tasks on an AVX2 machine) cannot be
        # graded here; any other pass on a stub is a broken kit.
        tag="task_$(echo "$task" | tr . _)::"
        if grep -q 'Synthesis: Tested: 0 ' "$kit.log" &&
           grep "\[SKIP\] $tag" "$kit.log" | grep -q 'cannot run'; then
            echo "task $task: not checked here: $(grep "\[SKIP\] $tag" "$kit.log" | head -n 1 | sed 's/.*: //')"
            continue
        fi
        echo "kit-roundtrip: task $task's tests pass on the stub" >&2; exit 1
    fi
    echo "stub for task $task fails its tests, as it should"
done
python3 "$root/tools/make_assignment.py" "$root" "$name" "$kit" --restore || exit 1
# Every task of the stage, solved: their tests pass (TASK=N.* runs them all).
kmake test TASK="$stage.*" >"$kit.log" 2>&1 ||
    { tail -n 30 "$kit.log"; echo "kit-roundtrip: tests fail with the solutions back" >&2; exit 1; }
grep 'Synthesis' "$kit.log"
echo "kit-roundtrip: $name ok"
