"""Per-example gradients of a 1-128-128-1 tanh MLP over 128 examples with functorch (PyTorch
1.13): the PyTorch side of perex_grads.ax. Prints the median time per call in ms."""
import statistics
import time

import torch
from functorch import grad, vmap

torch.set_num_threads(2)


def predict(params, x):
    for W, b in params[:-1]:
        x = torch.tanh(x @ W + b)
    W, b = params[-1]
    return x @ W + b


def loss(params, x, y):
    return ((predict(params, x) - y) ** 2).sum()


sizes = [1, 128, 128, 1]
params = []
for n_in, n_out in zip(sizes[:-1], sizes[1:]):
    W = torch.sin(torch.arange(n_in * n_out, dtype=torch.float32).reshape(n_in, n_out)) * (1.0 / n_in) ** 0.5
    params.append((W, torch.zeros(n_out)))
xs = torch.linspace(-2, 2, 128).reshape(128, 1, 1)
ys = torch.sin(xs)
perex = vmap(grad(loss), in_dims=(None, 0, 0))
perex(params, xs, ys)
times = []
for _ in range(7):
    t = time.perf_counter()
    for _ in range(50):
        perex(params, xs, ys)
    times.append((time.perf_counter() - t) / 50)
print("functorch vmap(grad) per call (ms):", statistics.median(times) * 1e3)
