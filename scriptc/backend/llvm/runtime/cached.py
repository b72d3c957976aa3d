"""The on-disk cache's hit path: machine code for a graph from a ``disk_cache.DiskCache``, linked without LLVM.

``load_cached`` makes the entry's key (without LLVM once this machine's host description is kept: see
``disk_cache.py``), reads the entry, registers what its code refers to by content (error codes, print plans, str
constants: checked to be exactly what the codes were derived from, never executed), links the runtimes it calls
and the object file (``objload``), and returns a ``NativeFunction`` with its CPython entry point. Anything that
does not check out (a damaged entry, a runtime missing, a description that does not decode to its code, a
symbol nothing in the process provides) is a rejected entry: the caller compiles, and stores a fresh one.
Nothing here imports llvmlite.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

from ....ir.core import Graph
from ....ir.types import Type
from . import disk_cache, objload, runtimes
from .callbacks import restore_plan, restore_str
from .disk_cache import source_files
from .entry_runtime import entry_unsupported_reason
from .errors import ERROR_TABLE
from .native import NativeFunction

_LOADED: dict[str, dict[str, int]] = {}  # cache key -> addresses of code already linked into this process
_REJECTED: set[str] = set()  # keys of entries this process found damaged
_LOCK = threading.Lock()


def remember(key: str, addresses: dict[str, int]) -> None:
    """Code compiled in this process for ``key`` (a second function with the same graph reuses it)."""
    with _LOCK:
        _LOADED[key] = dict(addresses)


def load_cached(graph: Graph, fastmath: bool, nogil: bool, cache, python_entry: bool, remake_ir):
    """(NativeFunction from the cache or None, the entry's key). ``remake_ir``: ``compile.remake_ir``, which the
    function calls if its LLVM IR is asked for (the runtime does not import the compiler)."""
    options = {"fastmath": fastmath, "nogil": nogil}
    text, files = str(graph), source_files(graph)
    key = disk_cache.cache_key(text, files, options, cache.directory, llvm=False)
    if key is None:  # no host description kept for this machine yet: ask LLVM (and keep its answer)
        key = disk_cache.cache_key(text, files, options, cache.directory, llvm=True)
    signature = (graph.name, [v.type for v in graph.inputs], graph.outputs[0].type)
    return load_entry(key, signature, graph, cache, python_entry, fastmath, nogil, remake_ir), key


def load_entry(
    key: str, signature: tuple, graph, cache, python_entry: bool, fastmath: bool, nogil: bool, remake_ir, written=None
):
    """The NativeFunction of the entry ``key`` (None when absent or rejected). ``signature``: (name, argument
    types, result type); ``graph``: the graph, or a function making it (the source key's hits: see
    ``source_key.py``), then with the ``written`` inputs recorded with the entry."""
    name, arg_types, result_type = signature
    with _LOCK:
        addresses = _LOADED.get(key)
        if addresses is None and key in _REJECTED:  # the source key's lookup found it damaged: compile
            return None
    if addresses is None:
        found = cache.load(name, key)
        addresses = _link(*found, cache) if found is not None else None
        if addresses is None:
            disk_cache.stats["rejected"] += found is not None
            if found is not None or cache.path(name, key).exists():  # there, but damaged
                with _LOCK:
                    _REJECTED.add(key)
            return None
        remember(key, addresses)
    disk_cache.stats["hits"] += 1
    entry, pyentry, release = addresses["entry"], addresses.get("python_entry"), addresses.get("release")
    prefix = f"scriptc.c{key[:20]}"

    def remake():
        return remake_ir(graph if isinstance(graph, Graph) else graph(), prefix, nogil, fastmath, python_entry)

    if pyentry and not (python_entry and _entry_usable(arg_types, result_type)):
        pyentry = 0
    return NativeFunction(
        graph,
        None,
        addresses["entry_symbol"],
        entry,
        None,
        remake,
        python_entry_address=pyentry or 0,
        release_address=release or 0,
        written=written,
        signature=signature,
    )


def _entry_usable(arg_types: list, result_type: Type) -> bool:
    """The CPython entry reads object layouts that are checked in each process (entry_runtime)."""
    signature = SimpleNamespace(arg_types=arg_types, result_type=result_type)
    return entry_unsupported_reason(signature, rebuild=True) is None


def _link(header: dict, obj: bytes, cache) -> dict[str, int] | None:
    """Register what the entry's code refers to, link its runtimes and its object file; the addresses of its
    entry points, or None if anything does not check out."""
    try:
        if not all(ERROR_TABLE.restore(d) for d in header["errors"]):
            return None
        if not all(restore_plan(d) for d in header["plans"]):
            return None
        if not all(restore_str(v) for v in header["strs"]):
            return None
        if not runtimes.ensure(header["runtimes"], cache.load_runtime):
            return None
        wanted = {what: header[what] for what in ("entry", "python_entry", "release") if header.get(what)}
        found = objload.link(obj, list(wanted.values()))
        return {"entry_symbol": header["entry"], **{what: found[name] for what, name in wanted.items()}}
    except (objload.ObjectLoadError, KeyError, TypeError, ValueError):  # the JIT's LinkError included
        return None
