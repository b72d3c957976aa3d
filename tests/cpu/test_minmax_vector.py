"""float64 max/min reductions run a vectorized maxnum/minnum loop and fall back to the sequential one for NaN and
zero results (array_math.vector_minmax): NumPy's value in every case, and its bits wherever the result is neither
NaN nor zero. (For a zero result or a NaN the sequential loop decides the sign of zero and the NaN's payload, as
before; NumPy's SIMD loops may pick the other zero or NaN.)"""

from __future__ import annotations

import numpy as np
import pytest

import scriptc


@scriptc.script
def row_max(x: np.ndarray) -> np.ndarray:
    return x.max(axis=1)


@scriptc.script
def col_min(x: np.ndarray) -> np.ndarray:
    return np.min(x, axis=0)


@scriptc.script
def whole_max(x: np.ndarray) -> float:
    return np.max(x)


@scriptc.script
def whole_min(x: np.ndarray) -> float:
    return x.min()


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 5e-324, np.float64(np.nan) + 1.0])


def _same(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    plain = ~np.isnan(want) & (want != 0.0)
    return np.array_equal(got, want, equal_nan=True) and np.array_equal(
        got[plain].view(np.int64), want[plain].view(np.int64)
    )


def _sequential_max(row) -> float:
    """The sequential loop's rule: a NaN wins and stays (the first one), otherwise x replaces the best when x >= it
    (so of -0.0 and 0.0 the later one)."""
    best = -np.inf
    for x in row.tolist():
        if x >= best or (np.isnan(x) and not np.isnan(best)):
            best = x
    return best


@pytest.mark.parametrize("seed", range(40))
def test_bit_for_bit_as_numpy(seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 40))
    x = rng.standard_normal((rows, cols))
    k = int(rng.integers(0, 4))
    if k:  # sprinkle special values: NaNs, zeros of both signs, infinities
        where = rng.integers(0, x.size, int(rng.integers(1, x.size + 1)))
        x.flat[where] = rng.choice(SPECIAL if k == 1 else SPECIAL[:4], where.size)
    if seed % 5 == 0:
        x = np.where(rng.random(x.shape) < 0.5, 0.0, -0.0)  # all zeros: the sign of the last one
    for arr in (x, x[:, ::-1], np.asfortranarray(x)):
        assert _same(row_max(arr), arr.max(axis=1)), arr
        assert _same(col_min(arr), np.min(arr, axis=0)), arr
        assert _same(whole_max(arr), np.max(arr)), arr
        assert _same(whole_min(arr), arr.min()), arr
        # zeros and NaNs as the sequential loop gives them, bit for bit
        assert np.array_equal(row_max(arr).view(np.int64), np.array([_sequential_max(r) for r in arr]).view(np.int64))


def test_empty_raises_as_numpy():
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum which has no identity"):
        whole_max(np.zeros(0))
    assert row_max(np.zeros((0, 3))).shape == (0,)
