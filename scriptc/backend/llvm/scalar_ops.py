"""Lowering of operators on Python scalars (int, float, bool): CPython's semantics exactly (see lower.py)."""

from __future__ import annotations

import math

from llvmlite import ir

from ...ir.types import BOOL, FLOAT, INT, decayed
from ...ops.arith import COMPLEX_POWER
from .common import ARITH, BITWISE, COMPARE, F64, I32, I64, MATH1, TWO63, f64, i1, i32, i64
from .rules import lowers


def constant_exponent(v) -> float | None:
    """The value of a constant int/float exponent (its tests are then decided at compile time)."""
    if v.node is not None and v.node.kind == "prim::Constant" and v.type in (INT, FLOAT):
        return float(v.node.attrs["value"])
    return None


class ScalarOps:
    """Mixin of FunctionLowering: one method per scalar operator family."""

    def int_floordiv(self, a, b):
        """Python's a // b on i64 (b != 0); INT64_MIN // -1 wraps to INT64_MIN without trapping."""
        B = self.b
        minus1 = B.icmp_signed("==", b, i64(-1))
        safe = B.select(minus1, i64(1), b)
        q, r = B.sdiv(a, safe), B.srem(a, safe)
        fix = B.and_(B.icmp_signed("!=", r, i64(0)), B.icmp_signed("<", B.xor(r, b), i64(0)))
        q = B.sub(q, B.zext(fix, I64))
        return B.select(minus1, B.sub(i64(0), a), q)

    def int_mod(self, a, b):
        B = self.b
        safe = B.select(B.icmp_signed("==", b, i64(-1)), i64(1), b)
        r = B.srem(a, safe)
        fix = B.and_(B.icmp_signed("!=", r, i64(0)), B.icmp_signed("<", B.xor(r, b), i64(0)))
        return B.select(fix, B.add(r, b), r)

    def float_mod(self, vx, wx):
        """float_rem (Objects/floatobject.c), wx != 0."""
        B = self.b
        mod = self.fmod(vx, wx)
        nonzero = B.fcmp_unordered("!=", mod, f64(0.0))  # C truthiness: NaN is true
        flip = B.xor(B.fcmp_ordered("<", wx, f64(0.0)), B.fcmp_ordered("<", mod, f64(0.0)))
        adjusted = B.select(flip, B.fadd(mod, wx), mod)
        return B.select(nonzero, adjusted, self.copysign(f64(0.0), wx))

    def float_floordiv(self, vx, wx):
        """_float_div_mod (Objects/floatobject.c), wx != 0: the floor quotient."""
        B = self.b
        mod = self.fmod(vx, wx)
        div = B.fdiv(B.fsub(vx, mod), wx)
        nonzero = B.fcmp_unordered("!=", mod, f64(0.0))
        flip = B.xor(B.fcmp_ordered("<", wx, f64(0.0)), B.fcmp_ordered("<", mod, f64(0.0)))
        div = B.select(B.and_(nonzero, flip), B.fsub(div, f64(1.0)), div)
        fl = self.floor(div)
        fl = B.select(B.fcmp_ordered(">", B.fsub(div, fl), f64(0.5)), B.fadd(fl, f64(1.0)), fl)
        zero = self.copysign(f64(0.0), B.fdiv(vx, wx))
        return B.select(B.fcmp_unordered("!=", div, f64(0.0)), fl, zero)

    def float_pow(self, x, y, y_const: float | None = None):
        """float_pow (Objects/floatobject.c), every special case in order, then libm pow. With a constant
        exponent (``y_const``) the tests on y are decided here; ``x ** 2``, ``x ** 3``, ``x ** -1`` and
        ``x ** 0.5`` are computed with multiplications, a division or a square root where ``pow_is`` proves
        that libm's pow returns the same double, and take the whole path elsewhere."""
        fast = self.FAST_POWERS.get(y_const)
        if fast is None:
            return self.float_pow_cases(x, y, y_const)
        B = self.b
        candidate, certain = fast(self, x)
        before = B.block
        with B.if_then(B.not_(certain), likely=False):
            slow = self.float_pow_cases(x, y, y_const)
            slow_block = B.block
        result = B.phi(F64)
        result.add_incoming(candidate, before)
        result.add_incoming(slow, slow_block)
        return result

    def float_pow_cases(self, x, y, y_const: float | None):
        B = self.b
        zero, one = f64(0.0), f64(1.0)
        x_nan, x_inf = self.isnan(x), self.isinf(x)
        x_zero = B.fcmp_ordered("==", x, zero)
        x_neg = B.fcmp_ordered("<", x, zero)
        ax = self.fabs(x)
        if y_const is None:
            y_zero = B.fcmp_ordered("==", y, zero)
            y_nan, y_inf = self.isnan(y), self.isinf(y)
            y_odd = self.is_odd_integer(y)
            y_pos = B.fcmp_ordered(">", y, zero)
            y_neg = B.fcmp_ordered("<", y, zero)
            fractional = B.fcmp_ordered("!=", y, self.floor(y))
        else:
            finite = math.isfinite(y_const)
            y_zero, y_nan, y_inf = i1(y_const == 0.0), i1(math.isnan(y_const)), i1(math.isinf(y_const))
            y_odd = i1(finite and math.fmod(abs(y_const), 2.0) == 1.0)
            y_pos, y_neg = i1(y_const > 0.0), i1(y_const < 0.0)
            fractional = i1(finite and y_const != math.floor(y_const))
        # the cases, as nested selects from the last to the first
        general = B.not_(B.or_(B.or_(B.or_(y_zero, x_nan), B.or_(y_nan, y_inf)), B.or_(x_inf, x_zero)))
        self.raise_if(
            B.and_(B.and_(B.not_(B.or_(B.or_(B.or_(y_zero, x_nan), B.or_(y_nan, y_inf)), x_inf)), x_zero), y_neg),
            ZeroDivisionError,
            "0.0 cannot be raised to a negative power",
        )
        p = B.call(self.mod.libm("pow", 2), [ax, y])
        # CPython computes the complex power (complex_pow: OverflowError when its modulus overflows), and
        # scriptc's ** raises for a complex result
        complex_result = B.and_(general, B.and_(x_neg, fractional))
        self.raise_if(B.and_(complex_result, self.isinf(p)), OverflowError, "complex exponentiation")
        self.raise_if(complex_result, ValueError, COMPLEX_POWER)
        negate = B.and_(x_neg, y_odd)
        p = B.select(B.fcmp_ordered("==", ax, one), one, p)
        p = B.select(negate, B.fneg(p), p)
        self.raise_if(B.and_(general, self.isinf(p)), OverflowError, 34, "Numerical result out of range")
        r = p
        # x == 0.0: odd ? x : 0.0
        r = B.select(x_zero, B.select(y_odd, x, zero), r)
        # x infinite
        r = B.select(x_inf, B.select(y_pos, B.select(y_odd, x, ax), B.select(y_odd, self.copysign(zero, x), zero)), r)
        # y infinite
        y_inf_r = B.select(
            B.fcmp_ordered("==", ax, one),
            one,
            B.select(B.icmp_unsigned("==", y_pos, B.fcmp_ordered(">", ax, one)), self.fabs(y), zero),
        )
        r = B.select(y_inf, y_inf_r, r)
        r = B.select(y_nan, B.select(B.fcmp_ordered("==", x, one), one, y), r)
        r = B.select(x_nan, x, r)
        r = B.select(y_zero, one, r)
        return r

    # -- x ** 2, x ** 3, x ** -1, x ** 0.5 without pow -----------------------------------------------------
    #
    # Each computes the correctly rounded power c and (nearly exactly) the residual e - c, e the exact power.
    # glibc's pow is not correctly rounded (x ** 2.0 != x * x for about 1 random double in 1,300): its error is at
    # most 0.509 ULP (its exp) plus |y log x| * 1.5 * 2**-15 ULP (its log), 0.54 ULP at worst
    # (sysdeps/ieee754/dbl-64/e_pow.c). When |e - c| <= t ULP of c, and c is a normal double that is not a
    # power of two (where the ULP below is half), c is the only double within 1 - t ULP of e: any pow with an
    # error under 1 - t ULP returns c. t is 0.48 where |y log x| <= 64 (pow's error <= 0.514 ULP), else 0.45.
    # Elsewhere (about 1 case in 25 with |y log x| <= 64, and every special value) CPython's path runs, libm's
    # pow included.

    def pow_is(self, c, residual, tight, scale=None):
        """Whether pow returns ``c``, given the residual ``e - c`` (``residual / scale`` if a scale is given) and
        whether |y log x| <= 64 (see above)."""
        B = self.b
        margin = B.select(tight, f64(0.48), f64(0.45))
        if scale is not None:
            margin = B.fmul(margin, scale)
        bits = B.bitcast(c, I64)
        exponent = B.and_(bits, i64(0x7FF0000000000000))
        ulp = B.bitcast(B.sub(exponent, i64(52 << 52)), F64)
        return B.and_(
            B.and_(
                B.icmp_unsigned(">=", exponent, i64(53 << 52)), B.icmp_unsigned("<", exponent, i64(0x7FF0000000000000))
            ),
            B.and_(
                B.icmp_unsigned("!=", B.and_(bits, i64((1 << 52) - 1)), i64(0)),
                B.fcmp_ordered("<=", self.fabs(residual), B.fmul(ulp, margin)),
            ),
        )

    def exponent_within(self, x, low: int, high: int):
        """Whether |x| is finite, nonzero and 2**low <= |x| < 2**high: no residual below underflows."""
        B = self.b
        biased = B.and_(B.bitcast(x, I64), i64(0x7FF0000000000000))
        return B.and_(
            B.icmp_unsigned(">=", biased, i64((1023 + low) << 52)),
            B.icmp_unsigned("<", biased, i64((1023 + high) << 52)),
        )

    def fma(self, a, b, c):
        return self.b.call(self.mod.intrinsic("fma"), [a, b, c])

    def square_is_pow(self, x):
        """``(x * x, certain)``: ``fma(x, x, -p)`` is the square's exact error (no underflow: p >= 2**-969,
        which ``pow_is``'s test of p's exponent implies)."""
        p = self.b.fmul(x, x)
        return p, self.pow_is(p, self.fma(x, x, self.b.fneg(p)), self.exponent_within(x, -46, 46))

    def cube_is_pow(self, x):
        """``(x ** 3 correctly rounded, certain)``: x * x = p + e1 and p * x = c + e2 exactly (fma), so
        x ** 3 = c + e2 + e1 * x; the rounding of e1 * x and of the residual's sum is 2**-53 of the residual,
        far inside the test's margin. |x| in [2**-300, 2**300): nothing underflows or overflows."""
        B = self.b
        p = B.fmul(x, x)
        e1 = self.fma(x, x, B.fneg(p))
        c = B.fmul(p, x)
        residual = B.fadd(self.fma(p, x, B.fneg(c)), B.fmul(e1, x))
        rounded = B.fadd(c, residual)  # c or a neighbour of c: rounded - c is exact
        residual = B.fsub(residual, B.fsub(rounded, c))
        return rounded, B.and_(
            self.exponent_within(x, -300, 300), self.pow_is(rounded, residual, self.exponent_within(x, -30, 30))
        )

    def reciprocal_is_pow(self, x):
        """``(1 / x, certain)``: 1 - q * x is exact (fma), and e - q = (1 - q * x) / x, which (1 - q * x) * q
        gives to 2**-52 of itself. |x| in [2**-1000, 2**1000): q is normal."""
        B = self.b
        q = B.fdiv(f64(1.0), x)
        residual = B.fmul(self.fma(B.fneg(q), x, f64(1.0)), q)
        return q, B.and_(
            self.exponent_within(x, -1000, 1000), self.pow_is(q, residual, self.exponent_within(x, -92, 92))
        )

    def sqrt_is_pow(self, x):
        """``(sqrt(x), certain)`` for x > 0 (CPython raises for x < 0, and pow(-0.0, 0.5) is 0.0): x - s * s is
        exact (fma), and e - s = (x - s * s) / (e + s), which (x - s * s) / (2 s) gives to 2**-52 of itself:
        ``pow_is`` compares x - s * s with its bound times 2 s (no division). x in [2**-900, 2**1024)."""
        B = self.b
        s = B.call(self.mod.intrinsic("sqrt"), [x])
        positive = B.fcmp_ordered(">", x, f64(0.0))
        return s, B.and_(
            B.and_(positive, self.exponent_within(x, -900, 1024)),
            self.pow_is(s, self.fma(B.fneg(s), s, x), self.exponent_within(x, -184, 184), scale=B.fadd(s, s)),
        )

    FAST_POWERS = {2.0: square_is_pow, 3.0: cube_is_pow, -1.0: reciprocal_is_pow, 0.5: sqrt_is_pow}

    def compare_int_float(self, pred: str, a, f):
        """``a <pred> f`` for an i64 and a double, exactly (float_richcompare): no rounding of ``a``."""
        B = self.b
        in_range = B.and_(B.fcmp_ordered(">=", f, f64(-TWO63)), B.fcmp_ordered("<", f, f64(TWO63)))
        fs = B.select(in_range, f, f64(0.0))
        ft = B.call(self.mod.intrinsic("trunc"), [fs])
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

    def _range_steps(self, node):
        """(nonempty, steps, lo, step) of range(lo, hi, step): ``steps`` = (span - 1) // |step| with the span
        |hi - lo| < 2**64 and |step| as unsigned (the number of steps from the first element to the last);
        ValueError for a zero step."""
        B = self.b
        lo, hi, step = [self.to_i64(self.scalar(v), v.type) for v in node.inputs]
        self.raise_if(B.icmp_signed("==", step, i64(0)), ValueError, "range() arg 3 must not be zero")
        pos = B.icmp_signed(">", step, i64(0))
        nonempty = B.select(pos, B.icmp_signed("<", lo, hi), B.icmp_signed(">", lo, hi))
        span = B.select(pos, B.sub(hi, lo), B.sub(lo, hi))  # unsigned, > 0 when nonempty
        mag = B.select(pos, step, B.sub(i64(0), step))  # unsigned |step|
        safe_mag = B.select(nonempty, mag, i64(1))
        return nonempty, B.udiv(B.sub(span, i64(1)), safe_mag), lo, step

    # -- math ------------------------------------------------------------------------------------------------
    def math_1(self, x, r, can_overflow: bool):
        """Modules/mathmodule.c math_1: NaN from non-NaN is a domain error; inf from finite a range error
        (can_overflow) or a domain error."""
        B = self.b
        self.raise_if(B.and_(self.isnan(r), B.not_(self.isnan(x))), ValueError, "math domain error")
        overflow = B.and_(self.isinf(r), self.isfinite(x))
        if can_overflow:
            self.raise_if(overflow, OverflowError, "math range error")
        else:
            self.raise_if(overflow, ValueError, "math domain error")
        return r


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
            fa, fb = ctx.to_f64(a, ta), ctx.to_f64(b, tb)
            return [[{"add": B.fadd, "sub": B.fsub, "mul": B.fmul}[op](fa, fb)]]
        ia, ib = ctx.to_i64(a, ta), ctx.to_i64(b, tb)
        return [[{"add": B.add, "sub": B.sub, "mul": B.mul}[op](ia, ib)]]
    if op == "div":
        if node.attrs.get("ieee"):  # a derivative rule's: no ZeroDivisionError (see ops/arith._truediv)
            return [[B.fdiv(ctx.to_f64(a, ta), ctx.to_f64(b, tb))]]
        if ta != FLOAT and tb != FLOAT:
            ia, ib = ctx.to_i64(a, ta), ctx.to_i64(b, tb)
            ctx.raise_if(B.icmp_signed("==", ib, i64(0)), ZeroDivisionError, "division by zero")
            return [[B.call(ctx.mod.helper("int_truediv"), [ia, ib])]]
        fa, fb = ctx.to_f64(a, ta), ctx.to_f64(b, tb)
        ctx.raise_if(B.fcmp_ordered("==", fb, f64(0.0)), ZeroDivisionError, "float division by zero")
        return [[B.fdiv(fa, fb)]]
    if op in ("floordiv", "remainder"):
        if out == INT:
            ia, ib = ctx.to_i64(a, ta), ctx.to_i64(b, tb)
            msg = "integer division or modulo by zero" if op == "floordiv" else "integer modulo by zero"
            ctx.raise_if(B.icmp_signed("==", ib, i64(0)), ZeroDivisionError, msg)
            return [[ctx.int_floordiv(ia, ib) if op == "floordiv" else ctx.int_mod(ia, ib)]]
        fa, fb = ctx.to_f64(a, ta), ctx.to_f64(b, tb)
        msg = "float floor division by zero" if op == "floordiv" else "float modulo"
        ctx.raise_if(B.fcmp_ordered("==", fb, f64(0.0)), ZeroDivisionError, msg)
        return [[ctx.float_floordiv(fa, fb) if op == "floordiv" else ctx.float_mod(fa, fb)]]
    if op == "pow":
        if out == FLOAT:
            return [[ctx.float_pow(ctx.to_f64(a, ta), ctx.to_f64(b, tb), constant_exponent(node.inputs[1]))]]
        ia, ib = ctx.to_i64(a, ta), ctx.to_i64(b, tb)
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
    x, y = [ctx.to_f64(ctx.scalar(v), v.type) for v in node.inputs]
    zero, one = f64(0.0), f64(1.0)
    finite = B.and_(ctx.isfinite(x), ctx.isfinite(y))
    p = B.call(ctx.mod.libm("pow", 2), [x, y])
    p_nan, p_inf = ctx.isnan(p), ctx.isinf(p)
    x_zero = B.fcmp_ordered("==", x, zero)
    ctx.raise_if(B.and_(finite, B.or_(p_nan, B.and_(p_inf, x_zero))), ValueError, "math domain error")
    ctx.raise_if(B.and_(finite, B.and_(p_inf, B.not_(x_zero))), OverflowError, "math range error")
    ax = ctx.fabs(x)
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
    odd_y = B.and_(ctx.isfinite(y), ctx.is_odd_integer(y))
    r_xinf = B.select(
        y_pos,
        B.select(odd_y, x, ax),
        B.select(B.fcmp_ordered("==", y, zero), one, B.select(odd_y, ctx.copysign(zero, x), zero)),
    )
    r = B.select(ctx.isinf(y), r_yinf, p)
    r = B.select(ctx.isinf(x), r_xinf, r)
    r = B.select(ctx.isnan(y), B.select(B.fcmp_ordered("==", x, one), one, y), r)
    r = B.select(ctx.isnan(x), B.select(B.fcmp_ordered("==", y, zero), one, x), r)
    return [[r]]


@lowers("aten::neg")
def lower_neg(ctx, node):
    (a,), (ta,) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    if node.output.type == FLOAT:
        return [[ctx.b.fneg(ctx.to_f64(a, ta))]]
    return [[ctx.b.sub(i64(0), ctx.to_i64(a, ta))]]


@lowers("aten::bitwise_not")
def lower_bitwise_not(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if node.output.type == BOOL:
        return [[ctx.b.not_(a)]]
    return [[ctx.b.xor(ctx.to_i64(a, ta), i64(-1))]]


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
    return [[fn(ctx.to_i64(a, ta), ctx.to_i64(b, tb))]]


@lowers("aten::__lshift__", "aten::__rshift__")
def lower_shift(ctx, node):
    B = ctx.b
    (a, b), (ta, tb) = [ctx.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
    a, b = ctx.to_i64(a, ta), ctx.to_i64(b, tb)
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
        return [[B.icmp_signed(ipred, ctx.to_i64(a, ta), ctx.to_i64(b, tb))]]
    if ta == INT and tb == FLOAT:
        return [[ctx.compare_int_float(ipred, a, b)]]
    if ta == FLOAT and tb == INT:
        swapped = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[ipred]
        return [[ctx.compare_int_float(swapped, b, a)]]
    fa, fb = ctx.to_f64(a, ta), ctx.to_f64(b, tb)  # bools convert exactly
    if fpred == "une":
        return [[B.fcmp_unordered("!=", fa, fb)]]
    return [[B.fcmp_ordered(ipred, fa, fb)]]


# -- conversions -------------------------------------------------------------------------------------
@lowers("aten::Int")
def lower_int(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if decayed(ta) != FLOAT:
        return [[ctx.to_i64(a, ta)]]
    B = ctx.b
    # one test on the common path (false for NaN too); the slow path tells the errors apart
    in_range = B.and_(B.fcmp_ordered(">=", a, f64(-TWO63)), B.fcmp_ordered("<", a, f64(TWO63)))
    with B.if_then(B.not_(in_range), likely=False):
        ctx.check_float_to_int(a)
        ctx.raise_if(i1(True), OverflowError, "int too large to convert to a 64-bit int")
    return [[B.fptosi(a, I64)]]


@lowers("aten::Float")
def lower_float(ctx, node):
    return [[ctx.to_f64(ctx.scalar(node.inputs[0]), node.inputs[0].type)]]


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
        a, b = ctx.to_f64(a, ta), ctx.to_f64(b, tb)
        gt = (lambda x, y: B.fcmp_ordered(">", x, y)) if is_max else (lambda x, y: B.fcmp_ordered("<", x, y))
    elif out == INT:
        a, b = ctx.to_i64(a, ta), ctx.to_i64(b, tb)
        gt = (lambda x, y: B.icmp_signed(">", x, y)) if is_max else (lambda x, y: B.icmp_signed("<", x, y))
    else:
        gt = (lambda x, y: B.icmp_unsigned(">", x, y)) if is_max else (lambda x, y: B.icmp_unsigned("<", x, y))
    if node.kind.startswith("prim::"):
        return [[B.select(gt(b, a), b, a)]]
    r = B.select(gt(a, b), a, b)
    if out == FLOAT:
        r = B.select(ctx.isnan(a), a, r)
    return [[r]]


@lowers("aten::clip")
def lower_scalar_clip(ctx, node):
    """np.clip of numbers: one element of NumPy's clip loop (its dtype, its NaN and tie rules)."""
    return ctx.zero_d_elementwise(node, "clip")


# -- ranges --------------------------------------------------------------------------------------------
@lowers("aten::__range_length")
def lower_range_length(ctx, node):
    """The trip count of range(lo, hi, step), as the interpreter computes it: its length, exact without
    i128 (``_range_steps``), and 2**63 - 1 for a longer range (more steps than any loop runs: one that
    returns or breaks is right)."""
    B = ctx.b
    nonempty, steps, _, _ = ctx._range_steps(node)
    n = B.add(steps, i64(1))
    n = B.select(B.icmp_signed("<", n, i64(0)), i64(2**63 - 1), n)  # (beyond int64 as a signed)
    return [[B.select(nonempty, n, i64(0))]]


@lowers("aten::__range_last")
def lower_range_last(ctx, node):
    """The last element of range(lo, hi, step), lo when it is empty: lo + steps * step modulo 2**64, which
    is the element itself (in int64) whatever the range's length."""
    B = ctx.b
    nonempty, steps, lo, step = ctx._range_steps(node)
    return [[B.select(nonempty, B.add(lo, B.mul(steps, step)), lo)]]


@lowers("aten::__derive_index")
def lower_derive_index(ctx, node):
    i, start, step = [ctx.to_i64(ctx.scalar(v), v.type) for v in node.inputs]
    return [[ctx.b.add(start, ctx.b.mul(i, step))]]


@lowers(*(f"aten::{n}" for n in MATH1))
def lower_math1(ctx, node):
    name = node.kind.split("::")[1]
    x = ctx.to_f64(ctx.scalar(node.inputs[0]), node.inputs[0].type)
    r = ctx.b.call(ctx.mod.libm(name, 1), [x])
    return [[ctx.math_1(x, r, MATH1[name].overflows)]]


@lowers("aten::sqrt")
def lower_sqrt(ctx, node):
    x = ctx.to_f64(ctx.scalar(node.inputs[0]), node.inputs[0].type)
    r = ctx.b.call(ctx.mod.intrinsic("sqrt"), [x])  # IEEE sqrt: the same bits as libm's
    return [[ctx.math_1(x, r, False)]]


@lowers("aten::fabs")
def lower_fabs(ctx, node):
    return [[ctx.fabs(ctx.to_f64(ctx.scalar(node.inputs[0]), node.inputs[0].type))]]


@lowers("aten::abs")
def lower_abs(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if node.output.type == FLOAT:
        return [[ctx.fabs(ctx.to_f64(a, ta))]]
    a = ctx.to_i64(a, ta)
    return [[ctx.b.select(ctx.b.icmp_signed("<", a, i64(0)), ctx.b.sub(i64(0), a), a)]]


@lowers("aten::floor", "aten::ceil", "aten::trunc", "aten::floor_float", "aten::ceil_float", "aten::trunc_float")
def lower_rounding(ctx, node):
    a, ta = ctx.scalar(node.inputs[0]), node.inputs[0].type
    if ta != FLOAT:
        return [[ctx.to_i64(a, ta)]]
    name = node.kind.split("::")[1].removesuffix("_float")
    r = ctx.b.call(ctx.mod.intrinsic(name), [a])
    if node.output.type == FLOAT:
        return [[r]]
    ctx.check_float_to_int(a)
    return [[ctx.float_to_int_wrapping(r)]]


@lowers("aten::atan2")
def lower_atan2(ctx, node):
    """m_atan2 (Modules/mathmodule.c): C99 special cases, then libm atan2."""
    B = ctx.b
    y, x = [ctx.to_f64(ctx.scalar(v), v.type) for v in node.inputs]
    pi = 3.141592653589793
    x_pos_sign = B.fcmp_ordered("==", ctx.copysign(f64(1.0), x), f64(1.0))
    r = B.call(ctx.mod.libm("atan2", 2), [y, x])
    r = B.select(
        B.or_(ctx.isinf(x), B.fcmp_ordered("==", y, f64(0.0))),
        B.select(x_pos_sign, ctx.copysign(f64(0.0), y), ctx.copysign(f64(pi), y)),
        r,
    )
    y_inf_r = B.select(
        ctx.isinf(x),
        B.select(x_pos_sign, ctx.copysign(f64(0.25 * pi), y), ctx.copysign(f64(0.75 * pi), y)),
        ctx.copysign(f64(0.5 * pi), y),
    )
    r = B.select(ctx.isinf(y), y_inf_r, r)
    r = B.select(B.or_(ctx.isnan(x), ctx.isnan(y)), f64(float("nan")), r)
    return [[r]]


@lowers("aten::copysign")
def lower_copysign(ctx, node):
    x, y = [ctx.to_f64(ctx.scalar(v), v.type) for v in node.inputs]
    return [[ctx.copysign(x, y)]]


@lowers("aten::fmod")
def lower_math_fmod(ctx, node):
    """math.fmod: fmod(x, +-inf) is x for finite x; a NaN from non-NaN arguments is a domain error."""
    B = ctx.b
    x, y = [ctx.to_f64(ctx.scalar(v), v.type) for v in node.inputs]
    r = ctx.fmod(x, y)
    ctx.raise_if(B.and_(ctx.isnan(r), B.not_(B.or_(ctx.isnan(x), ctx.isnan(y)))), ValueError, "math domain error")
    return [[B.select(B.and_(ctx.isinf(y), ctx.isfinite(x)), x, r)]]


@lowers("aten::hypot")
def lower_hypot(ctx, node):
    """math.hypot(x, y): CPython 3.11's vector_norm for two coordinates (not libm's hypot, which rounds
    differently): power-of-two scaling, Veltkamp-Dekker squaring, Neumaier summation, one correction step
    of the square root; tiny (subnormal) maxima divide by the maximum instead. Operation order verbatim."""
    B = ctx.b
    a, b = [ctx.fabs(ctx.to_f64(ctx.scalar(v), v.type)) for v in node.inputs]
    zero, one, t27 = f64(0.0), f64(1.0), f64(134217729.0)
    found_nan = B.or_(ctx.isnan(a), ctx.isnan(b))
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
    r = B.select(ctx.isinf(mx), mx, r)
    return [[r]]
