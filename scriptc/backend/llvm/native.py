"""``compile_graph(graph) -> NativeFunction``: lower, optimize, JIT, and call from Python."""
from __future__ import annotations

import itertools
import threading

import numpy as np

from ...ir.core import Graph
from ...ir.types import BOOL, FLOAT, INT, TupleType, Type
from .engine import engine, make_caller
from .errors import ERROR_TABLE
from .lower import ModuleLowering, check_graph, leaves

_COUNTER = itertools.count()
_COUNTER_LOCK = threading.Lock()
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _arg_converter(t: Type):
    """Python argument -> the C value for a graph input of type ``t`` (the numeric tower: a bool is an int, an
    int a float)."""
    if t == INT:
        def conv(x):
            if not isinstance(x, (int, np.integer)):
                raise TypeError(f"expected int, got {type(x).__name__}")
            v = int(x)
            if not INT64_MIN <= v <= INT64_MAX:
                raise OverflowError("int too large to convert to a 64-bit int")
            return v
        return conv
    if t == FLOAT:
        def conv(x):
            if not isinstance(x, (float, int, np.floating, np.integer)):
                raise TypeError(f"expected float, got {type(x).__name__}")
            return float(x)
        return conv
    if t == BOOL:
        def conv(x):
            if not isinstance(x, (bool, np.bool_)):
                raise TypeError(f"expected bool, got {type(x).__name__}")
            return bool(x)
        return conv
    raise TypeError(f"cannot pass {t} to native code")


def _rebuild(t: Type, vals):
    """The Python value of type ``t`` from an iterator over its scalar leaves."""
    if isinstance(t, TupleType):
        return tuple(_rebuild(e, vals) for e in t.elems)
    if t in (INT, FLOAT, BOOL):
        return next(vals)
    return None


class NativeFunction:
    """A graph compiled to machine code. ``f(*args)`` returns what the interpreter returns (or raises what it
    raises). ``llvm_ir`` is the optimized LLVM IR, ``asm`` the host assembly."""

    def __init__(self, graph: Graph, ir_text: str, entry: str, address: int, unoptimized_ir: str):
        self.graph = graph
        self.llvm_ir = ir_text
        self.unoptimized_ir = unoptimized_ir
        self.entry = entry
        self.address = address
        self.arg_types = [v.type for v in graph.inputs]
        self.result_type = graph.outputs[0].type
        self._converters = [_arg_converter(t) for t in self.arg_types]
        self._call = make_caller(address, [t for ty in self.arg_types for t in leaves(ty)],
                                 leaves(self.result_type))
        self._asm: str | None = None

    @property
    def asm(self) -> str:
        if self._asm is None:
            self._asm = engine().assembly(self.llvm_ir)
        return self._asm

    def __call__(self, *args):
        if len(args) != len(self._converters):
            raise TypeError(f"{self.graph.name}() takes {len(self._converters)} arguments ({len(args)} given)")
        status, outs = self._call(*[conv(a) for conv, a in zip(self._converters, args)])
        if status:
            raise ERROR_TABLE[status].make()
        return _rebuild(self.result_type, iter(outs))

    def __repr__(self):
        return f"<NativeFunction {self.graph.name} at {self.address:#x}>"


def compile_graph(graph: Graph) -> NativeFunction:
    """Compile a scalar graph (int, float, bool, None and tuples of them; calls to other such graphs) to native
    code. Raises LoweringError, naming the operator and its source position, for anything else."""
    check_graph(graph)
    eng = engine()
    with _COUNTER_LOCK:
        n = next(_COUNTER)
    mod = ModuleLowering(f"scriptc{n}")
    entry = mod.entry(graph)
    text = str(mod.module)
    llmod = eng.optimize(text)
    optimized = str(llmod)
    address = eng.add_module(llmod, [entry])[entry]
    return NativeFunction(graph, optimized, entry, address, text)
