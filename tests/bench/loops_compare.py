#!/usr/bin/env python3
"""Jitted loops over transposed operands and bool masks against NumPy, side by side in one run
(docs/benchmarks.md).

Runs tests/bench/loops.ax (per-call medians) with each --ax binary (say, before and after a
change) and the same expressions in NumPy, alternating ROUNDS times so that all see the same
machine load, and prints the medians over the rounds. For a busy machine run it beside a pinned
spinner: `taskset -c 1 yes > /dev/null & ...; kill %1`.
Usage: loops_compare.py --ax build/ax [--ax other/ax ...] [--rounds 5]
"""
import os
import statistics

import numpy as np

from jit_compare import median_time
from matmul_compare import ax_times, fmt, parse_args

HERE = os.path.dirname(os.path.abspath(__file__))


def reference_times():
    """NumPy's medians of the expressions loops.ax times, by name."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((1024, 1024)).astype(np.float32) for _ in range(2))
    s, c, h, g = (rng.standard_normal((128, 128)).astype(np.float32) for _ in range(4))
    p = rng.standard_normal((128, 128)) > 0

    def mask_sum0():
        w = np.where(p, s, c)
        return w, w.sum(axis=0)

    def sgd_loop():
        w = np.where(p, s, c)
        return w, w.sum(axis=0), g - np.float32(0.01) * h.T

    return {
        "sub_T_1024": median_time(lambda: b - np.float32(0.01) * a.T, 10, 7),
        "sub_1024": median_time(lambda: b - np.float32(0.01) * a, 10, 7),
        "sum0_T_1024": median_time(lambda: (a.T * b).sum(axis=0), 10, 7),
        "sum1_T_1024": median_time(lambda: (a.T * b).sum(axis=1), 10, 7),
        "sum1_1024": median_time(lambda: (a * b).sum(axis=1), 10, 7),
        "mask_sum0_128": median_time(mask_sum0, 500, 15),
        "sgd_loop_128": median_time(sgd_loop, 500, 15),
    }


reference_times.names = ["sub_T_1024", "sub_1024", "sum0_T_1024", "sum1_T_1024", "sum1_1024",
                         "mask_sum0_128", "sgd_loop_128"]


def main():
    axes, rounds = parse_args()
    samples = {}  # (binary or "NumPy", name): seconds, one per round
    for _ in range(rounds):
        sides = [(ax, ax_times(ax, "loops.ax")) for ax in axes] + [("NumPy", reference_times())]
        for who, times in sides:
            for name, s in times.items():
                samples.setdefault((who, name), []).append(s)
    med = {key: statistics.median(v) for key, v in samples.items()}
    print(f"load average at end: {os.getloadavg()[0]:.2f}; medians of {rounds} rounds")
    for name in reference_times.names:
        t_ref = med[("NumPy", name)]
        cells = [f"{os.path.relpath(ax)} {fmt(med[(ax, name)])} ({med[(ax, name)] / t_ref:.2f}x)"
                 for ax in axes]
        print(f"{name:<14} " + "   ".join(cells) + f"   NumPy {fmt(t_ref)}")


if __name__ == "__main__":
    main()
