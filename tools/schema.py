#!/usr/bin/env python3
"""The header rows of the results files, read from where they are declared
once: common/base/schemas.c, the strings the C programs write. The Python
tools import this module instead of spelling a header out again; the plot
scripts read the same file (tools/plot-lib.sh, `schema`). The `#` lines
above the header come from one place too, machine_write in
common/base/machine.c: a tool takes them from a program of ours
(machine_lines).

    tools/schema.py NAME     print schema NAME's header row (gemm, train,
                             train_val, speed)
"""
import os
import re
import shlex
import subprocess
import sys

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "common", "base", "schemas.c")


def header(name):
    """The header row of schema NAME (SCHEMA_NAME in schemas.c)."""
    with open(SOURCE, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r'const char SCHEMA_%s\[\] =\s*((?:"[^"]*"\s*)+);' % name.upper(), text)
    if not m:
        raise KeyError(f"{SOURCE} declares no schema {name}")
    return "".join(re.findall(r'"([^"]*)"', m.group(1)))


def machine_lines(program):
    """The `#` lines our results files start with (the machine, the
    compiler, the peaks, the commit and run), as the program of ours that
    `program` names prints them with --machine. A file a tool writes starts
    with them, so it says where it was measured as every other file does.
    The program runs in this process's environment, not a peer's (no
    LD_PRELOAD). Raises RuntimeError when it fails."""
    cmd = shlex.split(program) + ["--machine"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise RuntimeError(f"{cmd[0]}: {e.strerror}") from None
    lines = [line + "\n" for line in done.stdout.splitlines()]
    if done.returncode != 0 or not lines or not all(line.startswith("# ") for line in lines):
        raise RuntimeError(f"{' '.join(cmd)} printed no machine lines (exit status "
                           f"{done.returncode}): {done.stderr.strip()}")
    return lines


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tools/schema.py NAME")
    try:
        print(header(sys.argv[1]))
    except KeyError as e:
        sys.exit(f"error: {e.args[0]}")
