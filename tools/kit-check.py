#!/usr/bin/env python3
"""Prove that no assignment kit, and no student edition of the book, hands
out the answer to a task.

    tools/kit-check.py [STAGE_NAME...]    every kit (default: every stage)
    tools/kit-check.py --book FILE...     the student edition (.html, .epub)

For each stage it writes the kit (tools/make_assignment.py) into a temporary
directory and checks that
  - no file of the kit holds the answer to one of the stage's tasks, by the
    rules of tools/answers.py: most of its statements modulo names (copied),
    a line of it word for word in code, comment or text (key line), or a
    function that is the answer when the answer is one call of it (helper);
  - no file that a later stage brings (KIT_FILES) is in the kit, so a later
    stage's version of the same loops (the micro-kernels of stage 4 are
    chapter 3's kernels grown up) cannot leak in under another name.
With --book it checks that the files hold no answer of any task: not its
text (whitespace removed), and not by the rules above.
Prints one line per stage or file and exits 1 if anything leaks.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ left in tools/
import answers  # noqa: E402
import make_assignment as kits  # noqa: E402


def check_stage(name, common, every):
    stage = int(name.split("_")[0])
    problems = []
    if not any(a.stage == stage for a in every):
        return [f"stage {name} has no solution regions to check"]
    with tempfile.TemporaryDirectory() as tmp:
        kit = os.path.join(tmp, name)
        run = subprocess.run([sys.executable, os.path.join(HERE, "make_assignment.py"), ROOT,
                              name, kit], capture_output=True, text=True)
        if run.returncode != 0:
            return [f"the kit maker failed: {run.stderr.strip()}"]
        for rel in kits.all_files(kit, "."):
            later = kits.brought_by(os.path.normpath(rel))
            if later is not None and later > stage:
                problems.append(f"{os.path.normpath(rel)} is brought by stage {later}, "
                                "a later stage")
        for task, where, finding in answers.check_kit(ROOT, kit, stage, common, every):
            problems.append(f"holds the answer to task {task} ({where}): {finding}")
    return problems


def main():
    args = sys.argv[1:]
    common, every = answers.idioms(ROOT), answers.answers(ROOT)
    if args and args[0] == "--book":
        if len(args) < 2:
            print(__doc__, file=sys.stderr)
            sys.exit(2)
        bad = 0
        for path in args[1:]:
            if not os.path.isfile(path):
                print(f"kit-check: error: {path}: no such file", file=sys.stderr)
                sys.exit(2)
            found = answers.check_book(ROOT, [path], common, every)
            for task, where, finding in found:
                print(f"kit-check: {path}: holds the answer to task {task} ({where}): {finding}",
                      file=sys.stderr)
            if found:
                bad = 1
            else:
                tasks = sorted({a.task for a in every}, key=lambda t: tuple(map(int, t.split("."))))
                print(f"kit-check: {path}: no answer to any of {len(tasks)} tasks")
        sys.exit(bad)
    names = args or sorted(d for d in os.listdir(os.path.join(ROOT, "stages"))
                           if re.match(r"^\d\d_", d))
    bad = 0
    for name in names:
        problems = check_stage(name, common, every)
        if problems:
            bad = 1
            for p in problems:
                print(f"kit-check: {name}: {p}", file=sys.stderr)
        else:
            stage = int(name.split("_")[0])
            tasks = sorted({a.task for a in every if a.stage == stage})
            print(f"kit-check: {name}: no answer to {', '.join(tasks)} anywhere in the kit")
    sys.exit(bad)


if __name__ == "__main__":
    main()
