#!/usr/bin/python3
"""The yardstick of a race's round: one fixed GEMM, OpenBLAS's sgemm at
512 cubed (through NumPy, on the BLAS Debian's python3-numpy links: the
system OpenBLAS), the median of 9 by the wall clock, in GFLOPS on stdout.
The same GEMM as the yardstick of the GEMM harness (common/harness/bench.c);
its threads are OPENBLAS_NUM_THREADS's. Unlike the peak probe, which counts
the CPU time its threads were given, it slows when another program takes a
core: what a round is judged by (tools/compare.py).

  OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tools/yardstick.py
"""
import statistics
import sys
import time

N, REPS = 512, 9


def main():
    try:
        import numpy as np
    except ImportError:
        sys.exit("error: yardstick.py: numpy does not import (apt-get install python3-numpy)")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((N, N), dtype=np.float32)
    b = rng.standard_normal((N, N), dtype=np.float32)
    a @ b  # warm-up: pages, the thread pool
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    print(f"{2 * N ** 3 / statistics.median(times) / 1e9:.2f}")


if __name__ == "__main__":
    main()
