"""Elementary functions. On a Python scalar they follow ``math`` (a domain error raises ValueError); on arrays
and NumPy scalars they follow the NumPy ufunc. The table below is the only place a function is named: the op, the
``math``
function and the NumPy ufunc the frontend maps onto it."""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass

import numpy as np

from ..ir.registry import ZERO_DERIVATIVE, Batch, Effect, OpTypeError, by_sample, register
from ..ir.types import INT, FLOAT, TensorType, is_numpy_scalar


def _unary(scalar_fn, array_fn):
    def impl(x):
        if isinstance(x, np.ndarray) or is_numpy_scalar(x):  # (math.sqrt(x[i]) is given the float: calls.py)
            return array_fn(x)
        return scalar_fn(x)

    return impl


# Derivative rules (see ``OpDef.vjp``): ``d(e, x, out)`` is the derivative at ``x``, given the result ``out``.
# Their divisions are IEEE's: at a point where the function is defined but its derivative is not finite (sqrt
# at 0, asin at 1) the derivative is inf or NaN, as in jax and torch, not a ZeroDivisionError.
def _chain(derivative):
    def vjp(e, g, out, x):
        return (e.mul(g, derivative(e, x, out)),)

    return vjp


def _one_over_sqrt_one_minus_square(e, x):
    return e.ieee_div(e.const(1.0), e.op("aten::sqrt", e.sub(e.const(1.0), e.mul(x, x))))


def _sign_at_or_above_zero(e, x):
    """|x|' as JAX defines it: 1 where x >= 0 (-0.0 included), else -1 (NaN too)."""
    return e.sub(e.mul(e.op("aten::ge", x, e.const(0.0)), e.const(2.0)), e.const(1.0))


D = {
    "sqrt": lambda e, x, out: e.ieee_div(e.const(0.5), out),
    "exp": lambda e, x, out: out,
    "expm1": lambda e, x, out: e.add(out, e.const(1.0)),
    "log": lambda e, x, out: e.ieee_div(e.const(1.0), x),
    "log2": lambda e, x, out: e.ieee_div(e.const(1.0 / math.log(2.0)), x),
    "log10": lambda e, x, out: e.ieee_div(e.const(1.0 / math.log(10.0)), x),
    "log1p": lambda e, x, out: e.ieee_div(e.const(1.0), e.add(x, e.const(1.0))),
    "sin": lambda e, x, out: e.op("aten::cos", x),
    "cos": lambda e, x, out: e.neg(e.op("aten::sin", x)),
    "tan": lambda e, x, out: e.add(e.const(1.0), e.mul(out, out)),
    "asin": lambda e, x, out: _one_over_sqrt_one_minus_square(e, x),
    "acos": lambda e, x, out: e.neg(_one_over_sqrt_one_minus_square(e, x)),
    "atan": lambda e, x, out: e.ieee_div(e.const(1.0), e.add(e.const(1.0), e.mul(x, x))),
    "sinh": lambda e, x, out: e.op("aten::cosh", x),
    "cosh": lambda e, x, out: e.op("aten::sinh", x),
    "tanh": lambda e, x, out: e.sub(e.const(1.0), e.mul(out, out)),
    "abs": lambda e, x, out: _sign_at_or_above_zero(e, x),
    "fabs": lambda e, x, out: _sign_at_or_above_zero(e, x),
}

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
    ("floor", math.floor, np.floor, ()),  # math.floor(float) is an int, as in Python
    ("ceil", math.ceil, np.ceil, ()),
    ("trunc", math.trunc, np.trunc, ()),
    ("abs", builtins.abs, np.abs, (np.absolute,)),
    ("fabs", math.fabs, np.fabs, ()),
]


@dataclass(frozen=True)
class CMath:
    """A math function computed by one C library call per element (the others are single instructions), under
    one name in each library: ``exp`` is libm's ``exp``/``expf``, libmvec's ``_ZGVeN8v_exp``/``_ZGVeN16v_expf``
    and libdevice's ``__nv_exp``/``__nv_expf``. ``overflows``: an infinite result from a finite argument is a
    range error (OverflowError), else a domain error (ValueError), as CPython's ``math_1`` decides; ``vector``:
    glibc's libmvec has SIMD variants (array loops call them, within 4 ulp as NumPy's own SIMD loops are)."""

    name: str
    nargs: int = 1
    overflows: bool = False
    vector: bool = True


# The C math functions native code calls, the one table the backends read (libm, libmvec and libdevice names).
# On arrays, even alone, the operators computed by one of them run in the fused element loop, whose vectorized
# form calls the SIMD variants (passes/fusion.py).
C_MATH = {
    c.name: c
    for c in [
        CMath("exp", overflows=True),
        CMath("expm1", overflows=True),
        CMath("sinh", overflows=True),
        CMath("cosh", overflows=True),
        CMath("log"),
        CMath("log2"),
        CMath("log10"),
        CMath("log1p"),
        CMath("sin"),
        CMath("cos"),
        CMath("tan"),
        CMath("asin"),
        CMath("acos"),
        CMath("atan"),
        CMath("tanh"),
        CMath("pow", 2),
        CMath("atan2", 2),
        CMath("hypot", 2),
        CMath("fmod", 2, vector=False),
    ]
}

for _name, _scalar, _ufunc, _more in UNARY:
    _impl = _unary(_scalar, _ufunc)
    register(
        f"aten::{_name}(Number|Tensor self) -> Number|Tensor",
        impl=_impl,
        infer=by_sample(_impl),
        effect=Effect.RAISES,
        elementwise=True,
        py=(_scalar, _ufunc) + _more,
        ufunc=_ufunc,
        scalar=_scalar,
        vjp=_chain(D[_name]) if _name in D else ZERO_DERIVATIVE,
        libm=C_MATH.get(_name),
    )


# np.floor, np.ceil and np.trunc of a Python float: NumPy's float (inf, nan and -0.0 as they are), where math's
# functions, the ops above, give an int (raising for inf and nan)
for _name, _ufunc in (("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)):
    _impl = (lambda u: lambda x: float(u(x)))(_ufunc)
    register(
        f"aten::{_name}_float(float self) -> float",
        impl=_impl,
        infer=by_sample(_impl),
        effect=Effect.PURE,
        batch=Batch.LANES,
        vjp=ZERO_DERIVATIVE,
    )


def _binary(scalar_fn, array_fn):
    def impl(a, b):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return array_fn(a, b)
        return scalar_fn(a, b)

    return impl


def _atan2_vjp(e, g, out, y, x):
    scale = e.div(g, e.add(e.mul(x, x), e.mul(y, y)))
    return e.mul(scale, x), e.neg(e.mul(scale, y))


def _hypot_vjp(e, g, out, a, b):
    return e.mul(g, e.div(a, out)), e.mul(g, e.div(b, out))


def _copysign_vjp(e, g, out, a, b):  # |a| with b's sign: the sign of a times b's sign
    return e.mul(g, e.mul(e.op("aten::copysign", e.const(1.0), a), e.op("aten::copysign", e.const(1.0), b))), None


def _fmod_vjp(e, g, out, a, b):  # a - trunc(a / b) * b
    return g, e.neg(e.mul(g, e.op("aten::trunc", e.div(a, b))))


def _float_power_vjp(e, g, out, a, b):
    p = e.sub(b, e.const(1.0))
    scalars = not isinstance(a.type, TensorType) and not isinstance(b.type, TensorType)
    da = e.mul(g, e.mul(b, e.pow_ieee(a, p) if scalars else e.op("aten::float_power", a, p)))  # math.pow raises
    return da, (e.mul(g, e.mul(out, e.log_or_zero(a))) if e.differentiable(b) else None)


BINARY_FNS = [
    ("atan2", math.atan2, np.arctan2, _atan2_vjp),
    ("hypot", math.hypot, np.hypot, _hypot_vjp),
    ("copysign", math.copysign, np.copysign, _copysign_vjp),
    ("fmod", math.fmod, np.fmod, _fmod_vjp),
    ("float_power", math.pow, np.float_power, _float_power_vjp),  # math.pow: always a float, domain errors raise
]
for _name, _scalar, _ufunc, _vjp in BINARY_FNS:
    _impl = _binary(_scalar, _ufunc)
    register(
        f"aten::{_name}(Number|Tensor self, Number|Tensor other) -> Number|Tensor",
        impl=_impl,
        infer=by_sample(_impl),
        effect=Effect.RAISES,
        elementwise=True,
        py=(_scalar, _ufunc),
        vjp=_vjp,
    )


def _balanced(e, g, out, a, b):
    """The adjoints of ``a`` and ``b`` for a result ``out`` that is one of them (maximum, minimum, max, min), by
    JAX's rule: all of ``g`` to the operand equal to the result, half to each when both are (a tie), none when
    neither is (a NaN result)."""
    at_a, at_b = e.op("aten::eq", out, a), e.op("aten::eq", out, b)
    tie = e.mul(e.op("aten::__and__", at_a, at_b), e.const(0.5))
    return e.mul(g, e.sub(at_a, tie)), e.mul(g, e.sub(at_b, tie))


def _np_maximum(a, b):
    return np.maximum(a, b)


def _np_minimum(a, b):
    return np.minimum(a, b)


register(
    "aten::maximum(Number|Tensor self, Number|Tensor other) -> Number|Tensor",
    impl=_np_maximum,
    infer=by_sample(_np_maximum),
    elementwise=True,
    py=(np.maximum,),
    vjp=_balanced,
)
register(
    "aten::minimum(Number|Tensor self, Number|Tensor other) -> Number|Tensor",
    impl=_np_minimum,
    infer=by_sample(_np_minimum),
    elementwise=True,
    py=(np.minimum,),
    vjp=_balanced,
)


def _where(c, a, b):
    return np.where(c, a, b)


register(
    "aten::where(Tensor condition, Number|Tensor self, Number|Tensor other) -> Tensor",
    impl=_where,
    batch=Batch.elementwise(promote=(1, 2)),  # the condition stays bool
    infer=by_sample(_where),
    elementwise=True,
    py=(np.where,),
    vjp=lambda e, g, out, c, a, b: (
        None,
        e.op("aten::where", c, g, e.const(0.0)),
        e.op("aten::where", c, e.const(0.0), g),
    ),
)


def _clip(x, lo, hi):
    return np.clip(x, lo, hi)


def _clip_vjp(e, g, out, x, lo, hi):
    """np.clip is np.minimum(np.maximum(x, lo), hi): the chain of the two rules (``_balanced``), as jnp.clip's
    derivative is. At x == lo == hi, x and lo get a quarter each and hi half."""
    low = e.op("aten::maximum", x, lo)
    to_low, to_hi = _balanced(e, g, out, low, hi)
    to_x, to_lo = _balanced(e, to_low, low, x, lo)
    return to_x, to_lo, to_hi


register(
    "aten::clip(Tensor self, Number|Tensor min, Number|Tensor max) -> Tensor",
    impl=_clip,
    infer=by_sample(_clip),
    elementwise=True,
    py=(np.clip,),
    vjp=_clip_vjp,
)


def _same_kind_scalars(name):
    def rule(a, b):
        if isinstance(a, TensorType) or isinstance(b, TensorType):
            raise OpTypeError(f"{name}() of arrays compares whole arrays; use np.{name}imum for element-wise")
        if a != b and {a, b} == {INT, FLOAT}:
            raise OpTypeError(
                f"{name}() of an int and a float returns either type depending on the values; convert one with float()"
            )
        if a != b:
            raise OpTypeError(f"{name}() of {a} and {b} is not supported")
        return a

    return rule


def _python_extremum_batch(compare):
    """max(a, b) is b if b > a else a (and min with <): Python's choice on ties and NaN, unlike np.maximum."""

    def rule(b, node, ins):
        x, y = ins
        return [b.fix_dtype(b.op("aten::where", b.op(compare, y, x), y, x), node.outputs[0].type)]

    return Batch.custom(rule)


# Python's min/max: the first of equal values wins and nan compares false, exactly as builtins do.
register(
    "prim::max(Number self, Number other) -> Number",
    impl=builtins.max,
    infer=_same_kind_scalars("max"),
    batch=_python_extremum_batch("aten::gt"),
    vjp=_balanced,
)
register(
    "prim::min(Number self, Number other) -> Number",
    impl=builtins.min,
    infer=_same_kind_scalars("min"),
    batch=_python_extremum_batch("aten::lt"),
    vjp=_balanced,
)
