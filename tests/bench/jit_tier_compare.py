#!/usr/bin/env python3
"""Tiered jit (docs/jit.md, "Tiered execution"): conformance 17's SGD step in fresh processes.

Per trial, an empty jit cache: tests/bench/jit_tier.ax runs the first call (on the quick
tier's code, compiler/quickgen.h, while GCC compiles in the background), 300 steps, then times
steps; a second process on the now filled cache does the same (its code loads from the disk);
the same cold process with AX_JIT_QUICK=0 (the eager kernels while GCC compiles). Prints the
medians over the trials: the first call with an empty cache, the 300 steps, their last 50
against the same of the process that loaded its code (issue 17's goal: at most 1.5x, the loop
ending on native steps: the quick tier's or GCC's), a step after them against a step of the
process that loaded its code,
the background compile's wall and CPU time, at which call the native code took over and how
long after the end of the 300 steps its compile ended (AX_LOG_COMPILES), and the machine's
load average (os.getloadavg) before and after.
Also the same cold process with AX_JIT_SYNC=1 (the first call waits for the compile); and
whether the end of a process should wait for compiles still running (AX_JIT_EXIT_WAIT): a short
script (10 or 100 SGD steps, then exit) run three times in a row on a fresh cache, its wall
times when the end stops the compile (AX_JIT_EXIT_WAIT=0), when it waits (the default), and
with AX_JIT_SYNC=1.
Usage: jit_tier_compare.py --ax build/ax [--trials 7] [--quick]
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(ax, cache, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AX_")}
    e.update(XDG_CACHE_HOME=cache, AX_LOG_COMPILES="1", **env)
    p = subprocess.run([ax, os.path.join(HERE, "jit_tier.ax")], capture_output=True, text=True,
                       env=e, check=True)
    got = {k: float(v) for k, v in (l.split() for l in p.stdout.splitlines())}
    m = re.search(r"native from its call (\d+) on", p.stderr)
    got["native_from_call"] = float(m.group(1)) if m else float("nan")
    got["quick"] = "ax: jit: quick code for" in p.stderr
    m = re.search(r"in ([0-9.]+) ms in the background \(([0-9.]+) ms after it was asked for, "
                  r"([0-9.]+) ms of CPU\)", p.stderr)
    got["compile_wall_ms"] = float(m.group(1)) if m else float("nan")
    got["compile_asked_ms"] = float(m.group(2)) if m else float("nan")
    got["compile_cpu_ms"] = float(m.group(3)) if m else float("nan")
    return got


SHORT = """
def init_mlp_params(key, sizes):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, sub = random.split(key)
        params = params + [{"weights": random.normal(sub, (n_in, n_out)) * sqrt(2.0 / n_in),
                            "biases": ones((n_out,))}]
    params
def forward(params, x):
    for layer in params[:-1]:
        x = relu(x @ layer["weights"] + layer["biases"])
    x @ params[-1]["weights"] + params[-1]["biases"]
def loss(params, x, y): mean((forward(params, x) - y) ** 2)
@jit
def update(params, x, y):
    grads = grad(loss)(params, x, y)
    tree_map(lambda p, g: p - 0.01 * g, params, grads)
xs = random.normal(random.key(5), (128, 1))
ys = sin(xs)
params = init_mlp_params(random.key(6), [1, 128, 128, 1])
for i in range(int(argv[1])):
    params = update(params, xs, ys)
print(loss(params, xs, ys))
"""


def short_runs(ax, steps, trials, **env):
    """Median wall ms of runs 1, 2 and 3 of the short script on a fresh cache."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("AX_")}
    e.update(env)
    runs = [[], [], []]
    for _ in range(trials):
        with tempfile.TemporaryDirectory(prefix="ax-bench-tier-") as cache:
            e["XDG_CACHE_HOME"] = cache
            for k in range(3):
                t = time.perf_counter()
                subprocess.run([ax, "-e", SHORT, str(steps)], env=e, check=True,
                               capture_output=True)
                runs[k].append((time.perf_counter() - t) * 1000)
    return [statistics.median(r) for r in runs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default=os.path.join(HERE, "..", "..", "build", "ax"))
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="the 300 steps only, not the short scripts")
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    load_before = os.getloadavg()
    cold, warm, sync, eager = [], [], [], []
    for _ in range(a.trials):
        with tempfile.TemporaryDirectory(prefix="ax-bench-tier-") as cache:
            cold.append(run(ax, cache))
            warm.append(run(ax, cache))
        with tempfile.TemporaryDirectory(prefix="ax-bench-tier-") as cache:
            eager.append(run(ax, cache, AX_JIT_QUICK="0"))
        with tempfile.TemporaryDirectory(prefix="ax-bench-tier-") as cache:
            sync.append(run(ax, cache, AX_JIT_SYNC="1"))
    load_after = os.getloadavg()

    def med(runs, key):
        return statistics.median(r[key] for r in runs)

    print(f"medians of {a.trials} trials; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after (1 min)")
    print(f"first call, empty cache:   {med(cold, 'first_call_ms'):8.2f} ms tiered, "
          f"{med(eager, 'first_call_ms'):8.2f} ms with AX_JIT_QUICK=0, "
          f"{med(sync, 'first_call_ms'):8.2f} ms with AX_JIT_SYNC=1, "
          f"{med(warm, 'first_call_ms'):8.2f} ms from the disk cache")
    print(f"300 steps from the start:  {med(cold, 'steps300_ms'):8.2f} ms tiered, "
          f"{med(eager, 'steps300_ms'):8.2f} ms with AX_JIT_QUICK=0, "
          f"{med(sync, 'steps300_ms'):8.2f} ms with AX_JIT_SYNC=1, "
          f"{med(warm, 'steps300_ms'):8.2f} ms from the disk cache")
    for label, runs in (("tiered", cold), ("AX_JIT_QUICK=0", eager)):
        last = [c["last50_ms"] / w["last50_ms"] for c, w in zip(runs, warm)]
        gcc = sum(c["native_from_call"] <= 300 for c in runs)
        quick = sum(c["quick"] and not c["native_from_call"] <= 300 for c in runs)
        print(f"the last 50 of the 300:    {med(runs, 'last50_ms'):8.2f} ms {label}, "
              f"{med(warm, 'last50_ms'):8.2f} ms from the disk cache: ratio "
              f"{statistics.median(last):.2f} (max {max(last):.2f}; <= 1.5 in "
              f"{sum(r <= 1.5 for r in last)} of {len(last)}); the loop ended on GCC's code in "
              f"{gcc}, on the quick tier's in {quick}, on the eager kernels in "
              f"{len(runs) - gcc - quick} of {len(runs)}")
    ratios = [c["step_after300_ms"] / w["step_after300_ms"] for c, w in zip(cold, warm)]
    print(f"a step after 300:          {med(cold, 'step_after300_ms'):8.3f} ms (cold process), "
          f"{med(warm, 'step_after300_ms'):8.3f} ms (disk cache): ratio "
          f"{statistics.median(ratios):.2f} (max {max(ratios):.2f})")
    calls = [c["native_from_call"] for c in cold]
    cpu = [c["compile_cpu_ms"] for c in cold]
    print(f"the background compile:    {med(cold, 'compile_wall_ms'):8.2f} ms wall, "
          f"{statistics.median(cpu):8.2f} ms of CPU (range {min(cpu):.1f}-{max(cpu):.1f})")
    print(f"native code from call:     {statistics.median(calls):.0f} "
          f"(range {min(calls):.0f}-{max(calls):.0f}; nan: after the last call)")
    # the critical path: the code is asked for within the first call (after its trace), so
    # "after it was asked for" is about the time from the first call to the native code
    late = [c["compile_asked_ms"] - c["steps300_ms"] for c in cold]
    print(f"native code ready:         {med(cold, 'compile_asked_ms'):8.2f} ms after it was asked "
          f"for, {statistics.median(late):+.2f} ms after the 300 steps ended (range "
          f"{min(late):+.1f} to {max(late):+.1f})")
    if a.quick:
        return
    print("a short script run 3 times on a fresh cache (wall ms, medians):")
    for steps in (10, 100):
        for label, env in (("end stops compiles (AX_JIT_EXIT_WAIT=0)", {"AX_JIT_EXIT_WAIT": "0"}),
                           ("end waits for them (default)", {}),
                           ("AX_JIT_SYNC=1", {"AX_JIT_SYNC": "1"})):
            r = short_runs(ax, steps, a.trials, **env)
            print(f"  {steps:3d} steps, {label:<40} {r[0]:7.1f} {r[1]:7.1f} {r[2]:7.1f}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
