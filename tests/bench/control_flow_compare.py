#!/usr/bin/env python3
"""Cold compile times of jitted loops (issue 12): a fori_loop of 10, 1000 and 10000 steps,
each compiled in a fresh process with an empty jit cache, medians of --rounds runs; then
tests/bench/control_flow.ax (run time of 1e5 steps, eager scan, grad(jit) against jit(grad)).
Usage: tests/bench/control_flow_compare.py --ax build/ax [--rounds 7]"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile

PROGRAM = """from jax import lax
f = jit(lambda x: lax.fori_loop(0, {n}, lambda i, x: x * 0.99 + sin(x), x))
f(1.0)
"""


def cold_compile_ms(ax, n):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache, AX_LOG_COMPILES="1")
        p = subprocess.run([ax, "-e", PROGRAM.format(n=n)], env=env, capture_output=True,
                           text=True, check=True)
    m = re.search(r"compiled \S+ in ([0-9.]+) ms", p.stderr)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    for n in (10, 1000, 10000):
        times = [cold_compile_ms(a.ax, n) for _ in range(a.rounds)]
        print(f"cold jit of a fori_loop of {n} steps: median {statistics.median(times):.1f} ms "
              f"(min {min(times):.1f}, max {max(times):.1f})", flush=True)
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([a.ax, os.path.join(here, "control_flow.ax")], check=True)


if __name__ == "__main__":
    main()
