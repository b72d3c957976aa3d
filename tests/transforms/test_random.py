"""scriptc.random: functional keys against vectors recorded from jax 0.10.2 (jax_threefry_partitionable=True,
its default; float64 values with jax_enable_x64=True), from Python, inside scripted functions natively and in the
interpreter; uint32 arithmetic against NumPy; distribution tests."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scriptc
import scriptc.random as jr
from scriptc.ops.random import fma, threefry2x32

# -- recorded with jax 0.10.2: jax.random.PRNGKey / split / fold_in / bits / uniform / normal / bernoulli / permutation
KEYS = {
    0: [0, 0],
    42: [0, 42],
    1: [0, 1],
    -1: [0, 4294967295],
    2**31 - 1: [0, 2147483647],
    2**33 + 5: [2, 5],
    -(2**40): [4294967040, 0],
}  # the last two: x64 mode (the default mode rejects them)
SPLIT_0 = [[1797259609, 2579123966], [928981903, 3453687069]]
SPLIT_42_3 = [[1832780943, 270669613], [64467757, 2916123636], [2465931498, 255383827]]
FOLD_IN = {
    (0, 7): [2716826189, 292468403],
    (42, 0): [1832780943, 270669613],
    (42, 4000000000): [4151844817, 2174040936],
}
BITS = {
    (0, (1,)): [4070199207],
    (42, (1,)): [2098992034],
    (0, (5,)): [4070199207, 4202968722, 1427181096, 2012915765, 2447653815],
    (42, (5,)): [2098992034, 2919706841, 2646866425, 2409546199, 1935504149],
    (0, (2, 3)): [[4070199207, 4202968722, 1427181096], [2012915765, 2447653815, 710830403]],
    (42, (2, 3)): [[2098992034, 2919706841, 2646866425], [2409546199, 1935504149, 2516274904]],
    (0, ()): 4070199207,
}
UNIFORM = {
    (0, (5,), "float32", 0.0, 1.0): [
        0.9476670026779175,
        0.9785798788070679,
        0.33229148387908936,
        0.46866846084594727,
        0.569888710975647,
    ],
    (42, (2, 3), "float32", -2.0, 3.0): [
        [0.4435478448867798, 1.3989858627319336, 1.081357479095459],
        [0.8050804138183594, 0.2532230615615845, 0.9293292760848999],
    ],
    (7, (), "float32", 0.1, 0.2): 0.1674089878797531,
    (0, (5,), "float64", 0.0, 1.0): [
        0.41845711171638644,
        0.21629545460551136,
        0.9653214611189975,
        0.5745005337275046,
        0.5322264882505428,
    ],
    (42, (2, 3), "float64", -2.0, 3.0): [
        [0.13363783324954537, -1.924949652423427, 0.8707220894976759],
        [1.6490944845231543, 1.43900170615283, 1.2196887095830518],
    ],
    (7, (), "float64", 0.1, 0.2): 0.1844106945082353,
}
NORMAL = {
    (0, (8,), "float32"): [
        1.622642159461975,
        2.0252647399902344,
        -0.4335944354534149,
        -0.07861734926700592,
        0.17609089612960815,
        -0.9720892310142517,
        -0.49529874324798584,
        0.49437859654426575,
    ],
    (42, (2, 3), "float32"): [
        [-0.02830461598932743, 0.4671318531036377, 0.2957029640674591],
        [0.15354591608047485, -0.12403281778097153, 0.21692314743995667],
    ],
    (0, (8,), "float64"): [
        -0.2058421394796434,
        -0.7847657764467411,
        1.8160866726679836,
        0.1878440128937887,
        0.08086788103743275,
        -0.3721107933346203,
        1.19016372498863,
        0.3386422910309605,
    ],
    (42, (2, 3), "float64"): [
        [-0.18471174528191162, -2.169824560397754, 0.18693555179382582],
        [0.6122653570510959, 0.4896249504757018, 0.36900430470828355],
    ],
}
BERNOULLI_0_03_10 = [False, True, False, False, False, False, False, False, False, True]  # p a float64
PERMUTATION = {(0, 10): [0, 1, 8, 5, 6, 4, 3, 2, 7, 9], (42, 5): [4, 2, 3, 0, 1]}
PERMUTATION_1_3000_HEAD = [36, 2724, 673, 590, 2744, 1042, 1000, 537, 1712, 2790, 2756, 2466, 2898, 1422, 1888, 663]
PERMUTATION_1_3000_WEIGHTED = 6741750772  # sum(i * p[i]): two sorting rounds at n = 3000


def same(got, expected, dtype):
    assert np.asarray(got).dtype == np.dtype(dtype)
    assert np.array_equal(np.asarray(got), np.array(expected, dtype=dtype))


# -- Python ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", KEYS)
def test_key(seed):
    same(jr.key(seed), KEYS[seed], np.uint32)


def test_split_and_fold_in():
    same(jr.split(jr.key(0)), SPLIT_0, np.uint32)
    same(jr.split(jr.key(42), 3), SPLIT_42_3, np.uint32)
    same(jr.split(jr.key(0), 1), SPLIT_0[:1], np.uint32)
    for (seed, data), expected in FOLD_IN.items():
        same(jr.fold_in(jr.key(seed), data), expected, np.uint32)


@pytest.mark.parametrize("seed, shape", BITS)
def test_bits(seed, shape):
    got = jr.bits(jr.key(seed), shape)
    assert got.shape == shape
    same(got, BITS[seed, shape], np.uint32)


@pytest.mark.parametrize("args", UNIFORM)
def test_uniform(args):
    seed, shape, dtype, lo, hi = args
    got = jr.uniform(jr.key(seed), shape, dtype, lo, hi)
    assert got.shape == shape
    same(got, UNIFORM[args], dtype)


@pytest.mark.parametrize("args", NORMAL)
def test_normal_close_to_jax(args):
    seed, shape, dtype = args
    got = jr.normal(jr.key(seed), shape, dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == shape
    np.testing.assert_allclose(got, np.array(NORMAL[args]), rtol=0, atol=1e-6)


def test_bernoulli_and_permutation():
    same(jr.bernoulli(jr.key(0), 0.3, (10,)), BERNOULLI_0_03_10, np.bool_)
    for (seed, n), expected in PERMUTATION.items():
        same(jr.permutation(jr.key(seed), n), expected, np.int64)
    p = jr.permutation(jr.key(1), 3000)
    assert p[:16].tolist() == PERMUTATION_1_3000_HEAD
    assert int(np.dot(np.arange(3000), p)) == PERMUTATION_1_3000_WEIGHTED
    assert sorted(p.tolist()) == list(range(3000))
    assert jr.permutation(jr.key(5), 0).shape == (0,)


def test_default_arguments():
    k = jr.key(0)
    assert jr.uniform(k).shape == () and jr.uniform(k).dtype == np.float64
    assert jr.normal(k, (3,)).dtype == np.float64
    assert jr.bits(k, 4).shape == (4,)
    same(jr.split(k), jr.split(k, num=2), np.uint32)


# -- scripted: native and interpreter -------------------------------------------------------------------------
@scriptc.script
def draws(seed: int, data: int):
    k = jr.key(seed)
    ks = jr.split(k, 3)
    return (
        k,
        jr.split(k),
        ks,
        jr.fold_in(k, data),
        jr.bits(k, (2, 3)),
        jr.bits(k, (5,)),
        jr.bits(k, (1,)),
        jr.uniform(k, (5,), dtype=np.float32),
        jr.uniform(k, (2, 3), np.float64, -2.0, 3.0),
        jr.uniform(k, minval=0.1, maxval=0.2),
        jr.normal(k, (8,), np.float32),
        jr.normal(k, (2, 3)),
        jr.bernoulli(k, 0.3, (10,)),
        jr.permutation(k, 10),
    )


NORMAL_DRAWS = (10, 11)


def python_draws(seed, data):
    k = jr.key(seed)
    return (
        k,
        jr.split(k),
        jr.split(k, 3),
        jr.fold_in(k, data),
        jr.bits(k, (2, 3)),
        jr.bits(k, (5,)),
        jr.bits(k, (1,)),
        jr.uniform(k, (5,), dtype=np.float32),
        jr.uniform(k, (2, 3), np.float64, -2.0, 3.0),
        jr.uniform(k, minval=0.1, maxval=0.2),
        jr.normal(k, (8,), np.float32),
        jr.normal(k, (2, 3)),
        jr.bernoulli(k, 0.3, (10,)),
        jr.permutation(k, 10),
    )


@pytest.mark.parametrize("seed, data", [(0, 7), (42, 0), (2**33 + 5, 4000000000)])
def test_scripted_matches_python(seed, data):
    expected = python_draws(seed, data)
    for run in (draws, draws.interpret):
        for i, (got, want) in enumerate(zip(run(seed, data), expected)):
            assert got.dtype == want.dtype and got.shape == want.shape
            if i in NORMAL_DRAWS:  # log1p/sqrt of a fused, vectorized loop (libmvec) may differ in the last ulp
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
            else:
                assert np.array_equal(got, want)


def test_scripted_recorded_vectors():
    for run in (draws, draws.interpret):
        out = run(42, 0)
        same(out[0], KEYS[42], np.uint32)
        same(out[2], SPLIT_42_3, np.uint32)
        same(out[3], FOLD_IN[42, 0], np.uint32)
        same(out[4], BITS[42, (2, 3)], np.uint32)
        same(out[8], UNIFORM[42, (2, 3), "float64", -2.0, 3.0], np.float64)
        np.testing.assert_allclose(out[11], NORMAL[42, (2, 3), "float64"], rtol=0, atol=1e-6)


@scriptc.script
def keys_in_and_out(key: np.ndarray, n: int):
    """A key passed in, split in a loop, returned: the state lives outside, as article 003 has it."""
    total = 0.0
    for _ in range(n):
        pair = jr.split(key)
        key = pair[0].copy()
        total += np.sum(jr.uniform(pair[1], (4,)))
    return key, total


def test_keys_passed_through_scripted_functions():
    k, total = keys_in_and_out(jr.key(3), 5)
    k2, total2 = keys_in_and_out.interpret(jr.key(3), 5)
    expected_key, expected_total = jr.key(3), 0.0
    for _ in range(5):
        pair = jr.split(expected_key)
        expected_key = pair[0]
        expected_total += np.sum(jr.uniform(pair[1], (4,)))
    same(k, expected_key, np.uint32)
    same(k2, expected_key, np.uint32)
    assert total == total2 == expected_total


def test_bad_dtype_is_a_compile_error():
    with pytest.raises(scriptc.CompileError, match="dtype must be float32 or float64"):

        @scriptc.script
        def f(seed: int):
            return jr.uniform(jr.key(seed), (3,), np.int64)

        f(0)
    with pytest.raises(TypeError, match="dtype must be float32 or float64"):
        jr.normal(jr.key(0), (3,), np.int32)


# -- the operators -----------------------------------------------------------------------------------------------
@scriptc.script
def run_threefry(key: np.ndarray, counts: np.ndarray):
    return threefry2x32(key, counts)


def test_threefry_errors_match_the_reference():
    k = jr.key(0)
    for key, counts in ((k, np.zeros((3, 3), np.uint32)), (np.zeros(3, np.uint32), np.zeros((1, 2), np.uint32))):
        messages = []
        for run in (run_threefry, run_threefry.interpret, threefry2x32):
            with pytest.raises(ValueError) as e:
                run(key, counts)
            messages.append(str(e.value))
        assert len(set(messages)) == 1, messages


def test_threefry_strided_counts():
    k = jr.key(9)
    words = np.arange(40, dtype=np.uint32)
    for counts in (
        words.reshape(10, 4)[::2, 1:3],
        words.reshape(10, 4)[::2, ::3],
        words.reshape(2, 20).T,
        words.reshape(10, 4)[::-3, 2:0:-1],
    ):
        same(run_threefry(k, counts), threefry2x32(k, np.ascontiguousarray(counts)), np.uint32)


@scriptc.script
def run_fma(x: np.ndarray, s: np.ndarray, c: np.ndarray):
    return fma(x, s, c)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_is_rounded_once(dtype):
    rng = np.random.default_rng(1)
    x = rng.random(2000).astype(dtype)
    for s, c in ((5.0, -2.0), (0.1, 0.1), (1e-3, 7.0), (3.0, 1e-9)):
        s_, c_ = np.array([s], dtype), np.array([c], dtype)
        native, ref = run_fma(x, s_, c_), fma(x, s_, c_)
        assert native.dtype == ref.dtype == dtype
        assert np.array_equal(native, ref)
        assert np.array_equal(run_fma.interpret(x, s_, c_), ref)


@scriptc.script
def uint32_ops(a: np.ndarray, b: np.ndarray, s: int):
    return (
        a + b,
        a - b,
        a * b,
        a ^ b,
        a & b,
        a | b,
        a << s,
        a >> s,
        ~a,
        a < b,
        a == b,
        a.astype(np.int64),
        a.astype(np.float32),
        (a.astype(np.int64) - 7).astype(np.uint32),
        a[1],
        a[::2].copy(),
    )


def test_uint32_arithmetic_matches_numpy():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    a[:4] = [0, 1, 2**32 - 1, 2**31]
    for s in (0, 3, 31):
        expected = uint32_ops.py_func(a, b, s)
        for run in (uint32_ops, uint32_ops.interpret):
            for got, want in zip(run(a, b, s), expected):
                assert np.asarray(got).dtype == np.asarray(want).dtype or isinstance(want, np.integer)
                assert np.array_equal(got, want)


# -- distributions ---------------------------------------------------------------------------------------------
def ks_statistic(sample, cdf) -> float:
    x = np.sort(sample)
    f = cdf(x)
    n = len(x)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


N = 20000
KS_BOUND = 1.95 / math.sqrt(N)  # Kolmogorov's critical value at the 0.1% level


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_and_normal_distributions(dtype):
    u = jr.uniform(jr.key(11), (N,), dtype).astype(np.float64)
    assert 0.0 <= u.min() and u.max() < 1.0
    assert ks_statistic(u, lambda x: x) < KS_BOUND
    z = jr.normal(jr.key(12), (N,), dtype).astype(np.float64)
    normal_cdf = np.vectorize(lambda v: 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))))
    assert ks_statistic(z, normal_cdf) < KS_BOUND
    assert abs(z.mean()) < 4 / math.sqrt(N) and abs(z.std() - 1.0) < 0.03


def test_bernoulli_frequency():
    for p in (0.1, 0.5, 0.9):
        m = jr.bernoulli(jr.key(13), p, (N,))
        assert m.dtype == np.bool_
        assert abs(m.mean() - p) < 4 * math.sqrt(p * (1 - p) / N)


def test_split_keys_are_independent():
    keys = jr.split(jr.key(0), 1000)
    assert len({tuple(k) for k in keys.tolist()}) == 1000
    a, b = (jr.uniform(k, (N,)) for k in jr.split(jr.key(0)))
    assert abs(np.corrcoef(a, b)[0, 1]) < 4 / math.sqrt(N)
    assert not np.array_equal(jr.fold_in(jr.key(0), 1), jr.fold_in(jr.key(0), 2))
    first = np.array([jr.bits(k) for k in keys], dtype=np.float64) / 2.0**32
    assert ks_statistic(first, lambda x: x) < 1.95 / math.sqrt(1000)


def test_permutation_is_a_permutation():
    for seed in range(20):
        n = seed * 7
        p = jr.permutation(jr.key(seed), n)
        assert sorted(p.tolist()) == list(range(n))
    firsts = [int(jr.permutation(k, 4)[0]) for k in jr.split(jr.key(1), 400)]
    assert all(abs(firsts.count(i) - 100) < 40 for i in range(4))


@scriptc.script
def through_the_package(seed: int):
    return scriptc.random.bits(scriptc.random.key(seed), (2, 3))


def test_called_as_scriptc_random():
    for run in (through_the_package, through_the_package.interpret):
        same(run(0), BITS[0, (2, 3)], np.uint32)


@scriptc.script
def draw_rows(key: np.ndarray, n: int) -> np.ndarray:
    return scriptc.random.normal(key, (2, n))


def test_a_negative_dimension_is_numpys_value_error():
    """From Python and in scripted code: a negative dimension drew an empty array (Python) or failed to reshape
    it (scripted); NumPy's np.zeros((2, -3)) says it."""
    with pytest.raises(ValueError) as numpy_error:
        np.zeros((2, -3))
    key = scriptc.random.key(0)
    for call in (
        lambda: scriptc.random.uniform(key, (-1,)),
        lambda: scriptc.random.bits(key, (2, -3)),
        lambda: draw_rows(key, -3),
        lambda: draw_rows.interpret(key, -3),
        lambda: scriptc.random.split(key, -1),
    ):  # (gave a (0, 2) array: np.arange(-1) is empty)
        with pytest.raises(ValueError) as ours:
            call()
        assert str(ours.value) == str(numpy_error.value)
    assert draw_rows(key, 0).shape == (2, 0)


@scriptc.script
def split_of(key: np.ndarray) -> np.ndarray:
    return scriptc.random.split(key)


def test_a_bad_key_or_argument_names_the_function_the_user_called():
    """Not scriptc/random.py's line nor its private kernels (_bernoulli(), _key()): a wrong key is a TypeError
    naming scriptc.random.split, in Python and at the user's line in scripted code."""
    bad = np.zeros(2, dtype=np.int64)
    with pytest.raises(TypeError, match=r"^scriptc\.random\.split\(\): key must be a uint32 array of shape \(2,\)"):
        scriptc.random.split(bad)
    with pytest.raises(TypeError, match=r"^scriptc\.random\.bernoulli\(\) argument 'p' must be float"):
        scriptc.random.bernoulli(scriptc.random.key(0), np.ones(2))
    with pytest.raises(scriptc.CompileError, match=r"split\(\): key must be a uint32 array") as info:
        split_of(bad)
    assert f"test_random.py:{split_of.py_func.__code__.co_firstlineno + 2}:" in str(info.value)
