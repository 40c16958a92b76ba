#!/usr/bin/env python3
"""Notebooks, plots and computation graphs end to end, through the ax binary.

Usage: notebook_test.py [--ax build/ax] [-v] [CHECK ...]

  notebook runner  `ax notebook` on small notebooks: outputs and echoed values, errors with
                   their caret, pictures in place, --update, --check catching a changed output,
                   --strict, the page (libcmark), the working directory
  plot module      files rendered by gnuplot whose content reflects the data: PNG size and the
                   colours of the series (decoded here), SVG series count and tick labels,
                   imshow's orientation, hist's counts, the limits, and the errors
  show_graph       the DOT text of small functions, with values and gradients checked against
                   grad and against derivatives computed here; names from the source; the
                   backward pass; files, the REPL's :graph, a missing graphviz
  chromium         a tutorial rendered to HTML and opened in headless Chromium: every picture
                   decodes (naturalWidth > 0) and the screenshot shows a plot's colours

Each check runs in a temporary directory of its own. Prints 'ok NAME' (with -v), 'FAIL NAME:
why' or 'SKIP NAME: why' per check, then 'N passed, N failed, N skipped'; a check whose tool
(gnuplot, dot, chromium, libcmark) is not installed is skipped, not passed. Only the standard
library is used. AX_TEST_TIMEOUT_SCALE (set by run_tests.py --sanitized) scales the timeouts.
"""
import argparse
import base64
import html as htmllib
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALE = float(os.environ.get("AX_TEST_TIMEOUT_SCALE", "1"))
TIMEOUT = 60 * SCALE
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|"
                              r"SUMMARY: UndefinedBehaviorSanitizer")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Failure(why)


def close(a, b, rel=1e-5, abs_=1e-6):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


class Ctx:
    def __init__(self, ax, root):
        self.ax, self.root = ax, root

    def path(self, name):
        return os.path.join(self.root, name)

    def write(self, name, text):
        with open(self.path(name), "w", encoding="utf-8") as f:
            f.write(text)
        return self.path(name)

    def read(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return f.read()

    def run(self, args, stdin=None, env=None, cwd=None):
        p = subprocess.run([self.ax, *args], cwd=cwd or self.root, input=stdin, text=True,
                           capture_output=True, timeout=TIMEOUT, errors="replace",
                           env={**os.environ, **(env or {})})
        both = p.stdout + p.stderr
        expect(not SANITIZER_REPORT.search(both), f"sanitizer report:\n{both[-3000:]}")
        expect(p.returncode in (0, 1, 2), f"exit status {p.returncode}:\n{both[-2000:]}")
        return p

    def script(self, code, env=None):
        """Runs a program; its stdout (it must succeed)."""
        self.write("prog.ax", code)
        p = self.run(["prog.ax"], env=env)
        expect(p.returncode == 0, f"the program failed:\n{p.stderr[-2000:]}")
        return p.stdout

    def notebook(self, *args):
        return self.run(["notebook", *args])


def need(program):
    if not shutil.which(program):
        raise Skip(f"{program} is not installed")


def need_cmark():
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"):
        if os.path.exists(os.path.join(d, "libcmark.so.0.30.2")) or \
                os.path.exists(os.path.join(d, "libcmark.so")):
            return
    raise Skip("libcmark is not installed")


def output_blocks(md):
    """The contents of the ```output blocks of a Markdown text, in order."""
    return [m.group(1) for m in re.finditer(r"^```output\n(.*?)^```$", md, re.M | re.S)]


# ---------------------------------------------------------------- PNG decoding


def read_png(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    expect(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            expect(depth == 8 and ctype in (2, 6) and not interlace,
                   f"unexpected PNG format: depth {depth}, colour type {ctype}")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def count_color(rows, rgb, tol=40):
    return sum(1 for row in rows for p in row if all(abs(p[k] - rgb[k]) <= tol for k in range(3)))


BLUE, ORANGE = (0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e)

# ---------------------------------------------------------------- the notebook runner

BASIC = """# Basic

Prose with *emphasis*.

```ax
x = arange(4.)
print("hello", x.sum())
x * 2          # not the last statement: not echoed
x + 1
```

```python
this is not ax and does not run
```

```ax norun
this would be a syntax error if it ran
```

```ax
def f(x):
    y = exp(-2.0 * x)
    (1.0 - y) / (1.0 + y)
a = f(1.0)
```

```ax
grad(f)(1.0)
```
"""


def check_outputs_and_update(c):
    md = c.write("basic.md", BASIC)
    p = c.notebook("--update", md)
    expect(p.returncode == 0, f"--update failed: {p.stderr}")
    text = c.read("basic.md")
    outs = output_blocks(text)
    expect(outs == ["hello 6.0\n[1. 2. 3. 4.] : f32[4]\n", "0.4199743 : f32[]\n"],
           f"recorded outputs: {outs!r}")
    expect("```python\nthis is not ax" in text and "```ax norun\nthis would" in text,
           "the other blocks changed")
    expect(text.count("```output") == 2, "a block without output got an output block")
    p = c.notebook("--check", md)
    expect(p.returncode == 0 and not p.stderr, f"--check after --update: {p.stderr}")
    before = c.read("basic.md")
    p = c.notebook("--update", md)
    expect(p.returncode == 0 and c.read("basic.md") == before, "a second --update changed the file")
    expect(not os.path.exists(c.path("basic.html")), "--update wrote a page without -o")


ERRORS = """```ax
x = arange(3)
```

```ax
x[0] = 10
```

```ax
print(x)
y = x +
```

```ax error
undefined_name
```

```ax
print("still running")
```
"""


def check_errors_do_not_stop(c):
    md = c.write("errors.md", ERRORS)
    p = c.notebook("--update", md)
    expect(p.returncode == 0, f"an error failed the run without --strict: {p.stderr}")
    outs = output_blocks(c.read("errors.md"))
    expect(len(outs) == 4, f"{len(outs)} output blocks: {outs!r}")
    immut, syntax, name, after = outs
    expect(immut.startswith("error[TypeError]: arrays are immutable") and
           " --> <block 2>:1:1" in immut and "1 | x[0] = 10" in immut and "^^^^" in immut,
           f"the error with its caret: {immut!r}")
    expect("error[SyntaxError]" in syntax and "<block 3>:2:" in syntax and "[0 1 2]" not in syntax,
           f"a syntax error stops its block before it runs: {syntax!r}")
    expect(name.startswith("error[NameError]"), f"NameError: {name!r}")
    expect(after == "still running\n", f"the block after the errors: {after!r}")
    expect("errors.md:5: block 2 failed: error[TypeError]" in p.stderr,
           f"the failures are reported on stderr: {p.stderr!r}")
    expect("block 4" not in p.stderr, "a block marked `error` was reported as a failure")
    p = c.notebook("--check", "--strict", md)
    expect(p.returncode == 1 and "2 blocks failed (--strict)" in p.stderr,
           f"--strict: exit {p.returncode}, {p.stderr!r}")


def check_check_catches_change(c):
    md = c.write("chk.md", "```ax\nprint(1.0 / 3.0)\nprint('a', 2)\narange(3)\n```\n")
    expect(c.notebook("--update", md).returncode == 0, "--update failed")
    text = c.read("chk.md")
    expect("0.33333334\na 2\n[0 1 2] : i32[3]\n" in text, f"recorded: {text!r}")
    # a number within the tolerance, and a wildcard, still match
    c.write("chk.md", text.replace("0.33333334", "0.3333334").replace("a 2", "a ..."))
    p = c.notebook("--check", md)
    expect(p.returncode == 0, f"a number within 1e-5 or '...' counted as a change: {p.stderr}")
    c.write("chk.md", text.replace("[0 1 2] : i32[3]", "...").replace("a 2", "...\n..."))
    expect(c.notebook("--check", md).returncode == 0, "a '...' line did not match lines")
    changed = text.replace("0.33333334", "0.3334")
    c.write("chk.md", changed)
    p = c.notebook("--check", md)
    expect(p.returncode == 1, f"--check did not catch a changed number: {p.stderr}")
    expect("chk.md:1: block 1: the output differs" in p.stderr and "  - 0.3334" in p.stderr and
           "  + 0.33333334" in p.stderr and "    a 2" in p.stderr,
           f"the diff: {p.stderr!r}")
    c.write("chk.md", "```ax\nprint('new')\n```\n")
    p = c.notebook("--check", md)
    expect(p.returncode == 1 and "(none is)" in p.stderr and "  + new" in p.stderr,
           f"an output where none is recorded: {p.stderr!r}")
    c.write("chk.md", "```ax nocheck\nprint('changes every time')\n```\n")
    expect(c.notebook("--check", md).returncode == 0, "a nocheck block was compared")


def check_update_rewrites_and_removes(c):
    md = c.write("up.md", "# T\n\n```ax\nprint(2 + 2)\n```\n\n```output\nstale\n```\n\n"
                          "```ax\nz = 1\n```\n\n```output\nleft over\n```\nend\n")
    expect(c.notebook("--update", md).returncode == 0, "--update failed")
    expect(c.read("up.md") == "# T\n\n```ax\nprint(2 + 2)\n```\n\n```output\n4\n```\n\n"
                              "```ax\nz = 1\n```\nend\n", f"rewritten: {c.read('up.md')!r}")


def check_update_keeps_nocheck_output(c):
    md = c.write("stamp.md", "```ax nocheck\nimport time\nprint(time.perf_counter())\n```\n")
    c.notebook("--update", md)
    first = c.read("stamp.md")
    expect(first.count("```output") == 1, "a nocheck block's first output was not recorded")
    p = c.notebook("--update", md)
    expect(p.returncode == 0 and c.read("stamp.md") == first,
           "--update rewrote a nocheck block's recorded output (timings churn the file)")


def check_last_value_and_state(c):
    md = c.write("st.md", "```ax\nk = random.key(0)\n```\n\n```ax\nk2, sub = random.split(k)\n"
                          "random.normal(sub, (3,))\n```\n\n```ax\nif True:\n    7\nelse:\n"
                          "    8\n```\n\n```ax\ndef g(x): x\n```\n\n```ax\nNone\n```\n")
    expect(c.notebook("--update", md).returncode == 0, "--update failed")
    outs = output_blocks(c.read("st.md"))
    want = c.script("k = random.key(0)\nk2, sub = random.split(k)\n"
                    "print(random.normal(sub, (3,)))\n").strip()
    expect(len(outs) == 1 and outs[0] == f"{want} : f32[3]\n",
           f"one echoed value (the same numbers as a script), none for if/def/None: {outs!r}")


def check_notebook_directory(c):
    os.makedirs(c.path("sub"))
    c.write("sub/helper.ax", "def twice(x): 2 * x\n")
    c.write("sub/data.txt", "")
    md = c.write("sub/nb.md", "```ax\nimport helper\nhelper.twice(21)\n```\n")
    p = c.notebook("--update", "sub/nb.md")
    expect(p.returncode == 0 and output_blocks(c.read("sub/nb.md")) == ["42 : i32[]\n"],
           f"a module next to the notebook: {p.stderr} {c.read('sub/nb.md')!r}")
    need_cmark()
    p = c.notebook("sub/nb.md", "-o", "page.html")
    expect(p.returncode == 0 and os.path.exists(c.path("page.html")),
           f"-o is relative to the caller's directory: {p.stderr}")
    expect(not os.path.exists(md[:-3] + ".html"), "-o also wrote FILE.html")


def check_usage_errors(c):
    p = c.notebook()
    expect(p.returncode == 2 and "no file given" in p.stderr, f"no file: {p.stderr!r}")
    p = c.notebook("missing.md")
    expect(p.returncode == 2 and "cannot read 'missing.md'" in p.stderr, f"missing: {p.stderr!r}")
    p = c.notebook("--bogus", "x.md")
    expect(p.returncode == 2 and "unknown option '--bogus'" in p.stderr, f"option: {p.stderr!r}")
    p = c.notebook("--help")
    expect(p.returncode == 0 and "--update" in p.stdout and "--check" in p.stdout, "--help")


PICTURES = """# Pictures

Some **bold** text and a list:

- one
- two

```ax
import matplotlib.pyplot as plt
x = linspace(0.0, 6.0, 30)
print("before")
def f(x): sin(x) * x
show_graph(f, 1.0, values=True, grads=True)
print("between")
plt.plot(x, sin(x), label="sin")
plt.plot(x, cos(x), label="cos")
plt.title("Waves")
plt.legend()
print("after")
```

```output
stale output that the page must not show
```

```ax
plt.figure()
plt.plot(x, x)
plt.show()
print("after show")
plt.plot(x, 2 * x)
```
"""


def decode_images(html):
    """[(mime, alt, bytes)] of the page's inline pictures."""
    pics = []
    for m in re.finditer(r'<img alt="([^"]*)" src="data:([^;]+);base64,([^"]+)"', html):
        pics.append((m.group(2), m.group(1), base64.b64decode(m.group(3))))
    return pics


def check_pictures_in_place(c):
    need("gnuplot"), need("dot"), need_cmark()
    md = c.write("pics.md", PICTURES)
    p = c.notebook("--update", md, "-o", "pics.html")
    expect(p.returncode == 0, f"the notebook failed: {p.stderr}")
    outs = output_blocks(c.read("pics.md"))
    expect(outs[0] == "before\n[picture: graph of f]\nbetween\nafter\n[picture: figure 1: Waves]\n",
           f"pictures in place in the transcript: {outs[0]!r}")
    expect(outs[1] == "[picture: figure 1]\nafter show\n[picture: figure 1]\n",
           f"show() in a notebook, then the figure left open (each numbered 1: the figures "
           f"before were closed, as matplotlib's inline backend does): {outs[1]!r}")
    html = c.read("pics.html")
    pics = decode_images(html)
    expect([alt for _, alt, _ in pics] == ["graph of f", "figure 1: Waves", "figure 1", "figure 1"],
           f"the page's pictures: {[a for _, a, _ in pics]}")
    expect(all(mime == "image/svg+xml" and data.lstrip().startswith((b"<?xml", b"<svg"))
               for mime, _, data in pics), "the pictures are inline SVG documents")
    graph = pics[0][2].decode()
    expect(">sin<" in graph and ">mul<" in graph and "grad 1.0" in graph, "the graph's SVG text")
    waves = pics[1][2].decode()
    expect(len(set(re.findall(r'<g id="gnuplot_plot_(\w+)"', waves))) == 2 and "Waves" in waves,
           "the figure's SVG has two series and the title")
    expect("<strong>bold</strong>" in html and "<li>two</li>" in html and
           "<h1>Pictures</h1>" in html, "the Markdown is rendered by libcmark")
    expect("stale output" not in html, "the page shows the recorded output, not this run's")
    out = html[html.index('<div class="ax-out">'):]
    order = [out.index(s) for s in (">before", "graph of f", ">between", "figure 1: Waves")]
    expect(order == sorted(order), "the page keeps the order of text and pictures")


def check_missing_cmark(c):
    """Without libcmark the page is a clear error naming the package."""
    md = c.write("lib.md", "```ax\nprint(1)\n```\n")
    p = c.run(["notebook", md], env={"AX_LIBCMARK": c.path("no/libcmark.so")})
    expect(p.returncode == 1 and "libcmark" in p.stderr and "libcmark0.30.2" in p.stderr,
           f"a missing libcmark: exit {p.returncode}, {p.stderr!r}")


# ---------------------------------------------------------------- the plot module


def check_plot_png(c):
    need("gnuplot")
    out = c.script("import plot as plt\nx = linspace(0.0, 10.0, 50)\n"
                   "plt.plot(x, sin(x))\nplt.plot(x, cos(x), linewidth=3)\n"
                   "plt.savefig('two.png')\nprint(plt.xlim(), plt.ylim())\nplt.close()\n"
                   "plt.figure(figsize=(4, 3), dpi=50)\nplt.plot([1, 2, 3], [3, 1, 2], 'r')\n"
                   "plt.savefig('small.png')\n")
    w, h, rows = read_png(open(c.path("two.png"), "rb").read())
    expect((w, h) == (640, 480), f"the default figure is 640x480 pixels, got {w}x{h}")
    blue, orange = count_color(rows, BLUE), count_color(rows, ORANGE)
    expect(blue > 300 and orange > 300, f"both series are drawn in matplotlib's colours "
                                        f"(blue {blue}, orange {orange} pixels)")
    lims = [float(v) for v in re.findall(r"-?\d+\.\d+", out)]
    expect(len(lims) == 4 and close(lims[0], -0.5) and close(lims[1], 10.5),
           f"x limits with matplotlib's 5% margins: {out!r}")
    expect(-1.2 < lims[2] < -1.0 and 1.0 < lims[3] < 1.2, f"y limits: {out!r}")
    w, h, rows = read_png(open(c.path("small.png"), "rb").read())
    expect((w, h) == (200, 150), f"figsize=(4, 3) at dpi 50 is 200x150, got {w}x{h}")
    expect(count_color(rows, (255, 0, 0), 60) > 50 and count_color(rows, BLUE) == 0,
           "the format string 'r' draws red")


def check_plot_svg_series_and_ticks(c):
    need("gnuplot")
    c.script("import matplotlib.pyplot as plt\nfig, axs = plt.subplots(1, 2)\n"
             "x = arange(0.0, 101.0)\naxs[0].plot(x, x / 20.0 - 2.5, label='a')\n"
             "axs[0].scatter(x, -x / 20.0 + 2.5, label='b')\naxs[0].plot(x, 0 * x, 'k--')\n"
             "axs[0].legend()\naxs[0].set_title('three')\naxs[1].bar(['p', 'q'], [5.0, 700.0])\n"
             "axs[1].set_yscale('log')\nfig.savefig('s.svg')\n")
    svg = c.read("s.svg")
    groups = set(re.findall(r'<g id="gnuplot_plot_(\d+)([a-z])"', svg))  # keys repeat ids
    per_panel = {}
    for n, panel in groups:
        per_panel[panel] = per_panel.get(panel, 0) + 1
    expect(per_panel == {"a": 3, "b": 1}, f"series per axes: {per_panel}")
    texts = re.findall(r">\s*([^<>\s][^<>]*?)\s*</text>", svg)
    expect("100" in texts and "0" in texts and "three" in texts and "a" in texts,
           f"tick labels cover the data range (0..100) and the title: {texts[:40]}")
    expect("p" in texts and "q" in texts, "bar names become tick labels")
    expect("10" in texts and "100" in texts[texts.index("p") - 3:],
           f"a log axis has decade ticks: {texts}")


def centroid(rows, rgb, tol=12):
    pts = [(x, y) for y, row in enumerate(rows) for x, p in enumerate(row)
           if all(abs(p[k] - rgb[k]) <= tol for k in range(3))]
    expect(pts, f"no pixel of colour {rgb}")
    return sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts), len(pts)


def check_imshow_orientation(c):
    need("gnuplot")
    c.script("import plot as plt\nz = array([[0.0, 0.0], [0.0, 1.0]])\n"
             "plt.figure(figsize=(3, 3))\nplt.imshow(z)\nplt.savefig('up.png')\n"
             "plt.figure(figsize=(3, 3))\nplt.imshow(z, origin='lower')\nplt.savefig('low.png')\n")
    purple, yellow = (0x44, 0x01, 0x54), (0xfd, 0xe7, 0x25)  # viridis at 0 and 1
    for name, yellow_below in (("up.png", True), ("low.png", False)):
        w, h, rows = read_png(open(c.path(name), "rb").read())
        px, py, np_ = centroid(rows, purple)
        yx, yy, ny = centroid(rows, yellow)
        expect(2.5 < np_ / ny < 3.5, f"{name}: three cells of 0 for one of 1 ({np_}, {ny})")
        expect(yx > px, f"{name}: the 1 is in the right column")
        expect((yy > py) == yellow_below,
               f"{name}: row 1 is drawn {'below' if yellow_below else 'above'} row 0")


def check_imshow_blocks_and_axis_off(c):
    """An enlarged image is drawn as blocks of pixels (matplotlib's default) unless it asks for an
    interpolation; axis('off') hides the ticks and the frame but keeps the title."""
    need("gnuplot")
    out = c.script("import matplotlib.pyplot as plt\nfig, axs = plt.subplots(1, 3)\n"
             "z = reshape(arange(9.0), (3, 3))\naxs[0].imshow(z)\n"
             "axs[1].imshow(z, interpolation='bilinear')\naxs[2].imshow(z, interpolation='nearest')\n"
             "print(axs[0].axis('off'))\naxs[0].set_title('blocks')\nfig.savefig('i.svg')\n"
             "plt.figure()\nplt.imshow(z)\nplt.axis('off')\nplt.axis('on')\nplt.savefig('on.svg')\n"
             "plt.figure()\nplt.imshow(z)\nplt.gca().set_axis_off()\nplt.savefig('off.svg')\n")
    expect(out.strip() == "(-0.5, 2.5, 2.5, -0.5)", f"axis() returns the limits: {out!r}")
    images = re.findall(r"<image ([^>]*?)xlink:href", c.read("i.svg"))
    expect(len(images) == 3, f"three images: {images}")
    expect(["pixelated" in i for i in images] == [True, False, True],
           f"blocks, then bilinear, then nearest: {images}")
    texts = lambda name: re.findall(r">\s*([^<>\s][^<>]*?)\s*</text>", c.read(name))
    expect("blocks" in texts("i.svg"), "axis('off') keeps the title")
    expect("2.5" in texts("on.svg") and "2.5" not in texts("off.svg"),
           f"axis('on') shows ticks, set_axis_off() hides them: {texts('off.svg')}")
    c.write("bad.ax", "import plot as plt\nplt.axis('equal')\n")
    p = c.run(["bad.ax"])
    expect(p.returncode == 1 and "axis(): 'equal' is not supported" in p.stderr, p.stderr)


def check_hist_counts(c):
    need("gnuplot")
    out = c.script("import plot as plt\n"
                   "x = array([0.0, 0.5, 1.0, 1.5, 2.0, 2.0, 3.9, 4.0])\n"
                   "n, edges, _ = plt.hist(x, bins=4)\nprint(n)\nprint(edges)\n"
                   "d, _, _ = plt.hist(x, bins=4, density=True)\nprint(d.sum())\n"
                   "plt.savefig('h.png')\n")
    lines = out.splitlines()
    expect(lines[0] == "[2. 2. 2. 2.]" and lines[1] == "[0. 1. 2. 3. 4.]",
           f"numpy.histogram's counts and edges (last bin closed): {lines}")
    expect(close(float(lines[2]), 1.0), f"density sums to 1 over unit bins: {lines[2]}")


def check_plot_errors(c):
    need("gnuplot")
    cases = [
        ("plt.plot([1, 2], [1, 2, 3])", "error[ShapeError]: plot(): x and y must have the same"),
        ("plt.plot([1, 2], color='blurple')", "error[ValueError]: plot(): 'blurple' is not a colour"),
        ("plt.plot([1, 2], 'q')", "error[ValueError]: plot(): cannot read the format string"),
        ("plt.imshow(zeros(3))", "error[ShapeError]: imshow(): X must be 2-D"),
        ("plt.imshow(zeros((2, 2)), cmap='nope')", "error[ValueError]: imshow(): unknown colormap"),
        ("plt.plot([1, 2])\nplt.savefig('f.jpg')", "error[ValueError]: savefig(): cannot tell"),
        ("plt.subplot(2, 2, 5)", "error[ValueError]: subplot(): index 5 is not in a 2 x 2 grid"),
        ("jit(lambda x: plt.plot(x))(ones(3))", "error[ConcretizationError]"),
        ("plt.plot([1, 2], bogus=1)", "error[TypeError]: plot() got an unexpected keyword"),
    ]
    for code, want in cases:
        c.write("bad.ax", "import plot as plt\n" + code + "\n")
        p = c.run(["bad.ax"])
        expect(p.returncode == 1 and want in p.stderr, f"{code!r}: {p.stderr!r}")
    # without gnuplot: a clear error naming the Debian package
    bindir = c.path("bin")
    os.makedirs(bindir)
    c.write("nognu.ax", "import plot as plt\nplt.plot([1, 2])\nplt.savefig('x.png')\n")
    p = c.run(["nognu.ax"], env={"PATH": bindir})
    expect(p.returncode == 1 and "gnuplot-nox" in p.stderr and "not installed" in p.stderr,
           f"gnuplot missing: {p.stderr!r}")


def check_plot_api_surface(c):
    """Every function and method once, with what they return or change."""
    need("gnuplot")
    out = c.script("""import matplotlib.pyplot as plt
fig, axs = plt.subplots(2, 2, figsize=(6, 5))
print(fig.number, axs.shape, len(axs.flat))
a = axs[0, 0]
x = arange(5.0)
a.bar(x, x + 1, width=0.5, align="edge", color="C3", label="bars")
a.errorbar(x, x, yerr=0.5, xerr=array([0.1, 0.2, 0.1, 0.2, 0.1]), fmt="o-", capsize=3)
a.axhline(2.0, color="k", linestyle=":")
a.axvline(1.0)
a.set(title="mixed", xlabel="x", ylabel="y", xlim=(-1.0, 6.0))
a.legend(["first"], loc="lower right")
print(a.get_xlim(), a.get_ylim()[0])
b = axs[0, -1]
s = random.normal(random.key(0), (500,))
n, edges, _ = b.hist(s, bins=array([-3.0, -1.0, 0.0, 1.0, 3.0]), histtype="step", color="g", label="h")
print(n.sum(), sum((s >= -3.0) & (s <= 3.0)), edges)
b.fill_between(x, x, x * 2, alpha=0.3)
b.set_ylim(top=600.0)
print(b.get_ylim()[1])
axs[1, 0].scatter(x, x, 50.0, c="m", marker="s", alpha=0.5)
axs[1][0].scatter(x, -x, s=x * 10 + 1, c=x, cmap="coolwarm_r", vmin=0.0, vmax=4.0)
g = linspace(-1.0, 1.0, 12)
axs[1][1].contour(g, g, g[None, :] ** 2 + g[:, None] ** 2, [0.2, 0.5, 0.8], colors="k")
axs[1][1].contour(g[None, :] * g[:, None], 4, cmap="plasma")
axs[1][1].imshow(random.uniform(random.key(1), (4, 5, 3)), extent=(0.0, 1.0, 0.0, 1.0))
axs[1][1].grid()
axs[1][1].set_xscale("log")
axs[1][1].set_xscale("linear")
fig.suptitle("all of it")
fig.savefig("all.png", dpi=80)
fig.savefig("all.pdf")
sub = plt.subplot(2, 1, 2)
plt.plot(x, x ** 2, "C1.--", lw=2, ms=8, label="sq")
print(plt.gcf().number)
f2 = plt.figure(7)
print(plt.gcf().number)
plt.figure(1)
print(plt.gcf().number)
plt.close(f2)
plt.close()
print(plt.gcf().number)
plt.clf()
plt.close("all")
h = plt.figure()
print(h.number, plt.ylim())
plt.tight_layout()
plt.savefig("empty.png")
""")
    lines = out.splitlines()
    expect(lines[0] == "1 (2, 2) 4", f"subplots: {lines[0]!r}")
    expect(lines[1].startswith("(-1.0, 6.0) -0."), f"set(xlim=...) and the y range: {lines[1]!r}")
    total, inside = lines[2].split()[:2]
    expect(float(total) == float(inside) and "[-3. -1.  0.  1.  3.]" in lines[2],
           f"hist with given edges: {lines[2]!r}")
    expect(lines[3] == "600.0", f"set_ylim(top=...): {lines[3]!r}")
    expect(lines[4:] == ["1", "7", "1", "1", "1 (0.0, 1.0)"],
           f"figures made, made current, closed and numbered as matplotlib does: {lines[4:]}")
    w, h, _ = read_png(open(c.path("all.png"), "rb").read())
    expect((w, h) == (480, 400), f"dpi=80 at 6x5 inches: {w}x{h}")
    expect(open(c.path("all.pdf"), "rb").read(5) == b"%PDF-", "a PDF file")
    expect(read_png(open(c.path("empty.png"), "rb").read())[:2] == (640, 480), "an empty figure")


def check_show_in_script(c):
    need("gnuplot")
    tmp = c.path("t")
    os.makedirs(tmp)
    out = c.script("import plot as plt\nplt.plot([1, 2, 3])\nplt.show()\nplt.show()\n",
                   env={"TMPDIR": tmp})
    paths = out.split()
    expect(len(paths) == 1 and paths[0].startswith(tmp + "/ax-figure-") and
           paths[0].endswith(".png"), f"show() prints one PNG path, then nothing: {out!r}")
    w, h, _ = read_png(open(paths[0], "rb").read())
    expect((w, h) == (640, 480), "the shown figure is a 640x480 PNG")
    expect(os.listdir(tmp) == [os.path.basename(paths[0])],
           f"gnuplot's working files are removed: {os.listdir(tmp)}")


# ---------------------------------------------------------------- show_graph

NODE = re.compile(r'^\s*(n\d+) \[.*?label=<(.*)>\];$', re.M)
EDGE = re.compile(r'^\s*(n\d+) -> (n\d+)', re.M)


def parse_dot(dot):
    """{node: {'name', 'value', 'grad', 'text'}} and the edges of graph_dot's output."""
    nodes = {}
    for m in NODE.finditer(dot):
        label = m.group(2)
        name = re.search(r"<B>(.*?)</B>", label)
        value = re.search(r"value (.*?)</FONT>", label)
        grad = re.search(r"grad (.*?)</FONT>", label)
        nodes[m.group(1)] = {"name": htmllib.unescape(name.group(1)) if name else None,
                             "value": value.group(1) if value else None,
                             "grad": grad.group(1) if grad else None, "text": label}
    return nodes, EDGE.findall(dot)


def by_name(nodes, name):
    found = [n for n in nodes.values() if n["name"] == name]
    expect(len(found) == 1, f"{len(found)} nodes named {name!r}")
    return found[0]


def check_graph_values_and_grads(c):
    out = c.script("def f(x):\n    s = sin(x)\n    s * x\n"
                   "print(graph_dot(f, 1.5, values=True, grads=True))\nprint(grad(f)(1.5))\n")
    dot, g = out.rsplit("}\n", 1)
    nodes, edges = parse_dot(dot)
    x, s, m = by_name(nodes, "x"), by_name(nodes, "sin"), by_name(nodes, "mul")
    out_node = [n for n in nodes.values() if n["name"] == "f"]
    expect(len(nodes) == 4 and out_node, f"x, sin, mul and the output f: {nodes.keys()}")
    expect(len(edges) == 4, f"edges x->sin, x->mul, sin->mul, mul->f: {edges}")
    expect(close(float(x["grad"]), float(g.strip())),
           f"the input's gradient is grad(f)(x): {x['grad']} vs {g.strip()}")
    expect(close(float(x["grad"]), math.cos(1.5) * 1.5 + math.sin(1.5)), "d/dx sin(x) x")
    expect(close(float(s["value"]), math.sin(1.5)) and close(float(s["grad"]), 1.5),
           f"sin: value sin(x), gradient x: {s}")
    expect(close(float(m["value"]), math.sin(1.5) * 1.5) and float(m["grad"]) == 1.0,
           f"the output's gradient is 1: {m}")


def check_graph_names_and_pytrees(c):
    out = c.script("def loss(p, x):\n    y = x @ p['w'] + p['b']\n    total = sum(y ** 2)\n"
                   "    total\n"
                   "print(graph_dot(loss, {'w': ones((3, 2)), 'b': zeros(2)}, ones((4, 3)), "
                   "grads=True))\n"
                   "print(grad(loss)({'w': ones((3, 2)), 'b': zeros(2)}, ones((4, 3)))['b'])\n"
                   "print(graph_dot(lambda a, b: (a * b, a + b), 1.0, 2.0))\n")
    first, rest = out.split("}\n", 1)
    rest = rest.lstrip("\n")
    nodes, _ = parse_dot(first)
    names = {n["name"] for n in nodes.values()}
    expect({"p['b']", "p['w']", "x", "total"} <= names,
           f"inputs named by parameter and path, the output by the source's name: {names}")
    gb = rest.splitlines()[0]
    expect(by_name(nodes, "p['b']")["grad"] == gb, f"grad of p['b']: {gb}")
    nodes, _ = parse_dot(rest.split("\n", 1)[1])
    names = sorted(n["name"] for n in nodes.values() if n["name"])
    expect(names == ["<lambda>[0]", "<lambda>[1]", "a", "add", "b", "mul"],
           f"a lambda's outputs: {names}")


def check_graph_backward_pass(c):
    out = c.script("def f(x): sin(x) * x\nprint(graph_dot(grad(f), 0.5, values=True))\n"
                   "print(grad(f)(0.5))\n")
    dot, g = out.rsplit("}\n", 1)
    nodes, _ = parse_dot(dot)
    names = [n["name"] for n in nodes.values()]
    expect('label="grad(f)"' in dot and "cos" in names and "grad(f)" in names,
           f"the backward pass: {names}")
    expect(by_name(nodes, "cos")["value"] == c.script("print(cos(0.5))").strip(),
           "the cos node's value")
    final = [e for e in parse_dot(dot)[1] if nodes[e[1]]["name"] == "grad(f)"]
    expect(nodes[final[0][0]]["value"] == g.strip(), "the output node's value is grad(f)(x)")


def check_graph_clusters(c):
    out = c.script("@custom_jvp\ndef softplus(x):\n    log(1.0 + exp(x))\n"
                   "softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * sigmoid(p[0])))\n"
                   "def f(x): 2.0 * softplus(x)\nprint(graph_dot(f, 1.0, grads=True))\n")
    expect("subgraph cluster_0" in out and "softplus (custom rule)" in out,
           "a sub-program is drawn as a cluster")
    nodes, _ = parse_dot(out)
    expect(by_name(nodes, "x")["grad"] == c.script("def s(x): 2.0 * sigmoid(x)\nprint(s(1.0))")
           .strip(), "the gradient goes through the custom rule")


def check_graph_files_and_repl(c):
    need("dot")
    c.script("def f(x): tanh(x) * 2.0\nshow_graph(f, 1.0, path='g.svg')\n"
             "show_graph(f, 1.0, values=True, path='g.png')\nshow_graph(f, 1.0, path='g.dot')\n")
    expect("<svg" in c.read("g.svg") and ">tanh<" in c.read("g.svg"), "an SVG file")
    w, h, _ = read_png(open(c.path("g.png"), "rb").read())
    expect(w > 50 and h > 100, f"a PNG file ({w}x{h})")
    expect(c.read("g.dot").startswith("digraph G {"), "a DOT file")
    tmp = c.path("t")
    os.makedirs(tmp)
    p = c.run(["-i"], stdin="def f(x): sin(x) * x\n:graph f(2.0)\n:graph grad(f)(2.0)\n:graph f\n",
              env={"TMPDIR": tmp})
    paths = [ln for ln in p.stdout.split() if ln.startswith(tmp)]
    expect(len(paths) == 2 and all(os.path.exists(q) and q.endswith(".svg") for q in paths),
           f":graph prints the path of an SVG file: {p.stdout!r} {p.stderr!r}")
    expect(">cos<" in open(paths[1]).read(), ":graph grad(f)(x) draws the backward pass")
    expect(":graph needs a call" in p.stderr, f":graph without a call: {p.stderr!r}")
    c.write("nodot.ax", "show_graph(lambda x: x * 2.0, 1.0)\n")
    p = c.run(["nodot.ax"], env={"PATH": c.path("t")})
    expect(p.returncode == 1 and "graphviz" in p.stderr and "not installed" in p.stderr,
           f"dot missing: {p.stderr!r}")
    c.write("bad.ax", "show_graph(lambda x: x, 1.0, grads=True, path='g.gif')\n")
    p = c.run(["bad.ax"])
    expect("error[ValueError]: show_graph(): path must name" in p.stderr, f"{p.stderr!r}")
    c.write("bad.ax", "print(graph_dot(lambda x: x * 2.0, ones(3), grads=True))\n")
    p = c.run(["bad.ax"])
    expect("error[TypeError]: show_graph(..., grads=True) needs a function with one float scalar"
           in p.stderr, f"grads of a vector: {p.stderr!r}")


# ---------------------------------------------------------------- the page in a browser

# Injected into a copy of the page: only the pictures stay visible, each at most 180 pixels
# high (a small screenshot decodes quickly here), and a script records, once the page has
# loaded, each image's decoded size and where it is on the screen.
PROBE = """<style>
main>*:not(.ax-out){display:none!important} .ax-out pre{display:none!important}
.ax-out{margin:0!important;border:0!important;padding:0!important}
.ax-picture{margin:4px 0!important} .ax-picture img{max-height:180px;width:auto;max-width:580px}
</style>
<script>
window.addEventListener('load', () => {
  const p = document.createElement('pre');
  p.id = 'ax-probe';
  p.textContent = JSON.stringify([...document.images].map(i => {
    const r = i.getBoundingClientRect();
    return [i.alt, i.complete, i.naturalWidth, i.naturalHeight,
            Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)];
  }));
  p.style.display = 'none';
  document.body.appendChild(p);
});
</script>
"""
WINDOW = "--window-size=600,1000"


def chromium_program():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    raise Skip("chromium is not installed (Debian package chromium)")


def check_chromium_shows_tutorial(c):
    browser = chromium_program()
    need("gnuplot"), need("dot"), need_cmark()
    tutorial = os.path.join(ROOT, "docs", "tutorials", "autodiff.md")
    page = c.path("autodiff.html")
    p = c.notebook(tutorial, "-o", page)
    expect(p.returncode == 0, f"the tutorial did not render: {p.stderr}")
    html = open(page, encoding="utf-8").read()
    want = len(decode_images(html))
    expect(want >= 2, f"the tutorial has pictures ({want})")
    probe = c.path("probe.html")
    with open(probe, "w", encoding="utf-8") as f:
        f.write(html.replace("</body>", PROBE + "</body>"))
    profile = c.path("profile")
    run = lambda extra: subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", WINDOW, "--hide-scrollbars",
         *extra, "file://" + probe], capture_output=True, text=True, timeout=120 * SCALE,
        errors="replace")
    r = run(["--virtual-time-budget=5000", "--dump-dom"])
    m = re.search(r'<pre id="ax-probe"[^>]*>(.*?)</pre>', r.stdout, re.S)
    expect(m, f"the probe did not run: {r.stdout[-500:]} {r.stderr[-500:]}")
    images = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    expect(len(images) == want, f"{len(images)} images in the DOM, {want} in the page")
    bad = [i[:4] for i in images if not (i[1] and i[2] > 0 and i[3] > 0)]
    expect(not bad, f"pictures that did not load: {bad}")
    shot = c.path("shot.png")
    run([f"--screenshot={shot}"])
    w, h, rows = read_png(open(shot, "rb").read())
    for alt, _, _, _, left, top, width, height in images:
        if top + height > h:
            continue  # below the screenshot
        box = [row[left + 2:left + width - 2] for row in rows[top + 2:top + height - 2]]
        ink = sum(1 for row in box for p in row if min(p) < 200)
        expect(ink > 0.01 * width * height,
               f"the screenshot shows nothing where '{alt}' is ({ink} dark pixels)")
    blue = [(x, y) for y, row in enumerate(rows) for x, p in enumerate(row)
            if p[2] > p[0] + 60 and p[2] > 150]
    expect(len(blue) > 50, "the screenshot shows the plot's blue lines and graph nodes")


CHECKS = [
    check_outputs_and_update, check_update_keeps_nocheck_output, check_errors_do_not_stop,
    check_check_catches_change,
    check_update_rewrites_and_removes, check_last_value_and_state, check_notebook_directory,
    check_usage_errors, check_pictures_in_place, check_missing_cmark,
    check_plot_png, check_plot_svg_series_and_ticks, check_imshow_orientation,
    check_imshow_blocks_and_axis_off, check_hist_counts,
    check_plot_errors, check_plot_api_surface, check_show_in_script,
    check_graph_values_and_grads, check_graph_names_and_pytrees, check_graph_backward_pass,
    check_graph_clusters, check_graph_files_and_repl,
    check_chromium_shows_tutorial,
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default=os.path.join(ROOT, "build", "ax"))
    ap.add_argument("-v", action="store_true", help="print passing checks too")
    ap.add_argument("checks", nargs="*")
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    passed = failed = skipped = 0
    for fn in CHECKS:
        name = fn.__name__[len("check_"):]
        if a.checks and name not in a.checks and fn.__name__ not in a.checks:
            continue
        with tempfile.TemporaryDirectory(prefix="ax-notebook-test-") as root:
            try:
                fn(Ctx(ax, root))
                passed += 1
                if a.v:
                    print(f"ok notebook_test {name}")
            except Skip as e:
                skipped += 1
                print(f"SKIP notebook_test {name}: {e}")
            except Exception as e:  # a failing check never stops the others
                failed += 1
                kind = "" if isinstance(e, Failure) else f"{type(e).__name__}: "
                print(f"FAIL notebook_test {name}: {kind}{e}")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
