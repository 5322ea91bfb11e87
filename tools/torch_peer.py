#!/usr/bin/python3
"""What the PyTorch peers of the training drivers share (tools/torch_mlp.py
for stage 07's run_mlp, tools/torch_cnn.py for stage 08's run_cnn): the data
(the same IDX files, scaled to [0, 1] a batch at a time), the recipe (batch,
optimizer, learning rate, seed, threads), the training loop, and the rows
they add to our CSVs (framework `pytorch`; with --speed-csv the speed of both
side by side, vs_pytorch: how many times faster than PyTorch). A peer gives
only its model.

Debian's python3-torch imports only from /usr/bin/python3; when it is missing
a peer says so and exits 0 (PyTorch is a peer, never a dependency).
"""
import argparse
import glob
import gzip
import math
import os
import resource
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPOCH_IMAGES = 60000
FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
TRAIN_HEADER = ("model,dataset,framework,backend,threads,batch,optimizer,epoch,seconds,"
                "images_per_s,train_loss,test_loss,test_acc,peak_rss_mb")
SPEED_HEADER = ("model,framework,backend,threads,batch,seconds_per_epoch,images_per_s,gflops,"
                "pct_peak,vs_pytorch")


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def data_dir(name):
    """Where our drivers look for a dataset of this name (common/data/dataset.c)."""
    if "/" in name:
        return name.rstrip("/"), os.path.basename(name.rstrip("/")) or name
    if name == "sample":
        return os.path.join(ROOT, "datasets", "sample"), "sample"
    if name in ("mnist", "fashion"):
        base = os.environ.get("DATA_DIR") or os.path.join(ROOT, "build", "datasets")
        return os.path.join(base, name), name
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


def main(doc, batch, epochs, add_args, build):
    """Parses the flags, then trains build's model. add_args(p) adds the
    model's flags; build(torch, a, x_train, x_test, dname) returns
    (model, name, flops, x_train, x_test): the network He-initialised, its
    name in the CSVs, a training step's FLOPs per image, and the images in
    the shape the model reads. Returns the exit status."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--data", default="fashion")
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--optim", choices=("adam", "sgd"), default="adam")
    p.add_argument("--lr", type=float)
    p.add_argument("--lr-decay", choices=("none", "cosine"), default="none")
    p.add_argument("--wd", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--csv", help="training CSV to append per-epoch rows to")
    p.add_argument("--speed-csv", help="speed CSV to write: ours (from --csv) and PyTorch")
    p.add_argument("--profile", metavar="FILE",
                   help="instead of training: where a step's time goes, op by op, into FILE")
    p.add_argument("--profile-steps", type=int, default=10)
    add_args(p)
    a = p.parse_args()
    if a.batch < 1 or a.epochs < 1 or a.threads < 1 or a.profile_steps < 1:
        print("error: --batch, --epochs, --threads and --profile-steps want counts of 1 or more",
              file=sys.stderr)
        sys.exit(2)
    lr = a.lr if a.lr is not None else (1e-3 if a.optim == "adam" else 0.05)

    # Debian's torch calls the system OpenBLAS for its matrix products, and
    # OpenBLAS starts threads of its own beside torch's OpenMP threads: with
    # both at two on two cores they fight, and an epoch of 784-256-10 took
    # several times longer than with OpenBLAS on one thread and torch's
    # threads around it. So torch's threads are the only ones, unless the
    # environment says otherwise.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"skipped: python3-torch is missing (apt-get install python3-torch): {e}")
        return 0

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    directory, dname = data_dir(a.data)
    x_train = torch.from_numpy(read_idx(np, directory, FILES["train_images"]).copy())
    y_train = torch.from_numpy(read_idx(np, directory, FILES["train_labels"]).astype(np.int64))
    x_test = torch.from_numpy(read_idx(np, directory, FILES["test_images"]).copy())
    y_test = torch.from_numpy(read_idx(np, directory, FILES["test_labels"]).astype(np.int64))
    ntrain, ntest = x_train.shape[0], x_test.shape[0]
    model, name, flops, x_train, x_test = build(torch, a, x_train, x_test, dname)
    if a.optim == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=a.wd)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=a.wd)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(a.seed)
    if a.profile:
        return profile_steps(torch, a, name, dname, model, opt, loss_fn, x_train, y_train, gen)

    def evaluate():
        model.eval()
        total, right = 0.0, 0
        with torch.no_grad():
            for at in range(0, ntest, a.batch):
                x = x_test[at:at + a.batch].float().div_(255.0)
                y = y_test[at:at + a.batch]
                out = model(x)
                total += loss_fn(out, y).item() * len(y)
                right += (out.argmax(1) == y).sum().item()
        model.train()
        return total / ntest, right / ntest

    print(f"{name} on {dname} ({ntrain} train, {ntest} test images), batch {a.batch}, "
          f"{a.optim} lr {lr:g}{' (cosine decay)' if a.lr_decay == 'cosine' else ''}, PyTorch {torch.__version__}, {a.threads} thread(s)", flush=True)
    rows, seconds = [], []
    for epoch in range(1, a.epochs + 1):
        # The drivers' schedule (train_lr in common/nn/train_cli.c).
        if a.lr_decay == "cosine":
            for group in opt.param_groups:
                group["lr"] = lr * (1.0 + math.cos(math.pi * (epoch - 1) / a.epochs)) / 2.0
        order = torch.randperm(ntrain, generator=gen)
        start = time.perf_counter()
        total = 0.0
        for at in range(0, ntrain, a.batch):
            idx = order[at:at + a.batch]
            # uint8 to float a batch at a time, as our drivers do.
            x = x_train[idx].float().div_(255.0)
            y = y_train[idx]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        secs = time.perf_counter() - start
        seconds.append(secs)
        test_loss, test_acc = evaluate()
        print(f"epoch {epoch:3d}  loss {total / ntrain:.4f}  test loss {test_loss:.4f}  "
              f"test accuracy {100 * test_acc:6.2f} %  {secs:7.3f} s  {ntrain / secs:8.0f} images/s",
              flush=True)
        recipe = a.optim + ("-cosine" if a.lr_decay == "cosine" else "")
        rows.append(f"{name},{dname},pytorch,torch,{a.threads},{a.batch},{recipe},{epoch},"
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
    if a.speed_csv:
        write_speed(a, name, dname, ntrain, flops, seconds, torch.__version__)
    return 0


def machine_lines():
    """The machine as our drivers' CSVs name it (bench_write_machine in
    common/harness/bench.c): CPU model, cores, L1 data cache. The profile
    runs no driver of ours, and the book needs them to tell which of its
    machines measured it."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model")) and line.split(":", 1)[-1].strip():
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    lines = [f"# cpu: {cpu}\n", f"# cores: {os.cpu_count()}\n"]
    for index in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            level, kind, size = (open(os.path.join(index, n)).read().strip()
                                 for n in ("level", "type", "size"))
        except OSError:
            continue
        if level == "1" and kind == "Data" and size.endswith("K"):
            lines.append(f"# l1d_kib: {int(size[:-1])}\n")
            break
    lines.append(time.strftime("# date: %Y-%m-%dT%H:%M:%SZ\n", time.gmtime()))
    return lines


def profile_steps(torch, a, name, dname, model, opt, loss_fn, x_train, y_train, gen):
    """--profile: three steps of warm-up, then --profile-steps training steps
    under torch.profiler. Each op's own (self) CPU time, the time inside it
    and not inside the ops it calls, per epoch of EPOCH_IMAGES images: the
    ten largest and the rest as one row, with the whole step's wall time."""
    from torch.profiler import ProfilerActivity, profile

    order = torch.randperm(x_train.shape[0], generator=gen)

    def step(i):
        at = (i * a.batch) % max(1, x_train.shape[0] - a.batch + 1)
        idx = order[at:at + a.batch]
        x = x_train[idx].float().div_(255.0)
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y_train[idx]).backward()
        opt.step()

    for i in range(3):
        step(i)
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(a.profile_steps):
            step(3 + i)
    wall = (time.perf_counter() - start) / a.profile_steps
    steps_per_epoch = EPOCH_IMAGES / a.batch
    ops = sorted(((e.key, e.self_cpu_time_total / 1e6 / a.profile_steps)
                  for e in prof.key_averages()), key=lambda r: -r[1])
    total = sum(s for _, s in ops)
    top = ops[:10] + [("(every other op)", sum(s for _, s in ops[10:]))]
    with open(a.profile, "w") as f:
        f.writelines(machine_lines())
        f.write(f"# torch: {torch.__version__}\n# model: {name}\n# dataset: {dname}\n"
                f"# threads: {a.threads}\n# batch: {a.batch}\n# steps: {a.profile_steps}\n"
                f"# step_seconds_profiled: {wall:.6f}\n")
        f.write("framework,op,seconds_per_step,seconds_per_epoch,share\n")
        # share: a fraction of 1, as in every results file (the book shows percent)
        for op, secs in top:
            f.write(f"pytorch,{op.replace(',', ';')},{secs:.6f},{secs * steps_per_epoch:.4f},"
                    f"{secs / total if total else 0:.4f}\n")
    print(f"{name}: {a.profile_steps} steps profiled, {wall * steps_per_epoch:.2f} s per epoch "
          f"under the profiler; ops: {a.profile}")
    return 0


def epoch_seconds(values, ntrain):
    """The median epoch after the first (which warms up), per EPOCH_IMAGES images."""
    use = values[1:] if len(values) > 1 else values
    return statistics.median(use) * EPOCH_IMAGES / ntrain


def write_speed(a, name, dname, ntrain, flops, torch_seconds, version):
    """Ours (our driver's rows in --csv of the same model, data, batch,
    threads) and PyTorch's, with the machine lines our driver wrote."""
    machine, ours = [], []
    if a.csv and os.path.exists(a.csv):
        with open(a.csv) as f:
            for line in f:
                if line.startswith("#"):
                    if not line.startswith("# torch:"):
                        machine.append(line)
                    continue
                c = line.rstrip("\n").split(",")
                if (len(c) == 14 and c[0] == name and c[1] == dname and c[2] == "ours"
                        and c[4] == str(a.threads) and c[5] == str(a.batch)):
                    ours.append((c[3], float(c[8])))
    peak = ""
    for line in machine:
        if line.startswith(f"# peak.machine.{a.threads}:"):
            peak = line.split(":", 1)[1].strip()
    t_torch = epoch_seconds(torch_seconds, ntrain)

    def row(framework, backend, secs):
        images = EPOCH_IMAGES / secs
        gflops = flops * images / 1e9
        pct = f"{100 * gflops / float(peak):.2f}" if peak else ""
        return (f"{name},{framework},{backend},{a.threads},{a.batch},{secs:.6f},{images:.1f},"
                f"{gflops:.3f},{pct},{t_torch / secs:.3f}\n")

    with open(a.speed_csv, "w") as f:
        f.writelines(machine)
        f.write(f"# torch: {version}\n# epoch_images: {EPOCH_IMAGES}\n")
        f.write(SPEED_HEADER + "\n")
        backends = sorted({b for b, _ in ours})
        for backend in backends:
            f.write(row("ours", backend,
                        epoch_seconds([s for b, s in ours if b == backend], ntrain)))
        f.write(row("pytorch", "torch", t_torch))
    print(f"speed: {a.speed_csv}")
