"""PTX from a kernel module's LLVM IR: NVIDIA's libdevice linked in for math calls, llvmlite's NVPTX target
machine; and where the tools live (libdevice's bitcode, the ``ptxas`` assembler the tests check PTX with)."""

from __future__ import annotations

import os
from pathlib import Path

from ..llvm.lowering.target import Target
from .groups import GpuUnsupported

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
LIBDEVICE_PREFIX = "__nv_"
# What kernel code differs in from the CPU's: libdevice's math, no C stack budget (a thread's stack is the
# device's), no thread pool, float32 math in single precision (double math costs many times more there), a
# kernel is one function (no outlining), and NVPTX's own unrolling choices, as measured on hardware.
NVPTX = Target(
    "nvptx",
    math_prefix=LIBDEVICE_PREFIX,
    triple=TRIPLE,
    data_layout=DATA_LAYOUT,
    standalone=True,
    stack_checks=False,
    parallel=False,
    single_precision_math=True,
    outline=False,
    loop_hints=(),
)
DEFAULT_ARCH = "sm_80"
PTX_VERSION = "+ptx78"


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
    if f'@"{LIBDEVICE_PREFIX}' in llvm_text or f"@{LIBDEVICE_PREFIX}" in llvm_text:
        path = libdevice_path()
        if path is None:
            raise GpuUnsupported(
                "math functions on the GPU need NVIDIA's libdevice: pip install nvidia-nvvm "
                "(or set CUDA_HOME to a CUDA toolkit)"
            )
        libdevice = llvm.parse_bitcode(path.read_bytes())
        libdevice.triple, libdevice.data_layout = TRIPLE, DATA_LAYOUT
        mod.link_in(libdevice)
    kernels = {
        line.split("@", 1)[1].split("(", 1)[0].strip('"')
        for line in llvm_text.splitlines()
        if line.startswith("define void @")
    }
    for f in mod.functions:  # only the kernels stay visible: unused libdevice functions go away
        if not f.is_declaration and f.name not in kernels:
            f.linkage = "internal"
    tm = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, features=PTX_VERSION, opt=3)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)
