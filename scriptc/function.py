"""``@scriptc.script``: a function compiled per argument signature (scalar kinds, array dtype and rank).

A parameter's annotation, when present, is checked at each call; an unannotated parameter (``UNANNOTATED`` in
``param_types``) takes the kind of whatever is passed, as numba does. ``signatures=`` compiles given signatures
at decoration (syntax: ``signatures.py``); arrays of other libraries are viewed without copying (``interop.py``).
"""

from __future__ import annotations

import functools
import os
import pickle
import types

import numpy as np

from .arguments import _SCALAR_OF, UNANNOTATED, _accept, _check_argument, _kind, _widenings
from .calling import bind_by_name
from .compiled import COMPILING, CompiledFunction, remake_ir
from .errors import CompileError, user_facing
from .frontend import FunctionEmitter, Resolver, get_source, validate
from .device_calls import DeviceCalls, _on_device
from .gc_pause import gc_paused
from .ir.core import Graph
from .ir.pycode import python_code
from .ir.registry import NeedsSpecialization
from .ir.types import BOOL, TensorType, Type
from .ir.verifier import verify
from .signatures import format_signature, from_numba, parse_signature

# Graphs under construction per (function, signature): [graph, assumed return type, whether a recursive call
# used the assumption]; graphs built meanwhile are verified when the outermost compile ends (they may call a
# graph that has no outputs yet), and the cache entries made meanwhile are logged so that a retry can drop them.
_in_progress: dict[tuple, list] = {}
_unverified: list[Graph] = []
_cache_log: list[tuple] = []


class _WrongGuess(Exception):
    """Compiling with an assumed result type for recursive calls failed (``error``: the CompileError)."""

    def __init__(self, error):
        super().__init__()
        self.error = error


class GraphNeedsTypes(RuntimeError):
    """``f.graph`` of a function whose graph depends on its arguments' dtypes, before it was called."""


class ScriptFunction(DeviceCalls, CompiledFunction):
    """A scripted function: its graph per signature comes from the frontend (``_compile``); binding follows the
    parameters' annotations; calls with device arrays run on the GPU (``device_calls.py``)."""

    scriptc_callable = True  # callable from scripted code (frontend.Resolver.is_script_function)

    def __init__(
        self, fn, *, fastmath: bool = False, nogil: bool = False, signatures=(), cache=False, tiered: bool = True
    ):
        functools.update_wrapper(self, fn)
        self.py_func = fn
        # tiered: first calls run the short pipeline's code until O3's is in (optimizer.py)
        self._init_compiled(fn.__name__, fastmath=fastmath, nogil=nogil, tiered=tiered, cache=cache)
        self._gpu: dict[tuple, object] = {}  # (signature, device) -> GpuProgram
        self.source = get_source(fn)
        self.resolver = Resolver(self._callee_graph)
        validate(self.source, self.resolver)
        tree = self.source.tree
        self.param_names = [a.arg for a in tree.args.args]
        self.param_types: list[Type | None] = [
            UNANNOTATED if a.annotation is None else self.resolver.annotation(self.source, a.annotation)
            for a in tree.args.args
        ]
        self.return_type = self.resolver.annotation(self.source, tree.returns) if tree.returns else None
        self.param_dtypes = [
            None if a.annotation is None else self.resolver.array_dtype(self.source, a.annotation)
            for a in tree.args.args
        ]
        self._graphs: dict[tuple, Graph] = {}  # the frontend's graph per signature
        self._specialized: dict[tuple, tuple] = {}  # the kinds passed -> the signature compiled for them
        self._generic: Graph | None = None
        self._generic_retried = False
        self.defaults = self._capture_defaults()
        if UNANNOTATED not in self.param_types:
            Resolver.decorating += 1
            try:
                self._generic = self._compile(tuple(self.param_types))
            except NeedsSpecialization:
                pass  # array code whose types depend on dtypes/ranks: compiled per call signature
            finally:
                Resolver.decorating -= 1
        for signature in signatures:
            self.compile_signature(signature)

    def compile_signature(self, signature: str) -> None:
        """Compile native code for one signature string (``"float64[*], int"``) now, as
        ``signatures=[...]`` does at decoration."""
        types = parse_signature(signature)
        if len(types) != len(self.param_names):
            raise ValueError(
                f"signature {signature!r} gives {len(types)} argument type"
                f"{'s' * (len(types) != 1)}; {self.__name__}() takes {len(self.param_names)}"
            )
        for name, want, got, dtype in zip(self.param_names, self.param_types, types, self.param_dtypes):
            t = _accept(want, got)
            if t != got or (dtype is not None and got.dtype != dtype):
                raise ValueError(
                    f"signature {signature!r}: parameter '{name}' is annotated "
                    f"{dtype + ' array' if dtype else want}, not {got}"
                )
        self.native_for_types(types)
        self._specialized.setdefault(types, types)

    @property
    def signatures(self) -> list[str]:
        """The signatures native code has been compiled for, in compile order (``signatures=`` syntax)."""
        return [format_signature(types) for types in self._native]

    def _capture_defaults(self) -> dict:
        """Default parameter values, as Python evaluated them at definition time: int, float or bool
        constants of the parameter's annotated kind (numba and TorchScript take constants too)."""
        tree = self.source.tree
        values = self.py_func.__defaults__ or ()
        first = len(self.param_names) - len(values)
        defaults = {}
        for name, value, node, want in zip(
            self.param_names[first:], values, tree.args.defaults, self.param_types[first:]
        ):
            kind = _kind(value) if type(value) in (int, float, bool) else None
            if kind is None or _accept(want, kind) is None:
                what = "an int, float or bool" if want is UNANNOTATED else want
                raise self.source.error(
                    f"default value of parameter '{name}' must be {what} constant, got {type(value).__name__}",
                    node,
                    "defaults are constants captured at decoration: int, float or bool",
                )
            defaults[name] = value
        return defaults

    def bind_arguments(self, args, kwargs) -> list:
        """Python's binding of positional and keyword arguments and defaults to the parameters, with
        CPython's messages for a missing, duplicate or unexpected argument."""
        return bind_by_name(self.__name__, self.param_names, self.defaults, args, kwargs)

    def __repr__(self):
        return f"<scriptc.ScriptFunction {self.__name__}>"

    # -- compilation ----------------------------------------------------------------------------------
    def _compile(self, types: tuple) -> Graph:
        """The frontend's graph for one signature. A recursive call (to this signature, while it is being
        built) refers to the graph under construction, typed with an assumed return type: the annotation, or
        without one bool, widened to what the function's paths return until the two agree."""
        with COMPILING:
            outermost = not _in_progress
            try:
                error = None
                for assumed in self._return_guesses(types):
                    try:
                        return self._compile_fixed_point(types, assumed)
                    except _WrongGuess as e:
                        error = e.error
                raise error if self.return_type is not None and error is not None else self._unknown_recursive_type()
            finally:
                if outermost:
                    _unverified.clear()
                    _cache_log.clear()

    def _return_guesses(self, types: tuple) -> list:
        """Result types to assume for recursive calls: the annotation, or bool (widened by the fixed point);
        for an array, or without an annotation, also the arrays among the arguments."""
        first = self.return_type if self.return_type is not None else BOOL
        arrays = [t for t in types if isinstance(t, TensorType)]
        if self.return_type is not None and not (isinstance(first, TensorType) and first.dtype is None):
            return [first]
        return [first] + list(dict.fromkeys(arrays))

    def _compile_fixed_point(self, types: tuple, assumed: Type) -> Graph:
        for _ in range(4):
            mark = len(_cache_log)
            try:
                graph, used = self._compile_assuming(types, assumed)
            except _WrongGuess:
                self._forget_since(mark)
                raise
            result = graph.outputs[0].type
            if not used or result == assumed:
                _unverified.append(graph)  # may call a graph still under construction: verified last
                if not _in_progress:
                    for g in _unverified:
                        verify(g)
                return graph
            self._forget_since(mark)
            assumed = result
        raise _WrongGuess(None)

    def _unknown_recursive_type(self) -> CompileError:
        hint = "annotate its return type: def f(...) -> int:"
        if isinstance(self.return_type, TensorType) and self.return_type.dtype is None:
            hint = (
                "annotate the array's dtype and rank: -> npt.NDArray[np.float64] (numpy.typing), or the "
                "result of a return that does not recurse must have the type of an array argument"
            )
        return CompileError(
            f"cannot find the return type of recursive function '{self.__name__}'",
            self.source.loc(self.source.tree),
            hint,
        )

    def _compile_assuming(self, types: tuple, assumed: Type):
        key = (self, types)
        emitter = FunctionEmitter(self.source, list(types), self.return_type, self.resolver)
        _in_progress[key] = [emitter.graph, assumed, False]
        try:
            graph = emitter.build()
        except CompileError as e:
            if _in_progress[key][2]:  # maybe only because of the result type assumed for a recursive call
                raise _WrongGuess(e) from None
            raise
        except NeedsSpecialization:  # a recursive call's result typed as the bare annotation (any array)
            if _in_progress[key][2]:
                raise _WrongGuess(None) from None
            raise
        finally:
            used = _in_progress.pop(key)[2]
        return graph, used

    @staticmethod
    def _forget_since(mark: int) -> None:
        """Drop the graphs cached since ``mark``: they may call a recursive graph built on a wrong guess."""
        while len(_cache_log) > mark:
            fn, types = _cache_log.pop()
            fn._graphs.pop(types, None)

    def _source_graph(self, types: tuple) -> Graph:
        """The frontend's graph for a signature."""
        g = self._graphs.get(types)
        if g is None:
            g = self._graphs[types] = self._compile(types)
            if _in_progress:
                _cache_log.append((self, types))
        return g

    def _callee_graph(self, callee: "ScriptFunction", arg_types, caller, node):
        if len(arg_types) != len(callee.param_types):
            raise caller.error(
                f"'{callee.__name__}' takes {len(callee.param_types)} arguments, {len(arg_types)} given", node
            )
        params = []
        for name, want, got in zip(callee.param_names, callee.param_types, arg_types):
            t = _accept(want, got)
            if t is None:
                raise caller.error(f"argument '{name}' of '{callee.__name__}' must be {want}, got {got}", node)
            dtype = callee.param_dtypes[len(params)]
            if dtype is not None and getattr(got, "dtype", None) not in (None, dtype):
                raise caller.error(
                    f"argument '{name}' of '{callee.__name__}' must be an array of {dtype}, got {got.dtype}", node
                )
            params.append(t)
        key = tuple(params)
        building = _in_progress.get((callee, key))
        if building is None:  # not a recursive call: the kinds passed, widened where they do not compile
            key = callee.specialization(key)
            building = _in_progress.get((callee, key))
        if building is not None:
            building[2] = True
            return list(key), building[0], building[1]
        return list(key), callee.graph_for_types(key, optimize=False), None

    def specialization(self, types: tuple) -> tuple:
        """The signature compiled for arguments of these kinds: the kinds themselves when the function compiles
        for them, else the first that compiles of the widenings towards the annotations (a bool or int passed
        for a ``float`` parameter whose code does not type with it, e.g. ``max(x, 0.5)``, is taken as a float).
        Raises the CompileError of the kinds passed when none compiles."""
        chosen = self._specialized.get(types)
        if chosen is None and self.cache and (types in self._native or self._load_by_source_key(types)):
            chosen = self._specialized[types] = types  # compiled before, for these very kinds
        if chosen is None:
            with gc_paused():
                chosen = self._first_that_compiles(types)
        return chosen

    def _first_that_compiles(self, types: tuple) -> tuple:
        first_error = None
        for candidate in _widenings(self.param_types, types):
            try:
                self.graph_for_types(candidate, optimize=False)
            except CompileError as e:
                if first_error is None and e.python_raises:
                    raise  # Python raises for the kinds passed (a bool array minus a bool): widened, it would not
                first_error = first_error or e
                continue
            self._specialized[types] = candidate
            return candidate
        raise first_error

    # -- calling --------------------------------------------------------------------------------------
    def _bind(self, args, kwargs) -> tuple[tuple, list]:
        if kwargs or len(args) != len(self.param_names):
            args = self.bind_arguments(args, kwargs)
        types, values = [], []
        for name, want, arg, dtype in zip(self.param_names, self.param_types, args, self.param_dtypes):
            t, v = _check_argument(self.__name__, name, want, arg, dtype)
            types.append(t)
            values.append(v)
        chosen = self.specialization(tuple(types))
        if chosen != tuple(types):
            values = [_SCALAR_OF[t](v) if t in _SCALAR_OF else v for t, v in zip(chosen, values)]
        return chosen, values

    @user_facing
    def _dispatch(self, *args, **kwargs):
        if any(_on_device(a) for a in (*args, *kwargs.values())):
            return self._run_on_device(args, kwargs)
        return self._run(args, kwargs)

    __call__ = _dispatch

    def _load_by_source_key(self, types: tuple):
        """The cached machine code of a signature found by its source key, without the frontend and the passes
        (``source_key.py``); installed as the signature's code. None on a miss."""
        from .source_key import read_manifest, source_key  # on-disk cache only: decorating loads no source_key

        cache = self._cache_directory()
        skey = source_key(self, types, cache.directory)
        data = cache.load_manifest(self.__name__, skey) if skey is not None else None
        found = read_manifest(self, data) if data is not None else None
        if found is None:
            return None
        # at the first call: decorating loads no backend (test_import_cost)
        from .backend.llvm.runtime.cached import load_entry

        key, signature, written, nogil = found
        native = load_entry(
            key, signature, lambda: self.graph_for_types(types), cache, True, self.fastmath, nogil, remake_ir, written
        )
        if native is not None:
            self._native[types] = native
            native.nogil = nogil
            self._install_entry(types, native)
        return native

    def _remember_source_key(self, types: tuple, native, key: str, nogil: bool) -> None:
        from .source_key import manifest, source_key  # on-disk cache only: decorating loads no source_key

        cache = self._cache_directory()
        skey = source_key(self, types, cache.directory)
        data = manifest(self, native, key, nogil) if skey is not None else None
        if data is not None:
            cache.store_manifest(self.__name__, skey, data)

    # -- introspection --------------------------------------------------------------------------------
    @property
    @user_facing
    def graph(self) -> Graph:
        """The frontend's graph: generic (``Tensor`` for arrays) when the code types without knowing array
        dtypes and ranks, otherwise the graph of the first signature it was called with."""
        if self._generic is None and not self._generic_retried and UNANNOTATED not in self.param_types:
            # at decoration a callee may not have been defined yet: now that the module is loaded, retry
            self._generic_retried = True
            try:
                self._generic = self._compile(tuple(self.param_types))
            except NeedsSpecialization:
                pass
        if self._generic is not None:
            return self._generic
        if self._graphs:
            return next(iter(self._graphs.values()))
        if UNANNOTATED in self.param_types:
            raise GraphNeedsTypes(
                f"the graph of '{self.__name__}' depends on the types passed for its "
                f"unannotated parameters: call it first, or use {self.__name__}.graph_for(*args)"
            )
        raise GraphNeedsTypes(
            f"the graph of '{self.__name__}' depends on its array arguments' dtypes and "
            f"ranks: call it first, or use {self.__name__}.graph_for(*args)"
        )

    @property
    def code(self) -> str:
        """The optimized graph as Python-like source (TorchScript's ``.code``): the first compiled signature's,
        or the frontend's graph before any call."""
        graph = next(iter(self._optimized.values())) if self._optimized else self.graph
        return python_code(graph, self.__name__)

    # -- pickling: by reference, as functions and numba's dispatchers pickle -------------------------------
    def __reduce__(self):
        try:
            found = _restore(self.__module__, self.__qualname__)
        except Exception:
            found = None
        if found is not self:
            raise pickle.PicklingError(
                f"Can't pickle {self!r}: it is not the object found as "
                f"{self.__module__}.{self.__qualname__} (scripted functions pickle by "
                f"reference: define them at module level)"
            )
        return _restore, (self.__module__, self.__qualname__)

    @user_facing
    def graph_for(self, *args, **kwargs) -> Graph:
        """The graph native code is generated from for these arguments' types (specialized, optimized, fused),
        with these arguments' shapes propagated through it: ``Double(2, 3)`` where a dimension is known. Native
        code itself is compiled per dtype and rank and works for every shape. With device arrays: the GPU
        signature's graph, kernels marked ``device="cuda"`` and scalar reads ``copy="device_to_host"``."""
        if any(_on_device(a) for a in (*args, *kwargs.values())):
            # device arrays only: decorating loads no backend (test_import_cost)
            from .backend.nvptx.executor import mark_devices

            types, values, _ = self._bind_device(args, kwargs)
            return mark_devices(self.gpu_graph_for_types(types), [_on_device(v) for v in values])
        return CompiledFunction.graph_for(self, *args, **kwargs)


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


@user_facing
def script(fn=None, *, fastmath: bool = False, nogil: bool = False, signatures=(), cache=False, tiered: bool = True):
    """``scriptc.script`` (see its docstring in ``scriptc/__init__.py``)."""
    if isinstance(fn, (str, list, tuple)):
        raise TypeError(_signature_first_message(fn))
    if isinstance(signatures, str):
        signatures = [signatures]
    if fn is None:
        return functools.partial(
            script, fastmath=fastmath, nogil=nogil, signatures=signatures, cache=cache, tiered=tiered
        )
    if isinstance(fn, ScriptFunction):
        for signature in signatures:
            fn.compile_signature(signature)
        return fn
    if not isinstance(fn, types.FunctionType):
        raise TypeError(_not_a_function_message(fn))
    if not isinstance(cache, (bool, str, os.PathLike)):
        raise TypeError(f"cache must be True, False or a directory (a str or a path), not {type(cache).__name__}")
    if fn.__code__.co_varnames[:1] in (("self",), ("cls",)) and "." in fn.__qualname__.rsplit("<locals>.", 1)[-1]:
        raise TypeError(
            f"'{fn.__qualname__}' is a method: scripted functions are module-level functions (a class "
            f"is not compiled); call one from the method, or put @staticmethod above @scriptc.script"
        )
    return ScriptFunction(fn, fastmath=fastmath, nogil=nogil, signatures=signatures, cache=cache, tiered=tiered)


def _not_a_function_message(obj) -> str:
    kind = type(obj).__name__
    text = f"scriptc.script takes a function defined with def, not {'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    if isinstance(obj, (staticmethod, classmethod)):
        return f"{text}: put @{kind} above @scriptc.script"
    if isinstance(obj, functools.partial):
        return f"{text}: decorate the function itself, and pass the bound arguments when calling it"
    if isinstance(obj, (types.BuiltinFunctionType, np.ufunc)):
        return f"{text} ({getattr(obj, '__name__', '?')} has no Python source): call it from a scripted function"
    if callable(obj) and hasattr(obj, "__wrapped__"):
        return f"{text}: put @scriptc.script on the def itself, below other decorators"
    return text


def _signature_first_message(sig) -> str:
    """What to write instead of numba's ``@njit("float64(float64[:])")``."""
    texts = [sig] if isinstance(sig, str) else [s for s in sig if isinstance(s, str)]
    ours = [from_numba(t) for t in texts]
    example = [o for o in ours if o is not None] if texts and None not in ours else ["float64[*]"]
    return (
        f"scriptc.script takes a function, not a signature ({sig!r}): annotate the parameters and use "
        f"@scriptc.script, leave them unannotated to compile per call, or list signatures in scriptc's "
        f"syntax: @scriptc.script(signatures={example!r})"
    )


__all__ = ["GraphNeedsTypes", "ScriptFunction", "UNANNOTATED", "script"]
