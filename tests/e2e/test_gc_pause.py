"""The cyclic garbage collector is paused while a signature compiles (``scriptc/gc_pause.py``) and left as the
user had it afterwards."""

from __future__ import annotations

import gc
import threading

import numpy as np

import scriptc


def fresh():
    @scriptc.script
    def kernel(x, n):
        for _ in range(n):
            x = np.sin(x) * 0.5 + x
        return x.sum()

    return kernel


def test_no_collection_runs_during_a_compile(monkeypatch):
    from scriptc.backend.llvm import compile as native_compile

    collections, inside = [], []

    def seen(phase, info):
        if phase == "start" and threading.current_thread().name != "scriptc-collect":  # (see the next test)
            collections.append(bool(inside))

    def compile_graph(*args, **kwargs):
        inside.append(gc.isenabled())
        try:
            return real(*args, **kwargs)
        finally:
            inside.clear()

    real = native_compile.compile_graph
    monkeypatch.setattr(native_compile, "compile_graph", compile_graph)
    kernel = fresh()
    old = gc.get_threshold()
    gc.set_threshold(1)  # a collection every allocation or so: lowering and LLVM would see hundreds
    gc.callbacks.append(seen)
    try:
        kernel(np.arange(4.0), 3)
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*old)
    assert gc.isenabled() and inside == []
    assert True not in collections and False in collections  # none inside the compile; some outside


def test_the_compiles_garbage_is_collected_while_llvm_generates_code(monkeypatch):
    """While LLVM generates code (the GIL is free), another thread collects the young generation, which holds
    the lowering's garbage (cycles): the first call does not end with that collection."""
    import llvmlite.binding as llvm

    generating, collections = [], []

    def emit_object(self, module):
        generating.append(True)
        try:
            return real(self, module)
        finally:
            generating.clear()

    def seen(phase, info):
        if phase == "start":
            collections.append((threading.current_thread().name, info["generation"], bool(generating)))

    real = llvm.TargetMachine.emit_object
    monkeypatch.setattr(llvm.TargetMachine, "emit_object", emit_object)
    kernel = fresh()
    kernel(np.arange(4.0), 1)  # its collections are the next test's business
    collections.clear()
    gc.callbacks.append(seen)
    try:
        kernel(np.arange(4.0, dtype=np.float32), 3)  # another signature: another compile
    finally:
        gc.callbacks.remove(seen)
    assert ("scriptc-collect", 0, True) in collections
    assert [c for c in collections if c[0] != "scriptc-collect"] == []  # none left for after the compile


def test_a_collector_the_user_disabled_stays_disabled():
    kernel = fresh()
    gc.disable()
    try:
        assert kernel(np.arange(4.0), 2) == fresh().py_func(np.arange(4.0), 2)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_child_forked_during_a_compile_collects_again():
    import os

    import pytest

    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    from scriptc.gc_pause import gc_paused

    with gc_paused():
        assert not gc.isenabled()
        pid = os.fork()
        if pid == 0:  # the child: no thread of it is compiling
            os._exit(0 if gc.isenabled() else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and gc.isenabled()


def test_the_printed_llvm_module_is_freed_without_the_collector():
    """The lowering's llvmlite module is a web of cycles (parents, operands); taken apart once printed, it is
    freed at once, so the collection that follows a compile, holding the GIL the code generation threads need,
    has little left to walk (the MLP training step: 110,000 objects before, 65-85 ms)."""
    from scriptc.backend.llvm import compile as native_compile

    kernel = fresh()
    kernel(np.arange(4.0), 1)
    graph = kernel.graph_for(np.arange(4.0, dtype=np.float32), 3)
    scriptc.wait_optimized()  # (the optimizer's thread makes garbage of its own)
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        native_compile.Lowered(graph, "scriptc.gc_test", False, False, True, set())
        left = gc.collect()
    finally:
        if was:
            gc.enable()
    assert left < 500, left  # 3,600 without taking the module apart


def test_work_given_to_the_collecting_thread_runs_there_before_it_collects():
    """``start(before)``: the streaming first tier takes its printed module apart on that thread while this one
    generates code (compile.py)."""
    from scriptc.gc_pause import collecting_meanwhile

    order = []
    real_collect = gc.collect

    def collect(generation=2):
        order.append(("collect", threading.current_thread().name))
        return real_collect(generation)

    gc.collect = collect
    try:
        with collecting_meanwhile() as start:
            start(lambda: order.append(("before", threading.current_thread().name)))
    finally:
        gc.collect = real_collect
    assert order == [("before", "scriptc-collect"), ("collect", "scriptc-collect")]
