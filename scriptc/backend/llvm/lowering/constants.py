"""Lowering of array constants (``prim::Constant`` holding a module-level array frozen at compile time).

The graph holds a read-only, C-contiguous copy (``scriptc.ir.arrayconst.frozen``); native code reads it in place as a
borrowed array (null meminfo: never retained or freed). The copy is kept for the life of the process
(``runtime/callbacks.py``), so that machine code referring to it never outlives it, and so that the Python boundary
recognises a result pointing into it and returns a copy (a caller writing into a result must not change the constant).
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.arrayconst import UnrestoredArray
from .common import I8P, i64
from ..runtime.callbacks import keep_array
from ..runtime.errors import LoweringError

# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def array_constant(ctx, node) -> list:
    a = node.attrs["value"]
    if isinstance(a, UnrestoredArray):
        raise LoweringError(node.kind, f"the array constant {a!r} was read from IR text without its data", node.source)
    address = keep_array(a)
    data = ctx.b.inttoptr(i64(address), I8P)
    return [ir.Constant(I8P, None), data, *[i64(d) for d in a.shape], *[i64(s) for s in a.strides]]
