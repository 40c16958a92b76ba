#!/usr/bin/env python3
"""Reference numbers for the tests of stdlib/nn.ax and stdlib/optim.ax (tests/lang/nn_*.ax,
tests/lang/optim_*.ax). Not run by `make test`: the tests hold the numbers this prints.

  /usr/bin/python3 tests/nn_reference.py optim      Optax's formulas in NumPy float32, step by
                                                    step, checked against torch.optim
  /usr/bin/python3 tests/nn_reference.py schedules  Optax's schedules in NumPy float32
  /usr/bin/python3 tests/nn_reference.py losses     the losses, NumPy against torch
  /usr/bin/python3 tests/nn_reference.py layers     torch.nn.functional on fixed weights
  /usr/bin/python3 tests/nn_reference.py activations  the activations, as a test program

Optax computes on Python floats in float64 and rounds when they meet a float32 array (a "weak"
scalar): (1 - b1) is float64 1 - 0.9 rounded to float32, while its bias correction
1 - b1**count is float32 arithmetic (the function is jit-compiled, so b1 is a float32 array).
The NumPy code below does the same, operation by operation.
"""
import ctypes
import sys

import numpy as np

f32 = np.float32
_libm = ctypes.CDLL("libm.so.6")
for _name in ("powf", "cosf"):
    getattr(_libm, _name).restype = ctypes.c_float
_libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]
_libm.cosf.argtypes = [ctypes.c_float]


def powf(x, y):
    """float32 pow as libm computes it (NumPy's vectorised float32 power can be 1 ulp off)."""
    return np.vectorize(lambda a, b: f32(_libm.powf(a, b)), otypes=[f32])(x, y)


def cosf(x):
    return np.vectorize(lambda a: f32(_libm.cosf(a)), otypes=[f32])(x)


def w(x):
    """A Python float meeting a float32 array: rounded once to float32."""
    return f32(x)


def fmt(a):
    """A float32 array as an ax literal that reads back to the same bits."""
    a = np.asarray(a, dtype=np.float32)
    if a.ndim == 0:
        a = f32(a)
        return np.format_float_positional(a, unique=True, trim="-") if abs(a) >= 1e-4 or a == 0 \
            else np.format_float_scientific(a, unique=True, trim="-")
    return "[" + ", ".join(fmt(x) for x in a) + "]"


# ---------------------------------------------------------------- optimizers

P0 = np.array([1.0, -2.0, 0.5, 3.0], dtype=f32)


def grads(step, p):
    """The gradient of the test problem at step (deterministic, mixed signs)."""
    return (p * f32(0.5) + np.array([0.1, -0.3, 0.2, 0.0], dtype=f32) * f32(step + 1)).astype(f32)


def run_optax(update, state, steps=5):
    p = P0.copy()
    out = []
    for t in range(steps):
        g = grads(t, p)
        u, state = update(g, state, p)
        p = (p + u).astype(f32)
        out.append(p.copy())
    return out


def bias_correction(m, decay, count):
    c = f32(1) - powf(f32(decay), f32(count))
    return (m / c).astype(f32)


def adam_update(lr, b1=0.9, b2=0.999, eps=1e-8, wd=None, nesterov=False):
    def update(g, s, p):
        mu, nu, count = s
        mu = w(1 - b1) * g + w(b1) * mu
        nu = w(1 - b2) * (g * g) + w(b2) * nu
        count += 1
        if nesterov:
            mh = w(b1) * bias_correction(mu, b1, count + 1) + w(1 - b1) * bias_correction(g, b1, count)
        else:
            mh = bias_correction(mu, b1, count)
        nh = bias_correction(nu, b2, count)
        u = mh / (np.sqrt(nh + w(0.0)) + w(eps))
        if wd is not None:
            u = u + w(wd) * p
        return w(-lr) * u, (mu, nu, count)
    return update, (np.zeros(4, f32), np.zeros(4, f32), 0)


def sgd_update(lr, momentum=None, nesterov=False):
    def update(g, s, p):
        if momentum is None:
            return w(-lr) * g, s
        t = g + w(momentum) * s
        u = g + w(momentum) * t if nesterov else t
        return w(-lr) * u, t
    return update, np.zeros(4, f32)


def rmsprop_update(lr, decay=0.9, eps=1e-8, eps_in_sqrt=True, centered=False):
    def update(g, s, p):
        mu, nu = s
        nu = w(1 - decay) * (g * g) + w(decay) * nu
        if centered:
            mu = w(1 - decay) * g + w(decay) * mu
            v = nu - mu * mu
        else:
            v = nu
        scaling = f32(1) / np.sqrt(v + w(eps)) if eps_in_sqrt else f32(1) / (np.sqrt(v) + w(eps))
        return w(-lr) * (scaling * g), (mu, nu)
    return update, (np.zeros(4, f32), np.zeros(4, f32))


def adagrad_update(lr, init=0.1, eps=1e-7):
    def update(g, s, p):
        s = g * g + s
        inv = np.where(s > 0, f32(1) / np.sqrt(s + w(eps)), f32(0)).astype(f32)
        return w(-lr) * (inv * g), s
    return update, np.full(4, init, f32)


def lion_update(lr, b1=0.9, b2=0.99, wd=1e-3):
    def update(g, s, p):
        u = np.sign(w(1 - b1) * g + w(b1) * s)
        s = w(1 - b2) * g + w(b2) * s
        u = u + w(wd) * p
        return w(-lr) * u, s
    return update, np.zeros(4, f32)


def lamb_update(lr, b1=0.9, b2=0.999, eps=1e-6, wd=0.0):
    adam, state = adam_update(1.0, b1, b2, eps)

    def update(g, s, p):
        u, s = adam(g, s, p)
        u = -u  # adam_update scaled by -1.0: undo to get scale_by_adam
        if wd != 0.0:
            u = u + w(wd) * p
        pn = np.sqrt(np.sum(p * p, dtype=f32))
        un = np.sqrt(np.sum(u * u, dtype=f32))
        ratio = f32(1.0) * pn / (un + w(0.0))
        ratio = f32(1.0) if (pn == 0 or un == 0) else ratio
        return w(-lr) * (u * ratio), s
    return update, state


def torch_run(make):
    import torch
    p = torch.nn.Parameter(torch.tensor(P0))
    opt = make([p])
    out = []
    for t in range(5):
        with torch.no_grad():
            g = torch.tensor(grads(t, p.detach().numpy().astype(f32)))
        p.grad = g
        opt.step()
        out.append(p.detach().numpy().copy())
    return out


def optim():
    import torch
    cases = [
        ("sgd(0.1)", sgd_update(0.1), lambda ps: torch.optim.SGD(ps, lr=0.1)),
        ("sgd(0.1, momentum=0.9)", sgd_update(0.1, 0.9),
         lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
        ("sgd(0.1, momentum=0.9, nesterov=True)", sgd_update(0.1, 0.9, True),
         lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)),
        ("adam(0.1)", adam_update(0.1), lambda ps: torch.optim.Adam(ps, lr=0.1)),
        ("adam(1e-2, b1=0.8, b2=0.99, eps=1e-6)", adam_update(1e-2, 0.8, 0.99, 1e-6),
         lambda ps: torch.optim.Adam(ps, lr=1e-2, betas=(0.8, 0.99), eps=1e-6)),
        ("adamw(0.1, weight_decay=0.01)", adam_update(0.1, wd=0.01),
         lambda ps: torch.optim.AdamW(ps, lr=0.1, weight_decay=0.01)),
        ("nadam(0.1)", adam_update(0.1, nesterov=True), None),
        ("rmsprop(0.01)", rmsprop_update(0.01), None),
        ("rmsprop(0.01, eps_in_sqrt=False)", rmsprop_update(0.01, eps_in_sqrt=False),
         lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.9, eps=1e-8)),
        ("rmsprop(0.01, centered=True, eps_in_sqrt=False)",
         rmsprop_update(0.01, eps_in_sqrt=False, centered=True),
         lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.9, eps=1e-8, centered=True)),
        ("adagrad(0.1)", adagrad_update(0.1),
         lambda ps: torch.optim.Adagrad(ps, lr=0.1, initial_accumulator_value=0.1, eps=1e-7)),
        ("lion(0.01)", lion_update(0.01), None),
        ("lamb(0.01, weight_decay=0.01)", lamb_update(0.01, wd=0.01), None),
    ]
    for name, (update, state), make in cases:
        ours = run_optax(update, state)
        if make is not None:
            ref = torch_run(make)
            err = max(float(np.max(np.abs(a - b))) for a, b in zip(ours, ref))
            note = f"# torch: largest difference {err:.1e}"
        else:
            note = "# (no torch counterpart)"
        print(f'check("{name}", {fmt(ours[-1])})  {note}')


# ---------------------------------------------------------------- schedules

def schedules():
    counts = np.arange(0, 12, dtype=np.int32)

    def show(name, values):
        print(f'sched("{name}", {fmt(np.asarray(values, f32))})')

    # linear_schedule(1.0, 0.1, 10, transition_begin=1)
    c = np.clip(counts - 1, 0, 10)
    frac = f32(1) - (c / 10).astype(f32)
    show("linear", w(1.0 - 0.1) * frac + w(0.1))
    # polynomial_schedule(1.0, 0.5, 2, 8): frac**2 = frac * frac (integer_pow)
    c = np.clip(counts, 0, 8)
    frac = f32(1) - (c / 8).astype(f32)
    show("polynomial", w(1.0 - 0.5) * (frac * frac) + w(0.5))
    # exponential_decay(0.5, 3, 0.8)
    p = (counts / 3).astype(f32)
    show("exponential", np.where(counts <= 0, w(0.5), w(0.5) * powf(f32(0.8), p)))
    # exponential_decay(0.5, 3, 0.8, staircase=True, end_value=0.3)
    p = np.floor((counts / 3).astype(f32))
    show("exponential_staircase", np.maximum(np.where(counts <= 0, w(0.5), w(0.5) * powf(f32(0.8), p)), w(0.3)))
    # cosine_decay_schedule(0.1, 8, alpha=0.1)
    c = np.minimum(counts, f32(8)).astype(f32)
    cosine = f32(0.5) * (f32(1) + cosf((f32(np.pi) * c / f32(8)).astype(f32)))
    show("cosine", w(0.1) * (w(1 - 0.1) * cosine + w(0.1)))
    # warmup_cosine_decay_schedule(0.0, 1.0, 3, 10, end_value=0.05)
    warm = np.clip(counts, 0, 3)
    lin = w(0.0 - 1.0) * (f32(1) - (warm / 3).astype(f32)) + w(1.0)
    alpha = 0.05 / 1.0
    c2 = np.minimum(counts - 3, f32(7)).astype(f32)
    cosine = f32(0.5) * (f32(1) + cosf((f32(np.pi) * c2 / f32(7)).astype(f32)))
    cos_part = w(1.0) * (w(1 - alpha) * cosine + w(alpha))
    show("warmup_cosine", np.where(counts < 3, lin, cos_part))
    # piecewise_constant_schedule(1.0, {3: 0.5, 7: 0.1})
    v = np.full(counts.shape, w(1.0), f32)
    for threshold, s in [(3, 0.5), (7, 0.1)]:
        ind = np.maximum(f32(0), np.sign((threshold - counts).astype(f32)))
        v = v * ind + (f32(1) - ind) * w(s) * v
    show("piecewise", v)


# ---------------------------------------------------------------- losses

def losses():
    import torch
    import torch.nn.functional as F
    logits = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]], f32)
    labels = np.array([2, 1])
    probs = np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0]], f32)
    preds = np.array([0.5, -1.5, 2.0, 0.1], f32)
    targs = np.array([0.0, 1.0, -0.5, 0.1], f32)
    t = torch.tensor
    print("softmax_cross_entropy", F.cross_entropy(t(logits), t(probs), reduction="none").numpy())
    print("softmax_cross_entropy_with_integer_labels",
          F.cross_entropy(t(logits), t(labels), reduction="none").numpy())
    print("sigmoid_binary_cross_entropy",
          F.binary_cross_entropy_with_logits(t(preds), t(np.array([0., 1., 1., 0.], f32)),
                                             reduction="none").numpy())
    print("l2_loss", 0.5 * F.mse_loss(t(preds), t(targs), reduction="none").numpy())
    print("squared_error", F.mse_loss(t(preds), t(targs), reduction="none").numpy())
    print("huber_loss(delta=1.5)",
          F.huber_loss(t(preds), t(targs), reduction="none", delta=1.5).numpy())
    print("cosine_similarity", F.cosine_similarity(t(logits), t(probs + 0.1), dim=-1).numpy())


# ---------------------------------------------------------------- layers

def layers():
    import torch
    import torch.nn.functional as F
    t = torch.tensor
    np.set_printoptions(precision=8, suppress=False, linewidth=120)
    x = (np.arange(2 * 5 * 5 * 3, dtype=f32).reshape(2, 5, 5, 3) % 7 - 3) / f32(4)
    k = (np.arange(3 * 3 * 3 * 4, dtype=f32).reshape(3, 3, 3, 4) % 5 - 2) / f32(8)   # HWIO
    b = np.array([0.1, -0.2, 0.0, 0.3], f32)
    xt = t(x).permute(0, 3, 1, 2)
    kt = t(k).permute(3, 2, 0, 1)                                                     # OIHW
    y = F.conv2d(xt, kt, t(b), padding=1).permute(0, 2, 3, 1).numpy()
    print("conv SAME y[1, 2]", y[1, 2])
    y = F.conv2d(xt, kt, t(b), stride=2).permute(0, 2, 3, 1).numpy()
    print("conv VALID stride 2 y[0]", y[0].reshape(-1, 4)[:2], y.shape)
    y = F.conv2d(xt, kt, t(b), dilation=2).permute(0, 2, 3, 1).numpy()
    print("conv dilation 2 y[1, 0, 0]", y[1, 0, 0], y.shape)
    kg = (np.arange(3 * 3 * 1 * 6, dtype=f32).reshape(3, 3, 1, 6) % 5 - 2) / f32(8)
    y = F.conv2d(xt, t(kg).permute(3, 2, 0, 1), None, padding=1, groups=3).permute(0, 2, 3, 1).numpy()
    print("conv groups 3 y[0, 1, 1]", y[0, 1, 1])
    # ConvTranspose with transpose_kernel=True is torch's conv_transpose2d: kernel (kh, kw, out, in)
    kT = (np.arange(3 * 3 * 4 * 3, dtype=f32).reshape(3, 3, 4, 3) % 5 - 2) / f32(8)
    y = F.conv_transpose2d(xt, t(kT).permute(3, 2, 0, 1), t(b), stride=2).permute(0, 2, 3, 1).numpy()
    print("conv_transpose VALID stride 2", y.shape, y[1, 3, 4])
    y = F.max_pool2d(xt, 2, 2).permute(0, 2, 3, 1).numpy()
    print("max_pool", y.shape, y[1, 1, 0])
    y = F.avg_pool2d(xt, 2, 1).permute(0, 2, 3, 1).numpy()
    print("avg_pool", y.shape, y[0, 3, 2])
    y = F.avg_pool2d(xt, 3, 2, padding=1, count_include_pad=False).permute(0, 2, 3, 1).numpy()
    print("avg_pool SAME no pad count", y.shape, y[0, 0, 0], y[1, 2, 2])
    scale = np.array([1.0, 0.5, 2.0], f32)
    bias = np.array([0.0, 0.1, -0.1], f32)
    y = F.layer_norm(t(x), (3,), t(scale), t(bias), eps=1e-6).numpy()
    print("layer_norm y[1, 4, 3]", y[1, 4, 3])
    x6 = np.concatenate([x, x[..., ::-1] * 2], axis=-1)
    g6 = np.array([1.0, 0.5, 2.0, 1.5, 1.0, 0.25], f32)
    b6 = np.array([0.0, 0.1, -0.1, 0.2, 0.0, 0.0], f32)
    y = F.group_norm(t(x6).permute(0, 3, 1, 2), 3, t(g6), t(b6), eps=1e-6).permute(0, 2, 3, 1).numpy()
    print("group_norm y[0, 2, 1]", y[0, 2, 1])
    rm, rv = torch.zeros(3), torch.ones(3)
    y = F.batch_norm(xt, rm, rv, t(scale), t(bias), training=True, momentum=0.01, eps=1e-5)
    print("batch_norm train y[1, 0, 4]", y.permute(0, 2, 3, 1).numpy()[1, 0, 4])
    n = x.size // 3
    biased = x.reshape(-1, 3).var(axis=0)
    print("running mean", rm.numpy(), "flax running var", 0.99 + 0.01 * biased,
          "(torch's unbiased:", rv.numpy(), ")")
    emb = (np.arange(5 * 3, dtype=f32).reshape(5, 3) - 7) / f32(3)
    print("embed", F.embedding(t(np.array([[4, 0], [2, 2]])), t(emb)).numpy().tolist())


def activations():
    import torch
    import torch.nn.functional as F
    x = torch.tensor([-3.0, -0.5, 0.0, 0.7, 2.5])
    np.set_printoptions(precision=8, linewidth=120)
    for name, y in [("relu", F.relu(x)), ("relu6", F.relu6(x * 3)), ("leaky_relu", F.leaky_relu(x)),
                    ("elu", F.elu(x)), ("celu(alpha=2.0)", F.celu(x, alpha=2.0)), ("selu", F.selu(x)),
                    ("gelu", F.gelu(x, approximate="tanh")), ("gelu(approximate=False)", F.gelu(x)),
                    ("silu", F.silu(x)), ("softplus", F.softplus(x)), ("log_sigmoid", F.logsigmoid(x)),
                    ("sigmoid", torch.sigmoid(x)), ("hard_tanh", F.hardtanh(x)),
                    ("hard_sigmoid", F.hardsigmoid(x)), ("hard_swish", F.hardswish(x)),
                    ("soft_sign", F.softsign(x)), ("softmax", F.softmax(x, -1)),
                    ("log_softmax", F.log_softmax(x, -1)), ("glu", F.glu(torch.cat([x, x.flip(0)])))]:
        print(f"print(nn.{name.split('(')[0]}(x{'' if '(' not in name else ', ' + name.split('(')[1][:-1]}))"
              .replace("nn.glu(x)", "nn.glu(concatenate([x, flip(x)]))").replace("nn.relu6(x)", "nn.relu6(x * 3)"))
        print("#>", np.array2string(y.numpy(), separator=" ", precision=8))


if __name__ == "__main__":
    {"optim": optim, "schedules": schedules, "losses": losses, "layers": layers,
     "activations": activations}[sys.argv[1]]()
