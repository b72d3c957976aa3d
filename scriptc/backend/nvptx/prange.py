"""``prange`` loops as GPU kernels: one iteration per thread of a grid-stride loop.

The loop body becomes the CPU's kernel graph (``llvm/parallel.py``: ``body(lo, hi, captured..., accumulators...)``)
lowered by the CPU lowering into the NVPTX module, and a kernel calls it for each of its iterations. A perfect
nest of prange loops (``for i in prange(n): for j in prange(m): ...``, 2-D or 3-D) is one flattened iteration
space, the innermost index varying fastest across neighbouring threads (coalesced accesses):

    void prange(i64 trips, <per captured array: i8* data, i64 shape[rank], i64 strides[rank]>,
                <per captured scalar: i64 | double | i8>, [i8* partials])

Captured arrays have no meminfo on the device (null: views taken in the body count no references); a body that
creates arrays is refused. An iteration that raises (an index out of bounds: IndexError) stores its error code
in the module's flag and its thread stops; the host raises it after the launch. Reductions (``s += ...``,
``max``, ``min``, ``*=``) accumulate per thread from the identity, combine per block through shared memory
(block_reduce.py) into ``partials``, and a one-block ``finish(out, partials, blocks)`` combines the blocks; the host
combines the value before the loop with the result, as the CPU combines its chunks. The combining order depends
only on the launch configuration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from llvmlite import ir

from ...ir.builder import Builder
from ...ir.clone import clone_node_before, clone_nodes_into
from ...ir.core import Graph, Node
from ...ir.registry import REGISTRY, Effect
from ...ir.types import BOOL, INT, NONE, TensorType
from ..llvm.lowering.common import I8P, I64, i64
from ..llvm.lowering.lower import FunctionLowering
from ..llvm.lowering.parallel import IDENTITY, captured_values, kernel_graph, parallel_plan
from .block_reduce import LoopReduction
from .groups import GpuUnsupported
from .params import PARAM_CTYPE, SCALAR_PARAM
from .intrinsics import grid_stride_loop, i32, special


@dataclass
class ParallelKernel:
    name: str
    node: Node  # the prim::Loop
    captured: list
    kinds: list  # the reductions' kinds (add, mul, max, min), one per carried value
    nest: list  # the loops of a perfect nest, run as one flattened grid
    params: list = field(default_factory=list)
    finish: str | None = None
    finish_params: list = field(default_factory=list)
    can_raise: bool = True  # bounds checks: the host reads the error flag after each launch
    reduction = None

    @property
    def uses_barriers(self) -> bool:
        return bool(self.kinds)


def gpu_parallel_loop(node: Node) -> bool:
    return node.kind == "prim::Loop" and parallel_plan(node) is not None


def loop_nest(node: Node) -> list[Node]:
    """The prange loops of a perfect nest starting at ``node`` (outermost first): while a loop's body holds one
    more prange loop and otherwise only pure scalar operators (recomputed per iteration of the flattened nest),
    without reductions at any level, and the inner loop's trip count is computed outside the nest. One loop when
    there is no such nest."""
    nest = [node]
    while not parallel_plan(nest[0]):
        body = nest[-1].blocks[0]
        loops = [n for n in body.nodes if n.kind == "prim::Loop"]
        if (
            len(loops) != 1
            or not gpu_parallel_loop(loops[0])
            or parallel_plan(loops[0])
            or not all(n is loops[0] or _pure_scalar(n) for n in body.nodes)
        ):
            return nest
        inner = loops[0]
        source = inner.inputs[0].node
        if source is not None and any(source.block is level.blocks[0] for level in nest):
            return nest
        nest.append(inner)
    return nest


def _pure_scalar(node: Node) -> bool:
    """Scalar code without effects (it may raise: an empty inner loop makes the host run the nest, executor.py)."""
    op = REGISTRY.get(node.kind)
    return (
        (node.kind == "prim::Constant" or (op is not None and op.effect <= Effect.RAISES))
        and not node.blocks
        and not any(isinstance(v.type, TensorType) for v in list(node.inputs) + list(node.outputs))
    )


def nest_kernel_graph(nest: list[Node], captured: list, name: str) -> Graph:
    """``body(lo, hi, captured...)``: iterations [lo, hi) of the flattened nest, the innermost index varying
    fastest (so neighbouring GPU threads touch neighbouring elements), each index recovered from the flat one."""
    g = Graph(name)
    lo, hi = g.add_input(INT, "lo"), g.add_input(INT, "hi")
    value_map = {id(v): g.add_input(v.type, v.name) for v in captured}
    top = Builder.at_end(g.block)
    trips = top.op("aten::sub", [hi, lo], [INT], hints="trips").output
    true = top.constant(True)
    loop = top.op("prim::Loop", [trips, true], [], source=nest[0].source)
    inner = Builder.add_block(loop, [(INT, "t")])
    in_loop = Builder.at_end(inner)
    flat = in_loop.op("aten::add", [lo, inner.params[0]], [INT], hints="k").output
    for level in reversed(nest):
        n = value_map.get(id(level.inputs[0]))
        if level is nest[0]:
            value_map[id(level.blocks[0].params[0])] = flat
            break
        index = in_loop.op("aten::remainder", [flat, n], [INT], source=level.source).output
        value_map[id(level.blocks[0].params[0])] = index
        flat = in_loop.op("aten::floordiv", [flat, n], [INT], source=level.source).output
    for level, deeper in zip(nest, nest[1:]):  # the outer bodies' scalar code, before each inner loop
        for c in level.blocks[0].nodes:
            if c is not deeper:
                clone_node_before(c, inner, None, value_map)
    clone_nodes_into(nest[-1].blocks[0], inner, None, value_map)
    inner.add_return(true)
    none = top.op("prim::Constant", [], [NONE], {"value": None}).output
    g.block.add_return(none)
    return g


def add_parallel_loop(km, node: Node) -> ParallelKernel:
    kinds = parallel_plan(node)
    nest = loop_nest(node)
    captured = captured_values(node.blocks[0])
    for v in captured:
        if not (isinstance(v.type, TensorType) or v.type in SCALAR_PARAM):
            raise GpuUnsupported(f"a prange body reading a value of type {v.type} on the GPU")
    index = sum(1 for k in km.kernels if isinstance(k, ParallelKernel))
    kernel = ParallelKernel(f"{km.prefix}_prange{index}", node, captured, kinds, nest)
    graph = (
        nest_kernel_graph(nest, captured, f"{kernel.name}_body")
        if len(nest) > 1
        else kernel_graph(node, captured, f"{kernel.name}_body")
    )
    body = FunctionLowering(km.mod, graph)
    body.nogil = body.in_parallel_kernel = True
    body.lower()
    params = [I64]
    for v in captured:
        params += [I8P] + [I64] * (2 * v.type.rank) if isinstance(v.type, TensorType) else [SCALAR_PARAM[v.type]]
    if kinds:
        params.append(I8P)
    kernel.params = [PARAM_CTYPE[str(t)] for t in params]
    fn = km._kernel_function(kernel.name, params)
    _entry(km, fn, kernel, body)
    if kinds:
        kernel.finish = f"{kernel.name}_finish"
        finish_params = [I8P, I8P, I64]
        kernel.finish_params = [PARAM_CTYPE[str(t)] for t in finish_params]
        _finish(km, km._kernel_function(kernel.finish, finish_params), kernel)
    km.kernels.append(kernel)
    return kernel


def _entry(km, fn: ir.Function, kernel: ParallelKernel, body: FunctionLowering) -> None:
    low = FunctionLowering.into(km.mod, fn, kernel.node, nogil=True)
    b = low.b
    args = list(fn.args)
    trips, at, caps = args[0], 1, []
    for v in kernel.captured:
        if isinstance(v.type, TensorType):
            caps += [ir.Constant(I8P, None)] + args[at : at + 1 + 2 * v.type.rank]
            at += 1 + 2 * v.type.rank
        else:
            caps.append(b.trunc(args[at], ir.IntType(1)) if v.type == BOOL else args[at])
            at += 1
    params = kernel.node.blocks[0].params[1:]
    combines = [LoopReduction(km, low, kind, p.type) for kind, p in zip(kernel.kinds, params)]
    accs = [low.alloca(c.register) for c in combines]
    for acc, c in zip(accs, combines):
        b.store(c.identity(), acc)
    out = low.alloca(body.out_struct)
    start = b.zext(b.add(b.mul(special(b, "ctaid.x"), special(b, "ntid.x")), special(b, "tid.x")), I64)
    step = b.zext(b.mul(special(b, "nctaid.x"), special(b, "ntid.x")), I64)
    done = fn.append_basic_block("done")

    def iteration(i):
        code = b.call(body.function, [i, b.add(i, i64(1))] + caps + [b.load(a) for a in accs] + [out])
        failed = b.icmp_signed("!=", code, i32(0))
        with b.if_then(failed, likely=False):
            b.store(code, km.error)
        ok = fn.append_basic_block("iterated")
        b.cbranch(failed, done, ok)  # a failing thread stops (and still joins its block's combine)
        b.position_at_end(ok)
        for k, acc in enumerate(accs):
            b.store(b.load(b.gep(out, [i32(0), i32(k)], inbounds=True)), acc)

    grid_stride_loop(b, fn, start, step, trips, iteration, done)
    b.position_at_end(done)
    if combines:
        block = b.zext(special(b, "ctaid.x"), I64)
        partials = b.bitcast(args[-1], I64.as_pointer())
        for k, (acc, c) in enumerate(zip(accs, combines)):
            total = c.combine_block(b.load(acc))
            slot = b.gep(partials, [b.add(b.mul(block, i64(len(accs))), i64(k))])
            with b.if_then(b.icmp_unsigned("==", special(b, "tid.x"), i32(0))):
                b.store(c.to_bits(total), slot)
    b.ret_void()


def _finish(km, fn: ir.Function, kernel: ParallelKernel) -> None:
    """``finish(out, partials, blocks)``: each reduction's per-block results combined; out[k] (64 bits)."""
    low = FunctionLowering.into(km.mod, fn, kernel.node, nogil=True)
    b = low.b
    out, partials, count = fn.args
    params = kernel.node.blocks[0].params[1:]
    n = len(kernel.kinds)
    for k, (kind, p) in enumerate(zip(kernel.kinds, params)):
        c = LoopReduction(km, low, kind, p.type)
        acc = low.alloca(c.register)
        b.store(c.identity(), acc)
        done = fn.append_basic_block(f"accumulated{k}")

        def accumulate(i, c=c, acc=acc, k=k):
            bits = b.load(b.gep(b.bitcast(partials, I64.as_pointer()), [b.add(b.mul(i, i64(n)), i64(k))]))
            b.store(c.merge(b.load(acc), c.from_bits(bits)), acc)

        grid_stride_loop(
            b, fn, b.zext(special(b, "tid.x"), I64), b.zext(special(b, "ntid.x"), I64), count, accumulate, done
        )
        b.position_at_end(done)
        total = c.combine_block(b.load(acc))
        with b.if_then(b.icmp_unsigned("==", special(b, "tid.x"), i32(0))):
            b.store(c.to_bits(total), b.gep(b.bitcast(out, I64.as_pointer()), [i64(k)]))
    b.ret_void()


def check_device_code(llvm_text: str) -> None:
    """Refuse what a GPU cannot run: calls to host functions (array creation calls the host allocator)."""
    for name in re.findall(r'^declare [^@]*@"?([\w.$]+)"?\(', llvm_text, flags=re.M):
        if name.startswith(("llvm.", "__nv_")) or name in ("free", "malloc"):
            continue
        what = "creating arrays" if "alloc" in name else f"calling {name}"
        raise GpuUnsupported(f"{what} inside a prange body does not run on the GPU yet")


def combine_on_host(kind: str, t, before, total):
    """The value before the loop combined with the loop's result, as the CPU combines its chunks."""
    if kind == "add":
        return before + total
    if kind == "mul":
        return before * total
    better = total > before if kind == "max" else total < before
    return total if better else before


__all__ = [
    "IDENTITY",
    "ParallelKernel",
    "add_parallel_loop",
    "check_device_code",
    "combine_on_host",
    "gpu_parallel_loop",
]
