"""The NVPTX path: fusion groups and prange loops as GPU kernels (codegen.py, block_reduce.py, prange.py), launched
through the CUDA driver (driver.py) or run in the grid emulator (emulator.py), sequenced by the host-side
executor (executor.py)."""
from .codegen import GpuUnsupported, compile_ptx, gpu_groups, libdevice_path, ptx_for_graph, ptxas_path

__all__ = ["GpuUnsupported", "compile_ptx", "gpu_groups", "libdevice_path", "ptx_for_graph", "ptxas_path"]
