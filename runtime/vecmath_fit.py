#!/usr/bin/env python3
"""The fitted polynomial coefficients of runtime/vecmath_body.h (exp, expm1, tanh, erf, erfc),
made again (vm_exp_m2 is vm_exp_c scaled by powers of -2).

Each is a near-minimax polynomial: weighted least squares on Chebyshev points, reweighted by
the error (Lawson's iteration) so that the error levels out, against 40-digit mpmath values;
the coefficients are then rounded to f32. The series coefficients in the same file (log's)
need no fit. Run with /usr/bin/python3 (numpy, mpmath); prints the C
arrays and each fit's worst relative error before rounding.
"""
import math

import mpmath as mp
import numpy as np

mp.mp.dps = 40


def fit(f, lo, hi, degree, var, weight, points=4000, rounds=30):
    """Coefficients of p(var(a)) ~ f(a) on [lo, hi], minimising max |(p - f) * weight|."""
    a = 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.linspace(np.pi, 0, points))
    y = np.array([float(f(mp.mpf(v))) for v in a])
    v = np.vander(var(a), degree + 1, increasing=True)
    w = weight(a, y)
    lawson = np.ones_like(a)
    for _ in range(rounds):
        s = np.sqrt(lawson) * w
        c, *_ = np.linalg.lstsq(v * s[:, None], y * s, rcond=None)
        err = np.abs((v @ c - y) * w)
        lawson *= err
        lawson /= lawson.sum()
    return c, err.max()


def c_array(name, coefs):
    def f32(v):  # 0x1.555532p-2f: the hex digits without trailing zeros
        mantissa, exponent = float(np.float32(v)).hex().split("p")
        return mantissa.rstrip("0").rstrip(".") + "p" + exponent + "f"
    return "static const float %s[] = {%s};" % (name, ", ".join(f32(v) for v in coefs))


def main():
    half_ln2 = math.log(2) / 2 * 1.0005  # exp's |r| bound, with room for the reduction's
    fits = [
        # e^r on |r| <= ln2/2: relative error
        ("vm_exp_c", mp.exp, -half_ln2, half_ln2, 6, lambda r: r, lambda r, y: 1 / np.abs(y)),
        # e^r - 1 = r + r^2 Q(r): relative error of e^r - 1
        ("vm_expm1_q", lambda r: (mp.exp(r) - 1 - r) / (r * r) if r else mp.mpf(0.5), -half_ln2,
         half_ln2, 5, lambda r: r, lambda r, y: r * r / np.abs(np.expm1(r) + 1e-300)),
        # tanh(a) = a + a z P(z), z = a^2, a in [0, 0.55]: relative error of tanh
        ("vm_tanh_p", lambda a: (mp.tanh(a) / a - 1) / (a * a), 1e-4, 0.55, 3,
         lambda a: a * a, lambda a, y: a ** 3 / np.tanh(a)),
        # erf(a) = a + a Q(z), z = a^2, a in [0, 1]
        ("vm_erf_q", lambda a: mp.erf(a) / a - 1, 1e-6, 1.0, 6,
         lambda a: a * a, lambda a, y: 1 / (1 + y)),
        # erfc(a) = e^(-a^2) G(t), t = 1 / (1 + a) - 0.35, a in [1, 4]: relative error of G
        ("vm_erfc_g", lambda a: mp.erfc(a) * mp.exp(a * a), 1.0, 4.0, 8,
         lambda a: 1 / (1 + a) - 0.35, lambda a, y: 1 / np.abs(y)),
    ]
    for name, f, lo, hi, degree, var, weight in fits:
        coefs, err = fit(f, lo, hi, degree, var, weight)
        print(f"/* {name}: worst weighted error {err:.2e} */")
        print(c_array(name, coefs))


if __name__ == "__main__":
    main()
