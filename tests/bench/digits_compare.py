#!/usr/bin/env python3
"""The digits training of examples/digits.ax against the same training in PyTorch
(tests/bench/digits_torch.py), alternating ROUNDS times so that both see the same machine load
(`make bench`, docs/benchmarks.md). Wall times are whole processes: interpreter start-up, data
loading, jit compilation (ax) and `import torch` (PyTorch) included; PyTorch's own timer of the
training alone is shown too.
Usage: digits_compare.py --ax build/ax [--rounds 3] [--epochs 30]
"""
import argparse
import os
import re
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def timed(cmd, env=None):
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return dt, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=30)
    a = ap.parse_args()
    ax_times, torch_times, torch_train, ax_acc, torch_acc = [], [], [], [], []
    for _ in range(a.rounds):
        dt, out = timed([a.ax, "examples/digits.ax", str(a.epochs)])
        ax_times.append(dt)
        ax_acc.append(float(re.findall(r"test accuracy ([0-9.]+)", out)[-1]))
        dt, out = timed(["/usr/bin/python3", "tests/bench/digits_torch.py", str(a.epochs)])
        torch_times.append(dt)
        m = re.search(r"test accuracy ([0-9.]+)\s+training ([0-9.]+) s", out)
        torch_acc.append(float(m.group(1)))
        torch_train.append(float(m.group(2)))
    ax_t, torch_t = statistics.median(ax_times), statistics.median(torch_times)
    print(f"digits, {a.epochs} epochs, medians of {a.rounds} alternating runs "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"  ax       {ax_t:6.2f} s   test accuracy {statistics.median(ax_acc):.4f}")
    print(f"  PyTorch  {torch_t:6.2f} s   test accuracy {statistics.median(torch_acc):.4f}"
          f"   (training alone {statistics.median(torch_train):.2f} s)")
    print(f"  ax / PyTorch: {ax_t / torch_t:.2f}x the wall time")


if __name__ == "__main__":
    main()
