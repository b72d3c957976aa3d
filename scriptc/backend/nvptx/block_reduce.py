"""A reduction's per-thread accumulators combined across a block through shared memory, in a fixed order.

Each thread stores its accumulator (as 64 bits) in its slot of a shared array; then for s = p/2, p/4, ..., 1
(p: the block size rounded up to a power of two) thread t < s combines slot t + s into slot t when that slot
exists, with a barrier after each step. The order depends only on the launch configuration, so a given
configuration gives the same result on every run. Thread 0 stores the block's result in a buffer of per-block
results; the second kernel (``finish``, one block) combines those the same way and stores the group's scalar.
Accumulators are the CPU lowering's (double for floats, i64 for integers, i1 for any/all), with its identities
and steps (NaN wins a max).
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm.array_math import reduction_dtype
from ..llvm.arrays import kind_of
from ..llvm.common import F64, I1, I8, I32, I64
from ...ir.types import BOOL, FLOAT
from .intrinsics import barrier, i32, special

MAX_THREADS = 1024


class BlockReduction:
    """The accumulator of a fused full reduction (``aten::sum``, ...)."""

    def __init__(self, km, low, reduction):
        self.low, self.b = low, low.b
        self.name = reduction.kind.split("::")[1]
        src = reduction.inputs[0].type
        self.result_dtype = reduction_dtype(reduction.kind, src, None)
        name = self.name
        self.kind = "f" if name == "mean" else kind_of(src.dtype) if name in ("max", "min") else kind_of(
            self.result_dtype)
        self.register = {"f": F64, "b": I1}.get(self.kind, I64)
        self.shared = km.shared_slots()

    def identity(self):
        return self.low.reduction_init(self.name, self.kind)

    def step(self, acc, result):
        """The accumulator after one element's (kind, value)."""
        kind, x = result
        return self.merge(acc, self.low.cast(x, kind, self.kind))

    def merge(self, acc, other):
        return self.low.reduction_step(self.name, acc, other, self.kind)[0]

    def to_bits(self, x):
        b = self.b
        return b.bitcast(x, I64) if self.kind == "f" else b.zext(x, I64) if self.kind == "b" else x

    def from_bits(self, bits):
        b = self.b
        return b.bitcast(bits, F64) if self.kind == "f" else b.trunc(bits, I1) if self.kind == "b" else bits

    def combine_block(self, x):
        """The block's combined accumulator (valid in thread 0); every thread of the block must call it."""
        b, fn = self.b, self.b.function
        tid, threads = special(b, "tid.x"), special(b, "ntid.x")

        def slot(t):
            return b.addrspacecast(b.gep(self.shared, [i32(0), t], inbounds=True), I64.as_pointer())
        b.store(self.to_bits(x), slot(tid))
        barrier(b)
        power = b.shl(i32(1), b.sub(i32(32), b.ctlz(b.sub(threads, i32(1)), ir.Constant(I1, 0))))
        first = b.lshr(power, i32(1))
        pre = b.block
        loop, body, merge, after, done = (fn.append_basic_block(n) for n in ("tree", "level", "merge", "synced",
                                                                               "combined"))
        b.branch(loop)
        b.position_at_end(loop)
        s = b.phi(I32)
        s.add_incoming(first, pre)
        b.cbranch(b.icmp_unsigned("!=", s, i32(0)), body, done)
        b.position_at_end(body)
        partner = b.add(tid, s)
        b.cbranch(b.and_(b.icmp_unsigned("<", tid, s), b.icmp_unsigned("<", partner, threads)), merge, after)
        b.position_at_end(merge)
        mine = self.from_bits(b.load(slot(tid)))
        b.store(self.to_bits(self.merge(mine, self.from_bits(b.load(slot(partner))))), slot(tid))
        b.branch(after)
        b.position_at_end(after)
        barrier(b)
        s.add_incoming(b.lshr(s, i32(1)), after)
        b.branch(loop)
        b.position_at_end(done)
        return self.from_bits(b.load(slot(i32(0))))

    def _in_thread_zero(self, emit) -> None:
        b = self.b
        with b.if_then(b.icmp_unsigned("==", special(b, "tid.x"), i32(0))):
            emit()

    def store_block_result(self, acc, partials) -> None:
        """Combine the block's accumulators; thread 0 stores the result (64 bits) at partials[block]."""
        b = self.b
        total = self.combine_block(acc)
        index = b.zext(special(b, "ctaid.x"), I64)
        self._in_thread_zero(lambda: b.store(self.to_bits(total), b.gep(b.bitcast(partials, I64.as_pointer()),
                                                                         [index])))

    def store_result(self, acc, out, n, out_type) -> None:
        """Combine the block's accumulators; thread 0 stores the group's scalar (a mean divided by n) at out."""
        b, low = self.b, self.low
        total = self.combine_block(acc)

        def emit():
            x = b.fdiv(total, b.sitofp(n, F64)) if self.name == "mean" else total
            kind, x = low.round_to(x, self.kind, self.result_dtype)
            leaf = low.scalar_result(x, kind, out_type)[0]
            memory = {FLOAT: F64, BOOL: I8}.get(out_type, I64)
            value = b.zext(leaf, I8) if out_type == BOOL else leaf
            b.store(value, b.bitcast(out, memory.as_pointer()))
        self._in_thread_zero(emit)


class LoopReduction(BlockReduction):
    """The accumulator of a ``prange`` reduction (``s += ...``, ``s = max(s, ...)``, ``*=``): the CPU's
    identities and combining operation (parallel.py)."""

    def __init__(self, km, low, kind: str, t):
        from ..llvm.parallel import IDENTITY
        self.low, self.b = low, low.b
        self.name, self.type = kind, t
        self.kind = "f" if t == FLOAT else "i"
        self.register = F64 if t == FLOAT else I64
        self.initial = IDENTITY[(kind, t)]
        self.shared = km.shared_slots()

    def identity(self):
        return ir.Constant(self.register, self.initial)

    def merge(self, acc, other):
        return self.low.combine(self.name, self.type, acc, other)


def shared_slots(module: ir.Module, name: str) -> ir.GlobalVariable:
    """The block's shared array of MAX_THREADS 64-bit slots."""
    slots = ir.ArrayType(I64, MAX_THREADS)
    g = ir.GlobalVariable(module, slots, name, addrspace=3)
    g.linkage = "internal"
    g.initializer = ir.Constant(slots, ir.Undefined)
    g.align = 8
    return g


__all__ = ["BlockReduction", "LoopReduction", "shared_slots"]
