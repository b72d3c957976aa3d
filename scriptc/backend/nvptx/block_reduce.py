"""A reduction's per-thread accumulators combined across a block, in a fixed order: warp shuffles, then shared
memory.

Each warp combines its lanes by shuffles down 16, 8, 4, 2, 1 (lane l takes lane l + offset when that lane exists);
lane 0 of each warp stores the warp's result in a shared slot; after a barrier, the warps' results are combined
the same way by shuffles. The order depends only on the launch configuration, so a given configuration gives the
same result on every run. Thread 0 stores the block's result in a buffer of per-block results; the second kernel
(``finish``, one block) combines those the same way and stores the scalar. Accumulators are the CPU lowering's
(double for floats, i64 for integers, i1 for any/all), with its identities and steps (NaN wins a max).
"""

from __future__ import annotations

from llvmlite import ir

from ..llvm.lowering.array_math import reduction_dtype
from ..llvm.lowering.array_value import kind_of
from ..llvm.lowering.common import F64, I1, I8, I32, I64
from ...ir.types import BOOL, FLOAT, decayed
from .intrinsics import barrier, i32, special
from ..llvm.lowering.parallel import IDENTITY
from ..llvm.lowering import array_math, conversions, parallel

MAX_THREADS = 1024
WARP = 32


class BlockReduction:
    """The accumulator of a fused full reduction (``aten::sum``, ...)."""

    def __init__(self, km, low, reduction):
        self.low, self.b = low, low.b
        self.name = reduction.kind.split("::")[1]
        src = reduction.inputs[0].type
        self.result_dtype = reduction_dtype(reduction.kind, src, None)
        name = self.name
        self.kind = (
            "f" if name == "mean" else kind_of(src.dtype) if name in ("max", "min") else kind_of(self.result_dtype)
        )
        self.register = {"f": F64, "b": I1}.get(self.kind, I64)
        self.shared = km.shared_slots()

    def identity(self):
        return array_math.reduction_init(self.low, self.name, self.kind)

    def step(self, acc, result):
        """The accumulator after one element's (kind, value)."""
        kind, x = result
        return self.merge(acc, conversions.cast(self.low, x, kind, self.kind))

    def merge(self, acc, other):
        return array_math.reduction_step(self.low, self.name, acc, other, self.kind, self.result_dtype)[0]

    def to_bits(self, x):
        b = self.b
        return b.bitcast(x, I64) if self.kind == "f" else b.zext(x, I64) if self.kind == "b" else x

    def from_bits(self, bits):
        b = self.b
        return b.bitcast(bits, F64) if self.kind == "f" else b.trunc(bits, I1) if self.kind == "b" else bits

    def combine_block(self, x):
        """The block's combined accumulator (valid in thread 0); every thread of the block must call it."""
        b = self.b
        tid, threads = special(b, "tid.x"), special(b, "ntid.x")
        lane, warp = b.and_(tid, i32(WARP - 1)), b.lshr(tid, i32(5))
        in_warp = b.sub(threads, b.mul(warp, i32(WARP)))  # lanes that exist in this thread's warp
        full = b.icmp_unsigned(">=", in_warp, i32(WARP))
        mask = b.select(full, i32(-1), b.sub(b.shl(i32(1), b.select(full, i32(0), in_warp)), i32(1)))
        x = self._warp_combine(x, lane, b.select(full, i32(WARP), in_warp), mask)

        def slot(t):
            return b.addrspacecast(b.gep(self.shared, [i32(0), t], inbounds=True), I64.as_pointer())

        with b.if_then(b.icmp_unsigned("==", lane, i32(0))):
            b.store(self.to_bits(x), slot(warp))
        barrier(b)
        warps = b.lshr(b.add(threads, i32(WARP - 1)), i32(5))
        # every warp combines the warps' results (only thread 0's is used): uniform code, no divergent shuffles
        mine = self.from_bits(b.load(slot(b.select(b.icmp_unsigned("<", lane, warps), lane, i32(0)))))
        total = self._warp_combine(mine, lane, warps, mask)
        barrier(b)  # the slots are free again (a second reduction in the same kernel reuses them)
        return total

    def _warp_combine(self, x, lane, count, mask):
        """Lane 0 gets lanes [0, count) combined, by shuffles down 16, 8, 4, 2, 1 (a fixed order)."""
        b = self.b
        for offset in (16, 8, 4, 2, 1):
            other = self.from_bits(shuffle_down(b, self.to_bits(x), offset, mask))
            x = b.select(b.icmp_unsigned("<", b.add(lane, i32(offset)), count), self.merge(x, other), x)
        return x

    def _in_thread_zero(self, emit) -> None:
        b = self.b
        with b.if_then(b.icmp_unsigned("==", special(b, "tid.x"), i32(0))):
            emit()

    def store_block_result(self, acc, partials, r: int = 0, count: int = 1) -> None:
        """Combine the block's accumulators; thread 0 stores the result (64 bits) at partials[block * count + r]
        (reduction r of a group of ``count``)."""
        b = self.b
        total = self.combine_block(acc)
        index = b.add(b.mul(b.zext(special(b, "ctaid.x"), I64), ir.Constant(I64, count)), ir.Constant(I64, r))
        self._in_thread_zero(
            lambda: b.store(self.to_bits(total), b.gep(b.bitcast(partials, I64.as_pointer()), [index]))
        )

    def store_result(self, acc, out, n, out_type) -> None:
        """Combine the block's accumulators; thread 0 stores the group's scalar (a mean divided by n) at out."""
        b, low = self.b, self.low
        total = self.combine_block(acc)

        def emit():
            x = b.fdiv(total, b.sitofp(n, F64)) if self.name == "mean" else total
            kind, x = array_math.round_to(low, x, self.kind, self.result_dtype)
            leaf = low.scalar_result(x, kind, out_type)[0]
            memory = {FLOAT: F64, BOOL: I8}.get(decayed(out_type), I64)
            value = b.zext(leaf, I8) if out_type == BOOL else leaf
            b.store(value, b.bitcast(out, memory.as_pointer()))

        self._in_thread_zero(emit)


class LoopReduction(BlockReduction):
    """The accumulator of a ``prange`` reduction (``s += ...``, ``s = max(s, ...)``, ``*=``): the CPU's
    identities and combining operation (parallel.py)."""

    def __init__(self, km, low, kind: str, t):
        self.low, self.b = low, low.b
        self.name, self.type = kind, t
        self.kind = "f" if t == FLOAT else "i"
        self.register = F64 if t == FLOAT else I64
        self.initial = IDENTITY[(kind, t)]
        self.shared = km.shared_slots()

    def identity(self):
        return ir.Constant(self.register, self.initial)

    def merge(self, acc, other):
        return parallel.combine(self.low, self.name, self.type, acc, other)


def shuffle_down(b: ir.IRBuilder, bits, offset: int, mask):
    """``__shfl_down_sync`` of a 64-bit value (two 32-bit shuffles)."""
    module = b.module
    name = "llvm.nvvm.shfl.sync.down.i32"
    fn = module.globals.get(name) or ir.Function(module, ir.FunctionType(I32, [I32] * 4), name)
    lo, hi = b.trunc(bits, I32), b.trunc(b.lshr(bits, ir.Constant(I64, 32)), I32)
    lo, hi = (b.call(fn, [mask, half, i32(offset), i32(WARP - 1)]) for half in (lo, hi))
    return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))


def shared_slots(module: ir.Module, name: str, count: int | None = None) -> ir.GlobalVariable:
    """A shared array of ``count`` 64-bit slots (MAX_THREADS: a block reduction's, one per warp at most)."""
    slots = ir.ArrayType(I64, count or MAX_THREADS)
    g = ir.GlobalVariable(module, slots, name, addrspace=3)
    g.linkage = "internal"
    g.initializer = ir.Constant(slots, ir.Undefined)
    g.align = 8
    return g


__all__ = ["BlockReduction", "LoopReduction", "shared_slots"]
