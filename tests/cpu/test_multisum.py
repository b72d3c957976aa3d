"""Float sums and means of multi-output fusion groups (``fused_multi.py``) equal NumPy's pairwise sums of the
materialized arrays bit for bit, while every element of the group is still computed once, in one loop."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import scriptc
from scriptc.backend.llvm.lowering.arrays import allocation_count
from tests.passes.test_fusion_wider import exactly
from tests.util import filecheck

SIZES = [
    0,
    1,
    2,
    7,
    8,
    9,
    15,
    16,
    17,
    127,
    128,
    129,
    255,
    256,
    257,
    1000,
    1023,
    1024,
    1025,
    8191,
    8192,
    8193,
    16385,
    100_000,
]


@scriptc.script
def three_sums(x: np.ndarray, y: np.ndarray, m: float) -> tuple[float, float, float, np.ndarray]:
    d = x * y - m
    return np.sum(d), np.mean(d * x), np.sum(d * d), np.abs(d) + 1.0


@scriptc.script
def sums_and_max(x: np.ndarray, m: float) -> tuple[float, float, float]:
    d = x - m
    return np.mean(d), np.max(d), np.sum(d * x)


@scriptc.script
def with_int_reductions(x: np.ndarray, k: np.ndarray) -> tuple[float, int, float, float]:
    d = x * 2.0 - k
    return np.sum(d), np.sum(d > 0.0), np.max(d), np.mean(d * d)


@scriptc.script
def int_producer(k: np.ndarray) -> tuple[float, int, float]:
    e = k * 3 - 7
    return np.mean(e), np.sum(e), np.sum(e * 0.5)  # a cast (chunked) mean beside an uncast float sum


@scriptc.script
def gd(x: np.ndarray, y: np.ndarray, epochs: int, lr: float) -> tuple[float, float]:
    a = 0.0
    b = 0.0
    for _ in range(epochs):
        err = a * x + b - y
        ga = np.mean(err * x)
        gb = np.mean(err)
        a -= lr * 2.0 * ga
        b -= lr * 2.0 * gb
    return a, b


def same_scalar(got, want) -> bool:
    """The same number to the bit (a float32 result is returned as the Python float of the same value)."""
    if isinstance(want, (np.integer, int)):
        return type(got) is int and got == want
    if np.isnan(want):
        return np.isnan(got)
    return np.float64(got).view(np.uint64) == np.float64(want).view(np.uint64)


def same(got, want) -> bool:
    return len(got) == len(want) and all(
        exactly(g, w) if isinstance(w, np.ndarray) else same_scalar(g, w) for g, w in zip(got, want)
    )


def data(n, dtype, seed=0):
    rng = np.random.default_rng(seed + n)
    return (rng.standard_normal(n) * 10).astype(dtype), (rng.standard_normal(n) + 0.5).astype(dtype)


def assert_matches(fn, *args):
    want = fn.py_func(*args)
    got = fn(*args)
    assert same(got, want), (got, want)
    assert same(fn.interpret(*args), want)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])  # float16: a cast mean beside uncast sums
@pytest.mark.parametrize("n", SIZES)
def test_sums_equal_numpy_bit_for_bit(n, dtype):
    x, y = data(n, dtype)
    assert_matches(three_sums, x, y, 0.25)
    if dtype == "float64":  # with float32 means NumPy's a and b become float32 scalars; the script's stay floats
        assert_matches(gd, x, y, 3, 0.01)
    if n == 0:
        with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
            sums_and_max(x, 0.5)
    else:
        assert_matches(sums_and_max, x, 0.5)


@pytest.mark.parametrize("n", [0, 1, 9, 129, 1000, 8192, 8193, 20_000])
def test_integer_reductions_in_the_same_group(n):
    x, _ = data(n, "float64")
    k = np.arange(n, dtype=np.int32) % 97 - 40
    if n == 0:
        with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
            with_int_reductions(x, k)
    else:
        assert_matches(with_int_reductions, x, k)
    assert_matches(int_producer, k)
    assert_matches(int_producer, k.astype(np.int64) * 1_000_003)


@pytest.mark.parametrize("n", [1, 8, 127, 129, 1000, 8193])
def test_broadcast_and_strided_operands(n):
    x, y = data(n, "float64")
    col = np.linspace(-1, 2, 3).reshape(3, 1)
    assert_matches(three_sums, col, y, 0.5)  # (3, 1) * (n,): a (3, n) group
    assert_matches(three_sums, x[::-2], y[::2], 0.5)
    big = np.arange(n * 6.0).reshape(2 * n, 3) * 0.37
    assert_matches(sums_and_max, big[1::2, ::2], 0.5)  # a C-ordered 2-d view
    x32, y32 = data(n, "float32")
    assert_matches(three_sums, x32.reshape(1, n), y32, 0.5)
    assert_matches(three_sums, col.astype(np.float32), y32[::-1], 0.5)


def test_still_one_group_with_several_outputs():
    x = np.linspace(0, 1, 10)
    text = str(three_sums.graph_for(x, x, 0.5))
    filecheck(
        text,
        """
CHECK: %{{.+}} : float, %{{.+}} : float, %{{.+}} : float, %{{.+}} : Double(10) = prim::FusionGroup[subgraph=[[G:.+]]](%x, %y, %m)
CHECK-NOT: prim::FusionGroup[
CHECK: with [[G]] = graph(
CHECK: aten::sum
CHECK: aten::mean
CHECK: aten::sum
""",
    )
    text = str(with_int_reductions.graph_for(x, np.arange(10)))
    filecheck(
        text,
        """
CHECK: %{{.+}} : float, %{{.+}} : int, %{{.+}} : float, %{{.+}} : float = prim::FusionGroup[
CHECK-NOT: prim::FusionGroup[
CHECK: return
""",
    )
    filecheck(
        str(int_producer.graph_for(np.arange(10))),
        """
CHECK: %{{.+}} : float, %{{.+}} : int, %{{.+}} : float = prim::FusionGroup[
CHECK-NOT: prim::FusionGroup[
CHECK: return
""",
    )


def test_no_temporary_arrays():
    x, y = data(5000, "float64")
    gd(x, y, 2, 0.1)
    three_sums(x, y, 0.5)
    before = allocation_count()
    gd(x, y, 50, 0.1)
    assert allocation_count() == before
    three_sums(x, y, 0.5)
    assert allocation_count() - before == 1  # the element-wise result only


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3000), st.sampled_from(["float64", "float32"]), st.integers(0, 2**31), st.floats(-100, 100))
def test_property_sums_equal_numpy(n, dtype, seed_, m):
    x, y = data(n, dtype, seed_)
    assert same(three_sums(x, y, m), three_sums.py_func(x, y, m))
    assert same(sums_and_max(x, m), sums_and_max.py_func(x, m))
