#!/usr/bin/env python3
"""Prove that no assignment kit hands out the answer to one of its tasks.

    tools/kit-check.py [STAGE_NAME...]      (default: every stage)

For each stage it writes the kit (tools/make_assignment.py) into a temporary
directory and checks that
  - no solution region of the stage's own tasks survives anywhere in the kit:
    no 3 consecutive significant lines of a region's body (fewer if the body
    is shorter) appear in any file of the kit. Significant lines are those
    left after dropping blank lines, lone braces, bare `else`, `break;`,
    `continue;` and `return;`, and comments (markers are comments too);
    whitespace is ignored, so re-indenting a copy does not hide it;
  - no file that a later stage brings (KIT_FILES) is in the kit, so a later
    stage's version of the same loops (the micro-kernels of stage 4 are
    chapter 3's kernels grown up) cannot leak in under another name.
Prints one line per stage and exits 1 on the first kind of leak found.
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
import make_assignment as kits  # noqa: E402

WINDOW = 3
# Lines that carry no code of their own: blank, lone braces, bare jumps.
TRIVIAL = re.compile(r"^\s*(?:[{}();,\s]*|(?:}\s*)?else(?:\s*{)?|break;|continue;|return;)\s*$")
COMMENT = re.compile(r"^\s*(//|/\*|\*)")


def significant(lines):
    """The lines that carry code, whitespace removed, each with its number."""
    out = []
    for number, line in enumerate(lines, 1):
        if TRIVIAL.match(line) or COMMENT.match(line):
            continue
        out.append((number, re.sub(r"\s+", "", line)))
    return out


def windows(lines, size):
    """Every run of `size` consecutive significant lines (one run if fewer)."""
    sig = [text for _, text in lines]
    if not sig:
        return set()
    size = min(size, len(sig))
    return {tuple(sig[i:i + size]) for i in range(len(sig) - size + 1)}


def own_regions(stage):
    """(task, file, body lines) of every solution region of this stage's tasks."""
    found = []
    for top in ("common", "stages", "tests"):
        for rel in kits.all_files(ROOT, top):
            if not rel.endswith(kits.SOURCE_ENDINGS) or rel.startswith("tests/book/"):
                continue
            with open(os.path.join(ROOT, rel)) as f:
                lines = f.read().split("\n")
            for start, end, region_stage, task, _, _ in kits.regions(lines, rel):
                if region_stage == stage:
                    found.append((f"{stage}.{task}", rel, lines[start + 1:end]))
    return found


def check_stage(name):
    stage = int(name.split("_")[0])
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        kit = os.path.join(tmp, name)
        run = subprocess.run([sys.executable, os.path.join(HERE, "make_assignment.py"), ROOT,
                              name, kit], capture_output=True, text=True)
        if run.returncode != 0:
            return [f"the kit maker failed: {run.stderr.strip()}"]

        kit_lines = {}
        for rel in kits.all_files(kit, "."):
            rel = os.path.normpath(rel)
            try:
                with open(os.path.join(kit, rel)) as f:
                    kit_lines[rel] = significant(f.read().split("\n"))
            except UnicodeDecodeError:
                continue  # a binary file holds no C
            later = kits.brought_by(rel)
            if later is not None and later > stage:
                problems.append(f"{rel} is brought by stage {later}, a later stage")

        for task, source, body in own_regions(stage):
            wanted = windows(significant(body), WINDOW)
            for rel, lines in kit_lines.items():
                size = min(WINDOW, len(next(iter(wanted)))) if wanted else WINDOW
                for i in range(len(lines) - size + 1):
                    run_of = tuple(text for _, text in lines[i:i + size])
                    if run_of in wanted:
                        problems.append(f"{rel}:{lines[i][0]}: holds the answer to task {task} "
                                        f"({source}): {lines[i][1]}")
                        break
        if not own_regions(stage):
            problems.append(f"stage {name} has no solution regions to check")
    return problems


def main():
    names = sys.argv[1:] or sorted(d for d in os.listdir(os.path.join(ROOT, "stages"))
                                   if re.match(r"^\d\d_", d))
    bad = 0
    for name in names:
        problems = check_stage(name)
        if problems:
            bad = 1
            for p in problems:
                print(f"kit-check: {name}: {p}", file=sys.stderr)
        else:
            tasks = sorted({t for t, _, _ in own_regions(int(name.split("_")[0]))})
            print(f"kit-check: {name}: no answer to {', '.join(tasks)} anywhere in the kit")
    sys.exit(bad)


if __name__ == "__main__":
    main()
