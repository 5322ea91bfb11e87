#!/usr/bin/env python3
"""The header rows of the results files, read from where they are declared
once: common/base/schemas.c, the strings the C programs write. The Python
tools import this module instead of spelling a header out again; the plot
scripts read the same file (tools/plot-lib.sh, `schema`).

    tools/schema.py NAME     print schema NAME's header row (gemm, train,
                             train_val, speed)
"""
import os
import re
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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tools/schema.py NAME")
    try:
        print(header(sys.argv[1]))
    except KeyError as e:
        sys.exit(f"error: {e.args[0]}")
