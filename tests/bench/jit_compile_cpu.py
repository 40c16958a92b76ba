#!/usr/bin/env python3
"""CPU time of the cold background compile (the compile child, its assembler and linker, as
AX_LOG_COMPILES reports it) of four programs: conformance 17's SGD step, a 5-layer MLP's SGD
step, selu and a softmax. Builds given together run alternately, each run with an empty cache;
CPU time, unlike wall time, stays comparable on a busy machine.

Usage: jit_compile_cpu.py --ax build/ax [--ax OTHER/build/ax ...] [--runs 9]"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jit_tier_compare import SHORT  # conformance 17's SGD step, argv[1] steps  # noqa: E402

PROGRAMS = {
    "sgd_step": SHORT,  # run for one step (argv[1])
    "mlp5_step": SHORT.replace("[1, 128, 128, 1]", "[1, 64, 64, 64, 64, 1]"),
    "selu": """
def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * where(x > 0, x, alpha * exp(x) - alpha)
y = jit(selu)(random.normal(random.key(0), (100000,)))
""",
    "softmax": """
def softmax(x):
    e = exp(x - max(x, axis=1, keepdims=True))
    return e / sum(e, axis=1, keepdims=True)
y = jit(softmax)(random.normal(random.key(0), (1000, 100)))
""",
}


def compile_cpu(ax, program):
    """The CPU milliseconds of the program's background compiles, in a fresh cache."""
    with tempfile.TemporaryDirectory() as cache:
        path = os.path.join(cache, "program.ax")
        with open(path, "w") as f:
            f.write(program)
        env = dict(os.environ, XDG_CACHE_HOME=cache, AX_LOG_COMPILES="1")
        env.pop("AX_JIT_SYNC", None)
        p = subprocess.run([ax, path, "1"], capture_output=True, text=True, env=env)
        cpus = [float(m) for m in re.findall(r"([0-9.]+) ms of CPU", p.stderr)]
        if p.returncode or not cpus:
            sys.exit(f"{ax}: no background compile logged\n{p.stderr[-1500:]}")
        return sum(cpus)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", action="append")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    axs = args.ax or [os.path.join(os.path.dirname(__file__), "..", "..", "build", "ax")]
    got = {(a, name): [] for a in axs for name in PROGRAMS}
    for _ in range(args.runs):
        for name, program in PROGRAMS.items():
            for a in axs:
                got[(a, name)].append(compile_cpu(a, program))
    print(f"load average {os.getloadavg()[0]:.1f}; compile CPU ms, medians of {args.runs}")
    for name in PROGRAMS:
        row = "  ".join(f"{statistics.median(got[(a, name)]):7.1f}" for a in axs)
        print(f"{name:10s} {row}")


if __name__ == "__main__":
    main()
