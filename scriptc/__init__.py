"""scriptc: a script-mode compiler for numerical Python.

    @scriptc.script
    def f(x: np.ndarray) -> np.ndarray: ...
"""
from . import ops as _ops  # noqa: F401  (fills the operator registry)
from .errors import CompileError
from .function import ScriptFunction, script


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in matrix products (OpenBLAS's thread count, for the whole process). By default
    OpenBLAS uses ``OPENBLAS_NUM_THREADS`` (read when it loads) or one thread per core."""
    from .backend.llvm import blas
    blas.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads matrix products use."""
    from .backend.llvm import blas
    return blas.get_num_threads()


__all__ = ["CompileError", "ScriptFunction", "get_num_threads", "script", "set_num_threads"]
__version__ = "0.1.0"


def __getattr__(name):
    # scriptc.random (functional random keys) is imported on first use: its kernels cost import time
    if name == "random":
        import importlib
        return importlib.import_module(".random", __name__)
    raise AttributeError(f"module 'scriptc' has no attribute {name!r}")
