"""An element read from an array of a narrow dtype is a NumPy scalar of that dtype, and its arithmetic is
NumPy's (NEP 50): it wraps in its dtype, a Python scalar meeting it is converted to it (weak), a float64 or int64
element meeting it wins (strong). Each program runs in CPython (the oracle), natively and in the interpreter;
results must agree in value and type (an np.float32 comes back as an np.float32), and so must the arrays the
program writes, what it prints and the exception it raises.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import scriptc
from scriptc.ir.types import NARROW_SCALARS

from tests.util import assert_matches_python

NARROW_INTS = ["int8", "int16", "int32", "uint8", "uint32"]
NARROW_FLOATS = ["float16", "float32"]


def check(fn, *args):
    """Native code and the interpreter against CPython, NumPy's warnings (overflow in a scalar) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_matches_python(fn, *args)
        assert_matches_python(fn, *args, runner=fn.interpret)


@scriptc.script
def accumulate(x: np.ndarray, acc: np.ndarray) -> None:
    for i in range(x.shape[0]):
        acc[0] += x[i]


@scriptc.script
def add_in_place(a: np.ndarray, k: int) -> None:
    for i in range(a.shape[0]):
        a[i] = a[i] + k


def test_int32_accumulator_wraps_as_numpy():
    """The issue's program: an int32 sum passing 2**31 wraps (it raised OverflowError)."""
    check(accumulate, np.full(4, 2**30, np.int32), np.zeros(1, np.int32))
    check(accumulate, np.array([200, 100, 7], np.uint8), np.zeros(1, np.uint8))


@pytest.mark.parametrize("dtype", NARROW_INTS)
def test_element_plus_python_int_wraps_in_the_dtype(dtype):
    info = np.iinfo(dtype)
    check(add_in_place, np.array([info.max, info.min, 0, 3], dtype), 200 if info.max >= 200 else 100)


def test_python_int_out_of_the_dtype_is_numpys_overflow_error():
    check(add_in_place, np.array([1, 2], np.int8), 1000)
    check(add_in_place, np.array([1, 2], np.uint8), -1)


@scriptc.script
def float_sum(x: np.ndarray):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@scriptc.script
def mean_by_iteration(x: np.ndarray):
    s = 0.0
    for v in x:
        s += v
    return s / len(x)


@pytest.mark.parametrize("dtype", NARROW_FLOATS + ["float64"])
def test_float_accumulators_round_in_the_dtype(dtype):
    """``s = 0.0`` then ``s += x[i]``: after the first addition ``s`` is a NumPy scalar of x's dtype."""
    x = np.random.default_rng(1).standard_normal(101).astype(dtype)
    check(float_sum, x)
    check(mean_by_iteration, x)


@scriptc.script
def sentinel(x: np.ndarray, threshold: int):
    best = -1
    for i in range(len(x)):
        if x[i] > threshold:
            best = x[i]
    return best


def test_a_sentinel_the_dtype_cannot_hold_makes_an_int():
    """``best`` is -1 (a Python int) or a uint8: the variable is an int holding either, as Python holds it."""
    for x in ([1, 2], [1, 9]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            py, native = sentinel.py_func(np.array(x, np.uint8), 5), sentinel(np.array(x, np.uint8), 5)
        assert int(py) == native and type(native) is int


@scriptc.script
def mixed(x: np.ndarray, y: np.ndarray):
    return x[0] < y[0], x[0] * y[0], x[0] + y.sum(), y[0] - x[0], x[0] * 2, x[0] * 0.1, x[0] == 0.1


@pytest.mark.parametrize(
    "x, y",
    [
        (np.array([0.1], np.float32), np.array([0.1])),
        (np.array([2**31 - 1], np.int32), np.array([5])),
        (np.array([200], np.uint8), np.array([5])),
        (np.array([0.5], np.float16), np.array([7])),
        (np.array([-3], np.int8), np.array([2.5], np.float32)),
    ],
)
def test_narrow_meets_wide_or_python_as_in_numpy(x, y):
    """A float64/int64 element is strong (np.float32 * np.float64 is float64); a Python scalar is weak."""
    check(mixed, x, y)


@scriptc.script
def operators(x: np.ndarray, k: int):
    a = x[0]
    b = x[1]
    return a + b, a - b, a * b, a // k, a % k, -a, abs(a), a < b, a >= k, a == b, a * k, b - k


@scriptc.script
def float_operators(x: np.ndarray, k: float):
    a = x[0]
    b = x[1]
    return a + b, a - b, a * b, a / b, a / k, -a, abs(a), a < b, a * k, b**2, a // k, a % k


@pytest.mark.parametrize("dtype", NARROW_INTS)
def test_integer_operators(dtype):
    info = np.iinfo(dtype)
    for pair in ([info.max, 3], [info.min, info.max], [7, 0]):
        for k in (2, -3 if info.min < 0 else 3, 1):
            check(operators, np.array(pair, dtype), k)


@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_float_operators(dtype):
    for pair in ([0.1, 0.7], [1e4, -3.3], [65000.0, 2.0] if dtype == "float16" else [3e38, 2.0]):
        for k in (0.3, -2.0, 0.0):
            check(float_operators, np.array(pair, dtype), k)


@scriptc.script
def shows(x: np.ndarray):
    print(x[0], str(x[0]), repr(x[0]), f"{x[0]}", (x[0], 1))
    return x[0] * 2


@pytest.mark.parametrize("dtype", NARROW_SCALARS)
def test_printing_is_numpys(dtype):
    """``print(x[0])`` of a float32 0.1 prints 0.1 (NumPy's shortest repr for float32), not 0.10000000149."""
    check(shows, np.array([0.1 if dtype.startswith("float") else 7], dtype))


@scriptc.script
def store(dst: np.ndarray, src: np.ndarray) -> None:
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@pytest.mark.parametrize(
    "dst, src",
    [
        ("uint8", "int32"),
        ("int8", "uint8"),
        ("int16", "float32"),
        ("float16", "float32"),
        ("uint8", "float32"),
        ("int32", "int8"),
    ],
)
def test_storing_a_numpy_scalar_casts_as_numpy(dst, src):
    """``dst[i] = src[i]``: a NumPy scalar stored converts as astype does (wrapping, truncating)."""
    values = np.array([300, -1, 2.5, 70000, -129], dtype=np.float64)
    with np.errstate(all="ignore"):
        source = values.astype(src)
    check(store, np.zeros(len(values), dst), source)


@scriptc.script
def conversions(x: np.ndarray):
    a = x[0]
    return int(a), float(a), bool(a), a * 1.5, a - True


@pytest.mark.parametrize("dtype", NARROW_SCALARS)
def test_conversions(dtype):
    check(conversions, np.array([3], dtype))


@scriptc.script
def extremes(x: np.ndarray):
    return max(x[0], x[1]), min(x[0], 2)


@pytest.mark.parametrize("dtype", NARROW_INTS)
def test_max_and_min_give_the_python_scalar(dtype):
    """Documented (docs/language.md): Python's max/min return one of their arguments, whose type depends on the
    values; scriptc returns the Python scalar holding it."""
    x = np.array([3, 5], dtype)
    assert extremes(x) == extremes.interpret(x) == tuple(int(v) for v in extremes.py_func(x))
    assert all(type(v) is int for v in extremes(x))


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(NARROW_INTS), data=st.data(), k=st.integers(-300, 300))
def test_integer_operators_property(dtype, data, k):
    info = np.iinfo(dtype)
    pair = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=2, max_size=2))
    check(operators, np.array(pair, dtype), k)


@scriptc.script
def squares(x: np.ndarray):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * 0.5
    return s * x[0] + np.sum(np.sin(x)) * x[1]


def test_gradients_through_float32_elements_match_jax():
    """float32 elements are differentiable (they were zero-gradient constants once NumPy scalars came in)."""
    import jax
    import jax.numpy as jnp

    def reference(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * x[i] * 0.5
        return s * x[0] + jnp.sum(jnp.sin(x)) * x[1]

    x = np.random.default_rng(3).standard_normal(7).astype(np.float32)
    want = np.asarray(jax.grad(reference)(jnp.asarray(x)))
    for got in (scriptc.grad(squares)(x), scriptc.grad(squares).interpret(x)):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@scriptc.script
def to_int32(a):
    return np.int32(a)


@scriptc.script
def to_uint8(a):
    return np.uint8(a)


@scriptc.script
def to_int64(a):
    return np.int64(a)


@scriptc.script
def to_float32(a):
    return np.float32(a) * 3


@scriptc.script
def to_float64_and_bool(a):
    return np.float64(a) / 3, np.bool_(a)


@scriptc.script
def elements_converted(x: np.ndarray, i: int):
    return np.int32(x[i]), np.uint8(x[i]), np.int64(x[i]), np.float32(x[i]), np.float16(x[i]), np.float64(x[i])


@pytest.mark.parametrize("fn", [to_int32, to_uint8, to_int64, to_float32, to_float64_and_bool])
@pytest.mark.parametrize("a", [2.7, -2.7, 0.0, float("nan"), float("inf"), 3e9, 1e30, 300, -1, 2**40, 7, True])
def test_numpy_scalar_types_convert_python_numbers_as_numpy(fn, a):
    """A Python float to an integer type is int() first (ValueError for NaN, OverflowError for inf and
    out-of-range values); a Python int out of the type's range is NumPy's OverflowError."""
    check(fn, a)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "float16"])
def test_numpy_scalar_types_cast_array_elements(dtype):
    """An element is a NumPy scalar, cast as astype casts it (wrapping, truncating), never range-checked."""
    with np.errstate(all="ignore"):
        x = np.array([3e9, -2.7, 300.5, 255, -1, 70000, 2.5], np.float64).astype(dtype)
    for i in range(len(x)):
        check(elements_converted, x, i)


def _pair_score(b1, b2):
    if b1 + b2 == 3:
        return b1 * b2
    return b1 - b2


def _scores(seq, score):
    total = seq[0] - seq[0]
    for i in range(seq.shape[0] - 1):
        total = total + score(seq[i], seq[i + 1])
    return total, score(seq[0], seq[-1])


pair_score = scriptc.script(_pair_score)


@scriptc.script
def scores(seq: np.ndarray):
    total = seq[0] - seq[0]
    for i in range(seq.shape[0] - 1):
        total = total + pair_score(seq[i], seq[i + 1])
    return total, pair_score(seq[0], seq[-1])


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64", "float32", "float64", "int16"])
def test_elements_passed_to_a_scripted_function_stay_numpy_scalars(dtype):
    """A scripted callee receives the np.int32 (np.uint8 ...) the caller's element is, as CPython passes it: the
    call compiles (NPBench nussinov's ``match(seq[i], seq[j])`` stopped at a VerifyError) and computes in the
    dtype, wrapping as NumPy does. (The reference is plain Python throughout: calling the scripted callee from
    Python would decay its NumPy scalar arguments, docs/language.md.)"""
    seq = np.array([1, 2, 0, 3, 1, 2, 250, 7], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _scores(seq, _pair_score)
        for got in (scores(seq), scores.interpret(seq)):
            assert [float(x) for x in got] == [float(x) for x in want], (got, want)
            if dtype in NARROW_SCALARS:  # computed in the dtype (float64/int64 values may be Python scalars)
                assert [np.asarray(x).dtype for x in got] == [np.asarray(x).dtype for x in want], (got, want)
