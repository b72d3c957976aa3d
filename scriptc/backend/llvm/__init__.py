"""The native CPU backend: scalar IR graphs lowered to LLVM IR with llvmlite and JIT-compiled for the host.

    from scriptc.backend.llvm import compile_graph
    native = compile_graph(f.graph_for(3, 2.0))
    native(3, 2.0)            # same result (or exception) as f.interpret(3, 2.0)
    print(native.llvm_ir)     # optimized LLVM IR; native.asm: host assembly

Importing this package loads nothing: the names below are imported on first use, so that code from the on-disk
cache (``cached.py``) runs without importing llvmlite.
"""

import importlib

_LAZY = {"ERROR_TABLE": "errors", "LoweringError": "errors", "NativeFunction": "native", "compile_graph": "compile"}

__all__ = ["ERROR_TABLE", "LoweringError", "NativeFunction", "compile_graph"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
