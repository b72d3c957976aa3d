"""np.eye, np.identity, np.tri, np.triu, np.tril, np.outer, np.flip, np.fliplr, np.flipud (frontend/matrices.py):
natively and interpreted against NumPy over dtypes, shapes, offsets and non-contiguous views (values, dtype,
shape and, for the flips, that the result is a view as NumPy's is); NumPy's errors; gradients against the
adjoints NumPy computes; vmap against a loop."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import scriptc

from tests.util import assert_same_array

DTYPES = ["float64", "float32", "float16", "int64", "int32", "uint8", "bool"]


@scriptc.script
def triangles(m, k: int):
    return np.triu(m, k), np.tril(m, k), np.triu(m), np.tril(m, k=-k)


@scriptc.script
def builders(n: int, m: int, k: int):
    return (
        np.eye(n),
        np.eye(n, m, k),
        np.eye(n, M=m, k=k, dtype=np.int32),
        np.eye(n, dtype=bool),
        np.identity(n),
        np.identity(n, dtype=np.uint8),
        np.tri(n),
        np.tri(n, m, k, dtype=np.float32),
        np.tri(n, m, k=k, dtype=bool),
    )


@scriptc.script
def outer(a, b):
    return np.outer(a, b)


@scriptc.script
def flips(x):
    return np.flip(x), np.flip(x, 0), np.flip(x, -1), np.fliplr(x), np.flipud(x)


@scriptc.script
def flip_axes(x):
    return np.flip(x, axis=(0, 2)), np.flip(x, (-1,))


@scriptc.script
def flip_and_write(x):
    y = np.flipud(x)
    y[0] = 7
    return y


def values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-20, 20, size=shape)
    if dtype == "bool":
        return a > 0
    if dtype == "uint8":
        return np.abs(a).astype(dtype)
    return a.astype(dtype)


def same_tuple(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same_array(g, w)


def check(fn, *args):
    want = fn.py_func(*args)
    for run in (fn, fn.interpret):
        got = run(*args)
        same_tuple(got, want) if isinstance(want, tuple) else assert_same_array(got, want)


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.sampled_from([(0,), (1,), (4,), (3, 5), (5, 3), (4, 4), (2, 3, 4), (0, 3)]),
    k=st.integers(-6, 6),
    layout=st.sampled_from(["c", "transposed", "strided"]),
    seed=st.integers(0, 9),
)
def test_triu_tril_match_numpy(dtype, shape, k, layout, seed):
    m = values(dtype, shape, seed)
    if layout == "transposed":
        m = m.T
    elif layout == "strided" and m.ndim and m.shape[0] > 1:
        m = np.repeat(m, 2, axis=0)[::2]
    check(triangles, m, k)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 5), m=st.integers(0, 6), k=st.integers(-7, 7))
def test_eye_identity_tri_match_numpy(n, m, k):
    check(builders, n, m, k)


@pytest.mark.parametrize(
    "a_dtype,b_dtype", [("float64", "float32"), ("int32", "uint8"), ("bool", "bool"), ("float16", "int64")]
)
@pytest.mark.parametrize("a_shape,b_shape", [((3,), (4,)), ((2, 3), (5,)), ((0,), (3,)), ((1,), (2, 2))])
def test_outer_matches_numpy(a_dtype, b_dtype, a_shape, b_shape):
    a, b = values(a_dtype, a_shape, 1), values(b_dtype, b_shape, 2)
    check(outer, a, b)
    if a.ndim == 2:
        check(outer, a.T, b[::-1])  # non-contiguous operands are raveled in C order, as NumPy does


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (1, 5), (0, 2), (2, 3, 4)])
def test_flips_match_numpy(dtype, shape):
    x = values(dtype, shape, 3)
    check(flips, x)
    check(flips, x.T)
    if len(shape) == 3:
        check(flip_axes, x)


def test_flips_are_views_of_the_argument():
    x = np.arange(6.0).reshape(2, 3)
    for run in (flip_and_write, flip_and_write.interpret):
        a = x.copy()
        y = run(a)
        assert_same_array(y, flip_and_write.py_func(x.copy()))
        assert a[1].tolist() == [7.0, 7.0, 7.0]  # written through the view, as in NumPy


@scriptc.script
def eye_of(n: int):
    return np.eye(n)


@scriptc.script
def tri_of(n: int, m: int):
    return np.tri(n, m)


@scriptc.script
def fliplr_of(x):
    return np.fliplr(x)


@scriptc.script
def flip_axis(x):
    return np.flip(x, 2)


@scriptc.script
def flip_repeated(x):
    return np.flip(x, (0, 0))


@scriptc.script
def identity_of(n: int):
    return np.identity(n)


def test_negative_dimensions_raise_numpys_value_error():
    """np.eye and np.identity raise; np.tri gives empty axes."""
    for args in ((2, -3), (-1, 4), (-2, -2)):
        check(tri_of, *args)
    for fn, args in ((eye_of, (-1,)), (identity_of, (-3,))):
        with pytest.raises(ValueError, match="negative dimensions are not allowed"):
            fn.py_func(*args)
        for run in (fn, fn.interpret):
            with pytest.raises(ValueError, match="negative dimensions are not allowed"):
                run(*args)


@pytest.mark.parametrize(
    "fn,message",
    [
        (fliplr_of, "Input must be >= 2-d."),
        (flip_axis, "axis 2 is out of bounds for array of dimension 1"),
        (flip_repeated, "repeated axis"),
    ],
)
def test_rank_errors_name_the_line(fn, message):
    """NumPy raises these when called; the rank is known when the signature compiles, so the error is a
    CompileError at the call's line."""
    with pytest.raises(scriptc.CompileError, match=message) as info:
        fn(np.arange(3.0))
    line = fn.py_func.__code__.co_firstlineno + 2  # the decorator, the def, the return
    assert f"test_matrices.py:{line}:" in str(info.value)
    with pytest.raises((ValueError, np.exceptions.AxisError), match=message):
        fn.py_func(np.arange(3.0))


def test_gradients_are_the_adjoints_numpy_computes():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    a, b, c = rng.standard_normal(4), rng.standard_normal(5), rng.standard_normal((4, 5))

    g = scriptc.grad(upper_weighted)(x, w, 1)
    np.testing.assert_array_equal(g, np.triu(w, 1))
    g = scriptc.grad(lower_weighted)(x, w, -1)
    np.testing.assert_array_equal(g, np.tril(w, -1))
    ga, gb = scriptc.grad(outer_weighted, argnums=(0, 1))(a, b, c)
    np.testing.assert_allclose(ga, c @ b, rtol=1e-15)
    np.testing.assert_allclose(gb, a @ c, rtol=1e-15)
    np.testing.assert_array_equal(scriptc.grad(flipped_weighted)(x, w), np.flip(w))


@scriptc.script
def upper_weighted(x, w, k: int):
    return np.sum(np.triu(x, k) * w)


@scriptc.script
def lower_weighted(x, w, k: int):
    return np.sum(np.tril(x, k) * w)


@scriptc.script
def outer_weighted(a, b, c):
    return np.sum(np.outer(a, b) * c)


@scriptc.script
def flipped_weighted(x, w):
    return np.sum(np.fliplr(np.flipud(x)) * w)


def upper_one(x):
    return np.triu(x, 1) + np.outer(x[0], x[:, 0])


def test_vmap_matches_a_loop():
    xs = np.random.default_rng(1).standard_normal((3, 4, 4))
    f = scriptc.script(upper_one)
    got = scriptc.vmap(f)(xs)
    np.testing.assert_array_equal(got, np.stack([upper_one(x) for x in xs]))


@scriptc.script
def stacks(a, b, m):
    return (
        np.vstack((a, b)),
        np.hstack([a, b]),
        np.column_stack((a, b)),
        np.vstack((m, a)),
        np.column_stack((m.T, b)),
        np.hstack((m, m)),
        np.vstack([m]),
    )


@scriptc.script
def stack_list(n: int, m):
    rows = [m[0] * 0]
    for i in range(n):
        rows.append(m[i % m.shape[0]] + i)
    return np.vstack([np.vstack(rows), m]), np.hstack(rows), np.column_stack(rows), np.vstack(rows)


@scriptc.script
def vstack_of(a, b):
    return np.vstack((a, b))


@pytest.mark.parametrize(
    "a_dtype,b_dtype,m_dtype",
    [("float64", "float64", "float64"), ("int32", "float32", "uint8"), ("bool", "int64", "float16")],
)
@pytest.mark.parametrize("n", [0, 1, 4])
def test_stacks_match_numpy(a_dtype, b_dtype, m_dtype, n):
    a, b, m = values(a_dtype, (n,), 4), values(b_dtype, (n,), 5), values(m_dtype, (3, n), 6)
    check(stacks, a, b, m)
    check(stacks, a[::-1], b, np.asfortranarray(m))


def test_stack_of_a_list_value_matches_numpy():
    m = np.arange(12.0).reshape(3, 4)
    for n in (0, 2, 5):
        check(stack_list, n, m)


def test_stack_of_mismatched_arrays_raises_numpys_error():
    a, b = np.zeros(3), np.zeros(4)
    with pytest.raises(ValueError) as want:
        vstack_of.py_func(a, b)
    for run in (vstack_of, vstack_of.interpret):
        with pytest.raises(ValueError) as got:
            run(a, b)
        assert str(got.value) == str(want.value)


# -- np.diag, np.diagonal, np.trace ------------------------------------------------------------------------------
OFFSETS = (-3, -1, 0, 2)


@scriptc.script
def diagonals(x):
    return (
        np.diag(x),
        np.diag(x, -3),
        np.diag(x, k=-1),
        np.diag(x, 2),
        np.diagonal(x),
        np.diagonal(x, 1),
        x.diagonal(offset=-1),
        np.trace(x),
        x.trace(),
        np.trace(x, 2),
    )


@scriptc.script
def diagonals_3d(x):
    return np.diagonal(x, 1, 1, 2), x.diagonal(0, 2, 0), np.trace(x, -1, 0, 2), np.trace(x, axis1=1, axis2=-1)


@scriptc.script
def diag_of_vector(v):
    return np.diag(v), np.diag(v, -3), np.diag(v, k=1), np.diag(v, 2)


@settings(max_examples=50, deadline=None)
@given(
    dtype=st.sampled_from([d for d in DTYPES if d != "uint8"]),  # (uint8: below)
    shape=st.sampled_from([(0, 0), (1, 1), (3, 5), (5, 3), (4, 4), (0, 3), (2, 7)]),
    layout=st.sampled_from(["c", "transposed", "strided"]),
    seed=st.integers(0, 9),
)
def test_diag_diagonal_trace_match_numpy(dtype, shape, layout, seed):
    m = values(dtype, shape, seed)
    if layout == "transposed":
        m = m.T
    elif layout == "strided" and m.shape[0] > 1:
        m = np.repeat(m, 2, axis=0)[::2]
    check(diagonals, m)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 4])
def test_diag_of_a_vector_matches_numpy(dtype, n):
    check(diag_of_vector, values(dtype, (n,), n))
    check(diag_of_vector, values(dtype, (2 * n,), n)[::2])


def test_trace_of_unsigned_arrays_is_an_int():
    """NumPy's trace (its sum) of a uint8 array is uint64, which scriptc does not have: the full sum of an
    unsigned array is a Python int of the same value here, as np.sum's is."""
    m = values("uint8", (3, 4), 3)
    got, want = diagonals(m), diagonals.py_func(m)
    for g, w in zip(got, want):
        if np.asarray(w).dtype == np.uint64:
            assert type(g) is int and g == int(w)
        else:
            assert_same_array(g, w)


def test_diagonals_of_3d_arrays_match_numpy():
    check(diagonals_3d, values("float64", (2, 3, 4), 1))
    check(diagonals_3d, values("int32", (3, 2, 3), 2).transpose(2, 0, 1))


def test_trace_keeps_the_sign_of_zero():
    check(diagonals, np.array([[-0.0, 1.0], [2.0, -0.0]]))


def test_a_diagonal_is_a_view_that_sees_later_writes():
    @scriptc.script
    def later(x):
        d = np.diag(x)
        x[1, 1] = 42.0
        return d

    for run in (later, later.interpret):
        assert_same_array(run(np.zeros((3, 3))), later.py_func(np.zeros((3, 3))))


def test_writing_into_a_diagonal_is_numpys_read_only_error():
    @scriptc.script
    def write(x):
        d = np.diagonal(x)
        d[0] = 1.0
        return x

    with pytest.raises(scriptc.CompileError, match="read-only view") as e:
        write(np.ones((2, 2)))
    assert "d[0] = 1.0" in str(e.value) and "np.diagonal(x).copy()" in str(e.value)


def test_diag_errors_are_numpys():
    @scriptc.script
    def of_3d(x):
        return np.diag(x)

    @scriptc.script
    def same_axes(x):
        return np.diagonal(x, 0, 1, 1)

    with pytest.raises(scriptc.CompileError, match=r"Input must be 1- or 2-d\."):
        of_3d(np.ones((2, 2, 2)))
    with pytest.raises(scriptc.CompileError, match="axis1 and axis2 cannot be the same"):
        same_axes(np.ones((2, 2, 2)))


@scriptc.script
def trace_energy(x):
    return np.trace(x @ x) + np.sum(np.diag(x, 1) ** 2)


@scriptc.script
def diag_energy(v):
    return np.sum(np.diag(v, 1) @ np.ones((4, 4)))


def test_gradients_through_diagonals():
    x = np.arange(16.0).reshape(4, 4) / 7
    want = x.T + x.T  # d trace(x @ x) = 2 x^T
    want[np.arange(3), np.arange(1, 4)] += 2 * np.diag(x, 1)
    np.testing.assert_allclose(scriptc.grad(trace_energy)(x), want, rtol=1e-14)
    np.testing.assert_allclose(scriptc.grad(diag_energy)(np.arange(3.0)), np.full(3, 4.0))


def test_vmap_of_trace_and_diagonal():
    @scriptc.script
    def both(x):
        return np.trace(x), np.diagonal(x, 1)

    xs = np.arange(2 * 3 * 4.0).reshape(2, 3, 4)
    t, d = scriptc.vmap(both)(xs)
    np.testing.assert_array_equal(t, [np.trace(x) for x in xs])
    np.testing.assert_array_equal(d, np.stack([np.diagonal(x, 1) for x in xs]))
