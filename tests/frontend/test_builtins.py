"""Builtins a numba/TorchScript user expects: enumerate, zip, reversed, round, divmod, sum/any/all of arrays,
math.isnan/isinf/isfinite/isclose/gcd/factorial, isinstance. Each is run compiled (native and through the
reference interpreter) against CPython on the same inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc
from tests.modules import load_module
from tests.util import assert_matches_python

SOURCE = '''
@scriptc.script
def iterate(x: np.ndarray, y: np.ndarray, n: int) -> float:
    acc = 0.0
    for i, v in enumerate(x):
        acc += i * v
    for i, v in enumerate(y, start=-3):
        acc += i * v
    for i, v in enumerate(x, 5):
        acc -= i + v
    for a, b in zip(x, y):
        acc = acc * 0.5 + a - b
    for a, b, c in zip(range(n), x, reversed(y)):
        acc += a * b * c
    for k in reversed(range(1, n, 2)):
        acc = acc * 0.25 + k
    for k in reversed(range(n)):
        acc = acc - k
    for k in reversed(range(n, -2, -3)):
        acc = acc * 0.5 + k
    for i, (a, b) in enumerate(zip(x, y)):
        acc += i + a * b
    for v in reversed(x):
        acc = acc * 0.5 + v
    return acc


@scriptc.script
def print_pairs(x: np.ndarray, n: int):
    for i, v in enumerate(x, start=n):
        print(i, v)
    for p in zip(range(n), x):
        print(p[0], p[1])   # a tuple would print NumPy scalars' repr in CPython
    for row in reversed(range(n)):
        print(row, end=" ")
    print()


@scriptc.script
def reductions(x: np.ndarray, m: np.ndarray, k: np.ndarray):
    return sum(x), sum(m), sum(k), any(m), all(m), any(x), all(x), sum(x, 1.5), sum(k, 10)


@scriptc.script
def rounding(x: float, n: int, k: int):
    return round(x), round(x, n), round(k), round(k, n), round(x, None), round(True)


@scriptc.script
def division(a: int, b: int, x: float, y: float):
    return divmod(a, b), divmod(x, y), divmod(a, y), divmod(x, b)


@scriptc.script
def predicates(x: float, k: int):
    return (math.isnan(x), math.isinf(x), math.isfinite(x), math.isnan(k), math.isinf(k), math.isfinite(k),
            math.isclose(x, 1.0), math.isclose(x, 1.0, rel_tol=0.1), math.isclose(x, 0.0, abs_tol=0.5))


@scriptc.script
def integers(a: int, b: int, c: int):
    return math.gcd(a, b), math.gcd(a, b, c), math.gcd(a), math.gcd(), math.factorial(c)


@scriptc.script
def kinds(x: float, k: int, b: bool, a: np.ndarray):
    return (isinstance(x, float), isinstance(x, int), isinstance(k, int), isinstance(k, float),
            isinstance(b, int), isinstance(b, bool), isinstance(a, np.ndarray), isinstance(x, (int, float)),
            isinstance(k, float | bool), isinstance(a, (int, float)))


@scriptc.script
def isclose_tol(x: float, t: float) -> bool:
    return math.isclose(x, 1.0, rel_tol=t)


@scriptc.script
def fact(n: int) -> int:
    return math.factorial(n)


@scriptc.script
def div_only(a: float, b: float):
    return divmod(a, b)


@scriptc.script
def round_to(x: float, n: int) -> float:
    return round(x, n)


@scriptc.script
def round_int(x: float) -> int:
    return round(x)


@scriptc.script
def round_intn(k: int, n: int) -> int:
    return round(k, n)


@scriptc.script
def reversed_elements(lo: int, hi: int, step: int, k: int) -> tuple[int, int, int]:
    """How many of the first k elements of reversed(range(lo, hi, step)) there are, the first and the k-th."""
    c = 0
    first = 0
    last = 0
    for i in reversed(range(lo, hi, step)):
        if c == 0:
            first = i
        last = i
        c += 1
        if c == k:
            break
    return c, first, last
'''


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_module(tmp_path_factory.mktemp("builtins"), SOURCE)


def both(fn, *args, rtol=0.0):
    assert_matches_python(fn, *args, rtol=rtol)
    assert_matches_python(fn, *args, rtol=rtol, runner=fn.interpret)


def test_enumerate_zip_reversed(mod):
    rng = np.random.default_rng(0)
    for nx, ny, n in [(5, 4, 6), (0, 3, 2), (3, 0, 0), (7, 7, 9), (1, 2, -1)]:
        both(mod.iterate, rng.random(nx), rng.random(ny), n)


_EDGES = [-(2**63), -(2**63) + 1, -1, 0, 1, 2**63 - 2, 2**63 - 1]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(-(2**63), 2**63 - 1) | st.sampled_from(_EDGES),
    st.integers(-(2**63), 2**63 - 1) | st.sampled_from(_EDGES),
    st.sampled_from([1, -1, 2, -3, 7, 2**62, -(2**63), 2**63 - 1]) | st.integers(-(2**63), 2**63 - 1).filter(bool),
    st.integers(1, 5),
)
def test_reversed_range_elements_at_any_length(mod, lo, hi, step, k):
    """reversed(range(lo, hi, step)) starts at the range's last element even when the range has more elements
    than an int64 counts (range(-2**63, 2**63 - 1): 2**64 - 1 of them, its trip count capped at 2**63 - 1)."""
    both(mod.reversed_elements, lo, hi, step, k)


def test_reversed_range_longer_than_int64_counts(mod):
    for args in [
        (-(2**63), 2**63 - 1, 1, 4),
        (2**63 - 1, -(2**63), -1, 3),
        (-(2**63), 2**63 - 1, 3, 2),
        (0, 5, True, 5),
        (5, 0, -1, 9),
    ]:
        both(mod.reversed_elements, *args)
    assert mod.reversed_elements(-(2**63), 2**63 - 1, 1, 4) == (4, 2**63 - 2, 2**63 - 5)


def test_enumerate_zip_print_like_python(mod):
    both(mod.print_pairs, np.array([1.5, -2.0, 3.25]), 2)
    both(mod.print_pairs, np.arange(4, dtype=np.int32), 5)


def test_sum_any_all_over_arrays(mod):
    rng = np.random.default_rng(1)
    for n in (1, 5, 17):  # sum of an empty float array: 0.0 in scriptc, the int 0 in Python (documented)
        x = rng.standard_normal(n)
        m = rng.random(n) < 0.5
        k = rng.integers(-9, 9, n)
        both(mod.reductions, x, m, k)
    both(mod.reductions, np.zeros(3), np.ones(3, bool), np.array([2**62, 2**62, 2**62]))  # wraps like NumPy


def test_sum_is_left_to_right_not_pairwise(mod):
    x = np.array([1e16, 1.0, -1e16, 1.0] * 40)
    k = np.zeros(1, np.int64)
    assert mod.reductions(x, x > 0, k)[0] == mod.reductions.py_func(x, x > 0, k)[0] != np.sum(x)


@given(st.floats(allow_nan=True, allow_infinity=True), st.integers(-330, 330))
@settings(max_examples=300, deadline=None)
def test_round_ndigits_matches_cpython(mod, x, n):
    expected = _outcome(round, x, n)
    assert _outcome(mod.round_to, x, n) == expected
    assert _outcome(mod.round_to.interpret, x, n) == expected


@given(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False, min_value=-1e18, max_value=1e18),
        st.sampled_from([0.5, 1.5, 2.5, -0.5, -2.5, 1e300, float("nan"), float("inf"), -0.0]),
    )
)
@settings(max_examples=300, deadline=None)
def test_round_to_int_is_half_even(mod, x):
    expected = _outcome(round, x)
    assert _outcome(mod.round_int, x) == expected
    assert _outcome(mod.round_int.interpret, x) == expected


@given(st.integers(-(2**63), 2**63 - 1), st.integers(-40, 3))
@settings(max_examples=300, deadline=None)
def test_round_int_ndigits(mod, k, n):
    expected = round(k, n)
    expected = (expected + 2**63) % 2**64 - 2**63  # ints are 64-bit and wrap
    assert mod.round_intn(k, n) == expected
    assert mod.round_intn.interpret(k, n) == expected


def test_round_values(mod):
    for args in [
        (2.5, 1, 1234),
        (-3.675, 2, -15),
        (0.5, 0, 25),
        (1e18, -300, 7),
        (2.675, 2, 125),
        (1.5, -1, 15),
        (123.456, -2, 150),
        (1e-320, 320, 0),
    ]:
        both(mod.rounding, *args)


def test_round_overflow_and_conversion_errors(mod):
    for fn in (mod.round_to, mod.round_to.interpret):
        with pytest.raises(OverflowError, match="rounded value too large to represent"):
            fn(1.7976931348623157e308, -308)
    for fn in (mod.round_int, mod.round_int.interpret):
        with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
            fn(float("nan"))
        with pytest.raises(OverflowError, match="cannot convert float infinity to integer"):
            fn(float("-inf"))


@given(st.integers(-(2**62), 2**62), st.integers(-(2**62), 2**62), st.floats(allow_nan=True), st.floats(allow_nan=True))
@settings(max_examples=300, deadline=None)
def test_divmod_matches_cpython(mod, a, b, x, y):
    expected = _outcome(mod.division.py_func, a, b, x, y)
    assert _outcome(mod.division, a, b, x, y) == expected
    assert _outcome(mod.division.interpret, a, b, x, y) == expected


def test_divmod_errors_are_cpythons(mod):
    for args in [(1, 0, 1.0, 1.0), (1, 1, 1.0, 0.0), (1, 1, 1.0, -0.0)]:
        both(mod.division, *args)
    for fn in (mod.division, mod.division.interpret):
        with pytest.raises(ZeroDivisionError, match="^integer division or modulo by zero"):
            fn(1, 0, 1.0, 1.0)
        with pytest.raises(ZeroDivisionError, match=r"^float divmod\(\)"):
            fn(1, 2, 1.0, 0.0)


def test_math_predicates(mod):
    for x in (0.0, 1.0, 1.05, 0.95, -0.3, float("nan"), float("inf"), -float("inf"), 1e-300):
        for k in (0, -3):
            both(mod.predicates, x, k)
    both(mod.isclose_tol, 1.0, -0.5)  # ValueError: tolerances must be non-negative
    with pytest.raises(ValueError, match="tolerances must be non-negative"):
        mod.isclose_tol(1.0, -1.0)


@given(st.integers(-(2**62), 2**62), st.integers(-(2**62), 2**62), st.integers(0, 20))
@settings(max_examples=200, deadline=None)
def test_gcd_and_factorial(mod, a, b, c):
    both(mod.integers, a, b, c)


def test_factorial_errors(mod):
    for fn in (mod.fact, mod.fact.interpret):
        with pytest.raises(ValueError, match="factorial\\(\\) not defined for negative values"):
            fn(-1)
        with pytest.raises(OverflowError, match="factorial\\(\\) of 21 does not fit in a 64-bit int"):
            fn(21)
        assert fn(20) == math.factorial(20)


def test_isinstance_is_folded(mod):
    both(mod.kinds, 1.5, 3, True, np.zeros(2))
    both(mod.kinds, 2, 3, False, np.zeros((2, 2), np.int32))  # an int passed for a float parameter
    assert "isinstance" not in str(mod.kinds.graph)


def _outcome(fn, *args):
    try:
        r = fn(*args)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return type(e), str(e).split("\n")[0]
    if isinstance(r, float) and r != r:
        return "nan"
    if isinstance(r, tuple):
        return tuple(
            "nan"
            if isinstance(v, float) and v != v
            else (type(v), v, math.copysign(1, v) if isinstance(v, float) else None)
            for v in _flatten(r)
        )
    return type(r), _wrap(r), math.copysign(1, r) if isinstance(r, float) else None


def _wrap(v):
    """ints are 64-bit and wrap in scriptc (documented)."""
    return (v + 2**63) % 2**64 - 2**63 if type(v) is int else v


def _flatten(t):
    for v in t:
        if isinstance(v, tuple):
            yield from _flatten(v)
        else:
            yield v


# -- errors --------------------------------------------------------------------------------------------------

ERRORS = [
    ("def f(x: np.ndarray) -> float:\n    return sorted(x)\n", "sorted() needs a list here", "np.sort"),
    ("def f(x: np.ndarray) -> float:\n    return sum(map(abs, x))\n", "'map' is not supported", "for loop"),
    ("def f(x: int) -> int:\n    d = dict()\n    return x\n", "'dict' is not supported", "dicts are not supported yet"),
    ("def f(x: int) -> int:\n    d = {x: 1}\n    return x\n", "dicts are not supported yet", "arrays"),
    ("def f(x: int) -> int:\n    d = {k: 1 for k in range(x)}\n    return x\n", "dicts are not supported yet", None),
    ("def f(x: int) -> int:\n    return getattr(x, 'real')\n", "'getattr' is not supported", "attributes"),
    ("def f(n: int) -> float:\n    return np.random.rand()\n", "is not supported", "outside with np.random"),
    ("def f(n: int) -> int:\n    return n + 99999999999999999999\n", "does not fit in a 64-bit int", "64-bit and wrap"),
    (
        "def f(n: int) -> int:\n    e = enumerate(range(n))\n    return n\n",
        "can only be the iterable of a for loop",
        "for ... in enumerate",
    ),
    ("def f(x: np.ndarray) -> float:\n    return sum(x)\n", "sum() of a 2-D array", "np.sum"),
    ("def f(x: float) -> bool:\n    return isinstance(x, str)\n", "isinstance() against 'str'", "np.ndarray"),
    ("def f(x: float) -> int:\n    return math.factorial(x)\n", "cannot be interpreted as an integer", None),
    ("def f(x: float) -> int:\n    return math.gcd(x, 2)\n", "cannot be interpreted as an integer", None),
    ("def f(x: np.ndarray) -> int:\n    return round(x)\n", "round() needs numbers", None),
]


@pytest.mark.parametrize("source,message,hint", ERRORS, ids=[m for _, m, _ in ERRORS])
def test_rejected_builtins_say_what_to_write(tmp_path, source, message, hint):
    mod = load_module(tmp_path, "def run(f, *args):\n    return scriptc.script(f)(*args)\n" + source)
    with pytest.raises(scriptc.CompileError) as info:
        g = scriptc.script(mod.f)
        g(np.zeros((2, 2))) if "2-D" in message else g(np.zeros(2)) if "np.ndarray" in source.split("\n")[0] else g(
            1.5
        ) if "x: float" in source else g(3)
    e = info.value
    assert message in e.reason
    assert e.filename.endswith(".py") and e.lineno >= 6 and e.col >= 1
    assert (hint is None) or (hint in (e.hint or ""))
    assert e.source.line > 0


def test_builtins_in_the_ir(tmp_path):
    from tests.util import filecheck

    m = load_module(
        tmp_path,
        """
@scriptc.script
def f(x: np.ndarray, n: int) -> float:
    assert n > 0, f"n is {n}"
    s = sum(x)
    for i, v in enumerate(x, start=n):
        s += i * v
    if not any(x):
        raise ValueError("all zero")
    return s + round(s, 2)
""",
    )
    filecheck(
        str(m.f.frontend_graph_for(np.zeros(2), 1)),
        """
CHECK: prim::If
CHECK: prim::RaiseException[exc="AssertionError"]
CHECK: %sum{{.*}} : float = prim::Loop
CHECK: aten::getitem
CHECK: aten::add
CHECK: prim::Loop
CHECK: aten::add(%n,
CHECK: %any{{.*}} : bool = prim::Loop
CHECK: aten::__not__
CHECK: prim::RaiseException[exc="ValueError"]
CHECK: prim::round_ndigits
""",
    )


@pytest.mark.parametrize(
    "x, base",
    [
        (8.0, 2.0),
        (1000.0, 10.0),
        (0.5, 2.0),
        (2.0, 1.0),
        (-1.0, 2.0),
        (2.0, 0.0),
        (1 << 62, 2),
        (3**39, 3),
        (float("inf"), 2.0),
        (2.0, float("nan")),
    ],
)
def test_math_log_with_a_base_is_cpythons(tmp_path, x, base):
    """math.log(x, base) is log(x) / log(base) as CPython computes it: its value, the domain's ValueError, the
    ZeroDivisionError of base 1."""
    m = load_module(tmp_path, "@scriptc.script\ndef f(x: float, b: float) -> float:\n    return math.log(x, b)\n")
    assert_matches_python(m.f, x, base)
    assert_matches_python(m.f, x, base, runner=m.f.interpret)
