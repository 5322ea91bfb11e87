#!/usr/bin/env python3
"""Make a stage's assignment kit, or put the solutions back into one.

    make_assignment.py ROOT STAGE_NAME OUT            write the kit
    make_assignment.py ROOT STAGE_NAME OUT --restore  put the solutions back

The kit is a self-contained tree: the stage, common/, the stage's tests, the
tools they use, a Makefile and a README. Every region

    // BEGIN SOLUTION task N.M[: what to write]
    ...
    // END SOLUTION

of this stage's tasks (N is the stage number) becomes

    // TODO task N.M: what to write
    <the region's `// stub:` lines, uncommented>
    // END TODO task N.M

which compiles and fails task N.M's tests. Solutions of other stages' tasks
stay, without their markers.
"""
import os
import re
import shutil
import sys

BEGIN = re.compile(r"^(\s*)//\s*BEGIN SOLUTION task (\d+)\.(\d+)\s*(?::\s*(.*))?$")
END = re.compile(r"^\s*//\s*END SOLUTION\s*$")
STUB = re.compile(r"^(\s*)//\s*stub:\s?(.*)$")
TODO = re.compile(r"^(\s*)//\s*TODO task (\d+)\.(\d+)\b")
END_TODO = re.compile(r"^\s*//\s*END TODO task (\d+)\.(\d+)\s*$")

SOURCE_ENDINGS = (".c", ".h")


def fail(message):
    print(f"make_assignment: error: {message}", file=sys.stderr)
    sys.exit(1)


def regions(lines, path):
    """Yield (start, end, stage, task, hint, indent) for each solution region."""
    start = None
    for i, line in enumerate(lines):
        m = BEGIN.match(line)
        if m:
            if start is not None:
                fail(f"{path}:{i + 1}: BEGIN SOLUTION inside another region")
            start, head = i, m
        elif END.match(line):
            if start is None:
                fail(f"{path}:{i + 1}: END SOLUTION without BEGIN")
            indent, stage, task, hint = head.group(1), int(head.group(2)), head.group(3), head.group(4)
            yield start, i, stage, task, hint, indent
            start = None
    if start is not None:
        fail(f"{path}:{start + 1}: BEGIN SOLUTION without END")


def stub_out(text, stage, path):
    """The kit's version of a file: this stage's solutions cut out."""
    lines = text.split("\n")
    out, last = [], 0
    for start, end, region_stage, task, hint, indent in regions(lines, path):
        body = lines[start + 1:end]
        out += lines[last:start]
        if region_stage == stage:
            what = hint or "write this part (see the chapter)"
            out.append(f"{indent}// TODO task {stage}.{task}: {what}")
            out += [STUB.match(l).group(1) + STUB.match(l).group(2) for l in body if STUB.match(l)]
            out.append(f"{indent}// END TODO task {stage}.{task}")
        else:
            out += [l for l in body if not STUB.match(l)]
        last = end + 1
    out += lines[last:]
    return "\n".join(out)


def solutions(text, path):
    """Task id → the region's solution lines, from the original source."""
    lines = text.split("\n")
    found = {}
    for start, end, stage, task, _, _ in regions(lines, path):
        found[f"{stage}.{task}"] = [l for l in lines[start + 1:end] if not STUB.match(l)]
    return found


def restore(kit_text, source_text, path):
    wanted = solutions(source_text, path)
    out, inside = [], None
    for i, line in enumerate(kit_text.split("\n")):
        m = TODO.match(line)
        if inside is None and m:
            inside = f"{m.group(2)}.{m.group(3)}"
            if inside not in wanted:
                fail(f"{path}:{i + 1}: no solution for task {inside} in the source")
            out += wanted[inside]
        elif inside is not None:
            e = END_TODO.match(line)
            if e and f"{e.group(1)}.{e.group(2)}" == inside:
                inside = None
        else:
            out.append(line)
    if inside is not None:
        fail(f"{path}: TODO task {inside} has no END TODO")
    return "\n".join(out)


def copy_tree(src, dst):
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)
    elif os.path.exists(src):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)


def kit_files(out):
    for base, _, names in os.walk(out):
        for name in names:
            if name.endswith(SOURCE_ENDINGS):
                yield os.path.join(base, name)


MAKEFILE = """\
# Assignment: stage {num} of From Matmul to MNIST.
#   make          build          make test     run the tests (TASK=N.M for one task)
#   make bench    benchmark      make grade    tests passed and speed against OpenBLAS
STAGE := stages/{name}

.PHONY: all build test bench run grade plot clean deps
all build: deps
\t@$(MAKE) --no-print-directory -C $(STAGE) build
test: deps
\t@$(MAKE) --no-print-directory -C $(STAGE) test
bench run grade plot clean:
\t@$(MAKE) --no-print-directory -C $(STAGE) $@
deps:
\t@tools/deps.sh test
"""

README = """\
# Stage {num} assignment: {title}

This is one stage of *From Matmul to MNIST*, with the code you are to write cut
out. Read chapter {stage} of the book first; it explains every task.

## Your tasks

{tasks}

Each task is a `// TODO task N.M` comment in the source, ending at
`// END TODO task N.M`. Write your code between the two lines. The code around
it compiles as it is, and the task's tests fail until your code is right.

## Commands

    make                  build (installs missing Debian packages, or says what to install)
    make test             run every test; the last line counts what passed
    make test TASK={stage}.1   run one task's tests
    make bench            time your kernels against OpenBLAS and the machine's peak
    make grade            tests passed, and your speed as a percentage of OpenBLAS

The tests compare your result with a double-precision reference, element by
element, at awkward sizes (1, 7, 17, 65, 127, 300, non-square). A failure
names the element, your value, the right one, and how far past the rounding
error bound you are.

A test for an instruction set your CPU lacks (the AVX-512 tasks on an
AVX2-only machine, say) is skipped, not failed: `make test` says which, and
why. Such a task can only be checked on a machine that has the instructions.
"""


def main():
    args = sys.argv[1:]
    if len(args) not in (3, 4) or (len(args) == 4 and args[3] != "--restore"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    root, name, out = args[:3]
    stage_dir = os.path.join(root, "stages", name)
    if not os.path.isdir(stage_dir):
        fail(f"no stage directory {stage_dir}")
    stage = int(name.split("_")[0])

    if len(args) == 4:
        restored = 0
        for path in kit_files(out):
            rel = os.path.relpath(path, out)
            with open(path) as f:
                text = f.read()
            if not TODO.search(text) and "// TODO task" not in text:
                continue
            with open(os.path.join(root, rel)) as f:
                source = f.read()
            with open(path, "w") as f:
                f.write(restore(text, source, rel))
            restored += 1
        print(f"restored the solutions in {restored} file(s) of {out}")
        return

    if os.path.exists(out):
        shutil.rmtree(out)
    copy_tree(stage_dir, os.path.join(out, "stages", name))
    copy_tree(os.path.join(root, "common"), os.path.join(out, "common"))
    copy_tree(os.path.join(root, "tests", f"test_{name}.c"), os.path.join(out, "tests", f"test_{name}.c"))
    for header in os.listdir(os.path.join(root, "tests")):
        if header.endswith((".h", ".supp")):
            copy_tree(os.path.join(root, "tests", header), os.path.join(out, "tests", header))
    copy_tree(os.path.join(root, "tests", "golden"), os.path.join(out, "tests", "golden"))
    for tool in ("deps.sh", "grade.sh", "plot.sh", "sweep-plot.sh", "scaling-plot.sh",
                 "autograd-plot.sh"):
        copy_tree(os.path.join(root, "tools", tool), os.path.join(out, "tools", tool))
    for script in ("gflops.gp", "tile_sweep.gp"):
        copy_tree(os.path.join(root, "plots", script), os.path.join(out, "plots", script))

    tasks = {}
    for path in kit_files(out):
        with open(path) as f:
            text = f.read()
        rel = os.path.relpath(path, out)
        for start, end, region_stage, task, hint, _ in regions(text.split("\n"), rel):
            if region_stage == stage:
                tasks.setdefault(f"{stage}.{task}", (hint or "see the chapter", rel))
        with open(path, "w") as f:
            f.write(stub_out(text, stage, rel))
    if not tasks:
        fail(f"stage {name} has no solution regions for tasks {stage}.*")

    title = name.split("_", 1)[1].replace("_", " ")
    listed = "\n".join(f"- **Task {t}** ({where}): {hint}"
                       for t, (hint, where) in sorted(tasks.items()))
    with open(os.path.join(out, "Makefile"), "w") as f:
        f.write(MAKEFILE.format(num=f"{stage:02d}", name=name))
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(README.format(num=f"{stage:02d}", stage=stage, title=title, tasks=listed))
    print(f"wrote {out}: {len(tasks)} task(s): {', '.join(sorted(tasks))}")


if __name__ == "__main__":
    main()
