#!/usr/bin/env python3
"""Throws extreme integers at every builtin that takes one, and extreme floats at the calls that
convert floats to integers: none may crash, hang, trip a sanitizer or fail with an internal
error; each call either works or reports an error in the user's terms (ValueError, IndexError,
MemoryError, ...).

Usage: robustness_test.py [--ax build/ax] [-v] [CHECK ...]

One check per template (a call with a hole {v} or {f}), run with each extreme value in one REPL
session (`ax -i`, once in the default mode and once with --x64). Prints 'ok NAME' or
'FAIL NAME: why' and ends with 'N passed, N failed'. Only the standard library is used.
AX_TEST_TIMEOUT_SCALE multiplies the timeout (ASan).

The processes run with 4 GB of address space (ASan builds: allocations above 4 GB fail), so
that a valid but huge request is a MemoryError rather than a machine out of memory.
"""
import argparse
import concurrent.futures as futures
import os
import re
import subprocess
import sys

SCALE = float(os.environ.get("AX_TEST_TIMEOUT_SCALE", "1"))
LIMIT = 4 << 30

# Literals that are ints in both modes (2**63 would wrap in i32 arithmetic without --x64).
VALUES = ["9223372036854775807", "(-9223372036854775807 - 1)", "-9223372036854775807",
          "4611686018427387904", "-4611686018427387904", "4294967296", "2147483648",
          "2147483647", "-2147483649", "-1", "0", "1"]

# Floats for the calls that convert to integers (the C conversion of an out-of-range float is
# undefined).
FLOAT_VALUES = ["1e30", "-1e30", "nan", "inf", "-inf", "9.3e18", "-9.3e18", "0.5", "-0.5"]

SETUP = """\
a = arange(6.0).reshape(2, 3)
m = ones((3, 3))
v = arange(5.0)
iv = arange(5)
k = random.PRNGKey(0)
"""

TEMPLATES = [
    # creation
    "zeros({v})", "ones(({v},))", "zeros((2, {v}))", "zeros(({v}, {v}))", "zeros((0, {v}, {v}))",
    "full({v}, 1.0)", "full((3, {v}), 2)", "empty({v})", "zeros_like(a, shape=({v}, 2))",
    "ones_like(v, shape={v})", "full_like(v, 1, shape=({v},))", "zeros({v}, dtype=bool)",
    "arange({v})", "arange({v}, 10)", "arange(0, {v})", "arange(0, 10, {v})",
    "arange({v}, 0, -1)", "arange({v}, {v}, {v})", "linspace(0, 1, {v})",
    "linspace(0, 1, {v}, endpoint=False)", "eye({v})", "eye(3, {v})", "eye(3, 3, {v})",
    "eye(3, k={v})", "identity({v})", "tril(m, {v})", "triu(m, {v})", "diag(v, {v})",
    "diag(m, {v})", "diagonal(m, {v})", "trace(m, {v})", "diagonal(ones((2, 3, 4)), 1, {v}, 2)",
    "array([{v}])", "array({v}, dtype=int32)", "array([{v}, 1.5])",
    # shapes
    "reshape(v, {v})", "reshape(a, ({v}, -1))", "reshape(a, (-1, {v}))", "reshape(a, ({v}, {v}))",
    "reshape(zeros(0), ({v}, {v}, 0))", "a.reshape({v}, 3)", "transpose(a, ({v}, 0))",
    "swapaxes(a, {v}, 0)", "moveaxis(a, {v}, 0)", "squeeze(a, {v})", "expand_dims(a, {v})",
    "flip(a, {v})", "concatenate([a, a], {v})", "stack([a, a], {v})", "split(v, {v})",
    "array_split(v, {v})", "split(v, [{v}])", "array_split(v, [1, {v}])", "split(a, 1, {v})",
    "tile(v, {v})", "tile(v, (2, {v}))", "tile(a, ({v}, 1))", "repeat(v, {v})",
    "repeat(a, 2, {v})", "repeat(a, {v}, 0)", "roll(v, {v})", "roll(a, {v}, 0)",
    "roll(a, ({v}, 1), (0, 1))", "roll(a, 1, {v})", "broadcast_to(v, ({v}, 5))",
    "broadcast_to(1.0, ({v}, {v}))", "pad(v, {v})", "pad(v, ({v}, 0))", "pad(v, (0, {v}))",
    "pad(a, ((0, 0), ({v}, 1)))", "size(a, {v})", "a.transpose({v}, 0)",
    "concatenate([zeros((0, {v})), zeros((0, {v}))], 1)",
    # reductions and sorting
    "sum(a, {v})", "mean(a, {v})", "argmax(a, {v})", "cumsum(a, {v})", "sort(a, {v})",
    "argsort(a, {v})", "var(a, ddof={v})", "std(a, {v})", "prod(a, {v})", "all(a, {v})",
    "max(a, {v})", "ptp(a, {v})", "median(a, {v})", "cumprod(a, {v})", "any(a, {v})",
    "argmin(a, axis={v}, keepdims=True)",
    # indexing
    "v[{v}]", "a[{v}]", "a[:, {v}]", "v[{v}:]", "v[:{v}]", "v[::{v}]", "v[{v}:{v}:{v}]",
    "v[{v}::-1]", "a[{v}:, ::{v}]", "v.at[{v}].set(1.0)", "v.at[{v}].add(1.0)",
    "v.at[{v}:].set(0.0)", "v.at[::{v}].get()", "take(v, {v})", "take(v, array([{v}]))",
    "take(a, 0, {v})", "take_along_axis(a, zeros((2, 1), dtype=int32), {v})",
    "one_hot(array([1, 2]), {v})", "one_hot(array([{v}]), 3)", "v[array([{v}])]",
    "a[array([0, {v}])]", "[1, 2, 3][{v}]", "[1, 2, 3][{v}:]", "[1, 2, 3][::{v}]",
    "'abc'[{v}]", "'abc'[{v}::{v}]", "(1, 2)[::{v}]", "nonzero(v, size={v})",
    "unique(v, size={v})", "iv[{v}:{v}]", "broadcast_to(1.0, ({v},)).tolist()",
    # searching, counting and the rest of stdlib/jnp_more.ax
    "bincount(iv, length={v})", "bincount(iv, minlength={v})", "histogram(v, bins={v})",
    "searchsorted(v, {v})", "diff(v, n={v})", "diff(a, axis={v})", "quantile(a, 0.5, axis={v})",
    "tri({v})", "unravel_index({v}, (2, 3))", "polyder(v, {v})", "polyint(v, {v})",
    "argwhere(iv, size={v})", "rollaxis(a, {v})", "unique(a, axis={v})",
    # arithmetic on ints
    "left_shift(1, {v})", "right_shift(8, {v})", "1 << {v}", "{v} >> 70", "{v} // 0",
    "{v} % 0", "{v} % -1", "{v} // -1", "abs({v})", "-{v}", "{v} * {v}", "{v} + {v}",
    "{v} - {v}", "{v} ** 2", "2 ** {v}", "{v} ** {v}", "int({v})", "float({v})",
    "power(iv, {v})", "clip(v, {v}, {v})", "round(v, {v})", "around(v, {v})",
    "iv * {v}", "iv // {v}", "iv % {v}", "array({v}) // array(-1)", "bitwise_and(iv, {v})",
    "astype(array({v}), int32)", "array(float({v})).astype(int64)", "{v} == 1.5",
    # Python builtins
    "range({v})", "range(0, {v}, {v})", "range({v}, 0, -1)", "range({v}, {v} - 1, -1)",
    "enumerate([1, 2], {v})", "[0] * {v}", "'a' * {v}", "(1,) * {v}", "str({v})",
    "len(range({v}, 0, -1))",
    # random
    "random.PRNGKey({v})", "random.split(k, {v})", "random.fold_in(k, {v})",
    "random.randint(k, (3,), 0, {v})", "random.randint(k, (3,), {v}, 0)",
    "random.randint(k, (3,), {v}, {v})", "random.uniform(k, ({v},))",
    "random.normal(k, (2, {v}))", "random.bits(k, ({v},))", "random.permutation(k, {v})",
    "random.choice(k, 5, ({v},))", "random.categorical(k, v, axis={v})",
    "random.bernoulli(k, 0.5, ({v},))", "random.key({v})",
    # transformations
    "vmap(lambda x: x, in_axes={v})(a)", "vmap(lambda x: x, out_axes={v})(a)",
    "vmap(lambda x: x, in_axes=None, axis_size={v})(1.0)", "grad(lambda x: x, argnums={v})(1.0)",
    "jit(lambda x: x, static_argnums={v})(1.0)", "jit(lambda x, n: x * n, static_argnums=1)(1.0, {v})",
    "check_grads(lambda x: x * x, (1.0,), order={v})", "jacfwd(lambda x: x, argnums=({v},))(1.0)",
    "jit(lambda x: x[{v}])(v)", "jit(lambda x: x[{v}:])(v)", "jit(lambda x: reshape(x, ({v}, 5)))(v)",
    "jit(lambda x: tile(x, {v}))(v)", "vmap(lambda x: x[{v}])(a)",
    "jit(lambda x: pad(x, {v}))(v)", "vmap(lambda x: roll(x, {v}))(a)",
    # linear algebra
    "tensordot(a, a.T, {v})", "tensordot(a, a, ([{v}], [0]))", "dot(ones(({v}, 0)), ones((0, {v})))",
    "outer(ones({v}), ones({v}))", "einsum('ij,jk->ik', ones((2, {v})), ones(({v}, 2)))",
]


FLOAT_TEMPLATES = [
    "int({f})", "array({f}).astype(int32)", "array({f}).astype(uint8)", "array({f}).astype(int64)",
    "array({f}).astype(uint32)", "array({f}).astype(bool)", "arange({f})", "arange(0, 1, {f})",
    "arange({f}, 1, 0.5)", "linspace({f}, 1, 3)", "linspace(0, {f}, 3, dtype=int32)", "round({f})",
    "{f} // 1", "full(2, {f}, dtype=int32)", "full(2, {f}, dtype=uint8)",
    "jit(lambda x: x.astype(int32))({f})", "array([{f}, 1.0]).astype(int32).sum()",
    "random.uniform(k, (2,), minval={f})", "random.normal(k, (2,)) * {f}", "clip(iv, {f}, 3)",
    "iv + {f}", "power(2.0, {f})", "sort(array([{f}, 1.0, {f}]))", "argmax(array([{f}, 1.0]))",
    "cumsum(array([{f}, 1.0]).astype(int32))", "floor_divide(array({f}), 2.0).astype(int64)",
]


def split_output(text, n):
    """The output of each template line, by the @@<i> markers printed before each."""
    parts = {}
    marks = list(re.finditer(r"^@@(\d+)$", text, re.M))
    for j, mk in enumerate(marks):
        end = marks[j + 1].start() if j + 1 < len(marks) else len(text)
        parts[int(mk.group(1))] = text[mk.end():end]
    return parts, (int(marks[-1].group(1)) if marks else -1)


BAD_KINDS = ("RuntimeError", "SyntaxError", "NameError", "AttributeError")
# (a failed allocation is a warning when ASan may return NULL: ax reports a MemoryError)
SANITIZER = re.compile(r"ERROR: AddressSanitizer|LeakSanitizer|runtime error:|"
                       r"UndefinedBehaviorSanitizer")


def is_sanitized(ax):
    with open(ax, "rb") as f:
        return b"libasan.so" in f.read()


def check(ax, template, x64, sanitized):
    if "{f}" in template:
        lines = [template.format(f=val) for val in FLOAT_VALUES]
    else:
        lines = [template.format(v=val) for val in VALUES]
    prog = SETUP + "".join(f'print("@@{i}")\n_r = {line}\n' for i, line in enumerate(lines))
    prog += 'print("@@end")\n'
    env = dict(os.environ)
    cmd = [ax, "-i"] + (["--x64"] if x64 else [])
    if sanitized:  # ASan reserves terabytes of shadow memory: no ulimit -v
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "halt_on_error=1:exitcode=86") +
                               ":allocator_may_return_null=1:max_allocation_size_mb=4096")
    else:
        cmd = ["sh", "-c", f'ulimit -v {LIMIT >> 10} && exec "$0" "$@"'] + cmd
    try:
        p = subprocess.run(cmd, input=prog, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=env, timeout=60 * SCALE,
                           errors="replace")
    except subprocess.TimeoutExpired:
        return f"no answer in {60 * SCALE:.0f} s"
    out = p.stdout
    parts, last = split_output(out, len(lines))
    if SANITIZER.search(out) or p.returncode != 0 or "@@end" not in out:
        at = lines[last] if 0 <= last < len(lines) else "the setup"
        return f"exit status {p.returncode} after `{at}`:\n{out[-1500:]}"
    setup_errors = out[:out.find("@@0")] if "@@0" in out else out
    if "error[" in setup_errors:
        return f"the setup failed:\n{setup_errors}"
    for i, line in enumerate(lines):
        text = parts.get(i, "")
        kinds = re.findall(r"error\[(\w+)\]", text)
        bad = [k for k in kinds if k in BAD_KINDS] or (["internal"] if "internal" in text else [])
        if bad:
            return f"`{line}` gave {bad[0]}:\n{text.strip()[:800]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default="build/ax")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("checks", nargs="*")
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    jobs = [(t, x64) for t in TEMPLATES + FLOAT_TEMPLATES for x64 in (False, True)
            if not a.checks or any(c in t for c in a.checks)]
    passed = failed = 0
    sanitized = is_sanitized(ax)
    with futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for (t, x64), why in zip(jobs, pool.map(lambda j: check(ax, *j, sanitized), jobs)):
            name = f"{t}{' --x64' if x64 else ''}"
            if why:
                failed += 1
                print(f"FAIL {name}: {why}", flush=True)
            else:
                passed += 1
                if a.v:
                    print(f"ok   {name}", flush=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
