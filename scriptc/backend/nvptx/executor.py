"""Running a graph whose array arguments are device arrays: host control flow on the CPU, array operators as
kernels.

The host side walks the optimized graph as the reference interpreter does (loops, ifs, scalar code, prints).
Every ``prim::FusionGroup`` whose operands are device arrays is launched as its kernel (the fusion pass made the
element-wise chains and multi-output groups, ``device_groups.py`` a group of each remaining full or axis
reduction, matrix product, copy and write into an array; groups.py says which kernel each is); prange loops are
kernels too. Array creation gives device arrays; views (rows, slices, ``.T``) share device memory. Reading a
scalar from a device array (``x[i]``, a reduction's or a vector product's result) is a synchronous copy; reading
its shape copies nothing; printing a device array copies it, as documented host work. Any other operator or
group on a device array is refused (``GpuUnsupported``, naming the operator and the line) rather than run on the
host behind the user's back: the only whole-array copies to the host are the prints'.
"""

from __future__ import annotations

import numpy as np

from ...ir.clone import clone_graph
from ...ir.core import Graph
from ...ir.registry import lookup
from ...ir.types import BOOL, FLOAT, NumpyScalarType, TensorType
from ...ops.interpreter import Interpreter
from ..llvm.runtime.errors import ERROR_TABLE
from ..llvm.lowering.parallel import captured_values
from .codegen import CONTIGUOUS, STRIDED, VECTORS, GpuUnsupported, _align
from .device import DeviceArray, launch_config
from .groups import describe, runs_on_gpu
from .matmul import launch_product
from .prange import combine_on_host, gpu_parallel_loop
from .program import Kernels

HOST_SAFE = {
    "aten::size",
    "aten::len",
    "aten::dim",
    "aten::numel",
    "prim::TupleIndex",
    "prim::TupleConstruct",
    "prim::TupleUnpack",
    "prim::Constant",
}
SCALAR_READS = {"aten::getitem"}
SCALAR_WRITES = {"aten::setitem"}  # one element at integer indices: a synchronous copy to the device
TEXT = {"prim::Print", "aten::format"}  # device arrays printed as the host prints them: a synchronous copy
VIEWS = {"aten::select", "aten::slice", "aten::numpy_T", "aten::reshape"}  # shape and strides only: no copy
ON_THE_GPU = (
    "(element-wise expressions and multi-output groups, full and axis reductions, matrix products, copies, "
    "writes into arrays and prange loops do; copy_to_host() for the rest)"
)


class GpuProgram:
    """The kernels of one optimized graph (``program.py``), compiled for the device (or the emulator)."""

    def __init__(self, graph: Graph, device):
        self.graph = graph
        self.device = device
        kernels = Kernels(graph)
        self.km, self.kernels, self.loops = kernels.module, kernels.groups, kernels.loops
        self.module = device.load(self.km) if kernels else None

    def run(self, args):
        return _Executor(self).run(self.graph, args)


def mark_devices(graph: Graph, device_inputs: list[bool]) -> Graph:
    """A copy of a GPU signature's graph showing where each node runs: kernels carry ``device="cuda"``, a scalar
    read of a device array ``copy="device_to_host"`` (synchronous); every other node runs on the host."""
    g = clone_graph(graph)
    on_device = {id(v) for v, d in zip(g.inputs, device_inputs) if d}
    in_kernel = set()  # the bodies of prange loops run on the device: nothing in them is copied
    for node in g.walk():
        if id(node) in in_kernel:
            continue
        if node.kind == "prim::FusionGroup" and runs_on_gpu(node) and any(id(v) in on_device for v in node.inputs):
            node.attrs["device"] = "cuda"
            arrays = [out for out in node.outputs if isinstance(out.type, TensorType)]
            if len(arrays) < len(node.outputs):  # scalars for the host: copied back after the kernels
                node.attrs["copy"] = "device_to_host"
            on_device.update(id(out) for out in arrays)
        elif node.kind in SCALAR_READS | TEXT and any(id(v) in on_device for v in node.inputs):
            node.attrs["copy"] = "device_to_host"
        elif node.kind in SCALAR_WRITES and id(node.inputs[0]) in on_device:
            node.attrs["copy"] = "host_to_device"
        elif node.kind in CREATION:
            node.attrs["device"] = "cuda"
            on_device.add(id(node.output))
        elif node.kind in VIEWS and id(node.inputs[0]) in on_device:
            on_device.add(id(node.output))
        elif gpu_parallel_loop(node) and any(id(v) in on_device for v in captured_values(node.blocks[0])):
            node.attrs["device"] = "cuda"
            in_kernel.update(id(n) for n in node.blocks[0].walk())
        elif node.kind in ("prim::Loop", "prim::If"):
            for block in node.blocks:  # carried device arrays stay on the device
                for p, v in zip(block.params[1:] if node.kind == "prim::Loop" else [], node.inputs[2:]):
                    if id(v) in on_device:
                        on_device.add(id(p))
            for out, v in zip(node.outputs, node.inputs[2:] if node.kind == "prim::Loop" else []):
                if id(v) in on_device:
                    on_device.add(id(out))
    return g


class _Executor(Interpreter):
    def __init__(self, program: GpuProgram):
        super().__init__()
        self.program = program
        self._impls = _DeviceImpls(program.device)

    def run_loop(self, node, inputs, env):
        kernel = self.program.loops.get(id(node))
        if kernel is None or not any(_is_device(env.get(id(v))) for v in kernel.captured):
            return super().run_loop(node, inputs, env)
        return self.launch_loop(kernel, node, inputs, env)

    def launch_loop(self, kernel, node, inputs, env):
        """A prange loop as a kernel, one iteration per thread; its reductions combined on the device, then with
        the values before the loop on the host."""
        trips, _, *before = inputs
        if trips <= 0:
            return list(before)
        for inner in kernel.nest[1:]:  # a nest: the product of its trip counts (computed outside it)
            trips *= max(env[id(inner.inputs[0])], 0)
        if trips == 0:  # only the outer bodies' scalar code runs (and may raise): the host runs it
            return super().run_loop(node, inputs, env)
        device, module = self.program.device, self.program.module
        args = [trips]
        for v in kernel.captured:
            x = env[id(v)]
            if isinstance(v.type, TensorType):
                if not _is_device(x):
                    raise GpuUnsupported(
                        f"the prange loop at {node.source.short()} reads host and device arrays: "
                        "move them all to the device"
                    )
                args += [x.pointer, *x.shape, *x.strides]
            else:
                args.append(int(x) if v.type == BOOL else x)
        threads, max_blocks = launch_config()
        blocks = device.blocks(trips, threads, max_blocks)
        n = len(kernel.kinds)
        partials = device.allocate(8 * blocks * n) if n else None
        device.launch(module, kernel, blocks, threads, args + ([partials.pointer] if n else []))
        code, payload = module.take_error()
        if code:
            raise ERROR_TABLE[code].make(payload)
        if not n:
            return []
        out = device.allocate(8 * n)
        device.launch(module, kernel, 1, threads, [out.pointer, partials.pointer, blocks], finish=True)
        totals = np.empty(n, np.int64)
        device.copy_to_host(totals, out.pointer)
        params = node.blocks[0].params[1:]
        return [
            combine_on_host(
                kind, p.type, x0, float(totals[k : k + 1].view(np.float64)[0]) if p.type == FLOAT else int(totals[k])
            )
            for k, (kind, p, x0) in enumerate(zip(kernel.kinds, params, before))
        ]

    def run_block(self, block, env):
        for node in block.nodes:
            if (
                node.kind not in ("prim::FusionGroup", "prim::Loop", "prim::If")
                and node.kind not in HOST_SAFE
                and node.kind not in CREATION | VIEWS | TEXT
            ):
                on_device = [v for v in node.inputs if _is_device(env.get(id(v)))]
                if (
                    on_device
                    and not (node.kind in SCALAR_READS and not isinstance(node.output.type, TensorType))
                    and not (node.kind in SCALAR_WRITES and not isinstance(node.inputs[-1].type, TensorType))
                ):
                    where = f" at {node.source.short()}" if node.source is not None else ""
                    raise GpuUnsupported(
                        f"{node.kind}{where} on a device array does not run on the GPU yet {ON_THE_GPU}"
                    )
        return super().run_block(block, env)

    def run_fusion_group(self, node, inputs):
        kernel = self.program.kernels.get(id(node))
        if not any(_is_device(x) for x in inputs):
            if "into" in node.attrs:
                return _write_on_host(node, inputs)
            return super().run_fusion_group(node, inputs)
        if kernel is None:  # never run on the host behind the user's back
            raise GpuUnsupported(f"{describe(node)} on a device array does not run on the GPU yet {ON_THE_GPU}")
        if not all(_is_device(inputs[k]) for k in kernel.arrays):
            where = f" at {node.source.short()}" if node.source is not None else ""
            raise GpuUnsupported(f"the operation{where} reads host and device arrays: move them all to the device")
        if kernel.axis_reduction is not None:
            return [self.reduce_axis(kernel, node, inputs)]
        if kernel.product is not None:
            return [launch_product(self.program, kernel, node, inputs)]
        if kernel.into is not None:
            self.launch(kernel, node, self.without_overlap(kernel, node, inputs))
            return []
        return self.launch(kernel, node, inputs)

    def launch(self, kernel, node, inputs) -> list:
        """A grid group: its arrays (new, or the destination operand of a write) element by element, and its
        reductions per block then by the finishing kernel, their scalars copied to the host at once."""
        device, module = self.program.device, self.program.module
        if kernel.into is None:
            shape = np.broadcast_shapes(*[inputs[k].shape for k in kernel.arrays])
            outs = [DeviceArray._make(device, shape, node.outputs[k].type.dtype) for k in kernel.stores]
        else:
            outs = [inputs[kernel.into]]
            shape = outs[0].shape
        n = int(np.prod(shape, dtype=np.int64))
        reductions = kernel.reductions
        if not n:
            if reductions:  # the empty reductions' results (or NumPy's ValueError) are the host's
                return self.on_empty(node, inputs)
            return outs if kernel.into is None else []
        strides = {k: _broadcast_strides(inputs[k], shape) for k in kernel.arrays}
        threads, max_blocks = launch_config()
        blocks = device.blocks(n, threads, max_blocks)
        mode = _mode(kernel, inputs, strides, shape, outs, n + 4 * threads * blocks)
        partials = [device.allocate(8 * blocks * len(reductions))] if reductions else []
        out_strides = list(outs[0].strides) if kernel.into is not None else []
        args = [
            *(a.pointer for a in outs + partials),
            n,
            mode,
            *shape,
            *out_strides,
            *self.operands(kernel, inputs, strides, mode, shape),
        ]
        device.launch(module, kernel, blocks, threads, args)
        if kernel.can_raise:
            code, payload = module.take_error()
            if code:
                raise ERROR_TABLE[code].make(payload)
        if kernel.into is not None:
            return []
        results = dict(zip(kernel.stores, outs))
        if reductions:
            out = device.allocate(8 * len(reductions))
            device.launch(module, kernel, 1, threads, [out.pointer, partials[0].pointer, blocks, n], finish=True)
            slots = np.empty(len(reductions), np.int64)
            device.copy_to_host(slots, out.pointer)  # every scalar in one synchronous copy
            positions = [k for k in range(len(kernel.results)) if k not in results]
            for r, k in enumerate(positions):
                results[k] = _scalar(slots[r : r + 1], node.outputs[k].type)
        return [results[k] for k in range(len(kernel.results))]

    def on_empty(self, node, inputs) -> list:
        """A group over no elements, by the host on empty stand-ins (nothing to copy): NumPy's identities and
        errors; its arrays (empty) as device arrays."""
        stand_ins = [np.empty(x.shape, x.dtype) if _is_device(x) else x for x in inputs]
        results = super().run_fusion_group(node, stand_ins)
        return [
            DeviceArray._make(self.program.device, r.shape, r.dtype) if isinstance(r, np.ndarray) else r
            for r in results
        ]

    def without_overlap(self, kernel, node, inputs) -> list:
        """The operands of a write into ``inputs[into]``, checked as NumPy checks them (the source broadcasts to
        the destination's shape), each operand that overlaps the destination other than as the very same view
        first copied (``x[1:] = x[:-1]`` reads the old values, as NumPy's buffering does)."""
        dst = inputs[kernel.into]
        shapes = [inputs[k].shape for k in kernel.arrays]
        try:
            ok = np.broadcast_shapes(dst.shape, *shapes) == dst.shape
        except ValueError:
            ok = False
        if not ok:  # NumPy's own error, from the host operator on empty arrays of the same shapes
            _write_on_host(node, [np.empty(x.shape, x.dtype) if _is_device(x) else x for x in inputs])
            raise ValueError(f"could not broadcast {shapes} into shape {dst.shape}")
        inputs = list(inputs)
        for k in kernel.arrays:
            x = inputs[k]
            same = x.pointer == dst.pointer and x.shape == dst.shape and x.strides == dst.strides
            if k != kernel.into and not same and _overlaps(x, dst):
                inputs[k] = _device_copy(self.program.device, x)
        return inputs

    def reduce_axis(self, kernel, node, inputs):
        """A reduction along an axis: one thread per result element (axis_reduce.py)."""
        (x,) = [inputs[k] for k in kernel.arrays]
        axis = kernel.axis
        kept = [d for d in range(x.ndim) if d != axis]
        shape = tuple(x.shape[d] for d in kept)
        device = self.program.device
        if x.shape[axis] == 0 or 0 in shape:  # NumPy's identities and errors for empty lines: the host's
            host = super().run_fusion_group(node, [np.empty(v.shape, v.dtype) if _is_device(v) else v for v in inputs])[
                0
            ]
            out = DeviceArray._make(device, host.shape, host.dtype)
            device.copy_from_host(out.pointer, host)
            return out
        out = DeviceArray._make(device, shape, node.output.type.dtype)
        threads, max_blocks = launch_config()
        n = out.size
        args = [out.pointer, n, *shape, x.pointer, *[x.strides[d] for d in kept], x.shape[axis], x.strides[axis]]
        device.launch(self.program.module, kernel, device.blocks(n, threads, max_blocks), threads, args)
        return out

    @staticmethod
    def operands(kernel, inputs, strides, mode, shape) -> list:
        """The kernel parameters after the shape: per array operand its pointer and strides, per scalar its
        value (the contiguous loops read only whether an operand's last stride is 0)."""
        args = []
        for k, x in enumerate(inputs):
            if k in kernel.arrays:
                if mode != STRIDED:
                    strides[k] = [0] * (len(shape) - 1) + [0 if all(s == 0 for s in strides[k]) else 1]
                args += [x.pointer, *strides[k]]
            else:
                args.append(x)
        return args


CREATION = {
    "aten::zeros",
    "aten::ones",
    "aten::empty",
    "aten::full",
    "aten::zeros_like",
    "aten::ones_like",
    "aten::empty_like",
    "aten::full_like",
}


class _DeviceImpls(dict):
    """The interpreter's operator implementations, with array creation giving device arrays (made on the host
    and copied; ``empty`` only allocates)."""

    def __init__(self, device):
        super().__init__()
        self.device = device

    def get(self, kind, default=None):
        impl = dict.get(self, kind)
        if impl is None:
            impl = self[kind] = (
                self._creating(kind)
                if kind in CREATION
                else _viewing(kind)
                if kind in VIEWS
                else _on_host(kind)
                if kind in TEXT
                else lookup(kind).impl
                if kind in HOST_SAFE | SCALAR_READS | SCALAR_WRITES
                else _host_only(kind)
            )
        return impl

    def _creating(self, kind):
        base = lookup(kind).impl
        device = self.device

        def create(*args, **attrs):
            args = [np.empty(a.shape, a.dtype) if _is_device(a) else a for a in args]
            host = base(*args, **attrs)
            d = DeviceArray._make(device, host.shape, host.dtype)
            if not kind.startswith("aten::empty"):
                device.copy_from_host(d.pointer, host)
            return d

        return create


def _viewing(kind):
    """A view of a device array (a row, a slice): NumPy's own indexing applied to an array object over the device
    address, which reads only shape and strides, never the data."""
    base = lookup(kind).impl

    def view(x, *args, **attrs):
        if not _is_device(x):
            return base(x, *args, **attrs)
        if kind == "aten::reshape" and not x.is_c_contiguous:  # NumPy would copy (read the data)
            raise GpuUnsupported("reshaping a non-contiguous device array does not run on the GPU yet")
        meta = type(
            "DeviceMemory",
            (),
            {
                "__array_interface__": {
                    "shape": x.shape,
                    "typestr": x.dtype.str,
                    "data": (x.pointer, False),
                    "strides": x.strides,
                    "version": 3,
                }
            },
        )()
        r = base(np.asarray(meta), *args, **attrs)
        return DeviceArray._make(x._device, r.shape, r.dtype, r.strides, r.__array_interface__["data"][0], x)

    return view


def _on_host(kind):
    """An operator the host runs on copies of its device operands."""
    base = lookup(kind).impl

    def run(*args, **attrs):
        return base(*[_host(a) for a in args], **attrs)

    return run


def _host_only(kind):
    """An operator the host runs: refused on device arrays (an array created in the function reaches here
    without the block-entry check seeing it)."""
    base = lookup(kind).impl

    def run(*args, **attrs):
        if any(_is_device(a) for a in args):
            raise GpuUnsupported(f"{kind} on a device array does not run on the GPU yet {ON_THE_GPU}")
        return base(*args, **attrs)

    return run


def _is_device(x) -> bool:
    return isinstance(x, DeviceArray)


def _host(x):
    return x.copy_to_host() if _is_device(x) else x


def _mode(kernel, inputs, strides, shape, outs, last_index) -> int:
    """The kernel loop for these operands and destinations (codegen's STRIDED, CONTIGUOUS or VECTORS)."""
    if not shape or last_index >= 2**31:
        return STRIDED
    whole = [tuple(inputs[k].shape) == tuple(shape) and inputs[k].is_c_contiguous for k in kernel.arrays]
    if not all(w or all(s == 0 for s in strides[k]) for w, k in zip(whole, kernel.arrays)):
        return STRIDED
    if not all(out.is_c_contiguous for out in outs):  # a write into a strided view
        return STRIDED
    arrays = list(outs) + [inputs[k] for k in kernel.arrays]
    if all(whole) and all(a.pointer % _align(a.dtype.name) == 0 for a in arrays):
        return VECTORS
    return CONTIGUOUS


def _scalar(slot: np.ndarray, t):
    """The scalar of type ``t`` a finishing kernel stored in a 64-bit slot (a bool in its first byte; a NumPy
    scalar in its Python scalar's slot)."""
    if isinstance(t, NumpyScalarType):
        return np.dtype(t.dtype).type(_scalar(slot, t.decayed))
    if t == FLOAT:
        return float(slot.view(np.float64)[0])
    if t == BOOL:
        return bool(slot.view(np.int8)[0])
    return int(slot[0])


def _write_on_host(node, inputs) -> list:
    """A write group's operator (``x += y``, ``x[...] = y``) on host arrays."""
    root = node.attrs["subgraph"].outputs[0].node
    lookup("aten::copy_" if root is None else root.kind + "_").impl(*inputs)
    return []


def _extent(a) -> tuple[int, int]:
    """The first and one-past-last byte addresses an array's elements occupy."""
    lo = a.pointer + sum(min(0, (d - 1) * s) for d, s in zip(a.shape, a.strides))
    hi = a.pointer + sum(max(0, (d - 1) * s) for d, s in zip(a.shape, a.strides)) + a.dtype.itemsize
    return lo, hi


def _overlaps(a, b) -> bool:
    (a0, a1), (b0, b1) = _extent(a), _extent(b)
    return a.size > 0 and b.size > 0 and a0 < b1 and b0 < a1


def _device_copy(device, x):
    """A copy of the device memory a view spans, viewed with the same shape and strides."""
    lo, hi = _extent(x)
    block = device.allocate(hi - lo)
    device.copy_on_device(block.pointer, lo, hi - lo)
    return DeviceArray._make(device, x.shape, x.dtype, x.strides, block.pointer + (x.pointer - lo), block)


def _broadcast_strides(a, shape) -> list[int]:
    rank = len(shape)
    strides = [0] * (rank - a.ndim) + list(a.strides)
    dims = [1] * (rank - a.ndim) + list(a.shape)
    return [0 if d == 1 and s != 1 else st for d, s, st in zip(dims, shape, strides)]
