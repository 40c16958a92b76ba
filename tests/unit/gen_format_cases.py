"""Regenerates tests/unit/format_cases.inc: str() of arrays by NumPy 1.24 (run with the
system python3, which has numpy 1.24): python3 tests/unit/gen_format_cases.py > tests/unit/format_cases.inc"""
import math
import numpy as np

rng = np.random.default_rng(20240601)
CODE = {np.bool_: 'AX_BOOL', np.uint8: 'AX_U8', np.int32: 'AX_I32', np.uint32: 'AX_U32',
        np.int64: 'AX_I64', np.float32: 'AX_F32', np.float64: 'AX_F64'}
cases = []


def lit(v):
    if isinstance(v, np.float32) and np.isfinite(v) and v != int(v):
        return np.format_float_positional(v, trim='-') + 'f' if 1e-4 <= abs(v) < 1e6 \
            else np.format_float_scientific(v, trim='-') + 'f'
    v = float(v)
    if math.isnan(v): return 'NAN'
    if math.isinf(v): return 'INFINITY' if v > 0 else '-INFINITY'
    if v == int(v) and abs(v) < 2**53: return ('-0.0' if math.copysign(1, v) < 0 and v == 0
                                                else '%d' % int(v))
    return repr(v)


def cstr(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'


def add(a, transpose=False):
    a = np.asarray(a)
    shown = a.T if transpose else a
    vals = ', '.join(lit(x) for x in a.reshape(-1))
    shape = ', '.join(str(d) for d in a.shape) or '0'
    cases.append('{%s, %d, {%s}, %d, 0, 0, 0, (const double[]){%s}, %s},' % (
        CODE[a.dtype.type], a.ndim, shape, int(transpose), vals or '0', cstr(str(shown))))


def add_pattern(dtype, shape, scale, offset):
    n = int(np.prod(shape))
    a = (np.arange(n, dtype=np.float64) * scale + offset).astype(dtype).reshape(shape)
    cases.append('{%s, %d, {%s}, 0, 1, %s, %s, NULL, %s},' % (
        CODE[dtype], len(shape), ', '.join(map(str, shape)), lit(scale), lit(offset),
        cstr(str(a))))


f32, f64 = np.float32, np.float64
# The examples of the language contract and the brief.
add(np.array([0.25, 0.19661197, 0.10499357], f32))
add(np.array([1.0, 2.0], f32))
add(np.array([1e-10, 1.0]))
add(np.array([True, False, True]))
add(np.array([[1, 2], [3, 4]], np.int32))
add(np.array([1.5, np.nan, -np.inf]))
add(np.array([np.nan, np.inf]))
add(np.array([0.0, -0.0]))
add(np.array([-np.inf, np.inf, np.nan], f32))
add(np.array([1e-4], f32))
add(np.array([1e-4], f64))
add(np.array([99999992.0, 1.0], f32))
add(np.array([1e8 - 1, 1.0]))
add(np.array([1000.0, 1.0]))
add(np.array([1000.5, 1.0]))
# float32 max/min is exactly 1000 in float32 (the ratio in float64 is above 1000)
add(np.array([1.0238075256347656, 1023.8075561523438], f32))
add(np.array([1e16, -1e-300, 5e-324]))
add(np.array([3.4028235e38, 1.4e-45], f32))
add(np.array([0.1, 0.2, 0.30000000000000004]))
add(np.array([0.1, 0.2, 0.3], f32))
add(np.array([123456789.0, 0.5], f32))
add(np.array([1.23456789012, 2.0]))
add(np.array([[0.1, 2.5], [-3.25, 4.0]], f32), transpose=True)
add(np.arange(24, dtype=np.int64).reshape(2, 3, 4) - 12)
add(np.arange(24, dtype=np.int64).reshape(2, 3, 4), transpose=True)
add(np.array([0, 255, 7], np.uint8))
add(np.array([0, 4294967295], np.uint32))
add(np.array([-2147483648, 2147483647], np.int32))
add(np.zeros((2, 1, 2, 1)))
add(np.ones((1, 1, 1), f32))

# Rank 0, as str(np.float32(x)) etc.
for v in [0.4199743, 2.0, 1e-10, 1e16, 1e15, 123456.7, -0.0, 0.0, 1e-4, 9.9999e-5, 1.5e20]:
    add(np.array(v, f32)); add(np.array(v, f64))
for v in [np.inf, -np.inf, np.nan]: add(np.array(v, f32))
add(np.array(3, np.int32)); add(np.array(True)); add(np.array(False)); add(np.array(-7, np.int64))


def rand_floats(n, dt):
    k = rng.integers(0, 8)
    with np.errstate(all='ignore'):
        if k == 0: v = rng.standard_normal(n)
        elif k == 1: v = rng.standard_normal(n) * 10.0 ** rng.uniform(-9, 9)
        elif k == 2: v = 10.0 ** rng.uniform(-15, 15, n) * rng.choice([-1, 1], n)
        elif k == 3: v = np.round(rng.standard_normal(n) * 100, rng.integers(0, 4))
        elif k == 4:
            v = rng.standard_normal(n); m = rng.random(n)
            v[m < .2] = np.nan; v[(m >= .2) & (m < .3)] = np.inf; v[(m >= .3) & (m < .4)] = -np.inf
            v[(m >= .4) & (m < .5)] = -0.0
        elif k == 5: v = rng.uniform(0, 1, n) * rng.choice([1, 1000, 1001, 999.9, 1e8 - 1])
        elif k == 6: v = rng.integers(-10**6, 10**6, n) / 10.0 ** rng.integers(0, 8)
        else: v = rng.integers(-100, 100, n).astype(float)
        return v.astype(dt)


def rand_shape():
    r = rng.random()
    if r < 0.4: return (int(rng.integers(1, 10)),)
    if r < 0.5: return (int(rng.integers(10, 24)),)
    if r < 0.85: return tuple(int(x) for x in rng.integers(1, 4, 2))
    return tuple(int(x) for x in rng.integers(1, 3, int(rng.integers(3, 5))))


for i in range(165):
    dt = [np.bool_, np.uint8, np.int32, np.uint32, np.int64, f32, f64, f32, f64][rng.integers(0, 9)]
    shp = rand_shape(); n = int(np.prod(shp))
    if dt == np.bool_: v = rng.random(n) < .5
    elif dt in (f32, f64): v = rand_floats(n, dt)
    else:
        info = np.iinfo(dt); mag = int(rng.choice([10, 1000, 10**6, 2**31, 2**50]))
        v = rng.integers(max(info.min, -mag), min(info.max, mag), n, endpoint=True).astype(dt)
    add(np.asarray(v, dt).reshape(shp), transpose=len(shp) >= 2 and rng.random() < .25)

# Summaries (more than 1000 elements), built from arange so that C computes the same values.
add_pattern(f64, (2, 10, 100), 1.0, 0.0)
add_pattern(f32, (1001,), 0.1, -50.0)
add_pattern(np.int64, (1001,), 1.0, -500.0)
add_pattern(f64, (40, 40), 0.5, 0.0)
add_pattern(np.int32, (3, 4, 5, 20), 1.0, 0.0)
add_pattern(f32, (2000,), 1e-3, 1e-5)
add_pattern(np.bool_, (1200,), 1.0, 0.0)
add_pattern(f64, (7, 2, 3, 25), 1.5, -1000.0)
add_pattern(f64, (1, 1001), 1e6, 0.0)
add_pattern(f32, (101, 3, 4), 0.25, 0.0)

print('/* Generated by tests/unit/gen_format_cases.py from NumPy %s: str() of each array.\n'
      ' * {dtype, ndim, shape, transposed, pattern, scale, offset, values, expected} */'
      % np.__version__)
print('\n'.join(cases))
