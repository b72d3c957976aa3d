"""Nanoseconds per call of a scripted ``add(1.0, 2.0)`` through each way Python can call native code: a Python
``def`` (the reference), the CPython entry point scriptc generates, the entry bound as a method
(``bind_to_class``), and the ctypes paths. Run:

    python bench/entry_calls.py [--calls 1000000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import timeit

import scriptc
from scriptc.backend.llvm import compile_graph
from scriptc.backend.llvm.runtime.entry import bind_to_class, make_entry


def add(a: float, b: float) -> float:
    return a + b


def entry_calls(calls: int = 1_000_000, repeat: int = 7) -> dict[str, float]:
    native = compile_graph(scriptc.script(add).graph_for(1.0, 2.0))
    entry = make_entry(native, native)
    method = bind_to_class(entry)()
    assert entry(1.0, 2.0) == method(1.0, 2.0) == native(1.0, 2.0) == add(1.0, 2.0) == 3.0
    results = {}
    for label, f in [
        ("python def", add),
        ("entry", entry),
        ("entry via bind_to_class", method),
        ("ctypes (NativeFunction)", native),
        ("ctypes raw caller", native._call),
    ]:
        seconds = min(timeit.Timer("f(1.0, 2.0)", globals={"f": f}).repeat(repeat, calls)) / calls
        results[label] = seconds * 1e9
        print(f"{label:28s} {seconds * 1e9:7.1f} ns/call")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    entry_calls(options.calls, options.repeat)
