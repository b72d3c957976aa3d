"""Fused element-wise groups of float32 arrays on the explicit SIMD loop (simd.py): W float lanes at a time,
calling libmvec's float variants (``_ZGVeN16v_expf``, ...). Exact operations (+ - * /, sqrt, comparisons, where,
maximum, minimum, Python scalars rounded to float32 first) give NumPy's float32 bits; library functions are within
4 ulp of NumPy's. Checked against NumPy and the interpreter over lengths around the vector width, contiguous and
strided operands, and in time loops (prim::FusedLoop)."""

import numpy as np
import pytest

import scriptc
from scriptc.backend.llvm.runtime.engine import engine

LENGTHS = [0, 1, 15, 16, 17, 1000]


def exactly(got, want) -> bool:
    """Bit-identical arrays (NaNs included) of the same dtype and shape."""
    got, want = np.asarray(got), np.asarray(want)
    return (
        got.dtype == want.dtype
        and got.shape == want.shape
        and np.array_equal(np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8))
    )


def within_ulp(got, want, maxulp=4) -> None:
    """Same dtype and shape, NaN where the other is NaN, the same infinities, and within ``maxulp`` elsewhere."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    finite = ~nan & ~inf
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=maxulp)


def data(n, seed=0, scale=3.0, positive=False):
    z = (np.random.default_rng(seed + n).standard_normal(n) * scale).astype(np.float32)
    return np.abs(z) + np.float32(1e-3) if positive else z


@scriptc.script
def f_exp(z):
    return np.exp(z)


@scriptc.script
def f_log(z):
    return np.log(z)


@scriptc.script
def f_sin(z):
    return np.sin(z)


@scriptc.script
def f_cos(z):
    return np.cos(z)


@scriptc.script
def f_tanh(z):
    return np.tanh(z)


@scriptc.script
def f_exp_affine(z):
    return np.exp(z) * 2.0 + 1.0


@scriptc.script
def f_arith(z, y):
    return (z * 0.1 + 3) / 7.0 - z * y + y / 3.0


@scriptc.script
def f_scalars(z, a: float, k: int):
    return z * a + k - a / z


@scriptc.script
def f_select(z, y):
    return np.where(z > 0.5, np.maximum(z, y * 0.25), np.minimum(-z, y))


@scriptc.script
def f_misc(z):
    return np.sqrt(np.abs(z)) + z**2 - np.floor(z) * np.ceil(z * 0.5)


LIBRARY = [
    (f_exp, np.exp, {}),
    (f_log, np.log, {"positive": True}),
    (f_sin, np.sin, {}),
    (f_cos, np.cos, {}),
    (f_tanh, np.tanh, {}),
]


def layouts(n, **kw):
    """The same values as a contiguous vector, a strided view and a reversed one (not contiguous: scalar loop)."""
    z = data(n, **kw)
    strided = np.empty(2 * n, np.float32)[::2]
    strided[:] = z
    yield z
    yield strided
    yield z[::-1].copy()[::-1]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("fn,ref,kw", LIBRARY, ids=[f.__name__ for f, _, _ in LIBRARY])
def test_library_functions_match_numpy(fn, ref, kw, n):
    for z in layouts(n, **kw):
        got = fn(z)
        assert got.dtype == np.float32
        within_ulp(got, ref(z))
        within_ulp(got, fn.interpret(z))


@pytest.mark.parametrize("n", LENGTHS)
def test_library_function_then_arithmetic(n):
    for z in layouts(n):
        got = f_exp_affine(z)
        assert got.dtype == np.float32
        within_ulp(got, np.exp(z) * 2.0 + 1.0)
        within_ulp(got, f_exp_affine.interpret(z))


@pytest.mark.parametrize("n", LENGTHS)
def test_exact_operations_are_numpys_float32_bits(n):
    y = data(n, seed=7)
    for z in layouts(n):
        for fn, args, want in [
            (f_arith, (z, y), (z * 0.1 + 3) / 7.0 - z * y + y / 3.0),
            (f_scalars, (z, 0.1, 3), z * 0.1 + 3 - 0.1 / z),
            (f_scalars, (z, 1e-3, 16777217), z * 1e-3 + 16777217 - 1e-3 / z),
            (f_select, (z, y), np.where(z > 0.5, np.maximum(z, y * 0.25), np.minimum(-z, y))),
            (f_misc, (z,), np.sqrt(np.abs(z)) + z**2 - np.floor(z) * np.ceil(z * 0.5)),
        ]:
            got = fn(*args)
            assert exactly(got, want), (fn.__name__, args[1:])
            assert exactly(got, fn.interpret(*args)), fn.__name__


def test_python_scalars_are_rounded_to_float32_first():
    # z * 0.1 in float32 multiplies by float32(0.1); through double it would round twice, differently here
    z = np.arange(1, 2001, dtype=np.float32) / np.float32(7)
    assert exactly(f_scalars(z, 0.1, 3), z * 0.1 + 3 - 0.1 / z)
    assert not exactly(
        f_scalars(z, 0.1, 3), (z.astype(np.float64) * 0.1 + 3 - 0.1 / z.astype(np.float64)).astype(np.float32)
    )


def test_special_values():
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, -3e38, 88.7, 89.0, -104.0, 1e30, -1e30, 1.0, -1.0]
        * 3,
        np.float32,
    )
    for fn, ref, _ in LIBRARY:
        with np.errstate(all="ignore"):
            within_ulp(fn(special), ref(special))
    with np.errstate(all="ignore"):
        assert exactly(
            f_select(special, special[::-1].copy()),
            np.where(special > 0.5, np.maximum(special, special[::-1] * 0.25), np.minimum(-special, special[::-1])),
        )


def test_two_dimensional_and_mixed_dtypes():
    z = data(2000, seed=3).reshape(40, 50)
    within_ulp(f_exp(z), np.exp(z))
    within_ulp(f_exp(z.T), np.exp(z.T))  # Fortran order
    within_ulp(f_sin(z[:, ::3]), np.sin(z[:, ::3]))
    assert exactly(f_arith(z, z[::-1].copy()), (z * 0.1 + 3) / 7.0 - z * z[::-1] + z[::-1] / 3.0)
    y64 = np.linspace(-1, 1, 50)  # a float64 operand: a float64 group (the float32 one converted exactly)
    assert exactly(f_arith(z, y64), (z * 0.1 + 3) / 7.0 - z * y64 + y64 / 3.0)
    h = z.astype(np.float16)  # float16 stays scalar (computed in float32, rounded to float16)
    with np.errstate(all="ignore"):
        assert exactly(f_exp(h), f_exp.interpret(h))


@scriptc.script
def f_sum(z):
    return np.sum(z * 0.5 + 1.0)


def test_sum_of_a_float32_group():
    for n in LENGTHS:
        z = data(n, seed=5)
        assert exactly(np.asarray(f_sum(z)), np.sum(z * 0.5 + 1.0))


@scriptc.script
def f_time_loop(x, n: int):
    for i in range(n):
        x = x * 0.5 + i
    return x


@scriptc.script
def f_time_loop_tanh(x, n: int):
    for _ in range(n):
        x = np.tanh(x) * 0.5 + 0.75  # no cancellation: 1 ulp of tanh stays about 1 ulp
    return x


@pytest.mark.parametrize("n", LENGTHS)
def test_time_loops(n):
    for x in layouts(n):
        for trips in (0, 1, 9):
            assert exactly(f_time_loop(x, trips), f_time_loop.py_func(x, trips))
            within_ulp(f_time_loop_tanh(x, trips), f_time_loop_tanh.py_func(x, trips), maxulp=8)


def _float_variant(ir_text: str, name: str) -> list[str]:
    return [
        line for line in ir_text.splitlines() if line.startswith("declare") and "_ZGV" in line and f"_{name}f(" in line
    ]


needs_libmvec_float = pytest.mark.skipif(
    "expf" not in engine().vector_math, reason="no libmvec float variant this CPU runs"
)


@needs_libmvec_float
def test_time_loop_calls_a_libmvec_float_variant():
    x = data(100)
    text = f_time_loop_tanh.inspect_llvm(x, 3)
    lanes = engine().vector_math["tanhf"][0][1]
    assert any(f"<{lanes} x float>" in line for line in _float_variant(text, "tanh")), text
    assert not _float_variant(f_time_loop_tanh.inspect_llvm(x.astype(np.float16), 3), "tanh")


@needs_libmvec_float
def test_float32_exp_group_calls_a_libmvec_float_variant():
    z = data(1000)
    text = f_exp.inspect_llvm(z)
    lanes = engine().vector_math["expf"][0][1]
    assert any(f"<{lanes} x float>" in line for line in _float_variant(text, "exp")), text


def test_float16_and_integer_groups_stay_scalar():
    h = data(100).astype(np.float16)
    assert "_ZGV" not in f_exp.inspect_llvm(h)
    assert "_ZGV" not in f_arith.inspect_llvm(np.arange(10), np.arange(10))
