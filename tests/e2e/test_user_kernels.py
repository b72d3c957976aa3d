"""The user kernels of bench/kernels_user.py compiled vs CPython (natively and interpreted) on small inputs, with
the IR facts their speed rests on; and ``** 2`` bit for bit against CPython (scalars: libm pow, which misrounds
some squares) and NumPy (arrays: np.square)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc
import bench.kernels  # noqa: F401,E402  (first: it imports its topic modules, kernels_user among them)
from bench import kernels_user as ku

from tests.util import assert_matches_python


def _small_args():
    rng = np.random.default_rng(7)
    d = rng.random((7, 7)) * 10.0
    np.fill_diagonal(d, 0.0)
    return {
        "stencil2d": [(rng.random((6, 5)), 3), (rng.random((2, 2)), 2)],
        "insertion_sort": [(rng.random(20),), (np.zeros(0),), (np.array([3.0, 1.0, 2.0, 1.0]),)],
        "histogram": [(rng.standard_normal(500), -2.0, 2.0, 7), (np.array([-1.0, 0.999999, 1.0, 0.5]), -1.0, 1.0, 4)],
        "column_stats": [(rng.random((9, 3)),), (rng.standard_normal((1, 2)),)],
        "floyd_warshall": [(d,)],
        "kmeans_assign": [(rng.random((30, 3)), rng.random((4, 3)))],
    }


CASES = [(k, args) for k in ku.KERNELS for args in _small_args()[k.name]]


@pytest.mark.parametrize("kernel, args", CASES, ids=[f"{k.name}-{i}" for i, (k, _) in enumerate(CASES)])
def test_user_kernel_matches_python(kernel, args):
    fn = scriptc.script(kernel.scriptc)
    assert_matches_python(fn, *args)
    assert_matches_python(fn, *args, runner=fn.interpret)


def test_user_kernels_numpy_versions_agree_with_the_loops():
    for kernel in ku.KERNELS:
        for args in _small_args()[kernel.name]:
            want = kernel.scriptc(*args)
            got = kernel.eager["numpy"](*args)
            assert kernel.check(got, want) is None, kernel.name


def test_stencil_and_floyd_accesses_are_proven():
    stencil = scriptc.script(ku.stencil2d)
    text = str(stencil.graph_for(*_small_args()["stencil2d"][0]))
    inner = [line for line in text.splitlines() if "kernels_user.py:27" in line and "aten::" in line]
    assert inner and all("checked=[0, 0]" in line for line in inner if "getitem" in line or "setitem" in line)
    floyd = scriptc.script(ku.floyd_warshall)
    text = str(floyd.graph_for(*_small_args()["floyd_warshall"][0]))
    assert "aten::getitem(" not in text and "aten::setitem(" not in text


# -- x ** 2 ----------------------------------------------------------------------------------------------------


@scriptc.script
def square(x: float) -> float:
    return x**2


@scriptc.script
def square_float_exponent(x: float) -> float:
    return x**2.0


@scriptc.script
def cube(x: float) -> float:
    return x**3


# squares libm's pow rounds differently from x * x (found by search on glibc 2.36; pow is not correctly rounded)
MISROUNDED = [
    float.fromhex(h)
    for h in (
        "-0x1.6c5b774b54876p+2",
        "0x1.51eebf84b8720p+2",
        "0x1.ceb7f723998b0p+1",
        "-0x1.2da4e80b86597p+0",
        "0x1.5494894425e04p-1",
    )
]
SPECIAL = [
    0.0,
    -0.0,
    math.inf,
    -math.inf,
    math.nan,
    1.0,
    -1.0,
    1e200,
    -1e200,
    1e154,
    1.3407807929942596e154,
    1e-160,
    5e-324,
    2.0**-485,
    2.0**511,
    3.0,
    float(2**27 - 1),
]


@pytest.mark.parametrize("fn", [square, square_float_exponent, cube])
@pytest.mark.parametrize("x", MISROUNDED + SPECIAL)
def test_scalar_power_is_cpythons(fn, x):
    assert_matches_python(fn, x)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_scalar_square_is_cpythons_property(x):
    assert_matches_python(square, x)


def test_constant_exponent_checks_are_folded():
    llvm = square.inspect_llvm(1.5)
    assert "fmod" not in llvm
    assert "llvm.fma" in llvm


@scriptc.script
def array_square(x: np.ndarray) -> np.ndarray:
    return x**2


@scriptc.script
def array_square_fused(x: np.ndarray) -> np.ndarray:
    return (x - 1.0) ** 2.0


@pytest.mark.parametrize("fn", [array_square, array_square_fused])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_array_square_is_numpys_square(fn, dtype):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(3000) * 10, MISROUNDED, SPECIAL]).astype(dtype)
    with np.errstate(all="ignore"):
        want = fn.py_func(x)
        got = fn(x)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))
