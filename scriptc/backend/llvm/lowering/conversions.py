"""Element conversions in native code, as NumPy converts: loads and stores of every dtype to and from the
register kinds (f: double, i/u: i64, b: i1), NumPy's casts on x86-64 (int64 -> float32 in one rounding, float ->
int as the C cast compiles there), float16 through correctly rounded routines of our own (no compiler-rt
libcall for the JIT to resolve), and Python scalars stored into arrays (``x[i] = v``, ``fill``: NumPy 2's
conversion and range checks)."""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ....ir.types import NumpyScalarType
from .array_value import ELEM, F32, I16, kind_of
from .common import F64, I8, I64, i64
from ..runtime.text_builder import TextBuilder
from . import numpy_scalars, scalar_ops


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def from_memory(ctx, x, dtype: str):
    """An element of ``dtype`` widened to its register kind (kind_of)."""
    b = ctx.b
    k = kind_of(dtype)
    if k == "f":
        if dtype == "float16":
            return b.call(ctx.runtime("half_to_double"), [x])
        return x if dtype == "float64" else b.fpext(x, F64)
    if k == "b":
        return b.icmp_unsigned("!=", x, ir.Constant(I8, 0))
    if dtype in ("int64",):
        return x
    return b.zext(x, I64) if k == "u" else b.sext(x, I64)


def to_memory(ctx, x, kind: str, dtype: str):
    """A register value as an element of ``dtype``, converted as NumPy's casts do on x86-64: one rounding
    from int64 to float32 (not two through double), and float -> int as the C cast compiles there."""
    b = ctx.b
    k = kind_of(dtype)
    if k == "f":
        if dtype == "float32" and kind in "iu":
            return b.sitofp(x, F32)  # u values are zero-extended, so non-negative in i64
        x = cast(ctx, x, kind, "f")
        if dtype == "float32":
            return b.fptrunc(x, F32)
        return b.call(ctx.runtime("double_to_half"), [x]) if dtype == "float16" else x
    if k == "b":
        return b.zext(cast(ctx, x, kind, "b"), I8)
    if kind == "f":
        return float_to_int(ctx, x, dtype)
    x = cast(ctx, x, kind, k)
    return x if dtype == "int64" else b.trunc(x, ELEM[dtype])


def float_to_int(ctx, x, dtype: str):
    """C's (type)double as x86-64 runs it: cvttsd2si, whose out-of-range and NaN result is the "integer
    indefinite" INT_MIN of its width; types narrower than int convert through a 32-bit int and truncate.
    (LLVM's fptosi is poison out of range; the select keeps that value unused.)"""
    b = ctx.b
    bits = 64 if dtype == "int64" else 32
    wide = ir.IntType(bits)
    lo, hi = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1)
    ok = b.and_(
        b.fcmp_ordered(">", x, ir.Constant(F64, lo - 1.0 if bits == 32 else lo)),
        b.fcmp_ordered("<", x, ir.Constant(F64, hi)),
    )
    if bits == 64:  # -2**63 - 1 is not a double; -2**63 itself converts
        ok = b.or_(ok, b.fcmp_ordered("==", x, ir.Constant(F64, lo)))
    y = b.select(ok, b.fptosi(x, wide), ir.Constant(wide, -(2 ** (bits - 1))))
    return y if ELEM[dtype] == wide else b.trunc(y, ELEM[dtype])


def round_float(ctx, x, dtype: str):
    """A double rounded to ``dtype``'s precision (once, correctly) and widened back."""
    b = ctx.b
    if dtype == "float32":
        return b.fpext(b.fptrunc(x, F32), F64)
    if dtype == "float16":
        return b.call(ctx.runtime("half_to_double"), [b.call(ctx.runtime("double_to_half"), [x])])
    return x


def build_rt_double_to_half(ctx, key):
    """i16 double_to_half(double): IEEE binary16 bits of the nearest half (ties to even); overflow gives
    inf, NaN keeps its sign and the top 10 bits of its payload (made non-zero), as npy_double_to_half."""
    fn = ir.Function(ctx.mod.module, ir.FunctionType(I16, [F64]), key)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    b = TextBuilder(fn.append_basic_block())
    x = fn.args[0]
    bits = b.bitcast(x, I64)
    sign = b.and_(b.lshr(bits, i64(48)), i64(0x8000))
    mag = b.and_(bits, i64(0x7FFFFFFFFFFFFFFF))
    # NaN: top payload bits, at least one set
    payload = b.lshr(b.and_(mag, i64(0xFFFFFFFFFFFFF)), i64(42))
    nan = b.or_(i64(0x7C00), b.select(b.icmp_unsigned("==", payload, i64(0)), i64(1), payload))
    # normal halves: rebias the exponent (1023 -> 15), keep 10 fraction bits, round the other 42 to even;
    # a carry out of the fraction bumps the exponent, up to 0x7C00 (inf)
    rebased = b.sub(mag, i64((1023 - 15) << 52))
    kept = b.lshr(rebased, i64(42))
    rest = b.and_(rebased, i64((1 << 42) - 1))
    half_way = i64(1 << 41)
    up = b.or_(
        b.icmp_unsigned(">", rest, half_way),
        b.and_(b.icmp_unsigned("==", rest, half_way), b.icmp_unsigned("!=", b.and_(kept, i64(1)), i64(0))),
    )
    normal = b.add(kept, b.zext(up, I64))
    normal = b.select(b.icmp_unsigned(">", normal, i64(0x7C00)), i64(0x7C00), normal)
    # subnormal halves (|x| < 2**-14): k * 2**-24 with k = |x| * 2**24 rounded to even by adding 2**52
    # (exact scaling; strict FP keeps the addition)
    scaled = b.fmul(b.bitcast(mag, F64), ir.Constant(F64, 2.0**24))
    k = b.fsub(b.fadd(scaled, ir.Constant(F64, 2.0**52)), ir.Constant(F64, 2.0**52))
    sub = b.fptosi(k, I64)
    small = b.icmp_unsigned("<", mag, i64(0x3F10000000000000))  # 2**-14
    huge = b.icmp_unsigned(">=", mag, i64(0x40F0000000000000))  # 2**16 and beyond
    is_nan = b.icmp_unsigned(">", mag, i64(0x7FF0000000000000))
    h = b.select(small, sub, b.select(huge, i64(0x7C00), normal))
    h = b.select(is_nan, nan, h)
    b.ret(b.trunc(b.or_(h, sign), I16))
    return fn


def build_rt_half_to_double(ctx, key):
    """double half_to_double(i16): exact; NaN payloads carried over as npy_half_to_double does."""
    fn = ir.Function(ctx.mod.module, ir.FunctionType(F64, [I16]), key)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    b = TextBuilder(fn.append_basic_block())
    h = b.zext(fn.args[0], I64)
    sign = b.shl(b.and_(h, i64(0x8000)), i64(48))
    exp = b.and_(b.lshr(h, i64(10)), i64(0x1F))
    frac = b.and_(h, i64(0x3FF))
    normal = b.or_(b.shl(b.add(exp, i64(1023 - 15)), i64(52)), b.shl(frac, i64(42)))
    special = b.or_(i64(0x7FF0000000000000), b.shl(frac, i64(42)))
    sub = b.bitcast(b.fmul(b.sitofp(frac, F64), ir.Constant(F64, 2.0**-24)), I64)
    mag = b.select(
        b.icmp_unsigned("==", exp, i64(0)), sub, b.select(b.icmp_unsigned("==", exp, i64(0x1F)), special, normal)
    )
    b.ret(b.bitcast(b.or_(mag, sign), F64))
    return fn


def cast(ctx, x, src: str, dst: str):
    """Between register kinds: f (double), i/u (i64), b (i1)."""
    b = ctx.b
    if src == dst or {src, dst} == {"i", "u"}:
        return x
    if dst == "b":
        return b.fcmp_unordered("!=", x, ir.Constant(F64, 0.0)) if src == "f" else b.icmp_unsigned("!=", x, i64(0))
    if src == "b":
        return b.uitofp(x, F64) if dst == "f" else b.zext(x, I64)
    if dst == "f":
        return b.uitofp(x, F64) if src == "u" else b.sitofp(x, F64)
    return float_to_int(ctx, x, "int64")


def stored_scalar(ctx, v, dtype: str):
    """(kind, x) of a Python scalar stored into an array of ``dtype``: a Python int bound for a float array
    becomes a float64 first (NumPy converts the int object to a double, then casts: two roundings for
    float32, where an int64 array's cast rounds once)."""
    kind, x = ctx.scalar_operand(v)
    if kind == "i" and kind_of(dtype) == "f":
        return "f", ctx.b.sitofp(x, F64)
    return kind, x


def element_from_python(ctx, v, dtype: str):
    """(kind, x) of a Python scalar written into elements of an array of ``dtype`` (``x[i] = v``,
    ``x[::2] = v``, ``x[mask] = v``, ``x.fill(v)``): for an integer array NumPy 2 takes ``int(v)`` (NaN and
    inf raise), which must fit the dtype. A NumPy scalar is stored as NumPy stores it (numpy_scalars.py)."""
    if isinstance(v.type, NumpyScalarType):
        return numpy_scalars.numpy_scalar_stored(ctx, v, dtype)
    kind, x = stored_scalar(ctx, v, dtype)
    if kind_of(dtype) in "iu" and kind != "b":
        kind, x = "i", python_int_for(ctx, dtype, kind, x)
    return kind, x


def filled_from_python(ctx, v, dtype: str):
    """(kind, x) of ``np.full``'s / ``np.full_like``'s fill value: a Python int must fit an integer dtype
    (OverflowError), a float is cast (as NumPy casts it, warning only)."""
    kind, x = stored_scalar(ctx, v, dtype)
    if kind_of(dtype) in "iu" and kind == "i":
        x = python_int_for(ctx, dtype, kind, x)
    return kind, x


def python_int_for(ctx, dtype: str, kind: str, x):
    """NumPy 2's conversion of a Python int or float stored into an integer array (``x.fill(v)``): a float
    goes through ``int(v)`` (NaN and inf raise), the int must fit a C long and then ``dtype``."""
    b = ctx.b
    if kind == "f":
        scalar_ops.check_float_to_int(ctx, x)
        too_big = b.or_(
            b.fcmp_ordered(">=", x, ir.Constant(F64, 2.0**63)), b.fcmp_ordered("<", x, ir.Constant(F64, -(2.0**63)))
        )
        ctx.raise_if(too_big, OverflowError, "Python int too large to convert to C long")
        x = b.fptosi(x, I64)
    info = np.iinfo(dtype)
    if dtype != "int64":
        out = b.or_(b.icmp_signed("<", x, i64(int(info.min))), b.icmp_signed(">", x, i64(int(info.max))))
        ctx.raise_with(out, OverflowError, f"Python integer {{0}} out of bounds for {dtype}", [x])
    return x
