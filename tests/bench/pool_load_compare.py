#!/usr/bin/env python3
"""The thread pool on a busy machine (`make bench`, docs/benchmarks.md).

Runs tests/bench/pool_load.ax (medians of jitted selu and x * 2 + 1 on 100k f32, and eager
x * 2 + 1 on 100k and 10M) alternately on the machine as it is ("quiet") and with a competing
process spinning ("busy": `yes > /dev/null`, pinned to the last CPU unless --free), ROUNDS
times, and prints each figure's median over the rounds and the busy/quiet ratio. With several
--ax binaries (say, before and after a change) each round runs them all under the same
conditions. The load average is printed at the start and the end: other users' jobs count as
load too.
Usage: pool_load_compare.py --ax build/ax [--ax other/ax ...] [--rounds 5] [--free]
"""
import argparse
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOAL = {"selu_jit_100k": 1.5}  # busy / quiet, issue 11


def run_ax(ax):
    p = subprocess.run([ax, "pool_load.ax"], cwd=HERE, capture_output=True, text=True,
                       check=True)
    return {name: float(us) for name, us in (l.split() for l in p.stdout.splitlines())}


def start_spinner(pin):
    cmd = ["yes"]
    if pin:
        cmd = ["taskset", "-c", str(os.cpu_count() - 1)] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    time.sleep(0.3)  # let it settle on a CPU
    return proc


def measure(axes, busy, pin, results):
    """One run of each binary, quiet or with the spinner; appends to results[(ax, busy)]."""
    for ax in axes:
        spinner = start_spinner(pin) if busy else None
        try:
            for name, us in run_ax(ax).items():
                results.setdefault((ax, busy), {}).setdefault(name, []).append(us)
        finally:
            if spinner:
                spinner.kill()
                spinner.wait()


def report(ax, results):
    quiet, busy = results[(ax, False)], results[(ax, True)]
    print(f"{ax}")
    print(f"  {'benchmark':<18} {'quiet us':>10} {'busy us':>10} {'busy/quiet':>11}   busy runs")
    for name in quiet:
        q, b = statistics.median(quiet[name]), statistics.median(busy[name])
        goal = f" (goal <= {GOAL[name]}x)" if name in GOAL else ""
        runs = " ".join(f"{v:.0f}" if v >= 100 else f"{v:.1f}" for v in busy[name])
        print(f"  {name:<18} {q:>10.1f} {b:>10.1f} {b / q:>10.2f}x   {runs}{goal}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", action="append", help="ax binaries (default build/ax)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--free", action="store_true", help="do not pin the spinner")
    a = ap.parse_args()
    axes = [os.path.abspath(x) for x in a.ax or [os.path.join(HERE, "..", "..", "build", "ax")]]
    pin = not a.free
    print(f"load average at start: {os.getloadavg()[0]:.2f}; spinner "
          f"{'pinned to CPU %d' % (os.cpu_count() - 1) if pin else 'free'}", flush=True)
    results = {}
    for _ in range(a.rounds):
        measure(axes, False, pin, results)
        measure(axes, True, pin, results)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    for ax in axes:
        report(ax, results)


if __name__ == "__main__":
    main()
