"""Edges of the subset that differential hunts found wrong: each checked against CPython (result, printed text,
exception type and message, mutations)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.modules import load_module
from tests.util import assert_matches_python

SOURCE = """
@scriptc.script
def count_range_of_bool(b: bool) -> int:
    s = 0
    for i in range(b):
        s += 1
    return s


@scriptc.script
def shout(v: int) -> int:
    print("index", v)
    return v


@scriptc.script
def element_then_value(x: np.ndarray, i: int, b: float):
    x[shout(i)] += 1.0 / b
    return x


@scriptc.script
def mask_then_value(x: np.ndarray, m: np.ndarray, b: float):
    x[m] += 1.0 / b
    return x


@scriptc.script
def first(xs: list[int]) -> int:
    return xs[0]


@scriptc.script
def extremes(x: np.ndarray):
    return np.min(x, axis=1), np.max(x, axis=0), np.max(x * 1, axis=1), np.min(x)
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_module(tmp_path_factory.mktemp("edges"), SOURCE)


@pytest.mark.parametrize("b", [True, False])
def test_range_of_a_bool(mod, b):
    assert_matches_python(mod.count_range_of_bool, b)


@pytest.mark.parametrize("args", [(np.zeros(3), 5, 0.0), (np.zeros(3), 1, 0.0), (np.zeros(3), 1, 2.0)])
def test_augmented_element_reads_the_element_before_the_value(mod, args):
    # CPython: x[i] (its IndexError, the index's side effects) before the right-hand side (its ZeroDivisionError)
    assert_matches_python(mod.element_then_value, *args)


@pytest.mark.parametrize("m", [np.ones(4, bool), np.array([True, False, True])])
def test_augmented_mask_checks_the_mask_before_the_value(mod, m):
    assert_matches_python(mod.mask_then_value, np.zeros(3), m, 0.0)


@pytest.mark.parametrize("v", [2**64, -(2**63) - 1])
def test_an_int_outside_64_bits_in_a_list_argument_is_an_overflow_error(mod, v):
    with pytest.raises(OverflowError, match="int too large to convert to a 64-bit int"):
        mod.first([v])


@pytest.mark.parametrize(
    "source, message",
    [
        ("def f(b: bool):\n    return np.zeros(b)\n", "an array's dimensions must be ints, not bools"),
        ("def f(b: bool):\n    return np.full((2, b), 1.0)\n", "an array's dimensions must be ints, not bools"),
        ("def f(x: np.ndarray):\n    return +(x > 0)\n", r"\+ of a bool array"),
    ],
)
def test_what_numpy_refuses_is_a_compile_error(tmp_path, source, message):
    m = load_module(tmp_path, source)
    with pytest.raises(scriptc.CompileError, match=message):
        scriptc.script(m.f)(*([True] if "b: bool" in source else [np.ones(2)]))


def test_float16_min_and_max_keep_the_first_of_equal_zeros(mod):
    # NumPy's float16 loops keep the first of equals (-0.0 against 0.0); its float32/64 ones the second
    rng = np.random.default_rng(3)
    for n in (2, 5, 33):
        x = rng.choice(np.array([0.0, -0.0, 1.0], np.float16), size=(n, 4))
        for got, expected in zip(mod.extremes(x), mod.extremes.py_func(x)):
            assert np.array_equal(got, expected) and np.array_equal(np.signbit(got), np.signbit(expected)), (x, got)
