"""Element rules: one element of an element-wise operator, as NumPy's ufunc loops compute it.

Array loops, fused groups, operators on NumPy scalars and GPU kernels all compute an element through
``element(ctx, op, args, k, dtype)``, which finds the rule registered here for the operator and the kind of its
registers: ``"f"`` (a double holding a float64, float32 or float16 element; ``dtype`` says which, for the steps
that round to it), ``"i"``/``"u"`` (an i64 holding a signed or zero-extended unsigned integer), ``"b"`` (an i1).
A rule is ``rule(ctx, op, args, k, dtype) -> register``; its result has the operands' kind, or bool for
comparisons and predicates (``result="b"``).

The one-argument math functions computed by a C call (``ops.mathfns.C_MATH``) need no rule of their own: the
float rule of ``C_MATH`` calls the target's symbol for the function (libm, or libdevice on the GPU), in single
precision where the target asks for it.
"""

from __future__ import annotations

from typing import Callable

from llvmlite import ir

from ....ir.registry import REGISTRY
from ....ops.mathfns import C_MATH
from .array_value import F32
from .common import COMPARE, F64, I1, INTRINSIC, f64, i64
from ..runtime.errors import LoweringError
from . import conversions, scalar_ops

ElementRule = Callable[..., ir.Value]
_RULES: dict[tuple[str, str], tuple[ElementRule, str | None]] = {}
KIND_NAMES = {"f": "float", "i": "integer", "u": "integer", "b": "bool"}
# float-only spellings of an operator; on integers and bools, the operator itself
FLOAT_VARIANTS = {"pow_scalar": "pow", "clip_arrays": "clip"}
PREDICATES = {name.split("::")[1] for name, op in REGISTRY.items() if op.extra.get("predicate")}


def rule(*ops: str, kinds: str, result: str | None = None):
    """Register the decorated function as the element rule of ``ops`` on registers of ``kinds``."""

    def deco(fn: ElementRule) -> ElementRule:
        for op in ops:
            for k in kinds:
                assert (k, op) not in _RULES, f"two element rules for {op} on kind {k}"
                _RULES[(k, op)] = fn, result
        return fn

    return deco


def element(ctx, op: str, args: list, k: str, dtype: str = "float64") -> tuple[str, ir.Value]:
    """``op`` (an operator's name without its namespace) on registers of kind ``k``: (result kind, result)."""
    if k != "f":
        op = FLOAT_VARIANTS.get(op, op)
    found = _RULES.get((k, op))
    if found is None:
        raise LoweringError(f"aten::{op}", f"not supported on {KIND_NAMES[k]} arrays", ctx.node.source)
    fn, result = found
    return result or k, fn(ctx, op, args, k, dtype)


def has_rule(op: str, k: str) -> bool:
    return (k, FLOAT_VARIANTS.get(op, op) if k != "f" else op) in _RULES


def constant_number(y) -> float | None:
    """The value of a register holding a constant number (a float constant, or an int constant converted to
    float); None otherwise."""
    if getattr(y, "opname", None) == "sitofp":
        y = y.operands[0]
    if isinstance(y, ir.Constant) and isinstance(y.constant, (int, float)) and not isinstance(y.constant, bool):
        return float(y.constant)
    return None


# NumPy's ``array ** s`` for a Python scalar s (fast_scalar_power in numpy/_core/src/multiarray/number.c) calls
# these ufuncs instead of np.power for these exponents: their results differ from libm's pow (sqrt(-0.0) is
# -0.0 where pow gives 0.0; 1 / x and x * x are correctly rounded, pow is not)
FAST_POWERS = (0.5, -1.0, 2.0, 1.0)


# -- comparisons and predicates: a bool of any kind -----------------------------------------------------------


@rule(*COMPARE, kinds="fiub", result="b")
def compare(ctx, op, args, k, dtype):
    ipred, fpred = COMPARE[op]
    b = ctx.b
    if k == "f":
        return (b.fcmp_unordered if fpred == "une" else b.fcmp_ordered)(ipred, *args)
    # i64 holds every supported integer dtype exactly (u: zero-extended), so a signed comparison is exact, also
    # against Python ints out of the array dtype's range (NumPy 2 compares those exactly)
    return (b.icmp_unsigned if k == "b" else b.icmp_signed)(ipred, *args)


@rule("isnan", "isinf", "isfinite", kinds="fiub", result="b")
def number_class(ctx, op, args, k, dtype):
    b, x = ctx.b, args[0]
    if k != "f":  # ints and bools are finite, never NaN
        return ir.Constant(I1, int(op == "isfinite"))
    if op == "isnan":
        return b.fcmp_unordered("uno", x, x)
    magnitude = b.call(ctx.mod.intrinsic("fabs"), [x])
    if op == "isinf":
        return b.fcmp_ordered("==", magnitude, f64(float("inf")))
    return b.fcmp_ordered("<", magnitude, f64(float("inf")))


def truth(ctx, x, k: str):
    """An element as a bool, as NumPy's logical ufuncs see it: nonzero (NaN is true)."""
    if k == "b":
        return x
    if k == "f":
        return ctx.b.fcmp_unordered("!=", x, f64(0.0))
    return ctx.b.icmp_signed("!=", x, ir.Constant(x.type, 0))


def logical(ctx, op: str, truths: list):
    b = ctx.b
    if op == "logical_not":
        return b.not_(truths[0])
    return {"logical_and": b.and_, "logical_or": b.or_, "logical_xor": b.xor}[op](*truths)


@rule("logical_and", "logical_or", "logical_xor", "logical_not", kinds="fiub", result="b")
def logical_element(ctx, op, args, k, dtype):
    return logical(ctx, op, [truth(ctx, x, k) for x in args])


@rule("where", kinds="fiub")
def where(ctx, op, args, k, dtype):
    return ctx.b.select(*args)


# -- bools ----------------------------------------------------------------------------------------------------

_BOOL_OPS = {
    "add": "or_",
    "__or__": "or_",
    "maximum": "or_",
    "mul": "and_",
    "__and__": "and_",
    "minimum": "and_",
    "__xor__": "xor",
}


@rule(*_BOOL_OPS, kinds="b")
def bool_arith(ctx, op, args, k, dtype):
    return getattr(ctx.b, _BOOL_OPS[op])(*args)


@rule("abs", "floor", "ceil", "trunc", kinds="b")
@rule("floor", "ceil", "trunc", kinds="iu")  # NumPy 2: integers (and bools) are their own floor
def identity(ctx, op, args, k, dtype):
    return args[0]


@rule("bitwise_not", kinds="b")
def bool_not(ctx, op, args, k, dtype):
    return ctx.b.not_(args[0])


@rule("clip", kinds="b")
def bool_clip(ctx, op, args, k, dtype):
    return ctx.b.and_(ctx.b.or_(args[0], args[1]), args[2])


# -- integers -------------------------------------------------------------------------------------------------

_INT_OPS = {"add": "add", "sub": "sub", "mul": "mul", "__and__": "and_", "__or__": "or_", "__xor__": "xor"}


@rule(*_INT_OPS, kinds="iu")
def int_arith(ctx, op, args, k, dtype):
    return getattr(ctx.b, _INT_OPS[op])(*args)


@rule("floordiv", "remainder", kinds="iu")
def int_divmod(ctx, op, args, k, dtype):
    """NumPy's integer division and remainder: 0 where the divisor is 0 (a RuntimeWarning in NumPy)."""
    b, (x, y) = ctx.b, args
    zero = b.icmp_signed("==", y, i64(0))
    safe = b.select(zero, i64(1), y)
    r = scalar_ops.int_floordiv(ctx, x, safe) if op == "floordiv" else scalar_ops.int_mod(ctx, x, safe)
    return b.select(zero, i64(0), r)


@rule("fmod", kinds="iu")
def int_fmod(ctx, op, args, k, dtype):
    """np.fmod on integers: C's remainder, the sign of the dividend; 0 where the divisor is 0 (a RuntimeWarning
    in NumPy) or -1 (where srem of the smallest int would overflow, the remainder is 0)."""
    b, (x, y) = ctx.b, args
    zero = b.or_(b.icmp_signed("==", y, i64(0)), b.icmp_signed("==", y, i64(-1)) if k == "i" else ir.Constant(I1, 0))
    safe = b.select(zero, i64(1), y)
    return b.select(zero, i64(0), (b.srem if k == "i" else b.urem)(x, safe))


@rule("pow", kinds="iu")
def int_pow(ctx, op, args, k, dtype):
    b, (x, y) = ctx.b, args
    if k == "i":
        ctx.raise_if(b.icmp_signed("<", y, i64(0)), ValueError, "Integers to negative integer powers are not allowed.")
    return b.call(ctx.mod.helper("ipow"), [x, y])


@rule("__lshift__", "__rshift__", kinds="iu")
def int_shift(ctx, op, args, k, dtype):
    """A shift by 64 bits or more: 0, or the sign for an arithmetic right shift (NumPy's npy_lshift)."""
    b, (x, y) = ctx.b, args
    big = b.icmp_unsigned(">=", y, i64(64))
    if op == "__lshift__":
        return b.select(big, i64(0), b.shl(x, b.select(big, i64(0), y)))
    return b.select(big, b.ashr(x, i64(63)), b.ashr(x, b.select(big, i64(0), y)))


@rule("neg", kinds="iu")
def int_neg(ctx, op, args, k, dtype):
    return ctx.b.neg(args[0])


@rule("abs", kinds="iu")
def int_abs(ctx, op, args, k, dtype):
    x = args[0]
    return ctx.b.select(ctx.b.icmp_signed("<", x, i64(0)), ctx.b.neg(x), x)


@rule("bitwise_not", kinds="iu")
def int_not(ctx, op, args, k, dtype):
    return ctx.b.xor(args[0], i64(-1))


@rule("maximum", "minimum", kinds="iu")
def int_extremum(ctx, op, args, k, dtype):
    x, y = args
    return ctx.b.select(ctx.b.icmp_signed(">" if op == "maximum" else "<", x, y), x, y)


@rule("clip", kinds="iu")
def int_clip(ctx, op, args, k, dtype):
    b, (x, lo, hi) = ctx.b, args
    x = b.select(b.icmp_signed(">", x, lo), x, lo)
    return b.select(b.icmp_signed("<", x, hi), x, hi)


# -- floats ---------------------------------------------------------------------------------------------------

_FLOAT_OPS = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}


@rule(*_FLOAT_OPS, kinds="f")
def float_arith(ctx, op, args, k, dtype):
    return getattr(ctx.b, _FLOAT_OPS[op])(*args)


@rule("floordiv", "remainder", kinds="f")
def float_divmod(ctx, op, args, k, dtype):
    """CPython's float divmod (NumPy's npy_divmod) in float64; float32 and float16 loops round every step."""
    if dtype != "float64":
        return divmod_float32(ctx, op, *args)
    b, (x, y) = ctx.b, args
    zero = b.fcmp_ordered("==", y, f64(0.0))
    if op == "floordiv":
        return b.select(zero, b.fdiv(x, y), scalar_ops.float_floordiv(ctx, x, y))
    return b.select(zero, scalar_ops.fmod(ctx, x, y), scalar_ops.float_mod(ctx, x, y))


def divmod_float32(ctx, op, x, y):
    """npy_divmodf: CPython's float divmod with every step rounded to float32, as NumPy's float32 (and
    float16, which computes in float32) loops compute floor division and remainder."""
    b = ctx.b
    r = lambda v: conversions.round_float(ctx, v, "float32")  # noqa: E731 - float32 arithmetic from double steps
    zero, one = f64(0.0), f64(1.0)
    mod = scalar_ops.fmod(ctx, x, y)
    nonzero = b.fcmp_unordered("!=", mod, zero)
    flip = b.and_(nonzero, b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)))
    if op == "remainder":
        fixed = b.select(flip, r(b.fadd(mod, y)), b.select(nonzero, mod, scalar_ops.copysign(ctx, zero, y)))
        return b.select(b.fcmp_ordered("==", y, zero), mod, fixed)
    div = r(b.fdiv(r(b.fsub(x, mod)), y))
    div = b.select(flip, r(b.fsub(div, one)), div)
    floor = b.call(ctx.mod.intrinsic("floor"), [div])
    floor = b.select(b.fcmp_ordered(">", r(b.fsub(div, floor)), f64(0.5)), r(b.fadd(floor, one)), floor)
    quotient = b.select(b.fcmp_unordered("!=", div, zero), floor, scalar_ops.copysign(ctx, zero, r(b.fdiv(x, y))))
    return b.select(b.fcmp_ordered("==", y, zero), b.fdiv(x, y), quotient)


@rule("pow_scalar", kinds="f")
def scalar_power(ctx, op, args, k, dtype):
    """``array ** y`` on one element, y a Python scalar: NumPy's fast powers (FAST_POWERS), else pow; a constant
    y decides here, for a variable one each candidate is computed and selected by y's value."""
    b, (x, y) = ctx.b, args
    fast = {
        0.5: lambda: b.call(ctx.mod.intrinsic("sqrt"), [x]),
        -1.0: lambda: b.fdiv(f64(1.0), x),
        2.0: lambda: b.fmul(x, x),
        1.0: lambda: x,
    }
    c = constant_number(y)
    if c is not None:
        return fast[c]() if c in fast else b.call(ctx.mod.libm("pow", 2), [x, y])
    result = b.call(ctx.mod.libm("pow", 2), [x, y])
    for value in FAST_POWERS:
        result = b.select(b.fcmp_ordered("==", y, f64(value)), fast[value](), result)
    return result


@rule("pow", "float_power", kinds="f")
def float_pow(ctx, op, args, k, dtype):
    return ctx.b.call(ctx.mod.libm("pow", 2), args)


@rule(*(c.name for c in C_MATH.values() if c.nargs == 2 and c.name != "pow"), kinds="f")
def math_2(ctx, op, args, k, dtype):
    return ctx.b.call(ctx.mod.libm(op, 2), args)


@rule(*(c.name for c in C_MATH.values() if c.nargs == 1), kinds="f")
def math_1(ctx, op, args, k, dtype):
    """A C math function; float32 in single precision where the target computes it so (the GPU)."""
    if dtype == "float32" and ctx.mod.target.single_precision_math:
        single = ctx.mod.libm(op + "f", fnty=ir.FunctionType(F32, [F32]))
        return ctx.b.fpext(ctx.b.call(single, [ctx.b.fptrunc(args[0], F32)]), F64)
    return ctx.b.call(ctx.mod.libm(op), args)


@rule(*INTRINSIC, kinds="f")
def float_intrinsic(ctx, op, args, k, dtype):
    return ctx.b.call(ctx.mod.intrinsic(op), args)


@rule("abs", kinds="f")
def float_abs(ctx, op, args, k, dtype):
    return ctx.b.call(ctx.mod.intrinsic("fabs"), args)


@rule("copysign", kinds="f")
def float_copysign(ctx, op, args, k, dtype):
    return ctx.b.call(ctx.mod.intrinsic("copysign"), args)


@rule("neg", kinds="f")
def float_neg(ctx, op, args, k, dtype):
    return ctx.b.fneg(args[0])


@rule("maximum", "minimum", kinds="f")
def nan_extremum(ctx, op, args, k, dtype):
    """NumPy's maximum/minimum: NaN propagates; of equal values (0.0 and -0.0) the second is kept, the first by
    float16's loop."""
    return nan_max(ctx, op, *args, first_on_tie=dtype == "float16")


def nan_max(ctx, op, x, y, first_on_tie: bool = False):
    b = ctx.b
    keep = b.fcmp_ordered((">" if op == "maximum" else "<") + ("=" if first_on_tie else ""), x, y)
    return b.select(b.or_(keep, scalar_ops.isnan(ctx, x)), x, y)


@rule("clip", kinds="f")
def float_clip(ctx, op, args, k, dtype):
    """NumPy keeps x when it equals a bound (-0.0 stays), and a NaN anywhere wins."""
    b, (x, lo, hi) = ctx.b, args
    x = b.select(b.or_(b.fcmp_ordered("<", x, lo), scalar_ops.isnan(ctx, lo)), lo, x)
    return b.select(b.or_(b.fcmp_ordered(">", x, hi), scalar_ops.isnan(ctx, hi)), hi, x)


@rule("clip_arrays", kinds="f")
def float_clip_arrays(ctx, op, args, k, dtype):
    """_NPY_CLIP: min(max(x, lo), hi), each keeping its first operand if NaN or strictly beyond, else the bound (a
    tie gives the bound's -0.0 or 0.0)."""
    b, (x, lo, hi) = ctx.b, args
    x = b.select(b.or_(scalar_ops.isnan(ctx, x), b.fcmp_ordered(">", x, lo)), x, lo)
    return b.select(b.or_(scalar_ops.isnan(ctx, x), b.fcmp_ordered("<", x, hi)), x, hi)
