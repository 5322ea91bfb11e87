#!/usr/bin/env python3
"""A stage's grade as a grading platform reads it: one test per task, and the
speed of the student's code against the book's solution timed in the same run.

    tools/grade_platform.py STAGE_DIR [--format text|gradescope] [--out FILE]
                            [--reference DIR] [--rounds K] [--factor F]
                            [--kernels LIST] [--size N] [--speed-only 1]

STAGE_DIR is the stage of a kit (or of the repository). The rubric:
  - correctness, CORRECTNESS points: each task's tests (`make test TASK=N.M`)
    the same share; a task passes when every test of it that this CPU can
    run passes. A task none of whose tests this CPU can run (AVX-512 code on
    an AVX2 machine) is worth 0 points here, and says so.
  - speed, SPEED points, only when every task passes: the code the tasks ask
    for, timed by tools/grade-probe.sh, best of K runs, in turns with the
    book's solution (--reference: that stage's directory in a tree with the
    solutions in; the autograder has one, a kit does not). Full marks within
    F times the solution's time (default 1.2), then in proportion:
    SPEED · min(1, F · reference / yours).
Stage 06 is graded on its tests alone (all the points are correctness).
--format gradescope writes Gradescope's results.json (tests[] with name,
score, max_score, output, visibility; a leaderboard) to --out; text prints
the same lines. The exit status is 0 when every task passes. --speed-only 1
skips the tests and takes them as passed (for a test of the speed score).
"""
import json
import os
import re
import subprocess
import sys

CORRECTNESS, SPEED = 80, 20
HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message):
    print(f"grade: error: {message}", file=sys.stderr)
    sys.exit(2)


def tasks_of(root, name):
    """The stage's tasks, in order, from the names of its tests."""
    path = os.path.join(root, "tests", f"test_{name}.c")
    try:
        with open(path) as f:
            found = re.findall(r"^Test\(task_(\d+)_(\d+),", f.read(), re.M)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    tasks = sorted({(int(a), int(b)) for a, b in found})
    return [f"{a}.{b}" for a, b in tasks]


def run_task(stage_dir, task):
    """(tested, passing, skipped_for_isa, log tail) of one task's tests."""
    env = dict(os.environ, CRITERION_VERBOSITY_LEVEL="1")
    run = subprocess.run(["make", "--no-print-directory", "-C", stage_dir, "test", f"TASK={task}"],
                         capture_output=True, text=True, env=env)
    log = run.stdout + run.stderr
    m = re.findall(r"Synthesis: Tested: (\d+) \| Passing: (\d+)", log)
    if not m:
        return 0, 0, 0, "the tests did not build or run:\n" + "\n".join(log.splitlines()[-20:])
    tested, passing = map(int, m[-1])
    skipped = len([l for l in log.splitlines() if l.startswith("[SKIP]") and "cannot run" in l])
    lines = [l for l in log.splitlines() if re.match(r"^\[(FAIL|----|SKIP)\]", l)]
    return tested, passing, skipped, "\n".join(lines[:30])


def probe(stage_dir, stage, kernels, size):
    """Seconds of one timing of stage_dir's graded code, or None."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(stage_dir)))
    tool = os.path.join(root, "tools", "grade-probe.sh")
    if not os.path.exists(tool):
        tool = os.path.join(HERE, "grade-probe.sh")
    run = subprocess.run([tool, "make", stage, kernels, size], cwd=stage_dir,
                         capture_output=True, text=True)
    m = re.search(r"^seconds: ([0-9.eE+-]+)$", run.stdout, re.M)
    if run.returncode != 0 or not m:
        return None, (run.stderr or run.stdout).strip()
    return float(m.group(1)), ""


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    stage_dir, opts = args[0], {"--format": "text", "--out": None, "--reference": None,
                                "--rounds": "3", "--factor": "1.2", "--kernels": "",
                                "--size": "", "--speed-only": ""}
    rest = args[1:]
    while rest:
        if rest[0] not in opts or len(rest) < 2:
            fail(f"bad argument {rest[0]!r} (see tools/grade_platform.py's header)")
        opts[rest[0]] = rest[1]
        rest = rest[2:]
    if opts["--format"] not in ("text", "gradescope"):
        fail(f"--format {opts['--format']}: text or gradescope")
    if opts["--format"] == "gradescope" and not opts["--out"]:
        fail("--format gradescope needs --out FILE")
    try:
        rounds, factor = int(opts["--rounds"]), float(opts["--factor"])
    except ValueError:
        fail("--rounds takes a whole number, --factor a number")
    if rounds < 1 or factor < 1:
        fail("--rounds is at least 1, --factor at least 1")
    stage_dir = os.path.abspath(stage_dir)
    name = os.path.basename(stage_dir)
    if not re.match(r"^\d\d_", name) or not os.path.isdir(stage_dir):
        fail(f"{stage_dir} is not a stage directory (stages/NN_name)")
    stage = name[:2]
    root = os.path.dirname(os.path.dirname(stage_dir))
    tasks = tasks_of(root, name)
    timed = stage != "06"
    correctness = CORRECTNESS if timed else CORRECTNESS + SPEED

    tests, all_pass = [], True
    runnable = []
    results = {}
    for task in tasks:
        results[task] = (1, 1, 0, "") if opts["--speed-only"] else run_task(stage_dir, task)
        tested, passing, skipped, _ = results[task]
        if tested > 0 or not skipped:
            runnable.append(task)
    share = correctness / len(runnable) if runnable else 0
    for task in tasks:
        tested, passing, skipped, log = results[task]
        if task not in runnable:
            tests.append({"name": f"task {task}", "score": 0, "max_score": 0,
                          "output": f"not graded here: every test of task {task} needs an "
                                    f"instruction set this CPU lacks\n{log}",
                          "visibility": "visible"})
            continue
        ok = tested > 0 and passing == tested
        all_pass &= ok
        note = f"{passing} of {tested} tests pass" + (
            f", {skipped} skipped for instructions this CPU lacks" if skipped else "")
        tests.append({"name": f"task {task}", "score": round(share if ok else 0, 4),
                      "max_score": round(share, 4),
                      "output": note + ("\n" + log if log and not ok else ""),
                      "visibility": "visible"})

    leaderboard = []
    if timed:
        speed = {"name": "speed", "score": 0, "max_score": SPEED, "visibility": "visible"}
        if not all_pass:
            speed["output"] = "no speed score: every task's tests must pass first"
        else:
            mine, ref, why = [], [], ""
            for _ in range(rounds):  # in turns, so both see the same minutes
                s, err = probe(stage_dir, stage, opts["--kernels"], opts["--size"])
                if s is None:
                    why = err
                    break
                mine.append(s)
                if opts["--reference"]:
                    r, err = probe(opts["--reference"], stage, opts["--kernels"], opts["--size"])
                    if r is None:
                        why = "the reference solution did not run: " + err
                        break
                    ref.append(r)
            if why:
                speed["output"] = f"no speed score: {why}"
            elif not ref:
                speed["max_score"] = 0
                speed["output"] = (f"yours: {min(mine):.6f} s (best of {rounds}); no speed "
                                   "score here: it needs the book's solution beside your code "
                                   "(the course's autograder has it)")
            else:
                ratio = min(ref) / min(mine)
                speed["score"] = round(SPEED * min(1.0, factor * ratio), 4)
                speed["output"] = (
                    f"yours {min(mine):.6f} s, the book's solution {min(ref):.6f} s (best of "
                    f"{rounds} each, in turns): {ratio:.2f} times its speed; full marks within "
                    f"{factor:g} times its time, then in proportion")
                leaderboard = [{"name": "speed (times the book's solution)",
                                "value": round(ratio, 4), "order": "desc"},
                               {"name": "seconds", "value": round(min(mine), 6), "order": "asc"}]
        tests.append(speed)

    total = round(sum(t["score"] for t in tests), 4)
    possible = round(sum(t["max_score"] for t in tests), 4)
    summary = (f"stage {stage}: {total:g} of {possible:g} points (correctness "
               f"{correctness} points shared by the tasks" +
               (f", speed {SPEED}" if timed else "") + ")")
    if opts["--format"] == "gradescope":
        out = {"score": total, "output": summary, "visibility": "visible",
               "stdout_visibility": "visible", "tests": tests}
        if leaderboard:
            out["leaderboard"] = leaderboard
        os.makedirs(os.path.dirname(os.path.abspath(opts["--out"])), exist_ok=True)
        with open(opts["--out"], "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
        print(f"wrote {opts['--out']}")
    for t in tests:
        first = t.get("output", "").split("\n")[0]
        print(f"{t['name']}: {t['score']:g} of {t['max_score']:g}: {first}")
    print(summary)
    sys.exit(0 if all_pass else 1)


if __name__ == "__main__":
    main()
