#!/usr/bin/python3
"""Golden values for stage 06's autograd, from PyTorch.

    /usr/bin/python3 tools/torch_golden_06.py [OUT_DIR]   (default tests/golden)

Builds two small fixed problems in PyTorch, runs forward and backward, and
writes each problem's inputs, loss and gradients to a text file that
tests/test_06_autograd.c reads (no Python needed to build or test). Run it
only to regenerate those files.

Needs PyTorch. On Debian 12: apt-get install python3-torch, and run this
with /usr/bin/python3 (another python3 earlier on PATH may not see it).

File format: '#' lines are comments (the header: torch version, seed, the
problem); then, for each tensor, a line 'NAME NDIM D1 .. Dn' and a line of
its values, row-major ('%.9g', which a float reads back exactly). Labels
are written the same way, as whole numbers.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in tools/

import golden_file  # noqa: E402  (exits with a hint when PyTorch is missing)
import torch  # noqa: E402

SEED = 6
TEST = "tests/test_06_autograd.c"  # the test that reads the files


def mlp(out):
    # x is 8×13, w1 13×9, b1 9, w2 9×5, b2 5, labels 8 in 0..4:
    # loss = cross_entropy(relu(x·w1 + b1)·w2 + b2, labels), mean over the 8 rows.
    g = torch.Generator().manual_seed(SEED)
    x = (torch.rand(8, 13, generator=g) * 2 - 1).requires_grad_()
    w1 = (torch.rand(13, 9, generator=g) * 2 - 1).requires_grad_()
    b1 = (torch.rand(9, generator=g) * 2 - 1).requires_grad_()
    w2 = (torch.rand(9, 5, generator=g) * 2 - 1).requires_grad_()
    b2 = (torch.rand(5, generator=g) * 2 - 1).requires_grad_()
    labels = torch.randint(0, 5, (8,), generator=g)
    logits = torch.relu(x @ w1 + b1) @ w2 + b2
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    with open(os.path.join(out, "autograd_mlp.txt"), "w") as f:
        golden_file.header(f, TEST, SEED, [
            "problem: loss = cross_entropy(relu(x·w1 + b1)·w2 + b2, labels)",
            "shapes: x 8×13, w1 13×9, b1 9, w2 9×5, b2 5, labels 8 (0..4)"])
        for name, t in (("x", x), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)):
            golden_file.write(f, name, t)
        golden_file.write(f, "labels", labels)
        golden_file.write(f, "loss", loss.reshape(1))
        for name, t in (("x", x), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)):
            golden_file.write(f, "grad_" + name, t.grad)


def ops(out):
    # a and b are 4×6:
    # loss = mean(tanh(a) ⊙ sigmoid(b) + 0.5·a) + sum(0.1·reshape(b, 24))
    g = torch.Generator().manual_seed(SEED + 1)
    a = (torch.rand(4, 6, generator=g) * 4 - 2).requires_grad_()
    b = (torch.rand(4, 6, generator=g) * 4 - 2).requires_grad_()
    loss = (torch.tanh(a) * torch.sigmoid(b) + 0.5 * a).mean() + (0.1 * b.reshape(24)).sum()
    loss.backward()
    with open(os.path.join(out, "autograd_ops.txt"), "w") as f:
        golden_file.header(f, TEST, SEED, [
            "problem: loss = mean(tanh(a) ⊙ sigmoid(b) + 0.5·a) + sum(0.1·reshape(b, 24))",
            "shapes: a 4×6, b 4×6"])
        golden_file.write(f, "a", a)
        golden_file.write(f, "b", b)
        golden_file.write(f, "loss", loss.reshape(1))
        golden_file.write(f, "grad_a", a.grad)
        golden_file.write(f, "grad_b", b.grad)


def main():
    out = golden_file.out_dir()
    torch.set_num_threads(1)
    mlp(out)
    ops(out)
    print(f"wrote {out}/autograd_mlp.txt and autograd_ops.txt (torch {torch.__version__})")


if __name__ == "__main__":
    main()
