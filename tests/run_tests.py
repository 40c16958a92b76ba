#!/usr/bin/env python3
"""Runs every test of ax and ends with one line: 'N passed, N failed', after 'N skipped ...'
when some tests could not run here (a skipped test is not counted as passed).

Usage: tests/run_tests.py [--build build] [--sanitized] [--build-failed] [--only SUITE,...]
                          [-v] [FILE ...]

Suites (--only unit,lang,quick,conformance,docs,repl,jit,notebook,robust,io,fuzz,fault,mpi,
        parallel):
  unit         the cmocka programs BUILD/tests/test_* (one count per test case), in parallel
  lang         tests/lang/*.ax, examples/*.ax, and the landed ../shared/conformance/next programs
  quick        the lang programs that use jit or pmap, again with AX_JIT_QUICK=only: every call
               on the quick tier's code (compiler/quickgen.h), never GCC's
  conformance  ../shared/conformance/*.ax, when ../shared exists
  docs         the code blocks of docs/*.md and README.md (see "Executable docs" below)
  repl         tests/repl_test.py (one count per check)
  jit          tests/jit_test.py: jit's disk cache, log and fallback end to end (one per check)
  notebook     `ax notebook --check` on each tutorial (docs/tutorials/**/*.md), and
               tests/notebook_test.py: the notebook runner, plots, show_graph, the page in
               Chromium (one per check; a check whose tool is missing is counted as skipped)
  robust       tests/robustness_test.py: extreme integers at every builtin (one per check)
  io           tests/io_test.py: array I/O against NumPy, corrupt files, atomic saves (per check)
  fuzz         BUILD/fuzz/fuzz_ax on tests/fuzz/corpus and tests/lang, then a fixed number of
               seeded mutations of them (the same inputs every run; docs/testing.md)
  fault        tests/fault/faultinject.py --slice: tests/fault/slice.ax with its N-th allocation
               failing, for every N
  mpi          tests/mpi/*.ax, each run by `mpirun -n 2` (skipped without OpenMPI)
  parallel     only the tests of devices, pmap and collectives (what `make tsan` runs): the
               unit test test_collectives, tests/lang/pmap_*.ax, conformance 20, the mpi suite
FILE arguments run just those .ax programs or .md documents (a tutorial: as a notebook).

Expectations in an .ax program (those of ../shared/conformance/run.py, plus two):
  #> TEXT      the next line of stdout is TEXT (numbers: rel 1e-5, abs 1e-6; spaces ignored)
  #~ REGEX     the next line of stdout matches REGEX
  #* REGEX     REGEX matches somewhere in stdout (consumes no line)
  #! error[KIND]   the program fails: exit status 1 and 'error[KIND]' on stderr
  #@ LINE:COL  stderr contains ' --> FILE:LINE:COL' (FILE: the program's file name)
  #? REGEX     REGEX matches somewhere in stderr (warnings of a program that succeeds)
  #% OPTIONS   command-line options for ax, e.g. '#% --x64'
Lines printed beyond the expectations fail, unless all expectations are #*.
A program runs in its own directory, named by its base name, as run.py does.

Executable docs: in docs/*.md and README.md,
  ```ax           a program, checked as above (a block without expectations must still run
                  without error); blocks are independent programs
  ```ax-session   a REPL transcript: lines after '>>> ' and '... ' are typed (a bare '...'
                  is an empty line), every other line is expected output (stdout and stderr,
                  compared as #> lines); it runs through `ax -i`
  ```ax norun     shown, not run (also any other language tag)
Only the standard library is used (python3 on Debian 12).
"""
import argparse
import concurrent.futures as futures
import copy
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
NPROC = os.cpu_count() or 2
SKIPPED_CASE = re.compile(r"^\[ +SKIPPED +\] (?!\d+ test)", re.M)  # a cmocka case's skip
# ../shared/conformance/next programs whose feature has landed: run with the lang suite
NEXT_CONFORMANCE = ["18_lax_control_flow.ax", "19_nn_optim.ax", "20_pmap.ax"]
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|"
                              r"SUMMARY: UndefinedBehaviorSanitizer|WARNING: ThreadSanitizer")

# ---------------------------------------------------------------- results


class Results:
    def __init__(self, verbose):
        self.passed = self.failed = self.skipped = 0
        self.verbose = verbose
        self.suites = []

    def ok(self, name, n=1):
        self.passed += n
        if self.verbose:
            print(f"ok   {name}")

    def fail(self, name, why, n=1):
        self.failed += n
        why = why.strip().replace("\n", "\n    ")
        print(f"FAIL {name}: {why}", flush=True)


def tail(text, n=1500):
    return text if len(text) <= n else "..." + text[-n:]

# ---------------------------------------------------------------- comparing output


TOKEN = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)|\S")


def is_num(tok):
    try:
        float(tok)
        return True
    except ValueError:
        return False


def same_line(want, got):
    """run.py's rule: token by token, numbers within rel 1e-5 / abs 1e-6, spaces ignored."""
    a, b = TOKEN.findall(want), TOKEN.findall(got)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if is_num(x) and is_num(y):
            fx, fy = float(x), float(y)
            if math.isnan(fx) or math.isnan(fy):
                if not (math.isnan(fx) and math.isnan(fy)):
                    return False
            elif not math.isclose(fx, fy, rel_tol=1e-5, abs_tol=1e-6):
                return False
        elif x != y:
            return False
    return True

# ---------------------------------------------------------------- .ax programs


def parse_expectations(lines):
    exp = {"lines": [], "anywhere": [], "error": None, "spans": [], "options": [], "stderr": []}
    for line in lines:
        s = line.strip()
        tag, rest = s[:2], s[2:].strip()
        if tag == "#>":
            exp["lines"].append(("text", rest))
        elif tag == "#~":
            exp["lines"].append(("regex", rest))
        elif tag == "#*":
            exp["anywhere"].append(rest)
        elif tag == "#!":
            exp["error"] = rest
        elif tag == "#@":
            exp["spans"].append(rest)
        elif tag == "#%":
            exp["options"] += rest.split()
        elif tag == "#?":
            exp["stderr"].append(rest)
    return exp


def run_ax(ctx, args, cwd, stdin=None, merge=False):
    """Runs ax; returns (status, stdout, stderr) or a string saying why it did not finish."""
    try:
        p = subprocess.run([*ctx.launcher, ctx.ax, *args], cwd=cwd, input=stdin, text=True,
                           stdout=subprocess.PIPE, env=ctx.env,
                           stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                           timeout=ctx.timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return f"no answer in {ctx.timeout} s"
    except OSError as e:
        return f"cannot run {ctx.ax}: {e}"
    return p.returncode, p.stdout, p.stderr or ""


def crash_report(status, stderr):
    """Why a run counts as a crash whatever was expected, or None."""
    if status < 0:
        return f"killed by signal {-status}\nstderr: {tail(stderr)}"
    if SANITIZER_REPORT.search(stderr):
        return f"sanitizer report (exit {status}):\n{tail(stderr, 4000)}"
    if status not in (0, 1):
        return f"exit status {status}\nstderr: {tail(stderr)}"
    return None


def check_program(ctx, path, lines=None):
    """None when the program at `path` behaves as its comments say, else why not."""
    if lines is None:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    exp = parse_expectations(lines)
    name = os.path.basename(path)
    r = run_ax(ctx, [*exp["options"], name], cwd=os.path.dirname(os.path.abspath(path)))
    if isinstance(r, str):
        return r
    status, stdout, stderr = r
    crash = crash_report(status, stderr)
    if crash:
        return crash
    out = stdout.splitlines()
    for i, (kind, want) in enumerate(exp["lines"]):
        if i >= len(out):
            return (f"output ended before expectation {i + 1}: {want!r}\n"
                    f"stdout: {tail(stdout, 600)}\nstderr: {tail(stderr, 600)}")
        good = same_line(want, out[i]) if kind == "text" else re.search(want, out[i])
        if not good:
            return f"line {i + 1}: wanted {want!r}, got {out[i]!r}\nstderr: {tail(stderr, 600)}"
    for rx in exp["anywhere"]:
        if re.search(rx, stdout) is None:
            return f"no match for {rx!r} in the output:\n{tail(stdout, 800)}"
    for rx in exp["stderr"]:
        if re.search(rx, stderr) is None:
            return f"no match for {rx!r} on stderr:\n{tail(stderr, 800)}"
    if len(out) > len(exp["lines"]) and not (exp["anywhere"] and not exp["lines"]):
        return f"unexpected extra output: {out[len(exp['lines'])]!r}"
    if exp["error"]:
        if status != 1 or exp["error"] not in stderr:
            return (f"wanted exit 1 with {exp['error']!r} on stderr; got exit {status}, "
                    f"stderr: {tail(stderr, 600)}")
    elif status != 0:
        return f"exit status {status}\nstderr: {tail(stderr)}"
    for span in exp["spans"]:
        if f" --> {name}:{span}" not in stderr:
            return f"wanted ' --> {name}:{span}' on stderr; got: {tail(stderr, 600)}"
    return None

# ---------------------------------------------------------------- executable docs


FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)([^`]*)$")


def doc_blocks(path):
    """(line number, kind, lines) for each ax / ax-session block of a Markdown file."""
    blocks, cur = [], None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f.read().splitlines(), 1):
            if cur is None:
                m = FENCE.match(line)
                if m:
                    lang, extra = m.group(3), m.group(4).split()
                    kind = lang if lang in ("ax", "ax-session") and "norun" not in extra else None
                    cur = (n, kind, m.group(2), len(m.group(1)), [])
            elif line.strip().startswith(cur[2]) and not line.strip().strip(cur[2][0]):
                if cur[1]:
                    blocks.append((cur[0], cur[1], cur[4]))
                cur = None
            else:
                indent = cur[3]
                cur[4].append(line[indent:] if line[:indent].strip() == "" else line)
    return blocks


def check_session(ctx, lines):
    typed, want = [], []
    for line in lines:
        if line.startswith(">>> ") or line == ">>>":
            typed.append(line[4:])
        elif line.startswith("... ") or line == "...":
            typed.append(line[4:])
        else:
            want.append(line)
    while want and not want[-1].strip():
        want.pop()
    r = run_ax(ctx, ["-i"], cwd=ROOT, stdin="\n".join(typed) + "\n", merge=True)
    if isinstance(r, str):
        return r
    status, out, _ = r
    crash = crash_report(status, out)
    if crash or status != 0:
        return crash or f"exit status {status}\n{tail(out)}"
    got = out.splitlines()
    while got and not got[-1].strip():
        got.pop()
    for i, w in enumerate(want):
        if i >= len(got):
            return f"output ended before {w!r}\noutput:\n{tail(out, 800)}"
        if not same_line(w, got[i]):
            return f"output line {i + 1}: wanted {w!r}, got {got[i]!r}"
    if len(got) > len(want):
        return f"unexpected extra output: {got[len(want)]!r}"
    return None


def doc_jobs(ctx, path):
    rel = os.path.relpath(path, ROOT)
    jobs = []
    for lineno, kind, lines in doc_blocks(path):
        name = f"{rel}:{lineno}"
        if kind == "ax-session":
            jobs.append((name, lambda lines=lines: check_session(ctx, lines)))
        else:
            jobs.append((name, lambda lines=lines, lineno=lineno:
                         check_doc_program(ctx, rel, lineno, lines)))
    return jobs


def check_doc_program(ctx, rel, lineno, lines):
    stem = re.sub(r"\W", "_", rel)
    with tempfile.TemporaryDirectory(prefix="ax-doc-") as d:
        path = os.path.join(d, f"{stem}_{lineno}.ax")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return check_program(ctx, path, lines)


def tutorial_files():
    d = os.path.join(ROOT, "docs", "tutorials")
    return sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".md"))


def check_tutorial(ctx, path):
    """`ax notebook --check`: every output recorded in the tutorial is still what it prints."""
    r = run_ax(ctx, ["notebook", "--check", "--strict", path], cwd=ROOT)
    if isinstance(r, str):
        return r
    status, out, err = r
    crash = crash_report(status, err)
    if crash or status != 0:
        return crash or f"exit status {status}\n{tail(out + err, 3000)}"
    return None


def tutorial_jobs(ctx, paths):
    return [(f"tutorial {os.path.relpath(p, ROOT)}", lambda p=p: check_tutorial(ctx, p))
            for p in paths]

# ---------------------------------------------------------------- unit tests (cmocka)


def run_unit(ctx, exe):
    """(passed, failed, report) for one cmocka program."""
    try:
        p = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True,
                           timeout=ctx.unit_timeout, errors="replace",
                           env={**os.environ, "CMOCKA_MESSAGE_OUTPUT": "stdout"})
        out, status = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
        out += f"\n(no answer in {ctx.unit_timeout} s)"
        status = None
    announced = sum(int(n) for n in re.findall(r"^\[=+\] Running (\d+) test", out, re.M))
    ok = len(re.findall(r"^\[ +OK +\] ", out, re.M))
    skipped = len(SKIPPED_CASE.findall(out))
    failed = max(announced - ok - skipped, 0)
    if status != 0 and failed == 0:
        failed = 1  # crashed before or after its cases, timed out, or a sanitizer report
    if status == 0 and SANITIZER_REPORT.search(out):
        failed = max(failed, 1)
    return ok, failed, out


def unit_jobs(ctx):
    srcs = sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "unit"))
                  if f.startswith("test_") and f.endswith(".c"))
    return [(f"unit {s[:-2]}", os.path.join(ctx.build, "tests", s[:-2])) for s in srcs]

# ---------------------------------------------------------------- the REPL checks


def run_script_checks(ctx, res, name):
    """A checks script (tests/repl_test.py, tests/jit_test.py): one count per check."""
    script = os.path.join(ROOT, "tests", name)
    try:
        p = subprocess.run([sys.executable, script, "--ax", ctx.ax] + (["-v"] if res.verbose else []),
                           capture_output=True, text=True, timeout=ctx.timeout * 10,
                           errors="replace")
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        res.fail(name, f"no answer in {ctx.timeout * 10} s")
        return
    m = re.search(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$", out, re.M)
    for line in out.splitlines():
        if line.startswith(("FAIL", "SKIP")) or (line.startswith("ok ") and res.verbose):
            print(line, flush=True)
    if not m:
        res.fail(name, f"no summary (exit {p.returncode}):\n{tail(out)}")
        return
    res.passed += int(m.group(1))
    res.failed += int(m.group(2))
    res.skipped += int(m.group(3) or 0)

# ---------------------------------------------------------------- fuzzing, fault injection

# Seeded mutations per make test, split over two processes: about 30 s on this machine; the
# inputs depend on the seeds only, so the verdict does not depend on the machine's speed.
FUZZ_MUTATIONS = 6000


def run_fuzz(ctx, res, sanitized):
    exe = os.path.join(ctx.build, "fuzz", "fuzz_ax")
    if not os.access(exe, os.X_OK):
        res.fail("fuzz", f"{exe} was not built")
        return
    corpus = os.path.join(ROOT, "tests", "fuzz", "corpus")
    seeds = sorted(os.path.join(corpus, f) for f in os.listdir(corpus)) + \
        ax_files(os.path.join(ROOT, "tests", "lang"))
    n = FUZZ_MUTATIONS // (4 if sanitized else 1) // 2

    def one(seed):
        with tempfile.TemporaryDirectory(prefix="ax-fuzz-") as d:
            last = os.path.join(d, "input.ax")
            try:
                p = subprocess.run([exe, "--last", last, "--random", str(n), str(seed), *seeds],
                                   cwd=d, capture_output=True, text=True, errors="replace",
                                   timeout=ctx.timeout * 20)
                status, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                status, err = None, f"no answer in {ctx.timeout * 20} s"
            if status == 0 and not SANITIZER_REPORT.search(err):
                return None
            keep = os.path.join(ctx.build, "fuzz", f"crash-seed{seed}.ax")
            if os.path.exists(last):
                shutil.copyfile(last, keep)
            return f"exit {status} on the input saved as {keep}:\n{tail(err, 4000)}"

    with futures.ThreadPoolExecutor(max_workers=2) as pool:
        for seed, why in zip((1, 2), pool.map(one, (1, 2))):
            name = f"fuzz seed {seed} ({len(seeds)} files, {n} mutations)"
            if why is None:
                res.ok(name)
            else:
                res.fail(name, why)


def run_fault_slice(ctx, res, sanitized):
    script = os.path.join(ROOT, "tests", "fault", "faultinject.py")
    args = [sys.executable, script, "--ax", os.path.join(ctx.build, "ax-fault"), "--slice"]
    try:
        args += (["--sanitized"] if sanitized else []) + (["-v"] if res.verbose else [])
        p = subprocess.run(args, capture_output=True, text=True, errors="replace",
                           timeout=ctx.timeout * 20)
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        res.fail("fault", f"no answer in {ctx.timeout * 20} s")
        return
    m = re.search(r"^(\d+) passed, (\d+) failed\s*$", out, re.M)
    if not m or int(m.group(2)) or p.returncode:
        res.fail("fault tests/fault/slice.ax", tail(out, 6000))
    else:
        res.ok("fault tests/fault/slice.ax (every allocation failed in turn)")

# ---------------------------------------------------------------- main


class Context:
    def __init__(self, a):
        self.build = os.path.join(ROOT, a.build) if not os.path.isabs(a.build) else a.build
        self.ax = os.path.join(self.build, "ax")
        self.launcher = []  # mpirun and its options, for the mpi suite
        self.env = None  # the environment programs run in (None: this one)
        scale = 4 if a.sanitized else 1
        self.timeout = a.timeout * scale
        self.unit_timeout = 300 * scale


def run_jobs(res, jobs, workers):
    """jobs: (name, fn) with fn() -> None or why it failed."""
    with futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for name, why in zip([n for n, _ in jobs], pool.map(lambda j: j[1](), jobs)):
            if why is None:
                res.ok(name)
            else:
                res.fail(name, why)


def program_jobs(ctx, paths, label):
    return [(f"{label} {os.path.relpath(p, ROOT) if p.startswith(ROOT) else os.path.basename(p)}",
             lambda p=p: check_program(ctx, p)) for p in paths]


def mpi_jobs(ctx, res):
    """tests/mpi/*.ax under `mpirun -n 2` (oversubscribed: more processes than cores is fine);
    only process 0 prints, so the expectations read as usual."""
    files = ax_files(os.path.join(ROOT, "tests", "mpi"))
    mpirun = shutil.which("mpirun")
    if not mpirun:
        res.skipped += len(files)
        print(f"SKIP mpi: {len(files)} programs need mpirun (openmpi-bin: make deps)", flush=True)
        return []
    mctx = copy.copy(ctx)
    mctx.launcher = [mpirun, "--oversubscribe", "-n", "2"]
    if "ASAN_OPTIONS" in os.environ:  # make asan: OpenMPI frees little of what its plugins
        # (dlclosed by MPI_Finalize, so LeakSanitizer cannot even name them) allocate
        mctx.launcher += ["-x", os.environ["ASAN_OPTIONS"].join(["ASAN_OPTIONS=", ":detect_leaks=0"])]
    mctx.timeout = ctx.timeout * 2
    os.environ.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI containers run as root
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return program_jobs(mctx, files, "mpi")


def parallel_jobs(ctx):
    """The programs of the parallel suite (the unit test runs with the unit jobs)."""
    lang = [p for p in ax_files(os.path.join(ROOT, "tests", "lang"))
            if os.path.basename(p).startswith("pmap")]
    pmap = [p for p in next_conformance() if os.path.basename(p) == "20_pmap.ax"]
    return program_jobs(ctx, lang + pmap, "lang")


def quick_jobs(ctx):
    """The language tests that use jit or pmap, their jitted calls on the quick tier's code alone
    (compiler/quickgen.h): the same outputs as with GCC's code."""
    qctx = copy.copy(ctx)
    qctx.env = dict(os.environ, AX_JIT_QUICK="only")
    paths = []
    for p in ax_files(os.path.join(ROOT, "tests", "lang")) + next_conformance():
        with open(p, encoding="utf-8") as f:
            if re.search(r"jit|pmap", f.read()):
                paths.append(p)
    return program_jobs(qctx, paths, "quick")


def next_conformance():
    return [p for p in (os.path.join(SHARED, "conformance", "next", n) for n in NEXT_CONFORMANCE)
            if os.path.exists(p)]


def ax_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".ax")) \
        if os.path.isdir(d) else []


def doc_files():
    d = os.path.join(ROOT, "docs")
    docs = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".md")) \
        if os.path.isdir(d) else []
    readme = os.path.join(ROOT, "README.md")
    return docs + ([readme] if os.path.exists(readme) else [])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--sanitized", action="store_true", help="longer timeouts (ASan build)")
    ap.add_argument("--build-failed", action="store_true", help="count one failure for the build")
    ap.add_argument("--only", default="", help="comma-separated suites")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per program")
    ap.add_argument("-v", action="store_true", help="list passing tests too")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    ctx = Context(a)
    # jit's disk cache goes to a directory of this run's own: tests neither read entries an
    # earlier build left nor leave any behind
    cache = tempfile.TemporaryDirectory(prefix="ax-test-cache-")
    os.environ["XDG_CACHE_HOME"] = cache.name
    # every call of a jitted function runs native code, as tests comparing jit with eager need:
    # tiered execution (eager while compiling) has its own tests (test_jit_tier, jit_test.py);
    # AX_JIT_SYNC=0 in the environment runs the suites tiered
    os.environ.setdefault("AX_JIT_SYNC", "1")
    if a.sanitized:
        os.environ["AX_TEST_TIMEOUT_SCALE"] = "4"
    res = Results(a.v)
    suites = set(a.only.split(",")) if a.only else {"unit", "lang", "quick", "conformance",
                                                    "docs", "repl",
                                                    "jit", "notebook", "robust", "io",
                                                    "fuzz", "fault", "mpi"}
    if "parallel" in suites:  # a selection of the others
        suites |= {"mpi"}

    if a.build_failed:
        res.fail("build", "make did not build every target (its errors are above)")
    if a.files:
        files = [os.path.abspath(f) for f in a.files]
        jobs = program_jobs(ctx, [f for f in files if f.endswith(".ax")], "lang")
        tutorials = os.path.join(ROOT, "docs", "tutorials") + os.sep
        for f in files:
            if f.endswith(".md"):
                jobs += tutorial_jobs(ctx, [f]) if f.startswith(tutorials) else doc_jobs(ctx, f)
        run_jobs(res, jobs, NPROC)
        suites = set()

    if "unit" in suites or "parallel" in suites:
        jobs = unit_jobs(ctx)
        if "unit" not in suites:
            jobs = [j for j in jobs if j[0] == "unit test_collectives"]

        def one(job):
            name, exe = job
            if not os.access(exe, os.X_OK):
                return name, 0, 1, f"{exe} was not built"
            return (name, *run_unit(ctx, exe))

        with futures.ThreadPoolExecutor(max_workers=NPROC) as pool:
            for name, ok, failed, out in pool.map(one, jobs):
                skipped = len(SKIPPED_CASE.findall(out))
                if skipped:
                    res.skipped += skipped
                    print(f"SKIP {name}: {skipped} cases skipped", flush=True)
                if ok:
                    res.ok(f"{name} ({ok} cases)", ok)
                if failed:
                    res.fail(f"{name} ({failed} of {ok + failed} cases)", tail(out, 4000), failed)
    jobs = []
    if "lang" in suites:
        jobs += program_jobs(ctx, ax_files(os.path.join(ROOT, "tests", "lang")), "lang")
        # the examples carry their own expectations; conformance programs of features that landed
        jobs += program_jobs(ctx, ax_files(os.path.join(ROOT, "examples")), "lang")
        jobs += program_jobs(ctx, next_conformance(), "lang")
    elif "parallel" in suites:
        jobs += parallel_jobs(ctx)
    if "quick" in suites:
        jobs += quick_jobs(ctx)
    if "mpi" in suites:
        jobs += mpi_jobs(ctx, res)
    if "conformance" in suites:
        jobs += program_jobs(ctx, ax_files(os.path.join(SHARED, "conformance")), "conformance")
    if "docs" in suites:
        for f in doc_files():
            jobs += doc_jobs(ctx, f)
    if "notebook" in suites:
        jobs += tutorial_jobs(ctx, tutorial_files())
    run_jobs(res, jobs, NPROC)
    if "repl" in suites:
        run_script_checks(ctx, res, "repl_test.py")
    if "jit" in suites:
        run_script_checks(ctx, res, "jit_test.py")
    if "notebook" in suites:
        run_script_checks(ctx, res, "notebook_test.py")
    if "robust" in suites:
        run_script_checks(ctx, res, "robustness_test.py")
    if "io" in suites:
        run_script_checks(ctx, res, "io_test.py")
    if "fuzz" in suites:
        run_fuzz(ctx, res, a.sanitized)
    if "fault" in suites:
        run_fault_slice(ctx, res, a.sanitized)

    if res.skipped:  # not passes: each has a SKIP line above saying why
        print(f"{res.skipped} skipped (they cannot run here: see the SKIP lines)")
    print(f"{res.passed} passed, {res.failed} failed")
    sys.exit(1 if res.failed else 0)


if __name__ == "__main__":
    main()
