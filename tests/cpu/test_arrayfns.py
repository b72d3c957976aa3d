"""Array functions (np.isnan/isinf/isfinite, np.round, np.cumsum/cumprod, np.diff, np.sort/argsort) against
NumPy: natively and interpreted, every dtype, several ranks, layouts and axes; results equal bit for bit, with
NumPy's dtype."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import scriptc

from tests.util import assert_same_array

DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


same = assert_same_array


def check(fn, *args):
    want = fn.py_func(*args)
    same(fn(*args), want)
    same(fn.interpret(*args), want)


def data(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10
    if np.dtype(dtype).kind == "f":
        x = x.astype(dtype)
        flat = x.reshape(-1)
        if flat.size > 3:
            flat[[0, flat.size // 2]] = np.nan
            flat[1] = np.inf
            flat[2] = -0.0
        return x
    if dtype == "bool":
        return x > 0
    return np.round(x).astype(dtype)


@scriptc.script
def isnan(x: np.ndarray) -> np.ndarray:
    return np.isnan(x)


@scriptc.script
def isinf(x: np.ndarray) -> np.ndarray:
    return np.isinf(x)


@scriptc.script
def isfinite_fused(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x * 2.0) & ~np.isnan(x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (7,), (3, 5)])
def test_predicates(dtype, shape):
    x = data(dtype, shape)
    for fn in (isnan, isinf, isfinite_fused):
        check(fn, x)
    check(isnan, x.T if x.ndim == 2 else x[::-2])


@scriptc.script
def scalar_predicates(v: float) -> int:
    return int(math.isnan(v)) + 2 * int(math.isinf(v)) + 4 * int(math.isfinite(v)) + 8 * int(np.isnan(v))


@pytest.mark.parametrize("v", [0.0, -1.5, float("nan"), float("inf"), -float("inf"), 1e308])
def test_scalar_predicates(v):
    assert scalar_predicates(v) == scalar_predicates.py_func(v) == scalar_predicates.interpret(v)


def test_scalar_predicates_of_ints():
    @scriptc.script
    def f(n: int) -> bool:
        return math.isfinite(n) and not math.isnan(n)

    assert f(3) is True and f.interpret(3) is True


@scriptc.script
def round0(x: np.ndarray) -> np.ndarray:
    return np.round(x)


@scriptc.script
def round2(x: np.ndarray) -> np.ndarray:
    return np.round(x, decimals=2)


@scriptc.script
def round_neg(x: np.ndarray) -> np.ndarray:
    return x.round(decimals=-1)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_round_floats(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(2000) * 100).astype(dtype)
    halves = (np.arange(-20, 20) + 0.5).astype(dtype)  # half to even
    for fn in (round0, round2, round_neg):
        check(fn, x)
        check(fn, halves)
        check(fn, np.array([np.nan, np.inf, -np.inf, -0.0, 0.125, 0.375, 2.675, 1.005], dtype))


@pytest.mark.parametrize("dtype", ["int64", "int16", "uint8"])
def test_round_ints_copy(dtype):
    check(round2, data(dtype, (3, 4)))


def test_round_bools():
    check(round0, data("bool", (3, 4)))  # rint of bool is float16, as NumPy gives
    with pytest.raises(scriptc.CompileError, match="cannot cast ufunc 'multiply' output"):
        round2(data("bool", (3,)))


def test_round_int_negative_decimals_is_rejected():
    with pytest.raises(scriptc.CompileError, match="negative decimals"):
        round_neg(np.arange(5))


@scriptc.script
def cumsum_flat(x: np.ndarray) -> np.ndarray:
    return np.cumsum(x)


@scriptc.script
def cumsum_axis0(x: np.ndarray) -> np.ndarray:
    return np.cumsum(x, axis=0)


@scriptc.script
def cumprod_last(x: np.ndarray) -> np.ndarray:
    return x.cumprod(axis=-1)


def test_scan_of_uint8_needs_uint64():
    with pytest.raises(scriptc.CompileError, match="unsupported result dtype uint64"):
        cumsum_flat(np.arange(3, dtype=np.uint8))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "uint8"])
def test_scans(dtype):
    x = data(dtype, (4, 6), seed=2)
    if np.dtype(dtype).kind == "f":
        x = np.abs(x) / 8  # keep products finite; NaN and inf stay in
    for fn in (cumsum_flat, cumsum_axis0, cumprod_last):
        check(fn, x)
        check(fn, x[:, ::-2])
        check(fn, np.asfortranarray(x))
    check(cumsum_flat, data(dtype, (9,)))
    check(cumsum_flat, data(dtype, (0, 3)))


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_cumsum_keeps_a_leading_negative_zero(dtype):
    """NumPy's running sum starts from the first element: -0.0 stays -0.0 (0.0 + -0.0 would be +0.0)."""
    x = np.array([[-0.0, -0.0, 1.0], [-0.0, 2.0, -0.0]], dtype=dtype)
    check(cumsum_flat, x)
    check(cumsum_axis0, x)


@scriptc.script
def product(x: np.ndarray):
    return np.prod(x)


@scriptc.script
def product_axis0(x: np.ndarray) -> np.ndarray:
    return np.prod(x, axis=0)


@scriptc.script
def product_axis1(x: np.ndarray) -> np.ndarray:
    return x.prod(axis=1)


@scriptc.script
def fused_products(x: np.ndarray):
    return np.prod(x * 1.5), np.prod(x * 1.5, axis=1), np.prod(x * 1.5) + np.sum(x)  # alone, per row, shared


def test_float32_products_round_each_step_as_numpys():
    """NumPy multiplies float32 one element at a time in float32: the same bits, in C order and along either
    axis (a float64 accumulator differed in the last bits of most of these)."""
    rng = np.random.default_rng(3)
    for _ in range(40):
        x = (rng.standard_normal((int(rng.integers(1, 9)), int(rng.integers(1, 30)))) * 1.3).astype(np.float32)
        for arr in (x, x[:, ::2], x.T):
            assert_same_array(product_axis0(arr), product_axis0.py_func(arr))
            assert_same_array(product_axis1(arr), product_axis1.py_func(arr))
        for arr in (x, x[:, ::2]):  # (a whole array not in C order: NumPy multiplies in memory order)
            assert_same_array(np.float32(product(arr)), product.py_func(arr))
            for got, want in zip(fused_products(arr), fused_products.py_func(arr)):  # in fusion groups too
                assert_same_array(np.asarray(got, dtype=np.asarray(want).dtype), want)


@scriptc.script
def extremes(x: np.ndarray):
    return np.min(x), x.max(), np.max(x, axis=-1), x.min(axis=0), (x * 1.0).max(), np.argmax(x), np.argmin(x)


def test_min_and_max_take_the_last_of_equal_signed_zeros_as_numpy():
    """NumPy's maximum(acc, x) keeps x on a tie: of 0.0 and -0.0 the later one (small arrays: its scalar
    loop); argmax/argmin keep the first index."""
    rng = np.random.default_rng(4)
    for _ in range(30):
        x = np.where(rng.random((3, 4)) < 0.5, 0.0, -0.0)
        for got, want in zip(extremes(x), extremes.py_func(x)):
            assert_same_array(got, want)


def test_scan_wraps_like_numpy():
    x = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    check(cumsum_flat, x)
    check(cumprod_last, np.array([100, 100, 100], dtype=np.int8))


@scriptc.script
def diff1(x: np.ndarray) -> np.ndarray:
    return np.diff(x)


@scriptc.script
def diff2_axis0(x: np.ndarray) -> np.ndarray:
    return np.diff(x, n=2, axis=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0, 3), (1, 4), (2, 1), (5, 6)])
def test_diff(dtype, shape):
    x = data(dtype, shape, seed=3)
    check(diff1, x)
    check(diff2_axis0, x)
    check(diff1, x[::-1].T)


def test_diff_errors():
    with pytest.raises(scriptc.CompileError, match="n must be at least 1"):

        @scriptc.script
        def f(x: np.ndarray) -> np.ndarray:
            return np.diff(x, n=0)

        f(np.ones(3))


@scriptc.script
def sort_last(x: np.ndarray) -> np.ndarray:
    return np.sort(x)


@scriptc.script
def sort_flat(x: np.ndarray) -> np.ndarray:
    return np.sort(x, axis=None)


@scriptc.script
def argsort_axis0(x: np.ndarray) -> np.ndarray:
    return np.argsort(x, axis=0)


@scriptc.script
def argsort_last(x: np.ndarray) -> np.ndarray:
    return np.argsort(x)


def check_sort(x):
    for fn in (sort_last, sort_flat):
        want = np.sort(x, axis=-1 if fn is sort_last else None, kind="stable")
        same(fn(x), want)
        same(fn.interpret(x), want)
    if x.ndim:
        for fn, axis in ((argsort_axis0, 0), (argsort_last, -1)):
            want = np.argsort(x, axis=axis, kind="stable")
            same(fn(x), want)
            same(fn.interpret(x), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (2,), (17,), (3, 0), (4, 33), (2, 3, 5)])
def test_sort(dtype, shape):
    x = data(dtype, shape, seed=4)
    check_sort(x)
    if x.ndim == 2:
        check_sort(x.T)
        check_sort(x[:, ::-3])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, float("nan"), float("inf"), -float("inf")]), max_size=70))
def test_sort_ties_and_nans(values):
    check_sort(np.array(values, dtype=np.float64))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 3), max_size=300))
def test_argsort_is_stable(values):
    x = np.array(values, dtype=np.int32)
    same(argsort_last(x), np.argsort(x, kind="stable"))


@scriptc.script
def nonzero_rows(x: np.ndarray) -> np.ndarray:
    return np.argwhere(x)


@scriptc.script
def nonzero_1d(x: np.ndarray) -> np.ndarray:
    (i,) = np.nonzero(x)
    return i


@scriptc.script
def nonzero_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x.nonzero()


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_argwhere(dtype):
    x = data(dtype, (4, 5), seed=5)
    if x.dtype.kind != "b":
        x[x.real > 3] = 0
    check(nonzero_rows, x)
    check(nonzero_rows, x.T[::-1])
    check(nonzero_rows, x[0])
    check(nonzero_1d, x[:, 1])
    check(nonzero_1d, x[:0, 1])
    for got, want in zip(nonzero_2d(x), x.nonzero()):
        same(got, want)
    for got, want in zip(nonzero_2d.interpret(x), x.nonzero()):
        same(got, want)


def test_nonzero_of_0d_is_rejected():
    with pytest.raises(scriptc.CompileError, match="nonzero on 0d arrays"):
        nonzero_1d(np.array(1.0))
