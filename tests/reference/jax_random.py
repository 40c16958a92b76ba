#!/usr/bin/python3
"""An independent NumPy model of jax.random (threefry2x32, jax_threefry_partitionable on by
default), written from JAX's algorithms in jax/_src/random (the facts in
../shared/reference/prng.md): keys, bits, uniform, normal and the samplers built on them, each
with JAX's key splits, order of operations and float32 dtype.

Elementary operations are IEEE float32 (NumPy); transcendental functions are evaluated in
float64 and rounded to float32 (correctly rounded but for rare double roundings), as ax's libm
calls nearly always are. XLA's own f32 log/exp/pow may differ from these in the last place.

    tests/reference/jax_random.py                   # the model's draws for the cases below
    tests/reference/jax_random.py --write-test F    # F = tests/lang/random_jax_values.ax
    tests/reference/jax_random.py --check           # the model gives JAX's published values
    tests/reference/jax_random.py --against build/ax   # ax's draws at scale, bit by bit
"""
import math
import sys

import numpy as np

F32 = np.float32
U32 = np.uint32
PARTITIONABLE = True


# ---------------------------------------------------------------- threefry2x32 and keys

def threefry(k0, k1, x0, x1):
    """threefry2x32 on uint32 arrays (broadcast): 20 rounds, key injection every 4."""
    k0, k1 = U32(k0), U32(k1)
    x0 = np.array(x0, dtype=U32, copy=True)
    x1 = np.array(x1, dtype=U32, copy=True)
    x0, x1 = np.broadcast_arrays(x0, x1)
    x0, x1 = x0.copy(), x1.copy()
    ks = [k0, k1, U32(k0 ^ k1 ^ U32(0x1BD11BDA))]
    rot = [[13, 15, 26, 6], [17, 29, 16, 24]]
    with np.errstate(over="ignore"):
        x0 += ks[0]
        x1 += ks[1]
        for i in range(1, 6):
            for r in rot[(i - 1) % 2]:
                x0 += x1
                x1 = (x1 << U32(r)) | (x1 >> U32(32 - r))
                x1 ^= x0
            x0 += ks[i % 3]
            x1 += ks[(i + 1) % 3] + U32(i)
    return x0, x1


def key(seed):
    seed = int(seed)
    return np.array([(seed >> 32) & 0xFFFFFFFF if seed >= 0 else 0, seed & 0xFFFFFFFF], dtype=U32)


def _hash_counts(k, n):
    lo = np.arange(n, dtype=U32)
    return threefry(k[0], k[1], np.zeros(n, U32), lo)


def _hash_unpartitioned(k, n):
    count = np.arange(n + n % 2, dtype=U32)
    if n % 2:
        count[n] = 0
    h = count.shape[0] // 2
    y0, y1 = threefry(k[0], k[1], count[:h], count[h:])
    return np.concatenate([y0, y1])[:n]


def split(k, num=2):
    shape = tuple(num) if isinstance(num, tuple) else (num,)
    n = int(np.prod(shape, dtype=np.int64))
    if PARTITIONABLE:
        y0, y1 = _hash_counts(k, n)
        return np.stack([y0, y1], axis=-1).reshape(shape + (2,))
    return _hash_unpartitioned(k, 2 * n).reshape(shape + (2,))


def fold_in(k, d):
    y0, y1 = threefry(k[0], k[1], U32(0), U32(d))
    return np.array([y0, y1], dtype=U32).reshape(2)


def bits(k, shape):
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if PARTITIONABLE:
        y0, y1 = _hash_counts(k, n)
        return (y0 ^ y1).reshape(shape)
    return _hash_unpartitioned(k, n).reshape(shape)


# ---------------------------------------------------------------- float32 elementary functions

def _f64(fn):
    return lambda *xs: np.asarray(fn(*[np.asarray(x, dtype=np.float64) for x in xs])).astype(F32)


log = _f64(np.log)
log1p = _f64(np.log1p)
exp = _f64(np.exp)
sqrt = _f64(np.sqrt)
tan = _f64(np.tan)
power = _f64(np.power)
lgamma = _f64(np.vectorize(lambda x: math.lgamma(x) if x > 0 or x != math.floor(x) else math.inf,
                           otypes=[np.float64]))

# Giles' single-precision erfinv coefficients, as XLA's ErfInv uses them (w < 5, w >= 5);
# XLA:CPU contracts each Horner step p * w + c into one fused multiply-add.
_ERFINV_SMALL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                 -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_ERFINV_LARGE = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                 -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


def _fma(a, b, c):
    # a * b is exact in float64 (24 + 24 bits); one more rounding of the sum, then to float32
    return (np.float64(a) * np.float64(b) + np.float64(c)).astype(F32)


def erf_inv(x):
    x = np.asarray(x, dtype=F32)
    w = -log1p(x * -x)
    small = w < F32(5)
    w = np.where(small, w - F32(2.5), sqrt(w) - F32(3)).astype(F32)
    p = np.where(small, F32(_ERFINV_SMALL[0]), F32(_ERFINV_LARGE[0])).astype(F32)
    for cs, cl in zip(_ERFINV_SMALL[1:], _ERFINV_LARGE[1:]):
        p = _fma(p, w, np.where(small, F32(cs), F32(cl)).astype(F32))
    return np.where(np.abs(x) == F32(1), x * F32(np.inf), p * x).astype(F32)


# ---------------------------------------------------------------- uniform, normal and friends

def uniform(k, shape=(), minval=0.0, maxval=1.0):
    b = bits(k, shape)
    u = ((b >> U32(9)) | U32(0x3F800000)).view(F32) - F32(1)
    minval, maxval = F32(minval), F32(maxval)
    return np.maximum(minval, u * (maxval - minval) + minval).astype(F32)


def normal(k, shape=()):
    lo = np.nextafter(F32(-1), F32(0))
    return (F32(np.sqrt(2)) * erf_inv(uniform(k, shape, lo, 1.0))).astype(F32)


def exponential(k, shape=()):
    return -log1p(-uniform(k, shape))


def bernoulli(k, p, shape):
    return uniform(k, shape) < F32(p)


def rademacher(k, shape, dtype=np.int32):
    b = bernoulli(k, 0.5, shape).astype(dtype)
    return (2 * b - 1).astype(dtype)


def randint(k, shape, lo, hi):
    k1, k2 = split(k)
    higher, lower = bits(k1, shape), bits(k2, shape)
    span = U32(hi - lo)
    mult = U32((U32(65536) % span) * (U32(65536) % span) % span)
    with np.errstate(over="ignore"):
        off = ((higher % span) * mult + lower % span) % span
    return (lo + off.astype(np.int32)).astype(np.int32)


def cauchy(k, shape):
    u = uniform(k, shape, np.finfo(F32).eps, 1.0)
    return tan(F32(np.pi) * (u - F32(0.5)))


def pareto(k, b, shape):
    return exp(exponential(k, shape) / F32(b))


def lognormal(k, sigma, shape):
    return exp(normal(k, shape) * F32(sigma))


def maxwell(k, shape):
    n = normal(k, tuple(shape) + (3,))
    s = n * n
    return sqrt((s[..., 0] + s[..., 1]) + s[..., 2])


def double_sided_maxwell(k, loc, scale, shape):
    km, kr = split(k)
    m = maxwell(km, shape)
    return (rademacher(kr, shape, F32) * m * F32(scale) + F32(loc)).astype(F32)


def weibull_min(k, scale, concentration, shape):
    u = uniform(k, shape)
    return (power(-log1p(-u), F32(1.0 / concentration)) * F32(scale)).astype(F32)


def rayleigh(k, scale, shape):
    u = uniform(k, shape)
    return (F32(scale) * sqrt(log(u) * F32(-2))).astype(F32)


def wald(k, mean, shape):
    k1, k2 = split(k)
    mean = np.full(shape, mean, dtype=F32)
    v = normal(k1, shape)
    z = uniform(k2, shape)
    y = v * v
    y_sq = y * y
    mean_sq = mean * mean
    x = mean + mean_sq * y / F32(2) - mean / F32(2) * sqrt(F32(4) * mean * y + mean_sq * y_sq)
    return np.where(z <= mean / (mean + x), x, mean_sq / x).astype(F32)


def geometric(k, p, shape):
    u = uniform(k, shape)
    u = np.where(u == F32(0), F32(1), u)
    return (np.floor(log(u) / log1p(-F32(p))) + F32(1)).astype(np.int32)


def triangular(k, left, mode, right, shape):
    left, mode, right = F32(left), F32(mode), F32(right)
    fc = (mode - left) / (right - left)
    u = uniform(k, shape)
    out1 = left + sqrt(u * (right - left) * (mode - left))
    out2 = right - sqrt((F32(1) - u) * (right - left) * (right - mode))
    return np.where(u < fc, out1, out2).astype(F32)


def logistic(k, shape):
    x = uniform(k, shape, np.finfo(F32).tiny, 1.0)
    return log(x) - log1p(-x)


def laplace(k, shape):
    u = uniform(k, shape, np.nextafter(F32(-1), F32(0)), 1.0)
    return (np.sign(u) * log1p(-np.abs(u))).astype(F32)


def gumbel(k, shape):
    return -log(-log(uniform(k, shape, np.finfo(F32).tiny, 1.0)))


def gumbel_high(k, shape):
    u = uniform(k, (2,) + tuple(shape))
    x = np.where(u[0] >= F32(0.5), u[0],
                 u[0] + F32(2.0 ** -23) * u[1] + F32(max(2.0 ** -47, np.finfo(F32).tiny)))
    return -log(-log1p(-x.astype(F32)))


def _shuffle(k, x, axis=0):
    rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(2.0 ** 32 - 1)))
    for _ in range(rounds):
        k, sub = split(k)
        x = np.take_along_axis(x, np.argsort(bits(sub, x.shape), axis=axis, kind="stable"), axis)
    return x


def permutation(k, n):
    return _shuffle(k, np.arange(n, dtype=np.int32))


def categorical(k, logits, shape):
    logits = np.asarray(logits, F32)
    return np.argmax(gumbel(k, tuple(shape) + logits.shape) + logits, axis=-1).astype(np.int32)


def categorical_distinct(k, logits, num):
    logits = np.asarray(logits, F32)
    g = logits + gumbel(k, logits.shape)
    return np.argsort(-g, kind="stable")[:num].astype(np.int32)


def choice_p(k, n, shape, p):
    p = np.asarray(p, F32)
    cdf = np.cumsum(p, dtype=F32)
    r = cdf[-1] * (F32(1) - uniform(k, shape))
    return np.searchsorted(cdf, r, side="left").astype(np.int32)


def bernoulli_high(k, p, shape):
    u = uniform(k, (2,) + tuple(shape))
    return u[1] * F32(2.0 ** -23) < F32(p) - u[0]


# ---------------------------------------------------------------- gamma: one loop per element

def _gamma_one(k, alpha, log_space):
    alpha = F32(alpha)
    one, third = F32(1), F32(1.0 / 3.0)
    boost = alpha >= one
    alpha_orig = alpha
    if not boost:
        alpha = alpha + one
    d = alpha - third
    c = third / sqrt(d)
    X, V, U = F32(0), F32(1), F32(2)
    while (U >= one - F32(0.0331) * (X * X)) and (log(U) >= X * F32(0.5) + d * (one - V + log(V))):
        k, xk, uk = split(k, 3)
        v = F32(-1)
        while v <= F32(0):
            xk, sub = split(xk)
            x = normal(sub, ())
            v = one + x * c
        X = x * x
        V = v * v * v
        U = uniform(uk, ())
    # the first split of the key gives the loop's key and the boost's
    return d, V, boost, alpha_orig


def gamma_one(k, alpha, log_space=False):
    k, sub = split(k)
    d, V, boost, alpha_orig = _gamma_one(k, alpha, log_space)
    one = F32(1)
    if log_space:
        ls = -exponential(sub, ())
        lb = F32(0) if (boost or ls == 0) else ls * (one / alpha_orig)
        return F32(log(d) + log(V) + lb)
    s = one - uniform(sub, ())
    b = one if boost else power(s, one / alpha_orig)
    return F32(d * V * b)


def gamma(k, a, shape, log_space=False):
    a = np.broadcast_to(np.asarray(a, dtype=F32), shape).reshape(-1)
    keys = split(k, a.size)
    return np.array([gamma_one(keys[i], a[i], log_space) for i in range(a.size)],
                    dtype=F32).reshape(shape)


def loggamma(k, a, shape):
    return gamma(k, a, shape, log_space=True)


def beta(k, a, b, shape):
    ka, kb = split(k)
    la, lb = loggamma(ka, a, shape), loggamma(kb, b, shape)
    m = np.maximum(la, lb)
    ga, gb = exp(la - m), exp(lb - m)
    return (ga / (ga + gb)).astype(F32)


def dirichlet(k, alpha, shape):
    alpha = np.asarray(alpha, dtype=F32)
    lg = loggamma(k, alpha, tuple(shape) + alpha.shape[-1:])
    e = exp(lg - lg.max(axis=-1, keepdims=True))  # XLA's CPU reduction adds in index order
    s = e[..., 0]
    for i in range(1, e.shape[-1]):
        s = s + e[..., i]
    return (e / s[..., None]).astype(F32)


def chisquare(k, df, shape):
    return (exp(loggamma(k, F32(df) / F32(2), shape)) * F32(2)).astype(F32)


def t(k, df, shape):
    kn, kg = split(k)
    n = normal(kn, shape)
    half = F32(df) / F32(2)
    return (n * sqrt(half / gamma(kg, half, shape))).astype(F32)


def f(k, dfnum, dfden, shape):
    kd, kn = split(k)
    num = chisquare(kn, dfnum, shape) / F32(dfnum)
    den = chisquare(kd, dfden, shape) / F32(dfden)
    return (num / den).astype(F32)


def generalized_normal(k, p, shape):
    kg, kr = split(k)
    g = gamma(kg, 1 / p, shape)
    return (rademacher(kr, shape, F32) * power(g, F32(1 / p))).astype(F32)


# ---------------------------------------------------------------- method="approximate"

_CHI2 = [(1.0, -0.2237368, -0.01513904), (0.4713941, 0.02607083, -0.008986007),
         (0.0001348028, 0.01128186, 0.02277679), (-0.008553069, -0.01153761, -0.01323293),
         (0.00312558, 0.005169654, -0.006950356), (-0.0008426812, 0.00253001, 0.001060438),
         (0.00009780499, -0.001450117, 0.001565326)]


def gamma_approx(k, a, shape, log_space=False):
    a = np.broadcast_to(np.asarray(a, F32), shape)
    kbase, kboost = split(k)
    ab = a + F32(4)
    nu = F32(2) * ab
    x = normal(kbase, shape)
    u = F32(1) / nu
    tt = x * (F32(1) / sqrt(nu))
    row = lambda c: F32(c[0]) + u * (F32(c[1]) + u * F32(c[2]))
    poly = row(_CHI2[6])
    for c in reversed(_CHI2[:6]):
        poly = poly * tt + row(c)
    poly = np.maximum(poly, np.finfo(F32).tiny)
    log_base = log(ab) + F32(3) * log(poly)
    log_u = -exponential(kboost, (4,) + tuple(shape))
    terms = [log_u[i] / (a + F32(i)) for i in range(4)]
    out = log_base + (((terms[0] + terms[1]) + terms[2]) + terms[3])
    return out.astype(F32) if log_space else exp(out)


erf = _f64(np.vectorize(math.erf, otypes=[np.float64]))
erfc = _f64(np.vectorize(math.erfc, otypes=[np.float64]))


def _ndtr(x):
    h = F32(0.5) * F32(np.sqrt(2))
    w = x * h
    z = np.abs(w)
    return (F32(0.5) * np.where(z < h, F32(1) + erf(w),
                                np.where(w > 0, F32(2) - erfc(z), erfc(z)))).astype(F32)


def _pp_t(y):
    d = y - F32(1)
    small = np.abs(d) < F32(0.25)
    series = np.zeros_like(d)
    for kk in reversed(range(1, 10)):
        series = d * (F32(2 * (-1) ** kk / ((kk + 1) * (kk + 2))) + series)
    ys = np.where(small, F32(2), y).astype(F32)
    ds = np.where(small, F32(1), d).astype(F32)
    return np.where(small, series, (F32(1) - ys * ys + F32(2) * ys * log(ys)) / (ds * ds))


def _pp_z(x, lam):
    tt = _pp_t((x + F32(0.5)) / lam)
    return (x - lam + F32(2 / 3) + F32(0.02) / (x + F32(1))) * sqrt((F32(1) + tt) / lam)


def poisson_approx(k, lam, shape):
    lam = np.broadcast_to(np.asarray(lam, F32), shape)
    z = normal(k, shape)
    pmf = exp(-lam)
    cdf = pmf
    u = _ndtr(z)
    count = (cdf < u).astype(F32)
    for kk in range(1, 19):
        pmf = pmf * (lam / F32(kk))
        cdf = cdf + pmf
        count = count + (cdf < u).astype(F32)
    s = sqrt(lam)
    x = (lam + s * z - F32(2 / 3) + z * z / F32(6) + z * (F32(1) - z * z) / (F32(72) * s)) + F32(0.6)
    c = np.ceil(x)
    with np.errstate(all="ignore"):
        zint = lambda c: np.where(c < 0, -np.inf, _pp_z(np.maximum(c, F32(0)), lam))
        ge = lambda c: (zint(c) >= z).astype(F32)
        large = np.maximum(c + F32(1) - ge(c) - ge(c - F32(1)), F32(0))
    return np.where(lam < F32(7), count, large).astype(np.int32)


# ---------------------------------------------------------------- poisson, binomial

def _poisson_knuth(k, lam, shape):
    kk = np.zeros(shape, np.int32)
    log_prod = np.zeros(shape, F32)
    while np.any(log_prod > -lam):
        k, sub = split(k)
        kk = np.where(log_prod > -lam, kk + 1, kk)
        log_prod = (log_prod + log(uniform(sub, shape))).astype(F32)
    return kk - 1


def _poisson_rejection(k, lam, shape):
    log_lam = log(lam)
    b = F32(0.931) + F32(2.53) * sqrt(lam)
    a = F32(-0.059) + F32(0.02483) * b
    inv_alpha = F32(1.1239) + F32(1.1328) / (b - F32(3.4))
    v_r = F32(0.9277) - F32(3.6224) / (b - F32(2))
    k_out = np.full(shape, -1, F32)
    accepted = np.zeros(shape, bool)
    while not accepted.all():
        k, k0, k1 = split(k, 3)
        u = uniform(k0, shape) - F32(0.5)
        v = uniform(k1, shape)
        us = F32(0.5) - np.abs(u)
        kk = np.floor((F32(2) * a / us + b) * u + lam + F32(0.43)).astype(F32)
        s = log(v * inv_alpha / (a / (us * us) + b))
        tt = -lam + kk * log_lam - lgamma(kk + F32(1))
        acc1 = (us >= F32(0.07)) & (v <= v_r)
        rej = (kk < 0) | ((us < F32(0.013)) & (v > us))
        acc = acc1 | (~rej & (s <= tt))
        k_out = np.where(acc, kk, k_out)
        accepted |= acc
    return k_out.astype(np.int32)


def poisson(k, lam, shape):
    lam = np.broadcast_to(np.asarray(lam, F32), shape)
    use_knuth = np.isnan(lam) | (lam < 10)
    r = np.where(use_knuth, _poisson_knuth(k, np.where(use_knuth, lam, F32(0)), shape),
                 _poisson_rejection(k, np.where(use_knuth, F32(1e5), lam), shape))
    return np.where(lam == 0, 0, r).astype(np.int32)


_STIRLING = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                      0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                      0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                      0.00833056343336287], dtype=F32)


def _stirling_tail(k):
    small = k <= 9
    kc = np.clip(k, F32(0), F32(9))
    kp1sq = (kc + F32(1)) * (kc + F32(1))
    approx = (F32(1.0 / 12) - (F32(1.0 / 360) - F32(1.0 / 1260) / kp1sq) / kp1sq) / (kc + F32(1))
    return np.where(small, _STIRLING[np.floor(kc).astype(np.int32)], approx).astype(F32)


def _binomial_inversion(k, count, prob, shape):
    log1m = log1p(-prob)
    num = np.zeros(shape, F32)
    gsum = np.zeros(shape, F32)
    while np.any(gsum <= count):
        sub, k = split(k)
        num = np.where(gsum <= count, num + F32(1), num)
        geom = np.ceil(log(uniform(sub, shape)) / log1m).astype(F32)
        gsum = (gsum + geom).astype(F32)
    return num - F32(1)


def _btrs(k, count, prob, shape):
    one, half = F32(1), F32(0.5)
    stddev = sqrt(count * prob * (one - prob))
    b = F32(1.15) + F32(2.53) * stddev
    a = F32(-0.0873) + F32(0.0248) * b + F32(0.01) * prob
    c = count * prob + half
    v_r = F32(0.92) - F32(4.2) / b
    r = prob / (one - prob)
    alpha = (F32(2.83) + F32(5.1) / b) * stddev
    m = np.floor((count + one) * prob).astype(F32)
    k_out = np.full(shape, -1, F32)
    accepted = np.zeros(shape, bool)
    while not accepted.all():
        k, k0, k1 = split(k, 3)
        u = uniform(k0, shape)
        v = uniform(k1, shape)
        u = u - half
        us = half - np.abs(u)
        acc1 = (us >= F32(0.07)) & (v <= v_r)
        kk = np.floor((F32(2) * a / us + b) * u + c).astype(F32)
        rej = (kk < 0) | (kk > count)
        v = log(v * alpha / (a / (us * us) + b))
        ub = ((m + half) * log((m + one) / (r * (count - m + one)))
              + (count + one) * log((count - m + one) / (count - kk + one))
              + (kk + half) * log(r * (count - kk + one) / (kk + one))
              + _stirling_tail(m) + _stirling_tail(count - m)
              - _stirling_tail(kk) - _stirling_tail(count - kk))
        acc = acc1 | (~rej & (v <= ub))
        k_out = np.where(acc, kk, k_out)
        accepted |= acc
    return k_out


def binomial(k, n, p, shape):
    prob = np.broadcast_to(np.asarray(p, F32), shape)
    count = np.broadcast_to(np.asarray(n, F32), shape)
    lt = prob < F32(0.5)
    q = np.where(lt, prob, F32(1) - prob).astype(F32)
    inv = count * q <= F32(10)
    count = np.floor(count)
    s = np.where(inv, _binomial_inversion(k, np.where(inv, count, F32(0)), q, shape),
                 _btrs(k, np.where(inv, F32(1e4), count), np.where(inv, F32(0.5), q), shape))
    return np.where(lt, s, count - s).astype(F32)


# ---------------------------------------------------------------- the cases

def cases():
    """(label, ax expression, value, ulps): the draws of tests/lang/random_jax_values.ax, and
    how many units in the last place ax may differ from this model (0: bit-identical; more
    where ax's float32 log, exp or log1p round otherwise than float64's)."""
    k0, k1 = key(0), key(1)
    ks = split(key(42), 32)
    f32 = lambda v: np.array(v, F32)
    pw = [0.1, 0.1, 0.2, 0.2, 0.4]
    arr = lambda v: "array(" + repr(list(v)) + ")"
    a5 = [0.3, 0.8, 1.0, 2.5, 9.0]
    lg5 = [0.01, 0.3, 1.0, 2.5, 9.0]
    lam = [0.0, 0.5, 3.0, 9.9, 10.0, 25.0, 400.0, 1e4]
    bn, bp = [5.0, 20.0, 100.0, 100.0, 1000.0, 50.0], [0.3, 0.5, 0.05, 0.5, 0.9, 1.0]
    return [
        ("cauchy", "random.cauchy(k0, (5,))", cauchy(k0, (5,)), 0),
        ("rademacher", "random.rademacher(k1, (8,))", rademacher(k1, (8,)), 0),
        ("pareto", "random.pareto(ks[0], 0.5, (5,))", pareto(ks[0], 0.5, (5,)), 1),
        ("lognormal", "random.lognormal(ks[1], 0.5, (5,))", lognormal(ks[1], 0.5, (5,)), 0),
        ("maxwell", "random.maxwell(ks[2], (5,))", maxwell(ks[2], (5,)), 0),
        ("double_sided_maxwell", "random.double_sided_maxwell(ks[3], 1.0, 2.0, (5,))",
         double_sided_maxwell(ks[3], 1.0, 2.0, (5,)), 0),
        ("weibull_min", "random.weibull_min(ks[4], 2.0, 1.5, (5,))",
         weibull_min(ks[4], 2.0, 1.5, (5,)), 0),
        ("rayleigh", "random.rayleigh(ks[5], 2.0, (5,))", rayleigh(ks[5], 2.0, (5,)), 0),
        ("wald", "random.wald(ks[6], 1.5, (5,))", wald(ks[6], 1.5, (5,)), 0),
        ("geometric", "random.geometric(ks[7], 0.3, (8,))", geometric(ks[7], 0.3, (8,)), 0),
        ("triangular", "random.triangular(ks[8], 0.0, 1.0, 3.0, (5,))",
         triangular(ks[8], 0.0, 1.0, 3.0, (5,)), 0),
        ("logistic", "random.logistic(ks[9], (5,))", logistic(ks[9], (5,)), 0),
        ("laplace", "random.laplace(ks[10], (5,))", laplace(ks[10], (5,)), 0),
        ("gumbel", "random.gumbel(ks[11], (5,))", gumbel(ks[11], (5,)), 1),
        ("gamma", f"random.gamma(ks[12], {arr(a5)}, (5,))", gamma(ks[12], f32(a5), (5,)), 0),
        ("loggamma", f"random.loggamma(ks[13], {arr(lg5)}, (5,))",
         loggamma(ks[13], f32(lg5), (5,)), 1),
        ("beta", "random.beta(ks[14], 0.8, 0.9, (5,))", beta(ks[14], 0.8, 0.9, (5,)), 1),
        ("dirichlet", "random.dirichlet(ks[15], array([0.5, 0.6, 0.7]), (2,))",
         dirichlet(ks[15], [0.5, 0.6, 0.7], (2,)), 0),
        ("chisquare", "random.chisquare(ks[16], 3.0, (5,))", chisquare(ks[16], 3.0, (5,)), 0),
        ("t", "random.t(ks[17], 4.0, (5,))", t(ks[17], 4.0, (5,)), 0),
        ("f", "random.f(ks[18], 3.0, 5.0, (5,))", f(ks[18], 3.0, 5.0, (5,)), 0),
        ("generalized_normal", "random.generalized_normal(ks[19], 1.5, (5,))",
         generalized_normal(ks[19], 1.5, (5,)), 0),
        ("poisson", f"random.poisson(ks[20], {arr(lam)}, (8,))", poisson(ks[20], f32(lam), (8,)), 0),
        ("binomial", f"random.binomial(ks[21], {arr(bn)}, {arr(bp)}, (6,))",
         binomial(ks[21], f32(bn), f32(bp), (6,)), 0),
        ("randint", "random.randint(ks[22], (6,), 0, 10)", randint(ks[22], (6,), 0, 10), 0),
        ("bernoulli", "random.bernoulli(ks[23], 0.3, (8,))", bernoulli(ks[23], 0.3, (8,)), 0),
        ("bernoulli_high", "random.bernoulli(ks[24], 0.3, (8,), mode='high')",
         bernoulli_high(ks[24], 0.3, (8,)), 0),
        ("permutation", "random.permutation(ks[25], 10)", permutation(ks[25], 10), 0),
        ("choice_distinct", "random.choice(ks[26], 10, (4,), replace=False)",
         permutation(ks[26], 10)[:4], 0),
        ("choice_p", f"random.choice(ks[27], 5, (8,), p={arr(pw)})", choice_p(ks[27], 5, (8,), pw), 0),
        ("categorical", f"random.categorical(ks[28], log({arr(pw)}), shape=(8,))",
         categorical(ks[28], log(f32(pw)), (8,)), 0),
        ("categorical_distinct", f"random.categorical(ks[29], log({arr(pw)}), shape=(3,), replace=False)",
         categorical_distinct(ks[29], log(f32(pw)), 3), 0),
        ("shuffle", "random.shuffle(ks[30], arange(8))", _shuffle(ks[30], np.arange(8)), 0),
        ("gamma_approx", f"random.gamma(ks[31], {arr(a5)}, (5,), method='approximate')",
         gamma_approx(ks[31], f32(a5), (5,)), 1),
        ("loggamma_approx", f"random.loggamma(random.key(2), {arr(lg5)}, (5,), method='approximate')",
         gamma_approx(key(2), f32(lg5), (5,), log_space=True), 2),
        ("poisson_approx", f"random.poisson(random.key(3), {arr(lam)}, (8,), method='approximate')",
         poisson_approx(key(3), f32(lam), (8,)), 0),
        ("gumbel_high", "random.gumbel(random.key(4), (5,), mode='high')",
         gumbel_high(key(4), (5,)), 1),
    ]


def _bits_of(v):
    v = np.asarray(v)
    if v.dtype == F32:
        return v.view(U32)
    return v.astype(np.int64)


def write_test(path):
    """tests/lang/random_jax_values.ax: each draw printed, and its distance in ulps from
    this model's bits (0 = the same bits)."""
    out = [
        "# Generated by tests/reference/jax_random.py --write-test: draws of every sampler against",
        "# the NumPy model of JAX's algorithms (jax/_src/random), jax_threefry_partitionable on.",
        "# Each draw prints, then its largest distance from the model in units in the last place",
        "# (0: the same bits; 1 where ax's float32 log, exp or log1p, vector math within 1.5",
        "# ulp, rounds otherwise than the model's float64 functions do: pareto, gumbel, beta,",
        "# the log-space gamma draws, whose sums then cancel).",
        "def ulps(x, want):",
        "    x = asarray(x)",
        "    got = bitcast_convert_type(x, int32).astype(int64) if x.dtype == float32 else x.astype(int64)",
        "    max(abs(got.reshape(-1) - array(want, dtype=int64)))",
        "k0 = random.key(0)",
        "k1 = random.key(1)",
        "ks = random.split(random.key(42), 32)",
    ]
    np.set_printoptions(precision=8, floatmode="maxprec")
    for label, expr, value, tol in cases():
        want = _bits_of(value)
        if want.dtype == U32:
            want = want.view(np.int32)
        out.append(f"x = {expr}")
        out.append("print(x)")
        out += ["#> " + line for line in str(np.asarray(value)).split("\n")]
        out.append(f"print(ulps(x, {want.reshape(-1).tolist()}) <= {tol})  # {label}")
        out.append("#> True")
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")


# JAX's tests/random_test.py (_RANDOM_VALUES_CASES, jax_threefry_partitionable off): key =
# PRNGKey(adler32(name + "threefry2x32")), shape (5,), float32; printed to 6 digits.
JAX_VALUES = {
    "cauchy": [-0.088416, -10.169713, 3.49677, -1.18056, 0.34556],
    "double_sided_maxwell": [-2.408914, -3.370437, 3.235352, -0.907734, -1.708732],
    "exponential": [0.526067, 0.043046, 0.039932, 0.46427, 0.123886],
    "gamma": [0.824221, 1.724476, 0.502882, 5.386132, 0.685543],
    "gumbel": [2.06701, 0.911726, 0.145736, 0.185427, -0.00711],
    "laplace": [0.578939, -0.204902, 0.555733, 0.911053, -0.96456],
    "loggamma": [0.240559, -3.575443, -0.450946, -2.161372, -2.943277],
    "logistic": [0.19611, -1.709053, -0.274093, -0.208322, -1.675489],
    "maxwell": [3.070779, 0.908479, 1.521317, 0.875551, 1.306137],
    "normal": [-1.173234, -1.511662, 0.070593, -0.099764, 1.052845],
    "pareto": [2.751398, 1.281863, 87.85448, 1.254542, 2.824487],
    "poisson": [7, 3, 6, 11, 6],
    "rademacher": [-1, -1, -1, -1, 1],
    "randint": [0, 5, 7, 7, 5],
    "uniform": [0.298671, 0.073213, 0.873356, 0.260549, 0.412797],
    "weibull_min": [1.605863, 0.841809, 0.224218, 0.4826, 0.027901],
    "beta": [0.13259, 0.824893, 0.948363, 0.964155, 0.235448],
    "dirichlet": [[0.003128, 0.009694, 0.987178], [0.025938, 0.479091, 0.494971]],
    "bernoulli": [False, True, True, True, False],
}


def jax_cases():
    import zlib
    seed = lambda name: key(zlib.adler32((name + "threefry2x32").encode()))
    s = (5,)
    return {
        "cauchy": cauchy(seed("cauchy"), s),
        "double_sided_maxwell": double_sided_maxwell(seed("double_sided_maxwell"), 1, 2, s),
        "exponential": exponential(seed("exponential"), s),
        "gamma": gamma(seed("gamma"), 0.8, s),
        "gumbel": gumbel(seed("gumbel"), s),
        "laplace": laplace(seed("laplace"), s),
        "loggamma": loggamma(seed("loggamma"), 0.8, s),
        "logistic": logistic(seed("logistic"), s),
        "maxwell": maxwell(seed("maxwell"), s),
        "normal": normal(seed("normal"), s),
        "pareto": pareto(seed("pareto"), 0.5, s),
        "poisson": poisson(seed("poisson"), 5.0, s),
        "rademacher": rademacher(seed("rademacher"), s),
        "randint": randint(seed("randint"), s, 0, 10),
        "uniform": uniform(seed("uniform"), s),
        "weibull_min": weibull_min(seed("weibull_min"), 1, 1, s),
        "beta": beta(seed("beta"), 0.8, 0.9, s),
        "dirichlet": dirichlet(seed("dirichlet"), [0.5, 0.6, 0.7], (2,)),
        "bernoulli": bernoulli(seed("bernoulli"), 0.5, s),
    }


# (label, ax expression, reference thunk): drawn at scale by --against
def bulk_cases():
    ks = split(key(7), 16)
    a = np.array([0.05, 0.3, 0.8, 1.0, 2.5, 9.0, 40.0], F32)
    lam = np.array([0.3, 2.0, 7.5, 9.99, 10.0, 30.0, 1e3], F32)
    n = np.array([3, 30, 200, 1000], F32)
    p = np.array([0.02, 0.3, 0.5, 0.95], F32)
    arr = lambda v: "array(" + repr(v.tolist()) + ")"
    kx = lambda i: "ks[%d]" % i
    return [
        ("gamma", f"random.gamma({kx(0)}, {arr(a)}, (300, 7))", lambda: gamma(ks[0], a, (300, 7))),
        ("loggamma", f"random.loggamma({kx(1)}, {arr(a)}, (300, 7))", lambda: loggamma(ks[1], a, (300, 7))),
        ("poisson", f"random.poisson({kx(2)}, {arr(lam)}, (300, 7))", lambda: poisson(ks[2], lam, (300, 7))),
        ("binomial", f"random.binomial({kx(3)}, {arr(n)}[:, None], {arr(p)}, (50, 4, 4))", lambda: binomial(ks[3], n[:, None], p, (50, 4, 4))),
        ("t", f"random.t({kx(4)}, 3.0, (500,))", lambda: t(ks[4], 3.0, (500,))),
        ("chisquare", f"random.chisquare({kx(5)}, 2.5, (500,))", lambda: chisquare(ks[5], 2.5, (500,))),
        ("beta", f"random.beta({kx(6)}, 0.5, 2.0, (500,))", lambda: beta(ks[6], 0.5, 2.0, (500,))),
        ("cauchy", f"random.cauchy({kx(7)}, (2000,))", lambda: cauchy(ks[7], (2000,))),
        ("wald", f"random.wald({kx(8)}, 0.7, (2000,))", lambda: wald(ks[8], 0.7, (2000,))),
        ("geometric", f"random.geometric({kx(9)}, 0.1, (2000,))", lambda: geometric(ks[9], 0.1, (2000,))),
        ("triangular", f"random.triangular({kx(10)}, -1.0, 0.5, 2.0, (2000,))", lambda: triangular(ks[10], -1.0, 0.5, 2.0, (2000,))),
        ("rayleigh", f"random.rayleigh({kx(11)}, 1.5, (2000,))", lambda: rayleigh(ks[11], 1.5, (2000,))),
        ("maxwell", f"random.maxwell({kx(12)}, (2000,))", lambda: maxwell(ks[12], (2000,))),
        ("pareto", f"random.pareto({kx(13)}, 3.0, (2000,))", lambda: pareto(ks[13], 3.0, (2000,))),
        ("weibull_min", f"random.weibull_min({kx(14)}, 1.0, 0.7, (2000,))", lambda: weibull_min(ks[14], 1.0, 0.7, (2000,))),
        ("generalized_normal", f"random.generalized_normal({kx(15)}, 3.0, (500,))", lambda: generalized_normal(ks[15], 3.0, (500,))),
    ]


def against(ax):
    """Draws bulk_cases() with ax, saved as .npy, and compares the bits with this model."""
    import os
    import subprocess
    import tempfile
    d = tempfile.mkdtemp()
    prog = ["ks = random.split(random.key(7), 16)"]
    cases = bulk_cases()
    for label, expr, _ in cases:
        prog.append(f"jnp.save({os.path.join(d, label + '.npy')!r}, {expr})")
    src = os.path.join(d, "bulk.ax")
    with open(src, "w") as fh:
        fh.write("\n".join(prog) + "\n")
    subprocess.run([ax, src], check=True)
    worst = 0
    for label, _, ref in cases:
        got, want = np.load(os.path.join(d, label + ".npy")), np.asarray(ref())
        if got.dtype == F32:
            ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
            ulps = np.where(np.isnan(got) & np.isnan(want), 0, ulps)
        else:
            ulps = np.abs(got.astype(np.int64) - want.astype(np.int64))
        worst = max(worst, int(ulps.max()))
        if "-v" in sys.argv and ulps.max() > 0:
            i = np.flatnonzero(ulps.reshape(-1))[:5]
            print("  at", i, got.reshape(-1)[i], want.reshape(-1)[i])
        print(f"{label:20s} {got.size:5d} draws, {int((ulps == 0).sum()):5d} bit-identical, "
              f"max {int(ulps.max())} ulp")
    return worst


def main():
    if "--against" in sys.argv:
        sys.exit(1 if against(sys.argv[sys.argv.index("--against") + 1]) > 1 else 0)
    global PARTITIONABLE
    np.set_printoptions(precision=8, floatmode="maxprec")
    if "--check" in sys.argv:
        PARTITIONABLE = False
        bad = 0
        for name, got in jax_cases().items():
            ok = np.allclose(got, JAX_VALUES[name], rtol=1e-5, atol=2e-6)
            bad += not ok
            print(("ok  " if ok else "BAD ") + name, got)
        sys.exit(1 if bad else 0)
    if "--write-test" in sys.argv:
        write_test(sys.argv[sys.argv.index("--write-test") + 1])
        return
    for label, _, value, _ in cases():
        print(label, repr(np.asarray(value)))


if __name__ == "__main__":
    main()
