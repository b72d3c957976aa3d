"""The NVPTX path: fusion groups as GPU kernels (codegen.py). Launch, device arrays and the grid emulator come
next; see the README's GPU section for what is verified."""
from .codegen import GpuUnsupported, compile_ptx, gpu_groups, libdevice_path, ptx_for_graph

__all__ = ["GpuUnsupported", "compile_ptx", "gpu_groups", "libdevice_path", "ptx_for_graph"]
