"""The compiled-callable core: a callable whose graph depends on its arguments' types, compiled once per signature.

``CompiledFunction`` owns what every such callable shares: the per-signature caches (the graph before and after the pass
pipeline, machine code), tiered compilation (a first call runs a short pipeline's code while O3's is made:
``backend/llvm/runtime/optimizer.py``), the on-disk cache (``cache=``), releasing the GIL for graphs with parallel
loops, the chain of JIT-built CPython entry points (``installed.py``), introspection (``graph_for``, ``inspect_llvm``,
``code_for``) and the reference interpreter. A scripted function (``function.py``), a gradient (``transforms/api.py``)
and a batched function (``transforms/vmap_api.py``) differ only in how they bind arguments (``_bind``) and build the
graph of a signature (``_source_graph``).
"""

from __future__ import annotations

import functools
import os
import threading

import numpy as np

from .errors import user_facing
from .gc_pause import gc_paused
from .installed import install_first, install_optimized, wait_optimized
from .ir.clone import clone_graph
from .ir.core import Graph
from .ir.pycode import python_code
from .ops.interpreter import check_arguments, interpret
from .realign import call_with_twins, needs_twins

# One compile at a time in a process (as numba's compiler lock): the frontend's state of the outermost compile is
# global (function.py), and two threads' first calls of one signature compile it once. Reentrant: a compile
# compiles its callees.
COMPILING = threading.RLock()


def pipeline(skip=()):
    """The pass pipeline compiled functions go through (less the passes in ``skip``); SCRIPTC_VERIFY=1 verifies
    after every pass (tests)."""
    from .passes import PassManager  # at the first compile: decorating loads no pass (test_import_cost)

    pm = PassManager(verify_each=os.environ.get("SCRIPTC_VERIFY") == "1")
    pm.passes = [p for p in pm.passes if p not in skip]
    return pm


def remake_ir(*args):
    """``compile.remake_ir``: the LLVM IR of code the on-disk cache brought, made again when it is asked for."""
    from .backend.llvm.compile import remake_ir  # loads llvmlite: only when IR is asked for (a hit loads none)

    return remake_ir(*args)


class CompiledFunction:
    """Base of the compiled callables. A subclass gives ``_bind(args, kwargs) -> (types, values)`` and
    ``_source_graph(types)`` (the graph of a signature before the pass pipeline, cached by the subclass), and may
    override ``_key`` (what a signature's caches are keyed by), ``_check_call`` (checks before native code runs)
    and ``_entry_allowed`` (whether calls may skip ``_dispatch``)."""

    def _init_compiled(self, name: str, *, fastmath: bool, nogil: bool, tiered: bool, cache) -> None:
        # Each callable gets a class of its own, so that calling it goes straight to a JIT-built CPython entry
        # point (``__call__`` on the class): one per compiled signature, each falling back to the one installed
        # before it and the first to ``_dispatch``, the Python path that binds, converts and compiles.
        self.__class__ = type(f"{type(self).__name__}[{name}]", (type(self),), {})
        self._entry = None
        self.fastmath, self.nogil, self.tiered = fastmath, nogil, tiered
        self.cache = cache  # False, True (the default directory) or a directory
        self._disk_cache = None
        self._optimized: dict = {}  # key -> the graph after the pass pipeline: what native code is made from
        self._native: dict = {}  # key -> NativeFunction
        self._shaped: dict = {}  # (types, shapes) -> graph_for's graph

    # -- what a subclass gives ----------------------------------------------------------------------------------
    def _bind(self, args, kwargs) -> tuple[tuple, list]:
        raise NotImplementedError

    def _source_graph(self, types: tuple) -> Graph:
        raise NotImplementedError

    def _key(self, types: tuple):
        return types

    def _check_call(self, types: tuple, values: list) -> None:
        """Checks a call makes before native code runs (none by default)."""

    def _entry_allowed(self, key) -> bool:
        return True

    def _load_by_source_key(self, types: tuple):
        """Machine code found without building the graph (scripted functions: ``source_key.py``); None."""
        return None

    def _remember_source_key(self, types: tuple, native, key: str, nogil: bool) -> None:
        """Record where the disk cache keeps a signature's code (scripted functions: ``source_key.py``)."""

    # -- graphs and code ----------------------------------------------------------------------------------------
    def graph_for_types(self, types: tuple, optimize: bool = True) -> Graph:
        """The graph for a signature: optimized (passes, fusion) by default, else before the pass pipeline."""
        if not optimize:
            return self._source_graph(types)
        key = self._key(types)
        g = self._optimized.get(key)
        if g is None:
            # the passes rewrite a copy of the source graph (same names: the same text as building it again)
            g = self._optimized[key] = pipeline().run(clone_graph(self._source_graph(types)))
        return g

    def native_for_types(self, types: tuple):
        """The machine code for one signature, compiled on first use."""
        key = self._key(types)
        native = self._native.get(key)
        if native is None:
            with COMPILING, gc_paused():
                native = self._native.get(key)  # (compiled by another thread meanwhile)
                if native is None:
                    native = self._compile_native(types, key)
        return native

    def _compile_native(self, types: tuple, key):
        # the backend is imported by the first compile: decorating loads none of it (test_import_cost), and a
        # disk-cache hit loads no llvmlite (backend/llvm/runtime/cached.py)
        from .backend.gil import releases_gil

        native = self._load_by_source_key(types) if self.cache else None
        if native is not None:
            return native
        graph = self.graph_for_types(types)
        nogil = self.nogil or releases_gil(graph)  # prange loops run with the GIL released
        cache = self._cache_directory()
        native = cache_key = None
        if cache is not None:  # a hit links cached machine code without loading LLVM
            from .backend.llvm.runtime.cached import load_cached  # (on-disk cache only: without it, no disk_cache)

            native, cache_key = load_cached(graph, self.fastmath, nogil, cache, True, remake_ir)
        if native is None:
            from .backend.llvm import compile_graph  # (LLVM: on a miss only)
            from .backend.llvm.runtime import optimizer  # (LLVM: on a miss only)

            optimized = (
                functools.partial(self._install_optimized, types, key, cache_key, nogil)
                if optimizer.applies(self)
                else None
            )
            native = compile_graph(
                graph,
                fastmath=self.fastmath,
                nogil=nogil,
                cache=cache,
                python_entry=True,
                key=cache_key,
                optimized=optimized,
            )
        if native.tier == "optimized" and cache_key is not None:
            self._remember_cached(types, native, cache_key, nogil)
        native.nogil = nogil
        return install_first(self, key, native, self._install_entry)

    def _install_optimized(self, types: tuple, key, cache_key: str | None, nogil: bool, native) -> None:
        """Replace a signature's first-tier code with its O3 code (called on the optimizer's thread)."""
        native.nogil = nogil
        install_optimized(self, key, native, self._install_entry)
        if cache_key is not None:
            self._remember_cached(types, native, cache_key, nogil)

    def _remember_cached(self, types: tuple, native, cache_key: str, nogil: bool) -> None:
        if self._cache_directory().path(native.name, cache_key).exists():
            self._remember_source_key(types, native, cache_key, nogil)

    def _cache_directory(self):
        if not self.cache:
            return None
        if self._disk_cache is None:
            from .backend.llvm.runtime.disk_cache import DiskCache, default_directory  # (as in _compile_native)

            where = default_directory(self.source.filename) if self.cache is True else self.cache
            self._disk_cache = DiskCache(where)
        return self._disk_cache

    def wait_optimized(self, timeout: float | None = None) -> bool:
        """Wait until every signature compiled so far runs its O3 code: a first call runs code made by a short
        pipeline while O3 compiles in another process (``backend/llvm/runtime/optimizer.py``). False if ``timeout``
        seconds passed first."""
        return wait_optimized(self._native.values(), timeout)

    # -- calling ------------------------------------------------------------------------------------------------
    def _run(self, args, kwargs):
        """A call: bind, compile on first use, run native code."""
        types, values = self._bind(args, kwargs)
        native = self.native_for_types(types)
        self._check_call(types, values)
        if needs_twins(values):
            return call_with_twins(native, values, native.written_inputs)
        return native(*values)

    @user_facing
    def _dispatch(self, *args, **kwargs):
        return self._run(args, kwargs)

    __call__ = _dispatch

    def _install_entry(self, key, native) -> None:
        """Let calls of this signature skip ``_dispatch``: a CPython entry point that falls back to the one
        installed before it when the arguments are not of its signature."""
        if not self._entry_allowed(key):
            return
        fallback = self._entry or self._dispatch
        nogil = getattr(native, "nogil", self.nogil)
        entry = native.python_entry(fallback, nogil)  # compiled into the signature's module
        if entry is None:
            from .backend.llvm.runtime.entry import EntryUnsupported, make_entry  # loads llvmlite: only when needed

            try:
                entry = make_entry(native, fallback, nogil=nogil)
            except EntryUnsupported:
                return  # this signature is called through _dispatch (ctypes)
        self._entry = entry
        type(self).__call__ = staticmethod(entry)

    @user_facing
    def interpret(self, *args, **kwargs):
        """Run the graph before the pass pipeline through the reference interpreter (the oracle for passes and
        backends)."""
        types, values = self._bind(args, kwargs)
        check_arguments(values, types)
        return interpret(self.graph_for_types(types, optimize=False), values)

    # -- introspection ------------------------------------------------------------------------------------------
    @user_facing
    def inspect_llvm(self, *args, **kwargs) -> str:
        """The optimized LLVM IR for these arguments' signature."""
        return self.native_for_types(self._bind(args, kwargs)[0]).llvm_ir

    @user_facing
    def inspect_asm(self, *args, **kwargs) -> str:
        """The host assembly for these arguments' signature."""
        return self.native_for_types(self._bind(args, kwargs)[0]).asm

    def code_for(self, *args, **kwargs) -> str:
        """The optimized graph for these arguments' signature as Python-like source (TorchScript's ``.code``)."""
        return python_code(self.graph_for_types(self._bind(args, kwargs)[0]), self.__name__)

    @user_facing
    def frontend_graph_for(self, *args, **kwargs) -> Graph:
        """The graph for these arguments' types before any pass."""
        return self.graph_for_types(self._bind(args, kwargs)[0], optimize=False)

    @user_facing
    def graph_for(self, *args, **kwargs) -> Graph:
        """The graph native code is generated from for these arguments' types (specialized, optimized, fused),
        with these arguments' shapes propagated through it: ``Double(2, 3)`` where a dimension is known. Native
        code itself is compiled per dtype and rank and works for every shape."""
        types, values = self._bind(args, kwargs)
        shapes = tuple(v.shape if isinstance(v, np.ndarray) else None for v in values)
        key = (self._key(types), shapes)
        g = self._shaped.get(key)
        if g is None:
            from .passes.shape_inference import specialize_shapes  # (as in pipeline)

            g = self._shaped[key] = specialize_shapes(self.graph_for_types(types), list(shapes))
        return g


__all__ = ["COMPILING", "CompiledFunction", "pipeline"]
