#!/bin/sh
# The grading platforms, end to end, on one stage's kit (default 01_naive):
#   - results.json of the stubs: valid by Gradescope's fields, every task 0,
#     no speed score;
#   - the autograder zip, its run_autograder in a scratch directory laid out
#     as Gradescope lays it out (source/, submission/ with the book's
#     solution as the submission, results/): every task full, a speed score;
#   - the Classroom workflow: its YAML parsed, each command-grader step's
#     command run in the kit: each fails on the stubs, passes with the
#     solutions back.
#   tools/test-platforms.sh [STAGE_NAME]
set -u
name=${1:-01_naive}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
kit="$tmp/kit"
die() { echo "test-platforms: $*" >&2; exit 1; }

python3 "$root/tools/make_assignment.py" "$root" "$name" "$kit" >/dev/null || die "no kit"

# The stubs: results.json validates, every task scores 0, no speed score.
make -s -C "$kit/stages/$name" grade FORMAT=gradescope RESULTS_JSON="$tmp/stubs.json" \
    GRADE_ROUNDS=1 >"$tmp/log" 2>&1
[ -s "$tmp/stubs.json" ] || { cat "$tmp/log"; die "the stubs' grade wrote no results.json"; }
python3 "$root/tools/check-results-json.py" "$tmp/stubs.json" --expect-tests zero \
    --expect-speed none || die "the stubs' results.json"
echo "stubs: results.json valid, every task 0, no speed score"

# The autograder, run where Gradescope would run it, but under $tmp/ag.
python3 "$root/tools/platforms.py" autograder "$root" "$name" "$kit" "$tmp/ag.zip" >/dev/null ||
    die "no autograder zip"
mkdir -p "$tmp/ag/source" "$tmp/ag/submission" "$tmp/ag/results"
# unzipped as unzip does it, file modes kept
python3 - "$tmp/ag.zip" "$tmp/ag/source" <<'PY' || die "the zip does not open"
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for i in z.infolist():
    path = z.extract(i, sys.argv[2])
    if i.external_attr >> 16:
        os.chmod(path, (i.external_attr >> 16) & 0o777)
PY
python3 - "$tmp/ag.zip" <<'PY' || die "setup.sh and run_autograder are not at the zip's root, executable"
import sys, zipfile
modes = {i.filename: i.external_attr >> 16 for i in zipfile.ZipFile(sys.argv[1]).infolist()}
assert all(modes.get(f, 0) & 0o111 for f in ("setup.sh", "run_autograder")), modes
PY
grep -q 'useradd' "$tmp/ag/source/setup.sh" || die "setup.sh makes no user to run the code as"
# setup.sh installs every package a kit's build and tests check for
# (tools/deps.sh stage; gcc comes in build-essential): the code runs as a
# user who cannot install what is missing.
for pkg in $(sed -n 's/^\(build\|criterion\)="\(.*\)"$/\2/p' "$root/tools/deps.sh" |
             tr ' ' '\n' | sed 's/:.*//; s/^gcc$/build-essential/'); do
    grep -q "install.* $pkg\( \|$\)" "$tmp/ag/source/setup.sh" ||
        die "setup.sh does not install $pkg, which tools/deps.sh stage checks for"
done
grep -q 'runuser' "$tmp/ag/source/run_autograder" || die "run_autograder does not drop root"
# The submission: the task files with the book's solutions, flat, as a
# student uploads them.
for rel in $(cd "$tmp/ag/source/kit" && grep -rl '// TODO task' --include='*.[ch]' .); do
    cp "$tmp/ag/source/solution/$rel" "$tmp/ag/submission/$(basename "$rel")"
done
AUTOGRADER_ROOT="$tmp/ag" GRADE_USER= GRADE_ROUNDS=1 "$tmp/ag/source/run_autograder" \
    >"$tmp/log" 2>&1
python3 "$root/tools/check-results-json.py" "$tmp/ag/results/results.json" \
    --expect-tests full --expect-speed some || { tail -n 30 "$tmp/log"; die "the autograder's results"; }
echo "autograder: the solution, submitted, scores every task in full and a speed score"

# Classroom: the workflow's steps, run in the kit.
python3 "$root/tools/platforms.py" classroom "$root" "$name" "$kit" >/dev/null || die "no workflow"
python3 - "$kit/.github/workflows/classroom.yml" >"$tmp/steps" <<'PY' || die "the workflow"
import sys
import yaml
doc = yaml.safe_load(open(sys.argv[1]))
steps = doc["jobs"]["run-autograding-tests"]["steps"]
graders = [s for s in steps if s.get("uses", "").startswith("classroom-resources/autograding-command-grader")]
reporter = [s for s in steps if s.get("uses", "").startswith("classroom-resources/autograding-grading-reporter")]
assert graders and len(reporter) == 1, "no grader steps, or no reporter"
ids = reporter[0]["with"]["runners"].split(",")
assert ids == [s["id"] for s in graders], "the reporter's runners are not the steps"
for s in graders:
    w = s["with"]
    assert isinstance(w["command"], str) and int(w["timeout"]) > 0 and int(w["max-score"]) > 0
    assert f"{s['id'].upper()}_RESULTS" in reporter[0]["env"], s["id"]
    print(w["command"])
PY
[ -s "$tmp/steps" ] || die "the workflow has no steps"
while read -r command; do
    (cd "$kit" && sh -c "$command") >/dev/null 2>&1 && die "'$command' passes on the stubs"
done <"$tmp/steps"
python3 "$root/tools/make_assignment.py" "$root" "$name" "$kit" --restore >/dev/null
while read -r command; do
    (cd "$kit" && sh -c "$command") >"$tmp/log" 2>&1 || { tail "$tmp/log"; die "'$command' fails on the solution"; }
done <"$tmp/steps"
echo "classroom: $(wc -l <"$tmp/steps") steps, each failing on its stub and passing solved"
echo "test-platforms: $name ok"
