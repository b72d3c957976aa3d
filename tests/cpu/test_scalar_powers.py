"""``x ** 2``, ``x ** 3``, ``x ** -1`` and ``x ** 0.5`` on floats: multiplications, a division or a square root where
that is provably libm's pow (``scalar_ops.pow_is``), CPython's path elsewhere. Bit for bit CPython's result on 10**6
random inputs per exponent (every binade the fast paths take and their edges), and on the special values."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scriptc


@scriptc.script
def square_all(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] ** 2
    return out


@scriptc.script
def cube_all(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] ** 3
    return out


@scriptc.script
def reciprocal_all(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] ** -1
    return out


@scriptc.script
def sqrt_all(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] ** 0.5
    return out


CASES = {2: (square_all, 500), 3: (cube_all, 320), -1: (reciprocal_all, 1010), 0.5: (sqrt_all, 1020)}


def _inputs(rng, span: int, n: int, positive: bool) -> np.ndarray:
    """Half uniform on [-4, 4], half log-uniform over 2**-span .. 2**span (past the fast paths' bounds)."""
    uniform = rng.uniform(-4.0, 4.0, n // 2)
    spread = np.ldexp(rng.uniform(1.0, 2.0, n - n // 2), rng.integers(-span, span, n - n // 2))
    x = np.concatenate([uniform, spread * rng.choice([-1.0, 1.0], spread.size)])
    return np.abs(x) if positive else x


def _python(x: np.ndarray, k) -> np.ndarray:
    out = np.empty_like(x)
    for i, v in enumerate(x.tolist()):
        try:
            out[i] = v**k
        except OverflowError:
            out[i] = np.nan  # (filtered out below: native code raises too)
    return out


@pytest.mark.parametrize("k", list(CASES))
def test_bit_identical_to_cpython_on_a_million_inputs(k):
    fn, span = CASES[k]
    x = _inputs(np.random.default_rng(abs(hash(k)) % 1000), span, 10**6, positive=k == 0.5)
    want = _python(x, k)
    keep = np.isfinite(want) & (want != 0.0)  # nothing here raises natively
    x, want = x[keep], want[keep]
    assert x.size > 900_000
    got = fn(x)
    wrong = np.flatnonzero(got.view(np.int64) != want.view(np.int64))
    assert wrong.size == 0, [(x[i], got[i], want[i]) for i in wrong[:5]]


SPECIALS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    0.5,
    3.0,
    math.inf,
    -math.inf,
    math.nan,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    1e-160,
    1e160,
    1e-103,
    1e103,
    2.0**-300,
    2.0**300,
    2.0**-1000,
    2.0**1000,
    2.0**-900,
    math.pi,
    -math.pi,
]


@pytest.mark.parametrize("k", list(CASES))
@pytest.mark.parametrize("v", SPECIALS)
def test_special_values_as_cpython(k, v):
    fn = CASES[k][0]
    try:
        want = v**k
    except (OverflowError, ZeroDivisionError, ValueError) as e:
        with pytest.raises(type(e), match=str(e).split(":")[0]):
            fn(np.array([v]))
        return
    if isinstance(want, complex):  # CPython's complex power: scriptc raises (docs/language.md)
        with pytest.raises(ValueError, match="is complex"):
            fn(np.array([v]))
        return
    got = fn(np.array([v]))[0]
    assert math.isnan(want) and math.isnan(got) or np.float64(got).view(np.int64) == np.float64(want).view(np.int64)
