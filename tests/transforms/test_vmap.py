"""scriptc.vmap, differentially: ``vmap(f)(xs)`` against ``np.stack([f(x) for x in xs])`` with ``f`` run per
example by CPython and by the compiled function, natively and through the reference interpreter. Results are
compared bit for bit except where the batched program computes with other routines than the per-example one
(vectorized transcendental functions, reductions over examples laid out with another stride), as each test says.

Control flow, errors, graphs and the fuzzer are in test_vmap_control.py."""

import math
from typing import NamedTuple

import numpy as np
import pytest

import scriptc
from scriptc.ir.registry import REGISTRY

from tests.util import assert_same_array, returned_type


# -- the oracle ------------------------------------------------------------------------------------------
def example_args(args, axes, b):
    """The arguments of example ``b``: element ``b`` along the mapped axis (a Python scalar for a 1-D array)."""
    out = []
    for a, axis in zip(args, axes):
        if axis is None:
            out.append(a)
        else:
            e = np.take(a, b, axis=axis)
            out.append(e.item() if e.ndim == 0 else e)
    return out


def stack(results, out_axes):
    """What np.stack gives for per-example results (tuples element by element)."""
    if isinstance(results[0], tuple):
        axes = out_axes if isinstance(out_axes, tuple) else (out_axes,) * len(results[0])
        return tuple(stack([r[k] for r in results], axes[k]) for k in range(len(results[0])))
    # a float64/int64 NumPy scalar from CPython counts as the Python scalar scriptc returns (docs/language.md)
    return np.stack(
        [np.asarray(r.item() if isinstance(r, np.generic) and returned_type(r) is not type(r) else r) for r in results],
        axis=out_axes,
    )


def assert_matches(got, want, rtol=0.0):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_matches(g, w, rtol)
        return
    if rtol == 0.0:
        assert_same_array(got, want)
    else:
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))  # sums of terms near cancellation
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def check(f, *args, in_axes=0, out_axes=0, rtol=0.0, python=True):
    """vmap(f) natively and interpreted against the per-example loop, compiled and (``python``) in CPython."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    v = scriptc.vmap(f, in_axes=in_axes, out_axes=out_axes)
    got = v(*args)
    compiled = stack([f(*example_args(args, axes, b)) for b in range(size)], out_axes)
    assert_matches(got, compiled, rtol)
    assert_matches(v.interpret(*args), compiled, rtol)
    if python:
        assert_matches(got, stack([f.py_func(*example_args(args, axes, b)) for b in range(size)], out_axes), rtol)
    return got


rng = np.random.default_rng(20240610)


# -- element-wise ------------------------------------------------------------------------------------------
@scriptc.script
def affine(x: np.ndarray, y: np.ndarray, s: float) -> np.ndarray:
    return (x - y) * s + np.maximum(x, 0.5) / (np.abs(y) + 1.0)


@pytest.mark.parametrize("in_axes", [0, (0, None, 0), (1, 0, None), (-1, 1, 0), (None, 0, 0)])
def test_elementwise_in_axes(in_axes):
    shapes = {0: (5, 3), 1: (3, 5), -1: (3, 5), None: (3,)}
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * 3
    x, y = (rng.standard_normal(shapes[a]) for a in axes[:2])
    s = rng.standard_normal(5) if axes[2] is not None else 0.25
    check(affine, x, y, s, in_axes=in_axes)


@pytest.mark.parametrize("out_axes", [1, -1, -2])
def test_out_axes(out_axes):
    got = check(
        affine, rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal(4), out_axes=out_axes
    )
    assert got.shape == ((3, 4) if out_axes in (1, -1) else (4, 3))


@scriptc.script
def scalar_python(a: int, b: int, t: bool, x: float) -> tuple[int, float, bool]:
    q = a // b + a % b + (t + t) - abs(a) + max(a, b) - min(a, 3) + (a << 2) - (b ^ 5)
    r = x / (abs(x) + 1.0) + x // 0.75 + x % 0.5 + float(a) + max(x, 0.25) + min(x, -0.25) + float(math.floor(x))
    return q, r + x**2 + abs(x) ** 0.5 + 2.0**x + math.sqrt(abs(x)), (a > b) != (x < 0.0) and not t


def test_python_scalar_semantics_bit_for_bit():
    """Batched scalars compute as Python does (bools add as ints, // and % floor, ** is libm's pow): exactly."""
    n = 64
    check(
        scalar_python,
        rng.integers(-50, 50, n),
        rng.integers(1, 9, n) * rng.choice([-1, 1], n),
        rng.random(n) < 0.5,
        rng.standard_normal(n) * 4,
    )


@scriptc.script
def extremes(x: float, y: float) -> tuple[float, float]:
    return max(x, y), min(x, y)


def test_python_max_min_ties_and_nan():
    """Python's max(a, b) is b only if b > a: NaN and signed zeros come out as CPython's, not np.maximum's."""
    x = np.array([math.nan, 1.0, 0.0, -0.0, 2.0, math.nan])
    y = np.array([1.0, math.nan, -0.0, 0.0, 2.0, math.nan])
    check(extremes, x, y)


@scriptc.script
def transcendental(x: float) -> float:
    return math.sin(x) * math.log1p(x * x) + math.tanh(x) + math.atan2(x, 1.5) + math.exp(x / 4.0)


@scriptc.script
def correctly_rounded(x: float) -> float:
    return math.sqrt(x + 3.0) * 3.0 - x / 7.0 + abs(x) ** 1.5 + x**2 + math.fabs(x) % 0.3


def test_math_on_batched_scalars():
    """math.f of a batched float runs as the array operator np.f: within 4 ulp where vectorized loops call
    libmvec (CPython calls libm); bit for bit for correctly rounded operations and for ** (libm's pow, as
    CPython calls it, through np.float_power)."""
    xs = rng.random(4096) * 6 - 3
    check(transcendental, xs, rtol=4e-15)
    check(correctly_rounded, xs)


@scriptc.script
def promote(x: np.ndarray, s: float, k: int) -> np.ndarray:
    return x * s + k - np.where(x < s, x, s)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_weak_scalars_keep_the_array_dtype(dtype):
    """NEP 50: a Python float times a float32 array stays float32 (the float rounded first); batched scalars
    follow the same promotion."""
    x = (rng.standard_normal((6, 5)) * 10).astype(dtype)
    got = check(promote, x, rng.standard_normal(6), rng.integers(-3, 3, 6))
    assert got.dtype == np.result_type(x.dtype, 1.0)


@scriptc.script
def predicates(x: np.ndarray, lo: float, hi: float):
    return np.where(x > lo, x, lo), np.clip(x, lo, hi), np.isnan(x), (x > hi) | (x < lo), np.round(x, decimals=2)


def test_where_clip_predicates():
    x = rng.standard_normal((5, 7))
    x[0, 1] = math.nan
    check(predicates, x, rng.random(5) - 0.5, 0.75, in_axes=(0, 0, None))


# -- reductions, scans, sorts -----------------------------------------------------------------------------------
@scriptc.script
def reductions(x: np.ndarray):
    return (
        np.sum(x),
        np.sum(x, axis=0),
        np.mean(x, axis=1),
        np.max(x),
        np.argmax(x),
        np.min(x, axis=-1),
        np.prod(x, axis=1),
        np.any(x > 1.0),
        np.all(x > -3.0, axis=0),
        x.sum(axis=1, keepdims=True),
    )


def test_reductions():
    """A full reduction of an example reduces its row of the batch; with an axis, the axis moves by one. The
    native sums follow NumPy's pairwise order per row: bit for bit."""
    check(reductions, rng.standard_normal((6, 4, 5)))


def test_reductions_of_strided_examples():
    """Examples taken along axis 2 are strided: NumPy's per-example sum iterates them in another order than the
    interpreter's sum over the transposed batch, so the last bits may differ there (native code matches)."""
    check(reductions, rng.standard_normal((4, 5, 6)), in_axes=2, rtol=1e-14)


@scriptc.script
def float32_sum(x: np.ndarray) -> tuple[float, float]:
    return np.sum(x), float(np.mean(x)) * 2.0


def test_float32_reduction_stays_float32():
    """np.sum of a float32 example is an np.float32 (as in NumPy and JAX); float() of a mean is a float."""
    got = check(float32_sum, rng.standard_normal((5, 33)).astype(np.float32))
    assert got[0].dtype == np.float32 and got[1].dtype == np.float64


@scriptc.script
def statistics(x: np.ndarray):
    return np.median(x), np.var(x), np.std(x, ddof=1), np.sort(x), np.argsort(x), np.cumsum(x), np.diff(x, n=2)


def test_statistics_sorts_scans():
    check(statistics, rng.standard_normal((5, 9)))


@scriptc.script
def flattening(m: np.ndarray):
    return np.cumsum(m), np.sort(m, axis=0), m.T, m.reshape(-1), np.argmin(m)


def test_flattening_and_views():
    check(flattening, rng.standard_normal((4, 3, 5)))


# -- matrix products ---------------------------------------------------------------------------------------
@scriptc.script
def product(a: np.ndarray, b: np.ndarray):
    return a @ b


@scriptc.script
def dot_product(a: np.ndarray, b: np.ndarray):
    return np.dot(a, b)


_CORE = {"a": {1: (30,), 2: (5, 30), 3: (2, 5, 30)}, "b": {1: (30,), 2: (30, 7), 3: (2, 30, 7)}}


@pytest.mark.parametrize("ranks", [(1, 1), (1, 2), (2, 1), (2, 2), (3, 2), (2, 3), (1, 3), (3, 1), (3, 3)])
@pytest.mark.parametrize("in_axes", [0, (0, None), (None, 0)])
def test_matmul_every_rank_bit_for_bit(ranks, in_axes):
    """Each example's product is one item of a stacked matmul with the per-example core shapes, so BLAS runs the
    per-example routine (dot, gemv or gemm) on every example: bit for bit."""
    axes = in_axes if isinstance(in_axes, tuple) else (0, 0)
    a = rng.standard_normal(((4,) if axes[0] == 0 else ()) + _CORE["a"][ranks[0]])
    b = rng.standard_normal(((4,) if axes[1] == 0 else ()) + _CORE["b"][ranks[1]])
    check(product, a, b, in_axes=in_axes)
    if max(ranks) <= 2:
        check(dot_product, a, b, in_axes=in_axes)


def test_dot_of_higher_ranks_runs_per_example():
    check(dot_product, rng.standard_normal((3, 2, 4, 6)), rng.standard_normal((3, 6, 5)))


def test_integer_and_float32_products():
    check(product, rng.integers(-5, 5, (4, 3, 2)), rng.integers(-5, 5, (4, 2)))
    check(product, rng.standard_normal((4, 3, 20)).astype(np.float32), rng.standard_normal((4, 20)).astype(np.float32))


@scriptc.script
def linear_model(w: np.ndarray, b: float, x: np.ndarray) -> np.ndarray:
    return np.tanh(x @ w + b)


def test_linear_model_over_examples():
    check(
        linear_model,
        rng.standard_normal((8, 3)),
        0.5,
        rng.standard_normal((32, 8)),
        in_axes=(None, None, 0),
        rtol=4e-15,
    )


# -- nested vmap ---------------------------------------------------------------------------------------------
@scriptc.script
def distance(a: np.ndarray, b: np.ndarray) -> float:
    d = a - b
    return math.sqrt(np.sum(d * d))


def test_nested_vmap_pairwise_matrix():
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((6, 3))
    pairwise = scriptc.vmap(scriptc.vmap(distance, in_axes=(None, 0)), in_axes=(0, None))
    got = pairwise(a, b)
    want = np.array([[distance.py_func(x, y) for y in b] for x in a])
    assert_same_array(got, want)
    assert_same_array(pairwise.interpret(a, b), want)


def test_nested_vmap_inner_axes():
    """The inner vmap maps axis 1 of each outer example (axis 2 of the argument), and puts its results last."""
    x = rng.standard_normal((3, 4, 5))
    inner = scriptc.vmap(scriptc.vmap(affine, in_axes=(1, None, None), out_axes=-1), in_axes=(0, None, 0))
    got = inner(x, rng.standard_normal(4)[:1].repeat(4), rng.standard_normal(3))
    assert got.shape == (3, 4, 5)


def test_vmap_of_vmap_of_scalars():
    @scriptc.script
    def mix(x: float, y: float) -> float:
        return x * y - max(x, y)

    table = scriptc.vmap(scriptc.vmap(mix, in_axes=(0, None)), in_axes=(None, 0))(np.arange(4.0), np.arange(3.0))
    assert_same_array(table, np.array([[mix.py_func(x, y) for x in np.arange(4.0)] for y in np.arange(3.0)]))


# -- per-sample gradients ---------------------------------------------------------------------------------
@scriptc.script
def compute_loss(weights: np.ndarray, example: np.ndarray, target: float) -> float:
    y = np.sum(example * weights)
    return (y - target) ** 2 + 0.1 * np.mean(weights * weights)


@scriptc.script
def compute_loss_matmul(weights: np.ndarray, example: np.ndarray, target: float) -> float:
    y = example @ weights
    return (y - target) ** 2


@scriptc.script
def loss_with_loop(w: np.ndarray, x: np.ndarray, t: float) -> float:
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.tanh(x * w * (i + 1.0)))
        if s > t:
            s = s * 0.5
    return s


def per_sample(fn, w, xs, ts):
    return stack([fn(w, x, t) for x, t in zip(xs, ts)], 0)


@pytest.mark.parametrize("loss", [compute_loss, compute_loss_matmul, loss_with_loop])
def test_per_sample_gradients(loss):
    """Article 000's example: vmap(grad(loss), in_axes=(None, 0, 0)) against a loop of grad calls."""
    w, xs, ts = rng.standard_normal(5), rng.standard_normal((16, 5)), rng.standard_normal(16)
    g = scriptc.grad(loss)
    try:
        g(w, xs[0], ts[0])
    except scriptc.CompileError as e:
        pytest.skip(f"grad does not differentiate this loss here: {e.reason}")
    per = scriptc.vmap(g, in_axes=(None, 0, 0))
    want = per_sample(g, w, xs, ts)
    if loss is loss_with_loop:
        # np.tanh's fused backward runs 8 lanes at a time through libmvec over the batch's 16 x 5 elements, and
        # through libm over one example's 5 (the SIMD loop's tail): last bits differ (the interpreter agrees exactly)
        got = per(w, xs, ts)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)  # (sums of tanh's last bits cancel)
    else:
        assert_same_array(per(w, xs, ts), want)
    assert_same_array(per.interpret(w, xs, ts), per_sample(lambda *a: g.interpret(*a), w, xs, ts))


@pytest.mark.parametrize(
    "make",
    [
        lambda f: scriptc.grad(f, argnums=(0, 1)),
        scriptc.value_and_grad,
        lambda f: scriptc.value_and_grad(f, argnums=(0, 2)),
    ],
)
def test_vmap_of_value_and_grad_and_argnums(make):
    g = make(compute_loss)
    w, xs, ts = rng.standard_normal(4), rng.standard_normal((8, 4)), rng.standard_normal(8)
    got = scriptc.vmap(g, in_axes=(None, 0, 0))(w, xs, ts)

    def flat(v):
        return [e for x in v for e in flat(x)] if isinstance(v, tuple) else [v]

    want = [flat(g(w, x, t)) for x, t in zip(xs, ts)]
    for k, part in enumerate(flat(got)):
        assert_same_array(part, np.stack([np.asarray(w_[k]) for w_ in want]))


# -- the compiled function --------------------------------------------------------------------------------
def test_compiled_once_per_signature_and_options_kept():
    @scriptc.script(fastmath=True, nogil=True)
    def f(x: np.ndarray) -> float:
        return np.sum(x * x)

    v = scriptc.vmap(f)
    assert (v.fastmath, v.nogil) == (True, True)
    v(rng.random((3, 4)))
    v(rng.random((7, 2)))
    v(rng.random((3, 4)).astype(np.float32))
    assert len(v._native) == 2
    assert "prim::Loop" not in str(v.graph_for(rng.random((3, 4))))


def test_operators_declare_batching_rules():
    """Every operator of the registry says how vmap batches it (a rule kind, or why it cannot)."""
    kinds = {"elementwise", "reduction", "axis", "same", "lanes", "custom", "unbatchable", "transform"}
    for name, op in REGISTRY.items():
        assert op.batch is not None, f"{name} has no batching rule"
        assert op.batch.kind in kinds, name
        assert op.batch.kind != "unbatchable" or op.batch.reason, name


class Moments(NamedTuple):
    mean: float
    top: float
    count: int


@scriptc.script
def moments(x: np.ndarray) -> Moments:
    return Moments(np.mean(x), np.max(x), x.shape[0])


def test_a_namedtuple_result_stays_its_class():
    """Batched, a NamedTuple result is an instance of its class with batched fields, as jax.vmap keeps a
    pytree's structure (it came back a plain tuple, so .mean failed)."""
    x = np.arange(12.0).reshape(3, 4)
    for got in (scriptc.vmap(moments)(x), scriptc.vmap(moments).interpret(x)):
        assert type(got) is Moments
        np.testing.assert_array_equal(got.mean, x.mean(axis=1))
        np.testing.assert_array_equal(got.count, [4, 4, 4])


@scriptc.script
def store_row(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    out = np.zeros(3)
    out[:] = w * x  # each example's (1, 3) into (3,)
    return out


def test_a_store_that_drops_a_leading_axis_per_example():
    xs, w = np.arange(6.0).reshape(2, 3), np.array([[1.0, 2.0, 3.0]])
    want = np.stack([store_row.py_func(x, w) for x in xs])
    assert_same_array(scriptc.vmap(store_row, in_axes=(0, None))(xs, w), want)
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2,3\) into shape \(3,\)"):
        scriptc.vmap(store_row, in_axes=(0, None))(xs, np.ones((2, 3)))


@scriptc.script
def logical(x: np.ndarray, y: np.ndarray):
    return np.logical_and(x > 0.5, y), np.logical_xor(x, y).sum(), np.logical_not(x[0])


def test_logical_ufuncs():
    x = rng.random((4, 5))
    x[1, 2] = 0.0
    check(logical, x, rng.random((4, 5)) > 0.5)
