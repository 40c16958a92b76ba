#!/usr/bin/python3
"""Writes tests/lang/np_*.ax: ax programs exercising the NumPy layer and the builtins, with the
expected output computed by NumPy (as JAX would give it: f32 by default, JAX's promotion).

Each case is (ax expression, Python expression); the Python side runs with numpy as np and the
names the block's setup defines, and its str() is the expected line(s). Run from anywhere:
    /usr/bin/python3 tests/lang/gen_np_tests.py   (the python3 that has numpy)
"""
import os

import numpy as np

f32, f64, i32, i64, u8, u32 = np.float32, np.float64, np.int32, np.int64, np.uint8, np.uint32

BLOCKS = {}


def block(file, comment, setup_ax, setup_py, cases):
    BLOCKS.setdefault(file, []).append((comment, setup_ax, setup_py, cases))


# ---------------------------------------------------------------- arithmetic and promotion
block("np_arith", "weak literals keep the array's dtype; true division gives floats",
      "x = array([1., 2., 3.])\ni = array([1, 2, 3])\nb = array([True, False, True])",
      "x = np.array([1., 2., 3.], f32)\ni = np.array([1, 2, 3], i32)\nb = np.array([True, False, True])",
      [("x * 2", "x * f32(2)"),
       ("(x * 2).dtype", "'float32'"),
       ("(i * 2).dtype", "'int32'"),
       ("i / 2", "(i / 2).astype(f32)"),
       ("(i / i).dtype", "'float32'"),
       ("(i + 1.5).dtype", "'float32'"),
       ("(x + i).dtype", "'float32'"),
       ("(i + array(1, dtype=i64)).dtype", "'int64'"),
       ("(array([250], dtype=u8) + 10)", "np.array([250], u8) + u8(10)"),
       ("(array([1], dtype=u8) + 1).dtype", "'uint8'"),
       ("(array([1], dtype=u8) + array([1], dtype=i32)).dtype", "'int32'"),
       ("(array([1.], dtype=f64) * 2.0).dtype", "'float64'"),
       ("(x.astype(f64) + x).dtype", "'float64'"),
       ("(b + 1).dtype", "'int32'"),
       ("(b * 1.0).dtype", "'float32'"),
       ("(1 + 2).dtype", "'int32'"),
       ("1 / 2", "0.5"),
       ("7 // 2, -7 // 2, 7 % 3, -7 % 3, 7 % -3", "(3, -4, 1, 2, -2)"),
       ("array([-7., 7.]) // 2", "np.array([-7., 7.], f32) // 2"),
       ("array([-7., 7.5]) % 2", "np.array([-7., 7.5], f32) % 2"),
       ("i ** 2", "i ** 2"),
       ("x ** 2", "x ** 2"),
       ("x ** 0.5", "x ** f32(0.5)"),
       ("2 ** i", "2 ** i"),
       ("2.0 ** x", "f32(2.0) ** x"),
       ("x ** -1", "x ** -1"),
       ("-x ** 2", "-(x ** 2)"),
       ("x - i", "x - i"),
       ("i & 2, i | 4, i ^ 1", "(i & 2, i | 4, i ^ 1)"),
       ("i << 2, i >> 1", "(i << 2, i >> 1)"),
       ("~i", "~i"),
       ("~b", "~b"),
       ("b & array([True, True, False])", "b & np.array([True, True, False])"),
       ("x > 1.5, x == 2, i != 2", "(x > 1.5, x == 2, i != 2)"),
       ("(x >= 2).dtype", "'bool'"),
       ("-i", "-i"),
       ])

block("np_arith", "broadcasting",
      "a = arange(6.).reshape((2, 3))\nr = array([10., 20., 30.])\nc = array([[1.], [2.]])",
      "a = np.arange(6., dtype=f32).reshape((2, 3))\nr = np.array([10., 20., 30.], f32)\nc = np.array([[1.], [2.]], f32)",
      [("a + r", "a + r"),
       ("a * c", "a * c"),
       ("r + c", "r + c"),
       ("(r + c).shape", "(r + c).shape"),
       ("a - 1", "a - 1"),
       ("maximum(a, 2.5)", "np.maximum(a, f32(2.5))"),
       ("minimum(r, c)", "np.minimum(r, c)"),
       ("where(a > 2, a, -1.0)", "np.where(a > 2, a, f32(-1.0))"),
       ("where(array([True, False, True]), r, c)", "np.where([True, False, True], r, c)"),
       ("clip(a, 1, 4)", "np.clip(a, 1, 4)"),
       ("clip(a, a_max=2)", "np.minimum(a, 2)"),
       ])

block("np_arith", "matmul, dot and friends",
      "A = arange(6.).reshape((2, 3))\nB = arange(12.).reshape((3, 4))\nv = array([1., 2., 3.])\n"
      "S = arange(24.).reshape((2, 3, 4))\nT = arange(24.).reshape((2, 4, 3))",
      "A = np.arange(6., dtype=f32).reshape((2, 3))\nB = np.arange(12., dtype=f32).reshape((3, 4))\n"
      "v = np.array([1., 2., 3.], f32)\nS = np.arange(24., dtype=f32).reshape((2, 3, 4))\n"
      "T = np.arange(24., dtype=f32).reshape((2, 4, 3))",
      [("A @ B", "A @ B"),
       ("A @ v", "A @ v"),
       ("v @ B", "v @ B"),
       ("v @ v", "v @ v"),
       ("(S @ T).shape", "(S @ T).shape"),
       ("S @ T", "S @ T"),
       ("(S @ T[0]).shape, S @ T[0]", "((S @ T[0]).shape, S @ T[0])"),
       ("A @ S", "A @ S"),
       ("v @ S", "v @ S"),
       ("S @ array([1., 0., 0., 1.])", "S @ np.array([1., 0., 0., 1.], f32)"),
       ("dot(A, B)", "np.dot(A, B)"),
       ("dot(S, T[0]).shape", "np.dot(S, T[0]).shape"),
       ("dot(2.0, v)", "np.dot(f32(2.0), v)"),
       ("vdot(A, A)", "np.vdot(A, A)"),
       ("outer(v, v)", "np.outer(v, v)"),
       ("inner(A, A)", "np.inner(A, A)"),
       ("tensordot(S, T, axes=((1, 2), (2, 1)))", "np.tensordot(S, T, axes=((1, 2), (2, 1)))"),
       ("jnp.matmul(A, B).shape", "(2, 4)"),
       ("jnp.linalg.norm(v), linalg.norm(A), jnp.linalg.norm(A, axis=1), jnp.linalg.norm(v, ord=1)",
        "(np.linalg.norm(v), np.linalg.norm(A), np.linalg.norm(A, axis=1), np.linalg.norm(v, 1))"),
       ("jnp.linalg.norm(-v, ord=inf), jnp.linalg.norm(v, ord=0), jnp.linalg.norm(v, ord=3), jnp.linalg.norm(A, 'fro', keepdims=True)",
        "(np.linalg.norm(-v, np.inf), np.linalg.norm(v, 0), np.linalg.norm(v, 3), np.linalg.norm(A, 'fro', keepdims=True))"),
       ("einsum('ij,jk->ik', A, B), einsum('ij->ji', A), einsum('ij->', A), einsum('i,i', v, v)",
        "(np.einsum('ij,jk->ik', A, B), np.einsum('ij->ji', A), np.einsum('ij->', A), np.einsum('i,i', v, v))"),
       ("einsum('i,j->ij', v, v), einsum('bij,bjk->bik', S, T), einsum('ij,ij->i', A, A)",
        "(np.einsum('i,j->ij', v, v), np.einsum('bij,bjk->bik', S, T), np.einsum('ij,ij->i', A, A))"),
       ("einsum('ij,jk,kl->il', A, B, B.T), einsum('ba', A), einsum('bij->j', S)",
        "(np.einsum('ij,jk,kl->il', A, B, B.T), np.einsum('ba', A), np.einsum('bij->j', S))"),
       ("jnp.linalg.cholesky(array([[4., 2.], [2., 3.]]))", "np.linalg.cholesky(np.array([[4., 2.], [2., 3.]], f32))"),
       ("array([1, 2]) @ array([[1, 2], [3, 4]])", "np.array([1, 2]) @ np.array([[1, 2], [3, 4]])"),
       ])

# ---------------------------------------------------------------- elementwise functions
block("np_math", "elementwise functions",
      "x = array([0.1, 0.5, 0.9])\ny = array([-2.5, -0.5, 0.5, 1.5, 2.5])\nk = array([1, 2, 3])",
      "x = np.array([0.1, 0.5, 0.9], f32)\ny = np.array([-2.5, -0.5, 0.5, 1.5, 2.5], f32)\nk = np.array([1, 2, 3], i32)",
      [("exp(x)", "np.exp(x)"), ("log(x)", "np.log(x)"), ("log2(x)", "np.log2(x)"),
       ("log10(x)", "np.log10(x)"), ("log1p(x)", "np.log1p(x)"), ("expm1(x)", "np.expm1(x)"),
       ("exp2(x)", "np.exp2(x)"), ("sqrt(x)", "np.sqrt(x)"), ("cbrt(x)", "np.cbrt(x)"),
       ("sin(x)", "np.sin(x)"), ("cos(x)", "np.cos(x)"), ("tan(x)", "np.tan(x)"),
       ("arcsin(x)", "np.arcsin(x)"), ("arccos(x)", "np.arccos(x)"), ("arctan(x)", "np.arctan(x)"),
       ("sinh(x)", "np.sinh(x)"), ("cosh(x)", "np.cosh(x)"), ("tanh(x)", "np.tanh(x)"),
       ("arcsinh(x)", "np.arcsinh(x)"), ("arctanh(x)", "np.arctanh(x)"),
       ("arccosh(x + 1)", "np.arccosh(x + 1)"),
       ("arctan2(x, y[:3])", "np.arctan2(x, y[:3])"),
       ("logistic(x)", "(1 / (1 + np.exp(-x))).astype(f32)"),
       ("sigmoid(y)", "(1 / (1 + np.exp(-y))).astype(f32)"),
       ("abs(y), absolute(k), sign(y)", "(np.abs(y), np.abs(k), np.sign(y))"),
       ("square(y)", "np.square(y)"), ("negative(k)", "-k"),
       ("floor(y), ceil(y)", "(np.floor(y), np.ceil(y))"),
       ("round(y), rint(y)", "(np.round(y), np.rint(y))"),
       ("round(array([1.234, 5.678]), 1)", "np.round(np.array([1.234, 5.678], f32), 1)"),
       # scaled back by a division, as JAX and NumPy: 84 / 10 is float32's 8.4, 84 * 0.1 is not
       ("round(8.4, 1) == 8.4, round(array([8.4, 1.2345]), 3) == array([8.4, 1.234])",
        "(True, np.array([True, True]))"),
       ("trunc(y)", "np.trunc(y)"),
       ("exp(k)", "np.exp(k).astype(f32)"),
       ("sqrt(k).dtype", "'float32'"),
       ("floor(k)", "k"),
       ("reciprocal(x)", "np.reciprocal(x)"),
       ("deg2rad(array([180.]))", "np.deg2rad(np.array([180.], f32))"),
       ("hypot(3.0, 4.0)", "f32(5.0)"),
       ("power(k, 2), pow(2.0, 3)", "(k ** 2, f32(8.0))"),
       ("mod(k, 2), remainder(-k, 2), fmod(-k, 2)", "(k % 2, -k % 2, np.fmod(-k, 2))"),
       ("floor_divide(k, 2), true_divide(k, 2)", "(k // 2, (k / 2).astype(f32))"),
       ("isnan(array([1., nan])), isinf(array([inf, 1.])), isfinite(array([inf, nan, 1.]))",
        "(np.array([False, True]), np.array([True, False]), np.array([False, False, True]))"),
       ("isfinite(k)", "np.isfinite(k)"),
       ("logical_and(k > 1, k < 3), logical_or(k < 2, k > 2), logical_not(k > 1)",
        "(np.logical_and(k > 1, k < 3), np.logical_or(k < 2, k > 2), np.logical_not(k > 1))"),
       ("logical_xor(array([True, False]), True)", "np.logical_xor([True, False], True)"),
       ("bitwise_and(k, 1), bitwise_or(k, 8), bitwise_xor(k, 3), invert(k)",
        "(k & 1, k | 8, k ^ 3, ~k)"),
       ("left_shift(k, 1), right_shift(array([-8, 8]), 1)", "(k << 1, np.array([-8, 8]) >> 1)"),
       ("equal(k, 2), not_equal(k, 2), less(k, 2), less_equal(k, 2), greater(k, 2), greater_equal(k, 2)",
        "(k == 2, k != 2, k < 2, k <= 2, k > 2, k >= 2)"),
       ("add(k, 1), subtract(k, 1), multiply(k, 2), divide(k, 4)",
        "(k + 1, k - 1, k * 2, (k / 4).astype(f32))"),
       ("maximum(array([1., nan]), 0.)", "np.maximum(np.array([1., np.nan], f32), f32(0.))"),
       ("pi, e", "(f32(np.pi), f32(np.e))"),
       ("inf, -inf, nan", "(np.inf, -np.inf, np.nan)"),
       ])

# ---------------------------------------------------------------- reductions
block("np_reduce", "reductions with axis, keepdims, dtype and ddof",
      "a = arange(12.).reshape((3, 4))\nk = array([[3, 1, 2], [9, 7, 8]])\nb = array([True, False, True])",
      "a = np.arange(12., dtype=f32).reshape((3, 4))\nk = np.array([[3, 1, 2], [9, 7, 8]], i32)\nb = np.array([True, False, True])",
      [("sum(a), sum(a, 0), sum(a, axis=1), sum(a, axis=-1)", "(a.sum(), a.sum(0), a.sum(1), a.sum(-1))"),
       ("sum(a, axis=(0, 1)), sum(a, axis=0, keepdims=True)", "(a.sum((0, 1)), a.sum(0, keepdims=True))"),
       ("sum(a, keepdims=True).shape", "(1, 1)"),
       ("sum(k).dtype, sum(b), sum(b).dtype, sum(array([200, 100], dtype=u8)).dtype",
        "('int32', 2, 'int32', 'uint32')"),
       ("sum(k, dtype=f32)", "f32(30.0)"),
       ("prod(k, axis=1), prod(a[:, 1:3], axis=0)", "(k.prod(1), a[:, 1:3].prod(0))"),
       ("mean(a), mean(a, 0), mean(k), mean(k).dtype", "(a.mean(), a.mean(0), f32(k.mean()), 'float32')"),
       ("var(a), var(a, axis=1), var(a, ddof=1), std(a, 0), std(k)",
        "(a.var(), a.var(1), a.var(ddof=1), a.std(0), f32(k.std()))"),
       ("max(a), max(a, axis=0), min(a, 1), amax(k), amin(k, axis=0)",
        "(a.max(), a.max(0), a.min(1), k.max(), k.min(0))"),
       ("max(a, axis=1, keepdims=True)", "a.max(1, keepdims=True)"),
       ("max(2, 7), min(2, 7, 1), max(1.5, 2)", "(7, 1, f32(2))"),
       ("max([3, 9, 4]), min((3., 1.))", "(9, f32(1.))"),
       ("argmax(k), argmax(k, axis=1), argmin(a, 0), argmax(a, axis=1, keepdims=True)",
        "(k.argmax(), k.argmax(1), a.argmin(0), a.argmax(1, keepdims=True))"),
       ("argmax(array([1., nan, 3.]))", "1"),
       ("all(b), any(b), all(k > 0), any(k > 8, axis=1), all(a, axis=0)",
        "(b.all(), b.any(), (k > 0).all(), (k > 8).any(1), a.all(0))"),
       ("cumsum(k), cumsum(k, axis=0), cumprod(k, axis=1), cumsum(b)",
        "(k.cumsum(), k.cumsum(0), k.cumprod(1), b.cumsum().astype(i32))"),
       ("cumsum(a, axis=1)[1]", "a.cumsum(1)[1]"),
       ("ptp(k, axis=1), count_nonzero(array([0, 1, 2, 0]))", "(np.ptp(k, 1), 2)"),
       ("median(array([3., 1., 2.])), median(array([4., 1., 3., 2.])), median(a, axis=0)",
        "(f32(2.), f32(2.5), np.median(a, 0))"),
       ])

block("np_reduce", "methods",
      "a = arange(12.).reshape((3, 4))",
      "a = np.arange(12., dtype=f32).reshape((3, 4))",
      [("a.sum(), a.sum(0), a.sum(axis=1), a.mean(0), a.std(), a.var(1)",
        "(a.sum(), a.sum(0), a.sum(1), a.mean(0), a.std(), a.var(1))"),
       ("a.max(), a.min(0), a.argmax(), a.argmin(1), a.prod(1)",
        "(a.max(), a.min(0), a.argmax(), a.argmin(1), a.prod(1))"),
       ("a.cumsum(0)[-1], a.all(), a.any(1)", "(a.cumsum(0)[-1], a.all(), a.any(1))"),
       ("a.reshape(4, 3).shape, a.reshape((2, -1)).shape, a.reshape(-1).shape",
        "((4, 3), (2, 6), (12,))"),
       ("a.T.shape, a.transpose().shape, a.transpose(1, 0).shape, a.transpose((1, 0)).shape",
        "((4, 3),) * 4"),
       ("a.flatten()[:5], a.ravel()[-2:], a.astype(i32)[1]",
        "(a.flatten()[:5], a.ravel()[-2:], a.astype(i32)[1])"),
       ("a.astype(f64).dtype, a.dtype, a.ndim, a.size, a.shape, a.itemsize",
        "('float64', 'float32', 2, 12, (3, 4), 4)"),
       ("a[0].dot(a[1]), a.clip(2, 5)[0], a.round()[0], a.squeeze().shape",
        "(a[0].dot(a[1]), a.clip(2, 5)[0], a.round()[0], (3, 4))"),
       ("a[1, 2].item(), a[:2, :2].tolist()", "(6.0, [[0.0, 1.0], [4.0, 5.0]])"),
       ("array([3, 1, 2]).sort(), array([3, 1, 2]).argsort()", "(np.array([1, 2, 3]), np.array([1, 2, 0]))"),
       ("a.block_until_ready().shape, a.copy()[0, 1]", "((3, 4), f32(1.))"),
       ("a.swapaxes(0, 1).shape, a.take(array([0, 2]), axis=1)[0]", "((4, 3), np.array([0., 2.], f32))"),
       ])

# ---------------------------------------------------------------- creation
block("np_create", "array creation",
      "", "",
      [("array([1, 2, 3]).dtype, array([1., 2]).dtype, array([True, False]).dtype",
        "('int32', 'float32', 'bool')"),
       ("array([[1, 2], [3, 4]], dtype=f32)", "np.array([[1, 2], [3, 4]], f32)"),
       ("array(3.5), array(2).dtype, asarray([1, 2], dtype=u8)", "(f32(3.5), 'int32', np.array([1, 2], u8))"),
       ("zeros((2, 3)), zeros(2, dtype=i32), ones((2,)), ones((1, 2), dtype=bool_)",
        "(np.zeros((2, 3), f32), np.zeros(2, i32), np.ones(2, f32), np.ones((1, 2), bool))"),
       ("full((2, 2), 7), full((2,), 1.5).dtype, full(3, 2, dtype=f32)",
        "(np.full((2, 2), 7, i32), 'float32', np.full(3, 2, f32))"),
       ("zeros_like(array([1, 2])), ones_like(array([[1.], [2.]])), full_like(array([1, 2]), 9)",
        "(np.zeros(2, i32), np.ones((2, 1), f32), np.full(2, 9, i32))"),
       ("empty((2,)).shape, empty_like(array([1., 2.])).dtype", "((2,), 'float32')"),
       ("arange(5), arange(2, 5), arange(1, 10, 3), arange(5, 0, -2)",
        "(np.arange(5), np.arange(2, 5), np.arange(1, 10, 3), np.arange(5, 0, -2))"),
       ("arange(0., 1., 0.1)", "np.arange(0., 1., 0.1, dtype=f32)"),
       ("arange(3.), arange(3.).dtype, arange(4, dtype=f32)", "(np.arange(3., dtype=f32), 'float32', np.arange(4, dtype=f32))"),
       ("arange(0.5, 3), arange(10, 0), arange(0, 1, 0.25)",
        "(np.arange(0.5, 3, dtype=f32), np.arange(10, 0), np.arange(0, 1, 0.25, dtype=f32))"),
       ("linspace(0, 1, 5), linspace(0., 10., 4), linspace(2, 3, 5, endpoint=False)",
        "(np.linspace(0, 1, 5, dtype=f32), np.linspace(0, 10, 4, dtype=f32), np.linspace(2, 3, 5, endpoint=False, dtype=f32))"),
       ("linspace(0, 10, 1000).shape, linspace(-1, 1, 1), linspace(0, 1, 0).shape",
        "((1000,), np.array([-1.], f32), (0,))"),
       ("eye(2), eye(2, 3, k=1), eye(3, k=-1, dtype=i32)",
        "(np.eye(2, dtype=f32), np.eye(2, 3, k=1, dtype=f32), np.eye(3, k=-1, dtype=i32))"),
       ("identity(2), tril(ones((3, 3))), triu(ones((2, 3)), 1)",
        "(np.identity(2, f32), np.tril(np.ones((3, 3), f32)), np.triu(np.ones((2, 3), f32), 1))"),
       ("meshgrid(array([1, 2, 3]), array([4, 5]))", "list(np.meshgrid([1, 2, 3], [4, 5]))"),
       ("meshgrid(array([1, 2]), array([4, 5, 6]), indexing='ij')[1]",
        "np.meshgrid([1, 2], [4, 5, 6], indexing='ij')[1]"),
       ("diag(array([1, 2])), diag(array([1, 2]), 1), diag(array([1, 2]), -1)",
        "(np.diag([1, 2]), np.diag([1, 2], 1), np.diag([1, 2], -1))"),
       ("diag(arange(9).reshape((3, 3))), diagonal(arange(9).reshape((3, 3)), 1), trace(arange(9).reshape((3, 3)))",
        "(np.diag(np.arange(9).reshape((3, 3))), np.diagonal(np.arange(9).reshape((3, 3)), 1), 12)"),
       ("float32, i64, bool_, jnp.float64, np.int32", "('float32', 'int64', 'bool', 'float64', 'int32')"),
       ("newaxis", "None"),
       ])

# ---------------------------------------------------------------- shapes
block("np_shape", "shape manipulation",
      "a = arange(6).reshape((2, 3))\nv = array([1, 2, 3])",
      "a = np.arange(6, dtype=i32).reshape((2, 3))\nv = np.array([1, 2, 3], i32)",
      [("reshape(a, (3, 2)), reshape(a, -1), reshape(a, (1, -1)).shape",
        "(a.reshape((3, 2)), a.reshape(-1), (1, 6))"),
       ("transpose(a), transpose(zeros((2, 3, 4)), (2, 0, 1)).shape, swapaxes(zeros((2, 3, 4)), 0, 2).shape",
        "(a.T, (4, 2, 3), (4, 3, 2))"),
       ("moveaxis(zeros((2, 3, 4)), 0, -1).shape, moveaxis(zeros((2, 3, 4)), (0, 1), (2, 0)).shape",
        "((3, 4, 2), (3, 4, 2))"),
       ("squeeze(zeros((1, 2, 1))).shape, squeeze(zeros((1, 2, 1)), axis=0).shape, expand_dims(v, 0).shape, expand_dims(v, (0, 2)).shape",
        "((2,), (2, 1), (1, 3), (1, 3, 1))"),
       ("concatenate([a, a]), concatenate((a, a), axis=1), concatenate([v, v], axis=None)",
        "(np.concatenate([a, a]), np.concatenate([a, a], 1), np.concatenate([v, v]))"),
       ("concatenate([v, array([1.5])])", "np.concatenate([v, [1.5]]).astype(f32)"),
       ("stack([v, v]), stack([v, v], axis=1), stack([v, v], -1).shape",
        "(np.stack([v, v]), np.stack([v, v], 1), (3, 2))"),
       ("vstack([v, v]), hstack([v, v]), hstack([a, a]).shape, column_stack([v, v]), dstack([v, v]).shape",
        "(np.vstack([v, v]), np.hstack([v, v]), (2, 6), np.column_stack([v, v]), (1, 3, 2))"),
       ("flip(v), flip(a), flip(a, 1), fliplr(a), flipud(a)",
        "(np.flip(v), np.flip(a), np.flip(a, 1), np.fliplr(a), np.flipud(a))"),
       ("ravel(a), broadcast_to(v, (2, 3)), broadcast_to(3, (2,))",
        "(a.ravel(), np.broadcast_to(v, (2, 3)), np.broadcast_to(3, (2,)))"),
       ("tile(v, 2), tile(v, (2, 1)), tile(a, (1, 2)).shape",
        "(np.tile(v, 2), np.tile(v, (2, 1)), (2, 6))"),
       ("repeat(v, 2), repeat(a, 2, axis=0), repeat(a, 2, axis=1)",
        "(np.repeat(v, 2), np.repeat(a, 2, 0), np.repeat(a, 2, 1))"),
       ("roll(v, 1), roll(v, -1), roll(a, 1), roll(a, 1, axis=1), roll(a, (1, 1), axis=(0, 1))",
        "(np.roll(v, 1), np.roll(v, -1), np.roll(a, 1), np.roll(a, 1, 1), np.roll(a, (1, 1), (0, 1)))"),
       ("split(arange(6), 3), split(arange(6), [1, 4]), array_split(arange(5), 2)",
        "(np.split(np.arange(6), 3), np.split(np.arange(6), [1, 4]), np.array_split(np.arange(5), 2))"),
       ("split(a, 3, axis=1)[2]", "np.split(a, 3, 1)[2]"),
       ("pad(v, 1), pad(v, (1, 2), constant_values=9), pad(a, ((1, 0), (0, 1)))",
        "(np.pad(v, 1), np.pad(v, (1, 2), constant_values=9), np.pad(a, ((1, 0), (0, 1))))"),
       ("atleast_1d(1.0).shape, atleast_2d(v).shape, atleast_3d(a).shape", "((1,), (1, 3), (2, 3, 1))"),
       ("broadcast_arrays(v, array([[1], [2]]))[1]", "np.broadcast_arrays(v, [[1], [2]])[1]"),
       ("shape(a), ndim(a), size(a), size(a, 1), astype(v, f32)",
        "((2, 3), 2, 6, 3, v.astype(f32))"),
       ("sort(array([3, 1, 2])), sort(array([[3, 1], [0, 5]]), axis=0), argsort(array([3., 1., 2.]))",
        "(np.sort([3, 1, 2]), np.sort([[3, 1], [0, 5]], 0), np.argsort([3., 1., 2.]))"),
       ("sort(array([2., nan, 1.])), sort(array([3, 1, 2]), descending=True)",
        "(np.array([1., 2., np.nan], f32), np.array([3, 2, 1]))"),
       ("take(v, array([2, 0])), take(a, array([1, 0, 1]), axis=1), take(a, 4)",
        "(np.take(v, [2, 0]), np.take(a, [1, 0, 1], 1), np.take(a, 4))"),
       ("take_along_axis(a, array([[2], [0]]), axis=1), take_along_axis(a, argsort(-a, axis=1), axis=1)",
        "(np.take_along_axis(a, np.array([[2], [0]]), 1), np.take_along_axis(a, np.argsort(-a, 1), 1))"),
       ("one_hot(array([0, 2, 1]), 3)", "np.eye(3, dtype=f32)[[0, 2, 1]]"),
       ("unique(array([3, 1, 3, 2, 1])), nonzero(array([0, 1, 0, 2]))",
        "(np.unique([3, 1, 3, 2, 1]), np.nonzero([0, 1, 0, 2]))"),
       ("where(array([[0, 1], [1, 0]]))", "np.where([[0, 1], [1, 0]])"),
       ])

# ---------------------------------------------------------------- indexing
block("np_index", "basic indexing: ints, slices, steps, None, Ellipsis",
      "x = arange(10)\nm = arange(24).reshape((2, 3, 4))",
      "x = np.arange(10)\nm = np.arange(24).reshape((2, 3, 4))",
      [("x[3], x[-1], x[2:5], x[:3], x[7:], x[::3], x[::-1], x[-3:], x[8:2:-2]",
        "(x[3], x[-1], x[2:5], x[:3], x[7:], x[::3], x[::-1], x[-3:], x[8:2:-2])"),
       ("x[5:2], x[100:], x[-100:2], x[::-4]", "(x[5:2], x[100:], x[-100:2], x[::-4])"),
       ("m[1], m[1, 2], m[1, 2, 3], m[-1, -1, -1]", "(m[1], m[1, 2], m[1, 2, 3], m[-1, -1, -1])"),
       ("m[:, 1], m[:, :, 0], m[..., 0], m[0, ..., 1], m[...].shape",
        "(m[:, 1], m[:, :, 0], m[..., 0], m[0, ..., 1], m[...].shape)"),
       ("m[:, None].shape, m[None, ..., None].shape, x[:, newaxis].shape, m[0, None, :, None, 1].shape",
        "(m[:, None].shape, m[None, ..., None].shape, x[:, None].shape, m[0, None, :, None, 1].shape)"),
       ("m[1, ::-1, 1:3], m[:, ::2, ::-3]", "(m[1, ::-1, 1:3], m[:, ::2, ::-3])"),
       ("m[()].shape, x[()].shape", "((2, 3, 4), (10,))"),
       ])

block("np_index", "advanced indexing: integer arrays, masks, mixed",
      "x = arange(10) * 10\nm = arange(24).reshape((2, 3, 4))\ni = array([0, 2, -1])",
      "x = np.arange(10) * 10\nm = np.arange(24).reshape((2, 3, 4))\ni = np.array([0, 2, -1])",
      [("x[i], x[[1, 1, 3]], x[array([[0, 1], [2, 3]])]",
        "(x[i], x[[1, 1, 3]], x[np.array([[0, 1], [2, 3]])])"),
       ("m[:, i].shape, m[:, i], m[..., array([0, 3])]", "(m[:, i].shape, m[:, i], m[..., [0, 3]])"),
       ("m[array([1, 0]), array([2, 1])], m[array([1, 0]), :, array([3, 0])]",
        "(m[[1, 0], [2, 1]], m[[1, 0], :, [3, 0]])"),
       ("m[0, :, array([1, 2])].shape, m[:, 0, array([1, 2])].shape, m[array([0, 1]), 1:, 0].shape",
        "(m[0, :, [1, 2]].shape, m[:, 0, [1, 2]].shape, m[[0, 1], 1:, 0].shape)"),
       ("m[0, :, array([1, 2])]", "m[0, :, [1, 2]]"),
       ("m[array([[0], [1]]), array([0, 2])].shape, m[None, array([0, 1]), 0].shape",
        "(m[np.array([[0], [1]]), np.array([0, 2])].shape, m[None, [0, 1], 0].shape)"),
       ("x[x > 40], x[(x > 20) & (x < 60)], m[m % 5 == 0]",
        "(x[x > 40], x[(x > 20) & (x < 60)], m[m % 5 == 0])"),
       ("m[array([True, False])].shape, m[:, array([True, False, True])].shape, m[m[..., 0] > 5].shape",
        "(m[[True, False]].shape, m[:, [True, False, True]].shape, m[m[..., 0] > 5].shape)"),
       ("array([1., -2., 3., -4.])[array([1., -2., 3., -4.]) < 0]", "np.array([-2., -4.], f32)"),
       ])

block("np_index", "functional updates with .at",
      "x = arange(6)\nm = zeros((2, 3))",
      "x = np.arange(6)\nm = np.zeros((2, 3), f32)",
      [("x.at[0].set(10), x", "(np.array([10, 1, 2, 3, 4, 5]), x)"),
       ("x.at[-1].set(9), x.at[1:4].add(5), x.at[::2].mul(3)",
        "(np.array([0, 1, 2, 3, 4, 9]), np.array([0, 6, 7, 8, 4, 5]), np.array([0, 1, 6, 3, 12, 5]))"),
       ("x.at[array([0, 0, 1])].add(1), x.at[array([0, 0, 1])].set(7)",
        "(np.array([2, 2, 2, 3, 4, 5]), np.array([7, 7, 2, 3, 4, 5]))"),
       ("x.at[x > 2].set(0), x.at[2].min(1), x.at[2].max(9), x.at[3].get()",
        "(np.array([0, 1, 2, 0, 0, 0]), np.array([0, 1, 1, 3, 4, 5]), np.array([0, 1, 9, 3, 4, 5]), 3)"),
       ("m.at[1].set(array([1., 2., 3.])), m.at[:, 1].add(2)",
        "(np.array([[0, 0, 0], [1, 2, 3]], f32), np.array([[0, 2, 0], [0, 2, 0]], f32))"),
       ("m.at[0, 2].set(5).at[1, 0].set(-1)", "np.array([[0, 0, 5], [-1, 0, 0]], f32)"),
       ("x.at[1].set(2.7)", "np.array([0, 2, 2, 3, 4, 5])"),
       ])

# ---------------------------------------------------------------- comparisons
block("np_compare", "closeness and equality",
      "a = array([1.0, 2.0, inf, nan])\nb = array([1.0 + 1e-6, 2.1, inf, nan])",
      "a = np.array([1.0, 2.0, np.inf, np.nan], f32)\nb = np.array([1.0 + 1e-6, 2.1, np.inf, np.nan], f32)",
      [("isclose(a, b), isclose(a, b, equal_nan=True)", "(np.isclose(a, b), np.isclose(a, b, equal_nan=True))"),
       ("isclose(1.0, 1.1, rtol=0.2), isclose(array([1, 2]), array([1, 3]))", "(True, np.array([True, False]))"),
       ("isclose(inf, 1.0), isclose(1.0, inf), isclose(-inf, inf)", "(False, False, False)"),
       ("allclose(a[:2], b[:2]), allclose(a[:1], b[:1]), allclose(a, a), allclose(a, a, equal_nan=True)",
        "(False, True, False, True)"),
       ("allclose(array([1., 2.]), array([1.001, 2.]), atol=0.01)", "True"),
       ("array_equal(array([1, 2]), array([1, 2])), array_equal(array([1, 2]), array([1, 3])), array_equal(array([1]), array([1, 1]))",
        "(True, False, False)"),
       ("array_equiv(array([1, 1]), 1), array_equal(a, a, equal_nan=True)", "(True, True)"),
       ])

# ---------------------------------------------------------------- searching, binning, sets
# (stdlib/jnp_more.ax; JAX's dtypes: int32 indices and counts, float32 histograms)
block("np_search", "searchsorted and digitize",
      "a = array([1., 2., 2., 3., 5.])\nv = array([[0., 2.], [2.5, 5.], [6., -1.]])",
      "a = np.array([1., 2., 2., 3., 5.], f32)\nv = np.array([[0., 2.], [2.5, 5.], [6., -1.]], f32)",
      [("searchsorted(a, v), searchsorted(a, v, side='right')",
        "(np.searchsorted(a, v).astype(i32), np.searchsorted(a, v, side='right').astype(i32))"),
       ("searchsorted(a, v, method='compare_all'), searchsorted(a, 2.0), searchsorted(a, 2, side='right')",
        "(np.searchsorted(a, v).astype(i32), np.searchsorted(a, 2.0), np.searchsorted(a, 2, side='right'))"),
       ("searchsorted(a, v).dtype, searchsorted(array([], dtype=float32), v).shape", "('int32', (3, 2))"),
       ("searchsorted(array([3, 1, 2, 9]), array([2, 0, 10]), sorter=argsort(array([3, 1, 2, 9])))",
        "np.searchsorted(np.array([3, 1, 2, 9]), np.array([2, 0, 10]), sorter=np.argsort(np.array([3, 1, 2, 9])))"),
       ("searchsorted(array([1., 2., nan]), array([nan, 2., 3.])), searchsorted(array([1., 2., nan]), array([nan, 2.]), side='right')",
        "(np.searchsorted(np.array([1., 2., np.nan]), np.array([np.nan, 2., 3.])), np.searchsorted(np.array([1., 2., np.nan]), np.array([np.nan, 2.]), side='right'))"),
       ("searchsorted(arange(1000), array([-5, 0, 1, 500, 998, 999, 1000]))",
        "np.searchsorted(np.arange(1000), np.array([-5, 0, 1, 500, 998, 999, 1000]))"),
       ("digitize(array([0.2, 6.4, 3.0, 1.6, 10.0]), array([0.0, 1.0, 2.5, 4.0, 10.0]))",
        "np.digitize(np.array([0.2, 6.4, 3.0, 1.6, 10.0]), np.array([0.0, 1.0, 2.5, 4.0, 10.0]))"),
       ("digitize(array([0.2, 6.4, 3.0, 1.6, 10.0]), array([0.0, 1.0, 2.5, 4.0, 10.0]), right=True)",
        "np.digitize(np.array([0.2, 6.4, 3.0, 1.6, 10.0]), np.array([0.0, 1.0, 2.5, 4.0, 10.0]), right=True)"),
       ("digitize(array([0.2, 6.4, 3.0, 1.6]), array([10.0, 4.0, 2.5, 1.0, 0.0])), digitize(array([1., 4.]), array([4., 1.]), right=True)",
        "(np.digitize(np.array([0.2, 6.4, 3.0, 1.6]), np.array([10.0, 4.0, 2.5, 1.0, 0.0])), np.digitize(np.array([1., 4.]), np.array([4., 1.]), right=True))"),
       ("digitize(array([[1, 5], [7, 2]]), array([2, 6])), digitize(array([1., 2.]), array([])).dtype",
        "(np.digitize(np.array([[1, 5], [7, 2]]), np.array([2, 6])), 'int32')"),
       ])

block("np_search", "bincount (negative values count in bin 0 and length= drops the rest, as in JAX)",
      "x = array([0, 1, 1, 3, 2, 1, 7])\nw = array([0.3, 0.5, 0.2, 0.7, 1., -0.6, 2.])",
      "x = np.array([0, 1, 1, 3, 2, 1, 7])\nw = np.array([0.3, 0.5, 0.2, 0.7, 1., -0.6, 2.], f32)",
      [("bincount(x), bincount(x).dtype", "(np.bincount(x), 'int32')"),
       ("bincount(x, w), bincount(x, weights=w).dtype", "(np.bincount(x, w).astype(f32), 'float32')"),
       ("bincount(x, minlength=10), bincount(array([2, 2]), minlength=1)",
        "(np.bincount(x, minlength=10), np.bincount(np.array([2, 2]), minlength=1))"),
       ("bincount(x, length=4), bincount(x, w, length=3)",
        "(np.bincount(x)[:4], np.bincount(x, w)[:3].astype(f32))"),
       ("bincount(array([-2, 1, -1])), bincount(array([True, False, True]))",
        "(np.bincount(np.array([0, 1, 0])), np.bincount(np.array([1, 0, 1])))"),
       ("bincount(array([], dtype=int32)), bincount(array([], dtype=int32), minlength=3)",
        "(np.bincount(np.array([], int)), np.bincount(np.array([], int), minlength=3))"),
       ])

block("np_search", "histogram and its bin edges",
      "d = array([1., 2., 1., 4., 2.5, 10., 3.25, 0.])\nw = array([1., 0.5, 2., 1., 3., 1., 0.25, 4.])",
      "d = np.array([1., 2., 1., 4., 2.5, 10., 3.25, 0.], f32)\nw = np.array([1., 0.5, 2., 1., 3., 1., 0.25, 4.], f32)",
      [("histogram(d)", "tuple(r.astype(f32) for r in np.histogram(d))"),
       ("histogram(d, bins=4), histogram(d)[0].dtype", "(tuple(r.astype(f32) for r in np.histogram(d, bins=4)), 'float32')"),
       ("histogram(d, bins=4, range=(0, 8))", "tuple(r.astype(f32) for r in np.histogram(d, bins=4, range=(0, 8)))"),
       ("histogram(d, bins=array([0., 1., 2.5, 10.]))", "tuple(r.astype(f32) for r in np.histogram(d, bins=np.array([0., 1., 2.5, 10.])))"),
       ("histogram(d, bins=5, weights=w)", "tuple(r.astype(f32) for r in np.histogram(d, bins=5, weights=w))"),
       ("histogram(d, bins=4, density=True)", "tuple(r.astype(f32) for r in np.histogram(d, bins=4, density=True))"),
       ("histogram(d, bins=array([0., 2., 3., 8.]), weights=w, density=True)",
        "tuple(r.astype(f32) for r in np.histogram(d, bins=np.array([0., 2., 3., 8.]), weights=w, density=True))"),
       ("histogram(array([1, 2, 2, 5]), bins=2)", "tuple(r.astype(f32) for r in np.histogram(np.array([1, 2, 2, 5]), bins=2))"),
       ("histogram(d, bins=2, range=(2., 4.))", "tuple(r.astype(f32) for r in np.histogram(d, bins=2, range=(2., 4.)))"),
       ("histogram_bin_edges(d, bins=4), histogram_bin_edges(array([3., 3.]), bins=2)",
        "(np.histogram_bin_edges(d, bins=4).astype(f32), np.histogram_bin_edges(np.array([3., 3.]), bins=2).astype(f32))"),
       ("histogram_bin_edges(d, bins=2, range=(-1, 1))", "np.histogram_bin_edges(d, bins=2, range=(-1, 1)).astype(f32)"),
       ])

block("np_search", "histogram2d and histogramdd (counts are int32 without weights, as in JAX)",
      "px = array([0., 1., 2., 2., 0.5])\npy = array([0., 0., 1., 2., 2.])\nwt = array([1., 2., 3., 4., 5.])",
      "px = np.array([0., 1., 2., 2., 0.5], f32)\npy = np.array([0., 0., 1., 2., 2.], f32)\nwt = np.array([1., 2., 3., 4., 5.], f32)",
      [("histogram2d(px, py, bins=2)", "tuple(r.astype(i32) if k == 0 else r.astype(f32) for k, r in enumerate(np.histogram2d(px, py, bins=2)))"),
       ("histogram2d(px, py, bins=(2, 4), weights=wt)", "tuple(r.astype(f32) for r in np.histogram2d(px, py, bins=(2, 4), weights=wt))"),
       ("histogram2d(px, py, bins=[array([0., 1., 3.]), array([0., 2.])], density=True)",
        "tuple(r.astype(f32) for r in np.histogram2d(px, py, bins=[np.array([0., 1., 3.]), np.array([0., 2.])], density=True))"),
       ("histogram2d(px, py, bins=2, range=[[0, 4], [0, 4]])[0]", "np.histogram2d(px, py, bins=2, range=[[0, 4], [0, 4]])[0].astype(i32)"),
       ("histogramdd(stack([px, py, wt], axis=1), bins=(2, 1, 2))[0]", "np.histogramdd(np.stack([px, py, wt], 1), bins=(2, 1, 2))[0].astype(i32)"),
       ])

block("np_search", "unique: indices, inverse, counts, axis, and JAX's size= and fill_value=",
      "u = array([3, 1, 3, 2, 1, 7])\nm = array([[1, 2], [1, 2], [0, 5], [1, 0]])\nf = array([nan, 1., nan, 0.5, 1.])",
      "u = np.array([3, 1, 3, 2, 1, 7])\nm = np.array([[1, 2], [1, 2], [0, 5], [1, 0]])\nf = np.array([np.nan, 1., np.nan, 0.5, 1.], f32)",
      [("unique(u), unique(array([[4, 4], [2, 9]]))", "(np.unique(u), np.unique(np.array([[4, 4], [2, 9]])))"),
       ("unique(u, return_index=True, return_inverse=True, return_counts=True)",
        "np.unique(u, return_index=True, return_inverse=True, return_counts=True)"),
       ("unique(array([[4, 4], [2, 9]]), return_inverse=True)", "(np.array([2, 4, 9]), np.array([[1, 1], [0, 2]]))"),
       ("unique(m, axis=0, return_index=True, return_inverse=True, return_counts=True)",
        "np.unique(m, axis=0, return_index=True, return_inverse=True, return_counts=True)"),
       ("unique(m, axis=1), unique(m, axis=-1, return_counts=True)[1]", "(np.unique(m, axis=1), np.unique(m, axis=-1, return_counts=True)[1])"),
       ("unique(f), unique(f, equal_nan=False), unique(f, return_counts=True)[1]",
        "(np.unique(f), np.unique(f, equal_nan=False), np.unique(f, return_counts=True)[1])"),
       ("unique(u, size=6), unique(u, size=6, fill_value=-1), unique(u, size=2)",
        "(np.array([1, 2, 3, 7, 1, 1]), np.array([1, 2, 3, 7, -1, -1]), np.array([1, 2]))"),
       ("unique(u, return_index=True, return_counts=True, size=6)",
        "(np.array([1, 2, 3, 7, 1, 1]), np.array([1, 3, 0, 5, 1, 1]), np.array([2, 1, 2, 1, 0, 0]))"),
       ("unique(u, return_inverse=True, return_counts=True, size=3)",
        "(np.array([1, 2, 3]), np.array([2, 0, 2, 1, 0, 3]), np.array([2, 1, 2]))"),
       ("unique(m, axis=0, size=4, fill_value=9)", "np.array([[0, 5], [1, 0], [1, 2], [9, 9]])"),
       ("unique(array([], dtype=int32)), unique(array([], dtype=int32), size=2, fill_value=0)",
        "(np.array([], i32), np.array([0, 0]))"),
       ("tuple(unique_counts(u)), tuple(unique_inverse(u)), tuple(unique_all(u)), unique_values(u)",
        "(np.unique(u, return_counts=True), np.unique(u, return_inverse=True), np.unique(u, True, True, True), np.unique(u))"),
       ("unique_counts(u).counts, unique_all(u).indices, unique_inverse(u).inverse_indices",
        "(np.unique(u, return_counts=True)[1], np.unique(u, return_index=True)[1], np.unique(u, return_inverse=True)[1])"),
       ])

block("np_search", "sets, sorting by keys, differences",
      "p = array([1, 5, 1, 4, 3])\nq = array([4, 4, 2, 2, 1])\nc = array([[1, 3, 6], [0, 4, 9]])",
      "p = np.array([1, 5, 1, 4, 3])\nq = np.array([4, 4, 2, 2, 1])\nc = np.array([[1, 3, 6], [0, 4, 9]])",
      [("isin(c, array([3, 9, 1])), isin(c, [0, 6], invert=True)", "(np.isin(c, np.array([3, 9, 1])), np.isin(c, [0, 6], invert=True))"),
       ("lexsort((p, q)), lexsort([q, p]), lexsort(c)", "(np.lexsort((p, q)), np.lexsort([q, p]), np.lexsort(c))"),
       ("lexsort((c, c + 1), axis=0)", "np.lexsort((c, c + 1), axis=0)"),
       ("diff(p), diff(c), diff(c, axis=0), diff(p, n=2), diff(p, n=0)", "(np.diff(p), np.diff(c), np.diff(c, axis=0), np.diff(p, n=2), np.diff(p, n=0))"),
       ("diff(p, prepend=0, append=array([10, 20])), diff(array([1.5, 0.25]))", "(np.diff(p, prepend=0, append=np.array([10, 20])), np.diff(np.array([1.5, 0.25], f32)))"),
       ("diff(array([True, False, False])), ediff1d(c, to_begin=-9, to_end=[7, 8])", "(np.diff(np.array([True, False, False])), np.ediff1d(c, to_begin=-9, to_end=[7, 8]))"),
       ("append(p, c), append(c, [[7, 8, 9]], axis=0)", "(np.append(p, c), np.append(c, [[7, 8, 9]], axis=0))"),
       ])

# ---------------------------------------------------------------- more of jax.numpy (stdlib/jnp_more.ax)
block("np_more", "positions: nonzero with size=, argwhere, flatnonzero, multi-indices",
      "z = array([[0, 3, 0], [4, 0, 5]])",
      "z = np.array([[0, 3, 0], [4, 0, 5]])",
      [("nonzero(z), nonzero(z, size=4), nonzero(z, size=2, fill_value=-1)",
        "(np.nonzero(z), tuple(np.append(i, 0) for i in np.nonzero(z)), tuple(i[:2] for i in np.nonzero(z)))"),
       ("nonzero(z, size=5, fill_value=(-1, -2))", "(np.array([0, 1, 1, -1, -1]), np.array([1, 0, 2, -2, -2]))"),
       ("argwhere(z), argwhere(z, size=4, fill_value=9), flatnonzero(z), flatnonzero(z, size=2)",
        "(np.argwhere(z), np.vstack([np.argwhere(z), [[9, 9]]]), np.flatnonzero(z), np.flatnonzero(z)[:2])"),
       ("unravel_index(array([1, 5, 4]), (2, 3)), unravel_index(7, (3, 4))",
        "(np.unravel_index(np.array([1, 5, 4]), (2, 3)), np.unravel_index(7, (3, 4)))"),
       ("ravel_multi_index((array([1, 0]), array([2, 1])), (2, 3)), ravel_multi_index((array([1, 0]), array([2, 1])), (2, 3), order='F')",
        "(np.ravel_multi_index((np.array([1, 0]), np.array([2, 1])), (2, 3)), np.ravel_multi_index((np.array([1, 0]), np.array([2, 1])), (2, 3), order='F'))"),
       ("ravel_multi_index((array([3, -1]), array([2, 7])), (2, 3), mode='clip'), ravel_multi_index((array([3, -1]), array([2, 7])), (2, 3), mode='wrap')",
        "(np.ravel_multi_index((np.array([3, -1]), np.array([2, 7])), (2, 3), mode='clip'), np.ravel_multi_index((np.array([3, -1]), np.array([2, 7])), (2, 3), mode='wrap'))"),
       ("indices((2, 3)), ix_(array([0, 1]), array([2, 4]))", "(np.indices((2, 3)), np.ix_(np.array([0, 1]), np.array([2, 4])))"),
       ("tri(3, 4, k=1), tril_indices(3), triu_indices(3, 1), tril_indices_from(ones((2, 3)), -1)",
        "(np.tri(3, 4, k=1, dtype=f32), np.tril_indices(3), np.triu_indices(3, 1), np.tril_indices_from(np.ones((2, 3)), -1))"),
       ("diag_indices(3), diagflat(array([[1, 2], [3, 4]]), 1)", "(np.diag_indices(3), np.diagflat(np.array([[1, 2], [3, 4]]), 1))"),
       ("fill_diagonal(zeros((3, 4)), array([5., 6.]), inplace=False)", "_filled(np.zeros((3, 4), f32), np.array([5., 6.]))"),
       ("fill_diagonal(zeros((5, 2)), 7., wrap=True, inplace=False)", "_filled(np.zeros((5, 2), f32), 7., wrap=True)"),
       ])

block("np_more", "sets",
      "s1 = array([5, 1, 2, 2, 7])\ns2 = array([2, 9, 7, 0])",
      "s1 = np.array([5, 1, 2, 2, 7])\ns2 = np.array([2, 9, 7, 0])",
      [("setdiff1d(s1, s2), union1d(s1, s2), setxor1d(s1, s2)", "(np.setdiff1d(s1, s2), np.union1d(s1, s2), np.setxor1d(s1, s2))"),
       ("intersect1d(s1, s2), intersect1d(s1, s2, return_indices=True)", "(np.intersect1d(s1, s2), np.intersect1d(s1, s2, return_indices=True))"),
       ("setdiff1d(s1, s2, size=4, fill_value=-1), union1d(s1, s2, size=8, fill_value=0)",
        "(np.array([1, 5, -1, -1]), np.array([0, 1, 2, 5, 7, 9, 0, 0]))"),
       ])

block("np_more", "reductions that skip NaN, quantiles",
      "g = array([[1., nan, 3.], [4., 5., nan], [nan, 2., 8.]])\ny = array([[3., 1., 4., 1.], [5., 9., 2., 6.]])",
      "g = np.array([[1., np.nan, 3.], [4., 5., np.nan], [np.nan, 2., 8.]], f32)\ny = np.array([[3., 1., 4., 1.], [5., 9., 2., 6.]], f32)",
      [("nansum(g), nansum(g, axis=0), nanprod(g, axis=1), nanmax(g, axis=1), nanmin(g)",
        "(np.nansum(g), np.nansum(g, axis=0), np.nanprod(g, axis=1), np.nanmax(g, axis=1), np.nanmin(g))"),
       ("nanargmax(g, axis=1), nanargmin(g, axis=0), nanargmax(g)", "(np.nanargmax(g, axis=1), np.nanargmin(g, axis=0), np.nanargmax(g))"),
       ("nanmean(g, axis=1), nanvar(g, axis=0), nanstd(g, ddof=1), nanmean(g, axis=0, keepdims=True)",
        "(np.nanmean(g, axis=1), np.nanvar(g, axis=0), np.nanstd(g, ddof=1), np.nanmean(g, axis=0, keepdims=True))"),
       ("nancumsum(g, axis=1), nancumprod(g)", "(np.nancumsum(g, axis=1), np.nancumprod(g))"),
       ("nanmax(array([nan, nan])), nanargmax(array([nan, 1.])), nanmax(array([3, 1]))", "(f32(np.nan), 1, 3)"),
       ("nan_to_num(array([nan, inf, -inf, 1.5])), nan_to_num(array([nan, inf]), nan=-1., posinf=9.)",
        "(np.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1.5], f32)), np.nan_to_num(np.array([np.nan, np.inf], f32), nan=-1., posinf=9.))"),
       ("quantile(y, 0.3), quantile(y, array([0.25, 0.5]), axis=1), percentile(y, 40, axis=0, keepdims=True)",
        "(np.quantile(y, 0.3), np.quantile(y, [0.25, 0.5], axis=1), np.percentile(y, 40, axis=0, keepdims=True))"),
       ("quantile(y, 0.5, method='nearest'), quantile(y, 0.4, axis=1, method='lower'), quantile(y, 0.4, axis=1, method='higher'), quantile(y, 0.4, axis=1, method='midpoint')",
        "(np.quantile(y, 0.5, method='nearest'), np.quantile(y, 0.4, axis=1, method='lower'), np.quantile(y, 0.4, axis=1, method='higher'), np.quantile(y, 0.4, axis=1, method='midpoint'))"),
       ("quantile(y, 0.5, keepdims=True), percentile(arange(5), array([10, 90]))", "(np.quantile(y, 0.5, keepdims=True), np.percentile(np.arange(5), [10, 90]).astype(f32))"),
       ("nanquantile(g, 0.5, axis=1), nanmedian(g, axis=0), nanpercentile(g, 25), quantile(g, 0.5, axis=1)",
        "(np.nanquantile(g, 0.5, axis=1), np.nanmedian(g, axis=0), np.nanpercentile(g, 25), np.quantile(g, 0.5, axis=1))"),
       ])

block("np_more", "interpolation, integration, differences of samples",
      "xp = array([1., 2., 3.])\nfp = array([3., 2., 0.])",
      "xp = np.array([1., 2., 3.], f32)\nfp = np.array([3., 2., 0.], f32)",
      [("interp(array([0., 1.5, 2.5, 5., 1., 3.]), xp, fp), interp(2.5, xp, fp), interp(array([0., 4.]), xp, fp, left=-1, right=9)",
        "(np.interp(np.array([0., 1.5, 2.5, 5., 1., 3.]), xp, fp).astype(f32), f32(np.interp(2.5, xp, fp)), np.interp(np.array([0., 4.]), xp, fp, left=-1, right=9).astype(f32))"),
       ("interp(array([-180., 190., 10.]), array([-170., 170.]), array([0., 1.]), period=360)",
        "np.interp(np.array([-180., 190., 10.]), np.array([-170., 170.]), np.array([0., 1.]), period=360).astype(f32)"),
       ("trapezoid(array([1., 2., 3.])), trapezoid(array([1., 2., 3.]), x=array([4., 6., 9.])), trapezoid(array([[1., 2.], [3., 4.]]), dx=0.5, axis=0)",
        "(np.trapz(np.array([1., 2., 3.])), np.trapz(np.array([1., 2., 3.]), x=np.array([4., 6., 9.])), np.trapz(np.array([[1., 2.], [3., 4.]], f32), dx=0.5, axis=0))"),
       ("gradient(array([1., 2., 4., 7., 11.])), gradient(array([1., 4., 9.]), 2.0)",
        "(np.gradient(np.array([1., 2., 4., 7., 11.], f32)), np.gradient(np.array([1., 4., 9.], f32), 2.0))"),
       ("gradient(array([[1., 2., 6.], [3., 4., 5.]])), gradient(array([[1., 2., 6.], [3., 4., 5.]]), axis=1)",
        "(list(np.gradient(np.array([[1., 2., 6.], [3., 4., 5.]], f32))), np.gradient(np.array([[1., 2., 6.], [3., 4., 5.]], f32), axis=1))"),
       ])

block("np_more", "products and polynomials (polymul, polyder and polyint give floats, as in JAX)",
      "", "",
      [("cross(array([1., 2., 3.]), array([4., 5., 6.])), cross(array([1, 2]), array([4, 5])), cross(array([[1, 0, 0], [0, 0, 2]]), array([0, 1, 0]))",
        "(np.cross(np.array([1., 2., 3.], f32), np.array([4., 5., 6.], f32)), np.cross(np.array([1, 2]), np.array([4, 5])), np.cross(np.array([[1, 0, 0], [0, 0, 2]]), np.array([0, 1, 0])))"),
       ("cross(array([1, 2]), array([4, 5, 6])), cross(array([[1, 2], [3, 4], [5, 6]]), array([[1, 0], [0, 1], [1, 1]]), axisa=0, axisb=0)",
        "(np.cross(np.array([1, 2]), np.array([4, 5, 6])), np.cross(np.array([[1, 2], [3, 4], [5, 6]]), np.array([[1, 0], [0, 1], [1, 1]]), axisa=0, axisb=0))"),
       ("kron(array([1, 10]), array([[1, 2], [3, 4]])), kron(eye(2), array([[1., 2.]]))",
        "(np.kron(np.array([1, 10]), np.array([[1, 2], [3, 4]])), np.kron(np.eye(2, dtype=f32), np.array([[1., 2.]], f32)))"),
       ("vander(array([1, 2, 3])), vander(array([1., 2.]), 3, increasing=True)", "(np.vander(np.array([1, 2, 3])), np.vander(np.array([1., 2.], f32), 3, increasing=True))"),
       ("polyval(array([3, 0, 1]), array([5, 1])), polyval(array([1., -2.]), 0.5)", "(np.polyval(np.array([3, 0, 1]), np.array([5, 1])), f32(np.polyval(np.array([1., -2.]), 0.5)))"),
       ("polyadd(array([1, 2]), array([9, 5, 4])), polysub(array([1, 2]), array([9, 5, 4])), polymul(array([1, 2]), array([1, 3]))",
        "(np.polyadd(np.array([1, 2]), np.array([9, 5, 4])), np.polysub(np.array([1, 2]), np.array([9, 5, 4])), np.polymul(np.array([1, 2]), np.array([1, 3])).astype(f32))"),
       ("polyder(array([1, 1, 1, 1]), 2), polyder(array([2., 1.]), 5), polyint(array([3., 2., 1.])), polyint(array([1.]), 2, k=array([2., 3.]))",
        "(np.polyder(np.array([1, 1, 1, 1]), 2).astype(f32), np.array([], f32), np.polyint(np.array([3., 2., 1.], f32)), np.polyint(np.array([1.], f32), 2, k=np.array([2., 3.])).astype(f32))"),
       ("vecdot(array([[1., 2.], [3., 4.]]), array([1., 1.])), matvec(ones((2, 3)), array([1., 2., 3.])), vecmat(array([1., 2.]), ones((2, 3)))",
        "(np.array([3., 7.], f32), np.array([6., 6.], f32), np.array([3., 3., 3.], f32))"),
       ])

block("np_more", "elementwise, creation, shapes, selection",
      "m = arange(6).reshape((2, 3))\nx = arange(6)",
      "m = np.arange(6).reshape((2, 3))\nx = np.arange(6)",
      [("signbit(array([-0.0, 1., -2., nan])), copysign(array([1., -2., 3.]), array([-0.0, 3., -1.])), signbit(array([-1, 2]))",
        "(np.signbit(np.array([-0.0, 1., -2., np.nan])), np.copysign(np.array([1., -2., 3.], f32), np.array([-0.0, 3., -1.], f32)), np.signbit(np.array([-1, 2])))"),
       ("fmax(array([nan, 1., 2.]), array([0., nan, 3.])), fmin(array([nan, 1., 2.]), array([0., nan, 3.]))",
        "(np.fmax(np.array([np.nan, 1., 2.], f32), np.array([0., np.nan, 3.], f32)), np.fmin(np.array([np.nan, 1., 2.], f32), np.array([0., np.nan, 3.], f32)))"),
       ("float_power(array([2, 3]), 2), logaddexp2(array([1., 3.]), array([1., -50.])), isposinf(array([inf, -inf, 1.])), isneginf(array([inf, -inf, 1.]))",
        "(np.float_power(np.array([2, 3]), 2).astype(f32), np.logaddexp2(np.array([1., 3.], f32), np.array([1., -50.], f32)), np.isposinf(np.array([np.inf, -np.inf, 1.])), np.isneginf(np.array([np.inf, -np.inf, 1.])))"),
       ("modf(array([-1.5, 2.25])), real(m), imag(array([1., 2.])), conj(m), iscomplexobj(m), isrealobj(m)",
        "(np.modf(np.array([-1.5, 2.25], f32)), m, np.zeros(2, f32), m, False, True)"),
       ("logspace(0, 2, 3), logspace(0, 3, 4, base=2), geomspace(1, 1000, 4), geomspace(-1, -100, 3)",
        "(np.logspace(0, 2, 3).astype(f32), np.logspace(0, 3, 4, base=2).astype(f32), np.geomspace(1, 1000, 4).astype(f32), np.geomspace(-1, -100, 3).astype(f32))"),
       ("concat([m, m]).shape, concat([m, m], axis=1), unstack(m, axis=1), matrix_transpose(ones((2, 3, 4))).shape",
        "((4, 3), np.concatenate([m, m], axis=1), tuple(m.T), (2, 4, 3))"),
       ("rollaxis(ones((3, 4, 5, 6)), 3, 1).shape, rollaxis(ones((3, 4, 5, 6)), 1, 4).shape, rollaxis(ones((3, 4, 5, 6)), 2).shape",
        "(np.rollaxis(np.ones((3, 4, 5, 6)), 3, 1).shape, np.rollaxis(np.ones((3, 4, 5, 6)), 1, 4).shape, np.rollaxis(np.ones((3, 4, 5, 6)), 2).shape)"),
       ("rot90(m), rot90(m, 2), rot90(m, -1), rot90(arange(8).reshape((2, 2, 2)), axes=(1, 2))",
        "(np.rot90(m), np.rot90(m, 2), np.rot90(m, -1), np.rot90(np.arange(8).reshape((2, 2, 2)), axes=(1, 2)))"),
       ("hsplit(arange(4), 2), hsplit(m, 3)[1], vsplit(m, 2)[0], dsplit(arange(8).reshape((1, 2, 4)), 2)[1]",
        "(np.hsplit(np.arange(4), 2), np.hsplit(m, 3)[1], np.vsplit(m, 2)[0], np.dsplit(np.arange(8).reshape((1, 2, 4)), 2)[1])"),
       ("broadcast_shapes((2, 1), (3,), ()), broadcast_shapes((5, 1, 4), (1, 3, 1))",
        "(np.broadcast_shapes((2, 1), (3,), ()), np.broadcast_shapes((5, 1, 4), (1, 3, 1)))"),
       ("select([x < 2, x > 4], [x, x ** 2], -1), select([x > 3], [x * 10])",
        "(np.select([x < 2, x > 4], [x, x ** 2], -1), np.select([x > 3], [x * 10]))"),
       ("compress(array([True, False, True]), m, axis=1), compress(array([1, 0, 1]), m), extract(m % 2 == 0, m)",
        "(np.compress(np.array([True, False, True]), m, axis=1), np.compress(np.array([1, 0, 1]), m), np.extract(m % 2 == 0, m))"),
       ("apply_along_axis(lambda v: sum(v ** 2), 1, m), apply_along_axis(lambda v: v[::-1], 0, m), apply_along_axis(lambda v: v * 2, -1, arange(8).reshape((2, 2, 2)))",
        "(np.apply_along_axis(lambda v: (v ** 2).sum(), 1, m), np.apply_along_axis(lambda v: v[::-1], 0, m), np.apply_along_axis(lambda v: v * 2, -1, np.arange(8).reshape((2, 2, 2))))"),
       ("cumulative_sum(array([1, 2, 3]), include_initial=True), cumulative_prod(m, axis=1, include_initial=True), cumulative_sum(m, axis=0)",
        "(np.array([0, 1, 3, 6]), np.array([[1, 0, 0, 0], [1, 3, 12, 60]]), np.cumsum(m, axis=0))"),
       ])

block("np_more", "statistics, windows, integers, construction",
      "c = array([[0., 1., 2.], [2., 1., 0.5]])\nxs = array([-1., 0.5, 2.])",
      "c = np.array([[0., 1., 2.], [2., 1., 0.5]], f32)\nxs = np.array([-1., 0.5, 2.], f32)",
      [("cov(c), cov(c[0], c[1]), cov(c, rowvar=False, bias=True), cov(array([1., 2., 4.]))",
        "(np.cov(c), np.cov(c[0], c[1]), np.cov(c, rowvar=False, bias=True).astype(f32), f32(np.cov(np.array([1., 2., 4.]))))"),
       ("corrcoef(c), cov(c, ddof=0)", "(np.corrcoef(c), np.cov(c, ddof=0))"),
       ("hanning(4), hamming(3), blackman(5), bartlett(5), hanning(1)",
        "(np.hanning(4).astype(f32), np.hamming(3).astype(f32), np.blackman(5).astype(f32), np.bartlett(5).astype(f32), np.hanning(1).astype(f32))"),
       ("fabs(array([-1, 2])), ldexp(array([1., 3.]), array([2, -1])), bitwise_invert(array([1, 0])), bitwise_left_shift(1, 3)",
        "(np.fabs(np.array([-1, 2])).astype(f32), np.ldexp(np.array([1., 3.], f32), np.array([2, -1])), np.invert(np.array([1, 0])), 8)"),
       ("gcd(array([12, 20, 0, 7]), array([18, -8, 5, 0])), lcm(array([4, 6, 0]), array([6, 8, 3]))",
        "(np.gcd(np.array([12, 20, 0, 7]), np.array([18, -8, 5, 0])), np.lcm(np.array([4, 6, 0]), np.array([6, 8, 3])))"),
       ("unwrap(array([0., 6., 0.5, 7.])), unwrap(array([[0., 4.], [1., 5.]]), axis=0), unwrap(array([0., 6., 0.5]), period=4)",
        "(np.unwrap(np.array([0., 6., 0.5, 7.], f32)), np.unwrap(np.array([[0., 4.], [1., 5.]], f32), axis=0), np.unwrap(np.array([0., 6., 0.5], f32), period=4))"),
       ("fromfunction(lambda i, j: i + 2 * j, (2, 3)), resize(array([1, 2, 3]), (2, 4)), resize(array([1, 2]), 3)",
        "(np.fromfunction(lambda i, j: i + 2 * j, (2, 3), dtype=f32), np.resize(np.array([1, 2, 3]), (2, 4)), np.resize(np.array([1, 2]), 3))"),
       ("trim_zeros(array([0, 0, 1, 0, 2, 0])), trim_zeros(array([0, 1, 0]), 'f'), trim_zeros(array([0, 1, 0]), 'b')",
        "(np.trim_zeros(np.array([0, 0, 1, 0, 2, 0])), np.trim_zeros(np.array([0, 1, 0]), 'f'), np.trim_zeros(np.array([0, 1, 0]), 'b'))"),
       ("piecewise(xs, [xs < 0, xs > 1], [lambda v: -v, lambda v: v * 10, 7.]), piecewise(xs, [xs > 0], [1., 0.])",
        "(np.piecewise(xs, [xs < 0, xs > 1], [lambda v: -v, lambda v: v * 10, 7.]), np.piecewise(xs, [xs > 0], [1., 0.]))"),
       ("choose(array([0, 1, 2, 1]), [array([1, 2, 3, 4]), array([10, 20, 30, 40]), array([100, 200, 300, 400])])",
        "np.choose(np.array([0, 1, 2, 1]), [np.array([1, 2, 3, 4]), np.array([10, 20, 30, 40]), np.array([100, 200, 300, 400])])"),
       ("choose(array([3, -1]), [array([1, 2]), array([5, 6])], mode='clip'), choose(array([3, -1]), [array([1, 2]), array([5, 6])], mode='wrap')",
        "(np.choose(np.array([3, -1]), [np.array([1, 2]), np.array([5, 6])], mode='clip'), np.choose(np.array([3, -1]), [np.array([1, 2]), np.array([5, 6])], mode='wrap'))"),
       ("isscalar(3.), isscalar(array([1])), promote_types(int32, float32), promote_types(uint8, int32)",
        "(True, False, 'float32', 'int32')"),
       ("block([[ones((2, 2)), zeros((2, 1))], [zeros((1, 3))]]), block([array([1, 2]), 3])",
        "(np.block([[np.ones((2, 2), f32), np.zeros((2, 1), f32)], [np.zeros((1, 3), f32)]]), np.block([np.array([1, 2]), 3]))"),
       ])

block("np_more", "insert and delete, partitions (JAX's order: the kth+1 smallest ascending, then the rest descending; argpartition's rest by index)",
      "a = arange(6).reshape((2, 3))\nx = array([3., 1., 4., 1., 5., 9., 2., 6.])",
      "a = np.arange(6).reshape((2, 3))\nx = np.array([3., 1., 4., 1., 5., 9., 2., 6.], f32)",
      [("insert(array([1, 2, 3]), 1, 9), insert(a, 1, array([7, 8]), axis=1), insert(a, array([0, 2]), 5)",
        "(np.insert(np.array([1, 2, 3]), 1, 9), np.insert(a, 1, [7, 8], axis=1), np.insert(a, [0, 2], 5))"),
       ("insert(a, slice(0, 2), array([[7], [8]]), axis=1), insert(a, -1, array([9, 9, 9]), axis=0), insert(x, [1, 1, 8], 0.5)",
        "(np.insert(a, slice(0, 2), [[7], [8]], axis=1), np.insert(a, -1, [9, 9, 9], axis=0), np.insert(x, [1, 1, 8], f32(0.5)))"),
       ("delete(array([1, 2, 3, 4]), 1), delete(a, [0, 2], axis=1), delete(a, -1, axis=0), delete(arange(6), slice(None, None, 2))",
        "(np.delete(np.array([1, 2, 3, 4]), 1), np.delete(a, [0, 2], axis=1), np.delete(a, -1, axis=0), np.delete(np.arange(6), slice(None, None, 2)))"),
       ("delete(arange(5), array([4, 0, -2]), assume_unique_indices=True), delete(a, array([True, False, True]), axis=1), delete(a, [1, 1])",
        "(np.delete(np.arange(5), [4, 0, -2]), np.delete(a, [True, False, True], axis=1), np.delete(a, [1, 1]))"),
       ("partition(x, 3), partition(x, -1), argpartition(x, 3)",
        "(np.concatenate([np.sort(x)[:4], np.sort(x)[4:][::-1]]), np.sort(x), np.array([1, 3, 6, 0, 2, 4, 5, 7]))"),
       ("partition(a.T, 0, axis=0), argpartition(array([[5, 1, 3], [2, 2, 0]]), 1)",
        "(np.array([[0, 3], [2, 5], [1, 4]]), np.array([[1, 2, 0], [2, 0, 1]]))"),
       ("apply_over_axes(sum, a, [0, 1]), apply_over_axes(lambda v, ax: cumsum(v, axis=ax), a, 1)",
        "(np.apply_over_axes(np.sum, a, [0, 1]), np.apply_over_axes(lambda v, ax: np.cumsum(v, axis=ax), a, 1))"),
       ("put_along_axis(a, array([[0], [2]]), 99, axis=1, inplace=False), put_along_axis(x, array([0, 7]), array([-1., -2.]), None, inplace=False)",
        "(np.array([[99, 1, 2], [3, 4, 99]]), np.array([-1., 1., 4., 1., 5., 9., 2., -2.], f32))"),
       ])

block("np_more", "bits, floating-point parts, polynomial division, roots to coefficients, fitting",
      "b = array([[1, 0, 1], [0, 1, 1]])\nxs = arange(6.)",
      "b = np.array([[1, 0, 1], [0, 1, 1]])\nxs = np.arange(6., dtype=f32)",
      [("packbits(b, axis=-1), packbits(b), packbits(b, axis=0, bitorder='little'), packbits(array([True] * 9))",
        "(np.packbits(b, axis=-1), np.packbits(b), np.packbits(b, axis=0, bitorder='little'), np.packbits([True] * 9))"),
       ("unpackbits(array([2, 255], dtype=uint8)), unpackbits(array([[2], [7]], dtype=uint8), axis=1, count=4, bitorder='little'), unpackbits(array([6], dtype=uint8), count=-5)",
        "(np.unpackbits(np.array([2, 255], u8)), np.unpackbits(np.array([[2], [7]], u8), axis=1, count=4, bitorder='little'), np.unpackbits(np.array([6], u8), count=-5))"),
       ("frexp(array([0., 1., -3., 0.1, 1e-40, 3e38]))",
        "tuple(np.frexp(np.array([0., 1., -3., 0.1, 1e-40, 3e38], f32)))"),
       ("frexp(array([inf, -inf]))[1], isnan(frexp(nan)[0]), frexp(8)",
        "(np.array([0, 0], i32), True, (f32(0.5), 4))"),
       ("spacing(array([1., -1., 0., 1000., 1e-40])), spacing(2)",
        "(np.spacing(np.array([1., -1., 0., 1000., 1e-40], f32)), np.spacing(f32(2)))"),
       ("polydiv(array([1., 3., 2.]), array([1., 1.])), polydiv(array([2., 3., 4.]), array([2., 1.])), polydiv(array([1, 0, -1]), array([2]))",
        "((np.array([1., 2.], f32), np.array([0., 0., 0.], f32)), (np.array([1., 1.], f32), np.array([0., 0., 3.], f32)), (np.array([0.5, 0., -0.5], f32), np.array([0., 0., 0.], f32)))"),
       ("polydiv(array([1., 3., 2.]), array([1., 1.]), trim_leading_zeros=True)[1], polydiv(array([1., 1., 2.]), array([1., 1.]), trim_leading_zeros=True)[1]",
        "(np.polydiv(np.array([1., 3., 2.], f32), np.array([1., 1.], f32))[1], np.polydiv(np.array([1., 1., 2.], f32), np.array([1., 1.], f32))[1])"),
       ("poly(array([1., 2.])), poly(array([2, -1, 3])), poly(array([[1., 2.], [3., 4.]])), poly(array([[2., 0., 1.], [0., 3., 0.], [1., 0., 2.]]))",
        "(np.poly([1., 2.]).astype(f32), np.poly([2, -1, 3]).astype(f32), np.poly(np.array([[1., 2.], [3., 4.]])).astype(f32), np.poly(np.array([[2., 0., 1.], [0., 3., 0.], [1., 0., 2.]])).astype(f32))"),
       ("polyfit(xs, 2 * xs ** 2 - xs + 1, 2), polyfit(xs, stack([xs, 3 * xs + 1], axis=1), 1)",
        "(np.polyfit(xs, 2 * xs ** 2 - xs + 1, 2).astype(f32), np.polyfit(xs, np.stack([xs, 3 * xs + 1], axis=1), 1).astype(f32))"),
       ("polyfit(xs, array([0., 1.1, 1.9, 3.2, 3.9, 5.1]), 1, w=array([1., 1., 2., 2., 1., 1.]))",
        "np.polyfit(xs, np.array([0., 1.1, 1.9, 3.2, 3.9, 5.1]), 1, w=np.array([1., 1., 2., 2., 1., 1.])).astype(f32)"),
       ])

block("np_more", "index tricks: mgrid, ogrid, r_, c_, s_, index_exp",
      "x = arange(10)", "x = np.arange(10)",
      [("mgrid[0:3, 0:2], mgrid[0:1:0.25], mgrid[-1:1:0.5, 0:2]", "(np.mgrid[0:3, 0:2], np.mgrid[0:1:0.25].astype(f32), np.mgrid[-1:1:0.5, 0:2].astype(f32))"),
       ("ogrid[0:2, 0:3], ogrid[1:3]", "(list(np.ogrid[0:2, 0:3]), np.ogrid[1:3])"),
       ("r_[1:4, 0, array([7, 8])], r_[array([[1, 2]]), array([[3, 4]])], r_[1.5, 2]",
        "(np.r_[1:4, 0, np.array([7, 8])], np.r_[np.array([[1, 2]]), np.array([[3, 4]])], np.r_[1.5, 2].astype(f32))"),
       ("r_['1', array([[1], [2]]), array([[3], [4]])], r_['0,2', array([1, 2]), array([3, 4])], r_['0,2,0', array([1, 2]), array([3, 4])]",
        "(np.r_['1', np.array([[1], [2]]), np.array([[3], [4]])], np.r_['0,2', np.array([1, 2]), np.array([3, 4])], np.r_['0,2,0', np.array([1, 2]), np.array([3, 4])])"),
       ("c_[array([1, 2]), array([3, 4])], c_[array([[1], [2]]), array([[3], [4]])], c_[array([1, 2]), 0:2]",
        "(np.c_[np.array([1, 2]), np.array([3, 4])], np.c_[np.array([[1], [2]]), np.array([[3], [4]])], np.c_[np.array([1, 2]), 0:2])"),
       ("x[s_[2:5]], x[s_[::3]], x[index_exp[7:]], s_[1:3], index_exp[2]", "(x[2:5], x[::3], x[7:], 'slice(1, 3, None)', (2,))"),
       ])

block("np_more", "vectorize (with vmap; NumPy's values), tensorsolve, tensorinv",
      "m = arange(6.).reshape((2, 3))\nt = arange(1., 17.).reshape((4, 2, 2)) + eye(4).reshape((4, 2, 2)) * 5",
      "m = np.arange(6., dtype=f32).reshape((2, 3))\nt = (np.arange(1., 17.).reshape((4, 2, 2)) + np.eye(4).reshape((4, 2, 2)) * 5).astype(f32)",
      [("vectorize(lambda a, b: a + b * 2)(m, array([1., 0., 2.])), vectorize(lambda x, y: sum(x * y), signature='(n),(n)->()')(m, array([1., 0., 2.]))",
        "(np.vectorize(lambda a, b: a + b * 2)(m, np.array([1., 0., 2.], f32)).astype(f32), np.vectorize(lambda x, y: np.sum(x * y), signature='(n),(n)->()')(m, np.array([1., 0., 2.], f32)).astype(f32))"),
       ("vectorize(lambda a, x: a @ x, signature='(n,k),(k)->(n)')(ones((2, 3, 2)), m[:, :2])",
        "np.vectorize(lambda a, x: a @ x, signature='(n,k),(k)->(n)')(np.ones((2, 3, 2), f32), m[:, :2])"),
       ("vectorize(lambda x: (min(x), max(x)), signature='(n)->(),()')(m), vectorize(lambda x, n: x ** n, excluded={1})(m[0], 3)",
        "(np.vectorize(lambda x: (np.min(x), np.max(x)), signature='(n)->(),()')(m), np.vectorize(lambda x, n: x ** n, excluded={1})(m[0], 3))"),
       ("linalg.tensorsolve(eye(6).reshape((6, 2, 3)) * 2.0, arange(6.)), linalg.tensorinv(t, ind=1)[0]",
        "(np.linalg.tensorsolve(np.eye(6).reshape((6, 2, 3)) * 2, np.arange(6.)).astype(f32), np.linalg.tensorinv(t, ind=1)[0])"),
       ])

block("np_more", "dtype predicates and small conveniences (NumPy's values; angle of real numbers, as ax has no complex)",
      "", "",
      [("angle(array([1., -2., 0.])), angle(-1, deg=True), iscomplex(array([1., 2.])), array_str(array([1, 2]))",
        "(np.angle(np.array([1., -2., 0.], f32)).astype(f32), f32(180.0), np.iscomplex(np.array([1., 2.])), '[1 2]')"),
       ("bitwise_count(array([0, 7, -8, 255])), bitwise_count(array([True, False]))", "(np.array([0, 3, 1, 8], u8), np.array([1, 0], u8))"),
       ("can_cast(int32, float64), can_cast(int32, float32), can_cast(float64, float32, 'same_kind'), can_cast(float32, int32, 'same_kind'), can_cast(uint8, int32), can_cast(int32, uint32, 'same_kind')",
        "(np.can_cast(i32, f64), np.can_cast(i32, f32), np.can_cast(f64, f32, 'same_kind'), np.can_cast(f32, i32, 'same_kind'), np.can_cast(u8, i32), np.can_cast(i32, u32, 'same_kind'))"),
       ("isdtype(float32, 'real floating'), isdtype(int32, ('bool', 'integral')), isdtype(uint8, 'signed integer'), isdtype(bool_, 'numeric'), isdtype(float64, float64)",
        "(True, True, False, False, True)"),
       ("iterable([1]), iterable(array(1)), iterable(array([1])), iterable(3), iterable('ab')",
        "(np.iterable([1]), np.iterable(np.array(1)), np.iterable(np.array([1])), np.iterable(3), np.iterable('ab'))"),
       ("mask_indices(3, triu), mask_indices(3, tril, -1)", "(np.mask_indices(3, np.triu), np.mask_indices(3, np.tril, -1))"),
       ("place(arange(6), arange(6) % 2 == 0, array([10, 20]), inplace=False), top_k(array([3., 1., 4., 1., 5.]), 2)",
        "(np.array([10, 1, 20, 3, 10, 5]), (np.array([5., 4.], f32), np.array([4, 2])))"),
       ("fromstring('1 2 3', sep=' '), fromstring('1,2,3', dtype=int32, sep=','), fromstring('1.5, 2', sep=',', count=1)",
        "(np.array([1., 2., 3.], f32), np.array([1, 2, 3]), np.array([1.5], f32))"),
       ])

block("np_more", "jnp.fft's real-valued helpers",
      "", "",
      [("jnp.fft.fftfreq(5), jnp.fft.fftfreq(4, 0.5), jnp.fft.rfftfreq(5), jnp.fft.rfftfreq(4, d=0.25)",
        "(np.fft.fftfreq(5).astype(f32), np.fft.fftfreq(4, 0.5).astype(f32), np.fft.rfftfreq(5).astype(f32), np.fft.rfftfreq(4, d=0.25).astype(f32))"),
       ("jnp.fft.fftshift(arange(5)), jnp.fft.ifftshift(arange(6)), jnp.fft.fftshift(arange(6).reshape((2, 3)), axes=1)",
        "(np.fft.fftshift(np.arange(5)), np.fft.ifftshift(np.arange(6)), np.fft.fftshift(np.arange(6).reshape(2, 3), axes=1))"),
       ])

# ---------------------------------------------------------------- Python builtins
block("builtins_py", "Python's general builtins",
      "", "",
      [("len([1, 2]), len((1,)), len('héllo'), len(zeros((4, 2))), len({'a': 1})", "(2, 1, 5, 4, 1)"),
       ("range(4), range(1, 4), range(10, 0, -3), list(range(0))", "(range(4), range(1, 4), range(10, 0, -3), [])"),
       ("zip([1, 2, 3], ('a', 'b')), enumerate(['x', 'y']), enumerate('ab', start=1)",
        "([(1, 'a'), (2, 'b')], [(0, 'x'), (1, 'y')], [(1, 'a'), (2, 'b')])"),
       ("list((1, 2)), tuple([1, 2]), list('ab'), list(arange(3)), tuple()",
        "([1, 2], (1, 2), ['a', 'b'], [0, 1, 2], ())"),
       ("dict(a=1, b=2), dict([('x', 1)]), dict({'k': 'v'}, k2=3)",
        "({'a': 1, 'b': 2}, {'x': 1}, {'k': 'v', 'k2': 3})"),
       ("str(1.5), str([1, 'a']), repr('a'), repr(2.0), str('s')", "('1.5', \"[1, 'a']\", \"'a'\", '2.0', 's')"),
       ("int(2.7), int(-2.7), int('12'), float(3), float('1.5'), bool(0), bool([1]), bool(None)",
        "(2, -2, 12, 3.0, 1.5, False, True, False)"),
       ("int(array([7])), float(array(2)), bool(array([1.]))", "(7, 2.0, True)"),
       ("sorted([3, 1, 2]), sorted(['b', 'a']), sorted([3, 1, 2], reverse=True), sorted([-3, 1, 2], key=abs)",
        "([1, 2, 3], ['a', 'b'], [3, 2, 1], [1, 2, -3])"),
       ("reversed([1, 2, 3]), map(lambda x: x * 2, [1, 2]), map(lambda a, b: a + b, [1, 2], [10, 20])",
        "([3, 2, 1], [2, 4], [11, 22])"),
       ("filter(lambda x: x > 1, [1, 2, 3]), filter(None, [0, 1, 2])", "([2, 3], [1, 2])"),
       ("hasattr(zeros(2), 'shape'), hasattr(zeros(2), 'nope'), getattr(zeros(2), 'ndim'), getattr(1, 'foo', 7)",
        "(True, False, 1, 7)"),
       ("abs(-3), round(2.5), round(3.14159, 2), sum([1, 2, 3]), all([True, 1]), any([0, 0])",
        "(3, f32(2.0), f32(3.14), 6, True, False)"),
       ("stop_gradient(array([1., 2.])), stop_gradient((1.0, [2.0]))", "(np.array([1., 2.], f32), (1.0, [2.0]))"),
       ("timeit(lambda: 1 + 1, number=3, repeat=2) >= 0", "True"),
       ("jnp.sum(jnp.arange(4)), np.float32, jnp.pi", "(6, 'float32', f32(np.pi))"),
       ])


# ---------------------------------------------------------------- the prelude (stdlib/prelude.ax)

def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return (e / e.sum(axis, keepdims=True)).astype(f32)


def _lse(x, axis=None, keepdims=False):
    m = x.max(axis, keepdims=True)
    r = np.log(np.exp(x - m).sum(axis, keepdims=True)) + m
    return (r if keepdims else np.squeeze(r, axis)).astype(f32)


block("prelude", "functions written in ax (stdlib/prelude.ax)",
      "x = array([-2., -0.5, 0., 1., 3.])\nm = array([[1., 2., 3.], [1., 1., 1000.]])",
      "x = np.array([-2., -0.5, 0., 1., 3.], f32)\nm = np.array([[1., 2., 3.], [1., 1., 1000.]], f32)",
      [("relu(x), relu6(x * 3), leaky_relu(x)",
        "(np.maximum(x, 0), np.clip(x * 3, 0, 6), np.where(x >= 0, x, f32(0.01) * x))"),
       ("relu(array([-1, 2]))", "np.array([0, 2])"),
       ("elu(x), selu(x)",
        "(np.where(x > 0, x, np.expm1(x)).astype(f32), (1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))).astype(f32))"),
       ("gelu(x), gelu(x, approximate=False)",
        "((0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))).astype(f32), np.array([-0.04550026, -0.15426877, 0., 0.8413447, 2.9959502], f32))"),
       ("silu(x), swish(x)", "((x / (1 + np.exp(-x))).astype(f32),) * 2"),
       ("softplus(x), log_sigmoid(x)", "(np.log1p(np.exp(x)).astype(f32), -np.log1p(np.exp(-x)).astype(f32))"),
       ("logaddexp(1.0, 2.0), logaddexp(x, x), jnp.logaddexp(-inf, -inf)",
        "(f32(np.logaddexp(1., 2.)), np.logaddexp(x, x), -np.inf)"),
       ("logsumexp(m), logsumexp(m, axis=1), logsumexp(m, axis=0, keepdims=True)",
        "(_lse(m), _lse(m, 1), _lse(m, 0, True))"),
       ("logsumexp(array([-inf, -inf]))", "-np.inf"),
       ("softmax(m), softmax(m, axis=0)", "(_softmax(m), _softmax(m, 0))"),
       ("log_softmax(m[0])", "np.log(_softmax(m[0]))"),
       ("sum(softmax(x)), softmax(x).dtype", "(f32(1.0), 'float32')"),
       ("standardize(m[0])", "((m[0] - m[0].mean()) / np.sqrt(m[0].var() + 1e-5)).astype(f32)"),
       ("average(m), average(m, axis=1, weights=array([1., 0., 1.]))",
        "(m.mean(), np.average(m, 1, [1., 0., 1.]).astype(f32))"),
       ("sinc(array([0., 0.5, 1.5])), heaviside(x, 0.5), logit(array([0.25, 0.5]))",
        "(np.sinc(np.array([0., 0.5, 1.5], f32)), np.heaviside(x, f32(0.5)), np.log(np.array([1/3, 1.], f32)))"),
       ])


def _filled(a, val, wrap=False):
    np.fill_diagonal(a, val, wrap=wrap)
    return a


def top_level_commas(expr):
    """Whether an ax expression has commas outside brackets and strings: print(a, b)."""
    depth, quote = 0, None
    for ch in expr:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            return True
    return False


def show(v, inside):
    """str() as ax prints a value; inside a container, strings are quoted and float scalars
    show as Python floats, as in Python."""
    if isinstance(v, str):
        return repr(v) if inside else v
    if isinstance(v, tuple):
        inner = ", ".join(show(x, True) for x in v)
        return "(" + inner + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(show(x, True) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {show(x, True)}" for k, x in v.items()) + "}"
    return str(v)


def expected_lines(ax_expr, value):
    """What print(ax_expr) writes: several arguments when the expression has top-level commas."""
    if top_level_commas(ax_expr):
        return " ".join(show(v, False) for v in value).split("\n")
    return show(value, False).split("\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for file, blocks in BLOCKS.items():
        out = [f"# Generated by tests/lang/gen_np_tests.py from NumPy's results; do not edit."]
        for comment, setup_ax, setup_py, cases in blocks:
            env = {"np": np, "f32": f32, "f64": f64, "i32": i32, "i64": i64, "u8": u8, "u32": u32,
                   "_lse": _lse, "_softmax": _softmax, "_filled": _filled}
            exec(setup_py, env)
            out.append(f"\n# {comment}")
            if setup_ax:
                out.append(setup_ax)
            for ax_expr, py_expr in cases:
                value = eval(py_expr, env)
                out.append(f"print({ax_expr})")
                out.extend("#> " + line for line in expected_lines(ax_expr, value))
        with open(os.path.join(here, file + ".ax"), "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
