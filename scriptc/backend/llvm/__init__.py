"""The native CPU backend: scalar IR graphs lowered to LLVM IR with llvmlite and JIT-compiled for the host.

    from scriptc.backend.llvm import compile_graph
    native = compile_graph(f.graph_for(3, 2.0))
    native(3, 2.0)            # same result (or exception) as f.interpret(3, 2.0)
    print(native.llvm_ir)     # optimized LLVM IR; native.asm: host assembly

Importing this package loads nothing: the names below are imported on first use, so that code from the on-disk
cache (``runtime/cached.py``) runs without importing llvmlite.

Two packages and the driver that joins them:

- ``lowering/``: IR to LLVM IR. The core (``lower.py``: values, blocks, control flow, calls, unwinding, loop
  nests) and the operators' lowering rules by domain, registered against their ``OpDef`` (``rules.py``).
- ``runtime/``: what generated code runs on and how it reaches the process, with no knowledge of the IR's
  operators: the JIT engine and object loader, symbols, the tiers and the on-disk cache, CPython entry points,
  the thread pool, BLAS, and the LLVM IR text builder both packages write with. It imports nothing from
  ``lowering/`` (``tests/e2e/test_import_graph.py``).
- ``compile.py``: a graph in, a ``NativeFunction`` out: lower, optimize, link, and keep the machine code.
"""

import importlib

_LAZY = {
    "ERROR_TABLE": "runtime.errors",
    "LoweringError": "runtime.errors",
    "NativeFunction": "runtime.native",
    "compile_graph": "compile",
}

__all__ = ["ERROR_TABLE", "LoweringError", "NativeFunction", "compile_graph"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
