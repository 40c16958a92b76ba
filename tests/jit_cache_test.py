#!/usr/bin/env python3
"""jit's disk cache, its log and its fallback, through the ax binary (run by run_tests.py).

Each check runs ax in a fresh cache directory ($XDG_CACHE_HOME) and asserts both the values a
program prints and what AX_LOG_COMPILES says: compiled, then loaded by a second process;
corrupt, truncated, missing or unreadable entries rebuilt without a crash; the reasons for
cache misses; one warning and correct results when no assembler is on PATH; concurrent
processes. Prints "N passed, M failed"; exit status 1 on failure.
Usage: jit_cache_test.py [--ax build/ax] [-v] [CHECK ...]
"""
import argparse
import glob
import os
import re
import stat
import subprocess
import sys
import tempfile

SCALE = float(os.environ.get("AX_TEST_TIMEOUT_SCALE", "1"))

PROGRAM = """
def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * where(x > 0, x, alpha * exp(x) - alpha)
x = linspace(-2.0, 2.0, 9)
print(jit(selu)(x))
print(selu(x))
"""
# NumPy 1.24 gives the same but -1.1084235 (its exp is 1 ulp off there)
SELU_9 = ("[-1.5161895  -1.3622411  -1.1084234  -0.68994844  0.          0.525\n"
          "  1.05        1.5749999   2.1       ]")


class Failure(Exception):
    pass


class Ctx:
    def __init__(self, ax, root):
        self.ax, self.root = ax, root
        self.cache = os.path.join(root, "cache")

    def run(self, program=PROGRAM, env=None, cache=None, expect_ok=True):
        e = dict(os.environ, XDG_CACHE_HOME=cache or self.cache, AX_LOG_COMPILES="1")
        e.update(env or {})
        p = subprocess.run([self.ax, "-e", program], capture_output=True, text=True, env=e,
                           timeout=60 * SCALE)
        if expect_ok and p.returncode != 0:
            raise Failure(f"exit {p.returncode}: {p.stderr[-400:]}")
        return p

    def entries(self, ext):
        return glob.glob(os.path.join(self.cache, "ax", "*." + ext))


def expect(cond, why):
    if not cond:
        raise Failure(why)


def selu_ok(p):
    want = SELU_9 + "\n" + SELU_9 + "\n"
    expect(p.stdout == want, f"wrong output:\n{p.stdout}")


CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


@check
def second_process_loads(ctx):
    p1 = ctx.run()
    selu_ok(p1)
    expect(re.search(r"ax: jit: compiled selu in [0-9.]+ ms", p1.stderr), p1.stderr)
    expect(len(ctx.entries("so")) == 1 and len(ctx.entries("sum")) == 1,
           f"cache holds {os.listdir(os.path.join(ctx.cache, 'ax'))}")
    p2 = ctx.run()
    selu_ok(p2)
    m = re.search(r"ax: jit: loaded selu in ([0-9.]+) ms", p2.stderr)
    expect(m, p2.stderr)


def damage_then_rebuild(ctx, damage):
    selu_ok(ctx.run())
    damage(ctx)
    p = ctx.run()
    selu_ok(p)
    expect("compiled selu" in p.stderr, f"not rebuilt after damage:\n{p.stderr}")
    p = ctx.run()
    selu_ok(p)
    expect("loaded selu" in p.stderr, f"rebuilt entry not loaded:\n{p.stderr}")


@check
def corrupt_so_is_rebuilt(ctx):
    def corrupt(c):
        path = c.entries("so")[0]
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            f.write(b"\xde\xad\xbe\xef" * 16)
    damage_then_rebuild(ctx, corrupt)


@check
def truncated_so_is_rebuilt(ctx):
    def truncate(c):
        path = c.entries("so")[0]
        os.truncate(path, os.path.getsize(path) // 3)
    damage_then_rebuild(ctx, truncate)


@check
def missing_sum_is_rebuilt(ctx):
    damage_then_rebuild(ctx, lambda c: os.unlink(c.entries("sum")[0]))


@check
def garbage_sum_is_rebuilt(ctx):
    def garbage(c):
        with open(c.entries("sum")[0], "w") as f:
            f.write("not a checksum\n")
    damage_then_rebuild(ctx, garbage)


@check
def so_replaced_by_directory(ctx):
    selu_ok(ctx.run())
    path = ctx.entries("so")[0]
    os.unlink(path)
    os.mkdir(path)
    p = ctx.run()  # cannot publish over a directory: still correct, never a crash
    selu_ok(p)
    os.rmdir(path)


@check
def unwritable_cache_dir(ctx):
    os.makedirs(os.path.join(ctx.cache, "ax"))
    os.chmod(os.path.join(ctx.cache, "ax"), stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(os.path.join(ctx.cache, "ax"), os.W_OK):  # root ignores modes
            return
        p = ctx.run()
        selu_ok(p)
        expect("compiled selu" in p.stderr, p.stderr)
    finally:
        os.chmod(os.path.join(ctx.cache, "ax"), stat.S_IRWXU)


@check
def cache_home_is_a_file(ctx):
    path = os.path.join(ctx.root, "a_file")
    with open(path, "w") as f:
        f.write("x")
    p = ctx.run(cache=path)
    selu_ok(p)
    expect("compiled selu" in p.stderr, p.stderr)


@check
def miss_reasons_are_logged(ctx):
    program = """
f = jit(lambda x: x * 2.0)
print(f(ones((3,))), f(ones((4,))), f(ones((4,))), f(ones((4,), dtype=int32)))
g = jit(lambda x, n: x * n, static_argnums=1)
print(g(ones((2,)), 2), g(ones((2,)), 3))
"""
    p = ctx.run(program)
    expect(p.stdout == "[2. 2. 2.] [2. 2. 2. 2.] [2. 2. 2. 2.] [2. 2. 2. 2.]\n[2. 2.] [3. 3.]\n",
           p.stdout)
    traced = [l for l in p.stderr.splitlines() if "traced" in l]
    expect(len(traced) == 5, "\n".join(traced))
    expect("(first call)" in traced[0], traced[0])
    expect("new shape: f32[4] (was f32[3])" in traced[1], traced[1])
    expect("new dtype: i32[4]" in traced[2], traced[2])
    expect("(first call)" in traced[3], traced[3])
    expect("new static argument" in traced[4], traced[4])


@check
def no_assembler_falls_back(ctx):
    empty = os.path.join(ctx.root, "empty_path")
    os.mkdir(empty)
    program = """
f = jit(lambda x: exp(x) * 2.0)
g = jit(lambda x: x @ x.T)
print(f(ones((2,))), g(ones((2, 2))))
"""
    p = ctx.run(program, env={"PATH": empty})
    expect(p.stdout == "[5.4365635 5.4365635] [[2. 2.]\n [2. 2.]]\n", p.stdout)
    warnings = [l for l in p.stderr.splitlines() if l.startswith("ax: warning: jit")]
    expect(len(warnings) == 1, p.stderr)
    expect("'as'" in warnings[0], warnings[0])


@check
def concurrent_processes(ctx):
    e = dict(os.environ, XDG_CACHE_HOME=ctx.cache, AX_LOG_COMPILES="1")
    procs = [subprocess.Popen([ctx.ax, "-e", PROGRAM], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=e) for _ in range(3)]
    for proc in procs:
        out, err = proc.communicate(timeout=60 * SCALE)
        expect(proc.returncode == 0, err)
        selu_ok(subprocess.CompletedProcess([], 0, out, err))
    p = ctx.run()
    selu_ok(p)
    expect("loaded selu" in p.stderr, p.stderr)
    leftovers = [f for f in os.listdir(os.path.join(ctx.cache, "ax")) if "tmp" in f]
    expect(not leftovers, f"temporary files left: {leftovers}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default=os.path.join(os.path.dirname(__file__), "..", "build", "ax"))
    ap.add_argument("-v", action="store_true")
    ap.add_argument("checks", nargs="*")
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    passed = failed = 0
    for fn in CHECKS:
        if a.checks and fn.__name__ not in a.checks:
            continue
        with tempfile.TemporaryDirectory(prefix="ax-jit-") as root:
            try:
                fn(Ctx(ax, root))
                passed += 1
                if a.v:
                    print(f"ok {fn.__name__}")
            except Exception as e:  # one failing check never stops the others
                failed += 1
                print(f"FAIL jit_cache_test {fn.__name__}: {type(e).__name__}: {e}")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
