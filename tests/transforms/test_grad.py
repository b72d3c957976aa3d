"""scriptc.grad / value_and_grad: gradients against central finite differences and analytic derivatives,
native code against the reference interpreter, the backward graph of a loop, and the argnums errors."""

import math
import textwrap

import numpy as np
import pytest

import scriptc
from scriptc.ir.printer import print_graph

from tests.util import filecheck


def central_difference(f, args, k, h=1e-6):
    """d f / d args[k] by central differences (an array of them for an array argument)."""
    a = args[k]

    def at(value):
        moved = list(args)
        moved[k] = value
        return f(*moved)

    if isinstance(a, float):
        return (at(a + h) - at(a - h)) / (2 * h)
    out = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += h
        down[i] -= h
        out[i] = (at(up) - at(down)) / (2 * h)
    return out


def assert_close(got, want, rtol=1e-6):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    assert float(np.max(np.abs(got - want), initial=0.0)) <= rtol * scale, (got, want)


# -- scalar functions --------------------------------------------------------------------------------------
@scriptc.script
def poly_trig(x: float, y: float) -> float:
    return math.sin(x) * x**3 + y / x - math.exp(y) * math.tanh(x) + math.sqrt(x * x + y * y)


@scriptc.script
def many_fns(x: float) -> float:
    a = math.log(x) + math.log2(x) + math.log10(x) + math.log1p(x) + math.expm1(x) * math.cos(x)
    b = math.tan(x) + math.atan(x) + math.asin(x / 2.0) + math.acos(x / 3.0) + math.sinh(x) + math.cosh(x)
    c = math.atan2(x, 2.0) + math.hypot(x, 1.5) + abs(-x) + math.fabs(x) - x % 0.25 + math.fmod(x, 0.4)
    return a * b + c + x**2.5 + 2.0**x + max(x, 0.5) - min(x, 0.25) + float(math.floor(x))


@scriptc.script
def loop_branch_break(x: float, n: int) -> float:
    s = 0.0
    for i in range(n):
        if s > 10.0:
            break
        s = s + math.sin(x * i) * x**2
    return s


@scriptc.script
def early_return_while(x: float) -> float:
    if x > 1.0:
        return x * 2.0
    y = x
    while y < 5.0:
        y = y * 1.5 + math.cos(y)
    return y / x


@scriptc.script
def helper(a: float, b: float) -> float:
    if a > b:
        return a * b
    return a - b * b


@scriptc.script
def nested_loops_call(x: float, y: float) -> float:
    t = x
    for i in range(3):
        j = 0
        while j < i + 2:
            t = helper(t, y) * 0.5 + math.sin(t)
            j += 1
        if t < 0.0:
            t = -t * y
        elif t > 3.0:
            t = math.log(t)
    return t + y


@scriptc.script
def maybe_overwritten(x: float, n: int) -> float:
    k = 0
    while k < n:  # the body forgets x: with no iteration, the result is x itself
        k += 1
        x = 0.5 * k
    return x * x


SCALAR_CASES = [
    (maybe_overwritten, (1.5, 0), (0,)),
    (maybe_overwritten, (1.5, 2), (0,)),
    (poly_trig, (1.3, 0.4), (0, 1)),
    (poly_trig, (0.7, -1.2), (0, 1)),
    (many_fns, (0.9,), (0,)),
    (many_fns, (0.35,), (0,)),
    (loop_branch_break, (1.3, 5), (0,)),
    (loop_branch_break, (2.3, 8), (0,)),
    (early_return_while, (0.3,), (0,)),
    (early_return_while, (1.5,), (0,)),
    (nested_loops_call, (0.8, 0.6), (0, 1)),
    (nested_loops_call, (1.7, -0.9), (0, 1)),
]


@pytest.mark.parametrize("f, args, argnums", SCALAR_CASES)
def test_scalar_gradients_match_finite_differences(f, args, argnums):
    g = scriptc.grad(f, argnums=argnums)
    native, interpreted = g(*args), g.interpret(*args)
    assert isinstance(native, tuple) and len(native) == len(argnums)
    for k, got, oracle in zip(argnums, native, interpreted):
        assert got == oracle  # native code and the interpreter agree exactly on scalar code
        assert_close(got, central_difference(f, args, k))


@pytest.mark.parametrize("x", [0.5, 1.0, 2.5, -1.5])
def test_analytic(x):
    @scriptc.script
    def cube(x: float) -> float:
        return x**3

    @scriptc.script
    def recip_exp(x: float) -> float:
        return 1.0 / (1.0 + math.exp(-x))

    assert_close(scriptc.grad(cube)(x), 3 * x**2, 1e-14)
    s = 1.0 / (1.0 + math.exp(-x))
    assert_close(scriptc.grad(recip_exp)(x), s * (1 - s), 1e-14)
    value, slope = scriptc.value_and_grad(cube)(x)
    assert value == x**3 and slope == 3 * x**2


def test_grad_of_grad():
    @scriptc.script
    def f(x: float) -> float:
        return x**3 * math.sin(x)

    dd = scriptc.grad(scriptc.grad(f))
    for x in (0.3, 1.7):
        want = 6 * x * math.sin(x) + 6 * x**2 * math.cos(x) - x**3 * math.sin(x)
        assert_close(dd(x), want, 1e-12)
        assert_close(dd.interpret(x), want, 1e-12)


# -- arrays ------------------------------------------------------------------------------------------------
@scriptc.script
def mse(w, x: np.ndarray, y: np.ndarray) -> float:
    return np.mean((x * w - y) ** 2)


@scriptc.script
def reductions(a: np.ndarray, b: np.ndarray) -> float:
    c = np.tanh(a + b) * np.exp(-a) / (1.0 + b * b)
    s = np.sum(c, axis=0)
    return np.sum(s * s) + np.max(a) + np.sum(np.mean(np.sqrt(a * a + 1.0), axis=1) * 0.5) - np.min(np.abs(b))


@scriptc.script
def array_loop(w: np.ndarray, x: np.ndarray, steps: int) -> float:
    h = x
    for i in range(steps):
        h = np.tanh(h * w + 0.1)
        if np.sum(h) > 100.0:
            break
    return np.sum(h * h)


RNG = np.random.default_rng(7)
X, Y = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 3))


@pytest.mark.parametrize(
    "w",
    [0.7, RNG.normal(size=3), RNG.normal(size=(5, 3)), RNG.normal(size=(1, 3)), RNG.normal(size=(5, 1))],
    ids=["float", "row", "full", "1x3", "5x1"],
)
def test_mse_gradient_broadcasting(w):
    g = scriptc.grad(mse, argnums=(0, 1, 2))
    native, interpreted = g(w, X, Y), g.interpret(w, X, Y)
    for k in range(3):
        assert np.shape(native[k]) == np.shape((w, X, Y)[k])
        assert_close(native[k], interpreted[k], 1e-12)
        assert_close(native[k], central_difference(mse, [w, X, Y], k))
    value, grads = scriptc.value_and_grad(mse)(w, X, Y)
    assert value == mse(w, X, Y)
    assert_close(grads, native[0], 1e-15)


def test_reductions_and_array_loop():
    a, b = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    ga, gb = scriptc.grad(reductions, argnums=(0, 1))(a, b)
    assert_close(ga, central_difference(reductions, [a, b], 0))
    assert_close(gb, central_difference(reductions, [a, b], 1))
    w, x = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))
    for steps in (0, 1, 4):
        g = scriptc.grad(array_loop, argnums=(0, 1))
        gw, gx = g(w, x, steps)
        iw, ix = g.interpret(w, x, steps)
        assert_close(gw, iw, 1e-12)
        assert_close(gw, central_difference(array_loop, [w, x, steps], 0))
        assert_close(gx, central_difference(array_loop, [w, x, steps], 1))


# -- the graph and the errors ------------------------------------------------------------------------------
def test_backward_graph_of_a_loop():
    @scriptc.script
    def power_sum(x: float, n: int) -> float:
        s = 0.0
        for i in range(n):
            s = s * x + math.sin(x)
        return s

    g = scriptc.grad(power_sum)
    text = print_graph(g.frontend_graph_for(0.5, 4))
    filecheck(
        text,
        textwrap.dedent("""
        CHECK: %[[TAPE:.+]] : float[] = prim::ListConstruct
        CHECK: prim::Loop
        CHECK: aten::append(%[[TAPE]]
        CHECK: aten::sin
        CHECK: %[[TRIPS:.+]] : int = aten::list_len
        CHECK: prim::Loop(%[[TRIPS]]
        CHECK: aten::list_getitem(%[[TAPE]]
        CHECK: aten::cos
        CHECK: return
    """),
    )
    assert_close(g(0.5, 4), central_difference(power_sum, [0.5, 4], 0))


def test_argnums_errors():
    @scriptc.script
    def f(x: float, n: int, flag: bool) -> float:
        return x * n if flag else x

    with pytest.raises(scriptc.CompileError, match="parameter 'n' .argnums 1. is int"):
        scriptc.grad(f, argnums=1)(1.0, 2, True)
    with pytest.raises(scriptc.CompileError, match="parameter 'flag' .argnums 2. is bool"):
        scriptc.grad(f, argnums=(0, 2))(1.0, 2, True)
    with pytest.raises(scriptc.CompileError, match="out of range"):
        scriptc.grad(f, argnums=3)(1.0, 2, True)


# -- NamedTuples, products, indexing, and grad inside scripted functions -------------------------------------
from typing import NamedTuple  # noqa: E402


class Dense(NamedTuple):
    w: np.ndarray
    b: np.ndarray


class Model(NamedTuple):
    hidden: Dense
    out: Dense
    scale: float
    steps: int


@scriptc.script
def mlp_loss(m: Model, x: np.ndarray, y: np.ndarray) -> float:
    h = np.maximum(x @ m.hidden.w + m.hidden.b, 0.0)
    logits = (h @ m.out.w + m.out.b) * m.scale
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(logp * y, axis=1))


def _model():
    r = np.random.default_rng(11)
    return Model(
        Dense(r.normal(size=(4, 5)) * 0.5, r.normal(size=5) * 0.1),
        Dense(r.normal(size=(5, 3)) * 0.5, r.normal(size=3) * 0.1),
        1.3,
        7,
    )


def test_a_named_tuple_of_parameters_gets_a_named_tuple_of_gradients():
    m = _model()
    r = np.random.default_rng(12)
    x, y = r.normal(size=(6, 4)), np.eye(3)[r.integers(0, 3, 6)]
    g = scriptc.grad(mlp_loss)(m, x, y)
    assert isinstance(g, Model) and isinstance(g.hidden, Dense)
    assert g.steps == 0  # an int field has no gradient: its zero
    interpreted = scriptc.grad(mlp_loss).interpret(m, x, y)
    for path in (("hidden", "w"), ("hidden", "b"), ("out", "w"), ("out", "b")):

        def at(value, path=path):
            outer, inner = path
            return mlp_loss(m._replace(**{outer: getattr(m, outer)._replace(**{inner: value})}), x, y)

        got = getattr(getattr(g, path[0]), path[1])
        assert_close(got, getattr(getattr(interpreted, path[0]), path[1]), 1e-12)
        assert_close(got, central_difference(at, [getattr(getattr(m, path[0]), path[1])], 0))
    assert_close(g.scale, central_difference(lambda s: mlp_loss(m._replace(scale=s), x, y), [m.scale], 0))
    value, grads = scriptc.value_and_grad(mlp_loss)(m, x, y)
    assert value == mlp_loss(m, x, y) and isinstance(grads, Model)


@scriptc.script
def products(a: np.ndarray, b: np.ndarray, v: np.ndarray) -> float:
    return np.sum((a @ b) ** 2) + np.dot(v, a @ v) + np.sum(v @ b) + np.sum(np.dot(a, b.T @ v))


def test_matrix_products():
    r = np.random.default_rng(13)
    a, b, v = r.normal(size=(3, 3)), r.normal(size=(3, 3)), r.normal(size=3)
    grads = scriptc.grad(products, argnums=(0, 1, 2))(a, b, v)
    for k, got in enumerate(grads):
        assert_close(got, central_difference(products, [a, b, v], k))


@scriptc.script
def lin_loss(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return np.mean((x @ w - y) ** 2)


grad_lin_loss = scriptc.grad(lin_loss)


@scriptc.script
def descend(w: np.ndarray, x: np.ndarray, y: np.ndarray, lr: float, steps: int) -> np.ndarray:
    for _ in range(steps):
        w = w - lr * grad_lin_loss(w, x, y)
    return w


@scriptc.script
def descend_inline(w: np.ndarray, x: np.ndarray, y: np.ndarray, lr: float, steps: int) -> tuple[np.ndarray, float]:
    loss = 0.0
    for _ in range(steps):
        loss, g = scriptc.value_and_grad(lin_loss, argnums=0)(w, x, y)
        w = w - lr * g
    return w, loss


def test_grad_called_inside_a_scripted_training_loop():
    r = np.random.default_rng(14)
    x, y = r.normal(size=(20, 3)), r.normal(size=20)
    w = np.zeros(3)
    expected = w
    for _ in range(25):
        expected = expected - 0.1 * grad_lin_loss(expected, x, y)
    np.testing.assert_array_equal(descend(w, x, y, 0.1, 25), expected)
    np.testing.assert_array_equal(descend.interpret(w, x, y, 0.1, 25), expected)
    w2, loss = descend_inline(w, x, y, 0.1, 25)
    np.testing.assert_array_equal(w2, expected)
    assert "prim::CallFunction" not in str(descend.graph_for(w, x, y, 0.1, 25))  # inlined: one native loop


def test_backward_graph_of_a_branch():
    @scriptc.script
    def branchy(x: float, y: float) -> float:
        if x > y:
            z = math.sin(x) * y
        else:
            z = x * x
        return z

    g = scriptc.grad(branchy, argnums=(0, 1))
    filecheck(
        print_graph(g.frontend_graph_for(0.5, 0.25)),
        textwrap.dedent("""
        CHECK: %[[C:.+]] : bool = aten::gt(%x, %y)
        CHECK: prim::If(%[[C]])
        CHECK: aten::sin
        CHECK: aten::mul
        CHECK: prim::If(%[[C]])
        CHECK-NEXT: block0():
        CHECK: aten::sin
        CHECK: aten::cos
        CHECK: block1():
        CHECK: aten::mul
        CHECK: return
    """),
    )
    for args in ((0.5, 0.25), (0.25, 0.5)):
        for k, got in enumerate(g(*args)):
            assert_close(got, central_difference(branchy, list(args), k))


def test_what_is_not_differentiable_is_a_compile_error_with_the_line():
    @scriptc.script
    def scan_product(x: np.ndarray) -> float:
        return np.sum(np.cumprod(x))

    with pytest.raises(scriptc.CompileError, match=r"aten::cumprod is not differentiable") as e:
        scriptc.grad(scan_product)(np.ones(3))
    assert "test_grad.py:" in str(e.value) and "^" in str(e.value)
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        scriptc.grad(scan_product, argnums=0.5)
    assert scriptc.grad(scan_product, argnums=[0]) is scriptc.grad(scan_product, argnums=(0,))


@scriptc.script
def joined(x: np.ndarray, y: np.ndarray) -> float:
    c = np.concatenate([x, y * 2.0], axis=0)
    s = np.stack([x[:3], y[1:4]], axis=1)
    d = np.diff(c, n=2) + np.round(c[:7])
    return np.sum(c * c) + np.sum(s**3) + np.sum(d * np.arange(d.shape[0]))


def test_concatenate_stack_diff_round():
    x, y = RNG.random(5), RNG.random(4)
    g = scriptc.grad(joined, argnums=(0, 1))
    native, interpreted = g(x, y), g.interpret(x, y)
    for k in range(2):
        assert_close(native[k], interpreted[k], 1e-12)
        assert_close(native[k], central_difference(joined, [x, y], k))


@scriptc.script
def from_displays(a: float, b: float, x: np.ndarray) -> float:
    v = np.array([a, b * 2.0, 3.0])
    m = np.array([x, x * a, x[::-1]])
    return np.sum(v * v * np.arange(3.0)) + np.sum(m**3) + float(np.array([a * b])[0])


def test_arrays_from_list_displays():
    """np.array([a, b]) of floats and of arrays: each element's adjoint is its element (row) of the result's."""
    a, b, x = 0.7, -1.3, RNG.random(4)
    g = scriptc.grad(from_displays, argnums=(0, 1, 2))
    native, interpreted = g(a, b, x), g.interpret(a, b, x)
    for k in range(3):
        assert_close(native[k], interpreted[k], 1e-12)
        assert_close(native[k], central_difference(from_displays, [a, b, x], k))


@scriptc.script
def root_of_abs(y: float) -> float:
    return math.sqrt(abs(y))


@scriptc.script
def arcsine(x: float) -> float:
    return math.asin(x)


@scriptc.script
def root_of_array(x: np.ndarray) -> float:
    return float(np.sum(np.sqrt(x)))


def test_infinite_derivatives_are_inf_not_zero_division():
    """Where a function is defined but its derivative is not finite, the derivative is inf (jax and torch give
    the same), native and interpreted; not the ZeroDivisionError of Python's division in the rule."""
    for g, x, expected in (
        (scriptc.grad(root_of_abs), 0.0, math.inf),
        (scriptc.grad(arcsine), 1.0, math.inf),
        (scriptc.grad(arcsine), -1.0, math.inf),
        (scriptc.grad(root_of_abs), 4.0, 0.25),
    ):
        assert g(x) == expected and g.interpret(x) == expected, (g, x)
    with np.errstate(divide="ignore"):
        got = scriptc.grad(root_of_array)(np.array([0.0, 4.0]))
    np.testing.assert_array_equal(got, [math.inf, 0.25])
    with pytest.raises(ValueError, match="math domain error"):  # outside the domain the function raises
        scriptc.grad(arcsine)(1.5)


def test_a_derivative_rule_division_is_printed_and_parsed_with_its_attribute():
    from scriptc.ir import parse

    text = print_graph(scriptc.grad(root_of_abs).graph_for(2.0))
    assert "aten::div[ieee=True]" in text
    again = parse(text)
    assert print_graph(again) == text
    assert any(n.kind == "aten::div" and n.attrs.get("ieee") is True for n in again.walk())


# -- operands broadcast against each other inside a whole-array reduction ------------------------------------
@scriptc.script
def sum_of_product(a: np.ndarray, b: np.ndarray) -> float:
    return np.sum(a * b)


@scriptc.script
def mean_of_quotient(a: np.ndarray, b: np.ndarray) -> float:
    return np.mean(a / (b + 3.0))


@scriptc.script
def sum_of_where(a: np.ndarray, b: np.ndarray) -> float:
    return np.sum(np.where(a > 0.5, a, b) * 2.0)


@pytest.mark.parametrize("fn", [sum_of_product, mean_of_quotient, sum_of_where], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "shapes", [((3, 1), (1, 4)), ((3, 4), (4,)), ((1,), (5,)), ((2, 3), (2, 3)), ((4,), ())], ids=str
)
def test_operands_broadcast_inside_a_total_reduction(fn, shapes):
    """The whole reduction's adjoint is one number for every element of the broadcast result: each operand's
    gradient sums it over the axes the operand was broadcast along (it was summed as if the other operand
    already had the result's shape: (1, 1) gradients for (3, 1) and (1, 4) operands)."""
    rng = np.random.default_rng(len(shapes[0]) + 7 * len(shapes[1]))
    a, b = rng.random(shapes[0]), rng.random(shapes[1])
    if b.ndim == 0:
        b = rng.random((4,))[:1].reshape(())
    grads = scriptc.grad(fn, argnums=(0, 1))
    for got in (grads(a, b), grads.interpret(a, b)):
        for k in range(2):
            assert_close(got[k], central_difference(fn.py_func, [a, b], k))


@scriptc.script
def clipped(x: np.ndarray, lo: float, hi: np.ndarray) -> float:
    return np.sum(np.clip(x, lo, hi) ** 2)


@scriptc.script
def clipped_as_extrema(x: np.ndarray, lo: float, hi: np.ndarray) -> float:
    return np.sum(np.minimum(np.maximum(x, lo), hi) ** 2)


def test_clip_passes_gradients_to_its_bounds():
    """Elements clipped at a bound give that bound their gradient (both bounds got none), as np.clip's
    minimum(maximum(x, lo), hi) does, ties included."""
    x, hi = np.array([-2.0, 0.5, 3.0, 4.0, 1.0, 0.0]), np.array([2.0, 2.0, 2.0, 5.0, 1.0, 1.0])
    grads = scriptc.grad(clipped, argnums=(0, 1, 2))
    smooth = x[:4], hi[:4]  # no element at a kink: central differences apply
    for got in (grads(smooth[0], 0.0, smooth[1]), grads.interpret(smooth[0], 0.0, smooth[1])):
        for k in range(3):
            assert_close(got[k], central_difference(clipped.py_func, [smooth[0], 0.0, smooth[1]], k))
    at_ties = grads(x, 0.0, hi)
    for got, want in zip(at_ties, scriptc.grad(clipped_as_extrema, argnums=(0, 1, 2))(x, 0.0, hi)):
        np.testing.assert_array_equal(got, want)


@scriptc.script
def root(x: float) -> float:
    return x**0.5


@scriptc.script
def power_zero(x: float) -> float:
    return x**0.0 + x


@scriptc.script
def math_root(x: float) -> float:
    return math.pow(x, 0.5) + math.sqrt(x)


def test_powers_below_one_at_zero_have_ieee_derivatives():
    """d(x ** 0.5)/dx at 0 is inf, as math.sqrt's; d(x ** 0.0)/dx is 0: the rules computed 0.0 ** -0.5 with
    Python's ** (ZeroDivisionError) or math.pow (ValueError)."""
    for fn, want in ((root, math.inf), (power_zero, 1.0), (math_root, math.inf)):
        g = scriptc.grad(fn)
        assert g(0.0) == g.interpret(0.0) == want
        assert g(4.0) == pytest.approx(central_difference(fn.py_func, [4.0], 0), rel=1e-6)


@scriptc.script
def mixed_precision(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> float:
    return np.sum((x * w + b) ** 2) + np.sum(x @ np.ones((3, 2)))


def test_gradients_of_mixed_float32_and_float64_have_their_parameters_dtypes():
    """A float32 parameter's gradient is float32, a float64 one's float64 (as in JAX): the float32 operand's
    adjoint was float64, and summing it back to a (1,)-shaped float32 operand failed to verify."""
    rng = np.random.default_rng(11)
    x, w, b = rng.random((4, 3)).astype(np.float32), rng.random(3), rng.random(1).astype(np.float32)
    grads = scriptc.grad(mixed_precision, argnums=(0, 1, 2))
    for got in (grads(x, w, b), grads.interpret(x, w, b)):
        assert [g.dtype for g in got] == [np.float32, np.float64, np.float32]
        wide = [x.astype(np.float64), w, b.astype(np.float64)]
        for k in range(3):
            assert_close(got[k], central_difference(mixed_precision.py_func, wide, k), rtol=1e-5)


@scriptc.script
def noisy(x: np.ndarray, lo: float, key: np.ndarray) -> float:
    shifted = scriptc.random.uniform(key, (x.shape[0],), minval=lo, maxval=lo + 2.0)
    return np.sum((x + 0.5 * scriptc.random.normal(key, (x.shape[0],))) * shifted)


def test_gradients_flow_through_random_draws_to_their_bounds_and_neighbours():
    """A draw is a function of its bounds (uniform's minval and maxval) and not of its key: differentiating a
    function that draws compiled (the draw's rule failed to type: 'reshape needs an array, got float')."""
    x, key = np.array([0.3, -1.2, 2.0]), scriptc.random.key(4)
    grads = scriptc.grad(noisy, argnums=(0, 1))
    for got in (grads(x, 0.25, key), grads.interpret(x, 0.25, key)):
        for k in range(2):
            assert_close(got[k], central_difference(noisy.py_func, [x, 0.25, key], k), rtol=1e-5)


@scriptc.script
def max_and_row_mins(x: np.ndarray) -> float:
    return np.max(x) + np.sum(np.min(x, axis=1) * np.array([1.0, 10.0]))


def test_tied_extrema_share_their_gradient_equally():
    """As JAX: the elements equal to a max or min share its adjoint (each got all of it, so the gradient's sum
    was twice the derivative along x + t for two ties); a NaN extremum gives no element anything."""
    x = np.array([[2.0, 5.0, 2.0], [1.0, 5.0, 1.0]])
    want = np.array([[0.5, 0.5, 0.5], [5.0, 0.5, 5.0]])
    grad = scriptc.grad(max_and_row_mins)
    for got in (grad(x), grad.interpret(x)):
        np.testing.assert_array_equal(got, want)
    direction = np.ones_like(x)
    h = 1e-6
    assert float(np.sum(want * direction)) == pytest.approx(
        (max_and_row_mins.py_func(x + h * direction) - max_and_row_mins.py_func(x - h * direction)) / (2 * h)
    )
    x[0, 1] = np.nan
    np.testing.assert_array_equal(grad(x)[0], [0.0, 0.0, 0.0])


@scriptc.script
def recursive_power(x: float, n: int) -> float:
    if n == 0:
        return 1.0
    return x * recursive_power(x, n - 1)


def test_a_recursive_call_is_named_as_what_grad_cannot_differentiate():
    with pytest.raises(
        scriptc.CompileError,
        match=r"grad: a recursive call \(of recursive_power, which calls "
        r"itself\) is not differentiable",
    ) as info:
        scriptc.grad(recursive_power)(1.5, 3)
    assert f":{recursive_power.py_func.__code__.co_firstlineno + 4}:" in str(info.value)


@scriptc.script
def stored_row(x: np.ndarray, w: np.ndarray) -> float:
    out = np.zeros(3)
    out[:] = w * x  # (1, 3) into (3,): the leading axis of length 1 is dropped
    return np.sum(out * out)


def test_gradient_through_a_store_that_drops_a_leading_axis():
    x, w = np.array([0.5, 0.25, 2.0]), np.array([[1.0, 2.0, 3.0]])
    grads = scriptc.grad(stored_row, (0, 1))
    for gx, gw in (grads(x, w), grads.interpret(x, w)):
        np.testing.assert_allclose(gx, 2 * (w * x)[0] * w[0], rtol=1e-15)
        assert gw.shape == (1, 3)
        np.testing.assert_allclose(gw, 2 * (w * x) * x, rtol=1e-15)
