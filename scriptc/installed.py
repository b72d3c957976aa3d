"""A signature's compiled code, and the chain of CPython entry points a scripted (or transformed) function's
class calls: each signature's entry point falls back to the one installed before it, the first to ``_dispatch``.
With tiered compilation (``backend/llvm/runtime/optimizer.py``) a signature's first-tier code is replaced by its O3 code
on the optimizer's thread, so installing is locked."""

from __future__ import annotations

import threading

_INSTALL_LOCK = threading.RLock()  # a signature's entry point is installed by the caller or the optimizer


def install_first(owner, types: tuple, native, install):
    """Keep and install (``install(types, native)``) a signature's just-compiled code, unless its optimized code
    got there first (tiered compilation: ``backend/llvm/runtime/optimizer.py``); the signature's code."""
    with _INSTALL_LOCK:
        if types not in owner._native:
            owner._native[types] = native
            if install is not None:
                install(types, native)
        return owner._native[types]


def wait_optimized(natives, timeout: float | None = None) -> bool:
    """Wait until none of these signatures' code is first-tier code waiting for its O3 code."""
    for native in list(natives):
        pending = getattr(native, "optimizing", None)
        if pending is not None and not pending.wait(timeout):
            return False
    return True


def install_optimized(owner, types: tuple, native, install) -> None:
    """Replace a signature's first-tier code with its O3 code (on the optimizer's thread). Each signature's
    entry point falls back to the one installed before it, so the chain is made again from ``_dispatch``."""
    with _INSTALL_LOCK:
        owner._native[types] = native
        if install is None:
            return
        owner._entry = None
        if "__call__" in type(owner).__dict__:  # the class's own: back to the base class's _dispatch
            delattr(type(owner), "__call__")
        for each_types, each in list(owner._native.items()):
            install(each_types, each)
