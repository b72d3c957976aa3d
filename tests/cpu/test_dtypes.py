"""Differential tests of dtype conformance in native code against NumPy 2, over every supported dtype:
casts between every pair (float16 included: NaN, inf, subnormals, values rounding to inf), Python scalars
with narrow arrays (NEP 50: the scalar is converted to the loop's dtype first; OverflowError for an integer
out of range; exact comparisons), float16 arithmetic, and np.arange's length and values.

One scripted function per operator, compiled once per dtype signature; the data loops run inside the test.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import scriptc
from scriptc.backend.llvm.runtime.engine import LinkError, engine

from tests.modules import load_module

DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]
NUMERIC = [d for d in DTYPES if d != "bool"]


def samples(dtype: str) -> np.ndarray:
    """Extremes and random values of ``dtype``."""
    rng = np.random.default_rng(7)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([True, False, True, True, False])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        edge = [info.min, info.max, 0, 1, -1 if dt.kind == "i" else 2, info.max - 1, info.min + 1]
        if dtype == "int64":
            edge += [2**60 + 2**36 + 1, -(2**60 + 2**36 + 1), 2**53 + 1, 2**24 + 1, 65520, 65519]
        rand = rng.integers(info.min, info.max, 200, dtype=dt, endpoint=True)
        return np.concatenate([np.array(edge, dtype=dt), rand])
    info = np.finfo(dt)
    edge = [
        np.nan,
        -np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        info.max,
        -info.max,
        info.tiny,
        info.smallest_subnormal,
        -info.smallest_subnormal,
        0.5,
        1.5,
        2.5,
        -2.5,
        255.9,
        -1.5,
        300.7,
        3e9,
        -3e9,
        1e19,
        2.0**63,
        -(2.0**63),
        2.0**31,
        -(2.0**31) - 1,
        70000.5,
        65519.99,
        65520.0,
        65504.0,
        6e-8,
        3e-8,
        2.98e-8,
        6.1e-5,
        6.103515625e-05,
        0.1,
        2.0**60 + 2.0**36,
    ]
    with np.errstate(all="ignore"):
        edge = np.array(edge).astype(dt)
        rand = np.concatenate(
            [rng.standard_normal(100) * 10.0 ** rng.integers(-9, 9, 100), rng.uniform(-70000, 70000, 100)]
        ).astype(dt)
    return np.concatenate([edge, rand])


def within_ulps(actual, expected, ulps: int = 4) -> bool:
    """``same`` but for finite values within ``ulps`` units in the last place: array powers other than NumPy's
    fast ones call libm's pow, where NumPy (2.4, AVX-512) runs its own SIMD pow: docs/language.md: a few ulp."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.shape != expected.shape or actual.dtype.kind != "f":
        return same(actual, expected)
    finite = np.isfinite(expected)
    if not same(actual[~finite], expected[~finite]) or not np.isfinite(actual[finite]).all():
        return False
    gap = np.abs(actual[finite].astype(np.float64) - expected[finite].astype(np.float64))
    return bool(np.all(gap <= ulps * np.spacing(np.abs(expected[finite])).astype(np.float64)))


def same(actual, expected) -> bool:
    """Same dtype, shape and values, bit for bit except NaN payloads (zeros keep their sign)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return False
    if actual.dtype.kind != "f":
        return np.array_equal(actual, expected)
    nan = np.isnan(expected)
    if not np.array_equal(np.isnan(actual), nan):
        return False
    bits = f"u{actual.dtype.itemsize}"
    return np.array_equal(actual[~nan].view(bits), expected[~nan].view(bits))


def numpy_result(fn):
    """(value, None) or (None, exception) of NumPy's own evaluation, warnings silenced."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # noqa: BLE001 - compared with what native code raises
            return None, e


def close(actual, expected, ulps: int = 4) -> bool:
    """Same dtype, NaN and infinities; finite values within ``ulps`` units in the last place (for pow, which
    calls libm where NumPy calls its SIMD routines)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.dtype.kind != "f":
        return same(actual, expected)
    exact = ~np.isfinite(expected) | ~np.isfinite(actual)
    if not same(actual[exact], expected[exact]):
        return False
    a, e = actual[~exact].astype(np.float64), expected[~exact].astype(np.float64)
    return bool(np.all(np.abs(a - e) <= ulps * np.spacing(np.abs(e).astype(actual.dtype)).astype(np.float64)))


def check(scripted, args, expected_fn, what: str, interpret: bool = True, compare=None) -> None:
    expected, error = numpy_result(expected_fn)
    runners = [scripted] + ([scripted.interpret] if interpret else [])
    for run in runners:
        if error is not None:
            with pytest.raises(type(error)) as info:
                run(*args)
            assert str(info.value) == str(error), f"{what}: {info.value!r} != {error!r}"
        else:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                actual = run(*args)
            assert (compare or same)(actual, expected), f"{what}: {actual!r} != numpy {expected!r}"


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    src = []
    for d in DTYPES:
        src.append(f"@scriptc.script\ndef to_{d}(x: np.ndarray) -> np.ndarray:\n    return x.astype(np.{d})\n")
    src.append("@scriptc.script\ndef assign(d: np.ndarray, s: np.ndarray):\n    d[:] = s\n")
    src.append("@scriptc.script\ndef setitem(d: np.ndarray, v: float):\n    d[0] = v\n")
    for name, expr in BINARY.items():
        for t in ("float", "int"):
            src.append(
                f"@scriptc.script\ndef {name}_{t}(x: np.ndarray, s: {t}) -> np.ndarray:\n"
                f"    return {expr.format(x='x', s='s')}\n"
            )
    for name, expr in INPLACE.items():
        for t in ("float", "int"):
            src.append(f"@scriptc.script\ndef {name}_{t}(x: np.ndarray, s: {t}):\n    x {expr}= s\n")
    src.append(
        "@scriptc.script\ndef fused(x: np.ndarray, s: float) -> np.ndarray:\n    return (x * s + 16777217) * 0.1 - s\n"
    )
    src.append("@scriptc.script\ndef pair_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:\n    return x + y\n")
    src.append("@scriptc.script\ndef pair_mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:\n    return x * y\n")
    src.append("@scriptc.script\ndef pair_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:\n    return x / y\n")
    src.append("@scriptc.script\ndef sqrt(x: np.ndarray) -> np.ndarray:\n    return np.sqrt(x)\n")
    src.append(
        "@scriptc.script\ndef extremes(x: np.ndarray) -> tuple[float, float]:\n"
        "    return float(np.max(x)), float(np.min(x))\n"
    )
    src.append("@scriptc.script\ndef total(x: np.ndarray) -> float:\n    return float(np.sum(x))\n")
    src.append(
        "@scriptc.script\ndef arange_f(a: float, b: float, c: float) -> np.ndarray:\n    return np.arange(a, b, c)\n"
    )
    src.append("@scriptc.script\ndef arange_i(a: int, b: int, c: int) -> np.ndarray:\n    return np.arange(a, b, c)\n")
    src.append(
        "@scriptc.script\ndef arange_mixed(a: int, b: float, c: int) -> np.ndarray:\n    return np.arange(a, b, c)\n"
    )
    src.append("@scriptc.script\ndef arange_stop(n: int) -> np.ndarray:\n    return np.arange(n)\n")
    return load_module(tmp_path_factory.mktemp("dtypes"), "\n".join(src))


BINARY = {
    "add": "{x} + {s}",
    "sub": "{s} - {x}",
    "mul": "{x} * {s}",
    "div": "{x} / {s}",
    "floordiv": "{x} // {s}",
    "mod": "{x} % {s}",
    "pow": "{x} ** {s}",
    "maximum": "np.maximum({x}, {s})",
    "minimum": "np.minimum({s}, {x})",
    "where": "np.where({x} > 0, {x}, {s})",
    "clip_lo": "np.clip({x}, {s}, 100)",
    "clip_hi": "np.clip({x}, -100, {s})",
    "eq": "{x} == {s}",
    "ne": "{x} != {s}",
    "lt": "{x} < {s}",
    "le": "{x} <= {s}",
    "gt": "{x} > {s}",
    "ge": "{s} >= {x}",
}
INPLACE = {"iadd": "+", "imul": "*", "isub": "-"}
FLOAT_SCALARS = [0.1, -0.7, 1e-8, -0.0, 3.4e38, 1e39, 65520.0, 1.0000001, float("inf"), float("nan")]
INT_SCALARS = [0, -1, 3, 127, 128, -129, 255, 256, -300, 70000, 16777217, 2**60 + 2**36 + 1]
INT_OPS = {
    "add",
    "sub",
    "mul",
    "floordiv",
    "mod",
    "maximum",
    "minimum",
    "where",
    "clip_lo",
    "clip_hi",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
}


def python_eval(expr: str, x, s):
    return eval(expr.format(x="x", s="s"), {"np": np}, {"x": x, "s": s})


# -- casts ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dst", DTYPES)
def test_astype_every_pair(mod, dst):
    for src in DTYPES:
        x = samples(src)
        check(getattr(mod, f"to_{dst}"), (x,), lambda: x.astype(dst), f"{src} -> {dst}")


def test_assign_casts(mod):
    """``d[:] = s`` converts as astype does (the same conversion; fewer pairs, each pair is a compilation)."""
    pairs = [(src, dst) for src in DTYPES for dst in ("float32", "float16", "uint8")]
    pairs += [("float16", dst) for dst in DTYPES if dst not in ("float32", "float16", "uint8")]
    for src, dst in pairs:
        x = samples(src)
        d = np.zeros(len(x), dst)
        mod.assign(d, x)
        expected, _ = numpy_result(lambda: x.astype(dst))
        assert same(d, expected), f"{dst}[:] = {src}"


def test_float16_setitem_and_extremes(mod):
    values = [
        0.1,
        65519.99,
        65520.0,
        1e300,
        -1e300,
        2.98e-8,
        2.9802322387695312e-08,
        5.960464477539063e-08,
        -6.1e-5,
        float("nan"),
        float("-inf"),
        1.0009765625 + 2**-12,
        2049.0,
        2051.0,
    ]
    for v in values:
        for dtype in ("float16", "float32", "float64"):
            d = np.zeros(2, dtype)
            mod.setitem(d, v)
            e = np.zeros(2, dtype)
            with np.errstate(all="ignore"):
                e[0] = v
            assert same(d, e), (dtype, v, d, e)
    h = samples("float16")
    finite = h[np.isfinite(h)]
    assert mod.extremes(finite) == (float(np.max(finite)), float(np.min(finite)))
    small = np.arange(10, dtype=np.float16)
    assert mod.total(small) == float(np.sum(small))


def test_every_float16_bit_pattern_round_trips(mod):
    bits = np.arange(2**16, dtype=np.uint16).view(np.float16)
    wide = mod.to_float64(bits)
    assert same(wide, bits.astype(np.float64))
    assert same(mod.to_float16(wide), wide.astype(np.float16))
    # every rounding boundary: the midpoints between neighbouring halves and their neighbours
    finite = np.sort(np.unique(wide[np.isfinite(wide)]))
    mid = (finite[:-1] + finite[1:]) / 2
    near = np.concatenate([mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf), [65520.0, -65520.0]])
    assert same(mod.to_float16(near), near.astype(np.float16))


def test_int64_to_float32_rounds_once(mod):
    v = 2**60 + 2**36 + 1
    x = np.array([v], np.int64)
    assert mod.to_float32(x)[0] == np.float32(1.1529216420458004e18) == x.astype(np.float32)[0]
    f = np.zeros(1, np.float32)
    mod.assign(f, x)
    assert f[0] == x.astype(np.float32)[0]


# -- Python scalars (NEP 50) ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BINARY))
def test_weak_scalars_every_dtype(mod, name):
    expr = BINARY[name]
    compare = name in ("eq", "ne", "lt", "le", "gt", "ge")
    for dtype in NUMERIC if compare else [d for d in NUMERIC if d not in ("int32", "int16")]:
        x = samples(dtype)[:60]
        for t, scalars in (("float", FLOAT_SCALARS), ("int", INT_SCALARS)):
            if t == "int" and name not in INT_OPS:
                continue
            fn = getattr(mod, f"{name}_{t}")
            for s in scalars:
                if t == "float" and name in ("clip_lo", "clip_hi") and dtype[0] in "iu":
                    continue  # float bounds on an int array: NumPy computes in float64 (no weak-scalar subtlety)
                if name == "pow" and t == "int":
                    continue
                check(
                    fn,
                    (x, s),
                    lambda: python_eval(expr, x, s),
                    f"{dtype} {expr} with {s!r}",
                    interpret=s in (0.1, 300, -1),
                    compare=close if name == "pow" else None,
                )


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_weak_scalars(mod, name):
    op = INPLACE[name]
    for dtype in NUMERIC:
        base = samples(dtype)[:60]
        for t, scalars in (("float", FLOAT_SCALARS), ("int", INT_SCALARS)):
            if t == "float" and dtype[0] in "iu":
                continue
            fn = getattr(mod, f"{name}_{t}")
            for s in scalars:
                x = base.copy()
                expected = base.copy()
                _, error = numpy_result(lambda: exec(f"e {op}= s", {}, {"e": expected, "s": s}))
                if error is not None:
                    with pytest.raises(type(error), match=str(error)):
                        fn(x, s)
                    continue
                with np.errstate(all="ignore"):
                    fn(x, s)
                assert same(x, expected), f"{dtype} {op}= {s!r}"


def test_fused_group_with_scalars(mod):
    for dtype in ("float32", "float16", "float64"):
        x = samples(dtype)
        for s in (0.1, 3.0, 1e-5):
            check(mod.fused, (x, s), lambda: (x * s + 16777217) * 0.1 - s, f"fused {dtype} {s}")
    graph = str(mod.fused.graph_for(np.zeros(3, np.float32), 0.1))
    assert "prim::FusionGroup" in graph


def test_issue_examples(mod):
    x = np.random.default_rng(0).random(1000).astype(np.float32)
    assert same(mod.mul_float(x, 0.1), x * 0.1)
    assert same(mod.add_int(np.array([16777216.0], np.float32), 16777217), np.array([33554432.0], np.float32))
    assert same(mod.eq_float(np.array([0.1], np.float32), 0.1), np.array([True]))
    y = x.copy()
    mod.iadd_float(y, 0.1)
    assert same(y, x + np.float32(0.1))
    u = np.array([0, 5, 255], np.uint8)
    assert same(mod.gt_int(u, -1), np.array([True] * 3))
    assert same(mod.lt_int(u, -1), np.array([False] * 3))
    assert same(mod.gt_int(u, -300), np.array([True] * 3))
    assert same(mod.eq_int(np.array([1], np.int8), 1000), np.array([False]))
    with pytest.raises(OverflowError, match="^Python integer 300 out of bounds for uint8"):
        mod.add_int(u, 300)
    with pytest.raises(OverflowError, match="^Python integer 1000 out of bounds for int8"):
        mod.mul_int(np.zeros(0, np.int8), 1000)


# -- float16 arithmetic ------------------------------------------------------------------------------------


def test_float16_mixed_arithmetic_and_sqrt(mod):
    pairs = [(a, b) for a in NUMERIC for b in NUMERIC if "float16" in (a, b)]
    for a, b in pairs:
        x, y = samples(a)[:120], samples(b)[:120]
        check(mod.pair_add, (x, y), lambda: x + y, f"{a} + {b}", interpret=False)
    for a, b in [("float16", "float16"), ("int8", "float16"), ("float16", "float32")]:
        x, y = samples(a)[:120], samples(b)[:120]
        for fn, op in ((mod.pair_mul, np.multiply), (mod.pair_div, np.divide)):
            check(fn, (x, y), lambda: op(x, y), f"{a} {op.__name__} {b}", interpret=False)
    for dtype in ("uint8", "int8", "float16", "float32", "int16"):
        x = samples(dtype)
        check(mod.sqrt, (x,), lambda: np.sqrt(x), f"sqrt {dtype}")


# -- arange ------------------------------------------------------------------------------------------------

ARANGE_FLOAT = [
    (-1.0, 1.0, 0.1),
    (0.0, 1e-300, 1e300),
    (0.0, -1e-300, 1e300),
    (0.0, 1.0, math.inf),
    (1.0, 1.0, math.inf),
    (0.0, -1.0, math.inf),
    (10.0, -3.3, -0.7),
    (0.3, 0.9, 0.1),
    (1e16, 1e16 + 64, 3.0),
    (0.0, 2.0**63, 1.0),
    (0.0, 1.0, 0.0),
    (0.0, 1.0, math.nan),
    (math.nan, 1.0, 1.0),
    (0.0, math.inf, 1.0),
    (math.inf, math.inf, 1.0),
    (5.0, 5.0, -0.5),
    (-0.0, 1.0, 0.25),
]
ARANGE_INT = [
    (0, 10, 3),
    (10, -7, -3),
    (1, 1, 2),
    (1, 0, 2),
    (0, 5, 0),
    (5, 5, 0),
    (2**63 - 2, 2**63 - 1, 5),
    (-(2**63), 2**63 - 1, 2**62),
    (2**63 - 5, 2**63 - 1, 2),
    (-5, 5, 1),
    (3, -3, -1),
]


def test_arange_matches_numpy(mod):
    rng = np.random.default_rng(3)
    cases = ARANGE_FLOAT + [
        tuple(float(v) for v in rng.uniform(-50, 50, 2)) + (float(rng.uniform(-3, 3)),) for _ in range(200)
    ]
    for args in cases:
        check(mod.arange_f, args, lambda: np.arange(*args), f"arange{args}", interpret=False)
    for args in ARANGE_INT:
        check(mod.arange_i, args, lambda: np.arange(*args), f"arange{args}", interpret=False)
    for args in [(0, 1.0, 0), (0, 2.5, 1), (-3, 2.0, 2), (2, -3.5, -1)]:
        check(mod.arange_mixed, args, lambda: np.arange(*args), f"arange{args}", interpret=False)
    for n in (-1, 0, 1, 7):
        check(mod.arange_stop, (n,), lambda: np.arange(n), f"arange({n})", interpret=False)


def test_arange_issue_examples(mod):
    a = mod.arange_f(-1.0, 1.0, 0.1)
    assert a[3] == -0.7000000000000001 and same(a, np.arange(-1.0, 1.0, 0.1))
    assert len(mod.arange_f(0.0, 1e-300, 1e300)) == 1
    for args in [(-1.0, 1.0, 0.1), (0.0, 1e-300, 1e300)]:
        assert same(mod.arange_f.interpret(*args), np.arange(*args))


def test_arange_shape_inference_uses_numpy_length(mod):
    from scriptc.ops.tensor import arange_length

    for args in ARANGE_FLOAT + ARANGE_INT:
        expected, error = numpy_result(lambda: len(np.arange(*args)))
        got = arange_length(*args)
        if error is None and expected > 0:
            assert got == expected, args


# -- the JIT's symbol check --------------------------------------------------------------------------------


def test_unresolved_symbol_is_an_exception_not_an_abort():
    eng = engine()
    ir_text = """
declare double @scriptc_test_nowhere(double)
define double @uses_missing(double %x) {
  %y = call double @scriptc_test_nowhere(double %x)
  ret double %y
}
define half @needs_compiler_rt(double %x) {
  %y = fptrunc double %x to half
  ret half %y
}
"""
    with pytest.raises(LinkError, match="scriptc_test_nowhere, __truncdfhf2"):
        eng.add_module(eng.optimize(ir_text), ["uses_missing"])
    # the engine still works afterwards
    assert scriptc.script(scalar_identity)(2.5) == 2.5


def scalar_identity(x: float) -> float:
    return x


# -- powers with a literal exponent: NumPy's x ** 2 is np.square ------------------------------------------

POWERS = {
    "square": "x ** 2",
    "cube": "x ** 3",
    "first": "x ** 1",
    "zeroth": "x ** 0",
    "to_true": "x ** True",
    "float_square": "x ** 2.0",
}


@pytest.mark.parametrize("dtype", DTYPES)
def test_literal_powers_every_dtype(tmp_path, dtype):
    """``bool_array ** 2`` is int8 (np.square's bool loop) where ``** 3`` is int64: native code, the interpreter
    and NumPy agree on dtype and values for every dtype."""
    m = load_module(
        tmp_path,
        "import numpy as np\nimport scriptc\n"
        + "".join(
            f"@scriptc.script\ndef {name}(x: np.ndarray) -> np.ndarray:\n    return {expr}\n"
            for name, expr in POWERS.items()
        ),
    )
    x = samples(dtype)[:40]
    if dtype.startswith(("int", "uint")):
        x = x % 5  # no overflow: its wraparound is the same, but NumPy warns
    for name, expr in POWERS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = eval(expr, {"x": x})
        fn = getattr(m, name)
        near = within_ulps if name == "cube" else same  # (libm's pow, not one of NumPy's fast powers)
        assert near(fn(x), want), f"{dtype} {expr}: {fn(x).dtype} {fn(x)[:5]} vs {want.dtype} {want[:5]}"
        assert same(fn.interpret(x), want), f"{dtype} {expr} (interpreter)"


def test_bool_array_to_a_run_time_int_power_is_an_error(tmp_path):
    m = load_module(
        tmp_path,
        "import numpy as np\nimport scriptc\n@scriptc.script\n"
        "def power(b: np.ndarray, k: int) -> np.ndarray:\n    return b ** k\n",
    )
    with pytest.raises(scriptc.CompileError, match=r"depends on the exponent's value[\s\S]*hint: convert the array"):
        m.power(np.array([True, False]), 3)
    assert same(m.power(np.arange(4), 2), np.arange(4) ** 2)


# -- Python scalars written into integer arrays through slices, masks and np.full ---------------------------

WRITES = {
    "every_other": "y = x.copy()\n    y[::2] = v\n    return y",
    "column": "y = x.reshape(2, -1).copy()\n    y[:, 1] = v\n    return y",
    "all": "y = x.copy()\n    y[:] = v\n    return y",
    "masked": "y = x.copy()\n    y[y == 0] = v\n    return y",
    "full": "return np.full(4, v, dtype=x.dtype)",
    "full_like": "return np.full_like(x, v)",
}


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8"])
def test_python_scalar_writes_check_the_range_as_numpy(tmp_path, dtype):
    """An int outside the dtype's range is NumPy's OverflowError, a NaN or inf float written through a slice or a
    mask its ValueError/OverflowError (int(v)); np.full casts a float (as NumPy does, with a warning)."""
    m = load_module(
        tmp_path,
        "import numpy as np\nimport scriptc\n"
        + "".join(
            f"@scriptc.script\ndef {name}_{t}(x: np.ndarray, v: {t}) -> np.ndarray:\n    {body}\n"
            for name, body in WRITES.items()
            for t in ("int", "float")
        ),
    )
    x = np.zeros(4, dtype)
    for v in (300, -1, 2**40, 127, 2.7, float("nan"), float("inf"), -1e10):
        for name in WRITES:
            t = "int" if isinstance(v, int) else "float"
            fn = getattr(m, f"{name}_{t}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    want = fn.py_func(x, v)
                except (OverflowError, ValueError) as e:
                    want = e
            if isinstance(want, Exception):
                with pytest.raises(type(want), match=f"^{re.escape(str(want))}(\n|$)"):  # then where it was raised
                    fn(x, v)
            elif not (name.startswith("full") and v != v or abs(v) == float("inf")):  # the cast of NaN/inf
                assert same(fn(x, v), want), f"{name} {dtype} {v}"


# -- array ** Python scalar: NumPy's fast powers ---------------------------------------------------------------

FAST_POWER_SOURCE = """
@scriptc.script
def half(x: np.ndarray) -> np.ndarray:
    return x ** 0.5

@scriptc.script
def constants_fused(x: np.ndarray) -> np.ndarray:
    return np.exp(x * 0.0) * (x ** 0.5 + (x + 1.0) ** -1 + x ** 2.0 + x ** 1.0)

@scriptc.script
def variable(x: np.ndarray, p: float) -> np.ndarray:
    return x ** p

@scriptc.script
def variable_fused(x: np.ndarray, p: float) -> np.ndarray:
    return (x * 1.0) ** p + 0.0

@scriptc.script
def in_place(x: np.ndarray, p: float) -> np.ndarray:
    y = x.copy()
    y **= p
    return y

@scriptc.script
def array_exponent(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x ** y
"""


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int64"])
def test_scalar_powers_are_numpys_fast_powers(tmp_path, dtype):
    """``x ** 0.5`` is np.sqrt (sqrt(-0.0) is -0.0, sqrt(-inf) NaN, where pow gives 0.0 and inf), ``** -1``
    np.reciprocal, ``** 2`` np.square, ``** 1`` a copy, for a constant or a variable Python scalar, fused (SIMD)
    or not, in place; an array exponent is np.power's pow."""
    m = load_module(tmp_path, "import numpy as np\nimport scriptc\n" + FAST_POWER_SOURCE)
    rng = np.random.default_rng(5)
    if dtype == "int64":
        x = rng.integers(1, 10**6, 2000)
    else:
        x = np.concatenate([[-0.0, 0.0, -np.inf, np.inf, np.nan, -4.0, 5e-324], rng.random(2000) * 1e3]).astype(dtype)
    calls = [("half", (x,)), ("constants_fused", (x,))]
    if dtype in ("float64", "int64"):  # (float32's powf and float16's differ from pow by an ulp: docs/language.md)
        calls.append(("array_exponent", (np.abs(x), np.full(x.shape, 0.5))))
    for p in (0.5, -1.0, 2.0, 1.0, 0.0) + ((3.0, -0.5) if dtype == "float64" else ()):
        calls += [("variable", (x, p)), ("variable_fused", (x, p))]
        calls += [("in_place", (x, p))] if dtype != "int64" else []
    for name, args in calls:
        fn = getattr(m, name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = fn.py_func(*args)
        pow_call = name == "array_exponent" or len(args) > 1 and args[1] in (3.0, -0.5)  # libm's pow
        assert (within_ulps if pow_call else same)(fn(*args), want), (
            f"{name}{args[1:2] if len(args) > 1 else ''} {dtype}"
        )
