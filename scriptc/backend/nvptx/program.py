"""The kernels of a GPU signature's optimized graph, in one module: every fusion group the device runs
(``groups.py``) and every prange loop not nested in another (``prange.py``: a nested one runs inside its
parent's kernel). The executor loads them; ``ptx_for_graph`` prints them."""

from __future__ import annotations

from ...ir.core import Graph
from .codegen import KernelModule
from .groups import runs_on_gpu
from .prange import add_parallel_loop, check_device_code, gpu_parallel_loop
from .ptx import DEFAULT_ARCH, compile_ptx


class Kernels:
    """``groups``: fusion group (by node id) -> its kernel; ``loops``: prange loop (by node id) -> its kernel."""

    def __init__(self, graph: Graph):
        self.module = KernelModule(graph.name)
        self.groups = {
            id(n): self.module.add(n) for n in graph.walk() if n.kind == "prim::FusionGroup" and runs_on_gpu(n)
        }
        self.loops = {id(n): add_parallel_loop(self.module, n) for n in outer_parallel_loops(graph.block)}
        if self.loops:
            check_device_code(self.module.llvm_ir())

    def __bool__(self) -> bool:
        return bool(self.module.kernels)


def outer_parallel_loops(block) -> list:
    """The prange loops not nested in another one (a nested one runs inside its parent's kernel)."""
    found = []
    for node in block.nodes:
        if gpu_parallel_loop(node):
            found.append(node)
        else:
            for inner in node.blocks:
                found += outer_parallel_loops(inner)
    return found


NO_KERNELS = "// no kernels: nothing in {name} runs on the GPU for these argument types (host code only)\n"


def ptx_for_graph(graph: Graph, arch: str = DEFAULT_ARCH) -> tuple[str, list]:
    """PTX with one ``.entry`` per kernel of an optimized graph (two for a group or prange loop with reductions:
    the per-block pass and ``_finish``), and the kernels; where there is none, a PTX comment saying so."""
    kernels = Kernels(graph)
    if not kernels:
        return NO_KERNELS.format(name=graph.name), []
    return compile_ptx(kernels.module.llvm_ir(), arch), kernels.module.kernels
