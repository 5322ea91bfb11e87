#!/usr/bin/python3
"""Golden values for stage 07's layers and optimizers, from PyTorch.

    /usr/bin/python3 tools/torch_golden_07.py [OUT_DIR]   (default tests/golden)

Writes three small fixed problems that tests/test_07_mlp.c reads (no Python
needed to build or test); run it only to regenerate them:
  nn_linear.txt  a Linear layer's output and its three gradients at an
                 awkward shape (batch 7, 17 inputs, 5 outputs);
  nn_optim.txt   three steps of Adam and of SGD with momentum, both with
                 weight decay, on a fixed sequence of gradients;
  nn_train.txt   three Adam steps of a 5-7-3 MLP on one batch of 4.

Needs PyTorch. On Debian 12: apt-get install python3-torch, and run this
with /usr/bin/python3 (another python3 earlier on PATH may not see it).

The format is tools/golden_file.py's: '#' lines are the
header (torch version, seed, problem, shapes); then for each tensor a line
'NAME NDIM D1 .. Dn' and a line of its values, row-major, '%.9g'.
Weights are in×out (y = x·w + bias), as in our layers: torch's Linear keeps
out×in, so the script uses plain matmuls.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in tools/

import golden_file  # noqa: E402  (exits with a hint when PyTorch is missing)
from golden_file import uniform  # noqa: E402
import torch  # noqa: E402

SEED = 7
TEST = "tests/test_07_mlp.c"  # the test that reads the files
# The optimizer settings nn_optim.txt and nn_train.txt use; the test has the same.
ADAM = dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
SGD = dict(lr=0.1, momentum=0.9, weight_decay=0.01)


def linear(out):
    # x is 7×17, w 17×5, bias 5: y = x·w + bias; loss = Σ y ⊙ dy for a fixed
    # dy (7×5), so the gradients PyTorch gives are the backward of dy.
    g = torch.Generator().manual_seed(SEED)
    x = uniform(g, 7, 17).requires_grad_()
    w = uniform(g, 17, 5).requires_grad_()
    bias = uniform(g, 5).requires_grad_()
    dy = uniform(g, 7, 5)
    y = x @ w + bias
    (y * dy).sum().backward()
    with open(os.path.join(out, "nn_linear.txt"), "w") as f:
        golden_file.header(f, TEST, SEED, [
            "problem: y = x·w + bias, backward of dy",
            "shapes: x 7×17, w 17×5, bias 5, dy 7×5"])
        for name, t in (("x", x), ("w", w), ("bias", bias), ("dy", dy), ("y", y)):
            golden_file.write(f, name, t)
        for name, t in (("x", x), ("w", w), ("bias", bias)):
            golden_file.write(f, "grad_" + name, t.grad)


def optim(out):
    # One parameter of 37 floats, three gradients; after each step its value.
    g = torch.Generator().manual_seed(SEED + 1)
    p0 = uniform(g, 37)
    grads = [uniform(g, 37) for _ in range(3)]
    with open(os.path.join(out, "nn_optim.txt"), "w") as f:
        golden_file.header(f, TEST, SEED, [
            "problem: 3 steps of Adam and of SGD from p0 with gradients g1, g2, g3",
            f"adam: {ADAM}", f"sgd: {SGD} (dampening 0, not Nesterov)",
            "shapes: every tensor 37"])
        golden_file.write(f, "p0", p0)
        for i, gr in enumerate(grads, 1):
            golden_file.write(f, f"g{i}", gr)
        for name, make in (("adam", lambda ps: torch.optim.Adam(ps, **ADAM)),
                           ("sgd", lambda ps: torch.optim.SGD(ps, **SGD))):
            p = p0.clone().requires_grad_()
            opt = make([p])
            for i, gr in enumerate(grads, 1):
                p.grad = gr.clone()
                opt.step()
                golden_file.write(f, f"{name}_p{i}", p)


def train(out):
    # A 5-7-3 MLP, x 4×5, labels 4: three Adam steps on the same batch of
    # loss = cross_entropy(relu(x·w1 + b1)·w2 + b2, labels).
    g = torch.Generator().manual_seed(SEED + 2)
    x = uniform(g, 4, 5)
    labels = torch.randint(0, 3, (4,), generator=g)
    params = [uniform(g, 5, 7), uniform(g, 7) * 0.1, uniform(g, 7, 3), uniform(g, 3) * 0.1]
    names = ("w1", "b1", "w2", "b2")
    with open(os.path.join(out, "nn_train.txt"), "w") as f:
        golden_file.header(f, TEST, SEED, [
            "problem: 3 Adam steps of loss = cross_entropy(relu(x·w1 + b1)·w2 + b2, "
            "labels) on one batch",
            f"adam: {ADAM}",
            "shapes: x 4×5, labels 4 (0..2), w1 5×7, b1 7, w2 7×3, b2 3"])
        golden_file.write(f, "x", x)
        golden_file.write(f, "labels", labels)
        for name, t in zip(names, params):
            golden_file.write(f, name, t)
        params = [t.clone().requires_grad_() for t in params]
        opt = torch.optim.Adam(params, **ADAM)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            w1, b1, w2, b2 = params
            loss = torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, labels)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        golden_file.write(f, "losses", torch.tensor(losses))
        for name, t in zip(names, params):
            golden_file.write(f, "final_" + name, t)


def main():
    out = golden_file.out_dir()
    torch.set_num_threads(1)
    linear(out)
    optim(out)
    train(out)
    print(f"wrote {out}/nn_linear.txt, nn_optim.txt and nn_train.txt (torch {torch.__version__})")


if __name__ == "__main__":
    main()
