"""Element loops over arrays of every layout: the last index of an element address steps in items (arrays.py
``user_element_ptr``), so LLVM versions a loop on a unit stride; loops carrying no float are not unrolled by the IR
(passes/unroll.py) so that it vectorizes them. Results must not depend on the layout: C and Fortran order,
slices with steps, reversed axes, and dimensions of length 1 whose stride is not a multiple of the item size
(NumPy calls such arrays aligned)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import scriptc


@scriptc.script
def column_sums(x: np.ndarray) -> np.ndarray:
    n, m = x.shape
    out = np.zeros(m, x.dtype)
    for i in range(n):
        for j in range(m):
            out[j] += x[i, j]
    return out


@scriptc.script
def laplacian(u: np.ndarray) -> np.ndarray:
    n, m = u.shape
    out = np.zeros_like(u)
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            out[i, j] = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
    return out


@scriptc.script
def count_inside(x: np.ndarray, y: np.ndarray) -> int:
    hits = 0
    for i in range(x.shape[0]):
        if x[i] * x[i] + y[i] * y[i] <= 1.0:
            hits += 1
    return hits


@scriptc.script
def scale_rows(x: np.ndarray, w: np.ndarray) -> None:
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            x[i, j] = x[i, j] * w[j]


VIEWS = {
    "C": lambda a: a,
    "F": np.asfortranarray,
    "steps": lambda a: a[::2, ::3],
    "reversed": lambda a: a[::-1, ::-1],
    "transposed": lambda a: a.T,
    "column": lambda a: a[:, 4:5],
}


def _base(dtype):
    return (np.arange(9 * 14, dtype=np.float64).reshape(9, 14) % 7 - 3).astype(dtype)


def _layouts(dtype):
    one_odd = as_strided(np.arange(40, dtype=dtype), shape=(6, 1), strides=(np.dtype(dtype).itemsize * 3, 3))
    return {**{name: view(_base(dtype)) for name, view in VIEWS.items()}, "length-1 odd stride": one_odd}


DTYPES = ["float64", "float32", "int64", "int32", "uint8", "float16"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_column_sums_in_every_layout(dtype):
    for name, x in _layouts(dtype).items():
        want = np.zeros(x.shape[1], x.dtype)
        for row in x:
            want += row
        got = column_sums(x)
        assert got.dtype == want.dtype and np.array_equal(got, want), name


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_laplacian_in_every_layout(dtype):
    for name, u in _layouts(dtype).items():
        assert np.array_equal(laplacian(u), laplacian.interpret(u)), name


def test_in_place_writes_through_every_layout():
    w = np.linspace(0.5, 2.0, 14)
    for name, view in VIEWS.items():  # the view's base holds the writes, and nothing else changes
        got, want = _base("float64"), _base("float64")
        x = view(got)
        weights = w[: x.shape[1]]
        scale_rows(x, weights)
        if np.shares_memory(x, got):
            view(want)[...] *= weights
            assert np.array_equal(got, want), name
        else:
            assert np.array_equal(x, view(want) * weights), name


def test_count_over_strided_vectors():
    rng = np.random.default_rng(7)
    x, y = rng.random(10_001), rng.random(10_001)
    for a, b in [(x, y), (x[::3], y[1::3]), (x[::-1], y[::-1]), (x[:0], y[:0])]:
        assert count_inside(a, b) == int(np.count_nonzero(a * a + b * b <= 1.0))


def test_a_unit_stride_loop_is_vectorized_without_gathers():
    x = np.ones((64, 64))
    column_sums(x)
    scriptc.wait_optimized()
    ir = column_sums.inspect_llvm(x)
    assert "vector.body" in ir  # LLVM vectorized the inner loop ...
    assert "masked.gather" not in ir  # ... with contiguous loads, versioned on a unit stride


@scriptc.script
def read_at(x: np.ndarray, i: int, j: int) -> float:
    return x[i, j]


@scriptc.script
def write_at(x: np.ndarray, i: int, v: float) -> None:
    x[i] = v


@scriptc.script
def row_sum_at(x: np.ndarray, i: int) -> float:
    return np.sum(x[i])


def test_every_index_as_numpy_takes_it():
    """In range, negative (wrapped), and out of bounds on either side, with NumPy's IndexError message."""
    x = np.arange(12.0).reshape(3, 4)
    for i in range(-5, 5):
        for j in range(-6, 6):
            try:
                want = x[i, j]
            except IndexError as e:
                with pytest.raises(IndexError, match=str(e).replace("(", r"\(")):
                    read_at(x, i, j)
                continue
            assert read_at(x, i, j) == want
        try:
            want = float(np.sum(x[i]))
        except IndexError as e:
            with pytest.raises(IndexError, match=str(e)):
                row_sum_at(x, i)
        else:
            assert row_sum_at(x, i) == want
        y, z = np.zeros(3), np.zeros(3)
        try:
            z[i] = 7.0
        except IndexError as e:
            with pytest.raises(IndexError, match=str(e)):
                write_at(y, i, 7.0)
        else:
            write_at(y, i, 7.0)
            assert np.array_equal(y, z)
