"""Python builtins and ``math`` functions on scalars that are not NumPy ufuncs: ``round``, ``divmod``,
``math.isnan/isinf/isfinite/isclose/gcd/factorial``, and ``raise`` of a builtin exception.

Each reference implementation is CPython's own function; where scriptc must differ (``math.factorial`` of
n > 20 does not fit in a 64-bit int) the implementation here raises exactly what native code raises.
``enumerate``, ``zip``, ``reversed``, ``sum``, ``any``, ``all`` and ``isinstance`` need no operator: the
frontend writes them as loops or folds them (``frontend/builtin_calls.py``).
"""

from __future__ import annotations

import builtins
import math

from ..ir.registry import Batch, Effect, OpTypeError, register
from ..ir.types import BOOL, FLOAT, INT, TupleType

_NUMBERS = (INT, FLOAT, BOOL)


def _scalars(name, *types):
    for t in types:
        if t not in _NUMBERS:
            raise OpTypeError(f"{name}() needs numbers, got {t}")


def _ints(name, *types):
    for t in types:
        if t not in (INT, BOOL):
            raise OpTypeError(
                f"'{t}' object cannot be interpreted as an integer" if t == FLOAT else f"{name}() needs ints, got {t}"
            )


# -- raise -------------------------------------------------------------------------------------------------


def exception_class(name: str) -> type:
    """The builtin exception class a ``prim::RaiseException`` names."""
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        raise ValueError(f"{name} is not a builtin exception")
    return cls


def _raise(*args, exc):
    raise exception_class(exc)(*args)


def _raise_rule(*types, exc):
    exception_class(exc)
    return []


register(
    "prim::RaiseException(Any... args, *, str exc) -> ()",
    impl=_raise,
    infer=_raise_rule,
    effect=Effect.IO,
    batch=Batch.TRANSFORM,
)


# Batching (``OpDef.batch``): the builtins below run per example (``Batch.LANES``), so they raise exactly what
# CPython raises for the example (round's OverflowError, factorial's ValueError, ...).


# -- round ---------------------------------------------------------------------------------------------------


def _round_rule(t):
    _scalars("round", t)
    return INT


def _round_ndigits_rule(t, n):
    _scalars("round", t)
    _ints("round", n)
    return FLOAT if t == FLOAT else INT


register(
    "prim::round(Number self) -> int", impl=builtins.round, infer=_round_rule, effect=Effect.RAISES, batch=Batch.LANES
)
# calls_python: native code calls back into Python (CPython's float rounding), which needs the GIL
register(
    "prim::round_ndigits(Number self, int ndigits) -> Number",
    impl=builtins.round,
    batch=Batch.LANES,
    infer=_round_ndigits_rule,
    effect=Effect.RAISES,
    calls_python=True,
)


# -- divmod ----------------------------------------------------------------------------------------------------


def _divmod_rule(a, b):
    _scalars("divmod", a, b)
    t = FLOAT if FLOAT in (a, b) else INT
    return TupleType((t, t))


register(
    "prim::divmod(Number self, Number other) -> Tuple",
    impl=builtins.divmod,
    infer=_divmod_rule,
    batch=Batch.LANES,
    effect=Effect.RAISES,
    py=(builtins.divmod,),
)


# -- math --------------------------------------------------------------------------------------------------------

# math.isnan/isinf/isfinite are the element-wise predicates of ops/arrayfns.py (one operator each)


def _isclose(a, b, rel_tol, abs_tol):
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)


def _isclose_rule(*types):
    _scalars("math.isclose", *types)
    return BOOL


register(
    "prim::isclose(Number a, Number b, Number rel_tol, Number abs_tol) -> bool",
    impl=_isclose,
    batch=Batch.LANES,
    infer=_isclose_rule,
    effect=Effect.RAISES,
)


def _gcd_rule(a, b):
    _ints("gcd", a, b)
    return INT


register("prim::gcd(int a, int b) -> int", impl=math.gcd, infer=_gcd_rule, batch=Batch.LANES)

FACTORIAL_MAX = 20  # 21! does not fit in a 64-bit int


def factorial(n):
    if n < 0:
        raise ValueError("factorial() not defined for negative values")
    if n > FACTORIAL_MAX:
        raise OverflowError(
            f"factorial() of {n} does not fit in a 64-bit int (scriptc ints are 64-bit: "
            f"n must be at most {FACTORIAL_MAX})"
        )
    return math.factorial(n)


def _factorial_rule(n):
    _ints("factorial", n)
    return INT


register(
    "prim::factorial(int n) -> int",
    impl=factorial,
    infer=_factorial_rule,
    effect=Effect.RAISES,
    batch=Batch.LANES,
    py=(math.factorial,),
)
