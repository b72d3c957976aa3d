"""Arrays in native code: every layout NumPy produces, NumPy's dtype rules, views and mutation, errors, and
memory that stays flat over many calls."""

import gc
import math

import numpy as np
import pytest

import scriptc
from tests.util import assert_matches_python


@scriptc.script
def weighted_sum(x: np.ndarray, w: np.ndarray) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            s += x[i, j] * w[j]
    return s


@scriptc.script
def chain(x: np.ndarray) -> np.ndarray:
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.5 * x


@scriptc.script
def broadcast(x: np.ndarray, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    return x * row + col - 1


def layouts():
    base = np.arange(30.0).reshape(5, 6) / 7.0
    return {
        "c": base.copy(),
        "fortran": np.asfortranarray(base),
        "negative": base[::-1, ::-2],
        "strided": base[1::2, ::3],
        "transposed": base.T,
    }


@pytest.mark.parametrize("name", list(layouts()))
def test_layouts(name):
    x = layouts()[name]
    assert_matches_python(weighted_sum, x, np.linspace(1, 2, x.shape[1]))
    assert_matches_python(chain, x, rtol=1e-15)
    assert_matches_python(broadcast, x, np.arange(x.shape[1], dtype=np.float32), np.ones((x.shape[0], 1)))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "int16", "uint8", "bool"])
def test_dtypes_follow_numpy(dtype):
    rng = np.random.default_rng(0)
    x = (rng.random(12) * 50).astype(dtype)
    y = (rng.random(12) * 50).astype(dtype)
    if dtype == "bool":
        assert_matches_python(bool_ops, x, y)
    else:
        assert_matches_python(mixed_ops, x, y)


@scriptc.script
def bool_ops(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return x + y, x & ~y, np.maximum(x, y)


@scriptc.script
def mixed_ops(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return x + y, x * 3, x // (y + 1), np.maximum(x, y), x > y


@scriptc.script
def mutate(x: np.ndarray) -> np.ndarray:
    x[1:] += x[:-1]  # overlapping in-place update reads the old values
    y = x[::2]
    y[0] = -1.0
    x[2:4] = x[1:3]  # overlapping slice assignment
    return y


def test_views_and_mutation_visible_to_caller():
    assert_matches_python(mutate, np.arange(8.0))
    x = np.arange(8.0)
    y = mutate(x)
    assert np.shares_memory(x, y) and y.base is not None


@scriptc.script
def same(x: np.ndarray) -> np.ndarray:
    return x


def test_returning_an_argument_returns_the_same_object():
    x = np.ones(3)
    assert same(x) is x


@scriptc.script
def reductions(x: np.ndarray) -> tuple[float, float, float, int, np.ndarray, np.ndarray, bool]:
    return np.sum(x), np.max(x), np.mean(x), np.argmin(x), np.sum(x, axis=0), x.max(axis=1), np.any(x > 3.0)


def test_reductions():
    assert_matches_python(reductions, np.random.default_rng(2).random((4, 5)) * 10, rtol=1e-12)
    with_nan = np.array([[1.0, np.nan], [3.0, 0.5]])
    assert_matches_python(reductions, with_nan, rtol=1e-12)


@scriptc.script
def read(x: np.ndarray, i: int) -> float:
    return x[i]


def test_index_error_has_numpys_message_and_points_at_the_source():
    with pytest.raises(IndexError) as info:
        read(np.zeros(3), 5)
    assert str(info.value) == "index 5 is out of bounds for axis 0 with size 3"
    note = info.value.__notes__[0]
    assert "test_native_arrays.py:" in note and "return x[i]" in note
    assert read(np.arange(3.0), -1) == 2.0


@scriptc.script
def bad_broadcast(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y


def test_broadcast_error_matches_numpy():
    with pytest.raises(ValueError) as info:
        bad_broadcast(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError) as expected:
        bad_broadcast.py_func(np.zeros(3), np.zeros(4))
    assert str(info.value) == str(expected.value)


@scriptc.script
def temporaries(x: np.ndarray) -> float:
    y = x * 2.0 + 1.0
    z = np.exp(y[1:]) - y[:-1]
    return np.sum(z * z)


@scriptc.script
def fresh(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = x + 1.0
    return y, y[1:]


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_memory_stays_flat_over_100000_calls():
    x = np.ones(1000)
    for f in (temporaries, fresh):
        for _ in range(2000):
            f(x)
        gc.collect()
        before = resident_bytes()
        for _ in range(100_000):
            f(x)
        gc.collect()
        grown = resident_bytes() - before
        assert grown < 8 * 2**20, f"{f.__name__}: resident memory grew by {grown / 2**20:.1f} MiB"


@scriptc.script
def create(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    a = np.zeros((n, 2), dtype=np.int32)
    a[0, 1] = 7
    return a, np.full(n, 2.5), np.arange(1, n, 2), np.linspace(0.0, 1.0, n), np.ones_like(a).reshape(-1)


def test_creation():
    for n in (0, 1, 5):
        assert_matches_python(create, n)


@scriptc.script
def matmul(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    return a @ b, b.T @ a[0], np.dot(a[0], a[1])


def test_matmul():
    rng = np.random.default_rng(3)
    assert_matches_python(matmul, rng.random((3, 4)), rng.random((4, 2)), rtol=1e-13)


@scriptc.script
def _broadcast_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


@scriptc.script
def _assign_all(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a[:] = b
    return a


@scriptc.script
def _reshape_4_2(a: np.ndarray) -> np.ndarray:
    return a.reshape(4, 2)


@pytest.mark.parametrize(
    "fn, args",
    [
        (_broadcast_add, (np.ones((2, 3)), np.ones((2, 4)))),
        (_broadcast_add, (np.ones(3), np.ones(4))),
        (_broadcast_add, (np.ones((2, 3, 4)), np.ones(5))),
        (_assign_all, (np.ones((2, 3)), np.ones((2, 4)))),
        (_reshape_4_2, (np.ones(6),)),
    ],
)
def test_shape_messages_are_numpys(fn, args):
    """NumPy writes shapes in these messages as (2,3): no space after the comma."""
    with pytest.raises(ValueError) as want:
        fn.py_func(*[a.copy() for a in args])
    with pytest.raises(ValueError) as got:
        fn(*[a.copy() for a in args])
    assert str(got.value) == str(want.value)


@scriptc.script
def zeros2(a: int, b: int) -> np.ndarray:
    return np.zeros((a, b), dtype=np.int8)


@scriptc.script
def ones3(a: int, b: int, c: int) -> np.ndarray:
    return np.ones((a, b, c))


DIMS = [0, 3, -1, 2**31, 2**40, 2**62, 2**63 - 1]


@pytest.mark.parametrize("tier", ["first", "optimized"])
def test_allocation_errors_are_numpys_in_both_tiers(tier):
    """The allocator (one call per allocation, inlined at O3): a negative dimension, a size beyond int64, and a
    size no memory holds raise NumPy's exception with its message, dimension by dimension in NumPy's order."""
    cases = [(zeros2, (a, b)) for a in DIMS for b in DIMS] + [
        (ones3, (a, b, c)) for a in DIMS[2:] for b in DIMS[:4] for c in DIMS[1:]
    ]
    for fn in (zeros2, ones3):
        fn(*[1] * (2 if fn is zeros2 else 3))
        if tier == "optimized":
            assert fn.wait_optimized(timeout=120)
    checked = 0
    for fn, dims in cases:
        itemsize = 1 if fn is zeros2 else 8
        if min(dims) >= 0 and 0 not in dims and math.prod(dims) * itemsize < 2**45:
            continue  # it could allocate (32 TiB is beyond any machine's memory: a MemoryError)
        try:
            expected = fn.py_func(*dims)
        except (ValueError, MemoryError) as e:
            with pytest.raises(MemoryError if isinstance(e, MemoryError) else ValueError) as got:
                fn(*dims)  # (NumPy's MemoryError is a subclass of its own)
            assert str(got.value) == str(e), (fn.__name__, dims)
        else:  # an empty array (a zero dimension)
            assert fn(*dims).shape == expected.shape == dims
        checked += 1
    assert checked > 40
