#!/usr/bin/env python3
"""A stage's kit on the grading platforms.

    tools/platforms.py autograder ROOT STAGE_NAME KIT ZIP
        Gradescope's autograder: ZIP holds setup.sh and run_autograder at its
        root, and kit/ (the kit, stubs in) and solution/ (the kit
        with the book's solutions, the speed reference; students never see
        the zip). setup.sh runs once on Gradescope's Ubuntu 22.04 image, as
        root: the packages, and a user `student` without privileges.
        run_autograder lays the student's files over a copy of the kit, runs
        `make grade FORMAT=gradescope` as that user, and leaves
        results/results.json where Gradescope reads it.
    tools/platforms.py classroom ROOT STAGE_NAME KIT
        GitHub Classroom: KIT/.github/workflows/classroom.yml, one
        autograding-command-grader step per task (`make test TASK=N.M`), then
        autograding-grading-reporter.

run_autograder reads AUTOGRADER_ROOT (default /autograder: source/,
submission/, results/ below it) and GRADE_USER (default student; empty: run
as the caller), so a test can run it in a scratch directory.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import grade_platform  # noqa: E402

# Ubuntu 22.04's names for what a kit's tests and grade need: what
# `tools/deps.sh stage` checks (gcc, make, pkg-config, OpenBLAS, python3,
# zlib, Criterion), each a package of jammy (OpenBLAS and Criterion are in
# its universe component). No pandoc: a kit's tests do not build the book.
PACKAGES = ("build-essential make pkg-config python3 libopenblas-dev libcriterion-dev "
            "zlib1g-dev")
CORRECTNESS, SPEED = grade_platform.CORRECTNESS, grade_platform.SPEED

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, on its Ubuntu 22.04 image.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends {packages}
# The student's code runs as this user, never as root.
id -u student >/dev/null 2>&1 || useradd --create-home --shell /bin/bash student
"""

RUN = r"""#!/usr/bin/env bash
# Gradescope runs this for each submission. It grades stage {num}: the
# student's files over a fresh copy of the kit, `make grade FORMAT=gradescope`
# as an unprivileged user, with the book's solution as the speed reference.
set -uo pipefail
ag=${{AUTOGRADER_ROOT:-/autograder}}
user=${{GRADE_USER-student}}
work=$(mktemp -d)
mkdir -p "$ag/results"
fail() {{
    python3 - "$1" "$ag/results/results.json" <<'PY'
import json, sys
json.dump({{"score": 0, "output": sys.argv[1], "tests": []}}, open(sys.argv[2], "w"))
PY
    exit 0
}}
cp -r "$ag/source/kit" "$work/kit" && cp -r "$ag/source/solution" "$work/solution" ||
    fail "the autograder could not copy its kit"
# The files the tasks are in: from the submission at the same path, or,
# when the student uploaded loose files, by name.
for rel in {files}; do
    if [ -f "$ag/submission/$rel" ]; then
        cp "$ag/submission/$rel" "$work/kit/$rel"
    elif [ -f "$ag/submission/$(basename "$rel")" ]; then
        cp "$ag/submission/$(basename "$rel")" "$work/kit/$rel"
    else
        echo "note: $rel is not in the submission: graded with its stub"
    fi
done
as_user() {{
    if [ -n "$user" ] && [ "$(id -u)" = 0 ]; then
        chown -R "$user" "$work"
        runuser -u "$user" -- env HOME="$work" "$@"
    else
        "$@"
    fi
}}
( cd "$work/solution" && as_user make --no-print-directory -C stages/{name} build >/dev/null 2>&1 ) ||
    fail "the book's solution did not build on this image"
as_user make --no-print-directory -C "$work/kit/stages/{name}" grade FORMAT=gradescope \
    RESULTS_JSON="$work/results.json" GRADE_REFERENCE="$work/solution/stages/{name}" \
    GRADE_ROUNDS="${{GRADE_ROUNDS:-3}}"
[ -s "$work/results.json" ] || fail "the grade wrote no results (the code did not build?)"
cp "$work/results.json" "$ag/results/results.json"
rm -rf "$work"
"""

WORKFLOW_HEAD = """\
# Grades stage {num} on every push: one step per task, its tests
# (`make test TASK=N.M`), then the total. Made by tools/platforms.py.
name: Autograding Tests
'on': [push, repository_dispatch]
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-22.04
    if: github.actor != 'github-classroom[bot]'
    steps:
    - name: Checkout code
      uses: actions/checkout@v4
    - name: Install packages
      run: sudo apt-get update && sudo apt-get install -y --no-install-recommends {packages}
"""

STEP = """\
    - name: task {task}
      id: {id}
      uses: classroom-resources/autograding-command-grader@v1
      with:
        test-name: task {task}
        setup-command: ''
        command: make test TASK={task}
        timeout: 15
        max-score: {score}
"""


def fail(message):
    print(f"platforms: error: {message}", file=sys.stderr)
    sys.exit(1)


def task_files(kit):
    """The kit's files that hold a task's TODO, relative to the kit."""
    found = []
    for base, _, names in os.walk(kit):
        for n in sorted(names):
            path = os.path.join(base, n)
            if n.endswith((".c", ".h")):
                with open(path, errors="replace") as f:
                    if "// TODO task" in f.read():
                        found.append(os.path.relpath(path, kit))
    return sorted(found)


def write_exec(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def autograder(root, name, kit, zip_path):
    files = task_files(kit)
    if not files:
        fail(f"{kit} holds no TODO task: make the kit first (make stage-NN assignment)")
    with tempfile.TemporaryDirectory() as tmp:
        src = tmp  # Gradescope unzips it all into /autograder/source
        shutil.copytree(kit, os.path.join(src, "kit"), ignore=shutil.ignore_patterns("book", "build"))
        shutil.copytree(kit, os.path.join(src, "solution"), ignore=shutil.ignore_patterns("book", "build"))
        run = subprocess.run([sys.executable, os.path.join(HERE, "make_assignment.py"), root, name,
                              os.path.join(src, "solution"), "--restore"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            fail(f"the solutions did not go back into the reference copy: {run.stderr.strip()}")
        write_exec(os.path.join(tmp, "setup.sh"), SETUP.format(packages=PACKAGES))
        write_exec(os.path.join(tmp, "run_autograder"),
                   RUN.format(num=name[:2], name=name, files=" ".join(files)))
        os.makedirs(os.path.dirname(os.path.abspath(zip_path)), exist_ok=True)
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
            for base, _, names in os.walk(tmp):
                for n in sorted(names):
                    path = os.path.join(base, n)
                    info = zipfile.ZipInfo.from_file(path, os.path.relpath(path, tmp))
                    with open(path, "rb") as f:
                        z.writestr(info, f.read(), zipfile.ZIP_DEFLATED)
    print(f"wrote {zip_path}: setup.sh, run_autograder, kit/, solution/; "
          f"the student submits {', '.join(files)}")


def classroom(root, name, kit):
    tasks = grade_platform.tasks_of(kit, name)
    if not tasks:
        fail(f"{kit} has no tests named after a task")
    # Classroom has no reference solution to time against: the points are
    # the tests', shared as the correctness points are.
    share = (CORRECTNESS + SPEED) // len(tasks)
    ids = [f"task-{t.replace('.', '-')}" for t in tasks]
    text = WORKFLOW_HEAD.format(num=name[:2], packages=PACKAGES)
    for task, id_ in zip(tasks, ids):
        text += STEP.format(task=task, id=id_, score=share)
    text += ("    - name: Autograding Reporter\n"
             "      uses: classroom-resources/autograding-grading-reporter@v1\n"
             "      env:\n")
    for id_ in ids:
        text += f"        {id_.upper()}_RESULTS: \"${{{{steps.{id_}.outputs.result}}}}\"\n"
    text += f"      with:\n        runners: {','.join(ids)}\n"
    out = os.path.join(kit, ".github", "workflows", "classroom.yml")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    print(f"wrote {out}: {len(tasks)} task steps, {share} points each")



def main():
    args = sys.argv[1:]
    if len(args) == 5 and args[0] == "autograder":
        autograder(*args[1:])
    elif len(args) == 4 and args[0] == "classroom":
        classroom(*args[1:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
