#!/usr/bin/env python3
"""Array I/O end to end, against NumPy: ax reads what NumPy writes and NumPy reads what ax
writes (.npy, .npz, text, gzip), safetensors against a reference reader and writer written
here from the format's specification (numpy + json + struct), corrupt and truncated files (no
crash, an error naming the file), and atomic saves (a failed or killed save leaves the previous
file intact).

Usage: io_test.py [--ax build/ax] [-v] [CHECK ...]

Every check runs ax programs in a temporary directory of its own. Prints 'ok NAME' (with -v)
or 'FAIL NAME: why' per check, then 'N passed, M failed'; exit status 1 on failure. Needs
/usr/bin/python3 with numpy (python3-numpy). AX_TEST_TIMEOUT_SCALE (set by run_tests.py
--sanitized) multiplies the timeouts.
"""
import argparse
import concurrent.futures as futures
import gzip
import json
import os
import random
import re
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:  # a python3 without numpy ahead on PATH: Debian's has it (python3-numpy)
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("FAIL io_test.py: numpy is not installed (Debian package python3-numpy)")
    print("0 passed, 1 failed")
    sys.exit(1)

SCALE = float(os.environ.get("AX_TEST_TIMEOUT_SCALE", "1"))
TIMEOUT = 60 * SCALE
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|"
                              r"SUMMARY: UndefinedBehaviorSanitizer")
AX = "build/ax"


class Fail(Exception):
    pass


def run(program, cwd, env=None, preexec=None, expect_ok=True):
    """Runs an ax program (text) in cwd; returns (status, stdout, stderr)."""
    path = os.path.join(cwd, "prog.ax")
    with open(path, "w") as f:
        f.write(program)
    p = subprocess.run([AX, "prog.ax"], cwd=cwd, capture_output=True, text=True,
                       timeout=TIMEOUT, env=env, preexec_fn=preexec, errors="replace")
    crash(p.returncode, p.stderr)
    if expect_ok and p.returncode != 0:
        raise Fail(f"ax failed (exit {p.returncode}):\n{program}\nstderr: {p.stderr[-1500:]}")
    return p.returncode, p.stdout, p.stderr


def crash(status, stderr):
    if status < 0:
        raise Fail(f"ax was killed by signal {-status}: {stderr[-1500:]}")
    if SANITIZER_REPORT.search(stderr):
        raise Fail(f"sanitizer report:\n{stderr[-3000:]}")
    if status not in (0, 1):
        raise Fail(f"exit status {status}: {stderr[-1500:]}")


def expect(cond, why):
    if not cond:
        raise Fail(why)


def same(a, b, what):
    expect(a.dtype == b.dtype, f"{what}: dtype {a.dtype}, wanted {b.dtype}")
    expect(a.shape == b.shape, f"{what}: shape {a.shape}, wanted {b.shape}")
    expect(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{what}: {a!r} != {b!r}")


def examples():
    """One array of every ax dtype, with 0-d, empty and n-d shapes and awkward values."""
    r = np.random.default_rng(0)
    return {
        "b": np.array([True, False, True]),
        "u8": np.arange(250, 256).astype(np.uint8).reshape(2, 3),
        "i32": np.array([[-2**31, 2**31 - 1], [0, -7]], np.int32),
        "u32": np.array([0, 2**32 - 1, 12345], np.uint32),
        "i64": np.array([-2**63, 2**63 - 1, 2**53 + 1], np.int64),
        "f32": r.standard_normal((2, 3, 4)).astype(np.float32),
        "f64": np.array([np.pi, -0.0, np.inf, -np.inf, np.nan, 5e-324]),
        "scalar": np.array(2.5, np.float32),
        "empty": np.zeros((0, 3), np.int32),
        "empty3": np.zeros((2, 0, 1)),
    }


# ---------------------------------------------------------------- .npy


def check_npy_numpy_reads_ax(d):
    """ax saves arrays of every dtype; NumPy loads them, and the files equal np.save's bytes."""
    ex = examples()
    for name, a in ex.items():
        np.save(os.path.join(d, f"src_{name}.npy"), a)
    prog = "".join(f'save("out_{n}", load("src_{n}.npy"))\n' for n in ex)
    run(prog, d)
    for n, a in ex.items():
        got = np.load(os.path.join(d, f"out_{n}.npy"))
        same(got, a, n)
        with open(os.path.join(d, f"out_{n}.npy"), "rb") as f, \
                open(os.path.join(d, f"src_{n}.npy"), "rb") as g:
            expect(f.read() == g.read(), f"{n}: ax's .npy bytes differ from np.save's")


def check_npy_values_from_ax(d):
    """Arrays computed in ax (not only copied) reach NumPy with their values."""
    run('save("x.npy", arange(12.).reshape((3, 4)) * 0.5)\n'
        'save("k", arange(5) > 2)\n'
        'save("s.npy", 7)\n'
        'save("t.npy", ones((4, 3), dtype=f64).T[1:])\n', d)
    same(np.load(os.path.join(d, "x.npy")), (np.arange(12.).reshape(3, 4) * 0.5).astype(np.float32), "x")
    same(np.load(os.path.join(d, "k.npy")), np.arange(5) > 2, "k")
    same(np.load(os.path.join(d, "s.npy")), np.array(7, np.int32), "s")
    same(np.load(os.path.join(d, "t.npy")), np.ones((2, 4)), "t (a transposed slice)")


def check_npy_ax_reads_numpy(d):
    """NumPy's variants: other dtypes (widened without loss), big-endian, Fortran order,
    format versions 2.0 and 3.0; ax reads each and NumPy compares what ax saves back."""
    r = np.random.default_rng(1)
    cases = {
        "f16": (np.array([1.5, -0.0, 65504, 6e-8, np.inf, np.nan], np.float16), np.float32),
        "i8": (np.array([-128, 127, 0], np.int8), np.int32),
        "i16": (np.array([-32768, 32767], np.int16), np.int32),
        "u16": (np.array([0, 65535], np.uint16), np.int32),
        "be_f8": (np.array([1.25, -3.5], ">f8"), np.float64),
        "be_i4": (np.array([[1, -2], [3, 4]], ">i4"), np.int32),
        "be_u4": (np.array([2**32 - 1], ">u4"), np.uint32),
        "fortran2": (np.asfortranarray(r.standard_normal((3, 4)).astype(np.float32)), np.float32),
        "fortran3": (np.asfortranarray(np.arange(24).reshape(2, 3, 4).astype(np.int64)), np.int64),
        "fortran_empty": (np.asfortranarray(np.zeros((0, 2))), np.float64),
        "scalar_i8": (np.array(-5, np.int8), np.int32),
    }
    for n, (a, _) in cases.items():
        np.save(os.path.join(d, f"{n}.npy"), a)
    for version in [(2, 0), (3, 0)]:
        n = f"v{version[0]}"
        cases[n] = (np.arange(6.0).reshape(2, 3), np.float64)
        with open(os.path.join(d, f"{n}.npy"), "wb") as f:
            np.lib.format.write_array(f, cases[n][0], version=version)
    prog = "".join(f'save("back_{n}.npy", load("{n}.npy"))\n' for n in cases)
    run(prog, d)
    for n, (a, dt) in cases.items():
        got = np.load(os.path.join(d, f"back_{n}.npy"))
        same(got, np.require(a, requirements='C').astype(dt), n)


def check_npy_unsupported_dtypes(d):
    """dtypes no ax dtype holds exactly are a TypeError naming the file and the dtype."""
    cases = {"u64": (np.array([1], np.uint64), "uint64"),
             "c64": (np.array([1j], np.complex64), "complex64"),
             "str": (np.array(["ab"]), "<U2"),
             "struct": (np.zeros(2, [("a", "<i4")]), "structured"),
             "dt": (np.array(["2020-01-01"], "datetime64[D]"), "M8")}
    for n, (a, word) in cases.items():
        np.save(os.path.join(d, f"{n}.npy"), a)
        status, _, err = run(f'load("{n}.npy")\n', d, expect_ok=False)
        expect(status == 1 and "error[TypeError]" in err and f"{n}.npy" in err and word in err,
               f"{n}: wanted a TypeError naming {n}.npy and {word}; got: {err}")
    np.save(os.path.join(d, "obj.npy"), np.array([{}, 1], dtype=object), allow_pickle=True)
    status, _, err = run('load("obj.npy")\n', d, expect_ok=False)
    expect(status == 1 and "obj.npy" in err and "object" in err, f"object array: {err}")
    with open(os.path.join(d, "pickle.npy"), "wb") as f:
        f.write(b"\x80\x04K\x01.")
    status, _, err = run('load("pickle.npy")\n', d, expect_ok=False)
    expect(status == 1 and "pickled" in err, f"pickle: {err}")


# ---------------------------------------------------------------- .npz


def check_npz_numpy_reads_ax(d):
    """savez and savez_compressed: NumPy sees the same names (arr_0 for positional arrays),
    order and values; stored and deflated members as NumPy writes them."""
    ex = examples()
    np.savez(os.path.join(d, "src.npz"), **ex)
    names = ", ".join(f'{n}=src["{n}"]' for n in ex)
    run(f'src = load("src.npz")\n'
        f'savez("plain", src["f32"], {names})\n'
        f'savez_compressed("packed.npz", src["f32"], {names})\n'
        f'savez("empty.npz")\n', d)
    for f, method in [("plain.npz", 0), ("packed.npz", 8)]:
        with np.load(os.path.join(d, f)) as z:
            # NumPy's order: keyword arrays, then the positional ones
            expect(z.files == list(ex) + ["arr_0"], f"{f}: members {z.files}")
            same(z["arr_0"], ex["f32"], f"{f} arr_0")
            for n, a in ex.items():
                same(z[n], a, f"{f} {n}")
        import zipfile
        with zipfile.ZipFile(os.path.join(d, f)) as zf:
            expect(zf.testzip() is None, f"{f}: zipfile finds a bad CRC")
            expect(all(i.compress_type == method for i in zf.infolist()),
                   f"{f}: compression {[i.compress_type for i in zf.infolist()]}")
    with np.load(os.path.join(d, "empty.npz")) as z:
        expect(z.files == [], f"empty.npz: {z.files}")
    size_plain = os.path.getsize(os.path.join(d, "plain.npz"))
    np.savez_compressed(os.path.join(d, "zeros.npz"), z=np.zeros(100000))
    run('savez_compressed("zeros_ax.npz", z=load("zeros.npz")["z"])\n', d)
    expect(os.path.getsize(os.path.join(d, "zeros_ax.npz")) < 2000,
           "savez_compressed does not compress 800 kB of zeros")
    expect(size_plain > 0, "plain.npz is empty")


def check_npz_ax_reads_numpy(d):
    """np.savez / np.savez_compressed (zip64 local headers, as NumPy writes them): ax reads
    a dict in the archive's order, and writes the same arrays back."""
    ex = examples()
    np.savez(os.path.join(d, "a.npz"), ex["f32"], ex["i64"], **ex)
    np.savez_compressed(os.path.join(d, "b.npz"), **ex)
    run('a = load("a.npz")\nprint(list(a.keys()))\nsavez("a2", **a)\n'
        'b = load("b.npz")\nsavez("b2", **b)\nprint(b["scalar"], b["u8"].dtype)\n', d)
    for f, want in [("a2.npz", dict(**ex, arr_0=ex["f32"], arr_1=ex["i64"])), ("b2.npz", ex)]:
        with np.load(os.path.join(d, f)) as z:
            expect(z.files == list(want), f"{f}: {z.files}")
            for n, a in want.items():
                same(z[n], a, f"{f} {n}")


def check_npz_bad_member_name(d):
    """savez refuses a keyword that repeats a positional array's name, as NumPy does."""
    status, _, err = run('savez("x", ones(2), arr_0=ones(3))\n', d, expect_ok=False)
    expect(status == 1 and "ValueError" in err and "arr_0" in err, err)
    expect(not os.path.exists(os.path.join(d, "x.npz")), "a failed savez left x.npz behind")


# ---------------------------------------------------------------- text


def check_text_matches_numpy(d):
    """loadtxt and genfromtxt give NumPy's arrays (plain and gzip files, delimiters,
    comments, usecols, skiprows, max_rows, ndmin, unpack, missing values)."""
    with open(os.path.join(d, "a.csv"), "w") as f:
        f.write("# a header\nx,y,z\n1,2.5,3\n4,5e3,-6 # trailing\n\n7,8,9\n")
    with gzip.open(os.path.join(d, "a.csv.gz"), "wt") as f:
        f.write("1,2.5,3\n4,5e3,-6\n7,8,9\n")
    with open(os.path.join(d, "m.csv"), "w") as f:
        f.write("1,,3\n4,N/A,6\n,8,9\n")
    with open(os.path.join(d, "w.txt"), "w") as f:
        f.write("1 2\n3 4\n5 6\n")
    cases = {
        "a": ('loadtxt("a.csv", delimiter=",", skiprows=2, dtype=float64)',
              lambda: np.loadtxt(os.path.join(d, "a.csv"), delimiter=",", skiprows=2)),
        "gz": ('loadtxt("a.csv.gz", delimiter=",", dtype=f64)',
               lambda: np.loadtxt(os.path.join(d, "a.csv.gz"), delimiter=",")),
        "cols": ('loadtxt("a.csv.gz", delimiter=",", usecols=(0, -1), max_rows=2, dtype=f64)',
                 lambda: np.loadtxt(os.path.join(d, "a.csv.gz"), delimiter=",", usecols=(0, -1),
                                    max_rows=2)),
        "col": ('loadtxt("w.txt", usecols=1, dtype=f64)', lambda: np.loadtxt(os.path.join(d, "w.txt"), usecols=1)),
        "ndmin": ('loadtxt("w.txt", usecols=1, ndmin=2, dtype=f64)',
                  lambda: np.loadtxt(os.path.join(d, "w.txt"), usecols=1, ndmin=2)),
        "unpack": ('loadtxt("w.txt", unpack=True)',  # ax's default float: float32
                   lambda: np.loadtxt(os.path.join(d, "w.txt"), unpack=True).astype(np.float32)),
        "int": ('loadtxt("w.txt", dtype=int64)',
                lambda: np.loadtxt(os.path.join(d, "w.txt"), dtype=np.int64)),
        "gen": ('genfromtxt("m.csv", delimiter=",", dtype=float64)',
                lambda: np.genfromtxt(os.path.join(d, "m.csv"), delimiter=",")),
        "gen_missing": ('genfromtxt("m.csv", delimiter=",", missing_values="N/A", filling_values=0, dtype=float64)',
                        lambda: np.genfromtxt(os.path.join(d, "m.csv"), delimiter=",",
                                              missing_values="N/A", filling_values=0)),
        "gen_int": ('genfromtxt("m.csv", delimiter=",", dtype=int64)',
                    lambda: np.genfromtxt(os.path.join(d, "m.csv"), delimiter=",", dtype=np.int64)),
        "gen_gz": ('genfromtxt("a.csv.gz", delimiter=",", skip_footer=1, dtype=float64)',
                   lambda: np.genfromtxt(os.path.join(d, "a.csv.gz"), delimiter=",", skip_footer=1)),
    }
    run("".join(f'save("{n}.npy", {expr})\n' for n, (expr, _) in cases.items()), d)
    for n, (_, ref) in cases.items():
        same(np.load(os.path.join(d, f"{n}.npy")), ref(), n)


def check_savetxt_matches_numpy(d):
    """savetxt writes the bytes np.savetxt writes (formats, delimiter, header, footer, gzip)."""
    x = np.array([[1.5, -2.0, np.nan], [np.inf, 1e-20, 3.0]])
    i = np.array([[1, -255], [16, 0]], np.int64)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "i.npy"), i)
    cases = {
        "default": ("x", {}),
        "fmt": ("x", dict(fmt="%.3f", delimiter=",")),
        "list": ("x", dict(fmt=["%g", "%10.2e", "%f"], header="a\nb", footer="end", comments="// ")),
        "row": ("i", dict(fmt="%d;%x")),
        "ints": ("i", dict(fmt="%5d", delimiter="|", newline="\r\n")),
        "vec": ("v", dict(fmt="%.1f")),
    }

    def ax_kw(kw):
        return "".join(f", {k}={json.dumps(v)}" for k, v in kw.items())

    prog = 'x = load("x.npy")\ni = load("i.npy")\nv = x[0]\n'
    prog += "".join(f'savetxt("{n}.txt", {src}{ax_kw(kw)})\n' for n, (src, kw) in cases.items())
    prog += 'savetxt("gz.txt.gz", x)\n'
    run(prog, d)
    arrays = {"x": x, "i": i, "v": x[0]}
    for n, (src, kw) in cases.items():
        ref = os.path.join(d, f"ref_{n}.txt")
        np.savetxt(ref, arrays[src], **kw)
        with open(ref, "rb") as f, open(os.path.join(d, f"{n}.txt"), "rb") as g:
            want, got = f.read(), g.read()
        expect(got == want, f"{n}: {got!r}\nwanted {want!r}")
    same(np.loadtxt(os.path.join(d, "gz.txt.gz")), x, "gzip savetxt")


def check_text_errors(d):
    """Bad text: errors name the file, the line and the column."""
    with open(os.path.join(d, "bad.csv"), "w") as f:
        f.write("1,2\n3,x\n")
    with open(os.path.join(d, "ragged.csv"), "w") as f:
        f.write("1,2\n3\n")
    with open(os.path.join(d, "fake.gz"), "w") as f:
        f.write("1,2\n")
    for prog, words in [('loadtxt("bad.csv", delimiter=",")', ["bad.csv", "'x'", "line 2"]),
                        ('loadtxt("ragged.csv", delimiter=",")', ["ragged.csv", "line 2"]),
                        ('loadtxt("fake.gz", delimiter=",")', ["fake.gz", "gzip"]),
                        ('loadtxt("none.csv")', ["none.csv", "No such file"]),
                        ('savetxt("s.txt", ones((2, 2)), fmt="%s")', ["fmt"]),
                        ('savetxt("s.txt", ones((2, 2)), fmt="%d %d %d")', ["fmt"]),
                        ('savetxt("s.txt", ones((2, 2, 2)))', ["2-D"])]:
        status, _, err = run(prog + "\n", d, expect_ok=False)
        expect(status == 1 and all(w in err for w in words), f"{prog}: wanted {words} in: {err}")


# ---------------------------------------------------------------- safetensors

ST_DTYPES = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
             "F16": np.float16, "I32": np.int32, "U32": np.uint32, "F32": np.float32,
             "F64": np.float64, "I64": np.int64, "U64": np.uint64}


def st_read(path):
    """A reference reader, from the format's description: (tensors, metadata, raw header)."""
    with open(path, "rb") as f:
        buf = f.read()
    n, = struct.unpack("<Q", buf[:8])
    header_bytes = buf[8:8 + n]
    header = json.loads(header_bytes.decode("utf-8"))
    meta = header.pop("__metadata__", None)
    data = buf[8 + n:]
    end = 0
    tensors = {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        b, e = info["data_offsets"]
        assert b == end, f"{name} starts at {b}, not {end}"
        dt = np.dtype(ST_DTYPES[info["dtype"]]).newbyteorder("<")
        count = int(np.prod(info["shape"], dtype=np.int64))
        assert e - b == count * dt.itemsize, f"{name}: {e - b} bytes for {info}"
        tensors[name] = np.frombuffer(data[b:e], dt).reshape(info["shape"])
        end = e
    assert end == len(data), f"data holds {len(data)} bytes, tensors cover {end}"
    return tensors, meta, header_bytes


def st_write(path, tensors, metadata=None, order=None, bf16=()):
    """A reference writer: tensors packed in `order` (default: by name); the names in bf16
    are float32 arrays stored as bfloat16 (their upper halves)."""
    header, blobs, at = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in order or sorted(tensors):
        a = np.require(tensors[name], requirements='C')
        if name in bf16:
            raw = (a.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
            dtype = "BF16"
        else:
            raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
            dtype = [k for k, v in ST_DTYPES.items() if np.dtype(v) == a.dtype.newbyteorder("=")][0]
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def check_safetensors_reference_reads_ax(d):
    """save_file writes the format exactly: 8-byte length, compact JSON padded to 8 bytes,
    __metadata__ first, tensors sorted by dtype (widest first) then name, packed data."""
    ex = {k: v for k, v in examples().items()}
    np.savez(os.path.join(d, "src.npz"), **ex)
    run('from safetensors import save_file\nsrc = load("src.npz")\n'
        'save_file(src, "m.safetensors", metadata={"format": "flax", "note": "a \\"quoted\\" \\u00e9"})\n'
        'save_file({}, "none.safetensors")\n', d)
    tensors, meta, raw = st_read(os.path.join(d, "m.safetensors"))
    expect(meta == {"format": "flax", "note": 'a "quoted" \u00e9'}, f"metadata {meta}")
    expect(raw.startswith(b'{"__metadata__":{"format":"flax"'), f"header starts {raw[:40]!r}")
    expect(len(raw) % 8 == 0 and b": " not in raw, "header not compact or not padded to 8")
    for n, a in ex.items():
        same(tensors[n], a, n)
    # the reference order: dtype rank (I64 > F64 > F32 > U32 > I32 > U8 > BOOL), then name
    rank = ["BOOL", "U8", "I32", "U32", "F32", "F64", "I64"]
    info = json.loads(raw)
    info.pop("__metadata__")
    by_offset = sorted(info, key=lambda k: info[k]["data_offsets"])
    want = sorted(info, key=lambda k: (-rank.index(info[k]["dtype"]), k))
    expect(by_offset == want, f"data order {by_offset}, wanted {want}")
    t2, m2, raw2 = st_read(os.path.join(d, "none.safetensors"))
    expect(t2 == {} and m2 is None and raw2 == b"{}      ", f"empty file header {raw2!r}")


def check_safetensors_ax_reads_reference(d):
    """load_file reads the reference writer's files: any data order, metadata, every dtype ax
    holds exactly (I8/I16/U16 -> int32, F16/BF16 -> float32), 0-d and empty tensors."""
    r = np.random.default_rng(2)
    t = {"params/Dense_0/kernel": r.standard_normal((3, 4)).astype(np.float32),
         "params/Dense_0/bias": np.zeros(4, np.float32),
         "step": np.array(1000, np.int64), "mask": np.array([True, False]),
         "i8": np.array([-3, 4], np.int8), "i16": np.array([-300], np.int16),
         "u16": np.array([65535], np.uint16), "f16": np.array([0.5, -2], np.float16),
         "bf": np.array([1.0, -2.5, 3.140625], np.float32), "u8": np.arange(3, dtype=np.uint8),
         "none": np.zeros((0, 5), np.float64)}
    order = list(reversed(sorted(t)))
    st_write(os.path.join(d, "ref.safetensors"), t, metadata={"k": "v"}, order=order, bf16={"bf"})
    run('from safetensors import load_file, safe_open\n'
        't = load_file("ref.safetensors")\nprint(list(t.keys()))\nsavez("back", **t)\n'
        'print(safe_open("ref.safetensors").metadata())\n', d)
    _, out, _ = run('import safetensors.numpy as st\nprint(st.load_file("ref.safetensors")["step"])\n', d)
    expect(out.strip() == "1000", out)
    widened = {"i8": np.int32, "i16": np.int32, "u16": np.int32, "f16": np.float32}
    with np.load(os.path.join(d, "back.npz")) as z:
        expect(z.files == sorted(t), f"keys {z.files}")
        for n, a in t.items():
            same(z[n], a.astype(widened.get(n, a.dtype)), n)


def check_safetensors_flax_tree(d):
    """A Flax parameter tree saves as params/Dense_0/kernel entries (flatten_dict, sep='/')
    that other tools read, and loads back into the same tree (unflatten_dict)."""
    run('import nn\nfrom flax.traverse_util import flatten_dict, unflatten_dict\n'
        'from safetensors.flax import save_file, load_file\n'
        'model = nn.Sequential([nn.Dense(3), nn.relu, nn.Dense(1)])\n'
        'variables = model.init(random.PRNGKey(0), ones((1, 2)))\n'
        'flat = flatten_dict(variables, sep="/")\nprint(sorted(flat.keys()))\n'
        'save_file(flat, "model.safetensors")\n'
        'back = unflatten_dict(load_file("model.safetensors"), sep="/")\n'
        'print(str(tree_structure(back)) == str(tree_structure(variables)))\n'
        'print(all([array_equal(a, b) for a, b in zip(tree_leaves(back), tree_leaves(variables))]))\n', d)
    tensors, _, _ = st_read(os.path.join(d, "model.safetensors"))
    want = {"params/layers_0/kernel", "params/layers_0/bias", "params/layers_2/kernel",
            "params/layers_2/bias"}
    names = set(tensors)
    expect(names == want or all(n.startswith("params/") and n.count("/") == 2 for n in names),
           f"tensor names {sorted(names)}")
    expect(any(n.endswith("/kernel") for n in names), f"no kernel in {sorted(names)}")


def check_safetensors_errors(d):
    """Invalid files the reference reader rejects: ax rejects them too, naming the file."""
    st_write(os.path.join(d, "good.safetensors"), {"a": np.ones(2, np.float32)})
    with open(os.path.join(d, "good.safetensors"), "rb") as f:
        good = f.read()
    n = struct.unpack("<Q", good[:8])[0]
    bad = {
        "gap": good[:8] + good[8:8 + n].replace(b"[0,8]", b"[0,4]").replace(b"[0, 8]", b"[0, 4]") + good[8 + n:],
        "huge": struct.pack("<Q", 2**40) + good[8:],
        "short": good[:-1],
        "long": good + b"\0",
        "json": good[:8] + b"{" + b" " * (n - 1) + good[8 + n:],
        "u64": good[:8] + good[8:8 + n].replace(b'"F32"', b'"U64"') + good[8 + n:],
    }
    for name, data in bad.items():
        with open(os.path.join(d, f"{name}.safetensors"), "wb") as f:
            f.write(data)
        status, _, err = run(f'from safetensors import load_file\nload_file("{name}.safetensors")\n', d,
                             expect_ok=False)
        expect(status == 1 and f"{name}.safetensors" in err, f"{name}: {err}")
    status, _, err = run('from safetensors import save_file\nsave_file({"a": {"b": ones(2)}}, "t.safetensors")\n',
                         d, expect_ok=False)
    expect(status == 1 and "flatten_dict" in err, f"nested dict: {err}")


# ---------------------------------------------------------------- robustness


def corrupt_files(d):
    """Small valid files of every format (written by NumPy / the reference writer)."""
    files = {}
    np.save(os.path.join(d, "c.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.savez(os.path.join(d, "c.npz"), a=np.arange(3), b=np.eye(2))
    np.savez_compressed(os.path.join(d, "cz.npz"), a=np.arange(30), b=np.eye(2))
    st_write(os.path.join(d, "c.safetensors"), {"w": np.ones((2, 2), np.float32), "s": np.array(3)},
             metadata={"m": "x"})
    with gzip.open(os.path.join(d, "c.csv.gz"), "wb") as f:
        f.write(b"1,2,3\n4,5,6\n")
    loader = {"c.npy": "load", "c.npz": "load", "cz.npz": "load",
              "c.safetensors": "_safetensors_load", "c.csv.gz": "genfromtxt"}
    for name, fn in loader.items():
        with open(os.path.join(d, name), "rb") as f:
            files[name] = (fn, f.read())
    return files


def robust_run(d, fn, name, data):
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(data)
    extra = ', delimiter=","' if fn == "genfromtxt" else ""
    p = subprocess.run([AX, "-e", f'x = {fn}("{name}"{extra})'], cwd=d, capture_output=True,
                       text=True, timeout=TIMEOUT, errors="replace")
    crash(p.returncode, p.stderr)
    if p.returncode == 1 and name not in p.stderr:
        raise Fail(f"{name} ({len(data)} bytes): the error does not name the file: {p.stderr}")
    return p.returncode


def check_corrupt_files(d):
    """Every prefix of a small file of each format, and random byte flips: ax loads or fails
    with an error naming the file; never a crash, a hang or a sanitizer report."""
    rng = random.Random(13)
    jobs = []
    for name, (fn, data) in corrupt_files(d).items():
        stem, ext = name.split(".", 1)
        step = max(1, len(data) // 160)
        for k in list(range(0, len(data), step)):
            jobs.append((fn, f"{stem}_p{k}.{ext}", data[:k]))
        for k in range(40):
            b = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            jobs.append((fn, f"{stem}_f{k}.{ext}", bytes(b)))
    with futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        statuses = list(pool.map(lambda j: robust_run(d, *j), jobs))
    expect(statuses.count(1) > len(jobs) // 2, "most corrupt files should fail to load")


# ---------------------------------------------------------------- atomic saves and zlib


def check_atomic_failed_save(d):
    """A save that fails midway (the file size limit) leaves the previous file and no
    temporary file; the error names the file."""
    np.save(os.path.join(d, "ck.npy"), np.arange(4.0))
    np.savez(os.path.join(d, "ck.npz"), a=np.arange(4.0))
    before = {f: open(os.path.join(d, f), "rb").read() for f in ("ck.npy", "ck.npz")}

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100000, 100000))
    for prog, f in [('save("ck.npy", ones(100000))\n', "ck.npy"),
                    ('savez("ck.npz", a=ones(100000))\n', "ck.npz"),
                    ('from safetensors import save_file\nsave_file({"a": ones(100000)}, "ck.npy")\n', "ck.npy")]:
        status, _, err = run(prog, d, preexec=limit, expect_ok=False)
        expect(status == 1 and "error[IOError]" in err and f in err, f"{prog}: {err}")
        expect(open(os.path.join(d, f), "rb").read() == before[f], f"{f} changed by a failed save")
    left = [f for f in os.listdir(d) if ".tmp-" in f]
    expect(not left, f"temporary files left behind: {left}")
    status, _, err = run('save("no/such/dir/x.npy", ones(2))\n', d, expect_ok=False)
    expect(status == 1 and "no/such/dir/x.npy" in err, err)


def check_atomic_killed_save(d):
    """ax killed at random moments while saving a 16 MB checkpoint over and over: the file on
    disk is always a complete version (old or new), never a partial one."""
    np.save(os.path.join(d, "big.npy"), np.zeros(4 << 20, np.float32))
    prog = ('x = zeros(4 * 1024 * 1024)\nfor i in range(1, 1000):\n'
            '    save("big.npy", x + i)\n')
    with open(os.path.join(d, "loop.ax"), "w") as f:
        f.write(prog)
    rng = random.Random(5)
    versions = set()
    for _ in range(6):
        p = subprocess.Popen([AX, "loop.ax"], cwd=d, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 0.6) * SCALE)
        p.kill()
        p.wait()
        a = np.load(os.path.join(d, "big.npy"))
        expect(a.shape == (4 << 20,) and a.min() == a.max(), "a partial checkpoint")
        versions.add(float(a[0]))
    expect(len(versions) >= 1, "no version seen")


def check_zlib_missing(d):
    """Without a loadable zlib, compressed files fail with an error naming the package, and
    everything else still works."""
    fake = os.path.join(d, "fakelib")
    os.mkdir(fake)
    with open(os.path.join(fake, "libz.so.1"), "w") as f:
        f.write("not a library")
    np.savez_compressed(os.path.join(d, "z.npz"), a=np.arange(3))
    env = dict(os.environ, LD_LIBRARY_PATH=fake)
    status, _, err = run('load("z.npz")\n', d, env=env, expect_ok=False)
    expect(status == 1 and "zlib1g" in err and "z.npz" in err, err)
    status, out, err = run('savez("p", a=arange(3))\nprint(load("p.npz")["a"])\n', d, env=env)
    expect(out.strip() == "[0 1 2]", out + err)


# ---------------------------------------------------------------- main


def main():
    global AX
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ax", default="build/ax")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("checks", nargs="*")
    a = ap.parse_args()
    AX = os.path.abspath(a.ax)
    checks = [(n[6:], f) for n, f in globals().items() if n.startswith("check_")]
    if a.checks:
        checks = [(n, f) for n, f in checks if n in a.checks]
    passed = failed = 0
    for name, fn in checks:
        with tempfile.TemporaryDirectory(prefix="ax-io-") as d:
            try:
                fn(d)
                passed += 1
                if a.v:
                    print(f"ok {name}", flush=True)
            except (Fail, AssertionError, subprocess.TimeoutExpired) as e:
                failed += 1
                print(f"FAIL {name}: {e}", flush=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
