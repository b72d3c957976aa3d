"""scriptc: a script-mode compiler for numerical Python.

@scriptc.script
def f(x: np.ndarray) -> np.ndarray: ...
"""

from .errors import CompileError, user_facing
from .parallel import prange
from .version import __version__  # noqa: F401  (scriptc.__version__)


@user_facing
def script(fn=None, *, fastmath: bool = False, nogil: bool = False, signatures=(), cache=False, tiered: bool = True):
    """Compile a function: ``@scriptc.script``, ``scriptc.script(fn)``, or with options
    ``@scriptc.script(fastmath=True)`` (let LLVM reassociate and contract float arithmetic),
    ``@scriptc.script(nogil=True)`` (release the GIL while native code runs),
    ``@scriptc.script(signatures=["float64[*], int"])`` (compile these signatures now, at decoration) and
    ``@scriptc.script(cache=True)`` (keep machine code on disk, in ``__pycache__`` beside the source or in
    ``SCRIPTC_CACHE_DIR``; a directory may be given instead of True),
    ``@scriptc.script(tiered=False)`` (compile each signature at O3 before its first call, for a function called
    once with long work: by default a first call runs code of a short LLVM pipeline while O3's is made).
    Annotated parameters are checked at each call; unannotated ones specialise on the kinds passed.
    The compiler (frontend, IR, operator registry) is imported by the first decoration, not by ``import scriptc``."""
    from .function import script as decorate  # at the first decoration: `import scriptc` loads no compiler

    return decorate(fn, fastmath=fastmath, nogil=nogil, signatures=signatures, cache=cache, tiered=tiered)


def load(path):
    """A library made by ``scriptc export``, as a module of callables (no source, no compilation)."""
    from .backend.export.load import load as load_library  # on use: `import scriptc` loads no backend

    return load_library(path)


def wait_optimized(timeout: float | None = None) -> bool:
    """Wait until every signature compiled so far runs its optimized code. A signature's first call runs code
    made by a short LLVM pipeline while O3 compiles in another process and replaces it (``SCRIPTC_TIERS=0``:
    O3 before the first call). For timing steady-state speed; False if ``timeout`` seconds passed first."""
    from .backend.llvm.runtime.optimizer import wait_all  # on use: `import scriptc` loads no backend

    return wait_all(timeout)


def set_num_threads(n: int) -> None:
    """Use ``n`` threads, for the whole process: in prange loops and large element-wise fusion groups
    (scriptc's thread pool) and in matrix products (OpenBLAS's thread count, when OpenBLAS is available).
    By default scriptc uses ``SCRIPTC_NUM_THREADS`` or one thread per available core."""
    from .backend.llvm.runtime import blas, threads  # on use: `import scriptc` loads no backend

    threads.set_num_threads(n)
    if blas.available():
        blas.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads prange loops (and matrix products, after ``set_num_threads``) use."""
    from .backend.llvm.runtime import threads  # on use: `import scriptc` loads no backend

    return threads.get_num_threads()


def watch_interrupts() -> bool:
    """Let Ctrl-C stop native loops again after ``signal.signal(signal.SIGINT, ...)`` replaced the handler
    scriptc puts in front of Python's (loops then see SIGINT when they return only). True where native loops see
    it (Linux, with a Python handler for SIGINT). Python's handler runs as it would between two bytecodes."""
    # on use: `import scriptc` loads no backend (and this module loads llvmlite)
    from .backend.llvm.lowering.interrupts import watch_interrupts as watch

    return watch()


__all__ = [
    "CompileError",
    "ExportError",
    "LoadError",
    "ScriptFunction",
    "get_num_threads",
    "grad",
    "load",
    "prange",
    "script",
    "set_num_threads",
    "value_and_grad",
    "vmap",
    "wait_optimized",
    "watch_interrupts",
]


def __getattr__(name):
    # scriptc.random (functional random keys) and the transforms (grad) are imported on first use: import time
    import importlib

    if name == "ScriptFunction":
        from .function import ScriptFunction  # on first use: `import scriptc` loads no compiler

        return ScriptFunction
    if name == "random":
        return importlib.import_module(".random", __name__)
    if name in ("LoadError", "ExportError"):  # what scriptc.load and scriptc export raise
        module = ".backend.export.load" if name == "LoadError" else ".backend.export.cabi"
        return getattr(importlib.import_module(module, __name__), name)
    if name in ("grad", "value_and_grad", "vmap"):
        module = ".transforms.vmap_api" if name == "vmap" else ".transforms.api"
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'scriptc' has no attribute {name!r}")
