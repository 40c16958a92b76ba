#!/usr/bin/env python3
"""jit's native code end to end, through the ax binary: the disk cache, the compile log, the
fallback without an assembler, concurrent processes and the time a warm load takes.

Usage: jit_test.py [--ax build/ax] [-v] [CHECK ...]

Every check runs ax in a temporary directory of its own ($XDG_CACHE_HOME, $HOME and $TMPDIR
point into it) with AX_LOG_COMPILES=1, and asserts both the numbers a program prints (against
values computed here with Python's math, the same as NumPy's to float32 precision) and the log
lines. Prints 'ok NAME' (with -v), 'SKIP jit_test NAME: why' or 'FAIL jit_test NAME: why' per
check, then 'N passed, M failed' (', K skipped' when some were): a skipped check is not a pass.
Exit status 1 on failure. Only the standard library is used. AX_TEST_TIMEOUT_SCALE (set by
run_tests.py --sanitized) multiplies the timeouts. No verdict depends on a time: the one timed
check reports its figures.

CI runs as root, which ignores permission bits: checks that need a directory ax cannot write
run ax as the user nobody (when ax is reachable by nobody), and the full-disk check mounts a
tiny tmpfs in a private mount namespace (as root, or in a user namespace otherwise). Each says
what it exercises; where its mechanism is unavailable it is reported as skipped.
"""
import argparse
import math
import os
import pty
import re
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import termios
import time

SCALE = float(os.environ.get("AX_TEST_TIMEOUT_SCALE", "1"))
TIMEOUT = 60 * SCALE
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|"
                              r"SUMMARY: UndefinedBehaviorSanitizer")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)")
WARNING = "ax: warning: jit cannot build native code"
NOBODY = 65534

SELU = """
def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * where(x > 0, x, alpha * exp(x) - alpha)
"""

# selu and a small matrix product, jitted and eager: both functions go through the cache.
PROGRAM = SELU + """
def affine(w, x):
    tanh(x @ w) + sum(w, 0)
x = linspace(-2.0, 2.0, 9)
w = reshape(arange(6.0), (3, 2)) / 10.0
print(jit(selu)(x))
print(selu(x))
print(jit(affine)(w, reshape(x[:6], (2, 3))))
print(affine(w, reshape(x[:6], (2, 3))))
"""


def selu(v, alpha=1.67, lmbda=1.05):
    return lmbda * (v if v > 0 else alpha * math.exp(v) - alpha)


def linspace(lo, hi, n):
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def affine_expected():
    w = [[0.0, 0.1], [0.2, 0.3], [0.4, 0.5]]
    x = linspace(-2.0, 2.0, 9)[:6]
    rows = [x[0:3], x[3:6]]
    colsum = [sum(r[j] for r in w) for j in range(2)]
    return [math.tanh(sum(r[k] * w[k][j] for k in range(3))) + colsum[j]
            for r in rows for j in range(2)]


SELU_9 = [selu(v) for v in linspace(-2.0, 2.0, 9)]
# NumPy 1.24 in float32: [-1.5161895 -1.3622411 -1.1084235 -0.68994844 0. 0.525 1.05 1.5749999 2.1]
PROGRAM_NUMBERS = SELU_9 * 2 + affine_expected() * 2


class Failure(Exception):
    pass


class Skip(Exception):
    """Raised by a check that cannot run here (the reason is reported; it is not a pass)."""


def expect(cond, why):
    if not cond:
        raise Failure(why)


def numbers(text):
    return [float(t) for t in NUMBER.findall(text)]


def expect_numbers(got_text, want, what="output", rel=1e-5, abs_tol=1e-6):
    got = numbers(got_text)
    expect(len(got) == len(want), f"{what}: wanted {len(want)} numbers, got {len(got)}:\n"
           f"{got_text}")
    for i, (g, w) in enumerate(zip(got, want)):
        expect(math.isclose(g, w, rel_tol=rel, abs_tol=abs_tol),
               f"{what}: number {i + 1} is {g}, wanted {w}:\n{got_text}")


def log_lines(stderr, word):
    """The 'ax: jit: WORD ...' lines of a run (word: traced, compiled, loaded, prepared)."""
    return [l for l in stderr.splitlines() if l.startswith(f"ax: jit: {word} ")]


class Ctx:
    def __init__(self, ax, root):
        self.ax, self.root = ax, root
        self.cache_home = os.path.join(root, "cache")
        self.cache = os.path.join(self.cache_home, "ax")

        self.tmp = os.path.join(root, "tmp")
        os.mkdir(self.tmp, 0o700)

    def env(self, **extra):
        e = {k: v for k, v in os.environ.items() if not k.startswith("AX_")}
        # AX_JIT_SYNC=1: every call runs native code, as the checks but those of tiered
        # execution (section 7, which pass AX_JIT_SYNC="0") expect
        e.update(HOME=self.root, XDG_CACHE_HOME=self.cache_home, TMPDIR=self.tmp,
                 AX_LOG_COMPILES="1", AX_JIT_SYNC="1")
        e.update(extra)
        return e

    def run(self, program=PROGRAM, preexec_fn=None, **env):
        """Runs `ax -e program`; fails on a crash or a non-zero exit."""
        try:
            p = subprocess.run([self.ax, "-e", program], capture_output=True, text=True,
                               env=self.env(**env), timeout=TIMEOUT, errors="replace",
                               preexec_fn=preexec_fn, cwd=self.root)
        except subprocess.TimeoutExpired:
            raise Failure(f"no answer in {TIMEOUT:.0f} s")
        check_exit(p.returncode, p.stderr)
        return p

    def run_at_once(self, n, program=PROGRAM, **env):
        """Runs n `ax -e program` processes at the same time: [(status, stdout, stderr)]."""
        procs = [subprocess.Popen([self.ax, "-e", program], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=self.env(**env),
                                  cwd=self.root)
                 for _ in range(n)]
        results = []
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise Failure(f"no answer in {TIMEOUT:.0f} s")
            results.append((proc.returncode, out, err))
        return results

    def entries(self, ext):
        if not os.path.isdir(self.cache):
            return []
        return sorted(os.path.join(self.cache, f) for f in os.listdir(self.cache)
                      if f.endswith("." + ext))

    def only_entry(self):
        so, sums = self.entries("so"), self.entries("sum")
        expect(len(so) == 2 and len(sums) == 2,  # selu and affine
               f"cache holds {os.listdir(self.cache) if os.path.isdir(self.cache) else None}")
        return so, sums

    def no_temporaries(self):
        """Nothing is left in $TMPDIR, and the cache holds only entries (and its lock)."""
        left = [os.path.relpath(os.path.join(d, f), self.tmp)
                for d, dirs, files in os.walk(self.tmp) for f in dirs + files]
        expect(not left, f"temporary files left in $TMPDIR: {left}")
        if os.path.isdir(self.cache):
            odd = [f for f in os.listdir(self.cache)
                   if not re.fullmatch(r"[0-9a-f]{16}\.(so|sum)|\.lock", f)]
            expect(not odd, f"temporary files left in the cache: {odd}")


def check_exit(status, stderr):
    expect(status >= 0, f"killed by signal {-status}\nstderr: {stderr[-800:]}")
    expect(not SANITIZER_REPORT.search(stderr), f"sanitizer report:\n{stderr[-3000:]}")
    expect(status == 0, f"exit status {status}\nstderr: {stderr[-800:]}")


def program_ok(p):
    """The numbers PROGRAM prints are right (jit and eager alike)."""
    expect_numbers(p.stdout, PROGRAM_NUMBERS)


def built(p, how):
    """Both functions were built `how` (compiled / loaded), none otherwise, no warning."""
    got = {name: [l.split()[2] for l in p.stderr.splitlines()
                  if l.startswith("ax: jit: ") and f" {name} in " in l and "traced" not in l]
           for name in ("selu", "affine")}
    expect(got == {"selu": [how], "affine": [how]},
           f"wanted selu and affine {how} once each; log:\n{p.stderr}")
    expect(WARNING not in p.stderr, f"unexpected warning:\n{p.stderr}")


CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn

# ---------------------------------------------------------------- 1. compiled, then loaded


@check
def compiled_then_loaded(ctx):
    p1 = ctx.run()
    program_ok(p1)
    built(p1, "compiled")
    expect(re.search(r"^ax: jit: traced selu in [0-9.]+ ms \(first call\): \d+ equations$",
                     p1.stderr, re.M), p1.stderr)
    expect(re.search(r"^ax: jit: compiled selu in [0-9.]+ ms: 1 fused loops, 0 matrix products, "
                     r"0 eager steps$", p1.stderr, re.M), p1.stderr)
    ctx.only_entry()
    p2 = ctx.run()
    program_ok(p2)
    built(p2, "loaded")
    expect(p2.stdout == p1.stdout, f"second process printed\n{p2.stdout}\nfirst\n{p1.stdout}")

# ---------------------------------------------------------------- 2. damaged cache entries


def damage_then_rebuild(ctx, damage):
    """After damage(so_paths, sum_paths): correct, rebuilt ('compiled'), then 'loaded' again."""
    built(ctx.run(), "compiled")
    so, sums = ctx.only_entry()
    damage(so, sums)
    p = ctx.run()
    program_ok(p)
    built(p, "compiled")
    p = ctx.run()
    program_ok(p)
    built(p, "loaded")


def overwrite_middle(path):
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        f.write(b"\xde\xad\xbe\xef" * 64)


@check
def corrupt_so_is_rebuilt(ctx):
    damage_then_rebuild(ctx, lambda so, sums: [overwrite_middle(p) for p in so])


@check
def truncated_so_is_rebuilt(ctx):
    damage_then_rebuild(ctx, lambda so, sums: [os.truncate(p, os.path.getsize(p) // 3)
                                               for p in so])


@check
def empty_so_is_rebuilt(ctx):
    damage_then_rebuild(ctx, lambda so, sums: [os.truncate(p, 0) for p in so])


@check
def missing_sum_is_rebuilt(ctx):
    damage_then_rebuild(ctx, lambda so, sums: [os.unlink(p) for p in sums])


@check
def garbage_sum_is_rebuilt(ctx):
    def garbage(so, sums):
        for p in sums:
            with open(p, "wb") as f:
                f.write(b"ax-jit-cache-1 12 zz\n\x00\xff garbage")
    damage_then_rebuild(ctx, garbage)


def directory_in_the_way(ctx, ext):
    """Replaces each entry's .ext by a directory, which the cache can neither publish over
    nor should delete: each run still builds native code ('compiled', no fallback warning)
    and prints the right numbers."""
    built(ctx.run(), "compiled")
    ctx.only_entry()
    paths = ctx.entries(ext)
    for p in paths:
        os.unlink(p)
        os.mkdir(p)
    for _ in range(2):
        p = ctx.run()
        program_ok(p)
        built(p, "compiled")
    expect(all(os.path.isdir(p) for p in paths), "the directories in the way were removed")
    ctx.no_temporaries()


@check
def so_replaced_by_directory(ctx):
    directory_in_the_way(ctx, "so")


def as_nobody():
    """preexec_fn that runs the child as nobody: root ignores directory modes."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def chown_tree(path, uid):
    for d, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(d, name), uid, uid)
    os.lchown(path, uid, uid)


def make_cache_read_only(ctx):
    """Makes the cache directory read-only for the ax runs that follow and returns the
    preexec_fn to run them with. Not root: the directory becomes 0500. Root ignores modes, so
    ax then runs as nobody, and nobody owns the cache (ax refuses a cache owned by another
    user) and $TMPDIR; the directory's 0500 then stops nobody as it stops any user. Raises
    Skip when nobody cannot run ax (the build directory is out of its reach)."""
    demote = None
    if os.geteuid() == 0:
        os.chmod(ctx.root, 0o755)  # nobody must reach the cache directory and $TMPDIR
        chown_tree(ctx.cache_home, NOBODY)
        chown_tree(ctx.tmp, NOBODY)
        demote = as_nobody
        probe = subprocess.run([ctx.ax, "-e", "print(6 * 7)"], capture_output=True, text=True,
                               env=ctx.env(), preexec_fn=demote, timeout=TIMEOUT, cwd=ctx.root)
        if probe.stdout.strip() != "42":
            raise Skip(f"ax does not run as nobody: {probe.stderr.strip()[:200]}")
    os.chmod(ctx.cache, stat.S_IRUSR | stat.S_IXUSR)  # 0500
    return demote


@check
def unwritable_cache_dir(ctx):
    os.makedirs(ctx.cache, mode=0o700)
    demote = make_cache_read_only(ctx)
    for _ in range(2):  # nothing is cached, so the second run compiles again
        p = ctx.run(preexec_fn=demote)
        program_ok(p)
        built(p, "compiled")
    expect(os.listdir(ctx.cache) == [], f"written anyway: {os.listdir(ctx.cache)}")
    ctx.no_temporaries()


@check
def read_only_cache_is_read(ctx):
    # A cache ax may not write to still serves its entries (a shared, prepared cache).
    built(ctx.run(), "compiled")
    ctx.only_entry()
    demote = make_cache_read_only(ctx)
    p = ctx.run(preexec_fn=demote)
    program_ok(p)
    built(p, "loaded")
    ctx.no_temporaries()


@check
def cache_home_is_a_file(ctx):
    path = os.path.join(ctx.root, "a_file")
    with open(path, "w") as f:
        f.write("not a directory\n")
    for _ in range(2):
        p = ctx.run(XDG_CACHE_HOME=path)
        program_ok(p)
        built(p, "compiled")
    with open(path) as f:
        expect(f.read() == "not a directory\n", "the file was changed")
    ctx.no_temporaries()


@check
def cache_dir_is_a_file(ctx):
    # $XDG_CACHE_HOME/ax itself is a file: native code is built and run all the same (it
    # used to be compiled into "<file>/<key>.so", which failed and turned jit off).
    os.makedirs(ctx.cache_home)
    with open(ctx.cache, "w") as f:
        f.write("not a directory\n")
    for _ in range(2):
        p = ctx.run()
        program_ok(p)
        built(p, "compiled")
        expect(re.search(r"^ax: warning: the jit cache .*/ax is not a directory", p.stderr, re.M),
               f"no warning about the cache:\n{p.stderr}")
    with open(ctx.cache) as f:
        expect(f.read() == "not a directory\n", "the file was changed")
    ctx.no_temporaries()


@check
def sum_cannot_be_replaced(ctx):
    # The entry is not published, but the code just compiled runs (it used to be loaded from
    # a temporary name that the publication had already renamed away, so every jitted
    # function of the process fell back to eager).
    directory_in_the_way(ctx, "sum")


# Shell code run in a private mount namespace: a tiny tmpfs on $1 (the cache home), the
# cache directory in it, a file filling the rest; then the command, and the cache's listing.
FULL_DISK_SCRIPT = """
set -e
mount -t tmpfs -o size=64k,mode=700 ax-test-full "$1"
mkdir -m 700 "$1/ax"
dd if=/dev/zero of="$1/filler" bs=4096 2>/dev/null || true
shift
set +e
"$@"
status=$?
echo "@@cache: $(ls -A "$XDG_CACHE_HOME/ax" | tr '\\n' ' ')"
exit $status
"""


def private_mount_command():
    """The unshare command line that gives a process its own mount namespace in which it may
    mount a tmpfs, or raises Skip."""
    cmds = [["unshare", "--mount", "--propagation", "private"]] if os.geteuid() == 0 else []
    cmds.append(["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"])
    for cmd in cmds:
        try:
            probe = subprocess.run(cmd + ["sh", "-c", "mount -t tmpfs none /mnt"],
                                   capture_output=True, text=True, timeout=TIMEOUT)
        except OSError:
            continue
        if probe.returncode == 0:
            return cmd
    raise Skip("cannot mount a tmpfs in a private mount namespace (needs root or user "
               "namespaces)")


@check
def full_disk(ctx):
    # A cache on a full file system (a real one: a 64 KiB tmpfs, filled up): the code is
    # compiled and run all the same, ax says once that it cannot cache, and no partial
    # entry or temporary file stays behind. The compile itself goes to $TMPDIR, which has room.
    cmd = private_mount_command()
    os.makedirs(ctx.cache_home)
    try:
        proc = subprocess.run(cmd + ["sh", "-c", FULL_DISK_SCRIPT, "sh", ctx.cache_home,
                                     ctx.ax, "-e", PROGRAM],
                              capture_output=True, text=True, env=ctx.env(), timeout=TIMEOUT,
                              cwd=ctx.root, errors="replace")
    except subprocess.TimeoutExpired:
        raise Failure(f"no answer in {TIMEOUT:.0f} s")
    check_exit(proc.returncode, proc.stderr)
    listing = proc.stdout.splitlines()[-1]
    proc.stdout = "\n".join(proc.stdout.splitlines()[:-1])
    program_ok(proc)
    built(proc, "compiled")
    warnings = [l for l in proc.stderr.splitlines() if l.startswith("ax: warning")]
    expect(len(warnings) == 1 and "No space left on device" in warnings[0],
           f"wanted one warning that the cache is full:\n{proc.stderr}")
    expect(listing.split() in (["@@cache:"], ["@@cache:", ".lock"]),
           f"the full cache holds {listing}")
    ctx.no_temporaries()


# A stand-in for the assembler that kills ax (its parent) in the middle of a compile, with
# libgccjit's temporary directory and the driver's files on disk.
# ax compiles in a child process (so that Ctrl-C can abandon a compile): the assembler's
# parent is that child, and ax its parent.
KILLER_AS = """#!/bin/sh
child=$PPID
ax=$(awk '{print $4}' /proc/$child/stat)
[ "$(cat /proc/$ax/comm)" = ax ] && kill -KILL $ax
kill -KILL $child
sleep 5
exit 1
"""


def stand_in_assembler(ctx, script):
    """A PATH on which `as` is `script`."""
    bin_dir = os.path.join(ctx.root, "bin")
    os.mkdir(bin_dir)
    with open(os.path.join(bin_dir, "as"), "w") as f:
        f.write(script)
    os.chmod(os.path.join(bin_dir, "as"), 0o755)
    return bin_dir + os.pathsep + os.environ.get("PATH", "")


@check
def killed_compile_leaves_nothing(ctx):
    # A process killed while compiling leaves its temporary directory behind; the next
    # process removes it. (libgccjit's own 'libgccjit-*' directories used to stay in $TMPDIR.)
    env = ctx.env(PATH=stand_in_assembler(ctx, KILLER_AS))
    p = subprocess.run([ctx.ax, "-e", PROGRAM], capture_output=True, text=True, env=env,
                       timeout=TIMEOUT, cwd=ctx.root)
    expect(p.returncode == -9, f"the stand-in assembler did not kill ax: status {p.returncode}"
           f"\n{p.stderr}")
    expect(os.listdir(ctx.tmp), "a killed compile left nothing to clean up: the check proves "
           "nothing")
    p = ctx.run()
    program_ok(p)
    built(p, "compiled")
    ctx.no_temporaries()

F2 = "print(jit(lambda x: x * 2.0)(arange(4.0)))"
F3 = "print(jit(lambda x: x * 3.0)(arange(4.0)))"


@check
def users_tmpdir_is_left_alone(ctx):
    # Compiles use a scratch directory under $TMPDIR that goes away at exit; a figure that
    # show() writes to $TMPDIR after a compile must not land there.
    if not shutil.which("gnuplot"):
        raise Skip("gnuplot is not installed (show() needs it)")
    p = ctx.run("import plot\n" + F2 + "\nplot.plot([1.0, 2.0])\nplot.show()\n")
    expect(log_lines(p.stderr, "compiled"), p.stderr)
    figure = p.stdout.splitlines()[-1]
    expect(os.path.dirname(figure) == ctx.tmp, f"figure written to {figure}, not $TMPDIR")
    expect(os.path.isfile(figure), f"{figure} is gone")
    os.unlink(figure)
    ctx.no_temporaries()

# ---------------------------------------------------------------- security




def plant_entry(ctx):
    """Builds the entries of x * 3 and x * 2, then copies x * 3's shared object and checksum
    over x * 2's: a planted entry whose checksum matches. Returns x * 2's entry paths."""
    ctx.run(F3)
    before = set(ctx.entries("so"))
    ctx.run(F2)
    (so2,) = set(ctx.entries("so")) - before
    (so3,) = before
    for ext in ("so", "sum"):
        shutil.copyfile(so3[:-2] + ext, so2[:-2] + ext)
    return so2, so2[:-2] + "sum"


def runs_safely(ctx, warning):
    """x * 2 prints its own numbers (the planted entry is not run) with `warning`."""
    p = ctx.run(F2)
    expect_numbers(p.stdout, [0, 2, 4, 6], "x * 2 (a planted entry computes x * 3)")
    expect(not log_lines(p.stderr, "loaded"), f"a planted entry was loaded:\n{p.stderr}")
    expect(log_lines(p.stderr, "compiled"), p.stderr)
    warnings = [l for l in p.stderr.splitlines() if l.startswith("ax: warning")]
    expect(len(warnings) == 1 and re.search(warning, warnings[0]),
           f"wanted one warning matching {warning!r}:\n{p.stderr}")
    return p


@check
def planted_entry_is_run_when_safe(ctx):
    # The premise of the security checks: a swapped entry with a matching checksum is
    # loaded when everything is owned by the user (the checksum guards against damage, not
    # against someone who can write the directory).
    plant_entry(ctx)
    p = ctx.run(F2)
    expect_numbers(p.stdout, [0, 3, 6, 9], "x * 2 through the planted entry")


@check
def entry_writable_by_others_is_refused(ctx):
    so, sums = plant_entry(ctx)
    os.chmod(so, 0o666)
    runs_safely(ctx, r"jit cache entry .*\.so is writable by others")


@check
def cache_dir_writable_by_others_is_refused(ctx):
    plant_entry(ctx)
    os.chmod(ctx.cache, 0o777)
    before = sorted(os.listdir(ctx.cache))
    runs_safely(ctx, r"the jit cache .*/ax is writable by others")
    expect(sorted(os.listdir(ctx.cache)) == before, "ax wrote to a cache it refused")
    ctx.no_temporaries()


@check
def entry_of_another_user_is_refused(ctx):
    if os.geteuid() != 0:
        raise Skip("only root can give a file to another user")
    _, sums = plant_entry(ctx)
    os.chown(sums, NOBODY, NOBODY)
    runs_safely(ctx, r"jit cache entry .*\.sum is owned by another user")


@check
def cache_dir_of_another_user_is_refused(ctx):
    if os.geteuid() != 0:
        raise Skip("only root can give a directory to another user")
    plant_entry(ctx)
    os.chown(ctx.cache, NOBODY, NOBODY)
    runs_safely(ctx, r"the jit cache .*/ax is owned by another user")

# ---------------------------------------------------------------- eviction


def scale_program(k):
    """A jitted x * k: the same code for every k but the constant, so entries of one size."""
    return f"print(jit(lambda x: x * {k:.1f})(arange(4.0)))"


def entry_sizes(ctx):
    """{key: bytes of .so + .sum}"""
    sizes = {}
    for f in os.listdir(ctx.cache) if os.path.isdir(ctx.cache) else []:
        m = re.fullmatch(r"([0-9a-f]{16})\.(so|sum)", f)
        if m:
            sizes[m.group(1)] = sizes.get(m.group(1), 0) + os.path.getsize(
                os.path.join(ctx.cache, f))
    return sizes


@check
def least_recently_used_evicted(ctx):
    # Entries A, B, C, used long ago in that order (their times set here), then A used again;
    # with room for three, writing D evicts the least recently used: B.
    keys = {}
    for name, k in zip("ABC", (2, 3, 4)):
        before = set(entry_sizes(ctx))
        p = ctx.run(scale_program(k))
        expect_numbers(p.stdout, [0, k, 2 * k, 3 * k], name)
        (keys[name],) = set(entry_sizes(ctx)) - before
    for i, name in enumerate("ABC"):
        for ext in ("so", "sum"):
            t = 1_000_000_000 + 1000 * i
            os.utime(os.path.join(ctx.cache, f"{keys[name]}.{ext}"), (t, t))
    p = ctx.run(scale_program(2))
    expect(log_lines(p.stderr, "loaded"), f"A was not loaded:\n{p.stderr}")
    size = max(entry_sizes(ctx).values())
    limit_k = (size * 3 + size // 2) // 1024  # three entries fit, four do not
    p = ctx.run(scale_program(5), AX_CACHE_MAX=f"{limit_k}K")
    expect_numbers(p.stdout, [0, 5, 10, 15], "D")
    left = entry_sizes(ctx)
    expect(keys["B"] not in left, f"B was kept: {left} (keys {keys})")
    expect(all(keys[n] in left for n in "AC") and len(left) == 3,
           f"wanted A, C and D kept: {left} (keys {keys})")
    expect(sum(left.values()) <= limit_k * 1024, f"over the limit: {left}")
    ctx.no_temporaries()


CONCURRENT = "".join(f"print(jit(lambda x: x * {k}.0 + {i}.0)(arange(3.0)))\n"
                     for i in range(2) for k in range(2, 6))


@check
def concurrent_writers_keep_the_limit(ctx):
    # Four processes compile and store eight entries each (the same eight) at once, with
    # room for three entries: each prints the right numbers, the cache ends under its limit
    # with no temporary files, and every entry left loads.
    ctx.run(scale_program(7))
    size = max(entry_sizes(ctx).values())
    limit = size * 3 + size // 2
    want = [v for i in range(2) for k in range(2, 6) for v in (i, k + i, 2 * k + i)]
    for status, out, err in ctx.run_at_once(4, CONCURRENT, AX_CACHE_MAX=str(limit)):
        check_exit(status, err)
        expect_numbers(out, want, "a concurrent writer")
        expect(WARNING not in err, err)
    left = entry_sizes(ctx)
    expect(0 < sum(left.values()) <= limit, f"{sum(left.values())} bytes for a limit of "
           f"{limit}: {left}")
    ctx.no_temporaries()
    p = ctx.run(CONCURRENT, AX_CACHE_MAX=str(limit))
    expect_numbers(p.stdout, want, "after the concurrent writers")
    expect(WARNING not in p.stderr, p.stderr)


@check
def cache_limit_is_checked(ctx):
    # AX_CACHE_MAX takes bytes with a K, M or G suffix; anything else is a warning (and
    # the default limit).
    p = ctx.run(AX_CACHE_MAX="12 parsecs")
    program_ok(p)
    built(p, "compiled")
    expect(re.search(r"^ax: warning: AX_CACHE_MAX='12 parsecs' is not a size", p.stderr, re.M),
           p.stderr)
    p = ctx.run(AX_CACHE_MAX="1G")
    built(p, "loaded")

# ---------------------------------------------------------------- 3. why a call missed


def run_on_pty(ax, args, env):
    """(status, text) of ax with stdout and stderr on one terminal: stdio then writes each
    line as it is printed, so log lines and printed lines come in program order."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # keep '\n' as it is
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = subprocess.Popen([ax, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            env=env, start_new_session=True)
    os.close(slave)
    out, deadline = b"", time.time() + TIMEOUT
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.time()))
            if not ready:
                proc.kill()
                raise Failure(f"no answer in {TIMEOUT:.0f} s; output so far:\n{out.decode()}")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                data = b""
            if not data:
                break
            out += data
    finally:
        os.close(master)
        status = proc.wait(timeout=TIMEOUT)
    return status, out.decode("utf-8", "replace")


MISSES = """
f = jit(lambda x: x * 2.0)
print("A"); print(f(arange(3.0)))
print("B"); print(f(arange(4.0)))
print("C"); print(f(arange(4.0) + 1.0))
print("D"); print(f(arange(4)))
print("E"); print(f(arange(4) + 1))
def scale(x, n):
    x * n
g = jit(scale, static_argnums=1)
print("F"); print(g(arange(2.0), 2))
print("G"); print(g(arange(2.0), 3))
print("H"); print(g(arange(2.0), 3))
print("I"); print(g(arange(2.0), 2))
"""
# after each marker: the numbers printed, and the reason logged (None: no log line at all)
MISS_EXPECTED = [
    ("A", [0, 2, 4], r"\(first call\)"),
    ("B", [0, 2, 4, 6], r"\(new shape: f32\[4\] \(was f32\[3\]\)\)"),
    ("C", [2, 4, 6, 8], None),
    ("D", [0, 2, 4, 6], r"\(new dtype: i32\[4\] \(was f32\[4\]\)\)"),
    ("E", [2, 4, 6, 8], None),
    ("F", [0, 2], r"\(first call\)"),
    ("G", [0, 3], r"\(new static argument: .*3.* \(was .*2.*\)\)"),
    ("H", [0, 3], None),
    ("I", [0, 2], None),
]


@check
def miss_reasons_are_logged(ctx):
    status, text = run_on_pty(ctx.ax, ["-e", MISSES], ctx.env())
    check_exit(status, text)
    sections = re.split(r"^([A-I])\n", text, flags=re.M)
    expect(sections[0] == "", f"output before the first marker:\n{text}")
    got = dict(zip(sections[1::2], sections[2::2]))
    expect(list(got) == [m for m, _, _ in MISS_EXPECTED], f"markers missing:\n{text}")
    for marker, values, reason in MISS_EXPECTED:
        body = got[marker].splitlines()
        logs = [l for l in body if l.startswith("ax: ")]
        printed = "\n".join(l for l in body if not l.startswith("ax: "))
        expect_numbers(printed, values, f"after {marker}")
        if reason is None:
            expect(logs == [], f"after {marker} (same signature as before) ax logged:\n"
                   + "\n".join(logs))
            continue
        expect(len(logs) == 2, f"after {marker}: wanted 'traced' and 'compiled':\n{got[marker]}")
        expect(re.match(rf"ax: jit: traced \S+ in [0-9.]+ ms {reason}: \d+ equations$", logs[0]),
               f"after {marker}: wanted reason {reason!r}, got\n{logs[0]}")
        expect(re.match(r"ax: jit: compiled \S+ in [0-9.]+ ms: ", logs[1]), logs[1])

GRAD_OF_JIT = """
f = jit(lambda x, n: sum(sin(x) * x ** n), static_argnums=1)
g = grad(f)
print("A"); print(g(arange(3.0), 2))
print("B"); print(g(arange(3.0), 2))
print("C"); print(g(arange(4.0), 2))
print("D"); print(g(arange(3.0, dtype=f64), 2))
print("E"); print(g(arange(3.0), 3))
print("F"); print(g(arange(3.0), 2), g(arange(4.0), 2), g(arange(3.0, dtype=f64), 2), g(arange(3.0), 3))
"""
D2_3, D2_4, D3_3 = [0, 2.2232443, 1.9726024], [0, 2.2232443, 1.9726024, -8.0632124], \
    [0, 3.0647153, 7.5823944]
# after each marker: the gradients printed, and the reason of the trace (None: nothing logged)
GRAD_OF_JIT_EXPECTED = [
    ("A", D2_3, r"\(first call\)"),
    ("B", D2_3, None),
    ("C", D2_4, r"\(new shape: f32\[4\] \(was f32\[3\]\)\)"),
    ("D", D2_3, r"\(new dtype: f64\[3\] \(was f32\[4\]\)\)"),
    ("E", D3_3, r"\(new static argument: .*3.* \(was .*2.*\)\)"),
    ("F", D2_3 + D2_4 + D2_3 + D3_3, None),
]


@check
def grad_of_jit_keeps_programs_per_signature(ctx):
    # grad(jit(f)) runs one program (the known part of f's JVP, then its transposed unknown
    # part), built once for each signature of the call (shape, dtype, static argument) and
    # found again when a signature repeats.
    status, text = run_on_pty(ctx.ax, ["-e", GRAD_OF_JIT], ctx.env())
    check_exit(status, text)
    sections = re.split(r"^([A-F])\n", text, flags=re.M)
    got = dict(zip(sections[1::2], sections[2::2]))
    expect(sections[0] == "" and list(got) == [m for m, _, _ in GRAD_OF_JIT_EXPECTED],
           f"markers missing or output before them:\n{text}")
    for marker, values, reason in GRAD_OF_JIT_EXPECTED:
        body = got[marker].splitlines()
        logs = [l for l in body if l.startswith("ax: ")]
        expect_numbers("\n".join(l for l in body if not l.startswith("ax: ")), values,
                       f"after {marker}")
        if reason is None:
            expect(logs == [], f"after {marker} ax logged:\n" + "\n".join(logs))
            continue
        expect(len(logs) == 2, f"after {marker}: wanted a trace and one build:\n{got[marker]}")
        expect(re.match(rf"ax: jit: traced \S+ in [0-9.]+ ms {reason}: ", logs[0]), logs[0])
        expect(re.match(r"ax: jit: (compiled|loaded) vjp\(\S+\) in ", logs[1]), logs[1])

# ---------------------------------------------------------------- 4. no assembler


@check
def no_assembler_falls_back(ctx):
    empty = os.path.join(ctx.root, "bin")
    os.mkdir(empty)  # ax runs by absolute path; `as` and `ld` are nowhere on PATH
    program = SELU + """
double = jit(lambda x: exp(x) * 2.0)
gram = jit(lambda x: x @ x.T)
print(jit(selu)(linspace(-2.0, 2.0, 9)))
print(double(ones((2,))), gram(ones((2, 2))), jit(lambda x: sum(x * x))(arange(3.0)))
print(double(ones((3,))))
"""
    p = ctx.run(program, PATH=empty)
    e2 = 2 * math.e
    expect_numbers(p.stdout, SELU_9 + [e2, e2, 2, 2, 2, 2, 5, e2, e2, e2])
    warnings = [l for l in p.stderr.splitlines() if "warning" in l]
    expect(len(warnings) == 1 and warnings[0].startswith(WARNING),
           f"wanted the warning once, stderr:\n{p.stderr}")
    expect("'as'" in warnings[0], warnings[0])
    expect(not log_lines(p.stderr, "compiled") and not log_lines(p.stderr, "loaded"), p.stderr)
    expect(len(log_lines(p.stderr, "prepared")) == 5, p.stderr)
    expect(not ctx.entries("so"), f"cache written without native code: {ctx.entries('so')}")

# ---------------------------------------------------------------- 5. concurrent compiles


@check
def two_processes_at_once(ctx):
    results = ctx.run_at_once(2)
    for status, out, err in results:
        check_exit(status, err)
        program_ok(subprocess.CompletedProcess([], status, out, err))
        expect(WARNING not in err, err)
    expect(any(log_lines(err, "compiled") for _, _, err in results),
           "neither process compiled:\n" + "\n".join(err for _, _, err in results))
    ctx.only_entry()
    ctx.no_temporaries()
    p = ctx.run()
    program_ok(p)
    built(p, "loaded")

# ---------------------------------------------------------------- 6. how long a build takes


TIMED = SELU + """
x = linspace(-3.0, 3.0, 100000)
y = jit(selu)(x)
print(y[::12500])
print(sum(y))
print(max(abs(y - selu(x))))
"""


def timed_expected():
    xs = linspace(-3.0, 3.0, 100000)
    ys = [selu(v) for v in xs]
    return ys[::12500] + [sum(ys), 0.0]


def build_ms(p, how):
    m = re.search(rf"^ax: jit: {how} selu in ([0-9.]+) ms: 1 fused loops", p.stderr, re.M)
    expect(m, f"no '{how} selu' line:\n{p.stderr}")
    expect(WARNING not in p.stderr, p.stderr)
    return float(m.group(1))


@check
def selu_100k_cold_and_warm(ctx):
    # Compiled, then loaded; the times are reported, not judged (docs/benchmarks.md has them).
    want = timed_expected()
    p = ctx.run(TIMED)
    expect_numbers(p.stdout, want, "cold run", rel=1e-5, abs_tol=1e-5)
    cold = build_ms(p, "compiled")
    warm = []
    for _ in range(3):
        p = ctx.run(TIMED)
        expect_numbers(p.stdout, want, "warm run", rel=1e-5, abs_tol=1e-5)
        warm.append(build_ms(p, "loaded"))
    return (f"selu on f32[100000]: cold compile {cold:.2f} ms, warm load "
            f"{', '.join(f'{w:.2f}' for w in warm)} ms")


# ---------------------------------------------------------------- 7. tiered execution

# Calls spaced out over up to ~1 s, so that the compile usually ends while the program runs
# (whether it does is not checked here: test_jit_tier.c waits for that event); every result
# is printed in full, and a tiered run must print what a run with AX_JIT_SYNC=1 prints.
TIERED = SELU + """
import time
def affine(w, x):
    tanh(x @ w) + sum(w, 0)
f, g = jit(selu), jit(affine)
h = jit(lambda x: sum(exp(x) * x, axis=0) - x[0])
x = linspace(-2.0, 2.0, 9)
w = reshape(arange(6.0), (3, 2)) / 10.0
v = reshape(linspace(-1.0, 1.0, 12), (4, 3))
for i in range(50):
    print(i, f(x * (1.0 + i / 7.0)).tolist(), g(w, reshape(x[:6], (2, 3)) + i).tolist(),
          h(v * i).tolist())
    time.sleep(0.02)
"""


def tiered_env(**extra):
    return dict(AX_JIT_SYNC="0", **extra)


@check
def tiered_prints_what_sync_prints(ctx):
    sync = ctx.run(TIERED)
    shutil.rmtree(ctx.cache, ignore_errors=True)
    tiered = ctx.run(TIERED, **tiered_env())
    expect(tiered.stdout == sync.stdout,
           f"tiered output differs from AX_JIT_SYNC=1's:\n{tiered.stdout[:2000]}\n---\n"
           f"{sync.stdout[:2000]}")
    expect(len(tiered.stdout.splitlines()) == 50, tiered.stdout[-500:])
    started = log_lines(tiered.stderr, "started")
    expect(len(started) == 3 and all("compiling in the background" in l for l in started),
           f"wanted three 'started' lines:\n{tiered.stderr}")
    done = [l for l in tiered.stderr.splitlines() if " in the background (" in l]
    expect(len(done) == 3 and all(re.search(r": native from its call \d+ on$|: stored in the "
                                            r"disk cache", l) for l in done),
           f"wanted each compile to end (natively, or at exit):\n{tiered.stderr}")
    # the compile's CPU time (the child, its assembler and linker) is in the log, and real
    cpu = [float(m.group(1)) for l in done for m in [re.search(r", ([0-9.]+) ms of CPU\)", l)] if m]
    expect(len(cpu) == 3 and all(c > 0 for c in cpu), f"wanted each one's CPU time:\n{done}")
    expect(WARNING not in tiered.stderr, tiered.stderr)
    expect(len(ctx.entries("so")) == 3, f"cache: {ctx.entries('so')}")
    ctx.no_temporaries()
    again = ctx.run(TIERED, **tiered_env())
    expect(again.stdout == sync.stdout, "a run from the disk cache printed something else")
    expect(len(log_lines(again.stderr, "loaded")) == 3, again.stderr)


ONE_CALL = SELU + "print(jit(selu)(linspace(-2.0, 2.0, 9)))\n"


@check
def tiered_exit_during_compile(ctx):
    # AX_JIT_EXIT_WAIT=0: the compile that started after the first call is stopped at exit.
    p = ctx.run(ONE_CALL, **tiered_env(AX_JIT_EXIT_WAIT="0"))
    expect_numbers(p.stdout, SELU_9)
    expect(log_lines(p.stderr, "started"), p.stderr)
    expect(re.search(r"^ax: jit: at exit, waited [0-9.]+ ms for 1 compile in the background; "
                     r"1 stopped \(AX_JIT_EXIT_WAIT=0 ms\)$", p.stderr, re.M), p.stderr)
    expect(not ctx.entries("so"), f"a stopped compile reached the cache: {ctx.entries('so')}")
    ctx.no_temporaries()
    # by default the end waits (a bounded time) for the compile, which fills the cache
    p = ctx.run(ONE_CALL, **tiered_env())
    expect(re.search(r"^ax: jit: at exit, waited [0-9.]+ ms for 1 compile in the background; "
                     r"0 stopped", p.stderr, re.M), p.stderr)
    expect(re.search(r"^ax: jit: compiled selu in [0-9.]+ ms in the background .*: stored in "
                     r"the disk cache", p.stderr, re.M), p.stderr)
    expect(len(ctx.entries("so")) == 1, f"cache: {ctx.entries('so')}")
    ctx.no_temporaries()
    p = ctx.run(ONE_CALL, **tiered_env())
    expect_numbers(p.stdout, SELU_9)
    expect(log_lines(p.stderr, "loaded") and "at exit" not in p.stderr, p.stderr)


FAILING_AS = """#!/bin/sh
echo 'stand-in assembler: refusing' >&2
exit 1
"""


@check
def tiered_compile_failure_falls_back(ctx):
    # A compile that fails in the background: one warning, the eager kernels go on, exit 0.
    p = ctx.run(TIERED, **tiered_env(PATH=stand_in_assembler(ctx, FAILING_AS)))
    sync = ctx.run(TIERED)  # the real assembler: native code
    expect(p.stdout == sync.stdout, "the fallback printed something else")
    warnings = [l for l in p.stderr.splitlines() if "warning" in l]
    expect(len(warnings) == 1 and warnings[0].startswith(WARNING), p.stderr)
    expect(not [l for l in p.stderr.splitlines() if " in the background (" in l], p.stderr)
    ctx.no_temporaries()


PMAP = """
import jax
f = jax.pmap(lambda x: sin(x) * 2.0 + jax.lax.psum(x, "i"), axis_name="i")
x = reshape(linspace(-1.0, 1.0, 8), (2, 4))
for i in range(3):
    print(f(x + i).tolist())
"""


@check
def tiered_pmap_body_is_ready_before_the_devices(ctx):
    # The devices (threads) run the body at once and only read its program: its compile ends
    # before they start (ax_jit_ready), even in tiered mode; no compile dies with a device.
    sync = ctx.run(PMAP, AX_DEVICES="2")
    shutil.rmtree(ctx.cache, ignore_errors=True)
    p = ctx.run(PMAP, **tiered_env(AX_DEVICES="2"))
    expect(p.stdout == sync.stdout, f"tiered pmap printed something else:\n{p.stdout}\n---\n"
           f"{sync.stdout}")
    expect(WARNING not in p.stderr, p.stderr)
    expect(re.search(r"compiled \S+ in [0-9.]+ ms in the background .*: native from its call 1 "
                     r"on", p.stderr), p.stderr)


LOOPS = """
step = lambda i, c: c * 0.5 + sin(c)
long_scan = jit(lambda x: fori_loop(0, 100000, step, x))
until = jit(lambda x, n: fori_loop(0, n, step, x))
short_scan = jit(lambda x: fori_loop(0, 10, lambda i, c: c * 0.25 + cos(c), x))
x = linspace(0.0, 1.0, 4)
print(long_scan(x), until(x, 1000), short_scan(x))
"""


@check
def long_loops_wait_for_their_compile(ctx):
    # One eager call of a while loop (its trip count unknown) or of a long scan could outlast
    # its compile: those compile at once, tiered or not; a short scan is tiered.
    p = ctx.run(LOOPS, **tiered_env())
    expect(len(log_lines(p.stderr, "compiled")) >= 2 and len(log_lines(p.stderr, "started")) == 1,
           p.stderr)


BROADCAST = """
poly = jit(lambda x: x * x + x * 2.0)
for a in [ones((600, 600)), broadcast_to(arange(600.0), (600, 600)), ones((600, 600)) + 0.0]:
    for k in range(3):
        y = poly(a)
        print(k, float(y[0, 0]), float(y[599, 599]), float(sum(y)))
"""


@check
def broadcast_inputs_get_a_variant(ctx):
    # ones() and broadcast_to: from the second call, a variant reads the one row / value
    p = ctx.run(BROADCAST)
    variants = [l for l in p.stderr.splitlines() if "(broadcast inputs)" in l]
    expect(len(variants) == 2 and all(l.startswith("ax: jit: compiled ") for l in variants),
           f"wanted two variants compiled:\n{p.stderr}")
    rows = [l.split() for l in p.stdout.splitlines()]
    expect(len(rows) == 9, p.stdout)
    for block in (rows[0:3], rows[3:6], rows[6:9]):
        expect(all(r[1:] == block[0][1:] for r in block), f"calls differ:\n{p.stdout}")
    expect(rows[0][1:] == rows[6][1:], f"ones and a computed array of ones differ:\n{p.stdout}")
    expect_numbers(" ".join(rows[0][1:3]), [3.0, 3.0])
    expect_numbers(rows[3][2], [599.0 * 599.0 + 2 * 599.0])

# ---------------------------------------------------------------- 8. ahead of time

AOT = SELU + """
lowered = jit(selu).lower(ShapeDtypeStruct((9,), float32))
"""
AOT_COMPILED = AOT + """
compiled = lowered.compile()
"""
AOT_CALLED = AOT_COMPILED + """
print(compiled(linspace(-2.0, 2.0, 9)))
print(jit(selu)(linspace(-2.0, 2.0, 9)))
"""


@check
def aot_compiles_at_compile(ctx):
    # lower() only traces; compile() builds the native code, with no call at all; tiered, the
    # compile it waits for makes the first call native (its call 1), and jit(f) shares it.
    p = ctx.run(AOT, **tiered_env())
    expect(len(log_lines(p.stderr, "traced")) == 1, p.stderr)
    expect(not [l for l in p.stderr.splitlines() if re.search(r"^ax: jit: (started|compiled|"
                                                              r"loaded) ", l)], p.stderr)
    p = ctx.run(AOT_COMPILED + "print(compiled.as_text())\n")
    expect(re.search(r"^ax: jit: compiled selu in [0-9.]+ ms: 1 fused loops", p.stderr, re.M),
           p.stderr)
    expect(p.stdout.startswith("extern void\n"), f"wanted the C dump of GCC's code:\n{p.stdout}")
    shutil.rmtree(ctx.cache, ignore_errors=True)
    p = ctx.run(AOT_CALLED, **tiered_env())
    expect_numbers(p.stdout, SELU_9 * 2)
    done = [l for l in p.stderr.splitlines() if " in the background (" in l]
    expect(len(done) == 1 and done[0].endswith(": native from its call 1 on"), p.stderr)
    expect(len(log_lines(p.stderr, "traced")) == 1, p.stderr)
    p = ctx.run(AOT_CALLED, **tiered_env())  # a new process loads it from the disk cache
    expect_numbers(p.stdout, SELU_9 * 2)
    expect(len(log_lines(p.stderr, "loaded")) == 1 and "started" not in p.stderr, p.stderr)


@check
def aot_without_native_code(ctx):
    # No assembler: compile() warns once, the Compiled runs on the eager kernels with the same
    # numbers, and its as_text() is None (JAX's answer when there is no executable text).
    empty = os.path.join(ctx.root, "bin")
    os.mkdir(empty)
    p = ctx.run(AOT_CALLED + "print(compiled.as_text(), lowered.as_text()[:8])\n", PATH=empty)
    *arrays, last = p.stdout.splitlines()
    expect_numbers("\n".join(arrays), SELU_9 * 2)
    expect(last == "None { lambda", p.stdout)
    warnings = [l for l in p.stderr.splitlines() if "warning" in l]
    expect(len(warnings) == 1 and warnings[0].startswith(WARNING), p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default=os.path.join(os.path.dirname(__file__), "..", "build", "ax"))
    ap.add_argument("-v", action="store_true", help="print passing checks too")
    ap.add_argument("checks", nargs="*")
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    passed = failed = skipped = 0
    for fn in CHECKS:
        if a.checks and fn.__name__ not in a.checks:
            continue
        with tempfile.TemporaryDirectory(prefix="ax-jit-test-") as root:
            try:
                note = fn(Ctx(ax, root))  # a check may return figures
                passed += 1
                if a.v:
                    print(f"ok {fn.__name__}" + (f" ({note})" if note else ""))
                elif note:
                    print(f"{fn.__name__}: {note}")
            except Skip as e:
                skipped += 1
                print(f"SKIP jit_test {fn.__name__}: {e}")
            except Exception as e:  # a failing check never stops the others
                failed += 1
                kind = "" if isinstance(e, Failure) else f"{type(e).__name__}: "
                print(f"FAIL jit_test {fn.__name__}: {kind}{e}")
            finally:
                restore_modes(root)
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    sys.exit(1 if failed else 0)


def restore_modes(root):
    """Makes everything under root removable again (a check may leave a 0500 directory)."""
    for d, dirs, _ in os.walk(root):
        for name in dirs:
            try:
                os.chmod(os.path.join(d, name), stat.S_IRWXU)
            except OSError:
                pass


if __name__ == "__main__":
    main()
