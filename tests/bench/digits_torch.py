#!/usr/bin/env python3
"""The training of examples/digits.ax in PyTorch: Conv(32, 3x3) -> relu -> avg_pool 2x2 ->
Dense(10) -> log_softmax, Adam(1e-2), batches of 100, 30 epochs, 1500/297 split of data/digits.csv.
Prints the test accuracy and the training time (data loading included, interpreter start-up and
`import torch` not). Usage: /usr/bin/python3 tests/bench/digits_torch.py [epochs]
"""
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
torch.set_num_threads(2)
torch.manual_seed(1)


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 32, 3, padding=1)
        self.dense = torch.nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.avg_pool2d(F.relu(self.conv(x)), 2)
        return F.log_softmax(self.dense(x.flatten(1)), dim=-1)


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    start = time.perf_counter()
    table = np.loadtxt(os.path.join(ROOT, "data", "digits.csv"), delimiter=",", dtype=np.float32)
    X = torch.tensor(table[:, :64].reshape(-1, 1, 8, 8) / 16.0)
    y = torch.tensor(table[:, 64].astype(np.int64))
    order = torch.tensor(np.random.RandomState(0).permutation(len(y)))
    train_x, train_y = X[order[:1500]], y[order[:1500]]
    test_x, test_y = X[order[1500:]], y[order[1500:]]
    model = CNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(epochs):
        perm = torch.randperm(1500)
        for i in range(15):
            idx = perm[i * 100:(i + 1) * 100]
            opt.zero_grad()
            loss = F.nll_loss(model(train_x[idx]), train_y[idx])
            loss.backward()
            opt.step()
    with torch.no_grad():
        acc = (model(test_x).argmax(-1) == test_y).float().mean().item()
    print(f"test accuracy {acc:.4f}  training {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
