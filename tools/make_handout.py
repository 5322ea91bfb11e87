#!/usr/bin/env python3
"""The class's handout: the whole repository with every answer taken out, and
each stage's kit beside it, to release on its own date.

    tools/make_handout.py ROOT OUT [--book DIR]

OUT/repository is the repository's tracked files (git ls-files) with
  - every task's solution region replaced by its stub, as the kits and the
    student edition of the book show it (tools/make_assignment.py);
  - chapters/answers/ (the exercises' answers) left out;
  - the tests that need the solutions left out of tests/test_common.c: the
    kits' round trips and leak checks (which hold answers as the leaks they
    must find) and the check that the reader's edition holds answers;
  - with --book, the student edition of the book in book/.
OUT/kits/NN_name is each stage's kit (tools/make_assignment.py): the kit of
stage N holds the solutions of stages before N, so release each after the
deadline of the one before.
Then every task's answer is looked for in OUT/repository by the kits' rules
(tools/answers.py); it exits 1, naming each, if one is found. The repository
is the class's from the first week, so a later stage's code that repeats an
earlier task's answer is a leak too when it holds the answer itself: its
statements in their order, or SHARED_LINES or more of its lines in one file
(the five loops of task 4.3 in the fused Strassen, say; those lines are
marked as the task's solution there, or call the task's function). Fewer of
its lines in a later stage's code (the first pass's beta in the implicit
GEMM, the tape's bias lines in a convolution: statements the later code
needs for its own work) are listed as notes, not failures.
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import answers  # noqa: E402
import make_assignment as kits  # noqa: E402

# A later stage's file holding this many lines of one earlier answer holds
# the answer (see the header).
SHARED_LINES = 3

# Tests of tests/test_common.c that need the solutions: a suite, or suite/name.
NEEDS_SOLUTIONS = ("kit", "book/the_student_edition_holds_no_answer")
HELPERS = ("round_trip",)  # static functions only those tests call


def fail(message):
    print(f"make_handout: error: {message}", file=sys.stderr)
    sys.exit(1)


def without_solution_tests(text):
    """test_common.c without the tests that need the solutions, each with the
    comment above it."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^Test\((\w+),\s*(\w+)", lines[i])
        h = re.match(r"^static \w+ (\w+)\(", lines[i])
        drop = (m and (m.group(1) in NEEDS_SOLUTIONS or
                       f"{m.group(1)}/{m.group(2)}" in NEEDS_SOLUTIONS)) or \
               (h and h.group(1) in HELPERS)
        if not drop:
            out.append(lines[i])
            i += 1
            continue
        while out and out[-1].startswith("//"):
            out.pop()  # its comment
        while i < len(lines) and lines[i] != "}":
            i += 1
        i += 1
        if i < len(lines) and lines[i] == "" and out and out[-1] == "":
            i += 1
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    book = None
    if len(args) == 4 and args[2] == "--book":
        book, args = args[3], args[:2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    root, out = (os.path.abspath(a) for a in args)
    files = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if files.returncode != 0:
        fail(f"{root} is not a git repository: {files.stderr.strip()}")
    if os.path.exists(out):
        shutil.rmtree(out)
    repo = os.path.join(out, "repository")
    copied = 0
    for rel in files.stdout.split("\n"):
        if not rel or rel.startswith("chapters/answers/") or not os.path.isfile(
                os.path.join(root, rel)):
            continue
        dst = os.path.join(repo, rel)
        kits.copy_file(os.path.join(root, rel), dst)
        copied += 1
        if rel.endswith(kits.SOURCE_ENDINGS) and not rel.startswith("tests/book/"):
            with open(dst) as f:
                text = f.read()
            if rel == "tests/test_common.c":
                text = without_solution_tests(text)
            with open(dst, "w") as f:
                f.write(kits.stub_out(text, None, rel))
    if book:
        for ext in ("html", "epub", "pdf"):
            b = os.path.join(book, f"book.{ext}")
            if not os.path.exists(b):
                fail(f"no student edition of the book: {b} (make book EDITION=student)")
            kits.copy_file(b, os.path.join(repo, "book", os.path.basename(b)))

    stages = sorted(d for d in os.listdir(os.path.join(root, "stages")) if re.match(r"^\d\d_", d))
    for name in stages:
        cmd = [sys.executable, os.path.join(HERE, "make_assignment.py"), root, name,
               os.path.join(out, "kits", name)] + (["--book", book] if book else [])
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            fail(f"the kit of {name}: {run.stderr.strip()}")

    common, every = answers.idioms(root), answers.answers(root)
    problems, later = [], {}
    for stage in sorted({a.stage for a in every if a.stage > 0}):
        for task, where, finding in answers.check_kit(root, repo, stage, common, every):
            line = f"holds the answer to task {task} ({where}): {finding}"
            # A later stage's code that repeats a line or two of an earlier
            # task's answer: no kit of the task's stage holds that file.
            path = finding.split(":")[0]
            brought = kits.brought_by(path)
            if brought is not None and brought > stage:
                later.setdefault((task, where, path), []).append(line)
            else:
                problems.append(line)
    notes = []
    for found in later.values():
        whole = any("% of its statements" in f for f in found)
        (problems if whole or len(found) >= SHARED_LINES else notes).extend(found)
    leftovers = subprocess.run(["grep", "-rlE", "--include=*.[ch]", r"^\s*//\s*BEGIN SOLUTION task [1-9]",
                                repo], capture_output=True, text=True).stdout.split()
    problems += [f"{os.path.relpath(p, repo)}: a solution marker is left" for p in leftovers]
    if book:
        for ext in ("html", "epub"):
            problems += [f"book/book.{ext}: holds the answer to task {t} ({w}): {f}"
                         for t, w, f in answers.check_book(
                             root, [os.path.join(repo, "book", f"book.{ext}")], common, every)]
    for p in notes:
        print(f"make_handout: note: in a later stage's code: {p}")
    if notes:
        print(f"make_handout: note: {len(notes)} line(s) above repeat fewer than {SHARED_LINES} "
              "lines of an earlier task's answer in a later stage's code, which needs them for "
              "its own work: not the answer (a file holding its statements in order, or "
              f"{SHARED_LINES} of its lines, fails); no kit of the task's stage holds the file")
    for p in problems:
        print(f"make_handout: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    tasks = sorted({a.task for a in every if a.stage > 0},
                   key=lambda t: tuple(map(int, t.split("."))))
    print(f"wrote {repo}: {copied} files, no answer to any of {len(tasks)} tasks in it")
    print(f"wrote {os.path.join(out, 'kits')}: {', '.join(stages)} (release each after the "
          "one before: a kit holds the solutions of the stages before it)")


if __name__ == "__main__":
    main()
