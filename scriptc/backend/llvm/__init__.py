"""The native CPU backend: scalar IR graphs lowered to LLVM IR with llvmlite and JIT-compiled for the host.

    from scriptc.backend.llvm import compile_graph
    native = compile_graph(f.graph_for(3, 2.0))
    native(3, 2.0)            # same result (or exception) as f.interpret(3, 2.0)
    print(native.llvm_ir)     # optimized LLVM IR; native.asm: host assembly
"""
from .errors import ERROR_TABLE, LoweringError
from .native import NativeFunction, compile_graph

__all__ = ["ERROR_TABLE", "LoweringError", "NativeFunction", "compile_graph"]
