"""Runtime modules: code compiled once per process that generated code calls by name (the thread pool's
``scriptc.pool.run``, the summation kernels ``scriptc.shared.*`` every reduction site shares), kept as object
files so that code from the on-disk cache can bring them into a process without LLVM.

``register(obj, provides, init)`` records a runtime's object file when it is compiled (``provides``: the names
it binds -> its symbols defining them; ``init``: a ``void f(void)`` to run once loaded, and again in a forked
child). ``runtime_dependencies(obj)`` lists, in load order, the runtimes an object file calls (a cache entry
records them with the object files' SHA-256); ``load(description, read)`` links one from its object file in a
process that has not compiled it, and binds what it provides. A runtime's file is content-addressed, so a cache
entry always gets exactly the runtime its code was linked against.
"""

from __future__ import annotations

import ctypes
import os
import threading

from . import objload, symbols
from .digests import sha256

_BY_NAME: dict[str, dict] = {}  # a name a runtime provides -> its description
_LOADED: set[str] = set()  # SHA-256 of the runtimes linked into this process
_LOCK = threading.RLock()
_INIT_CALLS: list = []  # ctypes functions kept alive (and re-run after fork)


def register(
    obj: bytes, provides: dict[str, str], init: str | None = None, address_of=None, first_tier: bool = False
) -> dict:
    """Record a runtime linked in this process from ``obj``; ``address_of(symbol)``: where it was linked.
    ``first_tier``: code to be replaced by O3's (``summation.compiled_once``), which no cache entry records."""
    sha = sha256(obj).hexdigest()
    description = {"sha256": sha, "provides": dict(provides), "init": init, "obj": obj, "first_tier": first_tier}
    with _LOCK:
        for name in provides:
            _BY_NAME[name] = description
        _LOADED.add(sha)
    return description


def runtime_dependencies(obj: bytes) -> list | None:
    """[[sha256, provides, init], ...] for the runtimes ``obj`` calls, dependencies first; None if it calls a
    runtime whose object file this process does not have (it came from the JIT)."""
    order: list[dict] = []

    def visit(code: bytes) -> bool:
        try:
            undefined = objload.undefined_symbols(code)
        except objload.ObjectLoadError:
            return False
        for name in undefined:
            if not name.startswith(RUNTIME_PREFIXES):
                continue
            d = _BY_NAME.get(name)
            if d is None or d["first_tier"]:
                return False
            if d not in order:
                if not visit(d["obj"]):
                    return False
                order.append(d)
        return True

    if not visit(obj):
        return None
    return [[d["sha256"], d["provides"], d["init"]] for d in order]


RUNTIME_PREFIXES = ("scriptc.pool.run", "scriptc.shared.", "scriptc.interrupt.")


def objects(dependencies: list) -> list[tuple[str, bytes]]:
    """(sha256, object file) of each runtime in ``dependencies`` (this process compiled them all)."""
    by_sha = {d["sha256"]: d["obj"] for d in _BY_NAME.values()}
    return [(sha, by_sha[sha]) for sha, _, _ in dependencies]


def ensure(dependencies: list, read) -> bool:
    """Link the runtimes a cache entry depends on that this process lacks; ``read(sha256) -> object file or
    None``. False when one cannot be had (the entry is then not used)."""
    with _LOCK:
        for item in dependencies:
            sha, provides, init = item
            if sha in _LOADED:
                continue
            if any(symbols.bound(name) for name in provides):
                return False  # this process has its own (another build of it): do not mix the two
            obj = read(sha)
            if obj is None or sha256(obj).hexdigest() != sha:
                return False
            try:
                found = objload.link(obj, list(provides.values()) + ([init] if init else []))
                for name, symbol in provides.items():
                    symbols.bind(name, found[symbol])
                if init:
                    _run_init(found[init])
            except (objload.ObjectLoadError, KeyError):
                return False
            description = register(obj, provides, init)
            description["linked"] = found
    return True


def _run_init(address: int) -> None:
    fn = ctypes.CFUNCTYPE(None)(address)
    fn()
    _INIT_CALLS.append(fn)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=fn)
