"""scriptc.random: functional keys with JAX's exact bits (vectors recorded from jax 0.10.2, default settings:
threefry2x32, jax_threefry_partitionable=True; float64 with jax_enable_x64; tests/data/jaxvec*.py made them),
plus distribution checks."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from scriptc import random as R

V = json.loads((Path(__file__).parent / "data" / "jax_random_vectors.json").read_text())
K = R.key(42)


def same(got, name, dtype=None):
    want = np.array(V[name], dtype=dtype if dtype is not None else got.dtype)
    assert got.shape == want.shape and np.array_equal(got, want), (got, want)


def test_keys_split_and_fold_in_are_jaxs():
    same(R.key(0), "key0")
    same(K, "key42")
    same(R.split(K), "split2")
    same(R.split(K, 3), "split3")
    same(R.fold_in(K, 7), "fold_in")
    same(R.fold_in(K, 2 ** 31 + 5), "fold_in_big")
    assert R.key(2 ** 40 + 7).tolist() == [256, 7]      # all 64 bits (jax with x64); jax without x64 keeps [0, 7]


def test_bits_are_jaxs():
    same(R.bits(K, (1,)), "bits1")
    same(R.bits(K, 5), "bits5")
    same(R.bits(K, (2, 3)), "bits23")


def test_uniform_is_jaxs_bit_for_bit():
    same(R.uniform(K, (6,), np.float32).view(np.uint32), "uniform32")
    same(R.uniform(K, (2, 3), np.float32, -2.0, 5.0).view(np.uint32), "uniform32_range")
    same(R.uniform(K, (256,), np.float32, -2.0, 5.0).view(np.uint32), "uniform32_range2")
    same(R.uniform(K, (4,)).view(np.uint64), "uniform64", np.uint64)
    same(R.uniform(K, (3,), np.float64, 1.0, 3.0).view(np.uint64), "uniform64_range", np.uint64)
    same(R.uniform(K, (64,), np.float64, -2.0, 5.0).view(np.uint64), "uniform64_range2", np.uint64)


def test_normal_matches_jax():
    np.testing.assert_allclose(R.normal(K, (8,), np.float32), V["normal32"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(R.normal(R.key(7), (256,), np.float32), V["normal32_k7"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(R.normal(K, (8,)), V["normal64"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(R.normal(R.key(7), (256,)), V["normal64_k7"], rtol=0, atol=1e-12)


def test_bernoulli_and_permutation_are_jaxs():
    same(R.bernoulli(K, 0.3, (10,)), "bernoulli", bool)
    same(R.permutation(K, 10), "perm10", np.int64)
    assert np.array_equal(R.permutation(K, 3000)[:20], V["perm3000"])      # two sorting rounds
    p = R.permutation(R.key(3), 1000)
    assert sorted(p.tolist()) == list(range(1000))


def _ks(sample, cdf) -> float:
    x = np.sort(sample)
    n = len(x)
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def test_distributions():
    n = 20000
    u = R.uniform(R.key(1), n)
    assert _ks(u, lambda x: x) < 1.63 / math.sqrt(n)               # KS at the 1% level
    z = R.normal(R.key(2), n)
    assert _ks(z, lambda x: 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))) < 1.63 / math.sqrt(n)
    assert abs(R.bernoulli(R.key(3), 0.25, n).mean() - 0.25) < 4 * math.sqrt(0.25 * 0.75 / n)
    assert (u >= 0).all() and (u < 1).all()


def test_split_keys_are_independent_and_deterministic():
    a, b = R.split(R.key(5))
    assert not np.array_equal(R.bits(a, 100), R.bits(b, 100))
    assert np.array_equal(R.split(R.key(5)), R.split(R.key(5)))
    assert abs(np.corrcoef(R.normal(a, 5000), R.normal(b, 5000))[0, 1]) < 0.05


def test_a_bad_key_is_a_type_error():
    with pytest.raises(TypeError, match="scriptc.random.key"):
        R.uniform(np.array([1, 2]), 3)
