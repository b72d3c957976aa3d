"""Where array data lives: small arrays (up to ``arrays.SMALL_DATA`` bytes) come from malloc, 16-byte aligned;
larger ones are 64-byte aligned (cache lines). Both are freed, and a loop making small arrays keeps no memory."""

from __future__ import annotations

import numpy as np

import scriptc
from scriptc.backend.llvm.lowering.arrays import SMALL_DATA, allocation_count, free_count


@scriptc.script
def filled(n: int) -> np.ndarray:
    return np.full(n, 1.5)


@scriptc.script
def damped(y0: np.ndarray, steps: int, h: float) -> np.ndarray:
    y = y0.copy()
    for _ in range(steps):
        k = np.array([y[1], -y[0] - 0.1 * y[1]])
        y = y + h * k
    return y


def test_alignment_by_size():
    for n in (1, 2, 3, SMALL_DATA // 8, SMALL_DATA // 8 + 1, 1000):
        x = filled(n)
        assert np.array_equal(x, np.full(n, 1.5))
        assert x.ctypes.data % (16 if 8 * n <= SMALL_DATA else 64) == 0, n


def test_small_arrays_in_a_loop_are_freed():
    y0 = np.array([1.0, 0.0])
    damped(y0, 3, 0.01)
    allocated, freed = allocation_count(), free_count()
    got = damped(y0, 1000, 0.01)
    assert allocation_count() - allocated - (free_count() - freed) == 1  # the result only
    want = y0.copy()
    for _ in range(1000):
        want = want + 0.01 * np.array([want[1], -want[0] - 0.1 * want[1]])
    assert np.array_equal(got, want)
