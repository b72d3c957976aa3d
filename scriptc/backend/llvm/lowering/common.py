"""Shared vocabulary of the LLVM lowering: the LLVM types and constants of ``runtime/llvm_types.py``, the
layout of values in leaves (``runtime/layout.py``), and the operator families the rules share."""

from __future__ import annotations

from ....ops.mathfns import C_MATH
from ..runtime.layout import PTR, holds_ref, is_lowerable, leaves, ref_parts  # noqa: F401  (the lowering's vocabulary)
from ..runtime.llvm_types import (  # noqa: F401  (the lowering's vocabulary)
    F64,
    I1,
    I8,
    I8P,
    I32,
    I64,
    INT64_MAX,
    INT64_MIN,
    NO_UNROLL,
    NO_VECTORIZE,
    TWO63,
    f64,
    i1,
    i32,
    i64,
    loop_hints,
    mem_type,
    out_struct,
    process_function,
    process_global,
    reg_type,
)

ARITH = ("add", "sub", "mul", "div", "floordiv", "remainder", "pow")
COMPARE = {
    "eq": ("==", "oeq"),
    "ne": ("!=", "une"),
    "lt": ("<", "olt"),
    "le": ("<=", "ole"),
    "gt": (">", "ogt"),
    "ge": (">=", "oge"),
}
BITWISE = ("__and__", "__or__", "__xor__")
INTRINSIC = {"sqrt", "floor", "ceil", "trunc", "fabs"}  # llvm.<name>.f64: exact operations
# the one-argument math functions computed by a libm call: CPython's math_1 on scalars (scalar_ops.py)
MATH1 = {name: c for name, c in C_MATH.items() if c.nargs == 1}
UNSUPPORTED_DETAIL: dict[str, str] = {}
