"""Derivatives against JAX (float64): higher orders through loops, branches, in-place writes and lists (the
gradient graph's own tapes differentiated again), and JAX's rules at ties and at signed zeros. Each program is
written twice, once for scriptc and once for jax.numpy, line for line; native code and the interpreter must
both match JAX. JAX runs in a child process (``jax_reference.py``); its twins of these programs are in
``jax_programs.py``."""

import math

import numpy as np
import pytest

import scriptc
from tests.jax_reference import jax_values


def nth(grad, f, order):
    for _ in range(order):
        f = grad(f)
    return f


# -- higher orders through loops ------------------------------------------------------------------------------
@scriptc.script
def power_by_loop(x: float) -> float:
    y = 1.0
    for _ in range(4):
        y = y * x
    return y


@scriptc.script
def sine_twice(x: float) -> float:
    y = x
    for _ in range(2):
        y = np.sin(y)
    return y


@scriptc.script
def fourier_times_x(x: float) -> float:
    s = 0.0
    for k in range(1, 6):
        s = s + math.sin(k * x) / k
    return s * x


@scriptc.script
def array_recurrence(x: float) -> float:
    v = np.linspace(0.0, 1.0, 5)
    s = 0.0
    for k in range(3):
        v = np.sin(v * x) + x
        s = s + np.sum(v * v)
    return s


@scriptc.script
def branches_in_nested_loops(x: float) -> float:
    y = x
    for i in range(3):
        if y > 0.5:
            y = y * y
        else:
            y = np.exp(y)
        for j in range(2):
            y = y * 0.5 + np.cos(y)
    return y


@scriptc.script
def in_place_in_a_loop(x: float) -> float:
    v = np.linspace(0.0, 1.0, 5)
    s = 0.0
    for k in range(3):
        a = v * x
        a += v * x * x
        s = s + np.sum(a * a)
    return s


@scriptc.script
def history_list(x: float) -> float:
    hist = [x]
    for i in range(4):
        hist.append(np.sin(hist[-1]) * x)
    s = 0.0
    while len(hist) > 2:
        s = s + hist.pop() * hist[0]
    hist.insert(1, x * x)
    hist[0] = hist[1] * 3.0
    return s + hist[0] + hist[-1]


@scriptc.script
def list_of_arrays(x: float) -> float:
    arrs = [np.linspace(0.0, 1.0, 4) * x]
    for i in range(3):
        arrs.append(np.cos(arrs[i]) + x)
    return np.sum(arrs[-1] * arrs[1]) + np.sum(arrs[0])


HIGHER = [
    (power_by_loop, 3),
    (sine_twice, 3),
    (fourier_times_x, 3),
    (array_recurrence, 3),
    (branches_in_nested_loops, 3),
    (in_place_in_a_loop, 2),
    (history_list, 3),
    (list_of_arrays, 3),
]
ORDERS = [(f, k) for f, most in HIGHER for k in range(1, most + 1)]
POINTS = (0.7, -0.4)


@scriptc.script
def fourth(x: float) -> float:
    y = x
    for i in range(3):
        y = np.sin(y) * x
    return y


@pytest.fixture(scope="module")
def derivatives():
    """JAX's derivatives of every order checked, at each point (one child process for all)."""
    calls = [(f.__name__, k, x) for f, k in ORDERS + [(fourth, 4)] for x in POINTS]
    values = jax_values("tests.jax_programs", [f"float(nth(jax.grad, {name}_jax, {k})({x!r}))" for name, k, x in calls])
    return dict(zip(calls, values))


# third derivatives whose graphs take 25-50 s to build and compile run with `make test-slow`
SLOW_ORDERS = {(array_recurrence, 3), (branches_in_nested_loops, 3), (list_of_arrays, 3)}


@pytest.mark.parametrize(
    "f, order",
    [
        pytest.param(f, k, marks=[pytest.mark.slow] if (f, k) in SLOW_ORDERS else [], id=f"{f.__name__}-{k}")
        for f, k in ORDERS
    ],
)
def test_derivatives_of_every_order_match_jax(derivatives, f, order):
    ours = nth(scriptc.grad, f, order)
    for x in POINTS:
        want = derivatives[f.__name__, order, x]
        assert ours(x) == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert ours.interpret(x) == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_fourth_derivative_through_a_loop(derivatives):
    assert nth(scriptc.grad, fourth, 4)(0.7) == pytest.approx(derivatives["fourth", 4, 0.7], rel=1e-11)


def test_a_list_mutated_in_a_loop_is_replayed_not_mutated_again():
    """The backward recomputes the loop body: it must not append again (len() grew: 18 instead of 9) nor pop
    again (IndexError: pop from empty list)."""

    @scriptc.script
    def counted(x: float) -> float:
        idx = [0]
        s = 0.0
        for i in range(3):
            idx.append(i)
            s = s + x * len(idx)
        return s

    @scriptc.script
    def popped(x: float) -> float:
        idx = [1, 2, 3]
        s = 0.0
        for i in range(3):
            k = idx.pop()
            s = s + x * k
        return s

    for g in (scriptc.grad(counted), scriptc.grad(counted).interpret):
        assert g(1.0) == 9.0
    for g in (scriptc.grad(popped), scriptc.grad(popped).interpret):
        assert g(1.0) == 6.0


def test_a_list_made_from_derivatives_then_written_is_a_compile_error():
    @scriptc.script
    def doubled(x: float) -> float:
        xs = [x] * 3
        xs.append(1.0)
        return xs[0]

    with pytest.raises(
        scriptc.CompileError,
        match="grad: a list made by aten::list_mul from values that carry derivatives, then written in place",
    ):
        scriptc.grad(doubled)(1.0)


# -- ties and signed zeros: JAX's rules --------------------------------------------------------------------
@scriptc.script
def np_maximum(a: float, b: float) -> float:
    return np.maximum(a, b)


@scriptc.script
def np_minimum(a: float, b: float) -> float:
    return np.minimum(a, b)


@scriptc.script
def builtin_max(a: float, b: float) -> float:
    return max(a, b)


@scriptc.script
def builtin_min(a: float, b: float) -> float:
    return min(a, b)


@scriptc.script
def relu(a: float, b: float) -> float:
    return np.maximum(a, 0.0) + b


@scriptc.script
def clipped(a: float, b: float) -> float:
    return np.clip(a, b, 2.0)


@scriptc.script
def absolutes(a: float, b: float) -> float:
    return abs(a) + np.abs(b)


TIES = [np_maximum, np_minimum, builtin_max, builtin_min, relu, clipped, absolutes]
TIE_POINTS = [(1.0, 1.0), (0.0, 0.0), (-0.0, -0.0), (0.0, -0.0), (2.0, 2.0), (1.0, 2.0), (3.0, 2.0), (-1.5, -2.0)]
ARRAY_TIES = (np.array([0.0, 1.0, -0.0, 1.0, 2.0, np.nan]), np.array([0.0, 1.0, 0.0, 0.5, 3.0, 1.0]))


@pytest.fixture(scope="module")
def tie_gradients():
    calls = [(f.__name__, a, b) for f in TIES for a, b in TIE_POINTS]
    exprs = [f"jax.grad(TIES[{name!r}], (0, 1))({a!r}, {b!r})" for name, a, b in calls]
    a, b = (f"np.array({list(map(float, v))!r})" for v in ARRAY_TIES)
    exprs += [f"jax.grad(array_ties_jax, (0, 1))({a}.astype({d!r}), {b}.astype({d!r}))" for d in ("float64", "float32")]
    values = jax_values("tests.jax_programs", exprs)
    return dict(zip(calls + ["float64", "float32"], values))


@pytest.mark.parametrize("a, b", TIE_POINTS)
@pytest.mark.parametrize("f", TIES, ids=[f.__name__ for f in TIES])
def test_scalar_ties_and_signed_zeros_as_jax(tie_gradients, f, a, b):
    want = tuple(float(v) for v in tie_gradients[f.__name__, a, b])
    g = scriptc.grad(f, (0, 1))
    assert g(a, b) == want
    assert g.interpret(a, b) == want


@scriptc.script
def array_ties(a: np.ndarray, b: np.ndarray) -> float:
    return np.sum(np.maximum(a, b)) + np.sum(np.minimum(a, b) * 3.0) + np.sum(np.clip(a, b, 1.0)) + np.sum(np.abs(a))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_array_ties_as_jax(tie_gradients, dtype):
    a, b = (v.astype(dtype) for v in ARRAY_TIES)
    want = tie_gradients[dtype]
    g = scriptc.grad(array_ties, (0, 1))
    for got in (g(a, b), g.interpret(a, b)):
        for x, y in zip(got, want):
            assert x.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(x, y)
