"""Element-wise fusion groups of at least PARALLEL_MIN elements run on the thread pool: bit-identical to one
thread (and so to the sequential code the rest of the suite checks against NumPy), for SIMD float64 groups
(chunks aligned to the vector width), float32, integer and bool groups, and broadcast or strided operands (which
stay sequential)."""

import numpy as np
import pytest

import scriptc
from scriptc.backend.llvm.lowering.fused_parallel import PARALLEL_MIN


@scriptc.script
def chain(x: np.ndarray) -> np.ndarray:
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.5 * x


@scriptc.script
def mixed(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    return (a * k + b) % 7 - a // 3


@scriptc.script
def scaled(x: np.ndarray, y: np.ndarray, s: float) -> np.ndarray:
    return np.where(x > y, x * s, y - s)


@pytest.fixture
def restore_threads():
    before = scriptc.get_num_threads()
    yield
    scriptc.set_num_threads(before)


def per_thread_count(fn, *args):
    results = []
    for threads in (1, 2, 3, 5):
        scriptc.set_num_threads(threads)
        results.append(fn(*args))
    return results


@pytest.mark.parametrize("n", [PARALLEL_MIN - 1, PARALLEL_MIN, PARALLEL_MIN + 37, 3 * PARALLEL_MIN + 5])
def test_simd_chain_is_bit_identical_for_every_thread_count(restore_threads, n):
    x = np.random.default_rng(n).standard_normal(n)
    first, *rest = per_thread_count(chain, x)
    for r in rest:
        assert np.array_equal(r, first)
    np.testing.assert_allclose(first, chain.py_func(x), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8])
def test_integer_groups(restore_threads, dtype):
    n = PARALLEL_MIN + 101
    rng = np.random.default_rng(1)
    a, b = rng.integers(-100, 100, n).astype(dtype), rng.integers(-100, 100, n).astype(dtype)
    expected = mixed.py_func(a, b, 3)
    for r in per_thread_count(mixed, a, b, 3):
        assert r.dtype == expected.dtype and np.array_equal(r, expected)


def test_float32_and_where(restore_threads):
    n = 2 * PARALLEL_MIN + 3
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    expected = scaled.py_func(x, y, 1.5)
    for r in per_thread_count(scaled, x, y, 1.5):
        assert r.dtype == np.float32 and np.array_equal(r, expected)


def test_broadcast_and_strided_operands_stay_correct(restore_threads):
    rng = np.random.default_rng(3)
    big = rng.standard_normal((600, 1000))
    row = rng.standard_normal(1000)
    scriptc.set_num_threads(2)
    np.testing.assert_array_equal(scaled(big, row, 2.0), scaled.py_func(big, row, 2.0))
    np.testing.assert_array_equal(scaled(big.T, big.T, 2.0), scaled.py_func(big.T, big.T, 2.0))
    strided = big[:, ::2]
    scriptc.set_num_threads(1)
    one = chain(strided)
    scriptc.set_num_threads(2)
    assert np.array_equal(chain(strided), one)
    np.testing.assert_allclose(one, chain.py_func(strided), rtol=1e-14, atol=1e-15)


def test_a_chunks_context_is_a_named_struct_type():
    """The context a group's chunks read (the group's operands) is a named type, spelled once in the module."""
    from tests.util import filecheck

    x = np.random.default_rng(2).standard_normal(8)
    filecheck(
        scaled.native_for_types(scaled._bind((x, x, 1.5), {})[0]).unoptimized_ir,
        """
        CHECK: %"[[CTX:[^"]*fused.ctx.t]]" = type {i64, i64, i8*,
        CHECK: define internal void @"{{[^"]*}}fused.chunk"(i8* %".1", i64 %".2")
        CHECK: getelementptr inbounds %"[[CTX]]", %"[[CTX]]"*
        """,
    )
