#!/usr/bin/env python3
"""Runs the benchmarks in tests/bench (`make bench`).

  tests/bench/bench_*.c   built by make into BUILD/bench/bench_*; run as they are (they print
                          their own measurements). Arguments for one: a comment line
                          `// bench-args: ...` in its source.
  tests/bench/*_compare.py  run with /usr/bin/python3 --ax BUILD/ax (ax against NumPy and
                          PyTorch side by side; NAME.ax beside NAME_compare.py is its ax side).
  tests/bench/*.ax        run with BUILD/ax, best wall time of --repeat runs (start-up
                          included), followed by what the program printed last.
Usage: tests/run_bench.py [--build build] [--repeat 3] [NAME ...]   (NAME filters by substring)
Exit status 1 when a benchmark fails to run.
"""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "tests", "bench")


def bench_args(src):
    with open(src, encoding="utf-8") as f:
        m = re.search(r"^//\s*bench-args:(.*)$", f.read(), re.M)
    return m.group(1).split() if m else []


def run_c(build, name):
    exe = os.path.join(build, "bench", name)
    if not os.access(exe, os.X_OK):
        return f"{exe} was not built"
    args = bench_args(os.path.join(BENCH, name + ".c"))
    print(f"== {name} {' '.join(args)}".rstrip(), flush=True)
    p = subprocess.run([exe, *args], cwd=ROOT)
    return None if p.returncode == 0 else f"exit status {p.returncode}"


def run_ax(build, name, repeat):
    ax = os.path.join(build, "ax")
    best, out = None, ""
    for _ in range(repeat):
        t = time.perf_counter()
        p = subprocess.run([ax, name + ".ax"], cwd=BENCH, capture_output=True, text=True)
        dt = time.perf_counter() - t
        if p.returncode != 0:
            return f"exit status {p.returncode}: {p.stderr[-500:]}"
        best = dt if best is None else min(best, dt)
        out = p.stdout.strip().splitlines()[-1:] or [""]
    print(f"== {name}.ax  best of {repeat}: {best * 1000:.1f} ms   {out[0]}", flush=True)
    return None


def run_compare(build, name):
    """A *_compare.py script: ax against NumPy/PyTorch in one run (Debian's /usr/bin/python3)."""
    print(f"== {name}.py", flush=True)
    p = subprocess.run(["/usr/bin/python3", os.path.join(BENCH, name + ".py"), "--ax",
                        os.path.join(build, "ax")], cwd=ROOT)
    return None if p.returncode == 0 else f"exit status {p.returncode}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    build = a.build if os.path.isabs(a.build) else os.path.join(ROOT, a.build)
    # benchmarks time native code: a call never runs on the eager kernels while its code
    # compiles (jit_tier_compare.py measures that tiered mode itself)
    os.environ["AX_JIT_SYNC"] = "1"
    files = sorted(os.listdir(BENCH)) if os.path.isdir(BENCH) else []
    wanted = lambda n: not a.names or any(s in n for s in a.names)
    failures = 0
    for f in files:
        name, ext = os.path.splitext(f)
        if ext == ".py" and name.endswith("_compare") and wanted(name):
            why = run_compare(build, name)
        elif not wanted(name) or (ext == ".c" and not name.startswith("bench_")) or \
                ext not in (".c", ".ax") or f"{name}_compare.py" in files:  # a script's side
            continue
        else:
            why = run_c(build, name) if ext == ".c" else run_ax(build, name, a.repeat)
        if why:
            failures += 1
            print(f"FAIL {f}: {why}", flush=True)
    if not files:
        print("no benchmarks in tests/bench")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
