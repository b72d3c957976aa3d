"""Where generated code runs, as the lowering sees it: one ``Target`` object handed to ``ModuleLowering``.

The lowering rules are the same for every target; a target says only what differs: the symbol a math function
is called by (libm under scriptc's private names on the CPU, libdevice's ``__nv_`` functions on NVIDIA GPUs), the
module's triple, whether code may check the C stack, call the thread pool and OpenBLAS, do float32 math in
single precision, outline loop nests, and which LLVM loop hints the lowering's own loops carry.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..runtime.symbols import LIBM_PREFIX


@dataclass(frozen=True)
class Target:
    name: str
    math_prefix: str = LIBM_PREFIX  # the symbol of libm's ``f`` is math_prefix + f
    triple: str | None = None  # None: the host's
    data_layout: str | None = None
    standalone: bool = False  # shared helpers are built into the module (a library, a kernel module)
    stack_checks: bool = True  # calls check the C stack's budget (no: a GPU thread's stack)
    parallel: bool = True  # large groups and prange loops run on a thread pool
    blas: bool = True  # float matrix products call OpenBLAS (else the generated row loop)
    # float32 math in single precision (expf, ...: within 2 ulp) rather than through double, correctly rounded
    single_precision_math: bool = False
    outline: bool = True  # big functions call their loop nests (outline.py)
    # LLVM loop hints on the loops the lowering makes (element loops, copies; not the user's loops): no runtime
    # unrolling. They are vectorized (the vectorizer interleaves them itself) or chains of dependent operations;
    # copying them with a remainder loop made the seed loop's module 60% larger and cost 15 of its 105 ms of LLVM
    # time, and no bench kernel got slower without it (gd_epoch 29% and affine_loop 8% faster, the rest within 2%)
    loop_hints: tuple = ("llvm.loop.unroll.runtime.disable",)

    def math_symbol(self, name: str) -> str:
        return self.math_prefix + name


# JIT-compiled code in this process
CPU = Target("cpu")
# an exported library: parallel regions run on the library's own copy of the pool (pool_text), float matrix
# products on the generated row loop (no OpenBLAS beneath the library)
CPU_LIBRARY = Target("cpu-library", standalone=True, blas=False)
