"""Native lowering of ``random::threefry2x32`` (declared in ``scriptc/ops/random.py``): one loop over the
counter rows, the 20 rounds unrolled in 32-bit registers (adds wrap modulo 2**32, rotations are two shifts and
an or), as the reference implementation computes them in NumPy ``uint32``; the loop is compiled once per process
(``threefry_rows``), the shape checks and the allocation where the node is."""

from __future__ import annotations

from llvmlite import ir

from ....ops.random import KEY_PARITY, ROTATIONS
from ....ir.types import TensorType
from .array_value import ELEM, Arr
from .common import I8P, I64, i64
from .rules import lowers_array
from . import summation

I32 = ir.IntType(32)


def u32(v: int):
    return ir.Constant(I32, v & 0xFFFFFFFF)


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def threefry_rows(ctx, args) -> None:
    """The body of ``void rows(i8* counts, i64 n, i64 stride0, i64 stride1, i32 k0, i32 k1, i8* out)``: the
    20 rounds of each of the n counter rows (strided) into ``out`` (C-contiguous (n, 2)); compiled once per
    process."""
    b = ctx.b
    data, n, s0, s1, k0, k1, into = args
    words = TensorType("uint32", 2)
    counts = Arr(words, [ir.Constant(I8P, None), data, n, i64(2), s0, s1])
    out = Arr(words, [ir.Constant(I8P, None), into, n, i64(2), i64(8), i64(4)])
    ks = [k0, k1, b.xor(b.xor(k0, k1), u32(KEY_PARITY))]
    with ctx.for_range(n) as i:
        x0 = b.add(b.load(ctx.element_ptr(counts, [i, i64(0)])), ks[0])
        x1 = b.add(b.load(ctx.element_ptr(counts, [i, i64(1)])), ks[1])
        for block in range(5):
            for r in ROTATIONS[block % 2]:
                x0 = b.add(x0, x1)
                x1 = b.or_(b.shl(x1, u32(r)), b.lshr(x1, u32(32 - r)))
                x1 = b.xor(x0, x1)
            x0 = b.add(x0, ks[(block + 1) % 3])
            x1 = b.add(b.add(x1, ks[(block + 2) % 3]), u32(block + 1))
        b.store(x0, ctx.element_ptr(out, [i, i64(0)]))
        b.store(x1, ctx.element_ptr(out, [i, i64(1)]))
    b.ret_void()


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers_array("random::threefry2x32")
def lower_threefry2x32(ctx, node):
    b = ctx.b
    key, counts = ctx.arr(node.inputs[0]), ctx.arr(node.inputs[1])
    n, width = counts.shape
    ctx.raise_with(
        b.icmp_signed("!=", key.shape[0], i64(2)),
        ValueError,
        "threefry2x32: key must have shape (2,), got ({0},)",
        [key.shape[0]],
    )
    ctx.raise_with(
        b.icmp_signed("!=", width, i64(2)),
        ValueError,
        "threefry2x32: counts must have shape (n, 2), got ({0}, {1})",
        [n, width],
    )
    k0 = b.load(ctx.element_ptr(key, [i64(0)]))
    k1 = b.load(ctx.element_ptr(key, [i64(1)]))
    out = ctx.alloc(node.output.type, [n, i64(2)])
    fnty = ir.FunctionType(ir.VoidType(), [I8P, I64, I64, I64, I32, I32, I8P])
    rows = summation.call_compiled_once(
        ctx, ("threefry2x32",), fnty, lambda lowering, fn: threefry_rows(lowering, fn.args)
    )
    b.call(rows, [counts.data, n, *counts.strides, k0, k1, out.data])
    return [out.leaves]


@lowers_array("random::fma")
def lower_random_fma(ctx, node):
    """One loop of llvm.fma: rounded once, as the reference's exact arithmetic (and XLA's contraction)."""
    b = ctx.b
    x, scale, offset = (ctx.arr(v) for v in node.inputs)
    for v in (scale, offset):
        ctx.raise_if(b.icmp_signed("!=", v.shape[0], i64(1)), ValueError, "fma: scale and offset must have shape (1,)")
    ty = ELEM[x.t.dtype]
    fma = ctx.mod.module.declare_intrinsic("llvm.fma", [ty], ir.FunctionType(ty, [ty, ty, ty]))
    s = b.load(ctx.element_ptr(scale, [i64(0)]))
    c = b.load(ctx.element_ptr(offset, [i64(0)]))
    out = ctx.alloc(node.output.type, [x.shape[0]])
    with ctx.for_range(x.shape[0]) as i:
        b.store(b.call(fma, [b.load(ctx.element_ptr(x, [i])), s, c]), ctx.element_ptr(out, [i]))
    return [out.leaves]
