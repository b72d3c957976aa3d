"""The on-disk cache's source key: a hit before the frontend and the passes run.

The cache's entries are keyed by the optimized graph (``backend/llvm/runtime/disk_cache.py``), which is exact but costs
the frontend and the pass pipeline on every hit (two thirds of a hit's time on a stencil). The source key is
made from what those two read instead: the function's source lines and position, its options, defaults and
annotations, the kinds of the arguments, scriptc's own files (a new or edited scriptc is a miss even at the same
version), and the target. It names a small manifest beside the entries that records everything else the graph
depended on, as the frontend's resolvers saw it (``Resolver.seen``): for each global name or dotted path a
function read (``np.exp``, ``SCALE``, ``helpers.kernel``), a fingerprint of what it named — a constant's type
and value, a module's name, a NumPy or builtin function by its importable name, a NamedTuple class's fields, a
scripted callee's own source key fields, recursively, across files.

A lookup first checks every recorded name against what it names in this process now; one that differs (a
callee edited in another file, a global constant changed) makes the lookup a miss, and the function compiles
the usual way (where the graph key may still find the entry). Anything the fingerprints cannot vouch for (an
object that is not importable by name, an array constant, a ``scriptc.grad`` of a function) gets no manifest.
The manifest also holds what a call needs without the graph (the argument and result types, the inputs the code
writes, whether it releases the GIL) and the graph key of the entry; the graph itself is made on first use of
``native.graph`` (``graph_for``, ``inspect_llvm``). Manifests are JSON: nothing in them is executed.
"""

from __future__ import annotations

import json
import os
import sys
import types as pytypes
from pathlib import Path

import numpy as np

from .backend.llvm.runtime.digests import sha256
from .backend.llvm.runtime.disk_cache import target_description
from .frontend import _MISSING
from .function import ScriptFunction
from .ir.types import NAMED_TUPLES, is_named_tuple_class, parse_type

FORMAT = 1


def fingerprint(obj):
    """A JSON value telling what ``obj`` means to the compiler, or None where it cannot be told by value or name."""
    if obj is _MISSING:
        return ["missing"]
    if obj is None or type(obj) in (bool, int, float, complex, str):
        return ["value", type(obj).__name__, repr(obj)]
    if type(obj) is tuple:
        parts = [fingerprint(o) for o in obj]
        return ["tuple", parts] if all(p is not None and p[0] in ("value", "tuple") for p in parts) else None
    if isinstance(obj, np.generic):
        return ["value", obj.dtype.str, repr(obj.item())]
    if isinstance(obj, np.dtype):
        return ["dtype", obj.str]
    if isinstance(obj, pytypes.ModuleType):
        return ["module", obj.__name__]
    if getattr(type(obj), "scriptc_callable", False):  # a scripted function, or a transform of one
        return _script_fingerprint(obj) if isinstance(obj, ScriptFunction) else None
    if is_named_tuple_class(obj):
        annotations = {
            k: fingerprint(v) if is_named_tuple_class(v) else repr(v)  # (nested records too)
            for k, v in obj.__annotations__.items()
        }
        return [
            "namedtuple",
            obj.__module__,
            obj.__qualname__,
            list(obj._fields),
            annotations,
            repr(getattr(obj, "_field_defaults", {})),
        ]
    return _importable(obj)


def _importable(obj):
    """["object", module, qualified name] for an object that is that attribute of that module (np.exp, range)."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if isinstance(obj, np.ufunc):
        module, name = "numpy", obj.__name__
    if not isinstance(module, str) or not isinstance(name, str) or module not in sys.modules:
        return None
    found = sys.modules[module]
    for part in name.split("."):
        found = getattr(found, part, _MISSING)
    return ["object", module, name] if found is obj else None


def _script_fingerprint(fn) -> list:
    src = fn.source
    return [
        "script",
        src.filename,
        fn.__qualname__,
        src.line_offset,
        src.col_offset,
        src.text,
        fn.fastmath,
        fn.nogil,
        repr(sorted(fn.defaults.items())),
        [str(t) for t in fn.param_types],
        str(fn.return_type),
        fn.param_dtypes,
    ]


def _digest(value) -> str:
    return sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def dependencies(fn) -> dict | None:
    """{digest of a scripted function's fingerprint: {name or path it read: fingerprint}} for ``fn`` and every
    scripted function it read, transitively; None if any fingerprint cannot be made."""
    deps, todo = {}, [fn]
    while todo:
        f = todo.pop()
        ident = _digest(_script_fingerprint(f))
        if ident in deps:
            continue
        seen = deps[ident] = {}
        for path, obj in list(f.resolver.seen.items()):
            fp = fingerprint(obj)
            if fp is None:
                return None
            seen[path] = fp
            if fp[0] == "script":
                todo.append(obj)
    return deps


def still_valid(fn, deps: dict) -> bool:
    """Whether every name the manifest recorded still names the same thing (and registers the NamedTuple classes
    among them, which the types of the arguments and results refer to)."""
    done, todo = set(), [fn]
    while todo:
        f = todo.pop()
        ident = _digest(_script_fingerprint(f))
        if ident in done:
            continue
        done.add(ident)
        recorded = deps.get(ident)
        if not isinstance(recorded, dict):
            return False
        for path, want in recorded.items():
            obj = _current(f, path)
            if fingerprint(obj) != want:
                return False
            if want[0] == "script":
                todo.append(obj)
            elif want[0] == "namedtuple":
                NAMED_TUPLES[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return True


def _current(fn, path: str):
    first, *rest = path.split(".")
    obj = fn.resolver.current_value(fn.source, first)
    for part in rest:
        obj = getattr(obj, part, _MISSING)
    return obj


_BUILD: list[str] = []


def build_fingerprint() -> str:
    """scriptc's own files (names, sizes, modification times): a changed compiler is a miss at the same version."""
    if not _BUILD:
        stats, todo = [], [str(Path(__file__).parent)]
        while todo:
            with os.scandir(todo.pop()) as found:
                for entry in sorted(found, key=lambda e: e.name):
                    if entry.is_dir():
                        if entry.name != "__pycache__":
                            todo.append(entry.path)
                    elif entry.name.endswith((".py", ".c")):
                        st = entry.stat()
                        stats.append(f"{entry.path} {st.st_size} {st.st_mtime_ns}")
        _BUILD.append(_digest(stats))
    return _BUILD[0]


def source_key(fn, types: tuple, directory) -> str | None:
    """The source key of ``fn`` for arguments of these kinds (None without a kept host description)."""
    target = target_description(directory, llvm=False)
    if target is None:
        return None
    return _digest(
        {
            "format": FORMAT,
            "function": _script_fingerprint(fn),
            "types": repr(types),
            "build": build_fingerprint(),
            "target": target,
        }
    )


def manifest(fn, native, key: str, nogil: bool) -> dict | None:
    """What a source-key hit needs: the entry's graph key, the call's types, the written inputs, the names read."""
    deps = dependencies(fn)
    if deps is None:
        return None
    arg_types = [str(t) for t in native.arg_types]
    result = str(native.result_type)
    if [parse_type(t) for t in arg_types] != list(native.arg_types) or parse_type(result) != native.result_type:
        return None
    return {
        "format": FORMAT,
        "key": key,
        "name": native.name,
        "args": arg_types,
        "result": result,
        "written": {str(k): v for k, v in native.written_inputs.items()},
        "nogil": nogil,
        "deps": deps,
    }


def read_manifest(fn, data: dict):
    """(graph key, (name, argument types, result type), written inputs, nogil) of a manifest whose names all
    still mean what they meant, else None."""
    try:
        if data.get("format") != FORMAT or not still_valid(fn, data["deps"]):
            return None
        signature = (data["name"], [parse_type(t) for t in data["args"]], parse_type(data["result"]))
        written = {int(k): v for k, v in data["written"].items()}
        return data["key"], signature, written, bool(data["nogil"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
