"""Errors raised as NumPy raises them: an integer array to a negative power raises even when its result is
broadcast to an empty array (fused, no element of it would be computed), and an earlier statement's error
comes before a later one's (fusion must not move a raising operator past another)."""

import numpy as np

import scriptc

from . import raises


@scriptc.script
def negative_power_broadcast_to_empty(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.maximum(x**x, y)


raises(
    negative_power_broadcast_to_empty,
    ValueError,
    lambda: (np.array([[-1], [2]], dtype=np.int64), np.zeros(0, np.int64)),
)


@scriptc.script
def power_error_before_index_error(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    a = x**x
    b = y[8]
    return a + b


raises(power_error_before_index_error, ValueError, lambda: (np.array([[-1], [2]]), np.zeros(3, np.int64)))


@scriptc.script
def broadcast_error_before_index_error(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    a = x * y + 1.0
    b = z[8]
    return a * b


raises(broadcast_error_before_index_error, ValueError, lambda: (np.ones(2), np.ones(3), np.zeros(3)))


# An integer power raising half-way leaves the elements NumPy leaves: written in the target's memory order up to
# the failing one; nothing when the exponent shares memory with the target (NumPy computes into a temporary).
@scriptc.script
def power_in_place(x: np.ndarray, y: np.ndarray) -> None:
    x **= y


@scriptc.script
def power_of_itself_in_place(x: np.ndarray) -> None:
    x **= x


raises(power_of_itself_in_place, ValueError, lambda: (np.array([2, 3, -1, 4]),))
raises(power_of_itself_in_place, ValueError, lambda: (np.array([[2, 3], [-1, 4], [5, 2]]).T,))
raises(power_in_place, ValueError, lambda: (np.array([[2, 3, 5], [1, 4, 2]]).T, np.array([[1, 2, 3], [-1, 2, 2]]).T))
raises(power_in_place, ValueError, lambda: (np.array([2, 3, -1, 5])[::-1], np.array([1, 2, -3, 2])))
raises(power_in_place, ValueError, lambda: (np.array([2, 3, 4], np.int32), np.array([1, -1, 2], np.int16)))


def _overlapping():
    b = np.array([2, 3, 2, -1, 2, 2])
    return b[1:], b[:-1]


raises(power_in_place, ValueError, _overlapping)
