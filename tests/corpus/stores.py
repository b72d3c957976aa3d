"""Assignments into arrays as NumPy makes them: the value broadcast to the target, and (NumPy's rule for
assignment, not for ufuncs) extra leading dimensions of length 1 dropped; any other length raises NumPy's
ValueError when the statement runs."""

import numpy as np

import scriptc

from . import case, raises, rng


@scriptc.script
def row_into_its_own_first_row(x: np.ndarray) -> np.ndarray:
    x[0] = x * 2.0
    return x


case(row_into_its_own_first_row, lambda: (rng().random((1, 3)),))


@scriptc.script
def matrix_into_a_vector(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a[:] = b
    return a


case(matrix_into_a_vector, lambda: (np.zeros(3), rng().random((1, 3))))
case(matrix_into_a_vector, lambda: (np.zeros(3, np.float32), rng().random((1, 1, 3))))
case(matrix_into_a_vector, lambda: (np.zeros(3, np.int32), np.arange(1).reshape((1, 1))))
raises(matrix_into_a_vector, ValueError, lambda: (np.zeros(3), rng().random((2, 3))))
raises(matrix_into_a_vector, ValueError, lambda: (np.zeros(3), rng().random((1, 4))))


@scriptc.script
def row_into_a_column(x: np.ndarray, col: np.ndarray, j: int) -> np.ndarray:
    x[:, j] = col
    return x


case(row_into_a_column, lambda: (np.zeros((3, 2)), rng().random((1, 3)), 1))
case(row_into_a_column, lambda: (np.zeros((3, 2)), rng().random((1, 1)), -2))


@scriptc.script
def into_a_strided_slice(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    x[1::2] = b[::-1]
    return x


case(into_a_strided_slice, lambda: (np.zeros(6), rng().random((1, 1, 3))))
