"""Python's cyclic garbage collector paused while a signature compiles.

A compile allocates tens of thousands of objects (IR nodes, llvmlite's instructions), enough to trigger several
collections, and a full collection walks every object of the process: in a process holding many compiled
functions or a large Python heap, those pauses were an eighth of all first-call time (bench/first_calls.py: 3.6 s
of 29 s over 250 functions). The collector is paused for the compile and resumes after it; what the compile left
in reference cycles is collected by its next run, once, instead of the whole heap being walked several times
during the compile; that run is made on another thread while LLVM generates code (``collecting_meanwhile``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading

_LOCK = threading.Lock()
_DEPTH = [0, False]  # compiles in progress (any thread), whether the first of them paused the collector


@contextlib.contextmanager
def gc_paused():
    with _LOCK:
        if _DEPTH[0] == 0:
            _DEPTH[1] = gc.isenabled()
            gc.disable()
        _DEPTH[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0 and _DEPTH[1]:
                gc.enable()


@contextlib.contextmanager
def collecting_meanwhile():
    """Yields ``start(before=None)``: called right before native code that releases the GIL for a while (LLVM's
    code generation), it has another thread collect the young generation meanwhile (after ``before()``, other
    Python work that may run then). The compile's garbage so far (the lowering's llvmlite.ir module is all
    reference cycles) is then gone by the time the collector resumes, instead of a 5-10 ms collection ending the
    first call. (Collecting from the block's start would hold the GIL the block needs until it reaches native
    code.)"""
    go = threading.Event()
    work = []

    def collect():
        go.wait()
        for before in work:
            before()
        gc.collect(0)

    def start(before=None):
        if before is not None:
            work.append(before)
        go.set()

    thread = threading.Thread(target=collect, name="scriptc-collect", daemon=True)
    thread.start()
    try:
        yield start
    finally:
        go.set()
        thread.join()


def _after_fork_in_child() -> None:
    """A child forked while another thread compiled has no such thread: its collector runs again."""
    if _DEPTH[0]:
        _DEPTH[0] = 0
        if _DEPTH[1]:
            gc.enable()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
