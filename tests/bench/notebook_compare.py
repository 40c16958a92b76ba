#!/usr/bin/env python3
"""Notebook speed (issue 15: "a notebook of 50 blocks runs in well under a second plus its own
compute time; jit's disk cache makes re-runs cheap"). Medians of --rounds runs, wall time of
the whole process:
  - ax starting up and printing one number (the floor under everything else);
  - a notebook of 50 small blocks (arrays, defs, grad, prints, echoed values) run as a program,
    through `ax notebook` writing its page, and through `ax notebook --check`;
  - the neural-network tutorial under `--check`, with an empty jit cache (every jitted step
    compiled) and again with the cache it left (compiled code loaded).
Usage: tests/bench/notebook_compare.py --ax build/ax [--rounds 11]"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TUTORIAL = os.path.join(ROOT, "docs", "tutorials", "neural-networks.md")


def small_block(i):
    """Five kinds of block in turn, each a fraction of a millisecond of compute."""
    return [f"x{i} = arange({i + 3}.0)\nx{i}.sum()",
            f"def f{i}(x): sin(x) * {i}\nprint(f{i}(1.0))",
            f"grad(f{i - 1})(0.5)",
            f"print(reshape(arange(6), (2, 3)) * {i})",
            f"{{'a': {i}, 'b': [1, 2]}}"][i % 5]


def write_fifty(d):
    blocks = [small_block(i) for i in range(50)]
    with open(os.path.join(d, "fifty.md"), "w", encoding="utf-8") as f:
        f.write("# Fifty blocks\n\n" + "\n\n".join(f"```ax\n{b}\n```" for b in blocks) + "\n")
    with open(os.path.join(d, "fifty.ax"), "w", encoding="utf-8") as f:
        f.write("\n".join(blocks) + "\n")


def wall_ms(cmd, cwd, env=None):
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000


def report(what, times):
    print(f"{what}: median {statistics.median(times):.1f} ms "
          f"(min {min(times):.1f}, max {max(times):.1f}, {len(times)} runs)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", required=True)
    ap.add_argument("--rounds", type=int, default=11)
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    with tempfile.TemporaryDirectory() as d:
        write_fifty(d)
        subprocess.run([ax, "notebook", "--update", "fifty.md"], cwd=d, check=True,
                       capture_output=True)
        runs = range(a.rounds)
        report("ax -e 'print(1)'", [wall_ms([ax, "-e", "print(1)"], d) for _ in runs])
        report("50 blocks as one program", [wall_ms([ax, "fifty.ax"], d) for _ in runs])
        report("50 blocks, ax notebook (page written)",
               [wall_ms([ax, "notebook", "fifty.md"], d) for _ in runs])
        report("50 blocks, ax notebook --check",
               [wall_ms([ax, "notebook", "--check", "fifty.md"], d) for _ in runs])
        cache = os.path.join(d, "cache")
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        check = [ax, "notebook", "--check", TUTORIAL]
        cold, warm = [], []
        for _ in range(3):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(wall_ms(check, ROOT, env))
            warm.append(wall_ms(check, ROOT, env))
        report("neural-networks.md --check, empty jit cache", cold)
        report("neural-networks.md --check, warm jit cache", warm)


if __name__ == "__main__":
    main()
