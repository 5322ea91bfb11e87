#!/usr/bin/python3
"""What the PyTorch peers of the training drivers share (tools/torch_mlp.py
for stage 07's run_mlp, tools/torch_cnn.py for stage 08's run_cnn): the data
(the same IDX files, scaled to [0, 1] a batch at a time), the recipe (batch,
optimizer, learning rate, seed), the training loop and the rows it adds to
our training CSVs (framework `pytorch`), and the arrangement PyTorch runs
in. A peer gives only its model.

The arrangement is what a PyTorch user tunes without touching the model:
torch's threads (--threads) beside OpenBLAS's (OPENBLAS_NUM_THREADS, read
when the library loads), the malloc underneath (glibc's, or tcmalloc or
jemalloc preloaded with LD_PRELOAD), the memory format of a CNN
(--channels-last) and Adam's multi-tensor path (--foreach). Its name, such
as `2x1/tcmalloc/channels_last/foreach` (torch's threads x OpenBLAS's,
malloc, memory format, Adam's loop or foreach), is the backend column of
every PyTorch row. tools/compare.py tries every arrangement with --probe,
each malloc, thread split and memory format in a process of its own (a
malloc's speed depends on what the process allocated before), then races
the fastest against ours.

Debian's python3-torch imports only from /usr/bin/python3; when it is missing
a peer says so and exits 0 (PyTorch is a peer, never a dependency).
"""
import argparse
import gc
import gzip
import math
import os
import resource
import statistics
import sys
import time

import schema

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPOCH_IMAGES = 60000
FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
TRAIN_HEADER = schema.header("train")
# What --probe and --infer append to their file for tools/compare.py: one
# row per measurement, after '#' lines naming the torch, the malloc and the
# model's FLOPs per image.
MEASURE_HEADER = "what,backend,batch,steps,seconds_per_epoch"

# A probe: WARMUP steps (the first allocates what every later one reuses),
# then BLOCKS blocks of timed steps, each at least BLOCK_STEPS steps and
# --probe-block seconds; the probe's time is the median of the blocks'
# means, so one block slowed by something else on the machine does not
# decide it, and a cost every few steps (a trim of the heap) is inside
# each mean. That is about two seconds: 15 to 30 steps of the CNN, several
# hundred of the MLP. It is enough because the choices a probe makes are
# between arrangements a malloc, a thread split or a memory format apart,
# which change a step by a third to several times, more than a probe moves
# from one minute to the next on a shared 2-core machine (about a tenth,
# a quarter for the forward alone); arrangements closer than that are
# probed again (tools/compare.py), and the rounds time the one chosen. An
# arrangement whose first block is more than CUTOFF times the best probe
# so far cannot be the fastest: it stops there.
WARMUP, BLOCKS, BLOCK_STEPS, CUTOFF = 3, 3, 5, 2.0
FORMATS = ("nchw", "channels_last")


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def data_dir(name):
    """Where our drivers look for a dataset of this name (common/data/dataset.c):
    mnist, fashion and sample are the named sets, anything else a directory,
    however it is written, named after itself."""
    if name == "sample":
        return os.path.join(ROOT, "datasets", "sample"), "sample"
    if name in ("mnist", "fashion"):
        base = os.environ.get("DATA_DIR") or os.path.join(ROOT, "build", "datasets")
        return os.path.join(base, name), name
    if os.path.isdir(name):
        return name.rstrip("/") or name, os.path.basename(os.path.realpath(name))[:63] or name
    fail(f"--data wants mnist, fashion, sample or a directory, not '{name}'")


def read_idx(np, directory, stem):
    """An unsigned-byte IDX file, raw or .gz, as a numpy array of its shape."""
    for path, opener in ((os.path.join(directory, stem), open),
                         (os.path.join(directory, stem + ".gz"), gzip.open)):
        if os.path.exists(path):
            with opener(path, "rb") as f:
                raw = f.read()
            break
    else:
        fail(f"{os.path.join(directory, stem)}: missing (nor .gz); run `make datasets`")
    if len(raw) < 4 or raw[0] or raw[1] or raw[2] != 8 or raw[3] not in (1, 3):
        fail(f"{path}: not an unsigned-byte IDX file")
    nd = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * nd)
    if body.size != int(np.prod(dims)):
        fail(f"{path}: {body.size} data bytes, the header says {int(np.prod(dims))}")
    return body.reshape(dims)


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def malloc_in_use():
    """(name, library path) of the malloc this process runs on: a preloaded
    tcmalloc or jemalloc shows in its mappings, else it is glibc's."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "/" in line}
    except OSError:
        paths = set(os.environ.get("LD_PRELOAD", "").split(":"))
    for name in ("tcmalloc", "jemalloc"):
        for p in sorted(paths):
            if os.path.basename(p).startswith("lib" + name):
                return name, os.path.realpath(p)
    libc = [p for p in sorted(paths) if os.path.basename(p).startswith("libc.so")]
    return "glibc", os.path.realpath(libc[0]) if libc else "libc"


def arrangement(threads, blas, fmt, foreach):
    """The arrangement's name; fmt is None for a model without a memory
    format, foreach None where no optimizer runs (the forward alone)."""
    parts = [f"{threads}x{blas}", malloc_in_use()[0]] + ([fmt] if fmt else [])
    return "/".join(parts + ([] if foreach is None else ["foreach" if foreach else "loop"]))


def main(doc, batch, epochs, add_args, build):
    """Parses the flags, then trains build's model, or probes, measures
    inference or profiles it. add_args(p) adds the model's flags;
    build(torch, a, x_train, x_test, dname) returns (model, name, flops,
    x_train, x_test): the network He-initialised from torch's seed, its name
    in the CSVs, the FLOPs per image of a training step and of a forward
    (a pair), and the images in the shape the model reads. Returns the exit
    status."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--data", default="fashion")
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--optim", choices=("adam", "sgd"), default="adam")
    p.add_argument("--lr", type=float)
    p.add_argument("--lr-decay", choices=("none", "cosine"), default="none")
    p.add_argument("--wd", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="torch's threads (OpenBLAS's: OPENBLAS_NUM_THREADS, default 1)")
    p.add_argument("--cores", type=int,
                   help="the cores the run was given, the CSV's threads (default: the larger "
                        "of torch's and OpenBLAS's threads)")
    p.add_argument("--foreach", action="store_true",
                   help="the optimizer's multi-tensor (foreach) path")
    p.add_argument("--csv", help="training CSV to append per-epoch rows to")
    p.add_argument("--probe", metavar="FILE",
                   help="instead of training: time a few steps with the optimizer's loop, "
                        "then with foreach, one row each into FILE")
    p.add_argument("--probe-block", type=float, default=0.5,
                   help="seconds of steps in each of a probe's timed blocks (default 0.5)")
    p.add_argument("--probe-best", type=float, default=0.0,
                   help="the best seconds per epoch probed so far, for the cutoff")
    p.add_argument("--probe-inference", action="store_true",
                   help="probe the forward alone (no_grad) too")
    p.add_argument("--probe-only", default="",
                   help="probe only these arrangements (names, comma-separated)")
    p.add_argument("--formats", action="store_true",
                   help="print the memory formats the model runs in, and exit")
    p.add_argument("--infer", metavar="FILE",
                   help="instead of training: the forward alone (no_grad) on one batch, "
                        "timed over --infer-steps after 3 of warm-up, one row into FILE")
    p.add_argument("--infer-steps", type=int, default=20)
    p.add_argument("--profile", metavar="FILE",
                   help="instead of training: where a step's time goes, op by op, into FILE")
    p.add_argument("--profile-steps", type=int, default=10)
    p.add_argument("--machine-lines", metavar="FILE",
                   help="with --profile: the # lines that head FILE, as a program of ours "
                        "prints them with --machine")
    add_args(p)
    a = p.parse_args()
    if min(a.batch, a.epochs, a.threads, a.profile_steps, a.infer_steps, a.cores or 1) < 1:
        print("error: --batch, --epochs, --threads, --cores, --infer-steps and --profile-steps "
              "want counts of 1 or more", file=sys.stderr)
        sys.exit(2)
    has_format = getattr(a, "channels_last", None) is not None
    if a.formats:
        print(" ".join(FORMATS) if has_format else "-")
        return 0
    if a.probe_block <= 0:
        print("error: --probe-block wants seconds above 0", file=sys.stderr)
        sys.exit(2)
    # A profile is a results file: it starts with the machine lines of our
    # programs (tools/compare.py and tools/preload.py ask one for them).
    if a.profile:
        try:
            with open(a.machine_lines or "") as f:
                a.machine = f.readlines()
        except OSError as e:
            print(f"error: --profile wants --machine-lines FILE, the # lines a program of ours "
                  f"prints with --machine ({a.machine_lines or 'none given'}: {e.strerror})",
                  file=sys.stderr)
            sys.exit(2)
        if not a.machine or not all(line.startswith("# ") for line in a.machine):
            print(f"error: {a.machine_lines} holds no machine lines", file=sys.stderr)
            sys.exit(2)
    lr = a.lr if a.lr is not None else (1e-3 if a.optim == "adam" else 0.05)

    # Debian's torch calls the system OpenBLAS for its matrix products, and
    # OpenBLAS starts threads of its own beside torch's OpenMP threads; with
    # both at two on two cores they fight. Alone, a peer leaves OpenBLAS one
    # thread; tools/compare.py sets the variable for every arrangement.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    blas = os.environ["OPENBLAS_NUM_THREADS"]
    cores = a.cores or max(a.threads, int(blas) if blas.isdigit() else 1)
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"skipped: python3-torch is missing (apt-get install python3-torch): {e}")
        return 0
    default_threads = torch.get_num_threads()

    directory, dname = data_dir(a.data)
    x_train = torch.from_numpy(read_idx(np, directory, FILES["train_images"]).copy())
    y_train = torch.from_numpy(read_idx(np, directory, FILES["train_labels"]).astype(np.int64))
    x_test = torch.from_numpy(read_idx(np, directory, FILES["test_images"]).copy())
    y_test = torch.from_numpy(read_idx(np, directory, FILES["test_labels"]).astype(np.int64))
    ntrain, ntest = x_train.shape[0], x_test.shape[0]

    def setup(threads, fmt, foreach):
        """torch's threads, and a fresh model from the seed in the memory
        format fmt, with its optimizer, images and a batch maker."""
        torch.set_num_threads(threads)
        torch.manual_seed(a.seed)
        model, name, flops, xtr, xte = build(torch, a, x_train, x_test, dname)
        mf = torch.channels_last if fmt == "channels_last" else torch.contiguous_format
        model = model.to(memory_format=mf)
        if a.optim == "adam":
            opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=a.wd, foreach=foreach)
        else:
            opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=a.wd,
                                  foreach=foreach)

        def images(x):
            # uint8 to float a batch at a time, as our drivers do.
            x = x.float().div_(255.0)
            return x.contiguous(memory_format=mf) if fmt else x
        return model, name, flops, xtr, xte, opt, images

    fmt = ("channels_last" if a.channels_last else "nchw") if has_format else None
    loss_fn = torch.nn.CrossEntropyLoss()
    if a.probe:
        return probe(torch, a, blas, fmt, setup, loss_fn, y_train, default_threads)
    model, name, flops, x_train, x_test, opt, images = setup(a.threads, fmt, a.foreach)
    backend = arrangement(a.threads, blas, fmt, a.foreach)
    if a.infer:
        run = forward_steps(torch, model, images(x_train[:a.batch]))
        run(WARMUP)
        t0 = time.perf_counter()
        run(a.infer_steps)
        secs = (time.perf_counter() - t0) / a.infer_steps * EPOCH_IMAGES / a.batch
        backend = arrangement(a.threads, blas, fmt, None)
        write_measures(a.infer, torch, name, flops, default_threads,
                       [("inference", backend, a.batch, a.infer_steps, secs)])
        print(f"{name} inference, {backend}: {secs:.3f} s per {EPOCH_IMAGES} images")
        return 0
    if a.profile:
        return profile_steps(torch, a, name, dname, backend,
                             train_steps(torch, a, model, opt, loss_fn, images, x_train, y_train))
    gen = torch.Generator().manual_seed(a.seed)

    def evaluate():
        model.eval()
        total, right = 0.0, 0
        with torch.no_grad():
            for at in range(0, ntest, a.batch):
                x = images(x_test[at:at + a.batch])
                y = y_test[at:at + a.batch]
                out = model(x)
                total += loss_fn(out, y).item() * len(y)
                right += (out.argmax(1) == y).sum().item()
        model.train()
        return total / ntest, right / ntest

    print(f"{name} on {dname} ({ntrain} train, {ntest} test images), batch {a.batch}, "
          f"{a.optim} lr {lr:g}{' (cosine decay)' if a.lr_decay == 'cosine' else ''}, "
          f"PyTorch {torch.__version__}, {backend}", flush=True)
    rows = []
    for epoch in range(1, a.epochs + 1):
        # The drivers' schedule (train_lr in common/nn/train_run.c).
        if a.lr_decay == "cosine":
            for group in opt.param_groups:
                group["lr"] = lr * (1.0 + math.cos(math.pi * (epoch - 1) / a.epochs)) / 2.0
        order = torch.randperm(ntrain, generator=gen)
        start = time.perf_counter()
        total = 0.0
        for at in range(0, ntrain, a.batch):
            idx = order[at:at + a.batch]
            x = images(x_train[idx])
            y = y_train[idx]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        secs = time.perf_counter() - start
        test_loss, test_acc = evaluate()
        print(f"epoch {epoch:3d}  loss {total / ntrain:.4f}  test loss {test_loss:.4f}  "
              f"test accuracy {100 * test_acc:6.2f} %  {secs:7.3f} s  {ntrain / secs:8.0f} images/s",
              flush=True)
        recipe = a.optim + ("-cosine" if a.lr_decay == "cosine" else "")
        rows.append(f"{name},{dname},pytorch,{backend},{cores},{a.batch},{recipe},{epoch},"
                    f"{secs:.6f},{ntrain / secs:.1f},{total / ntrain:.6f},{test_loss:.6f},"
                    f"{test_acc:.6f},{peak_rss_mb():.1f}")
    print(f"peak memory {peak_rss_mb():.1f} MB")

    if a.csv:
        fresh = not os.path.exists(a.csv) or os.path.getsize(a.csv) == 0
        with open(a.csv, "a") as f:
            if fresh:
                f.write(f"# dataset: {dname}\n# train_images: {ntrain}\n# test_images: {ntest}\n")
                f.write(TRAIN_HEADER + "\n")
            f.write("\n".join(rows) + "\n")
    return 0


def timed_blocks(run, block_seconds, cutoff):
    """A probe of run(n), which runs n steps: WARMUP steps, then BLOCKS
    blocks of at least BLOCK_STEPS steps and block_seconds each. Returns
    (seconds per step, steps timed, stopped): stopped when the first block's
    steps took more than cutoff seconds each."""
    t0 = time.perf_counter()
    run(WARMUP)
    warm = (time.perf_counter() - t0) / WARMUP
    n = max(BLOCK_STEPS, math.ceil(block_seconds / max(warm, 1e-6)))
    means = []
    for _ in range(BLOCKS):
        t0 = time.perf_counter()
        run(n)
        means.append((time.perf_counter() - t0) / n)
        if cutoff and means[0] > cutoff:
            return means[0], n, True
    return statistics.median(means), n * BLOCKS, False


def train_steps(torch, a, model, opt, loss_fn, images, x_train, y_train):
    """run(n), which takes n training steps, on the batches of a shuffle
    from the seed: every probe and the profile train on the same ones."""
    order = torch.randperm(x_train.shape[0], generator=torch.Generator().manual_seed(a.seed))
    span = max(1, x_train.shape[0] - a.batch + 1)
    taken = [0]

    def run(n):
        for _ in range(n):
            at = (taken[0] * a.batch) % span
            taken[0] += 1
            idx = order[at:at + a.batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(images(x_train[idx])), y_train[idx])
            loss.backward()
            opt.step()
            loss.item()
    return run


def forward_steps(torch, model, x):
    """run(n), which runs the forward alone n times on the batch x, as
    bench_cnn times ours: no tape (no_grad), the same batch each time."""
    model.eval()

    def run(n):
        with torch.no_grad():
            for _ in range(n):
                model(x)
    return run


def probe(torch, a, blas, fmt, setup, loss_fn, y_train, default_threads):
    """--probe: the arrangements this process takes (its malloc, OpenBLAS's
    threads, --threads and the memory format), each timed by timed_blocks
    from the same weights on the same batches: with --probe-inference the
    forward alone first, on a heap as fresh as --infer's, then training
    with the optimizer's loop, then with foreach. Appends a row each to the
    --probe file."""
    per_epoch = EPOCH_IMAGES / a.batch
    rows, name, flops = [], "", (0.0, 0.0)
    for what, foreach in (("inference", False), ("train", False), ("train", True)):
        backend = arrangement(a.threads, blas, fmt, foreach if what == "train" else None)
        if (what == "inference" and not a.probe_inference) or \
                (a.probe_only and backend not in a.probe_only.split(",")):
            continue
        model, name, flops, x_train, _, opt, images = setup(a.threads, fmt, foreach)
        if what == "train":
            run = train_steps(torch, a, model, opt, loss_fn, images, x_train, y_train)
        else:
            run = forward_steps(torch, model, images(x_train[:a.batch]))
        cutoff = CUTOFF * a.probe_best / per_epoch if what == "train" else 0.0
        step_s, steps, stopped = timed_blocks(run, a.probe_block, cutoff)
        secs = step_s * per_epoch
        rows.append((what, backend, a.batch, steps, secs))
        print(f"  probe {what:9s} {backend:34s} {secs:8.3f} s per epoch ({steps} steps"
              f"{'; stopped, over twice the best' if stopped else ''})", flush=True)
        model = opt = run = None
        gc.collect()
    write_measures(a.probe, torch, name, flops, default_threads, rows)
    return 0


def write_measures(path, torch, name, flops, default_threads, rows):
    lib = malloc_in_use()
    with open(path, "a") as f:
        f.write(f"# torch: {torch.__version__}\n# torch_default_threads: {default_threads}\n"
                f"# model: {name}\n# flops.train: {flops[0]:.0f}\n# flops.forward: {flops[1]:.0f}\n"
                f"# malloc.{lib[0]}: {lib[1]}\n{MEASURE_HEADER}\n")
        for what, backend, batch, steps, secs in rows:
            f.write(f"{what},{backend},{batch},{steps},{secs:.6f}\n")


def profile_steps(torch, a, name, dname, backend, run):
    """--profile: WARMUP steps, then --profile-steps training steps under
    torch.profiler. Each op's own (self) CPU time, the time inside it and
    not inside the ops it calls, per epoch of EPOCH_IMAGES images: the ten
    largest and the rest as one row, with the whole step's wall time."""
    from torch.profiler import ProfilerActivity, profile

    run(WARMUP)
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run(a.profile_steps)
    wall = (time.perf_counter() - start) / a.profile_steps
    steps_per_epoch = EPOCH_IMAGES / a.batch
    ops = sorted(((e.key, e.self_cpu_time_total / 1e6 / a.profile_steps)
                  for e in prof.key_averages()), key=lambda r: -r[1])
    total = sum(s for _, s in ops)
    top = ops[:10] + [("(every other op)", sum(s for _, s in ops[10:]))]
    lib = malloc_in_use()
    with open(a.profile, "w") as f:
        f.writelines(a.machine)
        f.write(f"# torch: {torch.__version__}\n# model: {name}\n# dataset: {dname}\n"
                f"# threads: {a.threads}\n# arrangement: {backend}\n# malloc.{lib[0]}: {lib[1]}\n"
                f"# batch: {a.batch}\n# steps: {a.profile_steps}\n"
                f"# step_seconds_profiled: {wall:.6f}\n")
        f.write("framework,op,seconds_per_step,seconds_per_epoch,share\n")
        # share: a fraction of 1, as in every results file (the book shows percent)
        for op, secs in top:
            f.write(f"pytorch,{op.replace(',', ';')},{secs:.6f},{secs * steps_per_epoch:.4f},"
                    f"{secs / total if total else 0:.4f}\n")
    print(f"{name} ({backend}): {a.profile_steps} steps profiled, {wall * steps_per_epoch:.2f} s "
          f"per epoch under the profiler; ops: {a.profile}")
    return 0
