"""Element-wise fusion groups as GPU kernels: LLVM IR for the NVPTX target, PTX through llvmlite.

A kernel is the CPU lowering's per-element code (``FusedOps.fused_element_node``: the same operators, NumPy's
casts and roundings) inside a grid-stride loop instead of the CPU's loop nest:

    void kernel(i8* noalias out, i64 n, i32 mode, i64 out_shape[rank],
                <per array operand: i8* data, i64 strides[rank]>, <per scalar operand: i64 | double | i8>)

``out`` is a new C-contiguous array of the group's result shape; an operand's strides are in bytes, already
broadcast to the result's shape by the host (0 along broadcast dimensions). Three loops share the element code,
and the host picks one per launch (``mode``):

- VECTORS: every array operand C-contiguous in the result's shape, every pointer aligned to 4 elements (up to
  16 bytes), n < 2**31: four elements per thread and iteration, one vector load (``ld.global.v4``) per operand;
- CONTIGUOUS: as above, but unaligned or with single-element operands broadcast: element i of each, 32-bit;
- STRIDED: anything else: the flat index unravelled into the result's index in 64-bit arithmetic.
 Math calls go to NVIDIA's libdevice
(``__nv_exp``, ...), linked into the module.

Only what is new for the target lives here: the kernel's parameters, the special registers, the grid-stride
loop, the kernel annotation, libdevice, and the PTX target machine.
"""
from __future__ import annotations

import ctypes
import itertools
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from llvmlite import ir

from ...ir.core import Graph, Node
from ...ir.registry import REGISTRY
from ...ir.types import BOOL, FLOAT, INT, TensorType
from ..llvm.arrays import ELEM, kind_of, scalar_kind
from ..llvm.common import F64, I8, I8P, I32, I64, i64
from ..llvm.engine import LIBM_PREFIX
from ..llvm.errors import PAYLOAD_SLOTS
from ..llvm.lower import FunctionLowering, ModuleLowering
from .block_reduce import BlockReduction, shared_slots
from .intrinsics import grid_stride_loop, i32, special

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
DEFAULT_ARCH = "sm_80"
PTX_VERSION = "+ptx78"
SCALAR_PARAM = {INT: I64, FLOAT: F64, BOOL: I8}
PARAM_CTYPE = {"i8*": ctypes.c_void_p, "i64": ctypes.c_int64, "i32": ctypes.c_int32, "double": ctypes.c_double,
               "i8": ctypes.c_int8}
STRIDED, CONTIGUOUS, VECTORS = 0, 1, 2      # the kernel's loops (its ``mode`` parameter)
LANES = 4
ELEM_BYTES = {"float64": 8, "float32": 4, "float16": 2, "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
              "uint32": 4, "bool": 1}
_COUNTER = itertools.count()
_COUNTER_LOCK = threading.Lock()


class GpuUnsupported(Exception):
    """A node this version cannot run on the GPU (says which and why)."""


@dataclass
class Kernel:
    name: str
    node: Node                      # the prim::FusionGroup
    arrays: list = field(default_factory=list)     # positions of the group's array operands
    scalars: list = field(default_factory=list)    # positions of its scalar operands
    params: list = field(default_factory=list)     # the parameters' ctypes types
    can_raise: bool = False
    reduction: Node | None = None   # the group's final full reduction: per-block results, then ``finish``
    axis_reduction: Node | None = None      # the group is one reduction along an axis (axis_reduce.py)
    into: int | None = None         # the group stores into this operand (``x += y``, ``x[a:b] = y``): no result
    finish: str | None = None
    finish_params: list = field(default_factory=list)

    @property
    def uses_barriers(self) -> bool:
        return self.reduction is not None


GPU_REDUCTIONS = {"aten::sum", "aten::mean", "aten::prod", "aten::max", "aten::min", "aten::any", "aten::all"}


def gpu_groups(graph: Graph) -> list[Node]:
    """The fusion groups of a graph (and of its blocks) that run as kernels, in program order."""
    return [n for n in graph.walk() if n.kind == "prim::FusionGroup" and runs_on_gpu(n)]


def runs_on_gpu(node: Node) -> bool:
    """An element-wise group (with a result, or storing into its first operand), one ending in a full reduction
    (a scalar result), or one reduction along an axis."""
    return element_wise(node) or final_reduction(node) is not None or axis_reduction(node) is not None


def element_wise(node: Node) -> bool:
    sub = node.attrs["subgraph"]
    if len(sub.outputs) != 1:
        return False
    root = sub.outputs[0].node       # None: the group copies an operand
    if root is not None and REGISTRY[root.kind].extra.get("reduction"):
        return False
    t = node.inputs[node.attrs["into"]].type if "into" in node.attrs else node.output.type
    return isinstance(t, TensorType) and t.rank is not None


def axis_reduction(node: Node) -> Node | None:
    """The group's reduction along an axis (``np.sum(x, axis=1)``, ...), when that is all the group is."""
    sub = node.attrs["subgraph"]
    root = sub.outputs[0].node if len(sub.outputs) == 1 else None
    if root is None or root.kind not in GPU_REDUCTIONS or root.attrs.get("axis") is None or len(sub.nodes) != 1:
        return None
    return root if isinstance(root.inputs[0].type, TensorType) and root.inputs[0].type.rank else None


def final_reduction(node: Node) -> Node | None:
    """The full reduction (sum, mean, prod, max, min, any, all) a single-result group ends in, or None."""
    sub = node.attrs["subgraph"]
    if len(sub.outputs) != 1 or sub.outputs[0].node is None or not node.outputs:
        return None
    root = sub.outputs[0].node
    if root.kind not in GPU_REDUCTIONS or isinstance(node.output.type, TensorType):
        return None
    src = root.inputs[0].type
    return root if isinstance(src, TensorType) and src.rank is not None else None


class KernelModule:
    """An NVPTX module holding one kernel per element-wise fusion group of a graph."""

    def __init__(self, name: str):
        with _COUNTER_LOCK:
            self.prefix = f"scriptc_gpu{next(_COUNTER)}_{name}"
        self.mod = ModuleLowering(self.prefix, standalone=True)
        self.mod.module.triple = TRIPLE
        self.mod.module.data_layout = DATA_LAYOUT
        self.mod.single_precision_math = True
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
        pb = ir.IRBuilder(payload_fn.append_basic_block())
        pb.ret(pb.gep(self.payload, [i64(0), i64(0)], inbounds=True))
        self.mod._decls["payload"] = payload_fn
        self._shared = None

    def shared_slots(self) -> ir.GlobalVariable:
        """The module's shared-memory array for block reductions (made on first use)."""
        if self._shared is None:
            self._shared = shared_slots(self.mod.module, f"{self.prefix}_shared")
        return self._shared

    @property
    def error_symbol(self) -> str:
        return f"{self.prefix}_error"

    @property
    def payload_symbol(self) -> str:
        return f"{self.prefix}_payload"

    def add(self, node: Node) -> Kernel:
        sub = node.attrs["subgraph"]
        name = f"{self.prefix}_fusion{len(self.kernels)}"
        if axis_reduction(node) is not None:
            from .axis_reduce import add_axis_reduction
            kernel = add_axis_reduction(self, Kernel(name, node, axis_reduction=axis_reduction(node)))
            self.kernels.append(kernel)
            return kernel
        reduction = final_reduction(node)
        into = node.attrs.get("into")
        result = reduction.inputs[0].type if reduction is not None else \
            node.inputs[into].type if into is not None else node.output.type
        rank = result.rank
        kernel = Kernel(name, node, reduction=reduction, into=into)
        params = [I8P, I64, I32] + [I64] * (rank * (2 if into is not None else 1))   # into: the out strides too
        for k, v in enumerate(node.inputs):
            if isinstance(v.type, TensorType):
                kernel.arrays.append(k)
                params += [I8P] + [I64] * rank
            elif v.type in SCALAR_PARAM:
                kernel.scalars.append(k)
                params.append(SCALAR_PARAM[v.type])
            else:
                raise GpuUnsupported(f"a fusion group operand of type {v.type}")
        kernel.params = [PARAM_CTYPE[str(t)] for t in params]
        fn = self._kernel_function(kernel.name, params)
        kernel.can_raise = self._body(fn, kernel, sub, rank)
        if reduction is not None:
            kernel.finish = f"{kernel.name}_finish"
            finish_params = [I8P, I8P, I64, I64]
            kernel.finish_params = [PARAM_CTYPE[str(t)] for t in finish_params]
            self._finish(self._kernel_function(kernel.finish, finish_params), kernel)
        self.kernels.append(kernel)
        return kernel

    def _kernel_function(self, name: str, params: list) -> ir.Function:
        fn = ir.Function(self.mod.module, ir.FunctionType(ir.VoidType(), params), name)
        self.mod.module.add_named_metadata("nvvm.annotations", [fn, "kernel", ir.Constant(I32, 1)])
        return fn

    def _lowering(self, fn: ir.Function, node: Node) -> FunctionLowering:
        """The CPU lowering's per-element machinery, writing into ``fn``."""
        low = FunctionLowering.__new__(FunctionLowering)
        low.mod, low.function, low.node, low.env = self.mod, fn, node, {}
        low.nogil = True
        low.init_unwind()
        low.entry_block = fn.append_basic_block("entry")
        low.b = ir.IRBuilder(low.entry_block)
        return low

    def _body(self, fn: ir.Function, kernel: Kernel, sub: Graph, rank: int) -> bool:
        """The kernel's code; True when it can raise (the host then reads the error flag after the launch)."""
        low = self._lowering(fn, kernel.node)
        b = low.b
        args = list(fn.args)
        out_data, n, mode, out_shape = args[0], args[1], args[2], args[3:3 + rank]
        at = 3 + rank
        into = kernel.into
        if into is None:
            out_data.add_attribute("noalias")      # a new array: loads of the operands may move across its stores
        else:       # an operand's memory: x += y reads and writes each element in the same iteration
            out_strides = args[at:at + rank]
            at += rank
        operands = {}
        node = kernel.node
        for k, v in enumerate(node.inputs):
            if k in kernel.arrays:
                operands[k] = (args[at], args[at + 1:at + 1 + rank])
                at += 1 + rank
            else:
                x = args[at]
                low.env[id(v)] = [b.trunc(x, ir.IntType(1)) if v.type == BOOL else x]
                at += 1
        reduction = kernel.reduction
        scalars = low.fused_scalars(node, sub, reduction)
        start = b.add(b.mul(special(b, "ctaid.x"), special(b, "ntid.x")), special(b, "tid.x"))
        step = b.mul(special(b, "nctaid.x"), special(b, "ntid.x"))
        value = reduction.inputs[0] if reduction is not None else sub.outputs[0]
        if reduction is None:
            out_dtype = (node.inputs[into] if into is not None else node.output).type.dtype

            def sink(i, result, index=None):
                kind, x = result
                if index is None or into is None:
                    ptr = _element_ptr(b, out_data, out_dtype, i)
                else:               # the strided loop into an operand: its own strides
                    offset = i64(0)
                    for x_d, st in zip(index, out_strides):
                        offset = b.add(offset, b.mul(x_d, st))
                    ptr = b.bitcast(b.gep(out_data, [offset]), ELEM[out_dtype].as_pointer())
                low.store_element(ptr, x, kind, out_dtype)

            def sink_lanes(j, results):
                out = ir.Constant(ir.VectorType(ELEM[out_dtype], LANES), None)
                for lane, (kind, x) in enumerate(results):
                    out = b.insert_element(out, low.to_memory(x, kind, out_dtype), i32(lane))
                ptr = _element_ptr(b, out_data, out_dtype, b.mul(j, i32(LANES)))
                b.store(out, b.bitcast(ptr, out.type.as_pointer()), align=_align(out_dtype))
        else:
            combine = BlockReduction(self, low, reduction)
            acc = low.alloca(combine.register)
            b.store(combine.identity(), acc)

            def sink(i, result, index=None):
                b.store(combine.step(b.load(acc), result), acc)

            def sink_lanes(j, results):
                for result in results:
                    sink(None, result)

        def element(values):
            """The group's value for one element: ``values`` maps operand positions to (kind, register)."""
            env = {id(p): values[k] for k, p in enumerate(sub.inputs) if k in operands}
            for member in sub.nodes:
                if member.kind != "prim::Constant" and member is not reduction:
                    low.fused_element_node(member, env, scalars)
            if value.node is None and id(value) not in env:      # a copy of a scalar operand (x.fill(v))
                return scalar_kind(value.type), low.env[id(node.inputs[sub.inputs.index(value)])][0]
            return env[id(value)]

        def load(ptr, k):
            dtype = node.inputs[k].type.dtype
            return kind_of(dtype), low.load_element(ptr, dtype)

        def general(i):
            """Any strides: the flat index unravelled into the result's index, 64-bit."""
            index, rest = [], i
            for d in reversed(range(rank)):
                index.append(b.srem(rest, out_shape[d]))
                rest = b.sdiv(rest, out_shape[d])
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
            """Element i of every operand (C-contiguous in the result's shape, or a single element): 32-bit."""
            values = {k: load(_element_ptr(b, data, node.inputs[k].type.dtype, b.mul(i, unit(k))), k)
                      for k, (data, _) in operands.items()}
            sink(i, element(values))

        def vectors(j):
            """Elements 4j .. 4j+3 of every operand (all C-contiguous in the result's shape, pointers aligned:
            the host checked): one vector load per operand, the element code per lane."""
            lanes = [{} for _ in range(LANES)]
            for k, (data, _) in operands.items():
                dtype = node.inputs[k].type.dtype
                ptr = _element_ptr(b, data, dtype, b.mul(j, i32(LANES)))
                vec = b.load(b.bitcast(ptr, ir.VectorType(ELEM[dtype], LANES).as_pointer()), align=_align(dtype))
                for lane in range(LANES):
                    lanes[lane][k] = (kind_of(dtype), low.from_memory(b.extract_element(vec, i32(lane)), dtype))
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
        if reduction is not None:     # every thread reaches the block's combine, also after a raise (barriers)
            combine.store_block_result(b.load(acc), out_data)
        b.ret_void()
        if low._unwind_bb is None:
            return False
        b.position_at_end(low._unwind_bb)       # a raise: record it for the host; stop this thread's elements
        b.store(low._status, self.error)
        b.branch(done) if reduction is not None else b.ret_void()
        return True

    def _finish(self, fn: ir.Function, kernel: Kernel) -> None:
        """The second pass of a reduction, one block: ``finish(out, partials, count, n)`` combines the ``count``
        per-block results in a fixed order and stores the group's scalar result (a mean divides by n)."""
        low = self._lowering(fn, kernel.node)
        b = low.b
        out, partials, count, n = fn.args
        combine = BlockReduction(self, low, kernel.reduction)
        acc = low.alloca(combine.register)
        b.store(combine.identity(), acc)
        done = fn.append_basic_block("done")

        def accumulate(i):
            bits = b.load(b.gep(b.bitcast(partials, I64.as_pointer()), [i]))
            b.store(combine.merge(b.load(acc), combine.from_bits(bits)), acc)
        grid_stride_loop(b, fn, b.zext(special(b, "tid.x"), I64), b.zext(special(b, "ntid.x"), I64), count,
                          accumulate, done)
        b.position_at_end(done)
        combine.store_result(b.load(acc), out, n, kernel.node.output.type)
        b.ret_void()

    def llvm_ir(self) -> str:
        """The kernels' LLVM IR, math calls renamed to libdevice's functions."""
        text = str(self.mod.module)
        return re.sub(r'@"' + re.escape(LIBM_PREFIX) + r'(\w+)"', r"@__nv_\1", text)



def _align(dtype: str) -> int:
    """The alignment the host guarantees for a vector of LANES elements of ``dtype``."""
    return min(16, LANES * ELEM_BYTES[dtype])


def _element_ptr(b: ir.IRBuilder, data, dtype: str, index):
    return b.gep(b.bitcast(data, ELEM[dtype].as_pointer()), [index])


# -- PTX -----------------------------------------------------------------------------------------------------

def libdevice_path() -> Path | None:
    """libdevice's bitcode: the nvidia-nvvm (or nvidia-cuda-nvcc) package, ``CUDA_HOME``, or the system toolkit."""
    candidates = []
    try:
        import nvidia  # type: ignore  # the nvidia-* wheels share this namespace package
        for root in getattr(nvidia, "__path__", []):
            candidates += sorted(Path(root).glob("*/nvvm/libdevice/libdevice*.bc"))
            candidates += sorted(Path(root).glob("nvvm/libdevice/libdevice*.bc"))
    except ImportError:
        pass
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates += sorted(Path(home).glob("nvvm/libdevice/libdevice*.bc"))
    return next((c for c in candidates if c.is_file()), None)


def ptxas_path() -> str | None:
    """NVIDIA's PTX assembler: on the PATH, or from the nvidia-cuda-nvcc package (the test extras install it)."""
    import shutil
    found = shutil.which("ptxas")
    if found:
        return found
    try:
        import nvidia  # type: ignore
    except ImportError:
        return None
    candidates = [p for root in getattr(nvidia, "__path__", []) for p in sorted(Path(root).glob("*/bin/ptxas"))]
    return str(candidates[0]) if candidates else None


def compile_ptx(llvm_text: str, arch: str = DEFAULT_ARCH) -> str:
    """PTX for ``arch`` from an NVPTX module's IR, libdevice linked in where the code calls it."""
    import llvmlite.binding as llvm
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    mod = llvm.parse_assembly(llvm_text)
    mod.verify()
    if "@__nv_" in llvm_text:
        path = libdevice_path()
        if path is None:
            raise GpuUnsupported("math functions on the GPU need NVIDIA's libdevice: pip install nvidia-nvvm "
                                 "(or set CUDA_HOME to a CUDA toolkit)")
        libdevice = llvm.parse_bitcode(path.read_bytes())
        libdevice.triple, libdevice.data_layout = TRIPLE, DATA_LAYOUT
        mod.link_in(libdevice)
    kernels = {line.split("@", 1)[1].split("(", 1)[0].strip('"')
               for line in llvm_text.splitlines() if line.startswith("define void @")}
    for f in mod.functions:      # only the kernels stay visible: unused libdevice functions go away
        if not f.is_declaration and f.name not in kernels:
            f.linkage = "internal"
    tm = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, features=PTX_VERSION, opt=3)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)


def ptx_for_graph(graph: Graph, arch: str = DEFAULT_ARCH) -> tuple[str, list[Kernel]]:
    """PTX with one ``.entry`` per element-wise fusion group of an optimized graph (two for a group ending in a
    reduction: the per-block pass and ``_finish``), and the kernels."""
    km = KernelModule(graph.name)
    for node in gpu_groups(graph):
        km.add(node)
    if not km.kernels:
        return "", []
    return compile_ptx(km.llvm_ir(), arch), km.kernels
