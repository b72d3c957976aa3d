"""Kernel parameters: the LLVM register of a scalar operand, the ctypes type the launcher passes for each
parameter type, and the bytes of an element of each dtype."""

from __future__ import annotations

import ctypes

from ...ir.types import BOOL, FLOAT, INT
from ..llvm.lowering.common import F64, I8, I64

SCALAR_PARAM = {INT: I64, FLOAT: F64, BOOL: I8}
PARAM_CTYPE = {
    "i8*": ctypes.c_void_p,
    "i64": ctypes.c_int64,
    "i32": ctypes.c_int32,
    "double": ctypes.c_double,
    "i8": ctypes.c_int8,
}
ELEM_BYTES = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "uint32": 4,
    "bool": 1,
}
