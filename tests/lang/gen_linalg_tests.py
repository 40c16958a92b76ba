#!/usr/bin/python3
"""Writes tests/lang/linalg_numpy.ax: jnp.linalg and jax.scipy.linalg against NumPy (f32 as JAX's
default, f64 where a case says so). NumPy has no LU, expm or Cholesky solve: their references
are a partial-pivoting elimination (the pivots LAPACK's getrf picks), the exponential of a
symmetric matrix through its eigendecomposition, and np.linalg.solve. Sign conventions of
eigenvectors, singular vectors and QR factors are LAPACK's, the same in NumPy and ax.

Each case is (ax expression, Python expression), printed as in tests/lang/gen_np_tests.py.
    /usr/bin/python3 tests/lang/gen_linalg_tests.py   (the python3 that has numpy)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_np_tests import expected_lines  # noqa: E402  (the same printing rules)

f32, f64 = np.float32, np.float64

SETUP_AX = """import jax.numpy as jnp
import jax.scipy.linalg as sl
A = array([[3., 1., -1.], [2., 4., 1.], [-1., 2., 5.]])
S = array([[4., 1., -0.5], [1., 3., 0.75], [-0.5, 0.75, 2.]])
M = array([[1., 2., 0.5], [3., -1., 2.], [0., 1., 1.], [2., 2., -1.]])
W = M.T
D = array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]])
b = array([1., -2., 3.])
Bm = array([[1., 0.], [0., 1.], [2., -1.]])
y = array([1., 2., 0., -1.])
batch = stack([A, S, D + eye(3)])
A4 = array([[2., -1., 0., 1.], [1., 3., 1., 0.], [0., 1., 4., -2.], [1., 0., -1., 3.]])
A64 = A.astype(float64)"""

SETUP_PY = """A = np.array([[3., 1., -1.], [2., 4., 1.], [-1., 2., 5.]], f32)
S = np.array([[4., 1., -0.5], [1., 3., 0.75], [-0.5, 0.75, 2.]], f32)
M = np.array([[1., 2., 0.5], [3., -1., 2.], [0., 1., 1.], [2., 2., -1.]], f32)
W = M.T.copy()
D = np.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]], f32)
b = np.array([1., -2., 3.], f32)
Bm = np.array([[1., 0.], [0., 1.], [2., -1.]], f32)
y = np.array([1., 2., 0., -1.], f32)
batch = np.stack([A, S, D + np.eye(3, dtype=f32)])
A4 = np.array([[2., -1., 0., 1.], [1., 3., 1., 0.], [0., 1., 4., -2.], [1., 0., -1., 3.]], f32)
A64 = A.astype(f64)"""


def lu_pp(a):
    """LU with partial pivoting as getrf: (lu, pivots, permutation)."""
    a = np.array(a, dtype=f64)
    m, n = a.shape
    piv, perm = [], list(range(m))
    for j in range(min(m, n)):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv.append(p)
        a[[j, p]] = a[[p, j]]
        perm[j], perm[p] = perm[p], perm[j]
        if a[j, j] != 0:
            a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a.astype(f32), np.array(piv, np.int32), np.array(perm, np.int32)


def scipy_lu(a):
    lu, _, perm = lu_pp(a)
    m, n = a.shape
    k = min(m, n)
    p = (perm[None, :] == np.arange(m)[:, None]).astype(f32)
    return p, np.tril(lu, -1)[:, :k] + np.eye(m, k, dtype=f32), np.triu(lu)[:k, :]


def expm_sym(s):
    w, v = np.linalg.eigh(s.astype(f64))
    return ((v * np.exp(w)) @ v.T).astype(f32)


def cond(x, p=None):
    return f32(np.linalg.cond(x.astype(f64), p))


CASES = [
    "solving",
    ("jnp.linalg.solve(A, b)", "np.linalg.solve(A, b)"),
    ("jnp.linalg.solve(A, Bm)", "np.linalg.solve(A, Bm)"),
    ("jnp.linalg.solve(batch, b)", "np.linalg.solve(batch, np.broadcast_to(b, (3, 3))[..., None])[..., 0]"),
    ("jnp.linalg.solve(A64, b).dtype", "'float64'"),
    ("jnp.linalg.inv(A)", "np.linalg.inv(A)"),
    ("jnp.linalg.inv(batch)", "np.linalg.inv(batch)"),
    ("sl.solve(S, b, assume_a='pos')", "np.linalg.solve(S, b)"),
    ("sl.cho_solve(sl.cho_factor(S), b)", "np.linalg.solve(S, b)"),
    ("sl.cho_solve(sl.cho_factor(S, lower=True), Bm)", "np.linalg.solve(S, Bm)"),
    ("sl.cholesky(S)", "np.linalg.cholesky(S).T"),
    ("jnp.linalg.cholesky(S, upper=True)", "np.linalg.cholesky(S).T"),
    ("sl.solve_triangular(A, b)", "np.linalg.solve(np.triu(A), b)"),
    ("sl.solve_triangular(A, b, lower=True, trans='T')", "np.linalg.solve(np.tril(A).T, b)"),
    "determinants",
    ("jnp.linalg.det(A), jnp.linalg.det(A4), jnp.linalg.det(array([[2.5]]))",
     "(np.linalg.det(A), np.linalg.det(A4), f32(2.5))"),
    ("jnp.linalg.det(batch)", "np.linalg.det(batch)"),
    ("jnp.linalg.slogdet(A4)[0], jnp.linalg.slogdet(A4)[1]", "np.linalg.slogdet(A4)"),
    ("jnp.linalg.slogdet(-A)[0], jnp.linalg.slogdet(-A)[1]", "np.linalg.slogdet(-A)"),
    ("jnp.linalg.slogdet(batch)[1]", "np.linalg.slogdet(batch)[1]"),
    "eigenvalues and singular values",
    ("jnp.linalg.eigh(S)[0]", "np.linalg.eigh(S)[0]"),
    ("jnp.linalg.eigh(S)[1]", "np.linalg.eigh(S)[1]"),
    ("jnp.linalg.eigvalsh(stack([S, -2 * S]))", "np.linalg.eigvalsh(np.stack([S, -2 * S]))"),
    ("jnp.linalg.eigh(A, symmetrize_input=False)[0]", "np.linalg.eigh(A)[0]"),
    ("jnp.linalg.eigh(A, UPLO='U', symmetrize_input=False)[0]", "np.linalg.eigh(A, UPLO='U')[0]"),
    ("jnp.linalg.svd(M)[0]", "np.linalg.svd(M)[0]"),
    ("jnp.linalg.svd(M)[1]", "np.linalg.svd(M)[1]"),
    ("jnp.linalg.svd(M)[2]", "np.linalg.svd(M)[2]"),
    ("jnp.linalg.svd(W, full_matrices=False)[0]", "np.linalg.svd(W, full_matrices=False)[0]"),
    ("jnp.linalg.svd(W, full_matrices=False)[2]", "np.linalg.svd(W, full_matrices=False)[2]"),
    ("jnp.linalg.svd(batch, compute_uv=False)", "np.linalg.svd(batch, compute_uv=False)"),
    ("jnp.linalg.svd(S, hermitian=True)[1]", "np.linalg.svd(S, hermitian=True)[1]"),
    ("jnp.linalg.svdvals(D)", "np.linalg.svd(D, compute_uv=False)"),
    "QR",
    ("jnp.linalg.qr(M)[0]", "np.linalg.qr(M)[0]"),
    ("jnp.linalg.qr(M)[1]", "np.linalg.qr(M)[1]"),
    ("jnp.linalg.qr(M, mode='complete')[0]", "np.linalg.qr(M, mode='complete')[0]"),
    ("jnp.linalg.qr(W, mode='r')", "np.linalg.qr(W, mode='r')"),
    ("sl.qr(M, mode='economic')[1]", "np.linalg.qr(M)[1]"),
    "least squares, pseudo-inverse, rank",
    ("jnp.linalg.lstsq(M, y)[0]", "np.linalg.lstsq(M, y, rcond=None)[0]"),
    ("jnp.linalg.lstsq(M, y)[1], jnp.linalg.lstsq(M, y)[2]",
     "(np.linalg.lstsq(M, y, rcond=None)[1], np.linalg.lstsq(M, y, rcond=None)[2])"),
    ("jnp.linalg.lstsq(M, y)[3]", "np.linalg.lstsq(M, y, rcond=None)[3]"),
    ("jnp.linalg.lstsq(D, b)[2]", "np.int32(2)"),
    ("jnp.linalg.pinv(M)", "np.linalg.pinv(M)"),
    ("jnp.linalg.pinv(D)", "np.linalg.pinv(D.astype(f64)).astype(f32)"),
    ("jnp.linalg.matrix_rank(M), jnp.linalg.matrix_rank(D), jnp.linalg.matrix_rank(zeros((2, 2)))",
     "(np.int32(3), np.int32(2), np.int32(0))"),
    ("jnp.linalg.matrix_rank(batch)", "np.linalg.matrix_rank(batch).astype(np.int32)"),
    "powers and products",
    ("jnp.linalg.matrix_power(A, 0)", "np.linalg.matrix_power(A, 0)"),
    ("jnp.linalg.matrix_power(A, 5)", "np.linalg.matrix_power(A, 5)"),
    ("jnp.linalg.matrix_power(A, -2)", "np.linalg.matrix_power(A.astype(f64), -2).astype(f32)"),
    ("jnp.linalg.matrix_power(batch, 3)", "np.linalg.matrix_power(batch, 3)"),
    ("jnp.linalg.multi_dot([M, A, S, b])", "np.linalg.multi_dot([M, A, S, b])"),
    ("jnp.linalg.multi_dot([y, M, A])", "np.linalg.multi_dot([y, M, A])"),
    ("jnp.linalg.multi_dot([W, M])", "np.linalg.multi_dot([W, M])"),
    "norms and condition numbers",
    ("jnp.linalg.norm(A), jnp.linalg.norm(A, 'fro'), jnp.linalg.norm(A, 'nuc')",
     "(np.linalg.norm(A), np.linalg.norm(A, 'fro'), np.linalg.norm(A, 'nuc'))"),
    ("jnp.linalg.norm(A, 1), jnp.linalg.norm(A, -1), jnp.linalg.norm(A, 2), jnp.linalg.norm(A, -2)",
     "(np.linalg.norm(A, 1), np.linalg.norm(A, -1), np.linalg.norm(A, 2), np.linalg.norm(A, -2))"),
    ("jnp.linalg.norm(A, inf), jnp.linalg.norm(A, -inf)",
     "(np.linalg.norm(A, np.inf), np.linalg.norm(A, -np.inf))"),
    ("jnp.linalg.norm(b, 0), jnp.linalg.norm(b, 1), jnp.linalg.norm(b, inf), jnp.linalg.norm(b, -inf), jnp.linalg.norm(b, 3), jnp.linalg.norm(b, -1)",
     "(np.linalg.norm(b, 0), np.linalg.norm(b, 1), np.linalg.norm(b, np.inf), np.linalg.norm(b, -np.inf), np.linalg.norm(b, 3), np.linalg.norm(b, -1))"),
    ("jnp.linalg.norm(batch, 2, axis=(1, 2))", "np.linalg.norm(batch, 2, axis=(1, 2))"),
    ("jnp.linalg.norm(batch, 1, axis=(2, 0))", "np.linalg.norm(batch, 1, axis=(2, 0))"),
    ("jnp.linalg.norm(batch, inf, axis=(0, 1), keepdims=True)",
     "np.linalg.norm(batch, np.inf, axis=(0, 1), keepdims=True)"),
    ("jnp.linalg.norm(batch, 'nuc', axis=(-1, -2), keepdims=True)",
     "np.linalg.norm(batch, 'nuc', axis=(-1, -2), keepdims=True)"),
    ("jnp.linalg.norm(M, axis=0), jnp.linalg.norm(M, 3, axis=-1)",
     "(np.linalg.norm(M, axis=0), np.linalg.norm(M, 3, axis=-1))"),
    ("jnp.linalg.cond(A), jnp.linalg.cond(A, 1), jnp.linalg.cond(A, inf), jnp.linalg.cond(A, 'fro'), jnp.linalg.cond(A, -2)",
     "(cond(A), cond(A, 1), cond(A, np.inf), cond(A, 'fro'), cond(A, -2))"),
    ("jnp.linalg.cond(M)", "cond(M)"),
    "LU",
    ("sl.lu(A)[0]", "scipy_lu(A)[0]"),
    ("sl.lu(A)[1]", "scipy_lu(A)[1]"),
    ("sl.lu(A)[2]", "scipy_lu(A)[2]"),
    ("sl.lu(M, permute_l=True)[0]", "scipy_lu(M)[0] @ scipy_lu(M)[1]"),
    ("sl.lu(W)[2]", "scipy_lu(W)[2]"),
    ("sl.lu_factor(A)[0]", "lu_pp(A)[0]"),
    ("sl.lu_factor(A)[1]", "lu_pp(A)[1]"),
    ("sl.lu_factor(A4)[1]", "lu_pp(A4)[1]"),
    ("sl.lu_solve(sl.lu_factor(A4), array([1., 2., 3., 4.]))",
     "np.linalg.solve(A4, np.array([1., 2., 3., 4.], f32))"),
    ("sl.lu_solve(sl.lu_factor(A), Bm, trans=1)", "np.linalg.solve(A.T, Bm)"),
    ("sl.lu_solve(sl.lu_factor(batch), b)",
     "np.linalg.solve(batch, np.broadcast_to(b, (3, 3))[..., None])[..., 0]"),
    "the matrix exponential",
    ("sl.expm(S)", "expm_sym(S)"),
    ("sl.expm(0.01 * S), sl.expm(zeros((2, 2)))", "(expm_sym(0.01 * S), np.eye(2, dtype=f32))"),
    ("sl.expm(20.0 * S.astype(float64) / 7.0)", "expm_sym64(20 * S / 7)"),
    ("sl.expm(stack([S, -S]))", "np.stack([expm_sym(S), expm_sym(-S)])"),
    ("sl.expm(S.astype(float64))", "expm_sym64(S)"),
    ("sl.expm(array([[0., 1.], [-1., 0.]]))",
     "np.array([[np.cos(1), np.sin(1)], [-np.sin(1), np.cos(1)]], f32)"),
    ("sl.expm(array([[1., 2.], [0., 1.]]), upper_triangular=True)",
     "np.array([[np.e, 2 * np.e], [0, np.e]], f32)"),
]


def expm_sym64(s):
    w, v = np.linalg.eigh(s.astype(f64))
    return (v * np.exp(w)) @ v.T


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    env = {"np": np, "f32": f32, "f64": f64, "lu_pp": lu_pp, "scipy_lu": scipy_lu,
           "expm_sym": expm_sym, "expm_sym64": expm_sym64, "cond": cond}
    exec(SETUP_PY, env)
    out = ["# Generated by tests/lang/gen_linalg_tests.py from NumPy's results; do not edit.",
           SETUP_AX]
    for case in CASES:
        if isinstance(case, str):
            out.append(f"\n# {case}")
            continue
        ax_expr, py_expr = case
        out.append(f"print({ax_expr})")
        out.extend("#> " + line for line in expected_lines(ax_expr, eval(py_expr, env)))
    with open(os.path.join(here, "linalg_numpy.ax"), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
