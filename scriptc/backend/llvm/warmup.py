"""Loading LLVM in the background while a first compile does its Python work.

Loading llvmlite's LLVM library and initializing its native target costs a cold first call 30-45 ms, during which
the GIL is free (the dynamic loader relocates the library). ``start()``, called once a compile is certain (the
first call of a signature without the on-disk cache, or a cache miss: not at decoration, where a function
may only ever be inlined into cached ones), does it on a thread while the calling thread runs the frontend,
the passes and the lowering (pure Python, with ``llvmlite.ir``, which does not need the library);
``engine.Engine`` waits for it before touching LLVM. The
thread imports only llvmlite, never a scriptc module, so the two threads never wait on each other's imports; a
``fork`` waits for it first, so that a child never inherits an import half done by a thread it does not have.
Anything the thread hits is left for the calling thread to hit again, and report.
"""
from __future__ import annotations

import os
import sys
import threading

_THREAD: list[threading.Thread] = []
_LOCK = threading.Lock()


def _load() -> None:
    try:
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
    except BaseException:  # noqa: BLE001 - the calling thread imports it again and gets the error itself
        pass


def start() -> None:
    """Begin loading LLVM, unless it is loaded or loading."""
    if _THREAD or "llvmlite.binding" in sys.modules:
        return
    with _LOCK:
        if _THREAD:
            return
        thread = threading.Thread(target=_load, name="scriptc-load-llvm", daemon=True)
        _THREAD.append(thread)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(before=wait)
        thread.start()


def wait() -> None:
    """Return once the background load (if any) is over."""
    if _THREAD and _THREAD[0] is not threading.current_thread():
        _THREAD[0].join()
