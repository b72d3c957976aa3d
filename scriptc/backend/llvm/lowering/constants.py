"""Lowering of array constants (``prim::Constant`` holding a module-level array frozen at compile time).

The graph holds a read-only, C-contiguous copy (``scriptc.ir.arrayconst.frozen``); native code reads it in place
as a borrowed array (null meminfo: never retained or freed). The copy is registered here for the life of the
process, so that machine code referring to it never outlives it, and so that the Python boundary recognises a
result pointing into it and returns a copy (a caller writing into a result must not change the constant).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ir.arrayconst import UnrestoredArray
from .common import I8P, i64
from .errors import LoweringError

# data address -> the frozen array (kept alive: compiled code refers to it)
_CONSTANTS: dict[int, np.ndarray] = {}


def constant_containing(address: int) -> np.ndarray | None:
    """The registered array constant whose memory holds ``address``, if any."""
    for start, a in _CONSTANTS.items():
        if start <= address < start + max(a.nbytes, 1):
            return a
    return None


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def array_constant(ctx, node) -> list:
    a = node.attrs["value"]
    if isinstance(a, UnrestoredArray):
        raise LoweringError(node.kind, f"the array constant {a!r} was read from IR text without its data", node.source)
    address = a.ctypes.data
    _CONSTANTS.setdefault(address, a)
    data = ctx.b.inttoptr(i64(address), I8P)
    return [ir.Constant(I8P, None), data, *[i64(d) for d in a.shape], *[i64(s) for s in a.strides]]
