"""Unaligned arrays (realign.py): computed with as NumPy computes with them, through an aligned twin; writes
reach the argument (also those made before an exception), and a result viewing the argument is a view of the
argument itself."""

import numpy as np
import pytest

import scriptc
from tests.util import assert_matches_python


def unaligned(values, dtype=np.float64) -> np.ndarray:
    """A writeable array holding ``values`` at an address one byte past an aligned one."""
    values = np.asarray(values, dtype=dtype)
    buf = bytearray(values.nbytes + 1)
    a = np.frombuffer(buf, dtype=dtype, offset=1, count=values.size).reshape(values.shape)
    a[...] = values
    assert not a.flags.aligned
    return a


@scriptc.script
def scale_in_place(x: np.ndarray, k: float) -> np.ndarray:
    x *= k
    return x + 1.0


@scriptc.script
def set_and_view(x: np.ndarray) -> np.ndarray:
    x[1] = 7
    return x[::2]


@scriptc.script
def total(x: np.ndarray) -> float:
    return np.sum(x * x)


@scriptc.script
def write_until_negative(x: np.ndarray) -> None:
    for i in range(x.shape[0]):
        if x[i] < 0:
            raise ValueError("negative")
        x[i] = x[i] * 10


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int16", "int64"])
def test_unaligned_arrays_compute_as_numpy(dtype):
    base = np.arange(12).reshape(3, 4)
    for make in (lambda: unaligned(base, dtype), lambda: unaligned(base, dtype)[::-1, 1::2]):
        assert_matches_python(scale_in_place, make(), 3)
        assert_matches_python(total, make())
        assert_matches_python(set_and_view, make()[0])


def test_the_result_views_the_argument_itself():
    x = unaligned(np.arange(5.0))
    view = set_and_view(x)
    assert np.shares_memory(view, x) and view.tolist() == [0.0, 2.0, 4.0]
    view[0] = 100.0
    assert x.tolist() == [100.0, 7.0, 2.0, 3.0, 4.0]


def test_writes_before_an_exception_reach_the_argument():
    for run in (write_until_negative, write_until_negative.py_func):
        x = unaligned([1.0, 2.0, -1.0, 4.0])
        with pytest.raises(ValueError, match="negative"):
            run(x)
        assert x.tolist() == [10.0, 20.0, -1.0, 4.0]


def test_a_read_only_unaligned_array():
    x = np.frombuffer(bytes(8 * 3 + 1), dtype=np.float64, offset=1)
    assert total(x) == 0.0
    with pytest.raises(ValueError, match="output array is read-only"):
        scale_in_place(x, 2.0)


def test_strides_that_are_not_multiples_of_the_item_size():
    """A twin with such strides would be unaligned again: a compact one; a result viewing it is refused."""
    raw = np.zeros(8 * 12 + 4, np.uint8)
    x = np.ndarray((4,), np.float64, buffer=raw, offset=1, strides=(12,))
    x[...] = [1.0, 2.0, 3.0, 4.0]
    assert total(x) == 30.0
    assert scale_in_place(x, 2.0).tolist() == [3.0, 5.0, 7.0, 9.0] and x.tolist() == [2.0, 4.0, 6.0, 8.0]
    with pytest.raises(TypeError, match="returned a view of an unaligned argument"):
        set_and_view(x)


def test_grad_and_vmap_take_unaligned_arrays():
    x = unaligned([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(scriptc.grad(total)(x), 2 * np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(scriptc.vmap(total)(unaligned(np.arange(6.0).reshape(2, 3))), [5.0, 50.0])
