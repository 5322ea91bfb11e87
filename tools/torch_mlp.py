#!/usr/bin/python3
"""The peer of stages/07_mlp/run_mlp: the same MLP (Linear and ReLU layers,
He-initialised weights, zero biases), batch, optimizer and data in PyTorch.
The data, the loop, the arrangement (threads, malloc) and the CSV rows are
tools/torch_peer.py's, shared with stage 08's peer; `make stage-07 compare`
(tools/compare.py) runs it in every arrangement and races the fastest
against ours.

  OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tools/torch_mlp.py --data fashion \\
      --epochs 10 --threads 1 --csv build/results/stage-07-compare-train.csv
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in tools/
import torch_peer  # noqa: E402


def add_args(p):
    p.add_argument("--layers", default="784,256,10")


def build(torch, a, x_train, x_test, dname):
    try:
        sizes = [int(s) for s in a.layers.split(",")]
        assert len(sizes) >= 2 and all(s > 0 for s in sizes)
    except (ValueError, AssertionError):
        print(f"error: --layers wants sizes such as 784,256,10, not '{a.layers}'", file=sys.stderr)
        sys.exit(2)
    x_train = x_train.reshape(x_train.shape[0], -1)
    x_test = x_test.reshape(x_test.shape[0], -1)
    if x_train.shape[1] != sizes[0]:
        torch_peer.fail(f"--layers {a.layers} does not fit {dname}: "
                        f"its images have {x_train.shape[1]} pixels")
    layers = []
    for i in range(len(sizes) - 1):
        lin = torch.nn.Linear(sizes[i], sizes[i + 1])
        torch.nn.init.kaiming_normal_(lin.weight, mode="fan_in", nonlinearity="relu")
        torch.nn.init.zeros_(lin.bias)
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    # A step's matmul FLOPs per image: forward and dW of every layer, dX of
    # every layer but the first (nn_train_flops in common/nn/mlp.c); and the
    # forward's alone.
    forward = sum(2.0 * sizes[i] * sizes[i + 1] for i in range(len(sizes) - 1))
    flops = (sum((2.0 if i == 0 else 3.0) * 2.0 * sizes[i] * sizes[i + 1]
                 for i in range(len(sizes) - 1)), forward)
    name = "-".join(str(s) for s in sizes)
    return torch.nn.Sequential(*layers), name, flops, x_train, x_test


if __name__ == "__main__":
    sys.exit(torch_peer.main(__doc__, 64, 10, add_args, build))
