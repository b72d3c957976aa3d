"""The names generated code calls and reads in this process, and their addresses.

Machine code never embeds an address of this process: it refers to what it needs by name (``scriptc.libm.sin``,
an error payload's key, a str constant, a callback into Python, the C API), and the names are bound here, in each
process, to that process's objects. So the same object file links into any process, which is what lets the
on-disk cache keep machine code: the JIT (``engine.py``) and the loader of cached code (``objload.py``) both
resolve names through ``address_of``.

``bind(name, address)`` records a binding (and tells LLVM, once it is loaded). Names nobody bound yet are asked
of *providers*, registered per prefix by the modules that own them and run on first use (a library is loaded,
a runtime compiled), then of the process's own libraries (the C library, the C API, libm). This module imports
no LLVM: the cache's hit path links through it without loading llvmlite.
"""

from __future__ import annotations

import ctypes
import threading

LIBC = ctypes.CDLL(None)
_BOUND: dict[str, int] = {}
_PROVIDERS: list[tuple[str, object]] = []
_LLVM_ADD = []  # llvmlite's add_symbol, once the engine has loaded LLVM
_LOCK = threading.RLock()

# Counters native code increments as it allocates and frees arrays and lists (test hooks: arrays.allocations())
ALLOCATIONS, FREES = ctypes.c_int64(0), ctypes.c_int64(0)
LIST_ALLOCATIONS, LIST_FREES = ctypes.c_int64(0), ctypes.c_int64(0)


def bind(name: str, address: int) -> None:
    """Bind ``name`` to ``address`` for all code linked from now on."""
    with _LOCK:
        _BOUND[name] = address
        for add in _LLVM_ADD:
            add(name, address)


def bound(name: str) -> int | None:
    """The address ``name`` is bound to, without asking providers."""
    return _BOUND.get(name)


def provider(prefix: str):
    """Decorator: ``fn(name) -> address or None`` binds names starting with ``prefix`` on first use."""

    def deco(fn):
        _PROVIDERS.append((prefix, fn))
        return fn

    return deco


def address_of(name: str) -> int | None:
    """The address ``name`` stands for in this process, or None if nothing provides it."""
    address = _BOUND.get(name)
    if address is not None:
        return address
    address = _import_binding(name)
    if address is not None:
        return address
    for prefix, fn in list(_PROVIDERS):  # not under the lock: a provider may compile, and take other locks
        if name.startswith(prefix):
            address = fn(name)
            if address:
                bind(name, address)
                return address
    return library_symbol(name)


# Names bound by a module when it is imported: the module to import for a name nobody bound yet
_BOUND_ON_IMPORT = {
    "scriptc.obj.": "entry_runtime",
    "scriptc.PyArray_": "entry_runtime",
    "scriptc.release_capsule": "entry_runtime",
    "scriptc.py.": "callbacks",
    "scriptc.payload_": "errors",
    "scriptc.pthread_": "errors",
    "scriptc.calloc": "errors",
}


def _import_binding(name: str) -> int | None:
    import importlib

    for prefix, module in _BOUND_ON_IMPORT.items():
        if name.startswith(prefix):
            importlib.import_module(f"{__package__}.{module}")
            return _BOUND.get(name)
    return None


def library_symbol(name: str) -> int | None:
    """``name`` in the libraries the process has loaded globally (the C library, CPython's C API, libm)."""
    try:
        return ctypes.cast(LIBC[name], ctypes.c_void_p).value
    except (AttributeError, ValueError):
        return None


def attach_llvm(add_symbol) -> None:
    """Called once LLVM is loaded: replay every binding into it, and keep it informed."""
    with _LOCK:
        for name, address in _BOUND.items():
            add_symbol(name, address)
        _LLVM_ADD.append(add_symbol)


def function_address(cfunc) -> int:
    return ctypes.cast(cfunc, ctypes.c_void_p).value


bind("scriptc.allocations", ctypes.addressof(ALLOCATIONS))
bind("scriptc.frees", ctypes.addressof(FREES))
bind("scriptc.list.allocations", ctypes.addressof(LIST_ALLOCATIONS))
bind("scriptc.list.frees", ctypes.addressof(LIST_FREES))


# -- libm and libmvec: under private names, so that LLVM neither folds nor rewrites them (engine.py) ---------

LIBM_PREFIX = "scriptc.libm."
_LIBM = []


def libm() -> ctypes.CDLL:
    """The libm the interpreter already uses (the one behind CPython's ``math``)."""
    if not _LIBM:
        lib = LIBC
        try:
            lib.sin, lib.frexp
        except AttributeError:
            import ctypes.util

            lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        _LIBM.append(lib)
    return _LIBM[0]


@provider(LIBM_PREFIX)
def _libm_function(name: str) -> int | None:
    fn = getattr(libm(), name[len(LIBM_PREFIX) :], None)
    return function_address(fn) if fn is not None else None


_MVEC = []


def libmvec() -> ctypes.CDLL | None:
    """glibc's vector math library, or None."""
    if not _MVEC:
        try:
            _MVEC.append(ctypes.CDLL("libmvec.so.1"))
        except OSError:
            _MVEC.append(None)
    return _MVEC[0]


@provider("_ZGV")
def _vector_function(name: str) -> int | None:
    lib = libmvec()
    fn = getattr(lib, name, None) if lib is not None else None
    return function_address(fn) if fn is not None else None


@provider("scriptc.blas.")
def _blas_function(name: str) -> int | None:
    from . import blas  # (cycle: blas imports this module)

    return _BOUND.get(name) if blas.bind() else None


@provider("scriptc.pool.threads")
def _pool_threads(name: str) -> int | None:
    from . import threads  # when code refers to it: a cache hit of code that does not loads no threads

    return threads.address() if name == threads.THREADS_SYMBOL else None


@provider("scriptc.pool.run")
def _pool_run(name: str) -> int | None:
    from . import pool  # compiles the thread pool's runtime with LLVM, once per process

    pool.ensure_runtime()
    return _BOUND.get(name)
