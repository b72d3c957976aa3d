"""Differential fuzzing of array programs a stranger writes (``fuzz_arrays_gen.py``): aliases and rebinding in
loops followed by in-place writes, scalars on the left, zero-trip loops around lists, stores dropping unit axes,
six dtypes and five argument layouts (contiguous, reversed, strided, transposed, unaligned). Each program runs
under CPython with NumPy, natively and in scriptc's interpreter: the results, the arguments after the call and
the exception type must match.

SCRIPTC_FUZZ_PROGRAMS sets the bounded CI count (``make test``); ``make test-slow`` (``-m slow``) runs
SCRIPTC_FUZZ_PROGRAMS_SLOW."""

import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz_arrays_gen import arguments, cases
from tests.modules import load_module
from tests.util import run_captured

CI = int(os.environ.get("SCRIPTC_FUZZ_PROGRAMS", "60"))
SLOW = int(os.environ.get("SCRIPTC_FUZZ_PROGRAMS_SLOW", "1500"))
_counter = itertools.count()
RAN = {"programs": 0}


def same(a, b, rtol: float = 0.0) -> bool:
    """Equal results: exact, or within ``rtol`` for floats (NumPy's SIMD sin is not glibc's to the last bit)."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(same(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        if not (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        if rtol and a.dtype.kind == "f":
            return np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)
        return np.array_equal(a, b, equal_nan=True)
    if isinstance(a, np.generic):
        a = a.item()
    return type(a) is type(b) and (a == b or a != a and b != b)


def check(tmp_path_factory, case):
    source, dtype, rank, layout, n, seed = case
    mod = load_module(tmp_path_factory.mktemp(f"prog{next(_counter)}"), source)
    RAN["programs"] += 1
    expected_args = arguments(dtype, rank, layout, n, seed)
    expected = run_captured(mod.f.py_func, *expected_args)
    rtol = (2e-6 if dtype == "float32" else 1e-14) if "np.sin" in source else 0.0
    for run in (mod.f, mod.f.interpret):
        got_args = arguments(dtype, rank, layout, n, seed)
        got = run_captured(run, *got_args)
        where = f"{source}\ndtype={dtype} rank={rank} layout={layout} n={n} seed={seed} ({run})"
        if expected[2] is not None:
            assert type(got[2]) is type(expected[2]), f"{where}\nexpected {expected[2]!r}, got {got[2]!r}"
        else:
            assert got[2] is None, f"{where}\nunexpected {got[2]!r}"
            assert same(expected[0], got[0], rtol), f"{where}\nexpected {expected[0]!r}\ngot {got[0]!r}"
        for a, b in zip(expected_args[:2], got_args[:2]):
            assert same(a, b, rtol), f"{where}\nargument after the call: expected {a!r}, got {b!r}"


SETTINGS = dict(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)


@settings(max_examples=CI, **SETTINGS)
@given(cases())
def test_array_programs_match_numpy(tmp_path_factory, case):
    check(tmp_path_factory, case)


@pytest.mark.slow
@settings(max_examples=SLOW, **{**SETTINGS, "derandomize": False})
@given(cases())
def test_array_programs_match_numpy_many(tmp_path_factory, case):
    check(tmp_path_factory, case)
