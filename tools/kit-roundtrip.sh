#!/bin/sh
# Proves a stage's kit works: it builds, each task's tests fail on the stubs,
# and they pass once the solutions are put back. Both halves are graded as
# Gradescope grades them (make grade FORMAT=gradescope, one test per task and
# the speed test): the stubs' results.json valid by the spec's fields, every
# task 0, no speed score; the solution's every task in full and a speed
# score, timed against itself as the reference (the speed test here proves
# the stage's timing runs, not how fast it is).
#   tools/kit-roundtrip.sh 01_naive
# The kit's tests build without the sanitizers (make test runs them over the
# same code in the repository), the speed probe reuses the tests' objects,
# and only the stage's task tests run, so the round trips of every stage fit
# in `make test`. tools/test-platforms.sh runs the whole autograder on one.
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
[ -n "$tasks" ] || { echo "kit-roundtrip: no TODO in the kit" >&2; exit 1; }
# The stage's grade, as results.json: valid, and the scores EXPECT says
# (tools/check-results-json.py's --expect-tests and --expect-speed).
grade() {
    json="$kit.$1.json"; shift
    kmake grade FORMAT=gradescope RESULTS_JSON="$json" GRADE_ROUNDS=1 "$@" >"$kit.log" 2>&1
    [ -s "$json" ] || { tail -n 30 "$kit.log"; echo "kit-roundtrip: the grade wrote no results.json" >&2; exit 1; }
}
# Each task's tests fail on its stub. A task whose every test was skipped
# because this CPU lacks its instruction set (the AVX-512 tasks on an AVX2
# machine) cannot be graded here (the grade gives it no points and says so);
# any other pass on a stub is a broken kit.
grade stubs
python3 "$root/tools/check-results-json.py" "$kit.stubs.json" --expect-tests zero \
    --expect-speed none >"$kit.scores" ||
    { tail -n 30 "$kit.log"; echo "kit-roundtrip: the stubs' results.json (above)" >&2; exit 1; }
python3 - "$kit.stubs.json" $tasks <<'PY' || exit 1
import json, sys
tests = {t["name"]: t for t in json.load(open(sys.argv[1]))["tests"]}
for task in sys.argv[2:]:
    t = tests.get(f"task {task}")
    if t is None:
        sys.exit(f"kit-roundtrip: task {task} has a TODO but no test in the grade")
    if t["max_score"] == 0:
        print(f"task {task}: not checked here: {t['output'].splitlines()[0]}")
    else:
        print(f"stub for task {task} fails its tests, as it should (0 of {t['max_score']:g})")
PY
python3 "$root/tools/make_assignment.py" "$root" "$name" "$kit" --restore || exit 1
# Every task of the stage, solved: their tests pass, and the speed test
# scores (stage 06 has none: it is graded on its tests alone).
speed=some
[ "$stage" = 6 ] && speed=none
# The GEMM stages time at n = 256 here, not at their grading size: the
# solution is its own reference, so the size changes nothing but the time.
grade solution GRADE_REFERENCE="$kit/stages/$name" GRADE_SIZE=256
python3 "$root/tools/check-results-json.py" "$kit.solution.json" --expect-tests full \
    --expect-speed "$speed" >"$kit.scores" ||
    { tail -n 30 "$kit.log"; echo "kit-roundtrip: the solution's results.json (above)" >&2; exit 1; }
echo "solution: $(tr '\n' ';' <"$kit.scores" | sed 's/;$//; s/;/; /g')"
echo "kit-roundtrip: $name ok"
