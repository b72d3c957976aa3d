"""The NVPTX path: fusion groups and prange loops as GPU kernels (groups.py says which group is which kernel;
codegen.py: element-wise and multi-output groups with their reductions, block_reduce.py, axis_reduce.py,
matmul.py, prange.py; program.py: all of a graph's kernels; ptx.py: PTX and libdevice), launched through the CUDA
driver (driver.py) or run in the
grid emulator (emulator.py), sequenced by the host-side executor (executor.py)."""

from .groups import GpuUnsupported, gpu_groups
from .program import ptx_for_graph
from .ptx import compile_ptx, libdevice_path, ptxas_path

__all__ = ["GpuUnsupported", "compile_ptx", "gpu_groups", "libdevice_path", "ptx_for_graph", "ptxas_path"]
