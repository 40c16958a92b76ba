#!/usr/bin/env python3
"""Fault injection, as SQLite tests its malloc failures: run a program once for every N, the
N-th allocation failing, until the program completes without reaching N.

Usage: faultinject.py [--ax build-asan/ax-fault] [--sanitized] [--jobs J] [--stride K]
                      [--full] [--no-startup] [--persist] [--slice] [--sites FILE] [-v]
                      [PROGRAM ...]

BINARY is ax linked with tests/fault/fault_alloc.c (make builds BUILD/ax-fault): AX_FAULT_AT=N
fails the N-th allocation made by ax's own code, and AX_FAULT_LOG records where it was. Every
run must end as the program does without a failure (exit 0 and the same output: the failure
was absorbed, e.g. by a cache) or with exit status 1 and error[MemoryError] on stderr, having
printed a prefix of the program's output. Anything else fails: a crash, a sanitizer report
(leaks included, with the ASan build), a hang, another error, different output.

PROGRAM: tests/lang programs (default: the set below, and tests/fault/jit_compile.ax, which
runs with an empty jit cache every time so that compiling is failed too), or '-e CODE'. The
interpreter's start (builtins, prelude.ax, random.ax: ~6000 allocations, the same for every
program) is failed at every N only for the first program; the others start at N just before
their own statements (--full: every program from N = 1; --no-startup: none). --stride K tries
every K-th N only; --persist fails every allocation from the N-th on instead of the N-th
alone. --slice is what make test runs: tests/fault/slice.ax, every N (every 4th on the ASan
build, 6 times slower). --sites FILE lists the distinct allocation sites that were failed
(addr2line's function, file:line). Prints 'ok NAME' (-v) or 'FAIL NAME: why' per program, a
summary of the sites exercised, then 'N passed, M failed'.
"""
import argparse
import concurrent.futures as futures
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LANG = os.path.join(ROOT, "tests", "lang")
SLICE = os.path.join(ROOT, "tests", "fault", "slice.ax")
# make asan's settings (a report is exit status 86), unless the caller set its own
SANITIZER_ENV = {
    "ASAN_OPTIONS": "halt_on_error=1:detect_leaks=1:abort_on_error=0:exitcode=86",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=86",
    "LSAN_OPTIONS": f"suppressions={ROOT}/tests/lsan.supp:print_suppressions=0:exitcode=86",
}
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|"
                              r"SUMMARY: UndefinedBehaviorSanitizer")

# A dozen programs that reach every part of the interpreter (tests/lang).
PROGRAMS = [
    "err_syntax_unclosed.ax",     # the parser's error path
    "eval_functions.ax",          # calls, defaults, *args/**kwargs, decorators, closures
    "eval_control.ax",            # if/for/while, comprehensions, assert
    "eval_strings.ax",            # % and format, string methods
    "builtins_py.ax",             # Python's builtins: lists, dicts, range, sorted, zip...
    "np_index.ax",                # basic and advanced indexing, .at[]
    "err_shape_mismatch.ax",      # an error with a span and a caret
    "transforms_grad_basics.ax",  # grad, value_and_grad, pytrees
    "transforms_vmap_basics.ax",  # vmap and its composition with grad and jit
    "transforms_jit_basics.ax",   # jit: tracing, fusion, codegen, the disk cache
    "random_values.ax",           # threefry and the random module
    "linalg_grad.ax",             # linalg and its derivatives
    "control_flow.ax",            # fori_loop, while_loop, cond, scan
    os.path.join(ROOT, "tests", "fault", "jit_compile.ax"),  # jit compiling, cache empty
    os.path.join(ROOT, "tests", "fault", "io.ax"),           # npy, npz, text, safetensors
    os.path.join(ROOT, "tests", "fault", "linalg_conv.ax"),  # factorisations, convolutions
    os.path.join(ROOT, "tests", "fault", "nn.ax"),           # nn and optim (every 8th N)
]
# Programs run with an empty jit cache every time: their jit compiles (tracing, fusion, code
# generation), where the others load native code from the cache the reference run filled.
COLD_JIT = {"jit_compile.ax"}
# Programs that write files: each run starts in an empty directory of its own, and must leave
# no temporary file behind (an atomic save that fails removes its .NAME.tmp-XXXXXX).
SCRATCH = {"io.ax"}
# Programs whose runs are too many to try every N in the default set (nn.ax: ~65000
# allocations, mostly the evaluator running stdlib/nn.ax, which the other programs fail at
# every N): every K-th N. Named on the command line, they run at every N.
STRIDE = {"nn.ax": 8}


class Program:
    def __init__(self, arg):
        self.code = arg[3:] if arg.startswith("-e ") else None
        self.path = None if self.code is not None else \
            (arg if os.path.exists(arg) else os.path.join(LANG, arg))
        self.name = f"-e {self.code!r}" if self.code is not None else os.path.basename(self.path)
        self.cold_jit = self.name in COLD_JIT
        self.scratch = self.name in SCRATCH
        self.options = []
        if self.path:
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    if line.startswith("#%"):
                        self.options += line[2:].split()

    def argv(self, ax):
        if self.code is not None:
            return [ax, *self.options, "-e", self.code]
        name = os.path.abspath(self.path) if self.scratch else os.path.basename(self.path)
        return [ax, *self.options, name]

    def cwd(self):
        return os.path.dirname(os.path.abspath(self.path)) if self.path else ROOT


class Runner:
    def __init__(self, a, workdir):
        self.a = a
        self.ax = os.path.abspath(a.ax)
        self.timeout = 60 * (4 if a.sanitized else 1)
        self.workdir = workdir
        self.env = dict(os.environ)
        if a.sanitized:
            for k, v in SANITIZER_ENV.items():
                self.env.setdefault(k, v)
        # jit's disk cache: one of this run's own, filled by the reference run, so that every
        # run finds the same entries (and makes the same allocations)
        self.env["XDG_CACHE_HOME"] = os.path.join(workdir, "cache")
        for k in ("AX_FAULT_AT", "AX_FAULT_PERSIST", "AX_FAULT_LOG", "AX_FAULT_COUNT"):
            self.env.pop(k, None)

    def run(self, prog, argv=None, cwd=None, **fault):
        """(status, stdout, stderr, failed_at) with failed_at: [(n, offset)] or a string
        saying why the run did not finish."""
        fd, log = tempfile.mkstemp(dir=self.workdir, suffix=".log")
        os.close(fd)
        env = dict(self.env, AX_FAULT_LOG=log, **{k: str(v) for k, v in fault.items()})
        cold = tempfile.TemporaryDirectory(dir=self.workdir) if prog.cold_jit else None
        if cold:
            env["XDG_CACHE_HOME"] = cold.name
        scratch = tempfile.TemporaryDirectory(dir=self.workdir) \
            if prog.scratch and not cwd else None
        left = []
        try:
            p = subprocess.run(argv or prog.argv(self.ax),
                               cwd=cwd or (scratch.name if scratch else prog.cwd()), env=env,
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               errors="replace", timeout=self.timeout)
            if scratch:
                left = [f for f in os.listdir(scratch.name) if ".tmp-" in f]
        except subprocess.TimeoutExpired:
            os.unlink(log)
            return f"no answer in {self.timeout} s"
        finally:
            for d in (cold, scratch):
                if d:
                    d.cleanup()
        if left:
            os.unlink(log)
            return f"temporary files left behind: {', '.join(sorted(left))}"
        with open(log) as f:
            failed = [(int(n), [int(off, 16) for off in offs])
                      for n, *offs in (line.split() for line in f)]
        os.unlink(log)
        return p.returncode, p.stdout, p.stderr, failed

    def count(self, prog, argv=None, cwd=None):
        """The reference run: (status, stdout, stderr, allocations)."""
        path = os.path.join(self.workdir, "count")
        r = self.run(prog, argv, cwd, AX_FAULT_COUNT=path)
        if isinstance(r, str):
            raise RuntimeError(f"{prog.name}: {r}")
        with open(path) as f:
            n = int(f.read())
        os.unlink(path)
        return r[0], r[1], r[2], n

    def startup(self, prog):
        """Allocations before the program's own statements: those of a program of comments
        as long as this one, read and started the same way."""
        if prog.code is not None:
            return self.count(prog, argv=[self.ax, *prog.options, "-e", ""])[3]
        size = os.path.getsize(prog.path)
        d = os.path.join(self.workdir, "empty")
        os.makedirs(d, exist_ok=True)
        empty = os.path.join(d, os.path.basename(prog.path))
        with open(empty, "w") as f:
            f.write(("#" * (size - 1) + "\n") if size else "")
        return self.count(prog, argv=[self.ax, *prog.options, os.path.basename(empty)], cwd=d)[3]

    def judge(self, ref, n, r):
        """None if run n behaved, else why not."""
        if isinstance(r, str):
            return r
        status, out, err, failed = r
        if status < 0:
            return f"killed by signal {-status}\n{tail(err)}"
        if SANITIZER_REPORT.search(err):
            return f"sanitizer report (exit {status}):\n{tail(err, 4000)}"
        ref_status, ref_out, ref_err, _ = ref
        if status == 0 and ref_status == 0:
            return None if out == ref_out else f"exit 0 with other output:\n{diff(ref_out, out)}"
        if status == 1 and "error[MemoryError]" in err:
            if not ref_out.startswith(out):
                return f"MemoryError after output that differs:\n{diff(ref_out, out)}"
            return None
        if status == ref_status and err == ref_err and out == ref_out:
            return None  # the failure was absorbed, and the program failed as it always does
        return f"exit {status} (without it: {ref_status}):\n{tail(err)}"

    def check(self, prog, first, pool, sites):
        """Runs prog for every N from `first`; returns (runs, [why it failed]) ."""
        self.count(prog)  # fills jit's disk cache: every later run finds the same entries
        ref = self.count(prog)
        if SANITIZER_REPORT.search(ref[2]) or ref[0] not in (0, 1):
            return 0, [f"fails without fault injection (exit {ref[0]}):\n{tail(ref[2])}"]
        total = ref[3]
        fault = {"AX_FAULT_PERSIST": 1} if self.a.persist else {}
        stride = self.a.stride * (1 if self.a.programs else STRIDE.get(prog.name, 1))
        ns = list(range(max(first, 1), total + 1, stride))
        problems = []
        for n, r in zip(ns, pool.map(lambda n: self.run(prog, AX_FAULT_AT=n, **fault), ns)):
            if not isinstance(r, str):
                for k, stack in r[3]:
                    sites.setdefault(stack[0], n)
                if not r[3] and n <= total:
                    problems.append((n, (), "no allocation failed (fewer allocations than "
                                     f"the {total} of the reference run: not deterministic?)"))
                    continue
            why = self.judge(ref, n, r)
            if why:
                problems.append((n, tuple(r[3][0][1]) if not isinstance(r, str) and r[3] else (),
                                 why))
        # past the last allocation the program must run as it does without the hook
        r = self.run(prog, AX_FAULT_AT=total + 1)
        if not isinstance(r, str) and r[3]:
            problems.append((total + 1, (), "an allocation failed after the last one counted"))
        return len(ns), problems


def tail(text, n=1500):
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def diff(want, got):
    w, g = want.splitlines(), got.splitlines()
    for i, (a, b) in enumerate(zip(w, g)):
        if a != b:
            return f"line {i + 1}: wanted {a!r}, got {b!r}"
    return f"wanted {len(w)} lines, got {len(g)}"


def report(ax, problems, most=12):
    """The problems grouped by the allocation site that was failed, first N of each."""
    names = describe_sites(ax, sorted({off for _, stack, _ in problems for off in stack}))
    by_site = {}
    for n, stack, why in problems:
        where = " < ".join(names[off].split(" at ")[0] for off in stack[1:])
        site = f"{names[stack[0]]} (< {where})" if stack else "?"
        by_site.setdefault(site, []).append((n, why))
    text = ""
    for site, runs in list(by_site.items())[:most]:
        n, why = runs[0]
        more = f" (and {len(runs) - 1} more N failing here)" if len(runs) > 1 else ""
        text += f"\nN={n}, failing {site}{more}:\n{why}".replace("\n", "\n    ")
    if len(by_site) > most:
        text += f"\n    (and {len(by_site) - most} more sites)"
    return text


def describe_sites(ax, offsets):
    """addr2line's 'function at file:line' for each offset (innermost inlined frame)."""
    if not offsets:
        return {}
    try:
        p = subprocess.run(["addr2line", "-f", "-C", "-e", ax, *[hex(o - 1) for o in offsets]],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return {o: hex(o) for o in offsets}
    lines = p.stdout.splitlines()
    out = {}
    for i, o in enumerate(offsets):
        fn, loc = (lines[2 * i], lines[2 * i + 1]) if 2 * i + 1 < len(lines) else ("?", "?")
        loc = re.sub(r" \(discriminator \d+\)", "", loc)
        if loc.startswith(ROOT + "/"):
            loc = loc[len(ROOT) + 1:]
        out[o] = f"{fn} at {loc}"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ax", default=os.path.join(ROOT, "build-asan", "ax-fault"))
    ap.add_argument("--sanitized", action="store_true", help="longer timeouts (ASan build)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--full", action="store_true", help="every N for every program")
    ap.add_argument("--no-startup", action="store_true",
                    help="skip the interpreter's start for the first program too")
    ap.add_argument("--persist", action="store_true", help="fail every allocation from N on")
    ap.add_argument("--slice", action="store_true", help="make test's short run")
    ap.add_argument("--sites", help="write the allocation sites exercised to this file")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("programs", nargs="*")
    a = ap.parse_args()
    if a.slice:
        a.programs = [SLICE]
        a.stride = 4 if a.sanitized else 1
    if not os.access(a.ax, os.X_OK):
        print(f"FAIL faultinject: {a.ax} was not built\n0 passed, 1 failed")
        sys.exit(1)
    passed = failed = runs = 0
    sites = {}
    with tempfile.TemporaryDirectory(prefix="ax-fault-") as workdir, \
            futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        runner = Runner(a, workdir)
        for i, arg in enumerate(a.programs or PROGRAMS):
            prog = Program(arg)
            whole = a.full or (i == 0 and not a.no_startup)
            first = 1 if whole else max(runner.startup(prog) - 5, 1)
            n, problems = runner.check(prog, first, pool, sites)
            runs += n
            if problems:
                failed += 1
                print(f"FAIL faultinject {prog.name}: {len(problems)} of {n} runs went wrong"
                      f"{report(os.path.abspath(a.ax), problems)}", flush=True)
            else:
                passed += 1
                if a.v:
                    print(f"ok   faultinject {prog.name} ({n} runs, from N={first})", flush=True)
    names = describe_sites(os.path.abspath(a.ax), sorted(sites))
    lines = sorted(set(names.values()))
    print(f"faultinject: {runs} runs, {len(sites)} allocation call sites failed "
          f"({len(lines)} distinct source lines)")
    if a.sites:
        with open(a.sites, "w") as f:
            f.write("".join(f"{line}\n" for line in lines))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
