#!/usr/bin/env python3
"""Convolution against PyTorch, side by side in one run (`make bench`, docs/benchmarks.md).

The issue's benchmark: jit(value_and_grad) of a 3x3 conv layer (relu(conv(x, w) + b), loss
mean(y ** 2)), batch 32, 28x28, 16 -> 32 channels, NHWC, against PyTorch's forward + backward
of the same layer (2 threads; channels_last and NCHW, the faster counts), gradients with
respect to the parameters (w, b). Also the forward convolution alone. Runs tests/bench/conv.ax
and the PyTorch programs alternately ROUNDS times, so that both see the same machine load, and
prints medians and ratios.
Usage: conv_compare.py --ax build/ax [--rounds 5] [--threads 2]
(--threads 1 pins both sides to one CPU, which a busy shared machine disturbs less.)
"""
import argparse
import os
import statistics
import subprocess
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
FLOPS = 2.0 * 32 * 28 * 28 * 32 * 3 * 3 * 16  # one of the layer's convolutions


def median_time(fn, number, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return statistics.median(times)


def torch_times():
    g = torch.Generator().manual_seed(0)
    out = {}
    for fmt, name in ((torch.channels_last, "channels_last"), (torch.contiguous_format, "nchw")):
        x = torch.randn(32, 16, 28, 28, generator=g).contiguous(memory_format=fmt)
        w = (torch.randn(32, 16, 3, 3, generator=g) * 0.1).contiguous(memory_format=fmt)
        w.requires_grad_()
        b = torch.zeros(32, requires_grad=True)

        def step():
            y = torch.relu(F.conv2d(x, w, b, padding=1))
            loss = (y ** 2).mean()
            return loss, torch.autograd.grad(loss, [w, b])

        def forward():
            with torch.no_grad():
                return F.conv2d(x, w, padding=1)

        out["layer_value_and_grad_" + name] = median_time(step, 10, 15)
        out["conv_forward_" + name] = median_time(forward, 20, 15)
    return out


def ax_times(ax, threads):
    cmd, env = [ax, os.path.join(HERE, "conv.ax")], dict(os.environ)
    if threads == 1:
        cmd = ["taskset", "-c", "0"] + cmd
        env["OPENBLAS_NUM_THREADS"] = "1"
    p = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return {k: float(v) for k, v in (line.split() for line in p.stdout.splitlines())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax", default=os.path.join(HERE, "..", "..", "build", "ax"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, choices=(1, 2))
    a = ap.parse_args()
    ax = os.path.abspath(a.ax)
    torch.set_num_threads(a.threads)
    if a.threads == 1:
        os.sched_setaffinity(0, {0})
    runs = {}
    for _ in range(a.rounds):
        for side, times in (("ax", ax_times(ax, a.threads)), ("torch", torch_times())):
            for k, v in times.items():
                runs.setdefault((side, k), []).append(v)
    med = {k: statistics.median(v) for k, v in runs.items()}
    load = os.getloadavg()[0]
    print(f"torch {torch.__version__}, numpy {np.__version__}; {a.threads} thread(s) each; "
          f"medians of {a.rounds} rounds, load average {load:.1f}")
    print("3x3 conv layer, batch 32, 28x28, 16 -> 32 channels, f32")
    for what, ax_key, t_key in (
            ("jit(value_and_grad) vs forward+backward", "layer_value_and_grad_jit",
             "layer_value_and_grad"),
            ("forward convolution (ax eager)", "conv_forward_eager", "conv_forward")):
        t_ax = med[("ax", ax_key)]
        t_cl = med[("torch", t_key + "_channels_last")]
        t_nchw = med[("torch", t_key + "_nchw")]
        best = min(t_cl, t_nchw)
        print(f"  {what:<42} ax {t_ax * 1e3:7.3f} ms   torch NHWC {t_cl * 1e3:7.3f} ms, "
              f"NCHW {t_nchw * 1e3:7.3f} ms   ax {best / t_ax:5.2f}x torch's best")
    print(f"  forward GFLOP/s: ax {FLOPS / med[('ax', 'conv_forward_eager')] / 1e9:.1f}, "
          f"torch {FLOPS / min(med[('torch', 'conv_forward_channels_last')], med[('torch', 'conv_forward_nchw')]) / 1e9:.1f}")


if __name__ == "__main__":
    main()
