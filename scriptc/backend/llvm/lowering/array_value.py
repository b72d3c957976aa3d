"""An array value in registers: ``Arr`` names its leaves (meminfo, data, shape..., strides...), ``ELEM`` gives
each dtype's element type in memory, ``kind_of`` the register kind it is computed in. The lowering modules share
these definitions; they import no lowering module."""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ....ir.types import BOOL, FLOAT, INT, NumpyScalarType, TensorType
from .common import F64, I8, I32, I64

I16 = ir.IntType(16)
F32 = ir.FloatType()
# float16 elements are kept as their bits (i16) and converted by our own routines (half_to_double,
# double_to_half): LLVM lowers double -> half to a compiler-rt call (__truncdfhf2) that the JIT cannot link.
ELEM = {
    "float64": F64,
    "float32": F32,
    "float16": I16,
    "int64": I64,
    "int32": I32,
    "int16": I16,
    "int8": I8,
    "uint8": I8,
    "uint32": I32,
    "bool": I8,
}
INT_RANGE = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in ("int8", "int16", "int32", "uint8", "uint32")}


def kind_of(dtype: str) -> str:
    """The register kind an element is computed in: f (double), i (i64), u (i64, zero-extended), b (i1)."""
    return np.dtype(dtype).kind


def scalar_kind(t) -> str:
    """The register kind of a scalar: a NumPy scalar's is its dtype's (u: an unsigned one, zero-extended)."""
    if isinstance(t, NumpyScalarType):
        return kind_of(t.dtype)
    return {FLOAT: "f", INT: "i", BOOL: "b"}[t]


TOO_BIG = "array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size."


class Arr:
    """An array value's leaves, by name."""

    __slots__ = ("t", "mi", "data", "shape", "strides")

    def __init__(self, t: TensorType, vals: list):
        r = t.rank
        self.t, self.mi, self.data = t, vals[0], vals[1]
        self.shape, self.strides = list(vals[2 : 2 + r]), list(vals[2 + r : 2 + 2 * r])

    @property
    def leaves(self) -> list:
        return [self.mi, self.data, *self.shape, *self.strides]

    @property
    def itemsize(self) -> int:
        return np.dtype(self.t.dtype).itemsize


def index_checked(node, k: int) -> bool:
    """Whether index k of an indexing node needs its bounds check (the bounds-check pass's ``checked``)."""
    flags = node.attrs.get("checked")
    return flags is None or bool(flags[k])


def shape_text(rank: int, first: int) -> str:
    """A template printing a shape tuple as NumPy's error messages do: (3,), (2,3)."""
    if rank == 1:
        return f"({{{first}}},)"
    return "(" + ",".join(f"{{{first + k}}}" for k in range(rank)) + ")"
