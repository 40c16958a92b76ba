#!/usr/bin/env python3
"""The thread pool on a busy machine (`make bench`, docs/benchmarks.md).

Runs tests/bench/pool_load.ax (medians of jitted selu and x * 2 + 1 on 100k f32, and eager
x * 2 + 1 on 100k and 10M) alternately on the machine as it is ("quiet") and with a competing
process spinning ("busy": `yes > /dev/null`, pinned to the last CPU unless --free), ROUNDS
times, and prints each figure's median over the rounds and the busy/quiet ratio. The load
average is printed at the start and the end: other users' jobs count as load too.
Usage: pool_load_compare.py --ax build/ax [--rounds 5] [--free]
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default=os.path.join(HERE, "..", "..", "build", "ax"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--free", action="store_true", help="do not pin the spinner")
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; spinner "
          f"{'free' if a.free else 'pinned to CPU %d' % (os.cpu_count() - 1)}", flush=True)
    quiet, busy = {}, {}
    for r in range(a.rounds):
        for name, us in run_ax(ax).items():
            quiet.setdefault(name, []).append(us)
        spinner = start_spinner(not a.free)
        try:
            for name, us in run_ax(ax).items():
                busy.setdefault(name, []).append(us)
        finally:
            spinner.kill()
            spinner.wait()
        print(f"round {r + 1}: " + ", ".join(f"{n} {quiet[n][-1]:.1f}/{busy[n][-1]:.1f}"
                                             for n in quiet), flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print(f"{'benchmark':<18} {'quiet us':>10} {'busy us':>10} {'busy/quiet':>11}")
    for name in quiet:
        q, b = statistics.median(quiet[name]), statistics.median(busy[name])
        goal = f"  (goal <= {GOAL[name]}x)" if name in GOAL else ""
        print(f"{name:<18} {q:>10.1f} {b:>10.1f} {b / q:>10.2f}x{goal}")


if __name__ == "__main__":
    main()
