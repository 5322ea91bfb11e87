#!/usr/bin/env python3
"""Makes datasets/sample/ from Fashion-MNIST: the first 160 images of each
class in the training file and the first 40 of each class in the test file,
kept in file order (1,600 + 400 images), as gzip IDX.

    python3 datasets/make_sample.py /usr/share/datasets/fashion-mnist datasets/sample
"""
import os
import sys

import idxio

TRAIN_PER_CLASS = 160
TEST_PER_CLASS = 40


def take(src, prefix, per_class):
    idims, images = idxio.read(os.path.join(src, f"{prefix}-images-idx3-ubyte.gz"))
    ldims, labels = idxio.read(os.path.join(src, f"{prefix}-labels-idx1-ubyte.gz"))
    assert idims[0] == ldims[0]
    pixels = idims[1] * idims[2]
    seen = [0] * 10
    keep = []
    for i, label in enumerate(labels):
        if seen[label] < per_class:
            seen[label] += 1
            keep.append(i)
    assert seen == [per_class] * 10, seen
    out_images = b"".join(images[i * pixels:(i + 1) * pixels] for i in keep)
    out_labels = bytes(labels[i] for i in keep)
    return (idxio.encode((len(keep), idims[1], idims[2]), out_images),
            idxio.encode((len(keep),), out_labels))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make_sample.py FASHION_MNIST_DIR OUT_DIR")
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for prefix, per_class in (("train", TRAIN_PER_CLASS), ("t10k", TEST_PER_CLASS)):
        images, labels = take(src, prefix, per_class)
        idxio.write_gz(os.path.join(out, f"{prefix}-images-idx3-ubyte.gz"), images)
        idxio.write_gz(os.path.join(out, f"{prefix}-labels-idx1-ubyte.gz"), labels)


if __name__ == "__main__":
    main()
