"""Vectorized NumPy expressions: element-wise chains, broadcasting,
reductions, dtype promotion, bool arrays, constructors, views.

Tolerances: NumPy evaluates float64 exp/log/sin/cos/tan/tanh with its own
SIMD kernels (AVX512 here), which may differ from libm by an ulp, and
np.sum/np.mean/np.prod/@ use pairwise summation or BLAS.  Cases relying on
those use TOL (rtol=1e-12, atol=1e-14); all other cases compare exactly.
NumPy computes ``x ** 2`` and ``x ** 0.5`` exactly (square / sqrt fast
paths), other float powers through its SIMD pow."""

import numpy as np
import scriptc

from . import case, rng

# tolerance for SIMD transcendentals / reordered reductions (see above)
TOL = dict(rtol=1e-12, atol=1e-14)


@scriptc.script
def elementwise_chain(x: np.ndarray) -> np.ndarray:
    return np.exp(-x * x) * np.sin(3.0 * x) + np.sqrt(np.abs(x)) - np.cos(x) / 2.0


case(elementwise_chain, lambda: (rng(0).standard_normal(20),), **TOL)


@scriptc.script
def elementwise_more(x: np.ndarray) -> np.ndarray:
    y = np.log(x) + np.tanh(x - 0.5) * np.tan(x)
    return np.floor(y * 10.0) + np.ceil(-y * 10.0) + y


case(elementwise_more, lambda: (rng(0).random((3, 4)) + 0.1,), **TOL)


@scriptc.script
def arith_exact(x: np.ndarray) -> np.ndarray:
    y = (x + 1.0) * (x - 2.0) / 3.0
    z = -y + x**2 - 2.0 * x
    w = np.maximum(z, 0.0) + np.minimum(y, x)
    return w // 0.25 + w % 0.5 + np.abs(z) ** 0.5


case(arith_exact, lambda: (rng(0).standard_normal((3, 4)),))


@scriptc.script
def broadcasting(a: np.ndarray, row: np.ndarray, col: np.ndarray):
    b = a + row
    c = a * col.reshape((3, 1))
    d = col.reshape((3, 1)) - row
    e = 2.0 - a
    return b, c, d, e


case(broadcasting, lambda: (rng(0).random((3, 4)), rng(1).random(4), rng(2).random(3)))


@scriptc.script
def outer_via_broadcast(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x.reshape((x.size, 1)) * y + x.reshape((4, 1))


case(outer_via_broadcast, lambda: (np.arange(4.0), np.arange(3.0)))


@scriptc.script
def reductions(x: np.ndarray):
    print(x.shape, x.ndim, x.size)
    return (np.sum(x), np.max(x), np.min(x), np.mean(x), np.prod(x), x.sum(), x.max(), x.min(), x.mean())


case(reductions, lambda: (rng(0).random((4, 5)),), **TOL)


@scriptc.script
def axis_reductions(x: np.ndarray):
    return (
        np.sum(x, axis=0),
        np.sum(x, axis=1),
        np.max(x, axis=0),
        np.min(x, axis=1),
        np.mean(x, axis=0),
        np.prod(x, axis=1),
    )


case(axis_reductions, lambda: (rng(0).random((4, 5)),), **TOL)


@scriptc.script
def int_reductions(x: np.ndarray):
    # integer reductions are exact
    return (
        np.sum(x),
        np.prod(x, axis=0),
        np.max(x),
        np.min(x, axis=1),
        np.mean(x),
        np.sum(x, axis=1),
        x.sum(),
        x.max(),
    )


case(int_reductions, lambda: (np.arange(1, 13).reshape((3, 4)),))


@scriptc.script
def dtype_promotion(f32: np.ndarray, i64: np.ndarray, i32: np.ndarray, f64: np.ndarray):
    a = f32 * 2.5  # float32 * python float -> float32
    b = i64 / 2  # int64 / int -> float64
    c = i64 + 1.5  # int64 + float -> float64
    d = i32 + i64  # int32 + int64 -> int64
    e = f32 + f64  # float32 + float64 -> float64
    f = i32 * 3  # int32 * python int -> int32
    g = i64 // 2  # stays int64
    h = f32.astype(np.float64) + 1.0
    i = i64.astype(np.float32) / 4.0
    j = i32 * 1.5  # int32 * python float -> float64
    return a, b, c, d, e, f, g, h, i, j


case(
    dtype_promotion,
    lambda: (rng(0).random(5).astype(np.float32), np.arange(5), np.arange(5, dtype=np.int32), rng(1).random(5)),
)


@scriptc.script
def bool_arrays(x: np.ndarray, y: np.ndarray):
    m = x > 0.5
    k = x <= y
    print(m)
    print(~m)
    print(x == y, x != y)
    cnt = np.sum(m)
    frac = np.mean(k)
    z = np.where(m, x, 0.0)
    w = np.where(k, x, y)
    both = m * k  # bool * bool -> bool
    anyb = m + k  # bool + bool -> bool (logical or)
    num = m + 1  # bool + int -> int64
    return cnt, frac, z, w, both, anyb, num, m.astype(np.float32)


case(bool_arrays, lambda: (rng(0).random(8), rng(1).random(8)))


@scriptc.script
def where_scalars(x: np.ndarray) -> np.ndarray:
    s = np.where(x > 0.0, 1.0, -1.0)
    r = np.where(x > 1.0, x, 1.0)
    return s * r


case(where_scalars, lambda: (rng(0).standard_normal(10),))


@scriptc.script
def relu_clip(x: np.ndarray) -> np.ndarray:
    y = np.maximum(x, 0.0)
    return np.minimum(y, 0.8) + np.maximum(x, -x)


case(relu_clip, lambda: (rng(0).standard_normal(12),))


@scriptc.script
def matmul_ops(a: np.ndarray, b: np.ndarray, v: np.ndarray):
    c = a @ b
    d = a @ v
    e = np.dot(v, v)
    f = np.dot(a, b)
    g = v @ v
    return c, d, e, f, g


case(matmul_ops, lambda: (rng(0).random((3, 4)), rng(1).random((4, 2)), rng(2).random(4)), **TOL)


@scriptc.script
def int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b


case(int_matmul, lambda: (np.arange(6).reshape((2, 3)), np.arange(6).reshape((3, 2))))


@scriptc.script
def constructors(n: int, m: int):
    a = np.zeros(n)
    b = np.ones((n, m))
    c = np.full((m, n), 7.5)
    d = np.zeros((2, m), dtype=np.int64)
    e = np.ones(n, dtype=np.float32)
    f = np.full(m, 3, dtype=np.int32)
    g = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            g[i, j] = i * 10 + j
    h = np.zeros(n, dtype=np.bool_)
    return a, b, c, d, e, f, g, h


case(constructors, lambda: (5, 3))


@scriptc.script
def ranges_arrays(n: int):
    a = np.arange(n)
    b = np.arange(2, n)
    c = np.arange(1, 20, 4)
    d = np.linspace(0.0, 1.0, 11)
    e = np.linspace(-2.0, 3.0, n)
    f = np.arange(n) * 0.5
    return a, b, c, d, e, f


case(ranges_arrays, lambda: (7,))


@scriptc.script
def like_and_attrs(x: np.ndarray, k: np.ndarray):
    z = np.zeros_like(x)
    o = np.ones_like(k)
    t = x.T
    print(t.shape, x.shape, k.shape, x.ndim, t.ndim, k.size)
    r = k.reshape((3, 2))
    s = k.reshape(6)
    return z, o, t, r, s, r.T


case(like_and_attrs, lambda: (rng(0).random((2, 3)), np.arange(6, dtype=np.int32)))


@scriptc.script
def copy_vs_alias(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    y[0] = 99.0
    z = x
    z[1] = -1.0  # mutates the argument through the alias
    v = x[2:4]
    v[0] = 42.0  # mutates the argument through the view
    return y + x


case(copy_vs_alias, lambda: (rng(0).random(5),))


@scriptc.script
def inplace_vs_rebind(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x *= 2.0  # in place: the caller sees it
    x += 1.0
    y = y * 2.0  # rebinding: the caller's array is unchanged
    y += 1.0  # now on the new array
    return x - y


case(inplace_vs_rebind, lambda: (rng(0).random(4), rng(1).random(4)))


@scriptc.script
def int_array_ops(x: np.ndarray):
    return x // 3, x % 3, x**2, -x, np.abs(x), x * 2 - 1, x / 4, ~x


case(int_array_ops, lambda: (np.array([-7, -3, -1, 0, 2, 5, 9]),))


@scriptc.script
def float_powers(x: np.ndarray):
    return x**2, x**0.5, x**3.0, 2.0**x, x**x


case(float_powers, lambda: (rng(0).random(6) + 0.5,), **TOL)


@scriptc.script
def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


case(softmax, lambda: (rng(0).standard_normal(8),), **TOL)


@scriptc.script
def normalize_rows(x: np.ndarray) -> np.ndarray:
    s = np.sum(x, axis=1)
    return x / s.reshape((4, 1))


case(normalize_rows, lambda: (rng(0).random((4, 3)),), **TOL)


@scriptc.script
def chained_reductions(x: np.ndarray, y: np.ndarray) -> float:
    return np.max(np.abs(x - y)) + np.sqrt(np.sum((x - y) ** 2)) / np.mean(y)


case(chained_reductions, lambda: (rng(0).random(16), rng(1).random(16)), **TOL)


@scriptc.script
def power_iteration(a: np.ndarray, iters: int):
    v = np.ones(a.shape[0])
    lam = 0.0
    for _ in range(iters):
        w = a @ v
        lam = np.sqrt(np.sum(w * w))
        v = w / lam
    return lam, v


case(power_iteration, lambda: (np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]), 50), **TOL)


@scriptc.script
def demo_square_loop(x: np.ndarray, k: int) -> np.ndarray:
    for _ in range(k):
        x = x * x
        print(x)
    return x


case(demo_square_loop, lambda: (rng(0).random(6), 3))


@scriptc.script
def demo_main(x: np.ndarray) -> np.ndarray:
    # the function of samples/loops_and_prints.py
    for _ in range(3):
        x = x * x
        print(x)
    return x


case(demo_main, lambda: (rng(0).random((2, 3)),))


@scriptc.script
def euler_decay(u: np.ndarray, dt: float, steps: int) -> np.ndarray:
    for _ in range(steps):
        u = u - dt * u + dt * np.minimum(u, 0.3)
    return u


case(euler_decay, lambda: (rng(0).random(10), 0.1, 25))


@scriptc.script
def scalar_numpy_funcs(x: np.ndarray):
    s = np.sqrt(2.0) + np.abs(-3.5) + np.floor(2.7) + np.ceil(-2.5)
    t = x[0, 0] * 2.0 + np.maximum(x[1, 1], x[2, 2])
    print(s, np.floor(-0.5), np.abs(-0.0))
    return s, t


case(scalar_numpy_funcs, lambda: (rng(0).random((3, 3)),))


@scriptc.script
def linspace_default_count(a: float, b: float) -> np.ndarray:
    return np.linspace(a, b) * 2.0 + np.linspace(a, b, num=3).sum()  # num: 50 when not given, as NumPy's


case(linspace_default_count, lambda: (2.0, 3.0))


@scriptc.script
def unpack_rows_and_keys(x: np.ndarray, key: np.ndarray, n: int):
    a, b = x  # an array unpacks along its first axis, as CPython iterates it
    p, q, r = a
    total = p * 100.0 + q * 10.0 + r
    for _ in range(n):
        key, sub = scriptc.random.split(key)  # the README's idiom
        total = total + float(np.sum(scriptc.random.normal(sub, (2,)) * b[:2]))
    return total, key


case(unpack_rows_and_keys, lambda: (rng(3).random((2, 3)), scriptc.random.key(7), 3))


@scriptc.script
def numpy_arithmetic_functions(x: np.ndarray, y: np.ndarray, k: float) -> np.ndarray:
    return (
        np.add(x, y) * np.multiply(k, x)
        - np.subtract(y, 1.0) / np.divide(x, 3.0)
        + np.floor_divide(y, 0.3)
        + np.remainder(x, 0.7)
    )


case(numpy_arithmetic_functions, lambda: (rng(5).random(7) + 0.5, rng(6).random(7), 1.5))


@scriptc.script
def logical_ufuncs(x: np.ndarray, y: np.ndarray, k: int):
    """NumPy's logical ufuncs: a number is true when nonzero (NaN too); bool results, fused with the rest."""
    inside = np.logical_and(x > 0.25, np.logical_not(y < 0.5))
    either = np.logical_or(x, y * 2.0)
    one = np.logical_xor(np.isnan(x), k)
    return inside, either, one, np.logical_and(x[0], k), np.logical_xor(x + 1.0, y).sum()


def _logical_args():
    x = rng(8).random(9)
    x[[1, 4]] = [np.nan, 0.0]
    return x, np.where(rng(9).random(9) > 0.5, rng(10).random(9), 0.0), 2


case(logical_ufuncs, _logical_args)
case(logical_ufuncs, lambda: (np.array([0, 3, -1, 0], np.int32), np.array([1, 0, 0, 2], np.int32), 0))
case(logical_ufuncs, lambda: (np.array([True, False, True]), np.array([False, False, True]), 1))
