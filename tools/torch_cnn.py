#!/usr/bin/python3
"""The peer of stages/08_conv/run_cnn: the same network (conv 3x3 1->32, ReLU,
max pool 2, conv 3x3 32->64, ReLU, max pool 2, flatten 1600, Linear 128, ReLU,
Linear 10; He-initialised weights, zero biases), batch, optimizer and data in
PyTorch. The data, the loop, the arrangement (threads, malloc, memory
format) and the CSV rows are tools/torch_peer.py's, shared with stage 07's
peer; `make stage-08 compare` (tools/compare.py) runs it in every
arrangement and races the fastest against ours.

  OPENBLAS_NUM_THREADS=1 LD_PRELOAD=libtcmalloc_minimal.so.4 \\
  /usr/bin/python3 tools/torch_cnn.py --data fashion --epochs 15 --threads 2 \\
      --channels-last --csv build/results/stage-08-compare-train.csv
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in tools/
import torch_peer  # noqa: E402


def build(torch, a, x_train, x_test, dname):
    if tuple(x_train.shape[1:]) != (28, 28) or tuple(x_test.shape[1:]) != (28, 28):
        torch_peer.fail(f"the network reads 28x28 images; {dname} has {tuple(x_train.shape[1:])}")
    # NCHW, one channel: the layout run_cnn uses.
    x_train = x_train.reshape(x_train.shape[0], 1, 28, 28)
    x_test = x_test.reshape(x_test.shape[0], 1, 28, 28)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),   # 32x13x13
        torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),  # 64x5x5
        torch.nn.Flatten(), torch.nn.Linear(1600, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))
    # He initialisation, fan_in = c*kh*kw for a convolution, in for a Linear
    # layer, zero biases: what nn_cnn_init does.
    for layer in model:
        if isinstance(layer, (torch.nn.Conv2d, torch.nn.Linear)):
            torch.nn.init.kaiming_normal_(layer.weight, mode="fan_in", nonlinearity="relu")
            torch.nn.init.zeros_(layer.bias)
    # A step's FLOPs per image: forward and dW of every layer, dX of every
    # layer but the first (nn_cnn_train_flops in common/nn/cnn.c); and the
    # forward's alone (nn_cnn_forward_flops).
    conv1, conv2 = 2.0 * 32 * 1 * 9 * 26 * 26, 2.0 * 64 * 32 * 9 * 11 * 11
    fc1, fc2 = 2.0 * 1600 * 128, 2.0 * 128 * 10
    flops = (2 * conv1 + 3 * (conv2 + fc1 + fc2), conv1 + conv2 + fc1 + fc2)
    return model, "cnn", flops, x_train, x_test


def add_args(p):
    p.add_argument("--channels-last", action="store_true",
                   help="the model and its images in NHWC (oneDNN's preferred layout)")


if __name__ == "__main__":
    sys.exit(torch_peer.main(__doc__, 256, 15, add_args, build))
