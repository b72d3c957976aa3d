"""keepdims=True, np.newaxis/None in indices, boolean masks, np.var/std/median/linalg.norm, x.dtype comparisons,
NumPy scalar types in annotations and module-level arrays, against NumPy: natively and interpreted, results
equal bit for bit with NumPy's dtype and shape; errors with NumPy's exact messages (run time) or a CompileError
at the user's line and column (what stays outside the subset)."""

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import scriptc

from tests.modules import load_module
from tests.util import assert_same_array, filecheck, returned_type

# NumPy warns on the overflows and divisions by zero these tests exercise (interpreted runs included)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def runners(fn, *args):
    """Native code and the interpreter."""
    return (fn, fn.interpret)


def same(got, want):
    if isinstance(want, np.generic):  # documented: float64/int64/bool scalars come back as Python scalars
        assert type(got) is returned_type(want), (type(got), type(want))
        got, want = np.asarray(got, want.dtype), np.asarray(want)
    assert_same_array(got, want)


def check(fn, *args):
    """Compiled and interpreted results equal NumPy's; argument arrays are mutated alike."""
    copies = [[a.copy() if isinstance(a, np.ndarray) else a for a in args] for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn.py_func(*copies[0])
    for run, cargs in zip(runners(fn, *args)[::-1], copies[1:]):
        same(run(*cargs), want)
        for a, b in zip(copies[0], cargs):
            if isinstance(a, np.ndarray):
                same(b, a)


def raises_like(fn, *args):
    """Compiled and interpreted code raise NumPy's exception with its exact message."""
    with pytest.raises(Exception) as info:
        fn.py_func(*args)
    for run in (fn, fn.interpret):
        with pytest.raises(type(info.value)) as got:
            run(*args)
        assert str(got.value) == str(info.value)


def data(dtype, shape, seed=0, nan=False):
    """Small integer values (sums and products exact in any order), NaN and -0.0 for floats when asked."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, size=shape)
    if dtype == "bool":
        return x > 0
    if dtype == "uint8":
        x = np.abs(x)
    x = x.astype(dtype)
    if nan and x.dtype.kind == "f" and x.size > 2:
        flat = x.reshape(-1)
        flat[1] = np.nan
        flat[0] = -0.0
    return x


# -- keepdims ---------------------------------------------------------------------------------------------------
@scriptc.script
def keep_all(x: np.ndarray):
    return (
        np.sum(x, keepdims=True),
        np.prod(x, keepdims=True),
        np.mean(x, keepdims=True),
        np.max(x, keepdims=True),
        np.min(x, keepdims=True),
        np.any(x, keepdims=True),
        np.all(x, keepdims=True),
        np.argmax(x, keepdims=True),
        np.argmin(x, keepdims=True),
    )


@scriptc.script
def keep_axis0(x: np.ndarray):
    return (
        np.sum(x, axis=0, keepdims=True),
        np.prod(x, axis=0, keepdims=True),
        x.mean(axis=0, keepdims=True),
        x.max(axis=0, keepdims=True),
        np.min(x, axis=0, keepdims=True),
        np.any(x, axis=0, keepdims=True),
        x.all(axis=0, keepdims=True),
        np.argmax(x, axis=0, keepdims=True),
        x.argmin(axis=0, keepdims=True),
    )


@scriptc.script
def keep_last(x: np.ndarray):
    return (
        x.sum(axis=-1, keepdims=True),
        x.prod(axis=-1, keepdims=True),
        np.mean(x, axis=-1, keepdims=True),
        np.max(x, axis=-1, keepdims=True),
        x.min(axis=-1, keepdims=True),
        x.any(axis=-1, keepdims=True),
        np.all(x, axis=-1, keepdims=True),
        x.argmax(axis=-1, keepdims=True),
        np.argmin(x, axis=-1, keepdims=True),
    )


@scriptc.script
def keep_false(x: np.ndarray):
    return np.sum(x, axis=0, keepdims=False), x.max(keepdims=False)


@scriptc.script
def keep_minmax(x: np.ndarray):
    return x.max(axis=0, keepdims=True), np.argmin(x, keepdims=True), np.any(x, axis=-1, keepdims=True)


@scriptc.script
def keep_broadcast(x: np.ndarray) -> np.ndarray:
    return x - x.max(axis=1, keepdims=True)  # the softmax idiom


def every_dtype_at_rank_2(*other_shapes):
    """(shape, dtype) pairs: every dtype at rank 2 (and its transpose, where a test takes one), the other ranks
    for a dtype of each kind (float64, float16, int8, bool): the rank-generic loops do not depend on the element
    type, and each pair is a compile."""
    for shape in other_shapes:
        for dtype in DTYPES:
            if len(shape) == 2 or dtype in ("float64", "float16", "int8", "bool"):
                yield pytest.param(shape, dtype, id=f"{'x'.join(map(str, shape))}-{dtype}")


@pytest.mark.parametrize("shape, dtype", every_dtype_at_rank_2((5,), (3, 4), (2, 3, 2)))
def test_keepdims(dtype, shape):
    x = data(dtype, shape, nan=True)
    if dtype == "uint8":  # NumPy sums uint8 to uint64, a dtype scriptc does not have
        with pytest.raises(scriptc.CompileError, match="unsupported result dtype uint64"):
            keep_all(x)
        fns = (keep_minmax,)
    else:
        fns = (keep_all, keep_axis0, keep_last, keep_false, keep_minmax)
    for fn in fns:
        want = fn.py_func(x)
        for run in runners(fn, x):
            got = run(x)
            for g, w in zip(got, want):
                same(g, w)
    if len(shape) == 2:
        if dtype != "bool":
            check(keep_broadcast, x)
        for run in runners(keep_minmax, x):
            for g, w in zip(run(x.T), keep_minmax.py_func(x.T)):
                same(g, w)


# -- np.newaxis / None ----------------------------------------------------------------------------------------------
@scriptc.script
def newaxis_reads(x: np.ndarray):
    return x[:, None], x[None, :, np.newaxis], x[np.newaxis], x[None], x[1, None], x[None, 1:3, None]


@scriptc.script
def newaxis_2d(x: np.ndarray):
    return x[:, None, 1], x[None, ::-1, None, :], x[1, None, :], x[:, np.newaxis] + x[np.newaxis, :]


@scriptc.script
def newaxis_write(x: np.ndarray) -> np.ndarray:
    y = x[None, :, None]
    y[0, 1, 0] = 7
    y[0, 2:, 0] = 3
    x[:, None] += 1
    return y


@scriptc.script
def outer_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a[:, None] - b[None, :])


@pytest.mark.parametrize("dtype", DTYPES)
def test_newaxis(dtype):
    x = data(dtype, (5,))
    for fn, arg in ((newaxis_reads, x), (newaxis_2d, data(dtype, (3, 4)))):
        want = fn.py_func(arg)
        for run in runners(fn, arg):
            for g, w in zip(run(arg), want):
                same(g, w)
                assert g.strides == w.strides or g.size <= 1, (g.strides, w.strides)
    if dtype != "bool":
        check(newaxis_write, x)
        check(outer_difference, x, data(dtype, (3,), seed=1))


def test_newaxis_view_shares_memory():
    x = np.arange(6.0)
    v = newaxis_reads(x)[0]
    assert v.shape == (6, 1) and v.strides == (8, 0) and np.shares_memory(v, x)


# -- boolean masks -------------------------------------------------------------------------------------------------
@scriptc.script
def mask_read(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    return x[m]


@scriptc.script
def mask_expr(x: np.ndarray) -> np.ndarray:
    return x[x > 0]


@scriptc.script
def mask_write_scalar(x: np.ndarray) -> np.ndarray:
    x[x > 0] = 0
    return x


@scriptc.script
def mask_write_float(x: np.ndarray) -> np.ndarray:
    x[x > 0.0] = 0.0
    return x


@scriptc.script
def mask_write_masked(x: np.ndarray, y: np.ndarray, m: np.ndarray):
    x[m] = y[m]


@scriptc.script
def mask_write_array(x: np.ndarray, m: np.ndarray, v: np.ndarray):
    x[m] = v


@scriptc.script
def mask_augassign(x: np.ndarray, m: np.ndarray):
    x[m] += 2
    x[~m] *= 3


@scriptc.script
def mask_reverse(x: np.ndarray, m: np.ndarray):
    x[m] = x[::-1]  # the value overlaps the destination: read as copied first


@scriptc.script
def mask_reverse_copy(x: np.ndarray, m: np.ndarray):
    x[m] = x[::-1].copy()


@scriptc.script
def mask_count(x: np.ndarray) -> int:
    s = 0
    for v in x[np.isfinite(x)]:
        s += 1
    return s + len(x[x != x])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (7,), (3, 4), (2, 3, 2)])
def test_mask_reads(dtype, shape):
    x = data(dtype, shape)
    m = data("bool", shape, seed=2)
    check(mask_read, x, m)
    check(mask_read, x, np.zeros(shape, bool))
    check(mask_read, x, np.ones(shape, bool))
    if dtype != "bool":
        check(mask_expr, x)
    if len(shape) > 1:
        check(mask_read, x, m[:, 0].copy() if len(shape) == 2 else m[:, 0, 0].copy())  # 1-D over axis 0
        check(mask_read, x, m[..., 0].copy() if len(shape) == 3 else m)  # leading dimensions
        check(mask_read, x.T.copy(), m.T)
        check(mask_read, x[::-1], m)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 4)])
def test_mask_writes(dtype, shape):
    x, y = data(dtype, shape), data(dtype, shape, seed=3)
    m = data("bool", shape, seed=2)
    if dtype != "bool":
        check(mask_write_scalar, x)
        check(mask_write_float, x.astype("float64"))
        check(mask_augassign, x, m)
    check(mask_write_masked, x, y, m)
    check(mask_write_array, x, m, y[m])
    check(mask_write_array, x, m, y.reshape(-1)[:1])  # one value broadcast to every True element
    check(mask_write_array, x, m, np.array(5, dtype))  # a 0-d value
    check(mask_write_array, x, m, y[m].astype("float64"))  # cast to x's dtype
    flat, every = x.reshape(-1), np.ones(x.size, bool)
    for run in runners(mask_reverse, x):  # documented: NumPy's result here depends on its copy order
        want, got = flat.copy(), flat.copy()
        mask_reverse_copy.py_func(want, every)
        run(got, every)
        same(got, want)
    if len(shape) == 2:
        rows = np.array([True, False, True])
        check(mask_write_array, x, rows, y[0])  # a row broadcast to each selected row
        check(mask_write_array, x, rows, y[:2])
        check(mask_write_array, x, rows, y[:2, :1])


def test_mask_iteration_and_len():
    x = np.array([1.0, np.nan, np.inf, -2.0, np.nan])
    assert mask_count(x) == mask_count.py_func(x) == mask_count.interpret(x)


def test_mask_errors():
    x = np.zeros(3)
    raises_like(mask_read, x, np.ones(4, bool))
    raises_like(mask_read, np.zeros((3, 4)), np.ones((3, 5), bool))
    raises_like(mask_read, np.zeros((3, 4)), np.ones(4, bool))
    m = np.array([True, False, True, False, False])
    raises_like(mask_write_array, np.zeros(5), m, np.ones(3))
    raises_like(mask_write_array, np.zeros(5), m, np.ones(0))
    raises_like(mask_write_array, np.zeros((3, 4)), np.array([True, False, True]), np.ones(3))
    raises_like(mask_write_array, np.zeros((3, 4)), np.array([True, False, True]), np.ones((3, 4)))
    raises_like(mask_write_masked, np.zeros(3), np.zeros(4), np.ones(4, bool))


def test_mask_error_frees_what_it_allocated():
    from scriptc.backend.llvm.lowering.arrays import allocation_count, free_count

    x = np.arange(5.0)
    m = np.array([True, False, True, False, False])
    before = allocation_count() - free_count()
    for _ in range(3):
        with pytest.raises(ValueError):
            mask_write_array(x, m, np.ones(3))
        with pytest.raises(IndexError):
            mask_read(x, np.ones(4, bool))
    assert allocation_count() - free_count() == before


# -- np.var / np.std ---------------------------------------------------------------------------------------------
@scriptc.script
def var_all(x: np.ndarray):
    return (
        np.var(x),
        np.std(x),
        x.var(ddof=1),
        x.std(ddof=1),
        np.var(x, keepdims=True),
        np.std(x, ddof=2, keepdims=True),
    )


@scriptc.script
def var_axis(x: np.ndarray, ddof: int):
    return (
        np.var(x, axis=0),
        np.std(x, 0, ddof=ddof),
        x.var(axis=-1, ddof=ddof, keepdims=True),
        np.std(x, axis=1, keepdims=True),
        x.std(axis=0, ddof=1),
    )


@scriptc.script
def var_axis_1d(x: np.ndarray, ddof: int):
    return np.var(x, axis=0), np.std(x, axis=-1, ddof=ddof), x.var(axis=0, ddof=ddof, keepdims=True)


def quarters(dtype, shape, seed=0):
    """Values with few significant bits and counts of 4 along reduced axes: every sum is exact in any order."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-16, 17, size=shape) / 4
    return (
        (x > 0)
        if dtype == "bool"
        else x.astype(dtype)
        if np.dtype(dtype).kind == "f"
        else np.abs(rng.integers(-16, 17, size=shape)).astype(dtype)
    )


@pytest.mark.parametrize("shape, dtype", every_dtype_at_rank_2((4,), (4, 4), (2, 4)))
def test_var_std(dtype, shape):
    x = quarters(dtype, shape)
    for fn, args in ((var_all, (x,)), (var_axis, (x, 1)), (var_axis, (x, 0)), (var_axis_1d, (x, 2))):
        if (fn is var_axis) == (len(shape) == 1) and fn is not var_all:
            continue  # (a 1-D array's var along its axis is a scalar: it was a 0-d array natively)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = fn.py_func(*args)
        for run in runners(fn, *args):
            for g, w in zip(run(*args), want):
                same(g, w)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int32", "uint8"])
@pytest.mark.parametrize("shape", [(17,), (5, 37), (40, 3)])
def test_var_std_decomposition_is_numpys(dtype, shape):
    """On arbitrary data, the interpreter (which runs each operator as NumPy) gives NumPy's bits: the
    decomposition is NumPy's own formula. Native code agrees to the last bits its sums round differently."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    fn, args = (var_axis, (x, 1)) if len(shape) == 2 else (var_all, (x,))
    want = fn.py_func(*args)
    for g, w in zip(fn.interpret(*args), want):
        same(g, w)
    for g, w in zip(runners(fn, *args)[0](*args), want):
        if isinstance(w, np.generic):
            assert type(g) is returned_type(w)
            g, w = np.asarray(g, w.dtype), np.asarray(w)
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol={"float16": 1e-2, "float32": 1e-5}.get(dtype, 1e-12))


def test_var_ddof_at_least_count():
    x = np.array([1.0, 2.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = var_axis.py_func(x.reshape(1, 3), 5)
    for run in (var_axis, var_axis.interpret):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own division warnings, interpreted
            got = run(x.reshape(1, 3), 5)
        for g, w in zip(got, want):
            same(g, w)


# -- np.median ------------------------------------------------------------------------------------------------
@scriptc.script
def median_all(x: np.ndarray):
    return np.median(x), np.median(x, keepdims=True)


@scriptc.script
def median_axis(x: np.ndarray):
    return np.median(x, axis=0), np.median(x, axis=-1), np.median(x, axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (6,), (7,), (4, 5), (3, 6)])
def test_median(dtype, shape):
    for nan in (False, True):
        x = data(dtype, shape, seed=4, nan=nan)
        fns = [median_all] + ([median_axis] if len(shape) == 2 else [])
        for fn in fns:
            want = fn.py_func(x)
            for run in runners(fn, x):
                for g, w in zip(run(x), want):
                    same(g, w)


def test_median_nan_rows_and_random():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 9))
    x[2, 4] = np.nan
    x[5, 0] = np.nan
    for fn in (median_all, median_axis):
        want = fn.py_func(x)
        for run in (fn, fn.interpret):
            for g, w in zip(run(x), want):
                same(g, w)


# -- np.linalg.norm --------------------------------------------------------------------------------------------------
@scriptc.script
def norm2(x: np.ndarray) -> float:
    return np.linalg.norm(x)


@scriptc.script
def norm_ord2(x: np.ndarray) -> float:
    return np.linalg.norm(x, 2)


@scriptc.script
def norm1(x: np.ndarray) -> float:
    return np.linalg.norm(x, ord=1)


@scriptc.script
def norm_inf(x: np.ndarray) -> float:
    return np.linalg.norm(x, np.inf)


@scriptc.script
def norm_minf(x: np.ndarray) -> float:
    return np.linalg.norm(x, ord=-np.inf)


@scriptc.script
def norm_fro(x: np.ndarray) -> float:
    return np.linalg.norm(x, "fro")


@scriptc.script
def norm_keep(x: np.ndarray) -> np.ndarray:
    return np.linalg.norm(x, keepdims=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_vectors(dtype):
    x = data(dtype, (9,), nan=False)
    for fn in (norm2, norm_ord2, norm1, norm_inf, norm_minf, norm_keep):
        check(fn, x)
    check(norm2, x[::-2])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_norm_matrices(dtype):
    x = data(dtype, (4, 5))
    for fn in (norm2, norm_fro, norm_keep):
        check(fn, x)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_norm_random_data(dtype):
    """The 2-norm is sqrt(dot(x, x)) as NumPy computes it: BLAS's dot gives the same bits."""
    x = np.random.default_rng(6).standard_normal(1000).astype(dtype)
    check(norm2, x)
    check(norm1, x[:7])


# -- x.dtype ------------------------------------------------------------------------------------------------------
@scriptc.script
def dtype_flags(x: np.ndarray) -> int:
    r = 0
    if x.dtype == np.float64:
        r += 1
    if x.dtype != np.int32:
        r += 2
    if x.dtype == np.dtype("float32"):
        r += 4
    if x.dtype.kind == "f":
        r += 8
    if np.bool_ == x.dtype:
        r += 16
    if x.dtype == np.uint8:
        r += 32
    if x.dtype.kind in "iu":
        r += 64
    if x.dtype in (np.float32, np.float64):
        r += 128
    if x.dtype.name not in ["int8", "bool"]:
        r += 256
    return r


@scriptc.script
def zeros_like_dtype(x: np.ndarray) -> np.ndarray:
    return np.zeros(3, dtype=x.dtype) + x[0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_compare(dtype):
    x = data(dtype, (3,))
    check(dtype_flags, x)
    check(zeros_like_dtype, x)
    assert "prim::If" not in str(dtype_flags.graph_for(x))  # every comparison folded to a constant


# -- what stays outside the subset -----------------------------------------------------------------------------------
def compile_error(tmp_path, source, *args) -> scriptc.CompileError:
    mod = load_module(tmp_path, source)
    with pytest.raises(scriptc.CompileError) as info:
        f = scriptc.script(mod.f)
        f(*args)
    return info.value


ERRORS = [
    # (source of f after the 3 header lines, args, line, col, message fragment, hint fragment)
    (
        "def f(x: np.ndarray) -> bool:\n    return x.dtype in 'iu'\n",
        (np.zeros(3),),
        5,
        12,
        "TypeError: 'in <string>' requires string as left operand",
        None,
    ),
    (
        "def f(x: np.ndarray):\n    k = x.dtype.kind\n    return k\n",
        (np.zeros(3),),
        5,
        9,
        "'x.dtype.kind' is the str 'f', known when compiling",
        "x.dtype.kind == 'f'",
    ),
    (
        "def f(x: np.ndarray, i: np.ndarray) -> np.ndarray:\n    return x[i, None]\n",
        (np.zeros(3), np.zeros(2, np.int64)),
        5,
        17,
        "np.newaxis with integer array indices is not supported",
        "add the axis on the result",
    ),
    (
        "def f(x: np.ndarray, m: np.ndarray) -> np.ndarray:\n    return x[m, 0]\n",
        (np.zeros((3, 2)), np.zeros(3, bool)),
        5,
        14,
        "a boolean mask must be the only index",
        "x[m]",
    ),
    (
        "def f(x: np.ndarray) -> np.ndarray:\n    return x[..., 0]\n",
        (np.zeros((3, 2)),),
        5,
        14,
        "indexing with ... is not supported",
        None,
    ),
    (
        "def f(x: np.ndarray, m: np.ndarray, v: np.ndarray):\n    x[m] = v\n",
        (np.zeros(3), np.zeros(3, bool), np.zeros((1, 1))),
        5,
        5,
        "NumPy boolean array indexing assignment requires a 0 or 1-dimensional input, input has 2 dimensions",
        None,
    ),
    (
        "def f(x: np.ndarray) -> float:\n    return np.linalg.norm(x, axis=0)\n",
        (np.zeros(3),),
        5,
        35,
        "np.linalg.norm() with axis= is not supported",
        "np.sqrt(np.sum(x * x, axis=1))",
    ),
    (
        "def f(x: np.ndarray) -> float:\n    return np.linalg.norm(x, 3)\n",
        (np.zeros(3),),
        5,
        12,
        "np.linalg.norm() with ord=3 of a 1-d array is not supported",
        "np.inf",
    ),
    (
        "def f(x: np.ndarray) -> float:\n    return np.linalg.norm(x, 1)\n",
        (np.zeros((2, 2)),),
        5,
        12,
        "np.linalg.norm() with ord=1 of a 2-d array is not supported",
        "'fro'",
    ),
    (
        "def f(x: np.ndarray, k: bool) -> np.ndarray:\n    return np.sum(x, axis=0, keepdims=k)\n",
        (np.zeros((2, 2)), True),
        5,
        39,
        "'k' must be a constant here",
        None,
    ),
    (
        "def f(x: np.ndarray) -> np.ndarray:\n    return np.var(x, axis=2)\n",
        (np.zeros((2, 2)),),
        5,
        27,
        "axis 2 is out of bounds for array of dimension 2",
        None,
    ),
    (
        "def f(x: np.ndarray) -> np.ndarray:\n    return x[None, None, 0, 0]\n",
        (np.zeros(3),),
        5,
        12,
        "too many indices for array: array is 1-dimensional, but 2 were indexed",
        None,
    ),
    (
        "def f(x: np.ndarray) -> bool:\n    return x.dtype == x\n",
        (np.zeros(3),),
        5,
        23,
        "'x' must be a dtype or a constant to compare with a dtype",
        None,
    ),
]


@pytest.mark.parametrize("source,args,line,col,message,hint", ERRORS)
def test_compile_errors(tmp_path, source, args, line, col, message, hint):
    e = compile_error(tmp_path, source, *args)
    assert (e.lineno, e.col) == (line, col), str(e)
    assert message in e.reason, str(e)
    if hint:
        assert hint in (e.hint or ""), str(e)
    assert "^" in str(e)


# -- NumPy scalar types and typed arrays in annotations ---------------------------------------------------------------
@scriptc.script
def numpy_annotations(
    x: np.float64,
    n: np.int32,
    b: np.bool_,
    a: npt.NDArray[np.float64],
    c: np.ndarray[Any, np.dtype[np.int32]],
    d: npt.NDArray[np.floating],
) -> npt.NDArray[np.float64]:
    if b:
        return a * x + n + c + d
    return a


@scriptc.script
def float32_scalar(v: np.float32, w: np.uint8) -> float:
    return v * 2 + w


def test_numpy_scalar_annotations():
    a, c = np.arange(3.0), np.arange(3, dtype=np.int32)
    for args in [
        (np.float64(2.5), np.int32(3), np.bool_(True), a, c, np.ones(3, np.float32)),
        (2.5, 3, True, a, c, np.ones(3)),
        (2, True, False, a, c, np.ones(3, np.float16)),
    ]:
        for run in runners(numpy_annotations, *args):
            same(run(*args), numpy_annotations.py_func(*args))
    # documented: the value is taken as the Python scalar it converts to (computed in float64)
    assert float32_scalar(np.float32(0.1), np.uint8(3)) == float(np.float32(0.1)) * 2 + 3
    with pytest.raises(TypeError, match=r"numpy_annotations\(\) argument 'a' must be an array of float64, not float32"):
        numpy_annotations(2.0, 3, True, a.astype(np.float32), c, a)
    with pytest.raises(TypeError, match=r"argument 'c' must be an array of int32, not int64"):
        numpy_annotations(2.0, 3, True, a, c.astype(np.int64), a)
    with pytest.raises(TypeError, match="argument 'n' must be int, not float"):
        numpy_annotations(2.0, 3.5, True, a, c, a)


@scriptc.script
def typed_callee(x: npt.NDArray[np.float64]) -> float:
    return x[0]


def test_typed_array_callee_checked(tmp_path):
    mod = load_module(
        tmp_path,
        "from tests.cpu.test_keepdims_masks_statistics import typed_callee\n\n"
        "def f(x: np.ndarray) -> float:\n    return typed_callee(x)\n",
    )
    f = scriptc.script(mod.f)
    assert f(np.ones(2)) == 1.0
    with pytest.raises(
        scriptc.CompileError, match="argument 'x' of 'typed_callee' must be an array of float64, got float32"
    ) as info:
        f(np.ones(2, np.float32))
    assert (info.value.lineno, info.value.col) == (7, 12)


# -- module-level arrays: constants frozen at compile time -----------------------------------------------------------
TABLE = np.array([1.5, 2.5, -3.0, np.nan, -0.0])
WEIGHTS = np.arange(40, dtype=np.int32).reshape(8, 5)[:, ::2]  # not contiguous; large: printed by hash
FLAGS = np.array([[True, False], [False, True]])


@scriptc.script
def read_tables(x: np.ndarray, i: int):
    return (
        TABLE[i] + np.sum(WEIGHTS[i]) + TABLE.shape[0] + FLAGS.T.sum(),
        x * TABLE + WEIGHTS[1, :3].sum(),
        FLAGS[1],
        x[FLAGS[0, 1:] | (x > 0)],
    )


@scriptc.script
def return_table() -> np.ndarray:
    return TABLE


@scriptc.script
def table_view() -> np.ndarray:
    return WEIGHTS.T[1:3]


def test_global_arrays():
    x = np.array([0.5, -1.0, 2.0, 0.0, 4.0])
    for i in (0, 2, -1):
        want = read_tables.py_func(x, i)
        for run in runners(read_tables, x):
            for g, w in zip(run(x, i), want):
                same(g, w)
    for fn in (return_table, table_view):
        for run in (fn, fn.interpret):
            r = run()
            same(r, fn.py_func())
    r = return_table()
    r[0] = 99.0  # the caller's copy: the constant is unchanged
    same(return_table(), TABLE)
    assert TABLE[0] == 1.5


def test_global_arrays_are_frozen_at_compile_time(tmp_path):
    mod = load_module(tmp_path, "T = np.array([1.0, 2.0])\n\ndef f(i: int) -> float:\n    return T[i]\n")
    f = scriptc.script(mod.f)
    assert f(0) == 1.0
    mod.T[0] = 5.0  # documented: not seen by code compiled before
    assert f(0) == 1.0 and f.interpret(0) == 1.0


@pytest.mark.parametrize(
    "body,col",
    [
        ("T[0] = 1.0", 5),
        ("T[1:] = 0.0", 5),
        ("T.fill(0.0)", 5),
        ("T[T > 0] = 0.0", 5),
        ("T.T[0] += 1.0", 5),
        ("v = T[None]\n    v[0, 0] = 2.0", 5),
    ],
)
def test_global_array_writes_rejected(tmp_path, body, col):
    src = f"T = np.array([1.0, 2.0])\n\ndef f(x: np.ndarray) -> float:\n    {body}\n    return 0.0\n"
    e = compile_error(tmp_path, src, np.ones(2))
    assert e.reason == "global arrays are read-only constants in scripted functions", str(e)
    assert e.lineno == 7 + body.count("\n") and e.col == col, str(e)
    assert "copy it first" in e.hint


def test_array_constants_round_trip_through_ir_text():
    from scriptc.ir import parse, print_graph
    from scriptc.ir.arrayconst import UnrestoredArray

    graph = read_tables.graph_for(np.ones(5), 1)
    text = print_graph(graph)
    assert "prim::Constant[value=array(float64, (5,), [1.5, 2.5, -3.0, nan, -0.0])]()" in text
    assert "array(int32, (8, 3), sha1=" in text
    again = parse(text)
    assert print_graph(again) == text
    small = [
        n.attrs["value"]
        for n in again.walk()
        if n.kind == "prim::Constant"
        and isinstance(n.attrs.get("value"), np.ndarray)
        and n.attrs["value"].dtype == np.float64
    ]
    same(small[0], TABLE)
    assert not small[0].flags.writeable
    large = [n.attrs["value"] for n in again.walk() if isinstance(n.attrs.get("value"), UnrestoredArray)]
    assert large and large[0].shape == (8, 3)


def test_ir_of_the_decompositions():
    """np.var is NumPy's _var: a keepdims sum divided by the count (in float64 for float32), x - mean, a square
    by multiplication, a sum and a division by max(n - ddof, 0); masks and newaxis are single operators."""

    @scriptc.script
    def f(x: np.ndarray, m: np.ndarray):
        x[m] = 0.0
        return np.var(x, axis=1), x[m], x[:, None]

    filecheck(
        str(f.frontend_graph_for(np.ones((2, 3), np.float32), np.ones((2, 3), bool))),
        """
CHECK: aten::masked_put_(%x, %m, %{{.*}})
CHECK: %[[N:.*]] : int = prim::TupleIndex[index=1]
CHECK: %[[S:.*]] : Float(*) = aten::sum[axis=1](%x)
CHECK: %[[K:.*]] : Float(*, *) = aten::unsqueeze[dim=1](%[[S]])
CHECK: %[[W:.*]] : Double(*, *) = aten::to[dtype="float64"](%[[K]])
CHECK: aten::div(%[[W]], %[[N]])
CHECK: %[[MEAN:.*]] : Float(*, *) = aten::to[dtype="float32"]
CHECK: %[[D:.*]] : Float(*, *) = aten::sub(%x, %[[MEAN]])
CHECK: aten::mul(%[[D]], %[[D]])
CHECK: aten::sum[axis=1]
CHECK: prim::max
CHECK: aten::select[dim=1]
CHECK: aten::masked_select(%x, %m)
CHECK: aten::unsqueeze[dim=1]
""",
    )


def test_masked_augmented_assignment_follows_the_in_place_casting_rule(tmp_path):
    """``x[m] += v`` updates the selected copy in place, as NumPy does: float32 stays float32 with a Python
    float, a float into an int (or an int into a bool) array is NumPy's casting error, here at compile time as
    for ``x[1:3] += 1.5``."""
    from tests.modules import load_module

    m = load_module(
        tmp_path,
        """
        @scriptc.script
        def bump(x: np.ndarray, v: float) -> np.ndarray:
            x[x > 0.5] += v
            return x

        @scriptc.script
        def bump_int(x: np.ndarray) -> np.ndarray:
            x[x > 2] += 1.5
            return x
    """,
    )
    x = np.linspace(0.0, 1.0, 9).astype(np.float32)
    check(m.bump, x, 0.1)
    with pytest.raises(
        scriptc.CompileError,
        match=r"cannot cast ufunc 'add' output from dtype\('float64'\) to "
        r"dtype\('int32'\) with casting rule 'same_kind'",
    ):
        m.bump_int(np.arange(5, dtype=np.int32))


def test_element_wise_operators_on_0d_arrays(tmp_path):
    """A 0-d array in an element-wise operator gives NumPy's scalar (here the Python scalar of its value, as
    the interpreter gives), computed in the loop's dtype; in place it stays a 0-d array."""
    from tests.modules import load_module

    m = load_module(
        tmp_path,
        """
        @scriptc.script
        def ops(x: np.ndarray, y: np.ndarray, s: float):
            return x + 1, x * y, np.sqrt(x), x > s, x * s, -x

        @scriptc.script
        def bump(x: np.ndarray) -> np.ndarray:
            x += 1
            return x
    """,
    )
    for dtype in ("float64", "float32", "int64", "int8"):
        x, y = np.array(3, dtype), np.array(5, dtype)
        want = m.ops.py_func(x, y, 0.1)
        for got in (m.ops(x, y, 0.1), m.ops.interpret(x, y, 0.1)):
            assert [type(g) for g in got] == [returned_type(w) for w in want], dtype
            assert [float(g) for g in got] == [float(w) for w in want], dtype
        same(m.bump(x.copy()), m.bump.py_func(x.copy()))


def test_reductions_of_0d_arrays_along_axis_0_or_minus_1(tmp_path):
    """NumPy reduces a 0-d array along axis 0 or -1 whole, keepdims or not (np.mean refuses: AxisError); the
    native code raised an internal ZeroDivisionError. A scalar result is a Python scalar, as x[()] gives."""
    from tests.modules import load_module

    m = load_module(
        tmp_path,
        """
        @scriptc.script
        def along(x: np.ndarray):
            return (np.sum(x, axis=0), x.prod(axis=-1), np.max(x, axis=-1, keepdims=True), np.min(x, axis=0),
                    np.any(x, axis=0), x.all(axis=-1), np.argmax(x, axis=0), np.argmin(x, axis=-1, keepdims=True))

        @scriptc.script
        def mean_along(x: np.ndarray):
            return np.mean(x, axis=0)
    """,
    )
    for dtype in ("float64", "float32", "int64", "int8", "uint8", "bool"):
        x = np.array(3, dtype)
        want = m.along.py_func(x)
        for got in (m.along(x), m.along.interpret(x)):
            assert [type(g) for g in got] == [returned_type(w) for w in want], dtype
            assert [float(g) for g in got] == [float(w) for w in want], dtype
    with pytest.raises(scriptc.CompileError, match="axis 0 is out of bounds for array of dimension 0"):
        m.mean_along(np.array(2.5))


def test_compile_time_arguments_by_position(tmp_path):
    """np.round(x, 2), x.sum(0): the positions NumPy's functions (and their methods) give them; a variable
    there is still refused, as by keyword."""
    from tests.modules import load_module

    m = load_module(
        tmp_path,
        """
        @scriptc.script
        def positional(x: np.ndarray):
            return (np.sum(x, 0), x.sum(1), np.round(x, 2), x.round(1), np.max(x, 1), x.max(0), np.argmax(x, 0),
                    np.cumsum(x, 1), np.mean(x, 0), np.std(x, 0), np.sort(x, 0), np.diff(x, 1), np.min(x, -1))
    """,
    )
    x = np.random.default_rng(3).random((3, 4))
    want = m.positional.py_func(x)
    for got in (m.positional(x), m.positional.interpret(x)):
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
    with pytest.raises(scriptc.CompileError, match="'k' must be a constant here"):
        load_module(
            tmp_path,
            """
            @scriptc.script
            def variable(x: np.ndarray, k: int):
                return np.round(x, k)
        """,
        )


def test_clip_ties_follow_numpys_loops(tmp_path):
    """np.clip with an array bound takes the bound on a tie (-0.0 against 0.0), with scalar bounds it keeps x;
    NaN anywhere as NumPy's loops give: every triple of -0.0, 0.0, NaN, +-1, inf, bit for bit."""
    import itertools
    from tests.modules import load_module

    m = load_module(
        tmp_path,
        """
        @scriptc.script
        def lo_array(x: np.ndarray, lo: np.ndarray) -> np.ndarray:
            return np.clip(x, lo, 5.0)

        @scriptc.script
        def both_arrays(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
            return np.clip(x, lo, hi)

        @scriptc.script
        def scalars(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
            return np.clip(x, lo, hi)
    """,
    )
    grid = np.array(list(itertools.product([-0.0, 0.0, np.nan, 1.0, -1.0, np.inf], repeat=3)))
    for dtype in ("float64", "float32"):
        x, lo, hi = (grid[:, k].astype(dtype) for k in range(3))
        for fn, args in (
            (m.lo_array, (x, lo)),
            (m.both_arrays, (x, lo, hi)),
            (m.scalars, (x, -0.0, 0.0)),
            (m.scalars, (x, 0.0, -0.0)),
        ):
            want = fn.py_func(*args)
            for run in (fn, fn.interpret):
                got = run(*args)
                assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8)), (
                    fn.__name__,
                    dtype,
                )


def test_clip_with_a_none_bound_is_numpys(tmp_path):
    """np.clip(x, None, hi) is np.minimum(x, hi) in NumPy, np.clip(x, lo, None) np.maximum (so -0.0 against a
    0.0 bound differs from a clip's), both None a copy: every dtype, bit for bit (natively it was a KeyError)."""
    from tests.modules import load_module

    m = load_module(
        tmp_path,
        """
        @scriptc.script
        def upper(x: np.ndarray, hi: float) -> np.ndarray:
            return np.clip(x * 2, None, hi)

        @scriptc.script
        def lower(x: np.ndarray) -> np.ndarray:
            return np.clip(x, 1, None)

        @scriptc.script
        def neither(x: np.ndarray) -> np.ndarray:
            return np.clip(x, None, None)
    """,
    )
    for dtype in ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"):
        x = np.array([-0.0, 0.0, np.nan, 1.0, 3.0, -np.inf]) if dtype.startswith("float") else np.arange(-2, 4)
        x = x.astype(dtype)
        cases = [(m.upper, (x, 0.0)), (m.upper, (x, np.nan)), (m.lower, (x,))] + [(m.neither, (x,))] * (dtype != "bool")
        for fn, args in cases:
            want = fn.py_func(*args)
            for got in (fn(*args), fn.interpret(*args)):
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (fn.__name__, dtype)
    with pytest.raises(scriptc.CompileError, match="ufunc 'positive' did not contain a loop"):
        m.neither(np.ones(2, bool))


def test_in_place_broadcast_and_reshape_errors_are_numpys(tmp_path):
    """``x += y`` whose y does not broadcast to x: NumPy's two messages (shapes that do not broadcast together,
    or a broadcast shape other than x's); a reshape with -1 names it "newaxis"; a fused group's error names the
    operation NumPy would fail at."""
    from tests.modules import load_module

    m = load_module(
        tmp_path,
        """
        @scriptc.script
        def iadd(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            x += y
            return x

        @scriptc.script
        def rows(x: np.ndarray) -> np.ndarray:
            return x.reshape(3, -1)

        @scriptc.script
        def fused(a: np.ndarray, r: np.ndarray, c: np.ndarray) -> np.ndarray:
            return np.where(a > 0, a - r[None, :], 0.0) + c[:, None]
    """,
    )
    for a, b in (((3,), (4,)), ((1,), (5,)), ((2, 1), (3,)), ((2, 3), (4, 3)), ((1, 3), (2, 1))):
        raises_like(m.iadd, np.zeros(a), np.ones(b))
    raises_like(m.rows, np.arange(10.0))
    # a fused group: the first operation whose operands do not broadcast is named, as NumPy runs them one by one
    raises_like(m.fused, np.zeros((4, 5)), np.zeros(4), np.zeros(4))
    raises_like(m.fused, np.zeros((4, 5)), np.zeros(5), np.zeros(3))
    assert "prim::FusionGroup" in str(m.fused.graph_for(np.zeros((4, 5)), np.zeros(5), np.zeros(4)))


@scriptc.script
def sum_two_axes(x: np.ndarray) -> np.ndarray:
    return np.sum(x, axis=(0, 1))


def test_a_tuple_of_axes_is_a_compile_error_natively_and_numpys_sum_interpreted():
    """The interpreter reduces over several axes as NumPy; native code says it does not yet, at the call's
    line (it raised an internal TypeError)."""
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(sum_two_axes.interpret(x), np.sum(x, axis=(0, 1)))
    with pytest.raises(scriptc.CompileError, match=r"a tuple of axes is not supported .*one axis at a time") as info:
        sum_two_axes(x)
    assert f":{sum_two_axes.py_func.__code__.co_firstlineno + 2}:12:" in str(info.value)
