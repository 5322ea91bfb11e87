#!/usr/bin/python3
"""NumPy and PyTorch on three BLAS libraries, the book's among them: what
`make stage-05 preload` runs (the appendix "Your GEMM under NumPy and
PyTorch").

Each library is put under an unchanged NumPy and PyTorch with LD_PRELOAD:
nothing (Debian's libblas.so.3, OpenBLAS), build/lib/libmmblas.so (the
book's gemm() behind sgemm_ and cblas_sgemm), and BLIS's libblas.so.3 where
Debian's libblis4-openmp is installed. Two workloads, each a process of its
own per library:

  numpy  float32 `a @ b` (np.matmul into a preallocated result) at square
         sizes: one warm-up, then REPS timed, the median kept; in the first
         round, the result checked against the float64 product, each element
         within the float32 error bound of common/base/mat.c (error_ratio ≤ 1)
  mlp    PyTorch training the MLP of chapter 7 (tools/torch_mlp.py, the
         book's recipe) for EPOCHS epochs; its last epoch's test accuracy,
         its median epoch after the first. Round r trains from seed r on
         every library, so the rounds' accuracies are the spread between
         seeds that ours and OpenBLAS's are compared within

in ROUNDS rounds, the libraries taking turns (the order reversed every
other round), so that all three see the same minutes of a busy machine.
The book's library counts its calls by shape (MMBLAS_VERBOSE=1): the count
proves the calls were its own.

Then PyTorch's step is profiled op by op (torch.profiler, as `make stage-07
profile` does) on OpenBLAS and on the book's GEMM.

Writes CSV (the NumPy rows: every round and the medians, round "median"),
CSV with -mlp before .csv (the training rows), -calls (the count, first
round) and -profile (the profiles), each after the `#` lines naming the
machine, the build and the commit, as --machine (stage 5's bench_parallel)
prints them.

  /usr/bin/python3 tools/preload.py --lib build/lib/libmmblas.so \\
      --machine 'build/stage-05/bench_parallel --threads 2' \\
      --csv build/results/stage-05-preload.csv --threads 2 --rounds 3
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ left in tools/
import schema  # noqa: E402  (machine_lines: our programs' # lines)

TOOLS = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"  # Debian's python3-torch imports only from here
NUMPY_HEADER = "library,round,m,n,k,seconds,gflops,vs_openblas,error_ratio"
MLP_HEADER = ("library,round,model,dataset,threads,batch,epochs,seconds_per_epoch,images_per_s,"
              "test_acc,vs_openblas")
CALLS_HEADER = "workload,door,layout,op,m,n,k,calls"
# tools/torch_peer.py's profile rows, after the library and the step's time.
PROFILE_HEADER = "library,step_seconds,framework,op,seconds_per_step,seconds_per_epoch,share"
MLP_RECIPE = ["--layers", "784,256,10", "--batch", "64", "--optim", "adam"]
COUNT_LINE = re.compile(r"^mmblas:\s+(\d+)\s+(\S+)\s+(row|column)\s+([NTC]) ([NTC])\s+(\d+)x(\d+)x(\d+)")


def fail(message, hint=None):
    print(f"error: {message}", file=sys.stderr)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)
    sys.exit(1)


def blis_library():
    arch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    for variant in ("blis-openmp", "blis-pthread", "blis-serial"):
        path = f"/usr/lib/{arch}/{variant}/libblas.so.3"
        if os.path.exists(path):
            return path
    return None


def counts(text):
    """The book's library's count, from what it printed at exit: (door,
    layout, op, m, n, k, calls) rows, and the total it gave."""
    rows, total = [], None
    for line in text.splitlines():
        m = COUNT_LINE.match(line)
        if m:
            calls, door, layout, ta, tb, mm, nn, kk = m.groups()
            rows.append((door, layout, ta + tb, int(mm), int(nn), int(kk), int(calls)))
        t = re.match(r"^mmblas: the book's gemm\(\) answered (\d+) calls", line)
        if t:
            total = int(t.group(1))
    return rows, total


# ---------------------------------------------------------------------------
# The NumPy worker: runs inside the process that has the library preloaded.

def numpy_worker(a):
    import numpy as np

    loaded = sorted({line.split()[-1] for line in open("/proc/self/maps")
                     if re.search(r"(blas|blis)[^/]*\.so", line)})
    print(f"  numpy {np.__version__}, BLAS libraries mapped: {', '.join(loaded)}", flush=True)
    rng = np.random.default_rng(1)
    rows = []
    for n in a.sizes:
        x = rng.uniform(-1.0, 1.0, (n, n)).astype(np.float32)
        y = rng.uniform(-1.0, 1.0, (n, n)).astype(np.float32)
        z = np.empty((n, n), np.float32)
        t0 = time.perf_counter()
        np.matmul(x, y, out=z)  # the warm-up
        warm = time.perf_counter() - t0
        reps = max(a.reps, min(200, math.ceil(a.min_seconds / max(warm, 1e-6))))
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            np.matmul(x, y, out=z)
            times.append(time.perf_counter() - t0)
        secs = statistics.median(times)
        ratio = ""
        if a.check:
            # Each element within the bound of common/base/mat.c's
            # mat_error_bound: γ_{k+2}·Σ|a||b|, u = 2^-24.
            want = x.astype(np.float64) @ y.astype(np.float64)
            size = np.abs(x).astype(np.float64) @ np.abs(y).astype(np.float64)
            u = 2.0 ** -24
            bound = (n + 2) * u / (1 - (n + 2) * u) * size + np.finfo(np.float32).tiny
            worst = float(np.max(np.abs(z - want) / bound))
            if not worst <= 1.0:
                print(f"error: a @ b at n = {n} is {worst:.3g} times the float32 error bound "
                      "from the float64 product: a wrong answer", file=sys.stderr)
                return 1
            ratio = f"{worst:.4f}"
        gflops = 2.0 * n * n * n / secs / 1e9
        rows.append(f"{n},{n},{n},{secs:.6f},{gflops:.2f},{ratio}")
        print(f"  {n:5d}  {secs * 1e3:9.3f} ms  {gflops:7.1f} GFLOPS"
              f"{'  error ' + ratio + ' of the bound' if ratio else ''}", flush=True)
    with open(a.worker_out, "w") as f:
        f.write("\n".join(rows) + "\n")
    return 0


# ---------------------------------------------------------------------------
# The driver.

def run(cmd, env, what):
    """Runs cmd, its output shown; returns its stderr, which the book's
    library writes its count to."""
    shown = " ".join(f"{k}={env[k]}" for k in ("LD_PRELOAD",) if env.get(k))
    print(f"$ {shown + ' ' if shown else ''}{' '.join(cmd)}", flush=True)
    p = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True)
    err = "\n".join(line for line in p.stderr.splitlines() if not line.startswith("mmblas:"))
    if err:
        print(err, file=sys.stderr)
    if p.returncode != 0:
        fail(f"{what} failed (exit {p.returncode})")
    return p.stderr


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", help="the book's library (build/lib/libmmblas.so)")
    p.add_argument("--machine", metavar="PROGRAM",
                   help="our program whose --machine heads every file (stage 5's bench)")
    p.add_argument("--csv", help="the NumPy results; -mlp and -calls files beside it")
    p.add_argument("--sizes", default="256,512,1024,2048")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--min-seconds", type=float, default=0.5,
                   help="timed repetitions of each size fill at least this long")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="the BLAS's threads (PyTorch's own: 1)")
    p.add_argument("--data", default="fashion")
    p.add_argument("--no-mlp", action="store_true", help="NumPy alone")
    p.add_argument("--quick", action="store_true",
                   help="one round, sizes to 1024, one epoch on the committed sample")
    p.add_argument("--worker", choices=("numpy",), help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    p.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    try:
        a.sizes = [int(s) for s in a.sizes.split(",")]
        assert a.sizes and all(0 < s <= 16384 for s in a.sizes)
    except (ValueError, AssertionError):
        print(f"error: --sizes wants sizes such as 256,512 (1 to 16384), not '{a.sizes}'",
              file=sys.stderr)
        sys.exit(2)
    if min(a.reps, a.rounds, a.epochs, a.threads) < 1 or a.min_seconds < 0:
        print("error: --reps, --rounds, --epochs and --threads want counts of 1 or more",
              file=sys.stderr)
        sys.exit(2)
    if a.worker:
        return numpy_worker(a)
    if not a.lib or not a.csv or not a.machine:
        print("error: --lib, --csv and --machine are needed", file=sys.stderr)
        sys.exit(2)
    if not os.path.exists(a.lib):
        fail(f"{a.lib}: no such library", "make blas builds it")
    if a.quick:
        a.rounds, a.epochs, a.data = 1, 1, "sample"
        a.sizes = [s for s in a.sizes if s <= 1024] or a.sizes[:1]
        a.min_seconds, a.reps = 0.1, 3
    probe = subprocess.run([PYTHON, "-c", "import numpy"], capture_output=True)
    if probe.returncode != 0:
        fail("NumPy is missing from /usr/bin/python3", "apt-get install python3-numpy")
    have_torch = not a.no_mlp and subprocess.run(
        [PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
    if not a.no_mlp and not have_torch:
        print("note: python3-torch is missing (apt-get install python3-torch): NumPy alone")

    libs = [("openblas", None), ("mmblas", os.path.abspath(a.lib))]
    blis = blis_library()
    if blis:
        libs.append(("blis", blis))
    else:
        print("note: no BLIS (apt-get install libblis4-openmp): OpenBLAS and the book's alone")

    def env_for(path):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        # Every library the same threads: OpenBLAS and ours read the first,
        # BLIS the second; PyTorch's own loops run on one (--threads 1).
        env["OPENBLAS_NUM_THREADS"] = str(a.threads)
        env["BLIS_NUM_THREADS"] = str(a.threads)
        env.pop("OMP_NUM_THREADS", None)
        env["MMBLAS_VERBOSE"] = "1"
        if path:
            env["LD_PRELOAD"] = path
        return env

    numpy_rows, mlp_rows, call_rows = [], [], []

    def counted(cmd, name, path, what, workload, first):
        """Runs cmd with the library `name` (at path) preloaded. The book's
        library must have counted calls, else it was not the one called; the
        first round's count is kept."""
        err = run(cmd, env_for(path), f"{what} on {name}")
        if name != "mmblas":
            return
        found, total = counts(err)
        if not total:
            fail(f"{what} on {a.lib} made no call of its sgemm: the library was not used")
        print(f"  the book's sgemm answered {total} calls", flush=True)
        if first:
            call_rows.extend((workload,) + c for c in found)
    versions = {}
    tmp = tempfile.mkdtemp(prefix="preload.")
    # Every file this writes starts with our programs' machine lines; the
    # profiles of PyTorch's step take them too.
    try:
        machine = schema.machine_lines(a.machine)
    except RuntimeError as e:
        fail(str(e), "make stage-05 build builds stage 5's programs")
    machine_file = os.path.join(tmp, "machine.txt")
    with open(machine_file, "w") as f:
        f.writelines(machine)
    for r in range(1, a.rounds + 1):
        order = libs if r % 2 == 1 else list(reversed(libs))
        for name, path in order:
            print(f"round {r} of {a.rounds}: NumPy on {name}", flush=True)
            out = os.path.join(tmp, "numpy.csv")
            counted([PYTHON, os.path.abspath(__file__), "--worker", "numpy", "--worker-out", out,
                     "--sizes", ",".join(map(str, a.sizes)), "--reps", str(a.reps),
                     "--min-seconds", str(a.min_seconds)] + (["--check"] if r == 1 else []),
                    name, path, "NumPy", "numpy", r == 1)
            for line in open(out).read().split():
                numpy_rows.append((name, r) + tuple(line.split(",")))
        if not have_torch:
            continue
        for name, path in order:
            print(f"round {r} of {a.rounds}: PyTorch's MLP on {name}", flush=True)
            out = os.path.join(tmp, f"mlp-{name}-{r}.csv")
            counted([PYTHON, os.path.join(TOOLS, "torch_mlp.py"), "--data", a.data, "--epochs",
                     str(a.epochs), "--threads", "1", "--cores", str(a.threads), "--csv", out,
                     "--seed", str(r)]
                    + MLP_RECIPE, name, path, "PyTorch", "mlp", r == 1)
            epochs = [line.split(",") for line in open(out) if line[0].isalnum()][1:]
            # model,dataset,framework,backend,threads,batch,optimizer,epoch,seconds,...,test_acc
            timed = epochs[1:] if len(epochs) > 1 else epochs  # the first warms up
            secs = statistics.median(float(e[8]) for e in timed)
            per_s = statistics.median(float(e[9]) for e in timed)
            last = epochs[-1]
            mlp_rows.append((name, r, last[0], last[1], a.threads, int(last[5]), len(epochs),
                             secs, per_s, float(last[12])))
            if r == 1:
                versions["torch"] = subprocess.run(
                    [PYTHON, "-c", "import torch; print(torch.__version__)"],
                    capture_output=True, text=True).stdout.strip()
    # Where PyTorch's step goes, op by op (torch.profiler, as chapter 7's
    # `make stage-07 profile`), on OpenBLAS and on the book's GEMM.
    profiles = []
    if have_torch:
        for name, path in libs[:2]:
            print(f"PyTorch's step profiled on {name}", flush=True)
            out = os.path.join(tmp, f"profile-{name}.csv")
            run([PYTHON, os.path.join(TOOLS, "torch_mlp.py"), "--data", a.data, "--threads", "1",
                 "--profile", out, "--profile-steps", "20" if a.quick else "100",
                 "--machine-lines", machine_file] + MLP_RECIPE,
                env_for(path), f"PyTorch's profile on {name}")
            lines = open(out).read().splitlines()
            step = next(x.split(": ")[1] for x in lines if x.startswith("# step_seconds_profiled"))
            rows = [x for x in lines if x and x[0] != "#"][1:]
            profiles += [f"{name},{step},{x}" for x in rows]
    versions["numpy"] = subprocess.run([PYTHON, "-c", "import numpy; print(numpy.__version__)"],
                                       capture_output=True, text=True).stdout.strip()

    head = list(machine)
    head += [f"# threads: {a.threads}\n", f"# rounds: {a.rounds}\n"]
    head += [f"# {k}: {v}\n" for k, v in sorted(versions.items())]
    arch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    system = os.path.realpath(f"/usr/lib/{arch}/libblas.so.3")
    root = os.path.dirname(TOOLS)
    head += [f"# library.{n}: {os.path.relpath(p, root) if p and p.startswith(root + '/') else p or system}\n"
             for n, p in libs]
    write_numpy(a.csv, head, numpy_rows, [n for n, _ in libs])
    stem = a.csv[:-4] if a.csv.endswith(".csv") else a.csv
    if mlp_rows:
        write_mlp(stem + "-mlp.csv", head, mlp_rows, [n for n, _ in libs])
    with open(stem + "-calls.csv", "w") as f:
        f.writelines(head)
        f.write(CALLS_HEADER + "\n")
        for row in call_rows:
            f.write(",".join(str(x) for x in row) + "\n")
    if profiles:
        with open(stem + "-profile.csv", "w") as f:
            f.writelines(head)
            f.write(PROFILE_HEADER + "\n" + "\n".join(profiles) + "\n")
    print(f"results: {a.csv}" + (f", {stem}-mlp.csv" if mlp_rows else "") + f", {stem}-calls.csv"
          + (f", {stem}-profile.csv" if profiles else ""))
    return 0


def write_numpy(path, head, rows, names):
    """Every round's row, then the medians (round 'median'); vs_openblas is
    the row's GFLOPS over OpenBLAS's in the same round (of the medians, for
    the median rows)."""
    gflops = {(r[0], r[1], r[2]): float(r[6]) for r in rows}
    out = []
    for r in rows:
        base = gflops.get(("openblas", r[1], r[2]))
        out.append(list(r[:7]) + [f"{float(r[6]) / base:.3f}" if base else "", r[7]])
    sizes = sorted({int(r[2]) for r in rows})
    medians = {}
    for name in names:
        for n in sizes:
            mine = [r for r in rows if r[0] == name and int(r[2]) == n]
            if mine:
                medians[(name, n)] = (statistics.median(float(r[5]) for r in mine),
                                      statistics.median(float(r[6]) for r in mine),
                                      next((r[7] for r in mine if r[7]), ""))
    for name in names:
        for n in sizes:
            if (name, n) not in medians:
                continue
            secs, g, err = medians[(name, n)]
            base = medians.get(("openblas", n), (0, 0))[1]
            out.append([name, "median", n, n, n, f"{secs:.6f}", f"{g:.2f}",
                        f"{g / base:.3f}" if base else "", err])
    with open(path, "w") as f:
        f.writelines(head)
        f.write(NUMPY_HEADER + "\n")
        for row in out:
            f.write(",".join(str(x) for x in row) + "\n")


def write_mlp(path, head, rows, names):
    """Every round's row, then the medians; vs_openblas is OpenBLAS's epoch
    time over the row's, in the same round (of the medians, for the median
    rows)."""
    out = []
    base = {r[1]: r[7] for r in rows if r[0] == "openblas"}
    for name, rnd, model, dataset, threads, batch, epochs, secs, per_s, acc in rows:
        ratio = f"{base[rnd] / secs:.3f}" if rnd in base else ""
        out.append([name, rnd, model, dataset, threads, batch, epochs, f"{secs:.4f}",
                    f"{per_s:.0f}", f"{acc:.4f}", ratio])
    med_base = None
    for name in names:
        mine = [r for r in rows if r[0] == name]
        if not mine:
            continue
        secs = statistics.median(r[7] for r in mine)
        if name == "openblas":
            med_base = secs
        first = mine[0]
        out.append([name, "median", first[2], first[3], first[4], first[5], first[6],
                    f"{secs:.4f}", f"{statistics.median(r[8] for r in mine):.0f}",
                    f"{statistics.median(r[9] for r in mine):.4f}",
                    f"{med_base / secs:.3f}" if med_base else ""])
    with open(path, "w") as f:
        f.writelines(head)
        f.write(MLP_HEADER + "\n")
        for row in out:
            f.write(",".join(str(x) for x in row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
