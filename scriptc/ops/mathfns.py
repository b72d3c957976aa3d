"""Elementary functions. On a Python scalar they follow ``math`` (a domain error raises ValueError); on arrays
they follow the NumPy ufunc. The table below is the only place a function is named: the op, the ``math``
function and the NumPy ufunc the frontend maps onto it."""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..ir.registry import Effect, OpTypeError, by_sample, register
from ..ir.types import INT, FLOAT, TensorType


def _unary(scalar_fn, array_fn):
    def impl(x):
        if isinstance(x, np.ndarray):
            return array_fn(x)
        return scalar_fn(x)
    return impl


# op name, math function (scalars), NumPy ufunc (arrays), other Python callables bound to it
UNARY = [
    ("sqrt", math.sqrt, np.sqrt, ()),
    ("exp", math.exp, np.exp, ()),
    ("expm1", math.expm1, np.expm1, ()),
    ("log", math.log, np.log, ()),
    ("log2", math.log2, np.log2, ()),
    ("log10", math.log10, np.log10, ()),
    ("log1p", math.log1p, np.log1p, ()),
    ("sin", math.sin, np.sin, ()),
    ("cos", math.cos, np.cos, ()),
    ("tan", math.tan, np.tan, ()),
    ("asin", math.asin, np.arcsin, ()),
    ("acos", math.acos, np.arccos, ()),
    ("atan", math.atan, np.arctan, ()),
    ("sinh", math.sinh, np.sinh, ()),
    ("cosh", math.cosh, np.cosh, ()),
    ("tanh", math.tanh, np.tanh, ()),
    ("floor", math.floor, np.floor, ()),     # math.floor(float) is an int, as in Python
    ("ceil", math.ceil, np.ceil, ()),
    ("trunc", math.trunc, np.trunc, ()),
    ("abs", builtins.abs, np.abs, (np.absolute,)),
    ("fabs", math.fabs, np.fabs, ()),
]

for _name, _scalar, _ufunc, _more in UNARY:
    _impl = _unary(_scalar, _ufunc)
    register(f"aten::{_name}(Number|Tensor self) -> Number|Tensor", impl=_impl, infer=by_sample(_impl),
             effect=Effect.RAISES, elementwise=True, py=(_scalar, _ufunc) + _more, ufunc=_ufunc,
             scalar=_scalar)


def _binary(scalar_fn, array_fn):
    def impl(a, b):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return array_fn(a, b)
        return scalar_fn(a, b)
    return impl


BINARY_FNS = [
    ("atan2", math.atan2, np.arctan2),
    ("hypot", math.hypot, np.hypot),
    ("copysign", math.copysign, np.copysign),
    ("fmod", math.fmod, np.fmod),
    ("float_power", math.pow, np.float_power),   # math.pow: always a float, domain errors raise
]
for _name, _scalar, _ufunc in BINARY_FNS:
    _impl = _binary(_scalar, _ufunc)
    register(f"aten::{_name}(Number|Tensor self, Number|Tensor other) -> Number|Tensor", impl=_impl,
             infer=by_sample(_impl), effect=Effect.RAISES, elementwise=True, py=(_scalar, _ufunc))


def _np_maximum(a, b):
    return np.maximum(a, b)


def _np_minimum(a, b):
    return np.minimum(a, b)


register("aten::maximum(Number|Tensor self, Number|Tensor other) -> Number|Tensor", impl=_np_maximum,
         infer=by_sample(_np_maximum), elementwise=True, py=(np.maximum,))
register("aten::minimum(Number|Tensor self, Number|Tensor other) -> Number|Tensor", impl=_np_minimum,
         infer=by_sample(_np_minimum), elementwise=True, py=(np.minimum,))


def _where(c, a, b):
    return np.where(c, a, b)


register("aten::where(Tensor condition, Number|Tensor self, Number|Tensor other) -> Tensor", impl=_where,
         infer=by_sample(_where), elementwise=True, py=(np.where,))


def _clip(x, lo, hi):
    return np.clip(x, lo, hi)


register("aten::clip(Tensor self, Number|Tensor min, Number|Tensor max) -> Tensor", impl=_clip,
         infer=by_sample(_clip), elementwise=True, py=(np.clip,))


def _same_kind_scalars(name):
    def rule(a, b):
        if isinstance(a, TensorType) or isinstance(b, TensorType):
            raise OpTypeError(f"{name}() of arrays compares whole arrays; use np.{name}imum for element-wise")
        if a != b and {a, b} == {INT, FLOAT}:
            raise OpTypeError(f"{name}() of an int and a float returns either type depending on the values; "
                              f"convert one with float()")
        if a != b:
            raise OpTypeError(f"{name}() of {a} and {b} is not supported")
        return a
    return rule


# Python's min/max: the first of equal values wins and nan compares false, exactly as builtins do.
register("prim::max(Number self, Number other) -> Number", impl=builtins.max, infer=_same_kind_scalars("max"))
register("prim::min(Number self, Number other) -> Number", impl=builtins.min, infer=_same_kind_scalars("min"))
