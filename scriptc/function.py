"""``@scriptc.script``: a function compiled per argument signature (scalar kinds, array dtype and rank)."""
from __future__ import annotations

import functools
import os
import pickle

import numpy as np

from .backend.interpreter import interpret
from .errors import CompileError
from .frontend import Resolver, compile_function, get_source, validate
from .ir.core import Graph
from .ir.registry import NeedsSpecialization
from .ir.types import BOOL, DTYPE_NAMES, FLOAT, INT, TensorType, Type
from .ir.verifier import verify
from .passes import PassManager

_compiling: list["ScriptFunction"] = []


class ScriptFunction:
    def __init__(self, fn, *, fastmath: bool = False, nogil: bool = False):
        functools.update_wrapper(self, fn)
        self.py_func = fn
        self.fastmath, self.nogil = fastmath, nogil
        self._native: dict[tuple, object] = {}
        # Each scripted function gets its own class so that calling it can go straight to a JIT-generated
        # CPython entry point (``__call__`` on the class): one per compiled signature, each falling back to
        # the previous one and the first to ``_dispatch``, the Python path that binds, converts and compiles.
        self.__class__ = type(f"ScriptFunction[{fn.__name__}]", (ScriptFunction,), {})
        self._entry = None
        self.source = get_source(fn)
        self.resolver = Resolver(self._callee_graph)
        validate(self.source, self.resolver)
        tree = self.source.tree
        self.param_names = [a.arg for a in tree.args.args]
        self.param_types: list[Type] = []
        for a in tree.args.args:
            if a.annotation is None:
                raise self.source.error(f"parameter '{a.arg}' needs a type annotation", a,
                                        "annotate it with int, float, bool or np.ndarray")
            self.param_types.append(self.resolver.annotation(self.source, a.annotation))
        self.return_type = self.resolver.annotation(self.source, tree.returns) if tree.returns else None
        self.param_dtypes = [self.resolver.array_dtype(self.source, a.annotation) for a in tree.args.args]
        self._graphs: dict[tuple, Graph] = {}      # the frontend's graph per signature
        self._optimized: dict[tuple, Graph] = {}   # after the pass pipeline: what native code is made from
        self._shaped: dict[tuple, Graph] = {}      # graph_for: the optimized graph with argument shapes
        self._generic: Graph | None = None
        self.resolver.decorating = True
        try:
            self._generic = self._compile(tuple(self.param_types))
        except NeedsSpecialization:
            pass  # array code whose types depend on dtypes/ranks: compiled per call signature
        finally:
            self.resolver.decorating = False

    def __repr__(self):
        return f"<scriptc.ScriptFunction {self.__name__}>"

    # -- compilation ----------------------------------------------------------------------------------
    def _compile(self, types: tuple) -> Graph:
        if self in _compiling:
            raise CompileError(f"recursive call to '{self.__name__}' is not supported",
                               self.source.loc(self.source.tree))
        _compiling.append(self)
        try:
            return verify(compile_function(self.source, types, self.return_type, self.resolver))
        finally:
            _compiling.pop()

    def graph_for_types(self, types: tuple, optimize: bool = True) -> Graph:
        """The graph for a signature: optimized (passes, fusion) by default, else as the frontend built it."""
        if not optimize:
            g = self._graphs.get(types)
            if g is None:
                g = self._graphs[types] = self._compile(types)
            return g
        g = self._optimized.get(types)
        if g is None:
            self.graph_for_types(types, optimize=False)   # compile errors surface from the frontend first
            g = self._optimized[types] = pipeline().run(self._compile(types))
        return g

    def _callee_graph(self, callee: "ScriptFunction", arg_types, caller, node):
        if len(arg_types) != len(callee.param_types):
            raise caller.error(f"'{callee.__name__}' takes {len(callee.param_types)} arguments, "
                               f"{len(arg_types)} given", node)
        params = []
        for name, want, got in zip(callee.param_names, callee.param_types, arg_types):
            t = _accept(want, got)
            if t is None:
                raise caller.error(f"argument '{name}' of '{callee.__name__}' must be {want}, got {got}", node)
            dtype = callee.param_dtypes[len(params)]
            if dtype is not None and getattr(got, "dtype", None) not in (None, dtype):
                raise caller.error(f"argument '{name}' of '{callee.__name__}' must be an array of {dtype}, got "
                                   f"{got.dtype}", node)
            params.append(t)
        if callee in _compiling:
            raise caller.error(f"recursive call to '{callee.__name__}' is not supported", node)
        return params, callee.graph_for_types(tuple(params), optimize=False)

    # -- calling --------------------------------------------------------------------------------------
    def _bind(self, args, kwargs) -> tuple[tuple, list]:
        if kwargs:
            args = list(args)
            for name in self.param_names[len(args):]:
                if name not in kwargs:
                    raise TypeError(f"{self.__name__}() missing argument '{name}'")
                args.append(kwargs.pop(name))
            if kwargs:
                raise TypeError(f"{self.__name__}() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if len(args) != len(self.param_names):
            raise TypeError(f"{self.__name__}() takes {len(self.param_names)} arguments ({len(args)} given)")
        types, values = [], []
        for name, want, arg, dtype in zip(self.param_names, self.param_types, args, self.param_dtypes):
            t, v = _check_argument(self.__name__, name, want, arg, dtype)
            types.append(t)
            values.append(v)
        return tuple(types), values

    def _dispatch(self, *args, **kwargs):
        types, values = self._bind(args, kwargs)
        return self.native_for_types(types)(*values)

    __call__ = _dispatch

    def native_for_types(self, types: tuple):
        """The machine code for one signature, compiled on first use."""
        native = self._native.get(types)
        if native is None:
            from .backend.llvm import compile_graph
            native = self._native[types] = compile_graph(self.graph_for_types(types), fastmath=self.fastmath,
                                                         nogil=self.nogil)
            self._install_entry(native)
        return native

    def _install_entry(self, native) -> None:
        from .backend.llvm.entry import EntryUnsupported, make_entry
        fallback = self._entry or self._dispatch
        try:
            entry = make_entry(native, fallback, nogil=self.nogil)
        except EntryUnsupported:
            return  # this signature is called through _dispatch (ctypes)
        self._entry = entry
        type(self).__call__ = staticmethod(entry)

    def inspect_llvm(self, *args, **kwargs) -> str:
        """The optimized LLVM IR for these arguments' signature."""
        return self.native_for_types(self._bind(args, kwargs)[0]).llvm_ir

    def inspect_asm(self, *args, **kwargs) -> str:
        """The host assembly for these arguments' signature."""
        return self.native_for_types(self._bind(args, kwargs)[0]).asm

    def interpret(self, *args, **kwargs):
        """Run through the reference interpreter (the oracle for passes and backends)."""
        types, values = self._bind(args, kwargs)
        return interpret(self.graph_for_types(types, optimize=False), values)

    # -- introspection --------------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The frontend's graph: generic (``Tensor`` for arrays) when the code types without knowing array
        dtypes and ranks, otherwise the graph of the first signature it was called with."""
        if self._generic is not None:
            return self._generic
        if self._graphs:
            return next(iter(self._graphs.values()))
        raise RuntimeError(f"the graph of '{self.__name__}' depends on its array arguments' dtypes and ranks: "
                           f"call it first, or use {self.__name__}.graph_for(*args)")

    @property
    def code(self) -> str:
        """The optimized graph as Python-like source (TorchScript's ``.code``): the first compiled signature's,
        or the frontend's graph before any call."""
        from .ir.pycode import python_code
        graph = next(iter(self._optimized.values())) if self._optimized else self.graph
        return python_code(graph, self.__name__)

    def code_for(self, *args, **kwargs) -> str:
        """``code`` for these arguments' signature."""
        from .ir.pycode import python_code
        return python_code(self.graph_for_types(self._bind(args, kwargs)[0]), self.__name__)

    # -- pickling: by reference, as functions and numba's dispatchers pickle -------------------------------
    def __reduce__(self):
        try:
            found = _restore(self.__module__, self.__qualname__)
        except Exception:
            found = None
        if found is not self:
            raise pickle.PicklingError(f"Can't pickle {self!r}: it is not the object found as "
                                       f"{self.__module__}.{self.__qualname__} (scripted functions pickle by "
                                       f"reference: define them at module level)")
        return _restore, (self.__module__, self.__qualname__)

    def frontend_graph_for(self, *args, **kwargs) -> Graph:
        """The graph for these arguments' types as the frontend built it, before any pass."""
        return self.graph_for_types(self._bind(args, kwargs)[0], optimize=False)

    def graph_for(self, *args, **kwargs) -> Graph:
        """The graph native code is generated from for these arguments' types (specialized, optimized, fused),
        with these arguments' shapes propagated through it: ``Double(2, 3)`` where a dimension is known. Native
        code itself is compiled per dtype and rank and works for every shape."""
        types, values = self._bind(args, kwargs)
        shapes = tuple(v.shape if isinstance(v, np.ndarray) else None for v in values)
        key = (types, shapes)
        g = self._shaped.get(key)
        if g is None:
            from .passes.shape_inference import specialize_shapes
            g = self._shaped[key] = specialize_shapes(self.graph_for_types(types), list(shapes))
        return g


def _restore(module: str, qualname: str) -> "ScriptFunction":
    """The scripted function a pickle names: imported from its module (compiled there again, or loaded from the
    cache), never rebuilt from pickled state."""
    import importlib
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, ScriptFunction):
        raise pickle.UnpicklingError(f"{module}.{qualname} is not a scripted function")
    return obj


def pipeline() -> PassManager:
    """The pass pipeline compiled functions go through; SCRIPTC_VERIFY=1 verifies after every pass (tests)."""
    return PassManager(verify_each=os.environ.get("SCRIPTC_VERIFY") == "1")


def _accept(want: Type, got: Type) -> Type | None:
    """The parameter type for a value of type ``got`` passed where ``want`` is annotated (None: rejected).
    Functions specialize on the kind actually passed: an int given for a ``float`` parameter stays an int,
    exactly as it does in Python (the numeric tower: bool < int < float)."""
    tower = {BOOL: 0, INT: 1, FLOAT: 2}
    if want in tower and got in tower:
        return got if tower[got] <= tower[want] else None
    if want == got:
        return want
    if isinstance(want, TensorType) and isinstance(got, TensorType):
        return got
    return None


def _kind(arg) -> Type | None:
    if isinstance(arg, (bool, np.bool_)):
        return BOOL
    if isinstance(arg, (int, np.integer)):
        return INT
    if isinstance(arg, (float, np.floating)):
        return FLOAT
    return None


def _check_argument(fname, pname, want: Type, arg, dtype=None):
    if isinstance(want, TensorType):
        if not isinstance(arg, np.ndarray):
            raise TypeError(f"{fname}() argument '{pname}' must be a numpy.ndarray, not {type(arg).__name__}")
        if arg.dtype.name not in DTYPE_NAMES:
            raise TypeError(f"{fname}() argument '{pname}' has unsupported dtype {arg.dtype}")
        if dtype is not None and arg.dtype.name != dtype:   # npt.NDArray[np.float64]
            raise TypeError(f"{fname}() argument '{pname}' must be an array of {dtype}, not {arg.dtype}")
        return TensorType(arg.dtype.name, arg.ndim), arg
    kind = _kind(arg)
    t = _accept(want, kind) if kind is not None else None
    if t is None:
        raise TypeError(f"{fname}() argument '{pname}' must be {want}, not {type(arg).__name__}")
    return t, {FLOAT: float, INT: int, BOOL: bool}[t](arg)


def script(fn=None, *, fastmath: bool = False, nogil: bool = False):
    """Compile a type-annotated function: ``@scriptc.script``, ``scriptc.script(fn)``, or with options
    ``@scriptc.script(fastmath=True)`` (let LLVM reassociate and contract float arithmetic) and
    ``@scriptc.script(nogil=True)`` (release the GIL while native code runs)."""
    if fn is None:
        return functools.partial(script, fastmath=fastmath, nogil=nogil)
    if isinstance(fn, ScriptFunction):
        return fn
    return ScriptFunction(fn, fastmath=fastmath, nogil=nogil)


__all__ = ["ScriptFunction", "script"]
