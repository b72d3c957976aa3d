"""Shared vocabulary of the LLVM lowering: LLVM types of IR types (a value is a list of scalar leaves),
constants, and the operator -> handler table that ``handles`` fills."""
from __future__ import annotations

from llvmlite import ir

from ...ir.types import BOOL, FLOAT, INT, NONE, TupleType, Type

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F64 = ir.DoubleType()

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
TWO63 = 9223372036854775808.0


def i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def f64(v: float) -> ir.Constant:
    return ir.Constant(F64, v)


def i1(v: bool) -> ir.Constant:
    return ir.Constant(I1, int(bool(v)))


def i32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


# -- types -----------------------------------------------------------------------------------------------

def leaves(t: Type) -> list[Type]:
    """The scalar types a value of type ``t`` is made of, in order; TypeError if not lowerable."""
    if t == INT or t == FLOAT or t == BOOL:
        return [t]
    if t == NONE:
        return []
    if isinstance(t, TupleType):
        return [x for e in t.elems for x in leaves(e)]
    raise TypeError(str(t))


def is_lowerable(t: Type) -> bool:
    try:
        leaves(t)
        return True
    except TypeError:
        return False


def reg_type(t: Type) -> ir.Type:
    return {INT: I64, FLOAT: F64, BOOL: I1}[t]


def mem_type(t: Type) -> ir.Type:
    return {INT: I64, FLOAT: F64, BOOL: I8}[t]


def out_struct(t: Type) -> ir.LiteralStructType:
    return ir.LiteralStructType([mem_type(x) for x in leaves(t)])


# Operators this backend lowers (anything else is a LoweringError). Filled by the decorator below.
_HANDLERS: dict[str, str] = {}


def handles(*kinds):
    def deco(fn):
        for k in kinds:
            _HANDLERS[k] = fn.__name__
        return fn
    return deco


ARITH = ("add", "sub", "mul", "div", "floordiv", "remainder", "pow")
COMPARE = {"eq": ("==", "oeq"), "ne": ("!=", "une"), "lt": ("<", "olt"), "le": ("<=", "ole"),
           "gt": (">", "ogt"), "ge": (">=", "oge")}
BITWISE = ("__and__", "__or__", "__xor__")
# math functions called in libm, with math_1's can_overflow flag (an infinite result from a finite argument is
# OverflowError("math range error") when set, else ValueError("math domain error"))
MATH1 = {"exp": True, "expm1": True, "sinh": True, "cosh": True, "log": False, "log2": False, "log10": False,
         "log1p": False, "sin": False, "cos": False, "tan": False, "asin": False, "acos": False, "atan": False,
         "tanh": False}
UNSUPPORTED_DETAIL = {
    "prim::Print": "printing is not supported in native code yet",
    "aten::format": "strings are not supported in native code yet",
}


