"""What tools/torch_golden_06.py, _07.py and _08.py share: the golden-file
format the tests read (tests/golden.h), and where the files go.

A file starts with '#' lines (which test reads it, the script that wrote it,
the torch version, the seed, the problem and its shapes); then for each
tensor a line 'NAME NDIM D1 .. Dn' and a line of its values, row-major,
'%.9g' (integers as integers).
"""
import os
import sys

try:
    import torch
except ImportError:
    sys.exit("error: PyTorch is not installed for this python.\n"
             "hint: apt-get install python3-torch, then run /usr/bin/python3 " + sys.argv[0])


def write(f, name, t):
    t = t.detach()
    dims = " ".join(str(d) for d in t.shape)
    f.write(f"{name} {t.dim()} {dims}\n")
    values = t.reshape(-1).tolist()
    if t.dtype in (torch.int64, torch.int32):
        f.write(" ".join(str(int(v)) for v in values) + "\n")
    else:
        f.write(" ".join(f"{v:.9g}" for v in values) + "\n")


def header(f, test, seed, what):
    """The '#' lines: test is the test file that reads it, what the problem's
    lines. The script is the one being run."""
    script = "tools/" + os.path.basename(sys.argv[0])
    f.write(f"# golden values for {test}, written by {script}\n")
    f.write(f"# torch: {torch.__version__}  seed: {seed}\n")
    for line in what:
        f.write(f"# {line}\n")


def uniform(g, *shape):
    """Uniform in [-1, 1), from generator g."""
    return torch.rand(*shape, generator=g) * 2 - 1


def out_dir():
    """The first argument, else tests/golden beside this script."""
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.normpath(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden"))
    os.makedirs(out, exist_ok=True)
    return out
