#!/usr/bin/env python3
"""The quick tier (compiler/quickgen.h) against GCC's code and the eager kernels, side by side.

Runs tests/bench/jit_quick.ax with AX_JIT_QUICK=only (every loop on the quick tier's code) and
with AX_JIT_QUICK=0 AX_JIT_SYNC=1 (GCC's code), alternating --rounds times so that both see the
same machine load, and prints per workload the medians of the rounds: quick, GCC and eager
milliseconds, and quick / GCC, quick / eager; then the load average. --f64: the same workloads
on float64 arrays.
Usage: jit_quick_compare.py --ax build/ax [--rounds 3] [--f64]
"""
import argparse
import os
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(ax, cache, args, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AX_")}
    e.update(XDG_CACHE_HOME=cache, **env)
    out = subprocess.run([ax, os.path.join(HERE, "jit_quick.ax")] + args, capture_output=True,
                         text=True, env=e, check=True).stdout
    return {l.split()[0]: (float(l.split()[1]), float(l.split()[2])) for l in out.splitlines()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default=os.path.join(HERE, "..", "..", "build", "ax"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--f64", action="store_true", help="float64 arrays")
    a = ap.parse_args()
    args = ["f64"] if a.f64 else []
    ax = os.path.abspath(a.ax)
    load = os.getloadavg()[0]
    quick, gcc = [], []
    with tempfile.TemporaryDirectory(prefix="ax-bench-quick-") as cache:
        for _ in range(a.rounds):
            quick.append(run(ax, cache, args, AX_JIT_QUICK="only", AX_JIT_SYNC="1"))
            gcc.append(run(ax, cache, args, AX_JIT_QUICK="0", AX_JIT_SYNC="1"))
    print(f"{'float64' if a.f64 else 'float32'}: medians of {a.rounds} rounds (ms); load average {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print(f"{'workload':<20} {'quick':>8} {'GCC':>8} {'eager':>8} {'quick/GCC':>10} "
          f"{'quick/eager':>12}")
    for name in quick[0]:
        q = statistics.median(r[name][0] for r in quick)
        g = statistics.median(r[name][0] for r in gcc)
        e = statistics.median([r[name][1] for r in quick] + [r[name][1] for r in gcc])
        print(f"{name:<20} {q:8.3f} {g:8.3f} {e:8.3f} {q / g:10.2f} {q / e:12.2f}")


if __name__ == "__main__":
    main()
