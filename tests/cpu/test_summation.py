"""np.sum, np.mean and .sum() of float arrays (and the mean of integer arrays) equal NumPy's bit for bit: NumPy's
pairwise summation, its blocking and the way its reduction machinery calls the loop (summation.py).

A few signatures are compiled once; Hypothesis varies sizes (0 to 10**5, with the block boundaries), ranks 1-3,
every axis, dtypes, layouts (C-contiguous, sliced with any steps, transposed, broadcast) and values: every
result must have NumPy's bits.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scriptc
from scriptc.backend.llvm.lowering.arrays import allocation_count
from scriptc.ir.types import NARROW_SCALARS

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's mean of empty slices, inf - inf

BOUNDARIES = [0, 1, 7, 8, 9, 15, 16, 17, 127, 128, 129, 255, 256, 257, 1023, 1024, 8191, 8192, 8193, 100_000]
FLOATS = ["float64", "float32", "float16"]


@scriptc.script
def sum_all(x: np.ndarray) -> float:
    return np.sum(x)


@scriptc.script
def method_sum(x: np.ndarray) -> float:
    return x.sum()


@scriptc.script
def mean_all(x: np.ndarray) -> float:
    return np.mean(x)


@scriptc.script
def sum_axis0(x: np.ndarray) -> np.ndarray:
    return np.sum(x, axis=0)


@scriptc.script
def sum_axis1(x: np.ndarray) -> np.ndarray:
    return x.sum(axis=1)


@scriptc.script
def sum_axis2(x: np.ndarray) -> np.ndarray:
    return np.sum(x, axis=2)


@scriptc.script
def sum_last(x: np.ndarray) -> np.ndarray:
    return np.sum(x, axis=-1)


@scriptc.script
def mean_axis0(x: np.ndarray) -> np.ndarray:
    return np.mean(x, axis=0)


@scriptc.script
def mean_axis1(x: np.ndarray) -> np.ndarray:
    return np.mean(x, axis=1)


@scriptc.script
def mean_axis2(x: np.ndarray) -> np.ndarray:
    return np.mean(x, axis=2)


# (scripted function, NumPy's computation, the least rank it applies to: axis reductions give arrays)
REDUCTIONS = [
    (sum_all, lambda x: np.sum(x), 1),
    (method_sum, lambda x: x.sum(), 1),
    (mean_all, lambda x: np.mean(x), 1),
    (sum_axis0, lambda x: np.sum(x, axis=0), 2),
    (sum_axis1, lambda x: x.sum(axis=1), 2),
    (sum_axis2, lambda x: np.sum(x, axis=2), 3),
    (sum_last, lambda x: np.sum(x, axis=-1), 2),
    (mean_axis0, lambda x: np.mean(x, axis=0), 2),
    (mean_axis1, lambda x: np.mean(x, axis=1), 2),
    (mean_axis2, lambda x: np.mean(x, axis=2), 3),
]


def bits_equal(expected, actual) -> bool:
    """Same dtype (a NumPy scalar of a narrow dtype comes back as one, a float64 or int64 one as the Python
    scalar) and the same bits, NaN for NaN."""
    if isinstance(expected, np.ndarray):
        if not isinstance(actual, np.ndarray) or actual.dtype != expected.dtype or actual.shape != expected.shape:
            return False
        e, a = expected, actual
    elif isinstance(expected, np.generic) and expected.dtype.name in NARROW_SCALARS:
        if type(actual) is not type(expected):
            return False
        e, a = np.asarray(expected), np.asarray(actual)
    elif isinstance(expected, np.integer):  # sums of int64: exact, returned as int
        return type(actual) is int and actual == int(expected)
    else:
        if type(actual) is not float:
            return False
        e, a = np.asarray(np.float64(expected)), np.asarray(actual)
    nan = np.isnan(e)
    if not np.array_equal(nan, np.isnan(a)):
        return False
    unsigned = {8: np.uint64, 4: np.uint32, 2: np.uint16}[e.dtype.itemsize]
    return np.array_equal(e.view(unsigned)[~nan], a.view(unsigned)[~nan])


def data(rng, shape, dtype, scale):
    x = rng.standard_normal(shape) * scale
    if rng.random() < 0.3:
        x += scale  # one sign: large sums, float16 overflowing to inf
    return x.astype(dtype)


@st.composite
def shapes(draw, rank):
    """A shape with one dimension drawn from the block boundaries (or anywhere up to 10**5) and the others
    small, the total at most 10**5."""
    long = draw(st.sampled_from(BOUNDARIES) | st.integers(0, 100_000))
    others = [draw(st.integers(0, 6) | st.sampled_from([1, 9, 130])) for _ in range(rank - 1)]
    position = draw(st.integers(0, rank - 1))
    dims = others[:position] + [long] + others[position:]
    total = int(np.prod(others)) if others else 1
    if total and dims[position] * total > 100_000:
        dims[position] = 100_000 // total
    return tuple(dims)


def check_all(x, reductions=REDUCTIONS):
    for fn, numpy_fn, rank in reductions:
        if x.ndim >= rank:
            expected, actual = numpy_fn(x), fn(x)
            assert bits_equal(expected, actual), (fn.__name__, x.dtype, x.shape, x.strides, expected, actual)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    dtype=st.sampled_from(FLOATS),
    rank=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([1.0, 1e-3, 1e4]),
    data_=st.data(),
)
def test_contiguous_sums_and_means_equal_numpy_bit_for_bit(dtype, rank, seed, scale, data_):
    shape = data_.draw(shapes(rank))
    check_all(data(np.random.default_rng(seed), shape, dtype, scale))


@st.composite
def slicings(draw, shape):
    return tuple(slice(draw(st.integers(0, 2)), None, draw(st.sampled_from([1, 2, 3, -1, -2]))) for _ in shape)


@SETTINGS
@given(dtype=st.sampled_from(FLOATS), rank=st.integers(1, 3), seed=st.integers(0, 2**32 - 1), data_=st.data())
def test_sliced_views_equal_numpy_bit_for_bit(dtype, rank, seed, data_):
    shape = data_.draw(shapes(rank))
    base = data(np.random.default_rng(seed), shape, dtype, 1.0)
    view = base[data_.draw(slicings(shape))]
    check_all(view)


@SETTINGS
@given(dtype=st.sampled_from(FLOATS), rank=st.integers(2, 3), seed=st.integers(0, 2**32 - 1), data_=st.data())
def test_transposed_and_sliced_views_equal_numpy_bit_for_bit(dtype, rank, seed, data_):
    shape = data_.draw(shapes(rank))
    x = data(np.random.default_rng(seed), shape, dtype, 1.0)
    order = data_.draw(st.permutations(range(rank)))
    check_all(x.transpose(order)[data_.draw(slicings(shape))])


@SETTINGS
@given(dtype=st.sampled_from(FLOATS), rank=st.integers(2, 3), seed=st.integers(0, 2**32 - 1), data_=st.data())
def test_broadcast_views_equal_numpy_bit_for_bit(dtype, rank, seed, data_):
    """Zero strides: NumPy's axis sort compares no stride with them."""
    shape = data_.draw(shapes(rank))
    spread = data_.draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    source = data(np.random.default_rng(seed), tuple(1 if s else d for s, d in zip(spread, shape)), dtype, 1.0)
    view = np.broadcast_to(source, shape)[data_.draw(slicings(shape))]
    check_all(view.transpose(data_.draw(st.permutations(range(rank)))))


@pytest.mark.parametrize("n", BOUNDARIES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_block_boundaries(n, dtype):
    check_all(data(np.random.default_rng(n), (n,), dtype, 1.0))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_means_sum_cast_buffers_pairwise(dtype):
    rng = np.random.default_rng(3)
    for shape in [(100_000,), (3, 20_000), (20_000, 3), (7,), (300, 5, 2)]:
        x = rng.integers(0, 2**60 if dtype == "int64" else 100, size=shape).astype(dtype)
        check_all(x, [r for r in REDUCTIONS if r[0].__name__.startswith("mean")])


def test_signed_zeros_and_specials():
    for x in [
        np.array([-0.0]),
        np.full(20, -0.0),
        np.zeros((3, 0)),
        np.array([np.inf, -np.inf, 1.0]),
        np.array([np.nan] + [1.0] * 200),
        np.full((4, 300), -0.0, np.float32),
    ]:
        check_all(x)


# -- the fused full reduction: NumPy's sum of the materialized element-wise array --------------------------------


@scriptc.script
def fused_sum(x: np.ndarray, y: np.ndarray) -> float:
    return np.sum(x * y + 0.5)


@scriptc.script
def fused_mean(x: np.ndarray, y: np.ndarray) -> float:
    return np.mean(x * y - x)


@scriptc.script
def exp_product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.exp(x) * y


@scriptc.script
def fused_exp_sum(x: np.ndarray, y: np.ndarray) -> float:
    return np.sum(np.exp(x) * y)


@SETTINGS
@given(
    dtype=st.sampled_from(FLOATS),
    rank=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    broadcast=st.booleans(),
    data_=st.data(),
)
def test_fused_reductions_sum_the_materialized_array_as_numpy(dtype, rank, seed, broadcast, data_):
    shape = data_.draw(shapes(rank))
    rng = np.random.default_rng(seed)
    x = data(rng, shape, dtype, 1.0)
    y = data(rng, shape[-1:] if broadcast else shape, dtype, 1.0)
    assert "FusionGroup" in str(fused_sum.graph_for(x, y))
    assert bits_equal(np.sum(x * y + 0.5), fused_sum(x, y))
    assert bits_equal(np.mean(x * y - x), fused_mean(x, y))


@pytest.mark.parametrize("n", [0, 7, 128, 129, 8193, 100_000])
def test_fused_exp_reduction_equals_numpy_sum_of_its_elements(n):
    """libm's exp may differ from NumPy's by an ulp: the elements are scriptc's, the summation NumPy's."""
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    assert "FusionGroup" in str(fused_exp_sum.graph_for(x, y))
    before = allocation_count()
    total = fused_exp_sum(x, y)
    assert allocation_count() == before
    assert bits_equal(np.sum(exp_product(x, y)), total)


def test_interpreter_agrees():
    x = np.random.default_rng(0).standard_normal((3, 1000)).astype(np.float32)
    for fn, numpy_fn, rank in REDUCTIONS:
        if x.ndim >= rank:
            expected, interpreted = numpy_fn(x), fn.interpret(x)
            assert bits_equal(expected, fn(x))
            assert bits_equal(expected, interpreted)


@scriptc.script
def sum_axis0(x: np.ndarray) -> float:
    return np.sum(x, axis=0) + np.mean(x, axis=-1)


def test_axis_reduction_of_a_vector_is_the_full_sum():
    x = np.random.default_rng(3).standard_normal(1001)
    want = float(np.sum(x, axis=0) + np.mean(x, axis=-1))
    assert sum_axis0(x) == want and sum_axis0.interpret(x) == want
