"""Grid groups as GPU kernels: LLVM IR for the NVPTX target (PTX through ptx.py).

A grid group (groups.py) is an element-wise chain, a chain ending in a full reduction, a multi-output group of
the fusion pass (several arrays, several reductions, or both), or a write into an operand. Its kernel is the
CPU lowering's per-element code (``FusedOps.fused_element_node``: the same operators, NumPy's casts and
roundings) inside a grid-stride loop instead of the CPU's loop nest; each element's value of every result is
stored (arrays) or fed to that result's per-thread accumulator (reductions):

    void kernel(<per stored result: i8* noalias out>, [i8* partials], i64 n, i32 mode, i64 shape[rank],
                [i64 out_strides[rank]: a write into an operand],
                <per array operand: i8* data, i64 strides[rank]>, <per scalar operand: i64 | double | i8>)

Every ``out`` is a new C-contiguous array of the group's shape (or, for a write, the destination operand with
its own strides); an operand's strides are in bytes, already broadcast to the group's shape by the host (0
along broadcast dimensions). Three loops share the element code, and the host picks one per launch (``mode``):

- VECTORS: every array operand C-contiguous in the group's shape, every pointer aligned to 4 elements (up to
  16 bytes), n < 2**31: four elements per thread and iteration, one vector load (``ld.global.v4``) per operand
  and one vector store per result;
- CONTIGUOUS: as above, but unaligned or with single-element operands broadcast: element i of each, 32-bit;
- STRIDED: anything else: the flat index unravelled into the group's index in 64-bit arithmetic.

Reductions (block_reduce.py): after the loop every block combines each accumulator in turn through the same
warp-shuffle and shared-memory tree and thread 0 stores the block's results at ``partials[block * R + r]``; a
one-block ``finish(out, partials, blocks, n)`` combines the blocks' results of each reduction in a fixed order
and stores the R scalars (64-bit slots) for one synchronous copy to the host.

Only what is new for the target lives here: the kernel's parameters, the special registers, the grid-stride
loop and the kernel annotation; math calls go to NVIDIA's libdevice (``__nv_exp``, ...), linked in by ptx.py.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

from llvmlite import ir

from ...ir.core import Graph, Node
from ...ir.types import BOOL, TensorType, decayed
from ..llvm.lowering.array_value import ELEM, kind_of, scalar_kind
from ..llvm.lowering.common import I8P, I32, I64, i64
from ..llvm.runtime.errors import PAYLOAD_SLOTS
from ..llvm.lowering.lower import FunctionLowering, ModuleLowering
from .block_reduce import BlockReduction, shared_slots
from .groups import REDUCE, STORE, GpuUnsupported, axis_reduction, grid_rank, grid_results, matrix_product
from .intrinsics import grid_stride_loop, i32, special
from .axis_reduce import add_axis_reduction
from .matmul import add_matrix_product
from .params import ELEM_BYTES, PARAM_CTYPE, SCALAR_PARAM
from .ptx import NVPTX
from ..llvm.runtime.text_builder import TextBuilder
from ..llvm.lowering import conversions, fused

STRIDED, CONTIGUOUS, VECTORS = 0, 1, 2  # the kernel's loops (its ``mode`` parameter)
LANES = 4
_COUNTER = itertools.count()
_COUNTER_LOCK = threading.Lock()


@dataclass
class Kernel:
    name: str
    node: Node  # the prim::FusionGroup
    arrays: list = field(default_factory=list)  # positions of the group's array operands
    scalars: list = field(default_factory=list)  # positions of its scalar operands
    params: list = field(default_factory=list)  # the parameters' ctypes types
    can_raise: bool = False
    results: list = field(default_factory=list)  # a grid group's (STORE, value) / (REDUCE, node), per output
    axis_reduction: Node | None = None  # the group is one reduction along an axis (axis_reduce.py)
    product: Node | None = None  # the group is one matrix product (matmul.py)
    into: int | None = None  # the group stores into this operand (``x += y``, ``x[a:b] = y``): no result
    finish: str | None = None
    finish_params: list = field(default_factory=list)

    @property
    def reductions(self) -> list[Node]:
        return [x for kind, x in self.results if kind == REDUCE]

    @property
    def stores(self) -> list[int]:
        """The positions of the results stored element by element (the group's array outputs)."""
        return [k for k, (kind, _) in enumerate(self.results) if kind == STORE]

    @property
    def uses_barriers(self) -> bool:
        return bool(self.reductions) or self.product is not None


class KernelModule:
    """An NVPTX module holding the kernels of a graph: one per kernel group (groups.py), one per prange loop."""

    def __init__(self, name: str):
        with _COUNTER_LOCK:
            self.prefix = f"scriptc_gpu{next(_COUNTER)}_{name}"
        self.mod = ModuleLowering(self.prefix, target=NVPTX)
        self.kernels: list[Kernel] = []
        # errors: the first thread that fails stores its code (and its numbers) here; the host reads them after
        # the launch and raises what the CPU would (a kernel returns, it cannot unwind to the host)
        module = self.mod.module
        self.error = ir.GlobalVariable(module, I32, self.error_symbol)
        self.error.initializer = ir.Constant(I32, 0)
        slots = ir.ArrayType(I64, PAYLOAD_SLOTS)
        self.payload = ir.GlobalVariable(module, slots, self.payload_symbol)
        self.payload.initializer = ir.Constant(slots, None)
        payload_fn = ir.Function(module, ir.FunctionType(I64.as_pointer(), []), self.mod.unique("payload"))
        payload_fn.linkage = "internal"
        pb = TextBuilder(payload_fn.append_basic_block())
        pb.ret(pb.gep(self.payload, [i64(0), i64(0)], inbounds=True))
        self.mod._decls["payload"] = payload_fn
        self._shared = {}

    def shared_slots(self, name: str = "shared", count: int | None = None) -> ir.GlobalVariable:
        """A shared-memory array of 64-bit slots of the module (made on first use): ``shared`` for block
        reductions, others for the matrix product's tiles."""
        if name not in self._shared:
            self._shared[name] = shared_slots(self.mod.module, f"{self.prefix}_{name}", count)
        return self._shared[name]

    @property
    def error_symbol(self) -> str:
        return f"{self.prefix}_error"

    @property
    def payload_symbol(self) -> str:
        return f"{self.prefix}_payload"

    def add(self, node: Node) -> Kernel:
        name = f"{self.prefix}_fusion{len(self.kernels)}"
        if axis_reduction(node) is not None:
            kernel = add_axis_reduction(self, Kernel(name, node, axis_reduction=axis_reduction(node)))
        elif matrix_product(node) is not None:
            kernel = add_matrix_product(self, Kernel(name, node, product=matrix_product(node)))
        else:
            kernel = self._add_grid_group(
                Kernel(name, node, results=grid_results(node) or [], into=node.attrs.get("into"))
            )
        self.kernels.append(kernel)
        return kernel

    def _add_grid_group(self, kernel: Kernel) -> Kernel:
        node = kernel.node
        if not kernel.results:
            raise GpuUnsupported("a fusion group of this kind does not run on the GPU yet")
        rank = grid_rank(node)
        pointers = len(kernel.stores) + bool(kernel.reductions)
        params = [I8P] * pointers + [I64, I32] + [I64] * (rank * (2 if kernel.into is not None else 1))
        for k, v in enumerate(node.inputs):
            if isinstance(v.type, TensorType):
                kernel.arrays.append(k)
                params += [I8P] + [I64] * rank
            elif decayed(v.type) in SCALAR_PARAM:  # (a NumPy scalar in its Python scalar's register)
                kernel.scalars.append(k)
                params.append(SCALAR_PARAM[decayed(v.type)])
            else:
                raise GpuUnsupported(f"a fusion group operand of type {v.type}")
        kernel.params = [PARAM_CTYPE[str(t)] for t in params]
        fn = self._kernel_function(kernel.name, params)
        kernel.can_raise = self._body(fn, kernel, node.attrs["subgraph"], rank)
        if kernel.reductions:
            kernel.finish = f"{kernel.name}_finish"
            finish_params = [I8P, I8P, I64, I64]
            kernel.finish_params = [PARAM_CTYPE[str(t)] for t in finish_params]
            self._finish(self._kernel_function(kernel.finish, finish_params), kernel)
        return kernel

    def _kernel_function(self, name: str, params: list) -> ir.Function:
        fn = ir.Function(self.mod.module, ir.FunctionType(ir.VoidType(), params), name)
        self.mod.module.add_named_metadata("nvvm.annotations", [fn, "kernel", ir.Constant(I32, 1)])
        return fn

    def _body(self, fn: ir.Function, kernel: Kernel, sub: Graph, rank: int) -> bool:
        """The kernel's code; True when it can raise (the host then reads the error flag after the launch)."""
        low = FunctionLowering.into(self.mod, fn, kernel.node, nogil=True)
        b = low.b
        args = list(fn.args)
        node, into = kernel.node, kernel.into
        stored = [
            (kernel.results[k][1], (node.inputs[into] if into is not None else node.outputs[k]).type.dtype)
            for k in kernel.stores
        ]
        outs = args[: len(stored)]
        at = len(stored)
        if kernel.reductions:
            partials = args[at]
            at += 1
        n, mode, shape = args[at], args[at + 1], args[at + 2 : at + 2 + rank]
        at += 2 + rank
        if into is None:
            for out in outs:  # new arrays: loads of the operands may move across their stores
                out.add_attribute("noalias")
        else:  # an operand's memory: x += y reads and writes each element in the same iteration
            out_strides = args[at : at + rank]
            at += rank
        operands = {}
        for k, v in enumerate(node.inputs):
            if k in kernel.arrays:
                operands[k] = (args[at], args[at + 1 : at + 1 + rank])
                at += 1 + rank
            else:
                x = args[at]
                low.env[id(v)] = [b.trunc(x, ir.IntType(1)) if v.type == BOOL else x]
                at += 1
        reductions = kernel.reductions
        skipped = {id(r) for r in reductions}
        scalars = fused.fused_scalars(low, node, sub, None)  # reductions read no scalars: none is skipped
        start = b.add(b.mul(special(b, "ctaid.x"), special(b, "ntid.x")), special(b, "tid.x"))
        step = b.mul(special(b, "nctaid.x"), special(b, "ntid.x"))
        combines = [BlockReduction(self, low, r) for r in reductions]
        accs = [low.alloca(c.register) for c in combines]
        for c, acc in zip(combines, accs):
            b.store(c.identity(), acc)

        def value_of(env, v):
            """A result's (kind, register) for one element; a scalar operand returned as it is (x.fill(v))."""
            if id(v) in env:
                return env[id(v)]
            return scalar_kind(v.type), low.env[id(node.inputs[sub.inputs.index(v)])][0]

        def sink(i, env, index=None):
            for out, (v, dtype) in zip(outs, stored):
                kind, x = value_of(env, v)
                if index is None or into is None:
                    ptr = _element_ptr(b, out, dtype, i)
                else:  # the strided loop into an operand: its own strides
                    offset = i64(0)
                    for x_d, st in zip(index, out_strides):
                        offset = b.add(offset, b.mul(x_d, st))
                    ptr = b.bitcast(b.gep(out, [offset]), ELEM[dtype].as_pointer())
                low.store_element(ptr, x, kind, dtype)
            for r, c, acc in zip(reductions, combines, accs):
                b.store(c.step(b.load(acc), value_of(env, r.inputs[0])), acc)

        def sink_lanes(j, envs):
            for out, (v, dtype) in zip(outs, stored):
                vec = ir.Constant(ir.VectorType(ELEM[dtype], LANES), None)
                for lane, env in enumerate(envs):
                    kind, x = value_of(env, v)
                    vec = b.insert_element(vec, conversions.to_memory(low, x, kind, dtype), i32(lane))
                ptr = _element_ptr(b, out, dtype, b.mul(j, i32(LANES)))
                b.store(vec, b.bitcast(ptr, vec.type.as_pointer()), align=_align(dtype))
            for r, c, acc in zip(reductions, combines, accs):
                for env in envs:  # the lanes in element order
                    b.store(c.step(b.load(acc), value_of(env, r.inputs[0])), acc)

        def element(values):
            """Every value of the group's body for one element (``values``: operand position -> (kind,
            register)); the reductions are the accumulators' business."""
            env = {id(p): values[k] for k, p in enumerate(sub.inputs) if k in operands}
            for member in sub.nodes:
                if member.kind != "prim::Constant" and id(member) not in skipped:
                    fused.fused_element_node(low, member, env, scalars)
            return env

        def load(ptr, k):
            dtype = node.inputs[k].type.dtype
            return kind_of(dtype), low.load_element(ptr, dtype)

        def general(i):
            """Any strides: the flat index unravelled into the group's index, 64-bit."""
            index, rest = [], i
            for d in reversed(range(rank)):
                index.append(b.srem(rest, shape[d]))
                rest = b.sdiv(rest, shape[d])
            index.reverse()
            values = {}
            for k, (data, strides) in operands.items():
                offset = i64(0)
                for x, st in zip(index, strides):
                    offset = b.add(offset, b.mul(x, st))
                values[k] = load(b.bitcast(b.gep(data, [offset]), ELEM[node.inputs[k].type.dtype].as_pointer()), k)
            sink(i, element(values), index)

        def unit(k):
            """1 for an operand read element by element, 0 for a single broadcast element (the host's last
            stride, in the contiguous loops)."""
            return b.zext(b.icmp_signed("!=", operands[k][1][-1], i64(0)), I32)

        def contiguous(i):
            """Element i of every operand (C-contiguous in the group's shape, or a single element): 32-bit."""
            values = {
                k: load(_element_ptr(b, data, node.inputs[k].type.dtype, b.mul(i, unit(k))), k)
                for k, (data, _) in operands.items()
            }
            sink(i, element(values))

        def vectors(j):
            """Elements 4j .. 4j+3 of every operand (all C-contiguous in the group's shape, pointers aligned:
            the host checked): one vector load per operand, the element code per lane."""
            lanes = [{} for _ in range(LANES)]
            for k, (data, _) in operands.items():
                dtype = node.inputs[k].type.dtype
                ptr = _element_ptr(b, data, dtype, b.mul(j, i32(LANES)))
                vec = b.load(b.bitcast(ptr, ir.VectorType(ELEM[dtype], LANES).as_pointer()), align=_align(dtype))
                for lane in range(LANES):
                    lanes[lane][k] = (
                        kind_of(dtype),
                        conversions.from_memory(low, b.extract_element(vec, i32(lane)), dtype),
                    )
            sink_lanes(j, [element(values) for values in lanes])

        pick = fn.append_basic_block("pick")
        b.branch(pick)
        b.position_at_end(pick)
        done = fn.append_basic_block("done")
        if rank:
            strided_entry = fn.append_basic_block("strided")
            flat_entry, vector_entry = fn.append_basic_block("contiguous"), fn.append_basic_block("vectors")
            switch = b.switch(mode, strided_entry)
            switch.add_case(ir.Constant(I32, CONTIGUOUS), flat_entry)
            switch.add_case(ir.Constant(I32, VECTORS), vector_entry)
            b.position_at_end(vector_entry)
            n32 = b.trunc(n, I32)
            whole = b.lshr(n32, i32(2))
            tail = fn.append_basic_block("tail")
            grid_stride_loop(b, fn, start, step, whole, vectors, tail)
            b.position_at_end(tail)
            grid_stride_loop(b, fn, b.add(b.shl(whole, i32(2)), start), step, n32, contiguous, done)
            b.position_at_end(flat_entry)
            grid_stride_loop(b, fn, start, step, b.trunc(n, I32), contiguous, done)
            b.position_at_end(strided_entry)
        grid_stride_loop(b, fn, b.zext(start, I64), b.zext(step, I64), n, general, done)
        b.position_at_end(done)
        # every thread reaches the blocks' combines, also after a raise (they meet at barriers)
        for r, (c, acc) in enumerate(zip(combines, accs)):
            c.store_block_result(b.load(acc), partials, r, len(combines))
        b.ret_void()
        if low._unwind_bb is None:
            return False
        b.position_at_end(low._unwind_bb)  # a raise: record it for the host; stop this thread's elements
        b.store(low._status, self.error)
        b.branch(done) if reductions else b.ret_void()
        return True

    def _finish(self, fn: ir.Function, kernel: Kernel) -> None:
        """The second pass of a group's reductions, one block: ``finish(out, partials, count, n)`` combines, for
        each reduction r, the ``count`` per-block results ``partials[block * R + r]`` in a fixed order and stores
        its scalar (a mean divided by n) in the 64-bit slot ``out[r]``."""
        low = FunctionLowering.into(self.mod, fn, kernel.node, nogil=True)
        b = low.b
        out, partials, count, n = fn.args
        reductions = kernel.reductions
        for r, reduction in enumerate(reductions):
            combine = BlockReduction(self, low, reduction)
            acc = low.alloca(combine.register)
            b.store(combine.identity(), acc)
            done = fn.append_basic_block(f"accumulated{r}")

            def accumulate(i, combine=combine, acc=acc, r=r):
                slot = b.add(b.mul(i, i64(len(reductions))), i64(r))
                bits = b.load(b.gep(b.bitcast(partials, I64.as_pointer()), [slot]))
                b.store(combine.merge(b.load(acc), combine.from_bits(bits)), acc)

            grid_stride_loop(
                b, fn, b.zext(special(b, "tid.x"), I64), b.zext(special(b, "ntid.x"), I64), count, accumulate, done
            )
            b.position_at_end(done)
            combine.store_result(b.load(acc), b.gep(out, [i64(8 * r)]), n, reduction.output.type)
        b.ret_void()

    def llvm_ir(self) -> str:
        """The kernels' LLVM IR (math calls go to libdevice's functions, linked in by ptx.py)."""
        return str(self.mod.module)


def _align(dtype: str) -> int:
    """The alignment the host guarantees for a vector of LANES elements of ``dtype``."""
    return min(16, LANES * ELEM_BYTES[dtype])


def _element_ptr(b: ir.IRBuilder, data, dtype: str, index):
    return b.gep(b.bitcast(data, ELEM[dtype].as_pointer()), [index])
