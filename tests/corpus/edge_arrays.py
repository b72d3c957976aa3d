"""Array corner cases: aliasing between arguments, overlapping slice
assignment, iteration over an array that is modified or rebound, strided /
transposed arguments, empty arrays, row / column / strided assignment,
reshape(-1), float32 and int32 vectorized arithmetic, mixed-dtype where."""

import numpy as np
import scriptc

from . import case, rng

N = 5


def _same_twice(x):
    return x, x


@scriptc.script
def aliased_args(a: np.ndarray, b: np.ndarray) -> float:
    # called with a is b
    for i in range(1, len(a)):
        a[i] = b[i - 1] + 1.0
    return a[-1] + b[-1]


case(aliased_args, lambda: _same_twice(np.zeros(6)))


@scriptc.script
def aliased_vector_update(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a += b  # a is b: doubles in place
    return a * b


case(aliased_vector_update, lambda: _same_twice(np.arange(4.0)))


@scriptc.script
def overlapping_slice_assign(x: np.ndarray):
    x[1:] = x[:-1]  # NumPy copes with the overlap
    print(x)
    x[:-2] = x[2:] * 10.0
    print(x)
    x[1:] += x[:-1]
    print(x)


case(overlapping_slice_assign, lambda: (np.arange(1.0, 8.0),))


@scriptc.script
def iterate_while_modifying(x: np.ndarray) -> float:
    s = 0.0
    for v in x:
        x[-1] = 100.0  # iteration reads the live array
        s += v
    return s


case(iterate_while_modifying, lambda: (np.arange(5.0),))


@scriptc.script
def iterate_then_rebind(x: np.ndarray) -> float:
    s = 0.0
    for v in x:
        x = x * 2.0  # the loop keeps iterating the original array
        s += v
    return s + x[0]


case(iterate_then_rebind, lambda: (np.arange(1.0, 5.0),))


@scriptc.script
def strided_arg_update(a: np.ndarray) -> np.ndarray:
    n, m = a.shape
    for i in range(n):
        for j in range(m):
            a[i, j] = a[i, j] * 10.0 + i - j
    return np.sum(a, axis=0)


case(strided_arg_update, lambda: (np.asfortranarray(rng(0).random((3, 4))),))
case(strided_arg_update, lambda: (rng(0).random((4, 3)).T,))


@scriptc.script
def empty_arrays(x: np.ndarray) -> float:
    s = 0.0
    for v in x:
        s += v
    for i in range(len(x)):
        s += 1.0
    print(x, x.shape, x.size, np.sum(x), np.prod(x), x * 2.0)
    return s + np.sum(x)


case(empty_arrays, lambda: (np.zeros(0),))


@scriptc.script
def row_col_assign(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    a[1, :] = r
    a[:, 0] = -1.0
    a[2, 1:3] = 7.0
    a[0][2] = 5.0  # chained indexing writes through the row view
    b = a[::2, ::2]
    b[0, 0] = 42.0
    return b


case(row_col_assign, lambda: (np.zeros((3, 4)), np.arange(4.0)))


@scriptc.script
def strided_assign(x: np.ndarray) -> np.ndarray:
    x[::2] = -1.0
    x[1::3] = x[1::3] * 10.0
    y = x[::-1].copy()
    x[-1] = 0.5
    return y


case(strided_assign, lambda: (np.arange(10.0),))


@scriptc.script
def reshape_forms(x: np.ndarray):
    a = x.reshape((2, -1))
    b = x.reshape((-1, 3))
    c = a.reshape(-1)
    d = x.reshape((2, 3, 2))
    a[0, 0] = 99.0  # reshape of a contiguous array is a view
    return a, b.T, c, d.T, d.shape, d.T.shape, x.T.shape


case(reshape_forms, lambda: (np.arange(12.0),))


@scriptc.script
def index_with_array_elements(x: np.ndarray, idx: np.ndarray) -> float:
    s = 0.0
    for k in idx:
        s += x[k]
        x[k] = -x[k]
    return s + x[idx[0]] + x[idx[-1] - 1]


case(index_with_array_elements, lambda: (np.arange(10.0), np.array([3, 7, 1, 9])))


@scriptc.script
def float32_vectorized(f: np.ndarray, g: np.ndarray):
    a = f + g
    b = f * g - f / g
    c = np.sqrt(f)
    d = np.maximum(f, g)
    e = f * 0.1
    h = np.zeros(3, dtype=np.float32) + 1.5
    w = np.where(f > g, f, g)
    print(a)
    print(e)
    return a, b, c, d, e, h, w, np.abs(-f), f.T, f.copy()


case(float32_vectorized, lambda: (rng(0).random(6).astype(np.float32), rng(1).random(6).astype(np.float32) + 0.5))


@scriptc.script
def float32_reductions(f: np.ndarray):
    return np.sum(f), np.mean(f), np.max(f), f.min(), np.sum(f, axis=0)


case(float32_reductions, lambda: (rng(0).random((5, 3)).astype(np.float32),), rtol=1e-6)


@scriptc.script
def int32_and_bool_arith(k: np.ndarray, m: np.ndarray):
    a = k + k
    b = k * 2 - 3
    c = k // 2
    d = k % 3
    e = k / 2
    f = m * k
    g = m + 0.5
    h = np.where(m, k, -k)
    i = np.sum(m)
    j = np.sum(k)
    print(k[1] + 1, m[0], not m[1], m[2] + 1)
    return a, b, c, d, e, f, g, h, i, j, np.max(k), np.mean(k)


case(
    int32_and_bool_arith, lambda: (np.arange(-3, 3, dtype=np.int32), np.array([True, False, True, True, False, False]))
)


@scriptc.script
def mixed_dtype_where(k: np.ndarray, x: np.ndarray):
    a = np.where(k > 2, k, x)
    b = np.where(x > 0.5, 1, 0)
    c = np.where(k > 2, 1.5, k)
    d = np.maximum(k, 2.5)
    e = np.minimum(k, x)
    f = k @ x
    g = x @ k
    return a, b, c, d, e, f, g


# x holds multiples of 0.25, so k @ x is exact whatever the summation order
case(mixed_dtype_where, lambda: (np.arange(5), rng(0).integers(0, 8, 5) * 0.25))


@scriptc.script
def constructors_inferred(n: int):
    a = np.full(3, 7)
    b = np.full((2, 2), 2.5)
    c = np.full(n, True)
    d = np.arange(0.0, 1.0, 0.25)
    e = np.linspace(0, 1, 5)
    f = np.ones((n, 2), dtype=np.bool_)
    g = np.zeros((2, n), dtype=np.float32)
    h = np.arange(n, 0, -2)
    i = np.empty(0)
    return a, b, c, d, e, f, g, h, i


case(constructors_inferred, lambda: (N,))


@scriptc.script
def bool_reductions(x: np.ndarray):
    m = x > 0.5
    return np.sum(m, axis=0), np.mean(m), np.max(m), np.min(m, axis=1), np.sum(m)


case(bool_reductions, lambda: (rng(0).random((3, 4)),))


@scriptc.script
def int_array_returns(x: np.ndarray):
    return len(x), x.shape[0], x.size, x.ndim, x[0] > x[1], x[2], x.shape


case(int_array_returns, lambda: (np.array([4, 9, -2, 7]),))


@scriptc.script
def transpose_3d(t: np.ndarray):
    u = t.T
    print(u.shape)
    u[0, 1, 1] = -5.0  # writes through to t[1, 1, 0]
    return u * 1.0, t[1, 1, 0]


case(transpose_3d, lambda: (np.arange(24.0).reshape((2, 3, 4)),))


@scriptc.script
def print_array_layouts(x: np.ndarray):
    print(x * 1e-5)
    print(x * 1e5)
    print(-x)
    print(x.reshape((3, 4)) / 3.0)
    print(np.arange(1200.0).reshape((40, 30)))
    print(np.arange(6) == 3, np.ones(2, dtype=np.int32))
    print(x[0:0], np.zeros((2, 0)))


case(print_array_layouts, lambda: (np.arange(12.0),))


@scriptc.script
def matmul_shapes(a: np.ndarray, v: np.ndarray):
    # integer-valued floats: exact whatever the summation order
    return v[0:3] @ a, a.T @ a @ v, np.dot(v, v), a @ a.T, a[:, 1:3] @ a[0:2, :]


case(matmul_shapes, lambda: (np.arange(12.0).reshape((3, 4)), np.arange(4.0)))


@scriptc.script
def setitem_casting(k: np.ndarray, b: np.ndarray, f: np.ndarray, x: np.ndarray):
    k[0] = 2.7  # float into int64: truncates
    k[1] = -2.7
    k[2] = True
    k[3:5] = x[0:2] * 10.0  # float slice into int slice
    k[5] += 0.5  # k[5] = k[5] + 0.5, truncated on store
    b[0] = 2  # int into bool: True
    b[1] = 0.0
    b[2:4] = 5
    f[0] = 0.1  # rounded to float32
    f[1:3] = x[0:2]
    f += 1.0  # stays float32
    x[0] = 3  # int into float64
    x[1:3] = k[0:2]


case(
    setitem_casting,
    lambda: (np.arange(6), np.zeros(4, dtype=np.bool_), np.zeros(3, dtype=np.float32), rng(0).random(4)),
)


@scriptc.script
def slice_bounds_clamp(x: np.ndarray, n: int):
    print(x[-100:100], x[5:2], x[n:], x[: n + 100], x[-n:], x[::-2], x[-1:-4:-1])
    print(x[n - 1 : 0 : -1], x[n:n], x[100:], x[:-100], len(x[2 : n + 100]))
    y = x[1:100]
    y[0] = -1.0
    return y.shape, x


case(slice_bounds_clamp, lambda: (np.arange(6.0), 4))


@scriptc.script
def shrink_in_loop(x: np.ndarray) -> float:
    s = 0.0
    while len(x) > 1:
        s += x[0] * len(x)
        x = x[1:]
    for v in x[::-1]:
        s += v
    return s


case(shrink_in_loop, lambda: (np.arange(1.0, 7.0),))


@scriptc.script
def h_identity(x: np.ndarray) -> np.ndarray:
    return x


@scriptc.script
def h_tail(x: np.ndarray) -> np.ndarray:
    return x[1:]


@scriptc.script
def helper_returns_view(x: np.ndarray) -> np.ndarray:
    y = h_identity(x)
    y[0] = 50.0  # y is x
    t = h_tail(x)
    t[0] = 60.0  # t is a view of x
    t += 1.0
    return h_identity(x) * 1.0


case(helper_returns_view, lambda: (np.zeros(4),))


@scriptc.script
def iterate_slices_and_ranges(x: np.ndarray) -> float:
    s = 0.0
    for v in x[1:]:
        s += v
    for v in np.arange(3):
        s += v * 10
    for v in np.linspace(0.0, 1.0, 5):
        s += v
    for v in x:
        for w in x:
            if w > v:
                s += w - v
    for v in x:
        if v > 2.5:
            return s + v
    return s


case(iterate_slices_and_ranges, lambda: (np.array([0.5, 3.0, 1.5, 2.75]),))


@scriptc.script
def negative_axis_reductions(t: np.ndarray):
    return (
        np.sum(t, axis=-1),
        np.max(t, axis=2),
        np.min(t, axis=0),
        np.mean(t, axis=1),
        t.shape[-1],
        np.sum(t[0], axis=-1),
    )


case(negative_axis_reductions, lambda: (np.arange(24.0).reshape((2, 3, 4)),))


@scriptc.script
def fstring_extras(x: float, n: int, b: bool, a: np.ndarray):
    print(f"{x=} {n=}")
    print(f"{x!r} {n!r} {b!s}")
    print(f"{n:,} {x:,.2f} {n:_} {b:d} {n:#x} {n:#o} {n:b}")
    print(f"{x:10.3e}|{x:<12g}|{x:^12.2%}|{-x:=+10.2f}|{n:*>8}")
    print(f"{a.sum():.2f} {a[1]:5.1f} {len(a):03d} {a.shape}")
    print(f"{'nested'} {x * 2:.1f}{n}{b}")


case(fstring_extras, lambda: (1234.5678, 1234567, True, np.arange(4.0)))


@scriptc.script
def while_on_array_condition(x: np.ndarray) -> int:
    it = 0
    while x[0] < 100.0 and it < 50:
        x[0] = x[0] * 2.0 + x[1]
        it += 1
    return it


case(while_on_array_condition, lambda: (np.array([1.0, 0.5]),))
