"""Lowering of operators on Python scalars (int, float, bool): CPython's semantics exactly (see lower.py)."""

from __future__ import annotations

import math

from llvmlite import ir

from ....ir.types import BOOL, FLOAT, INT, NumpyScalarType, Type, decayed
from ....ops.arith import COMPLEX_POWER
from .common import ARITH, BITWISE, COMPARE, F64, I32, I64, MATH1, TWO63, f64, i1, i32, i64
from .rules import lowers
from . import array_math, conversions
from .array_value import scalar_kind


def constant_exponent(v) -> float | None:
    """The value of a constant int/float exponent (its tests are then decided at compile time)."""
    if v.node is not None and v.node.kind == "prim::Constant" and v.type in (INT, FLOAT):
        return float(v.node.attrs["value"])
    return None


# -- one function per scalar operator family (each takes ``ctx``, a FunctionLowering) ----------------------


def int_floordiv(ctx, a, b):
    """Python's a // b on i64 (b != 0); INT64_MIN // -1 wraps to INT64_MIN without trapping."""
    B = ctx.b
    minus1 = B.icmp_signed("==", b, i64(-1))
    safe = B.select(minus1, i64(1), b)
    q, r = B.sdiv(a, safe), B.srem(a, safe)
    fix = B.and_(B.icmp_signed("!=", r, i64(0)), B.icmp_signed("<", B.xor(r, b), i64(0)))
    q = B.sub(q, B.zext(fix, I64))
    return B.select(minus1, B.sub(i64(0), a), q)


def int_mod(ctx, a, b):
    B = ctx.b
    safe = B.select(B.icmp_signed("==", b, i64(-1)), i64(1), b)
    r = B.srem(a, safe)
    fix = B.and_(B.icmp_signed("!=", r, i64(0)), B.icmp_signed("<", B.xor(r, b), i64(0)))
    return B.select(fix, B.add(r, b), r)


def float_mod(ctx, vx, wx):
    """float_rem (Objects/floatobject.c), wx != 0."""
    B = ctx.b
    mod = fmod(ctx, vx, wx)
    nonzero = B.fcmp_unordered("!=", mod, f64(0.0))  # C truthiness: NaN is true
    flip = B.xor(B.fcmp_ordered("<", wx, f64(0.0)), B.fcmp_ordered("<", mod, f64(0.0)))
    adjusted = B.select(flip, B.fadd(mod, wx), mod)
    return B.select(nonzero, adjusted, copysign(ctx, f64(0.0), wx))


def float_floordiv(ctx, vx, wx):
    """_float_div_mod (Objects/floatobject.c), wx != 0: the floor quotient."""
    B = ctx.b
    mod = fmod(ctx, vx, wx)
    div = B.fdiv(B.fsub(vx, mod), wx)
    nonzero = B.fcmp_unordered("!=", mod, f64(0.0))
    flip = B.xor(B.fcmp_ordered("<", wx, f64(0.0)), B.fcmp_ordered("<", mod, f64(0.0)))
    div = B.select(B.and_(nonzero, flip), B.fsub(div, f64(1.0)), div)
    fl = floor(ctx, div)
    fl = B.select(B.fcmp_ordered(">", B.fsub(div, fl), f64(0.5)), B.fadd(fl, f64(1.0)), fl)
    zero = copysign(ctx, f64(0.0), B.fdiv(vx, wx))
    return B.select(B.fcmp_unordered("!=", div, f64(0.0)), fl, zero)


def float_pow(ctx, x, y, y_const: float | None = None):
    """float_pow (Objects/floatobject.c), every special case in order, then libm pow. With a constant
    exponent (``y_const``) the tests on y are decided here; ``x ** 2``, ``x ** 3``, ``x ** -1`` and
    ``x ** 0.5`` are computed with multiplications, a division or a square root where ``pow_is`` proves
    that libm's pow returns the same double, and take the whole path elsewhere."""
    fast = EXACT_POWERS.get(y_const)
    if fast is None:
        return float_pow_cases(ctx, x, y, y_const)
    B = ctx.b
    candidate, certain = fast(ctx, x)
    before = B.block
    with B.if_then(B.not_(certain), likely=False):
        slow = float_pow_cases(ctx, x, y, y_const)
        slow_block = B.block
    result = B.phi(F64)
    result.add_incoming(candidate, before)
    result.add_incoming(slow, slow_block)
    return result


def float_pow_cases(ctx, x, y, y_const: float | None):
    B = ctx.b
    zero, one = f64(0.0), f64(1.0)
    x_nan, x_inf = isnan(ctx, x), isinf(ctx, x)
    x_zero = B.fcmp_ordered("==", x, zero)
    x_neg = B.fcmp_ordered("<", x, zero)
    ax = fabs(ctx, x)
    if y_const is None:
        y_zero = B.fcmp_ordered("==", y, zero)
        y_nan, y_inf = isnan(ctx, y), isinf(ctx, y)
        y_odd = is_odd_integer(ctx, y)
        y_pos = B.fcmp_ordered(">", y, zero)
        y_neg = B.fcmp_ordered("<", y, zero)
        fractional = B.fcmp_ordered("!=", y, floor(ctx, y))
    else:
        finite = math.isfinite(y_const)
        y_zero, y_nan, y_inf = i1(y_const == 0.0), i1(math.isnan(y_const)), i1(math.isinf(y_const))
        y_odd = i1(finite and math.fmod(abs(y_const), 2.0) == 1.0)
        y_pos, y_neg = i1(y_const > 0.0), i1(y_const < 0.0)
        fractional = i1(finite and y_const != math.floor(y_const))
    # the cases, as nested selects from the last to the first
    general = B.not_(B.or_(B.or_(B.or_(y_zero, x_nan), B.or_(y_nan, y_inf)), B.or_(x_inf, x_zero)))
    ctx.raise_if(
        B.and_(B.and_(B.not_(B.or_(B.or_(B.or_(y_zero, x_nan), B.or_(y_nan, y_inf)), x_inf)), x_zero), y_neg),
        ZeroDivisionError,
        "0.0 cannot be raised to a negative power",
    )
    p = B.call(ctx.mod.libm("pow", 2), [ax, y])
    # CPython computes the complex power (complex_pow: OverflowError when its modulus overflows), and
    # scriptc's ** raises for a complex result
    complex_result = B.and_(general, B.and_(x_neg, fractional))
    ctx.raise_if(B.and_(complex_result, isinf(ctx, p)), OverflowError, "complex exponentiation")
    ctx.raise_if(complex_result, ValueError, COMPLEX_POWER)
    negate = B.and_(x_neg, y_odd)
    p = B.select(B.fcmp_ordered("==", ax, one), one, p)
    p = B.select(negate, B.fneg(p), p)
    ctx.raise_if(B.and_(general, isinf(ctx, p)), OverflowError, 34, "Numerical result out of range")
    r = p
    # x == 0.0: odd ? x : 0.0
    r = B.select(x_zero, B.select(y_odd, x, zero), r)
    # x infinite
    r = B.select(x_inf, B.select(y_pos, B.select(y_odd, x, ax), B.select(y_odd, copysign(ctx, zero, x), zero)), r)
    # y infinite
    y_inf_r = B.select(
        B.fcmp_ordered("==", ax, one),
        one,
        B.select(B.icmp_unsigned("==", y_pos, B.fcmp_ordered(">", ax, one)), fabs(ctx, y), zero),
    )
    r = B.select(y_inf, y_inf_r, r)
    r = B.select(y_nan, B.select(B.fcmp_ordered("==", x, one), one, y), r)
    r = B.select(x_nan, x, r)
    r = B.select(y_zero, one, r)
    return r


def pow_is(ctx, c, residual, tight, scale=None):
    """Whether pow returns ``c``, given the residual ``e - c`` (``residual / scale`` if a scale is given) and
    whether |y log x| <= 64 (see above)."""
    B = ctx.b
    margin = B.select(tight, f64(0.48), f64(0.45))
    if scale is not None:
        margin = B.fmul(margin, scale)
    bits = B.bitcast(c, I64)
    exponent = B.and_(bits, i64(0x7FF0000000000000))
    ulp = B.bitcast(B.sub(exponent, i64(52 << 52)), F64)
    return B.and_(
        B.and_(B.icmp_unsigned(">=", exponent, i64(53 << 52)), B.icmp_unsigned("<", exponent, i64(0x7FF0000000000000))),
        B.and_(
            B.icmp_unsigned("!=", B.and_(bits, i64((1 << 52) - 1)), i64(0)),
            B.fcmp_ordered("<=", fabs(ctx, residual), B.fmul(ulp, margin)),
        ),
    )


def exponent_within(ctx, x, low: int, high: int):
    """Whether |x| is finite, nonzero and 2**low <= |x| < 2**high: no residual below underflows."""
    B = ctx.b
    biased = B.and_(B.bitcast(x, I64), i64(0x7FF0000000000000))
    return B.and_(
        B.icmp_unsigned(">=", biased, i64((1023 + low) << 52)), B.icmp_unsigned("<", biased, i64((1023 + high) << 52))
    )


def fma(ctx, a, b, c):
    return ctx.b.call(ctx.mod.intrinsic("fma"), [a, b, c])


def square_is_pow(ctx, x):
    """``(x * x, certain)``: ``fma(x, x, -p)`` is the square's exact error (no underflow: p >= 2**-969,
    which ``pow_is``'s test of p's exponent implies)."""
    p = ctx.b.fmul(x, x)
    return p, pow_is(ctx, p, fma(ctx, x, x, ctx.b.fneg(p)), exponent_within(ctx, x, -46, 46))


def cube_is_pow(ctx, x):
    """``(x ** 3 correctly rounded, certain)``: x * x = p + e1 and p * x = c + e2 exactly (fma), so
    x ** 3 = c + e2 + e1 * x; the rounding of e1 * x and of the residual's sum is 2**-53 of the residual,
    far inside the test's margin. |x| in [2**-300, 2**300): nothing underflows or overflows."""
    B = ctx.b
    p = B.fmul(x, x)
    e1 = fma(ctx, x, x, B.fneg(p))
    c = B.fmul(p, x)
    residual = B.fadd(fma(ctx, p, x, B.fneg(c)), B.fmul(e1, x))
    rounded = B.fadd(c, residual)  # c or a neighbour of c: rounded - c is exact
    residual = B.fsub(residual, B.fsub(rounded, c))
    return rounded, B.and_(
        exponent_within(ctx, x, -300, 300), pow_is(ctx, rounded, residual, exponent_within(ctx, x, -30, 30))
    )


def reciprocal_is_pow(ctx, x):
    """``(1 / x, certain)``: 1 - q * x is exact (fma), and e - q = (1 - q * x) / x, which (1 - q * x) * q
    gives to 2**-52 of itself. |x| in [2**-1000, 2**1000): q is normal."""
    B = ctx.b
    q = B.fdiv(f64(1.0), x)
    residual = B.fmul(fma(ctx, B.fneg(q), x, f64(1.0)), q)
    return q, B.and_(exponent_within(ctx, x, -1000, 1000), pow_is(ctx, q, residual, exponent_within(ctx, x, -92, 92)))


def sqrt_is_pow(ctx, x):
    """``(sqrt(x), certain)`` for x > 0 (CPython raises for x < 0, and pow(-0.0, 0.5) is 0.0): x - s * s is
    exact (fma), and e - s = (x - s * s) / (e + s), which (x - s * s) / (2 s) gives to 2**-52 of itself:
    ``pow_is`` compares x - s * s with its bound times 2 s (no division). x in [2**-900, 2**1024)."""
    B = ctx.b
    s = B.call(ctx.mod.intrinsic("sqrt"), [x])
    positive = B.fcmp_ordered(">", x, f64(0.0))
    return s, B.and_(
        B.and_(positive, exponent_within(ctx, x, -900, 1024)),
        pow_is(ctx, s, fma(ctx, B.fneg(s), s, x), exponent_within(ctx, x, -184, 184), scale=B.fadd(s, s)),
    )


def compare_int_float(ctx, pred: str, a, f):
    """``a <pred> f`` for an i64 and a double, exactly (float_richcompare): no rounding of ``a``."""
    B = ctx.b
    in_range = B.and_(B.fcmp_ordered(">=", f, f64(-TWO63)), B.fcmp_ordered("<", f, f64(TWO63)))
    fs = B.select(in_range, f, f64(0.0))
    ft = B.call(ctx.mod.intrinsic("trunc"), [fs])
    t = B.fptosi(ft, I64)
    frac = B.fsub(fs, ft)
    same = B.icmp_signed("==", a, t)
    lt = B.or_(B.icmp_signed("<", a, t), B.and_(same, B.fcmp_ordered(">", frac, f64(0.0))))
    gt = B.or_(B.icmp_signed(">", a, t), B.and_(same, B.fcmp_ordered("<", frac, f64(0.0))))
    eq = B.and_(same, B.fcmp_ordered("==", frac, f64(0.0)))
    lt = B.select(in_range, lt, B.fcmp_ordered(">=", f, f64(TWO63)))
    gt = B.select(in_range, gt, B.fcmp_ordered("<", f, f64(-TWO63)))
    eq = B.select(in_range, eq, i1(False))
    return {
        "<": lambda: lt,
        ">": lambda: gt,
        "==": lambda: eq,
        "!=": lambda: B.not_(eq),
        "<=": lambda: B.or_(lt, eq),
        ">=": lambda: B.or_(gt, eq),
    }[pred]()


def _range_steps(ctx, node):
    """(nonempty, steps, lo, step) of range(lo, hi, step): ``steps`` = (span - 1) // |step| with the span
    |hi - lo| < 2**64 and |step| as unsigned (the number of steps from the first element to the last);
    ValueError for a zero step."""
    B = ctx.b
    lo, hi, step = [to_i64(ctx, ctx.scalar(v), v.type) for v in node.inputs]
    ctx.raise_if(B.icmp_signed("==", step, i64(0)), ValueError, "range() arg 3 must not be zero")
    pos = B.icmp_signed(">", step, i64(0))
    nonempty = B.select(pos, B.icmp_signed("<", lo, hi), B.icmp_signed(">", lo, hi))
    span = B.select(pos, B.sub(hi, lo), B.sub(lo, hi))  # unsigned, > 0 when nonempty
    mag = B.select(pos, step, B.sub(i64(0), step))  # unsigned |step|
    safe_mag = B.select(nonempty, mag, i64(1))
    return nonempty, B.udiv(B.sub(span, i64(1)), safe_mag), lo, step


# -- math ------------------------------------------------------------------------------------------------
def math_1(ctx, x, r, can_overflow: bool):
    """Modules/mathmodule.c math_1: NaN from non-NaN is a domain error; inf from finite a range error
    (can_overflow) or a domain error."""
    B = ctx.b
    ctx.raise_if(B.and_(isnan(ctx, r), B.not_(isnan(ctx, x))), ValueError, "math domain error")
    overflow = B.and_(isinf(ctx, r), isfinite(ctx, x))
    if can_overflow:
        ctx.raise_if(overflow, OverflowError, "math range error")
    else:
        ctx.raise_if(overflow, ValueError, "math domain error")
    return r


# float_pow's constant exponents with an exact shortcut: each returns (candidate, exact?)
EXACT_POWERS = {2.0: square_is_pow, 3.0: cube_is_pow, -1.0: reciprocal_is_pow, 0.5: sqrt_is_pow}


# -- lowering rules ----------------------------------------------------------------------------------------------------


# -- arithmetic --------------------------------------------------------------------------------------
@lowers(*(f"aten::{n}" for n in ARITH))
def lower_arith(ctx, node):
    op = node.kind.split("::")[1]
    (a, b), (ta, tb) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    out = node.output.type
    B = ctx.b
    if op in ("add", "sub", "mul"):
        if out == FLOAT:
            fa, fb = to_f64(ctx, a, ta), to_f64(ctx, b, tb)
            return [[{"add": B.fadd, "sub": B.fsub, "mul": B.fmul}[op](fa, fb)]]
        ia, ib = to_i64(ctx, a, ta), to_i64(ctx, b, tb)
        return [[{"add": B.add, "sub": B.sub, "mul": B.mul}[op](ia, ib)]]
    if op == "div":
        if node.attrs.get("ieee"):  # a derivative rule's: no ZeroDivisionError (see ops/arith._truediv)
            return [[B.fdiv(to_f64(ctx, a, ta), to_f64(ctx, b, tb))]]
        if ta != FLOAT and tb != FLOAT:
            ia, ib = to_i64(ctx, a, ta), to_i64(ctx, b, tb)
            ctx.raise_if(B.icmp_signed("==", ib, i64(0)), ZeroDivisionError, "division by zero")
            return [[B.call(ctx.mod.helper("int_truediv"), [ia, ib])]]
        fa, fb = to_f64(ctx, a, ta), to_f64(ctx, b, tb)
        ctx.raise_if(B.fcmp_ordered("==", fb, f64(0.0)), ZeroDivisionError, "float division by zero")
        return [[B.fdiv(fa, fb)]]
    if op in ("floordiv", "remainder"):
        if out == INT:
            ia, ib = to_i64(ctx, a, ta), to_i64(ctx, b, tb)
            msg = "integer division or modulo by zero" if op == "floordiv" else "integer modulo by zero"
            ctx.raise_if(B.icmp_signed("==", ib, i64(0)), ZeroDivisionError, msg)
            return [[int_floordiv(ctx, ia, ib) if op == "floordiv" else int_mod(ctx, ia, ib)]]
        fa, fb = to_f64(ctx, a, ta), to_f64(ctx, b, tb)
        msg = "float floor division by zero" if op == "floordiv" else "float modulo"
        ctx.raise_if(B.fcmp_ordered("==", fb, f64(0.0)), ZeroDivisionError, msg)
        return [[float_floordiv(ctx, fa, fb) if op == "floordiv" else float_mod(ctx, fa, fb)]]
    if op == "pow":
        if out == FLOAT:
            return [[float_pow(ctx, to_f64(ctx, a, ta), to_f64(ctx, b, tb), constant_exponent(node.inputs[1]))]]
        ia, ib = to_i64(ctx, a, ta), to_i64(ctx, b, tb)
        negative = B.icmp_signed("<", ib, i64(0))
        if ta == INT and tb == INT:
            ctx.raise_if(negative, ValueError, "integers to negative integer powers are not allowed")
        elif ta == BOOL and tb == INT:
            # True ** -n is the float 1.0 (an int once stored), False ** -n divides by zero
            ctx.raise_if(B.and_(negative, B.not_(a)), ZeroDivisionError, "0.0 cannot be raised to a negative power")
            ib = B.select(negative, i64(0), ib)
        return [[B.call(ctx.mod.helper("ipow"), [ia, ib])]]
    raise AssertionError(op)


@lowers("aten::float_power")
def lower_math_pow(ctx, node):
    """math.pow (Modules/mathmodule.c math_pow_impl): IEEE specials by hand, libm pow for finite**finite;
    NaN from finite arguments or 0.0**negative is a domain error, other infinities a range error."""
    B = ctx.b
    x, y = [to_f64(ctx, ctx.scalar(v), v.type) for v in node.inputs]
    zero, one = f64(0.0), f64(1.0)
    finite = B.and_(isfinite(ctx, x), isfinite(ctx, y))
    p = B.call(ctx.mod.libm("pow", 2), [x, y])
    p_nan, p_inf = isnan(ctx, p), isinf(ctx, p)
    x_zero = B.fcmp_ordered("==", x, zero)
    ctx.raise_if(B.and_(finite, B.or_(p_nan, B.and_(p_inf, x_zero))), ValueError, "math domain error")
    ctx.raise_if(B.and_(finite, B.and_(p_inf, B.not_(x_zero))), OverflowError, "math range error")
    ax = fabs(ctx, x)
    y_pos, y_neg = B.fcmp_ordered(">", y, zero), B.fcmp_ordered("<", y, zero)
    # y infinite (x finite or not, x not NaN)
    r_yinf = B.select(
        B.fcmp_ordered("==", ax, one),
        one,
        B.select(
            B.and_(y_pos, B.fcmp_ordered(">", ax, one)),
            y,
            B.select(B.and_(y_neg, B.fcmp_ordered("<", ax, one)), B.fneg(y), zero),
        ),
    )
    # x infinite
    odd_y = B.and_(isfinite(ctx, y), is_odd_integer(ctx, y))
    r_xinf = B.select(
        y_pos,
        B.select(odd_y, x, ax),
        B.select(B.fcmp_ordered("==", y, zero), one, B.select(odd_y, copysign(ctx, zero, x), zero)),
    )
    r = B.select(isinf(ctx, y), r_yinf, p)
    r = B.select(isinf(ctx, x), r_xinf, r)
    r = B.select(isnan(ctx, y), B.select(B.fcmp_ordered("==", x, one), one, y), r)
    r = B.select(isnan(ctx, x), B.select(B.fcmp_ordered("==", y, zero), one, x), r)
    return [[r]]


@lowers("aten::neg")
def lower_neg(ctx, node):
    (a,), (ta,) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    if node.output.type == FLOAT:
        return [[ctx.b.fneg(to_f64(ctx, a, ta))]]
    return [[ctx.b.sub(i64(0), to_i64(ctx, a, ta))]]


@lowers("aten::bitwise_not")
def lower_bitwise_not(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if node.output.type == BOOL:
        return [[ctx.b.not_(a)]]
    return [[ctx.b.xor(to_i64(ctx, a, ta), i64(-1))]]


@lowers("aten::__not__")
def lower_not(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if ta == BOOL:
        return [[ctx.b.not_(a)]]
    if ta == INT:
        return [[ctx.b.icmp_signed("==", a, i64(0))]]
    return [[ctx.b.fcmp_ordered("==", a, f64(0.0))]]


@lowers(*(f"aten::{n}" for n in BITWISE))
def lower_bitwise(ctx, node):
    op = node.kind.split("::")[1]
    (a, b), (ta, tb) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    fn = {"__and__": ctx.b.and_, "__or__": ctx.b.or_, "__xor__": ctx.b.xor}[op]
    if node.output.type == BOOL:
        return [[fn(a, b)]]
    return [[fn(to_i64(ctx, a, ta), to_i64(ctx, b, tb))]]


@lowers("aten::__lshift__", "aten::__rshift__")
def lower_shift(ctx, node):
    B = ctx.b
    (a, b), (ta, tb) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    a, b = to_i64(ctx, a, ta), to_i64(ctx, b, tb)
    ctx.raise_if(B.icmp_signed("<", b, i64(0)), ValueError, "negative shift count")
    big = B.icmp_signed(">=", b, i64(64))
    if node.kind == "aten::__lshift__":
        return [[B.select(big, i64(0), B.shl(a, B.select(big, i64(0), b)))]]
    return [[B.ashr(a, B.select(big, i64(63), b))]]


@lowers(*(f"aten::{n}" for n in COMPARE))
def lower_compare(ctx, node):
    op = node.kind.split("::")[1]
    (a, b), (ta, tb) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    ipred, fpred = COMPARE[op]
    B = ctx.b
    if FLOAT not in (ta, tb):
        return [[B.icmp_signed(ipred, to_i64(ctx, a, ta), to_i64(ctx, b, tb))]]
    if ta == INT and tb == FLOAT:
        return [[compare_int_float(ctx, ipred, a, b)]]
    if ta == FLOAT and tb == INT:
        swapped = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[ipred]
        return [[compare_int_float(ctx, swapped, b, a)]]
    fa, fb = to_f64(ctx, a, ta), to_f64(ctx, b, tb)  # bools convert exactly
    if fpred == "une":
        return [[B.fcmp_unordered("!=", fa, fb)]]
    return [[B.fcmp_ordered(ipred, fa, fb)]]


# -- conversions -------------------------------------------------------------------------------------
@lowers("aten::Int")
def lower_int(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if decayed(ta) != FLOAT:
        return [[to_i64(ctx, a, ta)]]
    B = ctx.b
    # one test on the common path (false for NaN too); the slow path tells the errors apart
    in_range = B.and_(B.fcmp_ordered(">=", a, f64(-TWO63)), B.fcmp_ordered("<", a, f64(TWO63)))
    with B.if_then(B.not_(in_range), likely=False):
        check_float_to_int(ctx, a)
        ctx.raise_if(i1(True), OverflowError, "int too large to convert to a 64-bit int")
    return [[B.fptosi(a, I64)]]


@lowers("aten::Float")
def lower_float(ctx, node):
    return [[to_f64(ctx, ctx.scalar(node.inputs[0]), node.inputs[0].type)]]


@lowers("aten::Bool")
def lower_bool(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if ta == BOOL:
        return [[a]]
    if decayed(ta) == INT:
        return [[ctx.b.icmp_signed("!=", a, i64(0))]]
    return [[ctx.b.fcmp_unordered("!=", a, f64(0.0))]]


@lowers("prim::max", "prim::min", "aten::maximum", "aten::minimum")
def lower_minmax(ctx, node):
    """prim::max(a, b) is Python's max: ``b if b > a else a``; aten::maximum is np.maximum on scalars:
    NaN if either is NaN, else ``a if a > b else b``."""
    B = ctx.b
    (a, b), (ta, tb) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    out = node.output.type
    is_max = node.kind.endswith("max") or node.kind.endswith("maximum")
    if out == FLOAT:
        a, b = to_f64(ctx, a, ta), to_f64(ctx, b, tb)
        gt = (lambda x, y: B.fcmp_ordered(">", x, y)) if is_max else (lambda x, y: B.fcmp_ordered("<", x, y))
    elif out == INT:
        a, b = to_i64(ctx, a, ta), to_i64(ctx, b, tb)
        gt = (lambda x, y: B.icmp_signed(">", x, y)) if is_max else (lambda x, y: B.icmp_signed("<", x, y))
    else:
        gt = (lambda x, y: B.icmp_unsigned(">", x, y)) if is_max else (lambda x, y: B.icmp_unsigned("<", x, y))
    if node.kind.startswith("prim::"):
        return [[B.select(gt(b, a), b, a)]]
    r = B.select(gt(a, b), a, b)
    if out == FLOAT:
        r = B.select(isnan(ctx, a), a, r)
    return [[r]]


@lowers("aten::clip")
def lower_scalar_clip(ctx, node):
    """np.clip of numbers: one element of NumPy's clip loop (its dtype, its NaN and tie rules)."""
    return array_math.zero_d_elementwise(ctx, node, "clip")


# -- ranges --------------------------------------------------------------------------------------------
@lowers("aten::__range_length")
def lower_range_length(ctx, node):
    """The trip count of range(lo, hi, step), as the interpreter computes it: its length, exact without
    i128 (``_range_steps``), and 2**63 - 1 for a longer range (more steps than any loop runs: one that
    returns or breaks is right)."""
    B = ctx.b
    nonempty, steps, _, _ = _range_steps(ctx, node)
    n = B.add(steps, i64(1))
    n = B.select(B.icmp_signed("<", n, i64(0)), i64(2**63 - 1), n)  # (beyond int64 as a signed)
    return [[B.select(nonempty, n, i64(0))]]


@lowers("aten::__range_last")
def lower_range_last(ctx, node):
    """The last element of range(lo, hi, step), lo when it is empty: lo + steps * step modulo 2**64, which
    is the element itself (in int64) whatever the range's length."""
    B = ctx.b
    nonempty, steps, lo, step = _range_steps(ctx, node)
    return [[B.select(nonempty, B.add(lo, B.mul(steps, step)), lo)]]


@lowers("aten::__derive_index")
def lower_derive_index(ctx, node):
    i, start, step = [to_i64(ctx, ctx.scalar(v), v.type) for v in node.inputs]
    return [[ctx.b.add(start, ctx.b.mul(i, step))]]


@lowers(*(f"aten::{n}" for n in MATH1))
def lower_math1(ctx, node):
    name = node.kind.split("::")[1]
    x = to_f64(ctx, ctx.scalar(node.inputs[0]), node.inputs[0].type)
    r = ctx.b.call(ctx.mod.libm(name, 1), [x])
    return [[math_1(ctx, x, r, MATH1[name].overflows)]]


@lowers("aten::sqrt")
def lower_sqrt(ctx, node):
    x = to_f64(ctx, ctx.scalar(node.inputs[0]), node.inputs[0].type)
    r = ctx.b.call(ctx.mod.intrinsic("sqrt"), [x])  # IEEE sqrt: the same bits as libm's
    return [[math_1(ctx, x, r, False)]]


@lowers("aten::fabs")
def lower_fabs(ctx, node):
    return [[fabs(ctx, to_f64(ctx, ctx.scalar(node.inputs[0]), node.inputs[0].type))]]


@lowers("aten::abs")
def lower_abs(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if node.output.type == FLOAT:
        return [[fabs(ctx, to_f64(ctx, a, ta))]]
    a = to_i64(ctx, a, ta)
    return [[ctx.b.select(ctx.b.icmp_signed("<", a, i64(0)), ctx.b.sub(i64(0), a), a)]]


@lowers("aten::floor", "aten::ceil", "aten::trunc", "aten::floor_float", "aten::ceil_float", "aten::trunc_float")
def lower_rounding(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if ta != FLOAT:
        return [[to_i64(ctx, a, ta)]]
    name = node.kind.split("::")[1].removesuffix("_float")
    r = ctx.b.call(ctx.mod.intrinsic(name), [a])
    if node.output.type == FLOAT:
        return [[r]]
    check_float_to_int(ctx, a)
    return [[float_to_int_wrapping(ctx, r)]]


@lowers("aten::atan2")
def lower_atan2(ctx, node):
    """m_atan2 (Modules/mathmodule.c): C99 special cases, then libm atan2."""
    B = ctx.b
    y, x = [to_f64(ctx, ctx.scalar(v), v.type) for v in node.inputs]
    pi = 3.141592653589793
    x_pos_sign = B.fcmp_ordered("==", copysign(ctx, f64(1.0), x), f64(1.0))
    r = B.call(ctx.mod.libm("atan2", 2), [y, x])
    r = B.select(
        B.or_(isinf(ctx, x), B.fcmp_ordered("==", y, f64(0.0))),
        B.select(x_pos_sign, copysign(ctx, f64(0.0), y), copysign(ctx, f64(pi), y)),
        r,
    )
    y_inf_r = B.select(
        isinf(ctx, x),
        B.select(x_pos_sign, copysign(ctx, f64(0.25 * pi), y), copysign(ctx, f64(0.75 * pi), y)),
        copysign(ctx, f64(0.5 * pi), y),
    )
    r = B.select(isinf(ctx, y), y_inf_r, r)
    r = B.select(B.or_(isnan(ctx, x), isnan(ctx, y)), f64(float("nan")), r)
    return [[r]]


@lowers("aten::copysign")
def lower_copysign(ctx, node):
    x, y = [to_f64(ctx, ctx.scalar(v), v.type) for v in node.inputs]
    return [[copysign(ctx, x, y)]]


@lowers("aten::fmod")
def lower_math_fmod(ctx, node):
    """math.fmod: fmod(x, +-inf) is x for finite x; a NaN from non-NaN arguments is a domain error."""
    B = ctx.b
    x, y = [to_f64(ctx, ctx.scalar(v), v.type) for v in node.inputs]
    r = fmod(ctx, x, y)
    ctx.raise_if(B.and_(isnan(ctx, r), B.not_(B.or_(isnan(ctx, x), isnan(ctx, y)))), ValueError, "math domain error")
    return [[B.select(B.and_(isinf(ctx, y), isfinite(ctx, x)), x, r)]]


@lowers("aten::hypot")
def lower_hypot(ctx, node):
    """math.hypot(x, y): CPython 3.11's vector_norm for two coordinates (not libm's hypot, which rounds
    differently): power-of-two scaling, Veltkamp-Dekker squaring, Neumaier summation, one correction step
    of the square root; tiny (subnormal) maxima divide by the maximum instead. Operation order verbatim."""
    B = ctx.b
    a, b = [fabs(ctx, to_f64(ctx, ctx.scalar(v), v.type)) for v in node.inputs]
    zero, one, t27 = f64(0.0), f64(1.0), f64(134217729.0)
    found_nan = B.or_(isnan(ctx, a), isnan(ctx, b))
    mx = B.select(B.fcmp_ordered(">", a, zero), a, zero)
    mx = B.select(B.fcmp_ordered(">", b, mx), b, mx)
    e_ptr = ctx.alloca(I32)
    B.call(ctx.mod.libm("frexp", fnty=ir.FunctionType(F64, [F64, I32.as_pointer()])), [mx, e_ptr])
    max_e = B.load(e_ptr)
    scale = B.call(ctx.mod.libm("ldexp", fnty=ir.FunctionType(F64, [F64, I32])), [one, B.neg(max_e)])

    def split(x):
        t = B.fmul(x, t27)
        hi = B.fsub(t, B.fsub(t, x))
        return hi, B.fsub(x, hi)

    def neumaier(csum, frac, x):
        new = B.fadd(csum, x)
        return new, B.fadd(frac, B.fadd(B.fsub(csum, new), x))

    csum, f1, f2, f3 = one, zero, zero, zero
    for v in (a, b):
        hi, lo = split(B.fmul(v, scale))
        csum, f1 = neumaier(csum, f1, B.fmul(hi, hi))
        csum, f2 = neumaier(csum, f2, B.fmul(B.fmul(f64(2.0), hi), lo))
        f3 = B.fadd(f3, B.fmul(lo, lo))
    sqrt = ctx.mod.intrinsic("sqrt")
    h = B.call(sqrt, [B.fadd(B.fsub(csum, one), B.fadd(B.fadd(f1, f2), f3))])
    hi, lo = split(h)
    csum, f1 = neumaier(csum, f1, B.fmul(B.fneg(hi), hi))
    csum, f2 = neumaier(csum, f2, B.fmul(B.fmul(f64(-2.0), hi), lo))
    csum, f3 = neumaier(csum, f3, B.fmul(B.fneg(lo), lo))
    x = B.fadd(B.fsub(csum, one), B.fadd(B.fadd(f1, f2), f3))
    scaled = B.fdiv(B.fadd(h, B.fdiv(x, B.fmul(f64(2.0), h))), scale)
    # max_e < -1023: divide by the maximum
    csum, f1 = one, zero
    for v in (a, b):
        q = B.fdiv(v, mx)
        csum, f1 = neumaier(csum, f1, B.fmul(q, q))
    tiny = B.fmul(mx, B.call(sqrt, [B.fadd(B.fsub(csum, one), f1)]))
    r = B.select(B.icmp_signed(">=", max_e, i32(-1023)), scaled, tiny)
    r = B.select(B.fcmp_ordered("==", mx, zero), mx, r)
    r = B.select(found_nan, f64(float("nan")), r)
    r = B.select(isinf(ctx, mx), mx, r)
    return [[r]]


# -- conversions -------------------------------------------------------------------------------------
def to_f64(ctx, x, t: Type):
    if isinstance(t, NumpyScalarType):
        return conversions.cast(ctx, x, scalar_kind(t), "f")
    if t == FLOAT:
        return x
    if t == INT:
        return ctx.b.sitofp(x, F64)
    if t == BOOL:
        return ctx.b.uitofp(x, F64)
    raise AssertionError(t)


def to_i64(ctx, x, t: Type):
    if isinstance(t, NumpyScalarType) and t.decayed == INT:
        return x
    if t == INT:
        return x
    if t == BOOL:
        return ctx.b.zext(x, I64)
    raise AssertionError(t)


def isnan(ctx, x):
    return ctx.b.fcmp_unordered("uno", x, x)


def isinf(ctx, x):
    return ctx.b.fcmp_ordered("==", fabs(ctx, x), f64(float("inf")))


def isfinite(ctx, x):
    return ctx.b.fcmp_ordered("<", fabs(ctx, x), f64(float("inf")))


def fabs(ctx, x):
    return ctx.b.call(ctx.mod.intrinsic("fabs"), [x])


def floor(ctx, x):
    return ctx.b.call(ctx.mod.intrinsic("floor"), [x])


def copysign(ctx, x, y):
    return ctx.b.call(ctx.mod.intrinsic("copysign"), [x, y])


def fmod(ctx, x, y):
    return ctx.b.call(ctx.mod.libm("fmod", 2), [x, y])


def is_odd_integer(ctx, y):
    """DOUBLE_IS_ODD_INTEGER: fmod(fabs(y), 2.0) == 1.0"""
    return ctx.b.fcmp_ordered("==", fmod(ctx, fabs(ctx, y), f64(2.0)), f64(1.0))


def float_to_int_wrapping(ctx, x):
    """An integral, finite double as an int, wrapped to 64 bits as the interpreter wraps big ints."""
    b = ctx.b
    in_range = b.fcmp_ordered("<", fabs(ctx, x), f64(TWO63))
    small = b.fptosi(b.select(in_range, x, f64(0.0)), I64)
    bits = b.bitcast(x, I64)
    e = b.sub(b.and_(b.lshr(bits, i64(52)), i64(0x7FF)), i64(1075))  # x = m * 2**e, e >= 11 here
    m = b.or_(b.and_(bits, i64((1 << 52) - 1)), i64(1 << 52))
    e_ok = b.icmp_signed("<", e, i64(64))
    big = b.select(e_ok, b.shl(m, b.select(e_ok, e, i64(0))), i64(0))
    big = b.select(b.icmp_signed("<", bits, i64(0)), b.sub(i64(0), big), big)
    return b.select(in_range, small, big)


def check_float_to_int(ctx, x):
    ctx.raise_if(isnan(ctx, x), ValueError, "cannot convert float NaN to integer")
    ctx.raise_if(isinf(ctx, x), OverflowError, "cannot convert float infinity to integer")
