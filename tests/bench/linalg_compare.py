#!/usr/bin/env python3
"""jnp.linalg in ax against NumPy on 500 x 500 matrices, side by side (`make bench`,
docs/benchmarks.md): solve, inv, det, eigh, svd, qr, cholesky (f64 and f32), alternating ROUNDS
times so that both see the same machine load; prints the best and the median call of each and
the ratio of the best ones (on a shared machine the best call is the one the neighbours
disturbed least). Both use OpenBLAS (ax its built-in LAPACK, NumPy Debian's liblapack.so.3 on
OpenBLAS's BLAS) with the same number of threads (OPENBLAS_NUM_THREADS applies to both).
Usage: linalg_compare.py --ax build/ax [--rounds 3] [--n 500]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

OPS = ["solve", "inv", "det", "eigh", "svd", "qr", "cholesky"]
CALLS = 7

AX_PROGRAM = """
la = jnp.linalg
k1, k2 = random.split(random.PRNGKey(0))
for dt in [float64, float32]:
    a = random.normal(k1, (N, N), dtype=dt) + N ** 0.5 * eye(N, dtype=dt)
    b = random.normal(k2, (N,), dtype=dt)
    s = a @ a.T
    ops = {"solve": (la.solve, (a, b)), "inv": (la.inv, (a,)), "det": (la.det, (a,)),
           "eigh": (la.eigh, (s,)), "svd": (la.svd, (a,)), "qr": (la.qr, (a,)),
           "cholesky": (la.cholesky, (s,))}
    for name in OPS:
        f, args = ops[name]
        f(*args)
        print(str(dt), name, *[timeit(f, *args, number=1, repeat=1) for _ in range(CALLS)])
"""


def numpy_times(n):
    rng = np.random.default_rng(0)
    out = {}
    for dt in [np.float64, np.float32]:
        a = (rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n)).astype(dt)
        b = rng.standard_normal(n).astype(dt)
        s = a @ a.T
        ops = {"solve": (np.linalg.solve, (a, b)), "inv": (np.linalg.inv, (a,)),
               "det": (np.linalg.det, (a,)), "eigh": (np.linalg.eigh, (s,)),
               "svd": (np.linalg.svd, (a,)), "qr": (np.linalg.qr, (a,)),
               "cholesky": (np.linalg.cholesky, (s,))}
        for name in OPS:
            f, args = ops[name]
            f(*args)
            times = []
            for _ in range(CALLS):
                t = time.perf_counter()
                f(*args)
                times.append(time.perf_counter() - t)
            out[(np.dtype(dt).name, name)] = times
    return out


def ax_times(ax, n):
    with tempfile.NamedTemporaryFile("w", suffix=".ax", delete=False) as f:
        f.write(f"N = {n}\nOPS = {OPS!r}\nCALLS = {CALLS}\n" + AX_PROGRAM)
        path = f.name
    try:
        p = subprocess.run([ax, path], capture_output=True, text=True, check=True)
    finally:
        os.unlink(path)
    out = {}
    for line in p.stdout.splitlines():
        dt, name, *times = line.split()
        out[(dt, name)] = [float(t) for t in times]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default="build/ax")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=500)
    args = ap.parse_args()
    ax_runs, np_runs = [], []
    for _ in range(args.rounds):
        ax_runs.append(ax_times(args.ax, args.n))
        np_runs.append(numpy_times(args.n))
    print(f"{args.n}x{args.n}, {args.rounds} rounds x {CALLS} calls: best (median) ms")
    print(f"{'':17} {'ax':>17} {'NumPy':>17} {'ax/NumPy':>9}")
    for key in ax_runs[0]:
        a = [t * 1e3 for r in ax_runs for t in r[key]]
        n = [t * 1e3 for r in np_runs for t in r[key]]
        print(f"{key[0]:8} {key[1]:8} {min(a):7.2f} ({statistics.median(a):7.2f}) "
              f"{min(n):7.2f} ({statistics.median(n):7.2f}) {min(a) / min(n):9.2f}")


if __name__ == "__main__":
    main()
