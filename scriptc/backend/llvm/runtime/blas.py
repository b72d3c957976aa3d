"""OpenBLAS for matrix products: NumPy's own where its wheel ships the ``scipy-openblas64`` build (so that
products follow the very kernels NumPy's run), else the ``scipy-openblas64`` package's; loaded once per process.

That build exports CBLAS with prefixed, suffixed names (``scipy_cblas_dgemm64_``) and 64-bit integers (ILP64),
so the package's coexists with NumPy's own OpenBLAS and any other BLAS in the process. (With a newer package
than NumPy's bundled build, ``?dot`` kernels differed: np.dot of 3-d arrays lost NumPy's last bits.) Its functions
are bound into the JIT
under private names (``scriptc.blas.dgemm`` -> the library's ``scipy_cblas_dgemm64_``), the way engine.py binds
libm, and native code calls them directly.

Threads: OpenBLAS reads ``OPENBLAS_NUM_THREADS`` (then ``OMP_NUM_THREADS``) when it loads, and otherwise uses one
thread per core; ``set_num_threads`` changes it at run time. ``SCRIPTC_NUM_THREADS`` (and
``scriptc.set_num_threads``) governs it too: when set, scriptc gives OpenBLAS that count as it loads it. As the
library is NumPy's own, NumPy's products in the process follow the same count. Otherwise scriptc keeps OpenBLAS's
default.

When the package is not installed (or its library does not load), ``available()`` is false and float products
use the generated loop that integer products use.
"""

from __future__ import annotations

import ctypes
import os
import threading
from . import symbols
from .threads import default_threads, thread_count

SYMBOL_PREFIX = "scriptc.blas."
# CBLAS functions native code calls: our name -> the library's exported symbol
FUNCTIONS = {name: f"scipy_cblas_{name}64_" for name in ("dgemm", "sgemm", "dgemv", "sgemv", "ddot", "sdot")}
# CBLAS enum values (cblas.h)
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112

_LIB: ctypes.CDLL | None = None
_LOADED = False
_BOUND = False
_LOCK = threading.Lock()


def _find_library() -> str | None:
    """NumPy's own OpenBLAS where its wheel ships the scipy-openblas64 build (the very kernels NumPy's products
    run: bit-identical results whatever the two packages' versions), else the scipy-openblas64 package's."""
    import numpy

    root = os.path.dirname(numpy.__file__)
    for lib_dir in (os.path.join(os.path.dirname(root), "numpy.libs"), os.path.join(root, ".dylibs")):
        if os.path.isdir(lib_dir):
            for name in sorted(os.listdir(lib_dir)):
                if name.startswith("libscipy_openblas64_") and (".so" in name or name.endswith(".dylib")):
                    return os.path.join(lib_dir, name)
    try:
        import scipy_openblas64
    except ImportError:
        return None
    lib_dir = scipy_openblas64.get_lib_dir()
    stem = scipy_openblas64.get_library()
    for name in sorted(os.listdir(lib_dir)):
        if name.startswith((f"lib{stem}.", f"{stem}.")) and name.rsplit(".", 1)[-1] in ("so", "dylib", "dll"):
            return os.path.join(lib_dir, name)
    return None


def library() -> ctypes.CDLL | None:
    """The loaded OpenBLAS, or None when it is not installed or does not load."""
    global _LIB, _LOADED
    if not _LOADED:
        with _LOCK:
            if not _LOADED:
                path = _find_library()
                try:
                    lib = ctypes.CDLL(path) if path else None
                    if lib is not None:
                        for symbol in FUNCTIONS.values():
                            getattr(lib, symbol)
                except (OSError, AttributeError):
                    lib = None
                if lib is not None and os.environ.get("SCRIPTC_NUM_THREADS", "").strip():
                    _set_threads(lib, default_threads())  # (raises for an invalid value, as scripted code does)
                _LIB, _LOADED = lib, True
    return _LIB


def available() -> bool:
    return library() is not None


def bind() -> bool:
    """Make the CBLAS functions callable from JIT-compiled code (once); whether OpenBLAS is available."""
    global _BOUND
    lib = library()
    if lib is None:
        return False
    if not _BOUND:
        with _LOCK:
            if not _BOUND:
                for name, symbol in FUNCTIONS.items():
                    symbols.bind(SYMBOL_PREFIX + name, ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value)
                _BOUND = True
    return True


def _require() -> ctypes.CDLL:
    lib = library()
    if lib is None:
        raise RuntimeError("OpenBLAS is not available: install the scipy-openblas64 package")
    return lib


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in matrix products (OpenBLAS's thread count, process-wide)."""
    _set_threads(_require(), thread_count(n))


def _set_threads(lib: ctypes.CDLL, n: int) -> None:
    fn = lib.scipy_openblas_set_num_threads64_
    fn.argtypes, fn.restype = [ctypes.c_int], None
    fn(n)


def get_num_threads() -> int:
    """The number of threads OpenBLAS uses in matrix products."""
    fn = _require().scipy_openblas_get_num_threads64_
    fn.argtypes, fn.restype = [], ctypes.c_int
    return fn()
