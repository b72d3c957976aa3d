"""Random element-wise array expressions, compiled through the whole pipeline (fusion, SIMD, buffer reuse) and
compared with NumPy running the same source: dtypes, broadcasting and in-loop updates.

Integer expressions must match exactly; float64 ones within 8 ulp-ish (libmvec in SIMD groups is within
4 ulp per call, and errors compound through a few calls); float32 ones within float32 rounding."""

import itertools
import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.modules import load_module
from tests.util import run_captured

_counter = itertools.count()
EXAMPLES = int(os.environ.get("SCRIPTC_FUZZ_ARRAY_EXAMPLES", "100"))
FLOAT_UNARY = [
    "np.sin({})",
    "np.cos({})",
    "np.exp(-np.abs({}))",
    "np.sqrt(np.abs({}))",
    "np.tanh({})",
    "np.log1p(np.abs({}))",
    "-({})",
    "np.abs({})",
    "np.floor({})",
]
INT_UNARY = ["-({})", "np.abs({})", "({}) // 3", "({}) % 7"]
BINARY = [
    "({}) + ({})",
    "({}) - ({})",
    "({}) * ({})",
    "np.maximum({}, {})",
    "np.minimum({}, {})",
    "np.where(({}) > ({}), x, y)",
]
FLOAT_BINARY = ["({}) / (np.abs({}) + 1.0)"]


@st.composite
def expression(draw, kind: str, depth: int = 0):
    leaves = ["x", "y", "x[::-1]", "2", "3"] if kind == "i" else ["x", "y", "0.5", "1.5", "x[::-1]", "row"]
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(leaves))
    unary = INT_UNARY if kind == "i" else FLOAT_UNARY
    binary = BINARY + ([] if kind == "i" else FLOAT_BINARY)
    if draw(st.booleans()):
        arg = draw(expression(kind, depth + 1))
        # np.sin(0.5) is a strong np.float64 in CPython but a (weak) Python float in scriptc: a documented
        # difference in promotion with float32 arrays, so functions here always apply to arrays
        return draw(st.sampled_from(unary)).format(arg if has_array(arg) else "x")
    template = draw(st.sampled_from(binary))
    a, b = draw(expression(kind, depth + 1)), draw(expression(kind, depth + 1))
    if template.startswith("np.") and not (has_array(a) or has_array(b)):
        a = "x"
    if "np.abs" in template and not has_array(b):  # the divisor's np.abs needs an array too
        b = "y"
    return template.format(a, b)


def has_array(expr: str) -> bool:
    return any(c in expr for c in "xyw")


@st.composite
def program(draw):
    dtype = draw(st.sampled_from(["float64", "float32", "int64", "int32"]))
    kind = "i" if dtype.startswith("int") else "f"
    body = draw(expression(kind))
    update = draw(
        st.sampled_from(
            [
                "",
                "    for _ in range(n):\n        z = z * 0.5 + x\n"
                if kind == "f"
                else "    for _ in range(n):\n        z = z // 2 + x\n",
            ]
        )
    )
    if kind == "i":
        body = body.replace("row", "x")
    source = (
        "@scriptc.script\n"
        "def f(x: np.ndarray, y: np.ndarray, row: np.ndarray, n: int) -> np.ndarray:\n"
        f"    z = {body} + x * 0\n" + update + "    return z\n"
    )
    size = draw(st.integers(1, 21))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if kind == "i":
        x, y = (rng.integers(-50, 50, size).astype(dtype) for _ in range(2))
        row = x.copy()
    else:
        x, y = ((rng.standard_normal(size) * 3).astype(dtype) for _ in range(2))
        row = (rng.standard_normal(size)).astype(dtype)
    return dtype, source, (x, y, row, draw(st.integers(0, 5)))


def close(a, b, dtype) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if dtype.startswith("int"):
        return np.array_equal(a, b)
    rtol = 1e-5 if dtype == "float32" else 1e-13
    return np.allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(b), initial=0.0))), equal_nan=True)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(program())
def test_array_expressions_match_numpy(tmp_path_factory, case):
    dtype, source, args = case
    mod = load_module(tmp_path_factory.mktemp(f"arr{next(_counter)}"), source)
    expected = run_captured(mod.f.py_func, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    actual = run_captured(mod.f, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    if expected[2] is not None:
        assert type(actual[2]) is type(expected[2]), f"{source}\nexpected {expected[2]!r}, got {actual[2]!r}"
        return
    assert actual[2] is None, f"{source}\nunexpected {actual[2]!r}"
    assert close(actual[0], np.asarray(expected[0]), dtype), (
        f"{source}\nargs={args}\nnative={actual[0]!r}\nnumpy={expected[0]!r}"
    )


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(program())
def test_generated_programs_fuse(tmp_path_factory, case):
    """Every generated program (``{expr} + x * 0`` at least) must compile to a fusion group, else this fuzzer
    would not be testing fused code."""
    dtype, source, args = case
    mod = load_module(tmp_path_factory.mktemp(f"fuse{next(_counter)}"), source)
    assert "prim::FusionGroup" in str(mod.f.graph_for(*args)), source
