"""NumPy scalars in native code: element-wise operators on them, conversions to them, and stores of them.

A NumPy scalar (``NumpyScalarType``: ``x[i]`` of an int32 or float32 array) is held in the register of the Python
scalar holding its value (layout.py): an i64 (zero-extended for an unsigned dtype) or a double rounded to the
dtype. An operator on NumPy scalars computes one element as NumPy's ufunc loop does, with the element code of
the array operators (array_math.py): the operands converted to the loop's dtype (a Python scalar as NEP 50
converts it, ``weak_scalar``: an int out of the dtype's range is OverflowError), the operation, and the result
as its dtype holds it (int32 wraps, float32 rounds). NumPy's RuntimeWarnings on overflow are not raised.
"""

from __future__ import annotations

from ....ir.types import NumpyScalarType, result_dtype, scalar_dtype
from .array_value import INT_RANGE, kind_of, scalar_kind
from .common import COMPARE, i64
from .rules import lowers, lowers_numpy_scalars
from . import array_math, conversions, elements, fused


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def check_element_errors(ctx, op: str, args: list, kind: str) -> None:
    """The errors NumPy raises computing one element: an integer to a negative integer power."""
    if op == "pow" and kind in "iu":
        ctx.raise_if(
            ctx.b.icmp_signed("<", args[1], i64(0)), ValueError, "Integers to negative integer powers are not allowed."
        )


def numpy_scalar_stored(ctx, v, dtype: str):
    """(kind, x) of a NumPy scalar written into an element of an array of ``dtype``: NumPy 2 casts it into an
    unsigned or a float array (uint8: 300 is 44), and converts it through a Python int into a signed one
    (300 into int8 raises OverflowError, as the Python int would)."""
    kind, x = scalar_kind(v.type), ctx.scalar(v)
    if kind_of(dtype) == "u":
        return kind_of(dtype), conversions.from_memory(ctx, conversions.to_memory(ctx, x, kind, dtype), dtype)
    if kind_of(dtype) == "i":
        return "i", conversions.python_int_for(ctx, dtype, "i" if kind == "u" else kind, x)
    return kind, x


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers_numpy_scalars
def lower_numpy_scalar_op(ctx, node):
    """An element-wise operator on NumPy scalars: one element of its ufunc loop, in the loop's dtype."""
    op = node.kind.split("::")[1]
    out = node.outputs[0].type
    dtype = (
        result_dtype(*[v.type for v in node.inputs])
        if op in COMPARE or op in elements.PREDICATES
        else scalar_dtype(out)
    )
    compute = kind_of(dtype)
    args = []
    for k, v in enumerate(node.inputs):
        kind, x = scalar_kind(v.type), ctx.scalar(v)
        if not isinstance(v.type, NumpyScalarType):
            kind, x = array_math.weak_scalar(ctx, op, k, kind, x, dtype)
        args.append(conversions.cast(ctx, x, kind, "b" if op == "where" and k == 0 else compute))
    check_element_errors(ctx, op, args, compute)
    kind, x = array_math.in_loop_precision(
        ctx, *array_math.element_op(ctx, array_math.element_name(node), args, compute, dtype), dtype
    )
    kind, x = fused.round_through(ctx, kind, x, scalar_dtype(out))
    return [[conversions.cast(ctx, x, kind, scalar_kind(out))]]


@lowers("aten::numpy_scalar")
def lower_numpy_scalar(ctx, node):
    """``np.int32(v)``: a Python int must fit the dtype (OverflowError); a NumPy scalar or a float is cast as
    NumPy casts it (wrapping, rounding, truncating)."""
    src, dst = node.inputs[0].type, node.outputs[0].type
    kind, x = scalar_kind(src), ctx.scalar(node.inputs[0])
    dtype = node.attrs["dtype"]
    if not isinstance(src, NumpyScalarType) and not node.attrs.get("cast") and kind == "i" and dtype in INT_RANGE:
        lo, hi = INT_RANGE[dtype]
        b = ctx.b
        bad = b.or_(b.icmp_signed("<", x, i64(lo)), b.icmp_signed(">", x, i64(hi)))
        ctx.raise_with(bad, OverflowError, f"Python integer {{0}} out of bounds for {dtype}", [x])
    if kind == "f" and kind_of(dtype) in "iu":
        x = conversions.from_memory(ctx, conversions.to_memory(ctx, x, kind, dtype), dtype)
        kind = kind_of(dtype)
    kind, x = fused.round_through(ctx, kind, x, dtype)
    return [[conversions.cast(ctx, x, kind, scalar_kind(dst))]]
