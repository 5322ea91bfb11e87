#!/usr/bin/python3
"""Golden values for stage 08's convolution and pooling ops, from PyTorch.

    /usr/bin/python3 tools/torch_golden_08.py [OUT_DIR]   (default tests/golden)

Writes small fixed problems that tests/test_08_conv.c reads (no Python
needed to build or test); run it only to regenerate them:
  conv_s1p1.txt  3×3 convolution, stride 1, padding 1: n=2, c=3, 7×9, oc=5;
  conv_s2p0.txt  the same input, stride 2, no padding;
  conv_c1.txt    one input channel, no padding: n=2, c=1, 8×7, oc=4;
  conv_c17.txt   seventeen input channels, padding 1: n=1, c=17, 5×6, oc=3;
  conv_1x1.txt   a 1×1 convolution: n=2, c=6, 5×7, oc=4;
  conv_k23.txt   a 2×3 filter, stride 2, padding 1: n=1, c=2, 7×6, oc=3;
  conv_pool.txt  2×2 max pooling of an odd-sized 2×3×7×9 input (the last
                 row and column dropped) and global average pooling.
Each convolution file holds x, w, bias, dy, y = conv2d(x, w, bias) and the
gradients of Σ y ⊙ dy with respect to x, w and bias.

Needs PyTorch. On Debian 12: apt-get install python3-torch, and run this
with /usr/bin/python3 (another python3 earlier on PATH may not see it).

The format is tools/golden_file.py's: '#' lines are the
header (torch version, seed, problem, shapes); then for each tensor a line
'NAME NDIM D1 .. Dn' and a line of its values, row-major, '%.9g'. Layouts
are PyTorch's and ours: x and y are n×c×h×w, w is oc×c×kh×kw.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in tools/

import golden_file  # noqa: E402  (exits with a hint when PyTorch is missing)
from golden_file import uniform  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SEED = 8
TEST = "tests/test_08_conv.c"  # the test that reads the files

# name, (n, c, h, w), (oc, kh, kw), stride, padding
CONVS = [
    ("conv_s1p1", (2, 3, 7, 9), (5, 3, 3), 1, 1),
    ("conv_s2p0", (2, 3, 7, 9), (5, 3, 3), 2, 0),
    ("conv_c1", (2, 1, 8, 7), (4, 3, 3), 1, 0),
    ("conv_c17", (1, 17, 5, 6), (3, 3, 3), 1, 1),
    ("conv_1x1", (2, 6, 5, 7), (4, 1, 1), 1, 0),
    ("conv_k23", (1, 2, 7, 6), (3, 2, 3), 2, 1),
]


def conv(out, index, name, xs, ws, stride, pad):
    g = torch.Generator().manual_seed(SEED + index)
    n, c, h, w = xs
    oc, kh, kw = ws
    x = uniform(g, n, c, h, w).requires_grad_()
    wt = uniform(g, oc, c, kh, kw).requires_grad_()
    bias = uniform(g, oc).requires_grad_()
    y = F.conv2d(x, wt, bias, stride=stride, padding=pad)
    dy = uniform(g, *y.shape)
    (y * dy).sum().backward()
    shape = lambda t: "×".join(str(d) for d in t.shape)
    with open(os.path.join(out, name + ".txt"), "w") as f:
        golden_file.header(f, TEST, SEED, [
            f"problem: y = conv2d(x, w, bias, stride={stride}, padding={pad}), "
            "backward of dy",
            f"shapes: x {shape(x)}, w {shape(wt)}, bias {oc}, y and dy {shape(y)}"])
        for nm, t in (("x", x), ("w", wt), ("bias", bias), ("dy", dy), ("y", y)):
            golden_file.write(f, nm, t)
        for nm, t in (("x", x), ("w", wt), ("bias", bias)):
            golden_file.write(f, "grad_" + nm, t.grad)


def pool(out):
    g = torch.Generator().manual_seed(SEED + 100)
    x = uniform(g, 2, 3, 7, 9).requires_grad_()
    y = F.max_pool2d(x, 2)
    dy = uniform(g, *y.shape)
    (y * dy).sum().backward()
    max_dx = x.grad.clone()
    x.grad = None
    a = x.mean(dim=(2, 3))
    da = uniform(g, *a.shape)
    (a * da).sum().backward()
    with open(os.path.join(out, "conv_pool.txt"), "w") as f:
        golden_file.header(f, TEST, SEED, [
            "problem: y = max_pool2d(x, 2), backward of dy; a = the mean of each "
            "channel, backward of da",
            "shapes: x 2×3×7×9, y and dy 2×3×3×4, a and da 2×3"])
        for nm, t in (("x", x), ("dy", dy), ("y", y), ("grad_x", max_dx), ("da", da),
                      ("a", a), ("grad_x_avg", x.grad)):
            golden_file.write(f, nm, t)


def main():
    out = golden_file.out_dir()
    torch.set_num_threads(1)
    for i, (name, xs, ws, stride, pad) in enumerate(CONVS):
        conv(out, i, name, xs, ws, stride, pad)
    pool(out)
    names = ", ".join(c[0] + ".txt" for c in CONVS)
    print(f"wrote {out}/{names} and conv_pool.txt (torch {torch.__version__})")


if __name__ == "__main__":
    main()
