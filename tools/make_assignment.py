#!/usr/bin/env python3
"""Make a stage's assignment kit, or put the solutions back into one.

    make_assignment.py ROOT STAGE_NAME OUT            write the kit
    make_assignment.py ROOT STAGE_NAME OUT --restore  put the solutions back

The kit is a self-contained tree: the stage, the files of common/, tests/,
tools/ and plots/ that stages 1 to N bring (KIT_FILES below, for a kit of
stage N), the stage's tests, a Makefile and a README. Nothing a later stage
brings is in it, so no file of the kit holds the answer to one of its tasks.

Every region

    // BEGIN SOLUTION task N.M[: what to write]
    ...
    // END SOLUTION

of this stage's tasks (N is the stage number) becomes

    // TODO task N.M: what to write
    <the region's `// stub:` lines, uncommented>
    // END TODO task N.M

which compiles and fails task N.M's tests. Solutions of earlier stages' tasks
stay, without their markers. A region of a later stage's task, in a file an
earlier kit needs, becomes its `// earlier kits:` lines (uncommented): code
that gives the right answer without being the answer, e.g. one thread doing
what the later stage shares among several. Such a region without those lines
is an error, as is a file of common/ that KIT_FILES does not place.
"""
import fnmatch
import os
import re
import shutil
import sys
import textwrap

BEGIN = re.compile(r"^(\s*)//\s*BEGIN SOLUTION task (\d+)\.(\d+)\s*(?::\s*(.*))?$")
END = re.compile(r"^\s*//\s*END SOLUTION\s*$")
STUB = re.compile(r"^(\s*)//\s*stub:\s?(.*)$")
EARLIER = re.compile(r"^(\s*)//\s*earlier kits:\s?(.*)$")
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


def marked(body, pattern):
    """The lines of a region marked `// stub:` (or `// earlier kits:`), uncommented."""
    return [m.group(1) + m.group(2) for m in map(pattern.match, body) if m]


def stub_out(text, stage, path):
    """The kit's version of a file: this stage's solutions cut out, later
    stages' replaced by their `// earlier kits:` code."""
    lines = text.split("\n")
    out, last = [], 0
    for start, end, region_stage, task, hint, indent in regions(lines, path):
        body = lines[start + 1:end]
        out += lines[last:start]
        if region_stage == stage:
            what = hint or "write this part (see the chapter)"
            out.append(f"{indent}// TODO task {stage}.{task}: {what}")
            out += marked(body, STUB)
            out.append(f"{indent}// END TODO task {stage}.{task}")
        elif region_stage > stage:
            earlier = marked(body, EARLIER)
            if not earlier:
                fail(f"{path}:{start + 1}: task {region_stage}.{task} belongs to a later stage "
                     f"than {stage}, but its region has no `// earlier kits:` lines to put "
                     f"in a stage-{stage} kit")
            out.append(f"{indent}// Stage {region_stage} (task {region_stage}.{task}) "
                       f"writes this part; until then:")
            out += earlier
        else:
            out += [l for l in body if not STUB.match(l) and not EARLIER.match(l)]
        last = end + 1
    out += lines[last:]
    return "\n".join(out)


def solutions(text, path):
    """Task id → its regions' solution lines, in file order, from the original
    source (a task may span several regions of a file, e.g. two functions)."""
    lines = text.split("\n")
    found = {}
    for start, end, stage, task, _, _ in regions(lines, path):
        found.setdefault(f"{stage}.{task}", []).append(
            [l for l in lines[start + 1:end] if not STUB.match(l) and not EARLIER.match(l)])
    return found


def restore(kit_text, source_text, path):
    wanted = solutions(source_text, path)
    out, inside = [], None
    for i, line in enumerate(kit_text.split("\n")):
        m = TODO.match(line)
        if inside is None and m:
            inside = f"{m.group(2)}.{m.group(3)}"
            if not wanted.get(inside):
                fail(f"{path}:{i + 1}: no solution for task {inside} in the source")
            out += wanted[inside].pop(0)
        elif inside is not None:
            e = END_TODO.match(line)
            if e and f"{e.group(1)}.{e.group(2)}" == inside:
                inside = None
        else:
            out.append(line)
    if inside is not None:
        fail(f"{path}: TODO task {inside} has no END TODO")
    return "\n".join(out)


# What each stage brings to the kits, besides its own directory (stages/NN_*/)
# and tests (tests/test_NN_*.c): paths from the root, shell patterns allowed.
# The kit of stage N holds what stages 1 to N bring. A file goes with the
# first stage whose code needs it: gemm_parallel.c comes with stage 4 because
# gemm() calls it, its task 5.1 swapped for one thread's loops (see above).
# A new stage adds a line, with its data files or scripts if its kit needs
# them; every file of common/ must appear (check_placed below).
KIT_FILES = {
    1: ["common/README.md", "common/build.mk", "common/stage.mk", "common/base/*",
        "common/harness/*", "common/cli/*", "common/loops/README.md", "common/loops/naive.*",
        "tests/lsan.supp", "tools/deps.sh", "tools/grade.sh", "tools/plot.sh",
        "plots/gflops.gp"],
    2: ["common/loops/tiled.*", "tests/matmul_check.h", "tools/sweep-plot.sh",
        "plots/tile_sweep.gp"],
    3: ["common/loops/simd*"],
    4: ["common/gemm/README.md", "common/gemm/gemm.[ch]", "common/gemm/gemm_parts.h", "common/gemm/gemm_pack.c",
        "common/gemm/gemm_packed.c", "common/gemm/gemm_macro.c", "common/gemm/gemm_operand.c",
        "common/gemm/gemm_kernel.c", "common/gemm/gemm_blocking.c",
        "common/gemm/gemm_kernel_*.c", "common/gemm/gemm_small.c",
        "common/gemm/gemm_parallel.c", "tests/gemm_check.h", "tools/check-layers.sh"],
    5: ["common/gemm/gemm_backend.*", "tools/scaling-plot.sh", "tools/paths-plot.sh"],
    # The Linear layer (ops_layer.c) is chapter 7's op: it sits with the
    # other ops, but comes with stage 7.
    6: ["common/autograd/README.md", "common/autograd/arena.*", "common/autograd/ops.h", "common/autograd/ops_act.c",
        "common/autograd/ops_arith.c", "common/autograd/ops_linear.c",
        "common/autograd/ops_loss.c", "common/autograd/tape.*", "common/autograd/tensor.*",
        "common/autograd/vec*", "tests/golden/autograd_*", "tests/golden.h", "tests/malloc_count.h",
        "tools/autograd-plot.sh", "tools/spirals-plot.sh", "tools/tape-plot.sh"],
    7: ["common/data/*", "common/train.mk", "common/autograd/ops_layer.c", "common/nn/README.md",
        "common/nn/nn.h",
        "common/nn/model.c", "common/nn/mlp.c",
        "common/nn/optim*", "common/nn/train.*", "common/nn/progress.*",
        "common/nn/checkpoint.*", "common/nn/train_run.*", "common/nn/train_flags.*",
        "tests/golden/nn_*", "tests/arrays.h",
        "tests/own_data.h",
        "tools/mlp-plot.sh", "tools/train-plot.sh", "tools/grade-mlp.sh", "tools/grade-train.sh",
        "tools/torch_mlp.py", "tools/torch_peer.py", "tools/compare.py", "datasets/README.md", "datasets/SHA256SUMS", "datasets/sample/*"],
    8: ["common/conv/*", "common/nn/cnn.c", "tests/golden/conv_*", "tools/cnn-plot.sh",
        "tools/grade-cnn.sh", "tools/torch_cnn.py"],
}


def all_files(root, under):
    """Every file below root/under, as a path relative to root."""
    for base, _, names in os.walk(os.path.join(root, under)):
        for name in sorted(names):
            yield os.path.relpath(os.path.join(base, name), root)


def brought_by(rel):
    """The stage whose KIT_FILES line names rel, or None."""
    for stage in sorted(KIT_FILES):
        if any(fnmatch.fnmatchcase(rel, pattern) for pattern in KIT_FILES[stage]):
            return stage
    return None


def check_placed(root):
    """Every file of common/ goes with some stage: a new one must be placed
    in KIT_FILES, or no kit would have it (or every kit would)."""
    loose = [rel for rel in all_files(root, "common") if brought_by(rel) is None]
    if loose:
        fail("KIT_FILES in tools/make_assignment.py names no stage for: " + ", ".join(loose))


def kit_sources(root, stage):
    """The files a kit of this stage copies from root (relative paths)."""
    wanted = []
    for stage_from in sorted(KIT_FILES):
        if stage_from > stage:
            break
        for pattern in KIT_FILES[stage_from]:
            directory = os.path.dirname(pattern) or "."
            found = [rel for rel in all_files(root, directory)
                     if fnmatch.fnmatchcase(rel, pattern)]
            if not found:
                fail(f"KIT_FILES: nothing matches {pattern}")
            wanted += [rel for rel in found if rel not in wanted]
    return wanted


def copy_file(src, dst):
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

{grade}

Where the environment holds OpenBLAS to a slower path than your CPU
runs (`OPENBLAS_CORETYPE=Haswell` on an AVX-512 CPU, say), `make bench` and
`make grade` say so, and print the command that lifts it; a percentage of
OpenBLAS measured that way flatters your code.

A test for an instruction set your CPU lacks (the AVX-512 tasks on an
AVX2-only machine, say) is skipped, not failed: `make test` says which, and
why. Such a task can only be checked on a machine that has the instructions.
"""


def grade_paragraph(grade):
    """What `make grade` scores, from the GRADE_* lines of the stage Makefile."""
    kernels = grade.get("GRADE_KERNELS", "")
    if "$(" in kernels:
        # Per architecture: GRADE_KERNELS_x86_64, GRADE_KERNELS_aarch64, ...
        kernels = " or ".join(f"{v} ({k[len('GRADE_KERNELS_'):]})"
                              for k, v in grade.items() if k.startswith("GRADE_KERNELS_"))
    if kernels.strip():
        what = f"your kernels ({kernels}) at n = {grade.get('GRADE_SIZE', '?')}"
    else:
        what = "your code (no kernel of this stage is timed alone)"
    text = (f"`make grade` scores {what} in the build its Makefile declares, the same for "
            f"everyone: {grade['GRADE_BUILD']}. Its report says what it measured, on which machine "
            "(CPU, cores, instruction set) and against which OpenBLAS.")
    return textwrap.fill(text, width=78)


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

    check_placed(root)
    if os.path.exists(out):
        shutil.rmtree(out)
    shutil.copytree(stage_dir, os.path.join(out, "stages", name))
    test = os.path.join("tests", f"test_{name}.c")
    for rel in kit_sources(root, stage) + [test]:
        copy_file(os.path.join(root, rel), os.path.join(out, rel))

    tasks = {}
    for path in kit_files(out):
        with open(path) as f:
            text = f.read()
        rel = os.path.relpath(path, out)
        for start, end, region_stage, task, hint, _ in regions(text.split("\n"), rel):
            if region_stage == stage:
                tasks.setdefault(f"{stage}.{task}", []).append(
                    f"{hint or 'see the chapter'} ({rel})")
        with open(path, "w") as f:
            f.write(stub_out(text, stage, rel))
    if not tasks:
        fail(f"stage {name} has no solution regions for tasks {stage}.*")

    grade = {}
    with open(os.path.join(stage_dir, "Makefile")) as f:
        for line in f:
            m = re.match(r"^(GRADE_\w+)\s*:?=\s*(.*?)\s*$", line)
            if m:
                grade[m.group(1)] = m.group(2)
    if "GRADE_BUILD" not in grade:
        fail(f"stages/{name}/Makefile declares no GRADE_BUILD (the one build `make grade` scores)")
    title = name.split("_", 1)[1].replace("_", " ")
    listed = "\n".join(f"- **Task {t}**: {'; '.join(parts)}"
                       for t, parts in sorted(tasks.items()))
    with open(os.path.join(out, "Makefile"), "w") as f:
        f.write(MAKEFILE.format(num=f"{stage:02d}", name=name))
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(README.format(num=f"{stage:02d}", stage=stage, title=title, tasks=listed,
                              grade=grade_paragraph(grade)))
    print(f"wrote {out}: {len(tasks)} task(s): {', '.join(sorted(tasks))}")


if __name__ == "__main__":
    main()
