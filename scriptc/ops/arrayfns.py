"""Array functions beyond ufuncs and reductions: NaN/inf predicates, rounding, running sums and products,
differences, sorting. Each follows its NumPy function exactly (dtypes, axis rules, NaN order), with the
restrictions the type rules state: ``axis``, ``n`` and ``decimals`` are compile-time constants passed by keyword.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.registry import (
    ZERO_DERIVATIVE,
    Batch,
    NeedsSpecialization,
    OpTypeError,
    by_sample,
    register,
    same_shape,
    shape_of,
)
from ..ir.types import TensorType, TupleType


def _unary(scalar_fn, array_fn):
    def impl(x):
        return array_fn(x) if isinstance(x, np.ndarray) else scalar_fn(x)

    return impl


# x != x, |x| == inf, neither: on Python scalars as ``math`` does, on arrays as the ufunc (ints are never NaN)
PREDICATES = [
    ("isnan", math.isnan, np.isnan),
    ("isinf", math.isinf, np.isinf),
    ("isfinite", math.isfinite, np.isfinite),
]
for _name, _scalar, _ufunc in PREDICATES:
    _impl = _unary(_scalar, _ufunc)
    register(
        f"aten::{_name}(Number|Tensor self) -> bool|Tensor",
        impl=_impl,
        infer=by_sample(_impl),
        elementwise=True,
        py=(_scalar, _ufunc),
        predicate=True,
    )

# Truth values combined, element-wise (NumPy's logical ufuncs: a number is true when nonzero, NaN included); bool
# results computed in the operands' common dtype, as a predicate's.
LOGICAL = [
    ("logical_and", np.logical_and, 2),
    ("logical_or", np.logical_or, 2),
    ("logical_xor", np.logical_xor, 2),
    ("logical_not", np.logical_not, 1),
]
for _name, _ufunc, _arity in LOGICAL:
    _params = "Number|Tensor self, Number|Tensor other" if _arity == 2 else "Number|Tensor self"
    register(
        f"aten::{_name}({_params}) -> bool|Tensor",
        impl=_ufunc,
        infer=by_sample(_ufunc),
        elementwise=True,
        py=(_ufunc,),
        predicate=True,
        vjp=ZERO_DERIVATIVE,
    )


def _array(t, what) -> TensorType:
    if not isinstance(t, TensorType):
        raise OpTypeError(f"{what} needs an array, got {t}")
    return t


def _axis_in(t: TensorType, axis, what) -> None:
    if axis is not None and not -t.rank <= axis < t.rank:
        raise OpTypeError(f"{what}: axis {axis} is out of bounds for array of dimension {t.rank}")


# -- np.round(x, decimals=0): NumPy's multiply, rint, divide (negative decimals divide first) ---------------
def _round(x, *, decimals=0):
    return np.round(x, decimals=decimals)


def _round_rule(t, *, decimals=0):
    _array(t, "np.round()")
    if t.dtype is not None and np.dtype(t.dtype).kind in "iub" and decimals < 0:
        raise OpTypeError("np.round() of an integer array with negative decimals is not supported")
    return by_sample(_round)(t, decimals=decimals)


register(
    "aten::round(Tensor self, *, int decimals) -> Tensor",
    impl=_round,
    infer=_round_rule,
    py=(np.round, np.around),
    methods=("round",),
    shape=same_shape,
    batch=Batch.SAME,
    vjp=ZERO_DERIVATIVE,
)


# -- running sums and products: np.cumsum(x, axis=None) flattens ------------------------------------------
def _scan_impl(fn):
    def impl(x, *, axis=None):
        return fn(x, axis=axis)

    return impl


def _scan_rule(impl, what):
    def rule(t, *, axis=None):
        _array(t, what)
        if t.rank is not None:
            _axis_in(t, axis, what)
        return by_sample(impl)(t, axis=axis)

    return rule


def _scan_shape(types, consts, *, axis=None):
    shape = shape_of(types[0])
    if axis is None:
        return [None if shape is None else (None if None in shape else (int(np.prod(shape)),),)]
    return [shape]


def _cumsum_vjp(e, g, out, x, axis=None):
    """Each element reaches every later sum: the adjoint is the cumulative sum of ``g`` from the end."""
    k = 0 if axis is None else axis % x.type.rank

    def flip(v):
        return e.op("aten::slice", v, e.const(None), e.const(None), e.const(-1), dim=k)

    back = flip(e.op("aten::cumsum", flip(g), axis=k))
    return (e.reshape_like(back, x) if axis is None else back,)


for _name, _fn, _vjp in [("cumsum", np.cumsum, _cumsum_vjp), ("cumprod", np.cumprod, None)]:
    _i = _scan_impl(_fn)
    register(
        f"aten::{_name}(Tensor self, *, int? axis) -> Tensor",
        impl=_i,
        infer=_scan_rule(_i, f"np.{_name}()"),
        py=(_fn,),
        methods=(_name,),
        shape=_scan_shape,
        scan=True,
        batch=Batch.AXIS,
        vjp=_vjp,
    )


# -- np.diff(x, n=1, axis=-1) ---------------------------------------------------------------------------------
def _diff(x, *, n=1, axis=-1):
    return np.diff(x, n=n, axis=axis)


def _diff_rule(t, *, n=1, axis=-1):
    _array(t, "np.diff()")
    if t.rank == 0:
        raise OpTypeError("diff requires input that is at least one dimensional")
    if n < 1:
        raise OpTypeError(f"np.diff(): n must be at least 1, got {n}")
    if t.rank is not None:
        _axis_in(t, axis, "np.diff()")
    return by_sample(_diff)(TensorType(t.dtype, t.rank), n=1, axis=axis)


def _diff_shape(types, consts, *, n=1, axis=-1):
    shape = shape_of(types[0])
    if shape is None:
        return [None]
    k = axis % len(shape)
    d = shape[k]
    return [shape[:k] + (None if d is None else max(0, d - n),) + shape[k + 1 :]]


def _diff_vjp(e, g, out, x, *, n=1, axis=-1):
    """Each difference y_i = x_{i+1} - x_i sends +g_i to x_{i+1} and -g_i to x_i: n times, from the last."""
    k = axis % x.type.rank
    none, one, minus_one = e.const(None), e.const(1), e.const(-1)
    for _ in range(n - 1):  # the adjoint of the (n-1)-th differences, one element longer along the axis
        dims = e.dims(g)
        wider = e.op("aten::zeros", *dims[:k], e.add(dims[k], one), *dims[k + 1 :], dtype=g.type.dtype)
        e.add_into(e.op("aten::slice", wider, one, none, none, dim=k), g)
        e.add_into(e.op("aten::slice", wider, none, minus_one, none, dim=k), e.neg(g))
        g = wider

    def write(e, acc):
        e.add_into(e.op("aten::slice", acc, one, none, none, dim=k), g)
        e.add_into(e.op("aten::slice", acc, none, minus_one, none, dim=k), e.neg(g))

    return (e.scatter(write),)


register(
    "aten::diff(Tensor self, *, int n, int axis) -> Tensor",
    impl=_diff,
    infer=_diff_rule,
    py=(np.diff,),
    shape=_diff_shape,
    batch=Batch.AXIS,
    vjp=_diff_vjp,
)


# -- sorting: a stable merge sort along an axis (NaNs last, as NumPy orders them) ----------------------------
def _sort(x, *, axis=-1):
    return np.sort(x, axis=axis, kind="stable")


def _argsort(x, *, axis=-1):
    return np.argsort(x, axis=axis, kind="stable")


def _sort_rule(impl, what):
    def rule(t, *, axis=-1):
        _array(t, what)
        if t.rank == 0 and axis is not None:
            raise OpTypeError(f"{what} of a 0-d array needs axis=None")
        if t.rank is not None:
            _axis_in(t, axis, what)
        return by_sample(impl)(t, axis=axis)

    return rule


def _sort_shape(types, consts, *, axis=-1):
    return _scan_shape(types, consts, axis=axis)


for _name, _i in [("sort", _sort), ("argsort", _argsort)]:
    register(
        f"aten::{_name}(Tensor self, *, int? axis) -> Tensor",
        impl=_i,
        infer=_sort_rule(_i, f"np.{_name}()"),
        py=(getattr(np, _name),),
        shape=_sort_shape,
        sorts=True,
        batch=Batch.AXIS,
    )


# -- positions of nonzero elements: np.nonzero (a tuple of index arrays), np.argwhere (one row per element) ----
def _nonzero_rule(t):
    _array(t, "np.nonzero()")
    if t.rank is None:
        raise NeedsSpecialization("np.nonzero()")
    if t.rank == 0:
        raise OpTypeError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    return TupleType((TensorType("int64", 1),) * t.rank)


def _argwhere_rule(t):
    _array(t, "np.argwhere()")
    if t.rank == 0:
        raise OpTypeError("np.argwhere() of a 0-d array is not supported")
    return TensorType("int64", 2)


# Batched: per example (the counts of nonzero elements usually differ: np.stack then raises, as stacking the
# per-example results would).
register(
    "aten::nonzero(Tensor self) -> (Tensor, ...)",
    impl=np.nonzero,
    infer=_nonzero_rule,
    py=(np.nonzero,),
    methods=("nonzero",),
    shape=lambda types, consts: [None],
    batch=Batch.LANES,
)
register(
    "aten::argwhere(Tensor self) -> Tensor",
    impl=np.argwhere,
    infer=_argwhere_rule,
    py=(np.argwhere,),
    batch=Batch.LANES,
    shape=lambda types, consts: [None if shape_of(types[0]) is None else (None, len(shape_of(types[0])))],
)
