"""Matrix products (``@``, ``np.matmul``, ``np.dot``) against NumPy: every layout NumPy produces, float products
through OpenBLAS (scriptc.backend.llvm.runtime.blas), integer and bool products through the generated loop, batches,
empty dimensions, dtype promotion and NumPy's exact error messages."""

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc
from scriptc.backend.llvm import compile_graph
from scriptc.backend.llvm.runtime import blas
from scriptc.backend.llvm.lowering.arrays import allocation_count
from tests.util import filecheck, returned_type

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not blas.available(), reason="scipy-openblas64 is not installed")


@scriptc.script
def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b


@scriptc.script
def np_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, b)


@scriptc.script
def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.dot(a, b)


@scriptc.script
def inner(a: np.ndarray, b: np.ndarray) -> float:
    return a @ b


@scriptc.script
def dot_inner(a: np.ndarray, b: np.ndarray) -> float:
    return np.dot(a, b)


@scriptc.script
def int_inner(a: np.ndarray, b: np.ndarray) -> int:
    return a @ b


@scriptc.script
def bool_inner(a: np.ndarray, b: np.ndarray) -> bool:
    return a @ b


@scriptc.script
def chained(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (a @ b).T @ c + 1.0


RTOL = {"float64": 1e-12, "float32": 2e-5}


def reference(kind: str, a, b):
    return np.dot(a, b) if kind == "dot" else np.matmul(a, b)


def check(fn, a, b, exact=False, kind="matmul"):
    """fn(a, b) natively equals NumPy's product: same dtype and shape, values within BLAS rounding (or equal)."""
    expected = reference(kind, a, b)
    actual = fn(a, b)
    assert isinstance(actual, np.ndarray) and actual.dtype == expected.dtype and actual.shape == expected.shape, (
        actual,
        expected,
    )
    if exact or expected.dtype.name not in RTOL:  # the generated loop sums in NumPy's order
        np.testing.assert_array_equal(actual, expected)
    else:
        # a dot product's error bound: k ulp of the sum of |a_i * b_i| (cancellation makes rtol alone too strict)
        eps = np.finfo(expected.dtype).eps
        k = a.shape[-1] if a.ndim else 1
        scale = reference(kind, np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
        bound = 2 * (k + 1) * eps * scale + RTOL[expected.dtype.name] * np.abs(expected)
        assert np.all(np.abs(actual.astype(np.float64) - expected) <= bound), (actual, expected)


def data(shape, dtype="float64", seed=0, integral=False):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    x = rng.integers(-4, 5, shape) if integral or np.dtype(dtype).kind in "iu" else rng.standard_normal(shape)
    return x.astype(dtype)


def layouts(rows: int, cols: int, dtype="float64", integral=False):
    """Views of shape (rows, cols) in every layout NumPy produces, each in its own memory."""
    big = data((2 * rows + 3, 3 * cols + 4), dtype, seed=rows * 31 + cols, integral=integral)
    c = big[:rows, :cols].copy()
    return {
        "c": c,
        "fortran": np.asfortranarray(c),
        "transposed": big[:cols, :rows].copy().T,
        "column-slice": big[1 : rows + 1, 2 : cols + 2],  # row-major, leading dimension > cols
        "strided": big[::2, ::3][:rows, :cols],  # both strides non-unit: copied
        "negative-rows": big[:rows, :cols][::-1],  # negative leading dimension: copied
        "negative-cols": big[:rows, :cols][:, ::-1],
        "fortran-strided": np.asfortranarray(big)[:rows, :cols],  # column-major, leading dimension > rows
        "transposed-strided": big[:cols, ::2][:, :rows].T,
    }


def vectors(n: int, dtype="float64", integral=False):
    big = data(3 * n + 2, dtype, seed=n, integral=integral)
    return {
        "contiguous": big[:n].copy(),
        "strided": big[::3][:n],
        "negative": big[:n][::-1],
        "negative-strided": big[::-2][:n],
    }


# -- matrix @ matrix, matrix @ vector, vector @ matrix, vector . vector ---------------------------------------

SIZES = [0, 1, 2, 3, 7, 33]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sizes_grid(dtype):
    for m, k, n in itertools.product(SIZES, repeat=3):
        a, b = data((m, k), dtype, seed=m + 7 * k), data((k, n), dtype, seed=n + 5 * k)
        check(matmul, a, b)
        check(dot, a, b, kind="dot")
        check(matmul, a, b[:, 0] if n else data((k,), dtype))
        check(matmul, a[0] if m else data((k,), dtype), b)


@pytest.mark.parametrize("left,right", list(itertools.product(layouts(5, 6), layouts(6, 7))))
def test_matrix_layouts(left, right):
    a, b = layouts(5, 6)[left], layouts(6, 7)[right]
    check(matmul, a, b)
    check(dot, a, b, kind="dot")
    ai, bi = layouts(5, 6, integral=True)[left], layouts(6, 7, integral=True)[right]
    check(matmul, ai, bi, exact=True)  # integer-valued floats: every rounding is exact


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matrix_vector_layouts(dtype):
    for (mname, m), (vname, v) in itertools.product(layouts(6, 5, dtype).items(), vectors(5, dtype).items()):
        check(matmul, m, v)
        check(dot, m, v, kind="dot")
        check(matmul, v, m.T)
        check(dot, v, m.T, kind="dot")
        check(matmul, m[:1], v)  # a single row: ?dot
        check(matmul, v[:, None].T, m.T)  # (1, k) @ (k, n): ?gemv
    mi, vi = layouts(6, 5, dtype, integral=True)["strided"], vectors(5, dtype, integral=True)["negative"]
    check(matmul, mi, vi, exact=True)
    check(matmul, vi, mi.T, exact=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_inner_products(dtype):
    for n in [0, 1, 2, 5, 100]:
        for (xn, x), (yn, y) in itertools.product(vectors(n, dtype).items(), vectors(n, dtype).items()):
            expected = x @ y
            for fn in (inner, dot_inner):
                got = fn(x, y)
                assert type(got) is returned_type(expected)  # np.float32 for float32 vectors, as NumPy
                assert got == pytest.approx(float(expected), rel=RTOL[dtype], abs=0), (xn, yn, n)
    x, y = vectors(9, dtype, integral=True)["strided"], vectors(9, dtype, integral=True)["negative"]
    assert inner(x, y) == float(x @ y)


def test_float32_products_round_to_float32():
    a, b = data((40, 30), "float32", 1), data((30, 20), "float32", 2)
    got = matmul(a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a @ b, rtol=2e-6, atol=0)
    assert not np.array_equal(got.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize(
    "left,right",
    [
        ("float32", "float64"),
        ("float64", "float32"),
        ("int64", "float64"),
        ("int8", "float32"),
        ("int32", "float32"),
        ("bool", "float64"),
        ("float64", "int16"),
        ("float16", "float32"),
    ],
)
def test_mixed_dtypes_follow_numpys_promotion(left, right):
    for shape_a, shape_b in [((4, 5), (5, 3)), ((4, 5), (5,)), ((5,), (5, 3)), ((2, 4, 5), (5, 3))]:
        a, b = data(shape_a, left, 3), data(shape_b, right, 4)
        check(matmul, a, b)
        check(matmul, layouts(5, 4, left)["strided"].T, b if len(shape_b) == 2 else data((5, 3), right))


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8", "bool", "float16"])
def test_generated_loop_dtypes(dtype):
    for m, k, n in [(3, 4, 5), (0, 2, 3), (2, 0, 3), (1, 1, 1), (4, 6, 1)]:
        check(matmul, data((m, k), dtype, m), data((k, n), dtype, n))
    check(matmul, layouts(3, 4, dtype)["negative-cols"], layouts(4, 2, dtype)["strided"])
    check(matmul, data((2, 3, 4), dtype), data((4, 2), dtype))
    check(dot, data((2, 3, 4), dtype), data((5, 4, 2), dtype), kind="dot")
    if dtype == "bool":
        assert bool_inner(np.array([True, False]), np.array([False, True])) is False
        assert bool_inner(np.array([True, False]), np.array([True, True])) is True
    elif dtype == "int64":
        big = np.array([2**62, 3], dtype=np.int64)
        assert int_inner(big, np.array([4, 5], dtype=np.int64)) == int(big @ np.array([4, 5]))  # wraps
        assert int_inner(np.arange(5), np.arange(5)) == 30


def test_int_overflow_wraps_as_numpy():
    a = np.full((2, 3), 2**40, dtype=np.int64)
    check(matmul, a, a.T)
    a8 = np.full((2, 3), 100, dtype=np.int8)
    check(matmul, a8, a8.T)


# -- batches ----------------------------------------------------------------------------------------------

BATCHED = [
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 4), (6, 4, 2)),
    ((2, 5, 3, 4), (1, 4, 2)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 5)),
    ((3, 2, 1, 4), (4, 1)),
    ((2, 0, 3, 4), (4, 5)),
    ((2, 3, 0), (0, 5)),
    ((0, 3, 4), (1, 4, 2)),
    ((2, 1, 1), (1, 1, 7)),
    ((2, 2, 2, 2), (2, 2, 2, 2)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_batched_matmul_broadcasts(dtype):
    for sa, sb in BATCHED:
        a, b = data(sa, dtype, 1), data(sb, dtype, 2)
        check(matmul, a, b)
        check(np_matmul, a, b)
    x = data((3, 4, 6, 8), dtype)
    check(matmul, x[:, ::2, :, ::-2], x.transpose(0, 1, 3, 2)[:, 1::2, ::-2])  # strided batches of views
    check(matmul, x[:, ::2, :, 1::2], x.transpose(0, 1, 3, 2)[:1, 1::2, ::2])
    check(matmul, np.asfortranarray(x), x[0, 0].T)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_batched_dot_pairs_every_leading_index(dtype):
    for sa, sb in [
        ((2, 3, 4), (5, 4, 2)),
        ((2, 3, 4), (4,)),
        ((4,), (3, 4, 2)),
        ((2, 3, 4), (4, 6)),
        ((3, 4), (2, 4, 5)),
        ((2, 3, 0), (5, 0, 2)),
        ((2, 2, 3, 4), (2, 4, 3)),
        ((0, 3, 4), (2, 4, 5)),
    ]:
        a, b = data(sa, dtype, 1), data(sb, dtype, 2)
        check(dot, a, b, kind="dot")
    x = data((4, 6, 8), dtype)
    check(dot, x[::-1, ::2], x.transpose(0, 2, 1)[:, :, ::3], kind="dot")


def test_matches_interpreter_and_python():
    a, b, c = data((4, 3)), data((3, 5)), data((4, 2))
    expected = (a @ b).T @ c + 1.0
    np.testing.assert_allclose(chained(a, b, c), expected, rtol=1e-13)
    np.testing.assert_allclose(chained.interpret(a, b, c), expected, rtol=0)
    for sa, sb in BATCHED[:8]:
        x, y = data(sa), data(sb)
        np.testing.assert_allclose(matmul(x, y), matmul.interpret(x, y), rtol=1e-12)


# -- errors --------------------------------------------------------------------------------------------------

MISMATCHED = [
    ((2, 3), (4, 5)),
    ((3,), (4, 5)),
    ((2, 3), (4,)),
    ((2, 2, 3), (3, 3, 4)),
    ((2, 2, 3), (3, 4, 4)),
    ((2, 5, 2, 3), (3, 3, 4)),
    ((2, 3, 4), (3, 4, 5)),
    ((2, 3), (2, 4, 5)),
    ((4, 1, 2, 3), (3, 3, 4)),
    ((0, 3), (2, 0)),
]


def numpy_error(kind, a, b):
    with pytest.raises(ValueError) as info:
        reference(kind, a, b)
    return str(info.value)


@pytest.mark.parametrize("sa,sb", MISMATCHED)
def test_errors_are_numpys(sa, sb):
    for fn, kind in [(matmul, "matmul"), (dot, "dot")]:
        a, b = np.ones(sa), np.ones(sb)
        try:
            reference(kind, a, b)
        except ValueError as e:
            with pytest.raises(ValueError) as info:
                fn(a, b)
            assert str(info.value) == str(e)
        else:
            check(fn, a, b, kind=kind)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        matmul(np.ones((2, 3), np.int64), np.ones((4, 2), np.int64))


def test_errors_on_scalar_results():
    with pytest.raises(ValueError) as info:
        inner(np.ones(3), np.ones(4))
    assert str(info.value) == numpy_error("matmul", np.ones(3), np.ones(4))
    with pytest.raises(ValueError) as info:
        dot_inner(np.ones(3), np.ones(4))
    assert str(info.value) == numpy_error("dot", np.ones(3), np.ones(4))


# -- calls and copies --------------------------------------------------------------------------------------


def native_ir(fn, *args) -> str:
    return compile_graph(fn.graph_for(*args)).llvm_ir


def module_ir(fn, *args) -> str:
    """The graph's whole module as an exported library has it: the helpers compiled once per process for
    in-process code (the routine choice of a product) are built into it."""
    from dataclasses import replace
    from scriptc.backend.llvm.lowering.lower import ModuleLowering
    from scriptc.backend.llvm.lowering.target import CPU

    mod = ModuleLowering("blas_test", target=replace(CPU, standalone=True))
    mod.entry(fn.graph_for(*args))
    return str(mod.module)


def test_float_products_call_openblas():
    ir = native_ir(matmul, np.ones((2, 2)), np.ones((2, 2)))
    assert "call void @scriptc.shared.blas_core_float64" in ir  # one shared routine choice per dtype
    filecheck(
        module_ir(matmul, np.ones((2, 2)), np.ones((2, 2))),
        """
CHECK-DAG: call void @{{"?}}scriptc.blas.dgemm{{"?}}(i32 101
CHECK-DAG: call void @{{"?}}scriptc.blas.dgemv{{"?}}(i32 101
CHECK-DAG: call double @{{"?}}scriptc.blas.ddot{{"?}}(
""",
    )
    filecheck(
        module_ir(matmul, np.ones((2, 2), np.float32), np.ones(2, np.float32)),
        """
CHECK: call void @{{"?}}scriptc.blas.sgemv{{"?}}(
""",
    )
    filecheck(
        native_ir(matmul, np.ones((2, 2), np.int64), np.ones((2, 2), np.int64)),
        """
CHECK-NOT: scriptc.blas
CHECK: define {{.*}}.entry.matmul(
CHECK-NOT: scriptc.blas
""",
    )  # integer products: the generated row loop in the function itself


def test_views_blas_takes_are_not_copied():
    base = data((40, 50))
    for a, b in [
        (base[:8, :9], base[10:19, 2:7]),
        (base[:9, :8].T, base[::2, :7][:9]),
        (np.asfortranarray(base)[:8, :9], base[:9, :7].T.copy().T),
        (base[:8, :9], base[0, :9]),
        (base[0, ::-3][:8], base[:8, :9]),
        (base[:8, :9].T, base[::-1, 0][:8]),
    ]:
        before = allocation_count()
        check(matmul, a, b)
        assert allocation_count() - before == 1, (a.strides, b.strides)  # the result only
    before = allocation_count()
    check(matmul, base[::2, ::3][:8, :9], base[:9, :7])  # no BLAS layout: one copy
    assert allocation_count() - before == 2


def test_blas_threads_setting():
    old = scriptc.get_num_threads()
    try:
        scriptc.set_num_threads(1)
        assert scriptc.get_num_threads() == 1
        check(matmul, data((300, 200)), data((200, 100)))
        scriptc.set_num_threads(2)
        assert scriptc.get_num_threads() == 2
        check(matmul, data((300, 200)), data((200, 100)))
    finally:
        scriptc.set_num_threads(old)
    with pytest.raises(ValueError, match="between 1 and 2147483647"):
        scriptc.set_num_threads(0)
    with pytest.raises(TypeError):
        scriptc.set_num_threads(1.5)


def test_scriptc_num_threads_governs_openblas():
    # a fresh process: OpenBLAS takes SCRIPTC_NUM_THREADS as scriptc loads it (OPENBLAS_NUM_THREADS unset)
    code = (
        "import numpy as np, scriptc\n"
        "from scriptc.backend.llvm.runtime import blas\n"
        "blas.library()\n"
        "print(blas.get_num_threads())\n"
    )
    for value in ("1", "3"):
        env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
        env.update(SCRIPTC_NUM_THREADS=value, PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == [value]


def test_without_openblas_the_generated_loop_runs(monkeypatch):
    monkeypatch.setattr(blas, "bind", lambda: False)

    @scriptc.script
    def fallback(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a @ b

    ir_text = native_ir(fallback, np.ones((2, 2)), np.ones((2, 2)))
    assert "scriptc.blas" not in ir_text
    for sa, sb in BATCHED[:6]:
        check(fallback, data(sa), data(sb))


# -- property ------------------------------------------------------------------------------------------------


def view_of(draw_layout: int, shape, dtype, seed):
    """A view of ``shape`` whose layout ``draw_layout`` picks (contiguous, transposed, strided, reversed)."""
    base = data(tuple(3 * d + 1 for d in shape), dtype, seed)
    if draw_layout == 1 and len(shape) >= 2:
        return np.swapaxes(data(shape[:-2] + shape[::-1][:2], dtype, seed), -1, -2)
    if draw_layout == 2:
        return base[tuple(slice(None, None, 2) for _ in shape)][tuple(slice(0, d) for d in shape)]
    if draw_layout == 3:
        return base[tuple(slice(None, None, -1) for _ in shape)][tuple(slice(0, d) for d in shape)]
    return base[tuple(slice(0, d) for d in shape)].copy()


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.lists(st.integers(0, 6), min_size=5, max_size=5),
    st.integers(0, 3),
    st.integers(0, 3),
    st.sampled_from(["float64", "float32"]),
    st.sampled_from(["matmul", "dot"]),
    st.integers(0, 2**16),
)
def test_products_match_numpy(ra, rb, dims, la, lb, dtype, kind, seed):
    m, k, n, p, q = dims
    batch_a = [p, 1, q][: max(ra - 2, 0)]
    batch_b = [p, q, 1][: max(rb - 2, 0)] if kind == "matmul" else [q, 2][: max(rb - 2, 0)]
    shape_a = batch_a + ([m, k] if ra >= 2 else [k])
    shape_b = batch_b + ([k, n] if rb >= 2 else [k])
    a, b = view_of(la, shape_a, dtype, seed), view_of(lb, shape_b, dtype, seed + 1)
    fn = matmul if kind == "matmul" else dot
    if ra == 1 and rb == 1:
        fn = inner if kind == "matmul" else dot_inner
        assert fn(a, b) == pytest.approx(float(reference(kind, a, b)), rel=RTOL[dtype], abs=1e-6)
        return
    try:
        reference(kind, a, b)
    except ValueError as e:
        with pytest.raises(ValueError) as info:
            fn(a, b)
        assert str(info.value) == str(e)
        return
    check(fn, a, b, kind=kind)
