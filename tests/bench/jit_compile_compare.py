#!/usr/bin/env python3
"""Cold compile time of jit(grad(f)) for a Python-level chain of n steps (6 equations a step,
all in one fused loop), with big loops split into piece functions (the default) and as one
function (AX_JIT_PIECE_WORK=0), to show that compile time grows linearly with program size.

Usage: jit_compile_compare.py --ax build/ax [--steps 100,400,1000] [--one-function-max 400]

Each run has a fresh jit cache. Printed per run: the equations traced, the compile's wall time
as AX_LOG_COMPILES reports it, and the CPU time of the whole process (compiles run in a child
process, counted too), which is the figure to compare on a loaded machine."""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile

PROGRAM = """
n = int(argv[1])
def f(x):
    for i in range(n):
        x = sin(x) * 1.01 + 0.5
    return sum(x)
g = jit(grad(f))
print(g(ones((1000,)))[0])
"""


def run(ax, path, steps, piece_work):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AX_")}
    env["AX_LOG_COMPILES"] = "1"
    if piece_work is not None:
        env["AX_JIT_PIECE_WORK"] = str(piece_work)
    with tempfile.TemporaryDirectory(prefix="ax-bench-cache-") as cache:
        env["XDG_CACHE_HOME"] = cache
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([ax, path, str(steps)], env=env, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"ax failed: {p.stderr[-500:]}")
    eqns = re.search(r"traced grad in [0-9.]+ ms.*: (\d+) equations", p.stderr)
    ms = re.search(r"compiled grad in ([0-9.]+) ms", p.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return int(eqns.group(1)) if eqns else 0, float(ms.group(1)) if ms else float("nan"), cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default="build/ax")
    ap.add_argument("--steps", default="100,400,1000")
    ap.add_argument("--one-function-max", type=int, default=400,
                    help="largest chain also compiled as one function (it grows superlinearly)")
    a = ap.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".ax", delete=False) as f:
        f.write(PROGRAM)
        path = f.name
    try:
        print(f"{'steps':>6} {'equations':>9}  {'loop as':<14} {'compile wall':>12} {'process cpu':>11}")
        for steps in [int(s) for s in a.steps.split(",")]:
            variants = [("pieces", None)]
            if steps <= a.one_function_max:
                variants.append(("one function", 0))
            for name, work in variants:
                eqns, ms, cpu = run(a.ax, path, steps, work)
                print(f"{steps:>6} {eqns:>9}  {name:<14} {ms / 1000:>10.2f} s {cpu:>9.2f} s",
                      flush=True)
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
