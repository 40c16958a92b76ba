#!/usr/bin/env python3
"""f32 transcendental functions on 10M elements: ax jit and eager against NumPy and PyTorch,
side by side in one run (`make bench`, docs/benchmarks.md).

Runs tests/bench/transcendental.ax (per-call medians) and the same functions in NumPy and
PyTorch (2 threads), alternating --rounds times so that all see the same machine load, and
prints the medians of the rounds, the issue's measure (jitted tanh(x) + exp(-x*x) against the
memory-bound x * 2.0 + 1.0, and against eager; tanh(x) + exp(x), whose exp argument's sign jit
cannot tell; also on 100M elements, beyond any cache) and the load average.
Usage: transcendental_compare.py --ax build/ax [--rounds 3]
"""
import argparse
import os
import statistics
import subprocess

import numpy as np
import torch

from jit_compare import median_time

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(2)
N = 10_000_000
FUNCTIONS = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "sin", "cos", "erf"]


def reference_times():
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    pos = np.abs(x) + np.float32(0.001)
    tx, tpos = torch.from_numpy(x), torch.from_numpy(pos)
    npf = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
           "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "sin": np.sin,
           "cos": np.cos}
    out = {
        "numpy affine": median_time(lambda: x * np.float32(2) + np.float32(1), 5, 9),
        "numpy tanh_exp": median_time(lambda: np.tanh(x) + np.exp(-x * x), 5, 9),
        "torch tanh_exp": median_time(lambda: torch.tanh(tx) + torch.exp(-tx * tx), 5, 9),
    }
    for name in FUNCTIONS:
        arg, targ = (pos, tpos) if name.startswith("log") else (x, tx)
        if name in npf:  # NumPy has no erf
            out["numpy " + name] = median_time(lambda f=npf[name], a=arg: f(a), 5, 9)
        out["torch " + name] = median_time(lambda f=getattr(torch, name), a=targ: f(a), 5, 9)
    return out


def ax_times(ax):
    p = subprocess.run([ax, os.path.join(HERE, "transcendental.ax")], capture_output=True,
                       text=True, check=True)
    times = {}
    for line in p.stdout.splitlines():
        *name, seconds = line.split()
        times[" ".join(name)] = float(seconds)
    return times


def ms(t):
    return f"{t * 1e3:8.2f}" if t is not None else "       -"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default=os.path.join(HERE, "..", "..", "build", "ax"))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    runs = {}
    loads = [os.getloadavg()[0]]
    for _ in range(a.rounds):
        for times in (ax_times(ax), reference_times()):
            for k, v in times.items():
                runs.setdefault(k, []).append(v)
        loads.append(os.getloadavg()[0])
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"10M f32, medians of {a.rounds} rounds (ms per call); numpy {np.__version__}, "
          f"torch {torch.__version__} (2 threads); load average {min(loads):.1f}-"
          f"{max(loads):.1f}")
    print(f"{'function':<10} {'ax jit':>8} {'ax eager':>8} {'NumPy':>8} {'PyTorch':>8}")
    for name in FUNCTIONS:
        print(f"{name:<10} {ms(med['jit ' + name])} {ms(med['eager ' + name])} "
              f"{ms(med.get('numpy ' + name))} {ms(med['torch ' + name])}")
    te, affine = med["jit tanh_exp"], med["jit affine"]
    print(f"tanh(x) + exp(-x*x): jit {te * 1e3:.2f} ms = {te / affine:.2f}x jitted x*2+1 "
          f"({affine * 1e3:.2f} ms; NumPy's {med['numpy affine'] * 1e3:.2f} ms); eager "
          f"{med['eager tanh_exp'] * 1e3:.2f} ms ({med['eager tanh_exp'] / te:.2f}x jit's), "
          f"NumPy {med['numpy tanh_exp'] * 1e3:.2f} ms, PyTorch "
          f"{med['torch tanh_exp'] * 1e3:.2f} ms")
    any_sign = med["jit tanh_exp_any"]
    print(f"tanh(x) + exp(x), exp's argument of unknown sign: jit {any_sign * 1e3:.2f} ms = "
          f"{any_sign / affine:.2f}x")
    te, affine = med["jit tanh_exp_100M"], med["jit affine_100M"]
    print(f"the same on 100M: jit {te * 1e3:.1f} ms = {te / affine:.2f}x jitted x*2+1 "
          f"({affine * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
