"""What kernels use of the NVPTX target directly: special registers, the block barrier, the grid-stride loop.
The emulator (emulator.py) gives each of them a host meaning."""

from __future__ import annotations

from llvmlite import ir

from ..llvm.lowering.common import I32

BARRIER_ASM = "bar.sync 0;"


def i32(x: int) -> ir.Constant:
    return ir.Constant(I32, x)


def special(b: ir.IRBuilder, register: str):
    """A PTX special register (``tid.x``, ``ntid.x``, ``ctaid.x``, ``nctaid.x``) as an i32."""
    name = f"llvm.nvvm.read.ptx.sreg.{register}"
    module = b.module
    fn = module.globals.get(name) or ir.Function(module, ir.FunctionType(I32, []), name)
    return b.call(fn, [])


def barrier(b: ir.IRBuilder) -> None:
    """``__syncthreads()``: every thread of the block waits here, and shared memory written before is visible
    after (the memory clobber keeps LLVM from moving loads and stores across it)."""
    b.asm(ir.FunctionType(ir.VoidType(), []), BARRIER_ASM, "~{memory}", [], True)


def grid_stride_loop(b: ir.IRBuilder, fn: ir.Function, start, step, n, body, done) -> None:
    """for (i = start; i < n; i += step) body(i); then to ``done``. Leaves ``b`` positioned nowhere useful."""
    pre = b.block
    loop, inside = fn.append_basic_block("loop"), fn.append_basic_block("body")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(n.type)
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", i, n), inside, done)
    b.position_at_end(inside)
    body(i)
    i.add_incoming(b.add(i, step), b.block)
    b.branch(loop)
