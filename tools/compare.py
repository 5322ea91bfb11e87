#!/usr/bin/python3
"""Ours against PyTorch at its best, on this machine, in one run: what
`make stage-07 compare` and `make stage-08 compare` run.

1. Probes. PyTorch is tried in every arrangement a user who knows it would
   try: torch's threads x OpenBLAS's (1 or all of the cores each), glibc's
   malloc or tcmalloc or jemalloc preloaded (those installed), the CNN in
   NCHW or channels_last, Adam's loop or foreach. A probe is a few seconds
   of steps (tools/torch_peer.py says how many). Each malloc, thread split
   and memory format is a process of its own, which tries Adam's loop and
   foreach; the finalists are probed a second time (probe() says why),
   and the finalist fastest on average is the one raced.
2. Rounds. Ours and the fastest arrangement train the recipe ROUNDS times,
   taking turns (ours first in odd rounds, PyTorch first in even ones), so
   both see the same minutes of a noisy machine. A round's time is its
   median epoch after the first. With --ours-inference, each round also
   times the forward alone, ours against PyTorch's fastest no_grad
   arrangement. Each round times the yardstick before and after
   (tools/yardstick.py: one fixed GEMM), and counts the slower of the two; a
   round whose yardstick ran more than SLOW_ROUND under the run's best is
   marked slow and run again, until ROUNDS rounds ran at speed or ROUNDS
   more were run, and never counts in a median.
3. The speed CSV, in design.md's columns: every probe (model NAME/probe,
   NAME/probe2 for the second), every round (NAME/round1, ..., with its
   yardstick and slow mark) and the result, the median of the rounds kept
   (NAME, and NAME-inference); backend names the arrangement; vs_pytorch is
   PyTorch's time over the row's, in the same round for a round's row, so
   the result rows give the ratio of the medians and the rounds its spread.
   The first round's epochs go into the training CSV (the curves, the
   accuracy, the memory).

  tools/compare.py --peer tools/torch_cnn.py --ours 'build/stage-08/run_cnn' \\
      --ours-inference 'build/stage-08/bench_cnn --conv auto --reps 1' \\
      --data fashion --threads 2 --rounds 3 \\
      --train-csv build/results/stage-08-compare-train.csv \\
      --csv build/results/stage-08-compare.csv -- --batch 256 --optim adam --epochs 3

With --profile FILE it profiles PyTorch's step (torch.profiler) in the
fastest arrangement instead: the one --best-from's comparison found, else
the probes'. FILE starts with the machine lines of --machine, our program
(the training driver) that prints them.

It imports no torch itself; the peer runs under /usr/bin/python3, where
Debian's python3-torch lives.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import sysconfig
import tempfile

import schema

EPOCH_IMAGES = 60000
PYTHON = "/usr/bin/python3"
SPEED_HEADER = schema.header("speed")
# Debian's packages: tcmalloc from libtcmalloc-minimal4 (or gperftools'
# full libtcmalloc4), jemalloc from libjemalloc2.
MALLOCS = (("glibc", ()),
           ("tcmalloc", ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4")),
           ("jemalloc", ("libjemalloc.so.2",)))
PACKAGES = {"tcmalloc": "libtcmalloc-minimal4", "jemalloc": "libjemalloc2"}
INFER_STEPS = 40
YARDSTICK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "yardstick.py")
# A round whose yardstick ran more than this under the run's best is slow:
# the rule of the GEMM harness (BENCH_SLOW_ROUND, common/harness/bench.c,
# which says why 15 %).
SLOW_ROUND = 0.15
# The arrangements probed a second time: the fastest few of the first pass,
# those within this factor of the fastest.
FINALISTS, FINALIST = 4, 1.25


def fail(message, hint=None):
    print(f"error: {message}", file=sys.stderr)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)
    sys.exit(1)


def find_library(names):
    arch = sysconfig.get_config_var("MULTIARCH") or ""
    for d in (f"/usr/lib/{arch}", f"/lib/{arch}", "/usr/lib64", "/usr/lib", "/usr/local/lib"):
        for n in names:
            if os.path.exists(os.path.join(d, n)):
                return os.path.join(d, n)
    return None


class Arrangement:
    """torch's threads x OpenBLAS's / malloc [/ memory format] [/ Adam's loop
    or foreach]: the name tools/torch_peer.py gives it."""

    def __init__(self, name):
        parts = name.split("/")
        self.name = name
        try:
            self.threads, self.blas = (int(x) for x in parts[0].split("x"))
        except ValueError:
            fail(f"'{name}' names no PyTorch arrangement")
        self.malloc = parts[1]
        self.format = parts[2] if len(parts) > 2 and parts[2] in ("nchw", "channels_last") else "-"
        self.channels_last = self.format == "channels_last"
        self.foreach = "foreach" in parts[2:]

    def group(self):
        """What one probe process shares: all but the optimizer."""
        return (self.malloc, self.blas, self.threads, self.format)

    def env(self, libs):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(self.blas))
        env.pop("LD_PRELOAD", None)
        if libs.get(self.malloc):
            env["LD_PRELOAD"] = libs[self.malloc]
        return env

    def flags(self):
        return (["--threads", str(self.threads)] +
                (["--channels-last"] if self.channels_last else []) +
                (["--foreach"] if self.foreach else []))


def run(cmd, env=None, what="", quiet=False):
    """Runs cmd; shows it first (with the variables that set an arrangement)
    unless quiet, and stops the comparison if it fails."""
    if not quiet:
        pre = [f"{k}={env[k]}" for k in ("OPENBLAS_NUM_THREADS", "LD_PRELOAD") if env and k in env]
        print("$ " + " ".join(shlex.quote(c) for c in pre + cmd), flush=True)
    status = subprocess.run(cmd, env=env).returncode
    if status != 0:
        fail(f"{what} failed (exit status {status})")


def read_csv(path):
    """('#' lines as a dict, rows as dicts) of a CSV with '#' lines and a
    header row; a repeated header row (files appended to) is skipped."""
    meta, rows, header = {}, [], None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                meta.setdefault(key.strip(), value.strip())
            elif line and (header is None or line == ",".join(header)):
                header = line.split(",")
            elif line:
                rows.append(dict(zip(header, line.split(","))))
    return meta, rows


def epoch_seconds(path, framework):
    """A training run's time: the median epoch after the first (which warms
    up; the only one of a one-epoch run), per EPOCH_IMAGES images."""
    meta, rows = read_csv(path)
    secs = [float(r["seconds"]) for r in rows if r["framework"] == framework]
    if not secs:
        fail(f"{path}: no {framework} epochs")
    return statistics.median(secs[1:] or secs) * EPOCH_IMAGES / int(meta["train_images"])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peer", required=True, help="the PyTorch peer, tools/torch_NAME.py")
    p.add_argument("--ours", help="our training driver, with flags of its own")
    p.add_argument("--ours-inference", help="our benchmark that writes a NAME-inference row")
    p.add_argument("--data", default="fashion")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--probe-block", type=float, default=0.5)
    p.add_argument("--train-csv")
    p.add_argument("--csv")
    p.add_argument("--profile", metavar="FILE")
    p.add_argument("--best-from", metavar="CSV")
    p.add_argument("--machine", metavar="PROGRAM",
                   help="with --profile: our program whose --machine heads the profile")
    p.add_argument("recipe", nargs="*", help="after --: the recipe, flags both sides take")
    a = p.parse_args()
    if a.threads < 1 or a.rounds < 1:
        print("error: --threads and --rounds want counts of 1 or more", file=sys.stderr)
        sys.exit(2)
    if not a.profile and not (a.ours and a.csv and a.train_csv):
        print("error: a comparison wants --ours, --csv and --train-csv", file=sys.stderr)
        sys.exit(2)
    if a.profile and not a.machine:
        print("error: a profile wants --machine, our program that prints the machine lines",
              file=sys.stderr)
        sys.exit(2)
    if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        fail(f"python3-torch does not import in {PYTHON}",
             "tools/deps.sh compare installs it (apt-get install python3-torch)")
    # The last comparison's files go once this one can start, not before: a
    # mistyped knob leaves them be.
    for path in (a.csv, a.train_csv) if not a.profile else ():
        if os.path.exists(path):
            os.remove(path)

    libs = {}
    for name, files in MALLOCS:
        libs[name] = find_library(files) if files else None
        if files and not libs[name]:
            print(f"note: no {name} ({' or '.join(files)}; apt-get install {PACKAGES[name]}): "
                  "not tried")
    peer = [PYTHON, a.peer, "--data", a.data] + a.recipe
    with tempfile.TemporaryDirectory(prefix="compare.") as tmp:
        if a.profile:
            return profile(a, peer, libs, tmp)
        return compare(a, peer, libs, tmp)


def probe_pass(a, peer, libs, tmp, tag, groups, best):
    """One pass of probes: a process for each group (malloc, OpenBLAS's
    threads, torch's, memory format), trying the arrangements its list
    names (all when None), the forward alone too when it says so. Returns
    (the peer's '#' lines, its rows in the order they ran)."""
    meta, rows = {}, []
    for (malloc, blas, threads, fmt), only, inference in groups:
        out = os.path.join(tmp, f"{tag}-{malloc}-{blas}-{threads}-{fmt}.csv")
        arr = Arrangement(f"{threads}x{blas}/{malloc}/{fmt}")
        cmd = peer + arr.flags() + ["--probe", out, "--probe-block", str(a.probe_block),
                                    "--probe-best", f"{best:.6f}"]
        cmd += (["--probe-inference"] if inference else []) + \
            (["--probe-only", ",".join(only)] if only else [])
        run(cmd, arr.env(libs), f"PyTorch's probe of {arr.name}", quiet=True)
        m, r = read_csv(out)
        ran = {Arrangement(x["backend"]).malloc for x in r}
        if ran - {malloc}:
            fail(f"PyTorch's probe with {malloc} preloaded ran on {', '.join(sorted(ran))}")
        meta.update({k: v for k, v in m.items() if k not in meta})
        rows += r
        best = min([x for x in [best] if x] +
                   [float(x["seconds_per_epoch"]) for x in r if x["what"] == "train"], default=0.0)
    return meta, rows


def probe(a, peer, libs, tmp, inference):
    """PyTorch in every arrangement, then the finalists again.

    Each malloc, thread split and memory format runs in a process of its
    own: how fast a malloc is depends on what the process allocated before
    (glibc's trim and mmap thresholds move with it), and a training run
    starts from a fresh heap. A probe is a few seconds, and this machine's
    speed drifts from one minute to the next (other work on the host): so
    the arrangements within FINALIST of the fastest are probed once more,
    in the opposite order, and each counts the mean of its probes. Returns
    (the peer's '#' lines, the first pass's rows, the second's)."""
    listed = subprocess.run(peer[:2] + ["--formats"], capture_output=True, text=True)
    if listed.returncode != 0:
        fail(f"{peer[1]} --formats failed: {listed.stderr.strip()}")
    formats = listed.stdout.split()
    mallocs = [m for m in libs if m == "glibc" or libs[m]]
    counts = sorted({1, a.threads})
    groups = [((m, b, t, f), None, inference)
              for m in mallocs for b in counts for t in counts for f in formats]
    print(f"PyTorch in every arrangement: torch's threads x OpenBLAS's, each "
          f"{' or '.join(map(str, counts))}; malloc {', '.join(mallocs)}"
          f"{'; ' + ' or '.join(formats) if formats != ['-'] else ''}; Adam's loop or foreach",
          flush=True)
    meta, first = probe_pass(a, peer, libs, tmp, "probe", groups, 0.0)
    finalists = {}
    for what in ("train", "inference"):
        ranked = sorted((x for x in first if x["what"] == what),
                        key=lambda x: float(x["seconds_per_epoch"]))
        for x in ranked[:FINALISTS]:
            if float(x["seconds_per_epoch"]) <= FINALIST * float(ranked[0]["seconds_per_epoch"]):
                arr = Arrangement(x["backend"])
                finalists.setdefault(arr.group(), []).append((what, x["backend"]))
    again = [(g, [n for _, n in finalists[g]], any(w == "inference" for w, _ in finalists[g]))
             for g in reversed([g for g, _, _ in groups]) if g in finalists]
    print(f"the finalists again: {', '.join(n for _, names, _ in again for n in names)}",
          flush=True)
    best = min(float(x["seconds_per_epoch"]) for x in first if x["what"] == "train")
    _, second = probe_pass(a, peer, libs, tmp, "probe2", again, best)
    return meta, first, second


def fastest(first, second, what):
    """Of the finalists (the arrangements probed twice), the one whose two
    probes of what took the least time on average. Only they compete: an
    arrangement probed once, in a quick minute, would beat a finalist whose
    second probe fell in a slow one."""
    finalists = {x["backend"] for x in second if x["what"] == what}
    times = {}
    for x in first + second:
        if x["what"] == what and (not finalists or x["backend"] in finalists):
            times.setdefault(x["backend"], []).append(float(x["seconds_per_epoch"]))
    return Arrangement(min(times, key=lambda n: statistics.mean(times[n])))


def slow_rounds(yardsticks):
    """The rounds (keys of yardsticks, a round's GFLOPS) whose yardstick ran
    more than SLOW_ROUND under the best of them."""
    best = max(yardsticks.values())
    return {r for r, y in yardsticks.items() if y < (1 - SLOW_ROUND) * best}


def yardstick(threads):
    """The yardstick's GFLOPS now, on threads threads (tools/yardstick.py)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    env.pop("LD_PRELOAD", None)
    out = subprocess.run([PYTHON, YARDSTICK], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"the yardstick failed: {out.stderr.strip()}")
    return float(out.stdout)


def compare(a, peer, libs, tmp):
    inference = bool(a.ours_inference)
    meta, first, second = probe(a, peer, libs, tmp, inference)
    name, batch = meta["model"], int(first[0]["batch"])
    best = fastest(first, second, "train")
    best_inf = fastest(first, second, "inference") if inference else None
    print(f"fastest: {best.name}" + (f"; the forward alone: {best_inf.name}" if inference else ""),
          flush=True)

    rounds = []  # (round, framework, what, seconds per epoch)
    yardsticks = {}  # round: the yardstick's GFLOPS, the slower of before and after
    ours_cmd = shlex.split(a.ours) + ["--data", a.data, "--threads", str(a.threads)] + a.recipe

    def race(r):
        print(f"round {r}" + (f" of {a.rounds}" if r <= a.rounds else ", again"), flush=True)
        # The first round's epochs are the training CSV's: ours writes it
        # afresh (with the machine lines), PyTorch adds to it.
        ours_csv = a.train_csv if r == 1 else os.path.join(tmp, f"ours-{r}.csv")
        peer_csv = a.train_csv if r == 1 else os.path.join(tmp, f"pytorch-{r}.csv")

        def ours():
            run(ours_cmd + ["--csv", ours_csv], what="our training run")
            rounds.append((r, "ours", "train", epoch_seconds(ours_csv, "ours")))

        def pytorch():
            run(peer + best.flags() + ["--cores", str(a.threads), "--csv", peer_csv], best.env(libs),
                "PyTorch's training run")
            rounds.append((r, "pytorch", "train", epoch_seconds(peer_csv, "pytorch")))

        def ours_inf():
            out = os.path.join(tmp, f"ours-inference-{r}.csv")
            run(shlex.split(a.ours_inference) + ["--data", a.data, "--threads", str(a.threads),
                                                 "--steps", str(INFER_STEPS), "--csv", out],
                what="our inference benchmark")
            rows = [x for x in read_csv(out)[1] if x["model"] == f"{name}-inference"]
            if not rows:
                fail(f"{out}: no {name}-inference row")
            rounds.append((r, "ours", "inference", float(rows[0]["seconds_per_epoch"])))

        def pytorch_inf():
            out = os.path.join(tmp, f"pytorch-inference-{r}.csv")
            run(peer + best_inf.flags() + ["--infer", out, "--infer-steps", str(INFER_STEPS)],
                best_inf.env(libs), "PyTorch's inference run")
            rounds.append((r, "pytorch", "inference",
                           float(read_csv(out)[1][0]["seconds_per_epoch"])))

        steps = [ours, pytorch] + ([ours_inf, pytorch_inf] if inference else [])
        if r % 2 == 0:
            steps = [pytorch, ours] + ([pytorch_inf, ours_inf] if inference else [])
        before = yardstick(a.threads)
        for step in steps:
            step()
        yardsticks[r] = min(before, yardstick(a.threads))

    for r in range(1, a.rounds + 1):
        race(r)
    reruns = 0
    while len(yardsticks) - len(slow_rounds(yardsticks)) < a.rounds and reruns < a.rounds:
        said = ", ".join(f"round {r} {yardsticks[r]:.1f}" for r in sorted(slow_rounds(yardsticks)))
        print(f"the yardstick ran slow ({said} GFLOPS; the best "
              f"{max(yardsticks.values()):.1f}): one round more", flush=True)
        reruns += 1
        race(a.rounds + reruns)
    slow = slow_rounds(yardsticks)
    if slow:
        print(f"note: round(s) {', '.join(map(str, sorted(slow)))} ran slow: marked slow in "
              f"{a.csv}, left out of the medians ({reruns} round(s) run again)", flush=True)
    kept = [x for x in rounds if x[0] not in slow]

    write_speed(a, meta, (first, second), (rounds, kept, yardsticks, slow), best, best_inf, name,
                batch, libs)
    summary(a, name, kept, best, best_inf)
    return 0


def median_of(rounds, framework, what):
    return statistics.median(s for _, fw, w, s in rounds if fw == framework and w == what)


def in_round(rounds, r, framework, what):
    return next(s for rr, fw, w, s in rounds if rr == r and fw == framework and w == what)


def plain_arrangement(meta, probes):
    """What a user gets who sets nothing: torch's own thread count, OpenBLAS
    on every core, glibc's malloc, NCHW, Adam's loop; None if not probed."""
    split = f"{meta.get('torch_default_threads')}x{os.cpu_count()}"
    for x in probes:
        parts = x["backend"].split("/")
        if x["what"] == "train" and parts[:2] == [split, "glibc"] and parts[-1] == "loop" and \
                "channels_last" not in parts:
            return x["backend"]
    return None


def write_speed(a, meta, probes, raced, best, best_inf, name, batch, libs):
    """The speed CSV: our training CSV's '#' lines (the machine, the data),
    what was tried and how, then the probes, the rounds (raced: every
    round's times, those of the rounds kept, each round's yardstick, the
    slow ones) and the results."""
    rounds, kept, yardsticks, slow = raced
    with open(a.train_csv) as f:
        lines = [line for line in f if line.startswith("#")]
    machine, epochs = read_csv(a.train_csv)
    peak = machine.get(f"peak.machine.{a.threads}", "")
    flops = {"train": float(meta["flops.train"]), "inference": float(meta["flops.forward"])}
    ours_backend = next(r["backend"] for r in epochs if r["framework"] == "ours")
    models = {"train": name, "inference": f"{name}-inference"}

    def row(model, framework, backend, what, secs, r=None):
        """A row; r, a round's: its ratio is to PyTorch in that round, and it
        carries the round's yardstick and slow mark."""
        images = EPOCH_IMAGES / secs
        gflops = flops[what] * images / 1e9
        pct = f"{100 * gflops / float(peak):.2f}" if peak else ""
        torch = in_round(rounds, r, "pytorch", what) if r else median_of(kept, "pytorch", what)
        mark = f"{yardsticks[r]:.2f},{int(r in slow)}" if r else ","
        return (f"{model},{framework},{backend},{a.threads},{batch},{secs:.6f},{images:.1f},"
                f"{gflops:.3f},{pct},{torch / secs:.3f},{mark}\n")

    with open(a.csv, "w") as f:
        f.writelines(lines)
        f.write(f"# torch: {meta['torch']}\n"
                f"# torch_default_threads: {meta.get('torch_default_threads', '')}\n")
        for malloc in libs:
            where = meta.get(f"malloc.{malloc}") or \
                f"not installed (apt-get install {PACKAGES[malloc]}), not tried"
            f.write(f"# malloc.{malloc}: {where}\n")
        counts = " or ".join(map(str, sorted({1, a.threads})))
        f.write(f"# epoch_images: {EPOCH_IMAGES}\n"
                f"# threads: the cores each side was given; a PyTorch arrangement splits them\n"
                f"# backend: ours: {ours_backend}; PyTorch: its arrangement, torch's threads x "
                f"OpenBLAS's (each {counts}) / malloc / memory format (a CNN) / Adam's loop or "
                f"foreach\n"
                f"# probe: {name}/probe rows, a few seconds of steps per arrangement "
                f"(tools/torch_peer.py); {name}/probe2, the finalists probed again (within "
                f"{FINALIST:g}x of the fastest, at most {FINALISTS}); the fastest is the one "
                f"whose probes took the least time on average\n"
                f"# rounds: {name}/roundN rows, {a.rounds} round(s) of ours and PyTorch's "
                f"fastest taking turns; a round's time is its median epoch after the first; "
                f"vs_pytorch is PyTorch's time in the same round over the row's\n"
                f"# yardstick: each round's GFLOPS of one fixed GEMM (tools/yardstick.py), "
                f"the slower of before and after the round\n"
                f"# slow: 1 when the round's yardstick ran more than {100 * SLOW_ROUND:.0f} % "
                f"under the run's best: the round run again, left out of the medians\n"
                f"# result: {name} rows, the median of the rounds not slow; vs_pytorch is "
                f"PyTorch's result over the row's time\n"
                f"# fastest: {best.name}\n")
        if best_inf:
            f.write(f"# fastest_inference: {best_inf.name} (the forward alone, no_grad)\n")
        plain = plain_arrangement(meta, probes[0])
        if plain:
            f.write(f"# plain: {plain} (torch's own threads, OpenBLAS's, glibc's malloc)\n")
        f.write(SPEED_HEADER + "\n")
        for tag, rows in zip(("probe", "probe2"), probes):
            for what in ("train", "inference"):
                for x in rows:
                    if x["what"] == what:
                        f.write(row(f"{models[what]}/{tag}", "pytorch", x["backend"], what,
                                    float(x["seconds_per_epoch"])))
        for r, fw, what, secs in rounds:
            backend = ours_backend if fw == "ours" else (best if what == "train" else best_inf).name
            f.write(row(f"{models[what]}/round{r}", fw, backend, what, secs, r))
        for what, arr in (("train", best), ("inference", best_inf)):
            if arr:
                for fw, backend in (("ours", ours_backend), ("pytorch", arr.name)):
                    f.write(row(models[what], fw, backend, what, median_of(kept, fw, what)))


def summary(a, name, kept, best, best_inf):
    """What the run found, on the terminal: the medians of the rounds kept,
    the ratio and its range over them, the accuracy and the memory of the
    first round."""
    last = {r["framework"]: r for r in read_csv(a.train_csv)[1]}
    at_speed = len({r for r, _, _, _ in kept})
    print(f"\n{name}, {at_speed} round(s) at speed of the {a.rounds} asked for, {a.threads} "
          f"thread(s): seconds per epoch of {EPOCH_IMAGES} images, the median of those rounds")
    for what, arr in (("train", best), ("inference", best_inf)):
        if arr:
            ours, torch = median_of(kept, "ours", what), median_of(kept, "pytorch", what)
            ratios = [in_round(kept, r, "pytorch", what) / s
                      for r, fw, w, s in kept if fw == "ours" and w == what]
            print(f"  {what:9s}  ours {ours:8.3f} s   PyTorch {torch:8.3f} s ({arr.name})"
                  f"   ours is {torch / ours:.2f}x as fast (rounds {min(ratios):.2f}"
                  f"-{max(ratios):.2f})")
    for fw in ("ours", "pytorch"):
        if fw in last:
            r = last[fw]
            print(f"  {fw:8s} after epoch {r['epoch']}: test accuracy "
                  f"{100 * float(r['test_acc']):.2f} %, peak memory {float(r['peak_rss_mb']):.1f} MB")
    print(f"results: {a.train_csv}\nspeed:   {a.csv}")


def profile(a, peer, libs, tmp):
    """--profile: PyTorch's step under torch.profiler, in the fastest
    arrangement (from --best-from when it holds a result, else probed)."""
    best = None
    if a.best_from and os.path.exists(a.best_from):
        for r in read_csv(a.best_from)[1]:
            if r.get("framework") == "pytorch" and "/" not in r["model"] and \
                    not r["model"].endswith("-inference") and r["threads"] == str(a.threads):
                best = Arrangement(r["backend"])
        if best:
            print(f"the fastest arrangement in {a.best_from}: {best.name}")
    if best and best.malloc != "glibc" and not libs.get(best.malloc):
        fail(f"{a.best_from} found {best.name} fastest, but there is no {best.malloc} here now",
             f"apt-get install {PACKAGES[best.malloc]}, or make compare again")
    if not best:
        _, first, second = probe(a, peer, libs, tmp, False)
        best = fastest(first, second, "train")
        print(f"fastest: {best.name}")
    machine = os.path.join(tmp, "machine.txt")
    try:
        lines = schema.machine_lines(a.machine)
    except RuntimeError as e:
        fail(str(e), "make builds our programs")
    with open(machine, "w") as f:
        f.writelines(lines)
    run(peer + best.flags() + ["--profile", a.profile, "--machine-lines", machine],
        best.env(libs), "PyTorch's profile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
