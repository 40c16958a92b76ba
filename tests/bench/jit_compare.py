#!/usr/bin/env python3
"""jit against NumPy and PyTorch, side by side in one run (`make bench`, docs/benchmarks.md).

Runs tests/bench/jit.ax (per-iteration medians of jitted functions) and the same programs in
NumPy / PyTorch eager, alternating ROUNDS times so that both see the same machine load, and
prints medians and ratios. Also: memcpy of the bytes x*x + x*2.0 moves (np.copyto), and jit's
compile latency (cold, into an empty cache directory, and loading from the disk cache in a new
process) from AX_LOG_COMPILES.
Usage: jit_compare.py --ax build/ax [--rounds 3]
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(2)


def median_time(fn, number, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return statistics.median(times)


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def norm(x):
    return x / np.sqrt(np.sum(x * x, axis=1, keepdims=True))


def torch_sgd_step():
    g = torch.Generator().manual_seed(6)
    params = []
    for n_in, n_out in zip([1, 128, 128], [128, 128, 1]):
        w = torch.randn(n_in, n_out, generator=g) * (2.0 / n_in) ** 0.5
        params.append([w.requires_grad_(), torch.ones(n_out).requires_grad_()])
    xs = torch.randn(128, 1, generator=g)
    ys = torch.sin(xs)

    def step():
        x = xs
        for w, b in params[:-1]:
            x = torch.relu(x @ w + b)
        out = x @ params[-1][0] + params[-1][1]
        loss = ((out - ys) ** 2).mean()
        grads = torch.autograd.grad(loss, [p for layer in params for p in layer])
        with torch.no_grad():
            for i, layer in enumerate(params):
                for j in range(2):
                    layer[j] = (layer[j] - 0.01 * grads[2 * i + j]).requires_grad_()
    return step


def reference_times():
    a = np.linspace(0.0, 1.0, 25000000, dtype=np.float32).reshape(5000, 5000)
    o = np.ones((5000, 5000), dtype=np.float32)
    dst = np.empty_like(a)
    x = np.random.default_rng(0).standard_normal(100000).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((10000, 10)).astype(np.float32)
    return {
        "poly_5000x5000": median_time(lambda: a * a + a * 2.0, 1, 15),
        "poly_ones_5000x5000": median_time(lambda: o * o + o * 2.0, 1, 15),
        "memcpy_200MB": median_time(lambda: np.copyto(dst, a), 1, 15),
        "selu_100k": median_time(lambda: selu(x), 50, 15),
        "norm_10000x10": median_time(lambda: norm(b), 50, 15),
        "sgd_step_mlp": median_time(torch_sgd_step(), 100, 15),
    }


def ax_times(ax):
    env = dict(os.environ, AX_JIT_SYNC="1")  # native code from the first call
    p = subprocess.run([ax, os.path.join(HERE, "jit.ax")], capture_output=True, text=True,
                       check=True, env=env)
    return {k: float(v) for k, v in (line.split() for line in p.stdout.splitlines())}


SELU = """
def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * where(x > 0, x, alpha * exp(x) - alpha)
x = random.normal(random.key(0), (100000,))
y = jit(selu)(x)
"""


def compile_latency(ax, runs=5):
    cold, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, XDG_CACHE_HOME=cache, AX_LOG_COMPILES="1", AX_JIT_SYNC="1")
            for dest in (cold, warm):
                p = subprocess.run([ax, "-e", SELU], capture_output=True, text=True, env=env,
                                   check=True)
                m = re.search(r"(compiled|loaded) selu in ([0-9.]+) ms", p.stderr)
                dest.append(float(m.group(2)))
    return statistics.median(cold), statistics.median(warm)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default=os.path.join(HERE, "..", "..", "build", "ax"))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    runs = {}
    for _ in range(a.rounds):
        for side, times in (("ax", ax_times(ax)), ("ref", reference_times())):
            for k, v in times.items():
                runs.setdefault((side, k), []).append(v)
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"numpy {np.__version__}, torch {torch.__version__}; medians of {a.rounds} rounds")
    print(f"{'benchmark':<20} {'ax jit':>10} {'reference':>10} {'ratio':>7}")
    for name, ref in (("poly_5000x5000", "NumPy"), ("poly_ones_5000x5000", "NumPy"),
                      ("selu_100k", "NumPy"),
                      ("norm_10000x10", "NumPy"), ("sgd_step_mlp", "PyTorch")):
        t_ax, t_ref = med[("ax", name)], med[("ref", name)]
        print(f"{name:<20} {t_ax * 1e6:>8.1f}us {t_ref * 1e6:>8.1f}us {t_ref / t_ax:>6.2f}x "
              f"faster than {ref}")
    t_poly, t_copy = med[("ax", "poly_5000x5000")], med[("ref", "memcpy_200MB")]
    print(f"poly vs memcpy of the same bytes: {t_copy * 1e3:.2f} ms memcpy, "
          f"jit {t_poly / t_copy:.2f}x memcpy's time")
    cold, warm = compile_latency(ax)
    print(f"compile latency (selu): cold {cold:.1f} ms, from the disk cache {warm:.2f} ms")


if __name__ == "__main__":
    main()
