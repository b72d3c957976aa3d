"""Integer-array (fancy) indexing: ``x[i]``, ``x[:, i]``, ``x[i, j]``, ``x[i] = v``, ``x[i] += v``, ``np.take``,
``np.add.at``. Native code and the interpreter against NumPy (values, dtypes, NumPy's errors), over dtypes,
layouts, repeated and negative indices; gradients against JAX; vmap against a loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc
from scriptc.errors import CompileError

jax.config.update("jax_enable_x64", True)


def fresh(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def outcome(fn, args):
    try:
        return "ok", fn(*fresh(args))
    except Exception as e:  # noqa: BLE001  (the outcome is compared)
        return type(e).__name__, str(e)


def assert_like_numpy(f, *args):
    """Native and interpreted, each on its own copies, against the Python function run by NumPy."""
    expected = outcome(f.py_func, args)
    for got in (outcome(f, args), outcome(f.interpret, args)):
        assert got[0] == expected[0], (got, expected)
        if got[0] != "ok":
            assert got[1] == expected[1]
            continue
        a, b = got[1], expected[1]
        assert isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, (a, b)
        np.testing.assert_array_equal(a, b)


@scriptc.script
def take_rows(x, i):
    return x[i]


@scriptc.script
def take_columns(x, i):
    return x[:, i]


@scriptc.script
def take_points(x, i, j):
    return x[i, j]


@scriptc.script
def take_split(x, i):
    return x[1, :, i]  # the int and the array are not adjacent: the array's axis goes first


@scriptc.script
def take_then_int(x, i):
    return x[i, 0]


@scriptc.script
def take_list(x):
    return x[[0, -1, 1]]


@scriptc.script
def put(x, i, v):
    x[i] = v
    return x


@scriptc.script
def put_columns(x, i, v):
    x[:, i] = v
    return x


@scriptc.script
def add_in_place(x, i, v):
    x[i] += v
    return x


@scriptc.script
def add_at(x, i, v):
    np.add.at(x, i, v)
    return x


@scriptc.script
def take_fn(x, i):
    return np.take(x, i)


@scriptc.script
def take_axis(x, i):
    return np.take(x, i, axis=1)


DTYPES = ["float64", "float32", "float16", "int64", "int32", "int8", "uint8", "bool"]
INDEX_DTYPES = ["int64", "int32", "int16", "int8", "uint8", "uint32"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_reads_every_dtype(dtype, index_dtype):
    x = (np.arange(24) % 7).astype(dtype).reshape(4, 6)
    i = np.array([3, 0, 3, 1], dtype=index_dtype)
    assert_like_numpy(take_rows, x, i)
    assert_like_numpy(take_columns, x, i)
    assert_like_numpy(take_points, x, i, i[::-1].copy())


def test_negative_indices_and_index_shapes():
    x = np.arange(30.0).reshape(5, 6)
    assert_like_numpy(take_rows, x, np.array([-1, -5, 2]))
    assert_like_numpy(take_rows, x, np.array([[0, 1], [-1, 2]]))  # a 2-d index: the result is (2, 2, 6)
    assert_like_numpy(take_rows, x, np.array([], dtype=np.int64))
    assert_like_numpy(take_rows, x, np.array(3))  # a 0-d index array
    assert_like_numpy(take_points, x, np.array([[0], [4]]), np.array([1, 2, -1]))  # broadcast to (2, 3)
    assert_like_numpy(take_then_int, x, np.array([4, 0]))
    assert_like_numpy(take_list, x)
    y = np.arange(60).reshape(3, 4, 5)
    assert_like_numpy(take_split, y, np.array([4, 0, 2]))
    assert_like_numpy(take_columns, y, np.array([[3, 0]]))


def test_views_and_strided_inputs():
    x = np.arange(48.0).reshape(6, 8)
    i = np.array([1, 5, 0, 2, 7, 7])[::2]  # a strided index array
    assert_like_numpy(take_rows, x.T, i)  # a transposed array
    assert_like_numpy(take_columns, x[::2, 1::2], i)
    assert_like_numpy(put, x.T.copy(order="F"), i, -1.0)
    assert_like_numpy(put_columns, x[:, ::2], np.array([0, 2]), np.arange(6.0)[:, None])


def test_errors_are_numpys():
    x = np.arange(12.0).reshape(3, 4)
    assert_like_numpy(take_rows, x, np.array([0, 3]))  # IndexError: index 3 is out of bounds for axis 0
    assert_like_numpy(take_rows, x, np.array([-4]))
    assert_like_numpy(take_columns, x, np.array([4]))  # ... for axis 1 with size 4
    assert_like_numpy(take_points, x, np.array([0, 1]), np.array([0, 1, 2]))  # shape mismatch
    assert_like_numpy(put, x, np.array([0, 1]), np.ones(3))  # value array of shape (3,) into (2,4)
    assert_like_numpy(put, x, np.array([0, 5]), 1.0)
    assert_like_numpy(take_fn, x, np.array([12]))
    with pytest.raises(CompileError, match="arrays used as indices must be of integer"):
        take_rows(x, np.array([0.0]))


def test_a_boolean_array_with_another_index_is_refused():
    with pytest.raises(CompileError, match="a boolean mask must be the only index"):
        take_points(np.ones((2, 2)), np.array([True, False]), np.array([0, 1]))


def test_stores_repeated_indices_last_write_stays():
    x = np.zeros((4, 3))
    assert_like_numpy(put, x, np.array([1, 2, 1]), np.array([[1.0], [2.0], [3.0]]))
    assert_like_numpy(put, x, np.array([-1, 0]), 7)  # an int into a float array
    assert_like_numpy(put, np.zeros(5, np.int32), np.array([0, 4]), 2.75)  # cast as NumPy's setitem: 2
    assert_like_numpy(put, np.zeros(5, np.uint8), np.array([1]), np.array([300]))  # wraps as NumPy's
    assert_like_numpy(put_columns, np.zeros((3, 4)), np.array([3, 0]), np.array([5.0, 6.0]))


def test_a_value_sharing_memory_is_read_as_copied_first():
    @scriptc.script
    def shift(x, i):
        x[i] = x[::-1][: i.shape[0]]
        return x

    assert_like_numpy(shift, np.arange(6.0), np.array([0, 1, 2, 3]))


def test_augmented_assignment_is_buffered_add_at_is_not():
    x = np.arange(5.0)
    i = np.array([1, 1, 3, 1])
    assert_like_numpy(add_in_place, x, i, 10.0)  # row 1 gets 10 once
    assert_like_numpy(add_at, x, i, 10.0)  # row 1 gets 30
    assert_like_numpy(add_at, np.zeros((3, 2), np.int32), np.array([0, 2, 0]), np.array([[1, 2], [3, 4], [5, 6]]))
    assert_like_numpy(add_at, np.zeros(4, np.float32), np.array([0, 0]), np.array([0.1, 0.2]))


def test_take():
    x = np.arange(12).reshape(3, 4)
    assert_like_numpy(take_fn, x, np.array([11, 0, -1]))  # of the flattened array
    assert_like_numpy(take_axis, x, np.array([[3, 1]]))
    assert_like_numpy(take_axis, x.T, np.array([2]))


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 6),
    cols=st.integers(1, 5),
    picks=st.lists(st.integers(-6, 5), max_size=7),
    axis=st.sampled_from([0, 1]),
)
def test_random_reads_and_writes(rows, cols, picks, axis):
    x = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    i = np.array(picks, dtype=np.int64)
    f = take_rows if axis == 0 else take_columns
    assert_like_numpy(f, x, i)
    assert_like_numpy(put if axis == 0 else put_columns, x, i, -2.5)
    assert_like_numpy(add_at, x, i, 1.5)


# -- transforms ----------------------------------------------------------------------------------------------------


@scriptc.script
def gathered_energy(x, i):
    return np.sum(x[i] * x[i])


@scriptc.script
def set_energy(x, v, i):
    y = x * 1.0
    y[i] = v
    return np.sum(y * y * y)


@scriptc.script
def add_at_energy(x, v, i):
    y = x * 1.0
    np.add.at(y, i, v * v)
    return np.sum(y * y)


def test_gradients_match_jax():
    x = np.linspace(0.5, 2.0, 6)
    i = np.array([1, 1, 4, -1, 0])
    v = np.array([2.0, -1.0, 3.0, 0.5, 1.5])
    np.testing.assert_allclose(
        scriptc.grad(gathered_energy)(x, i), jax.grad(lambda x: jnp.sum(x[i] * x[i]))(x), rtol=1e-14
    )
    got = scriptc.grad(set_energy, argnums=(0, 1))(x, v, i)
    want = jax.grad(lambda x, v: jnp.sum(x.at[i].set(v) ** 3), argnums=(0, 1))(x, v)
    for g, w in zip(got, want):  # of the repeated index 1, only the last write gets a gradient
        np.testing.assert_allclose(g, w, rtol=1e-14)
    got = scriptc.grad(add_at_energy, argnums=(0, 1))(x, v, i)
    want = jax.grad(lambda x, v: jnp.sum(x.at[i].add(v * v) ** 2), argnums=(0, 1))(x, v)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)


def test_vmap_of_a_gather_is_a_loop_of_gathers():
    x = np.arange(24.0).reshape(4, 6)
    i = np.array([[0, 5], [1, 1], [2, 0], [-1, 3]])
    got = scriptc.vmap(take_rows)(x, i)
    np.testing.assert_array_equal(got, np.stack([x[k][i[k]] for k in range(4)]))
    got = scriptc.vmap(take_rows, in_axes=(0, None))(x, i[0])
    np.testing.assert_array_equal(got, x[:, i[0]])
