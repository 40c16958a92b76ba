#!/usr/bin/env python3
"""Matrix products against NumPy and PyTorch, side by side in one run (`make bench`,
docs/benchmarks.md).

Runs tests/bench/matmul.ax (per-call medians) and the same products in NumPy and PyTorch
(2 threads), alternating ROUNDS times so that all see the same machine load, and prints the
medians over the rounds with ratios. With several --ax binaries (say, before and after a
change) each round runs them all. For a busy machine run it beside a pinned spinner:
`taskset -c 1 yes > /dev/null & ...; kill %1`.
Usage: matmul_compare.py --ax build/ax [--ax other/ax ...] [--rounds 5]
"""
import argparse
import os
import statistics
import subprocess

import numpy as np
import torch

from jit_compare import median_time, torch_sgd_step  # the same step jit_compare.py times

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(2)
GOALS = {  # name: (reference, ax / reference at most)
    "gram_3000_eager": ("numpy", 1.0),
    "gram_3000_jit": ("numpy", 1.0),
    "sgd_step_mlp": ("torch", 0.5),
}


def reference_times():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 128)).astype(np.float32)
    x = np.linspace(0.0, 1.0, 9000000, dtype=np.float32).reshape(3000, 3000)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    return {
        "numpy": {
            "matmul_128": median_time(lambda: a @ b, 200, 15),
            "jit_relu_matmul_128": median_time(lambda: np.maximum(a @ b + 1.0, 0.0), 200, 15),
            "gram_3000_eager": median_time(lambda: np.dot(x, x.T), 1, 7),
            "gram_3000_jit": median_time(lambda: np.dot(x, x.T), 1, 7),
            "matmul_3000": median_time(lambda: x @ x, 1, 5),
        },
        "torch": {
            "sgd_step_mlp": median_time(torch_sgd_step(), 100, 15),
            "matmul_128": median_time(lambda: ta @ tb, 200, 15),
            "jit_relu_matmul_128": median_time(lambda: torch.relu(ta @ tb + 1.0), 200, 15),
        },
    }


def ax_times(ax, script="matmul.ax"):
    p = subprocess.run([ax, script], cwd=HERE, capture_output=True, text=True, check=True)
    return {name: float(s) for name, s in (l.split() for l in p.stdout.splitlines())}


def fmt(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"


def parse_args():
    """The --ax binaries (absolute paths) and --rounds; prints the load average."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", action="append", help="ax binaries (default build/ax)")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    axes = [os.path.abspath(x) for x in a.ax or [os.path.join(HERE, "..", "..", "build", "ax")]]
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    return axes, a.rounds


def main():
    axes, rounds = parse_args()
    runs = {ax: {} for ax in axes}
    refs = {"numpy": {}, "torch": {}}
    for _ in range(rounds):
        for ax in axes:
            for name, s in ax_times(ax).items():
                runs[ax].setdefault(name, []).append(s)
        for lib, times in reference_times().items():
            for name, s in times.items():
                refs[lib].setdefault(name, []).append(s)
    print(f"load average at end: {os.getloadavg()[0]:.2f}; medians of {rounds} rounds")
    ref = {lib: {n: statistics.median(v) for n, v in t.items()} for lib, t in refs.items()}
    for ax in axes:
        print(ax)
        for name, values in runs[ax].items():
            m = statistics.median(values)
            cols = [f"  {name:<22} ax {fmt(m):>10}"]
            for lib in ("numpy", "torch"):
                if name in ref[lib]:
                    r = ref[lib][name]
                    cols.append(f"{lib} {fmt(r):>10} ({m / r:.2f}x)")
            if name in GOALS:
                lib, goal = GOALS[name]
                ok = m / ref[lib][name] <= goal
                cols.append(f"goal <= {goal}x {lib}: {'met' if ok else 'NOT met'}")
            print("  ".join(cols))


if __name__ == "__main__":
    main()
