"""``scriptc.load(path)``: an exported library as a module of callables, without its source or a compiler.

Loading reads the library's ``.scriptc_manifest`` section straight from the ELF file (plain JSON: nothing in it
is executed or unpickled) and checks the format version, the target triple and that this CPU has every feature
the code was compiled for; only then is the library loaded (``dlopen``). A call picks the first exported
signature the arguments fit (the kinds ``@scriptc.script`` dispatches on: scalar kinds, array dtypes and ranks)
and calls the C entry point through ctypes; an error code raises the exception ``<lib>_last_error()`` names,
with its message.

That dispatch is the fallback. The library also carries a CPython entry point per signature (``entry.py``,
compiled into it by ``scriptc export``) that reads the C API functions and Python objects it uses from a table
the library defines: loading fills the table (the manifest names its slots) and makes each entry a builtin
function, so that a call whose arguments are exactly a signature's kinds goes from Python to the kernel with no
Python code in between, as a ``@scriptc.script`` function's does. An entry is used only where the first
signature accepting such arguments is its own (the dispatch above would pick no other).
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import json
import pickle
import shutil
import struct
import tempfile
import weakref
from pathlib import Path

import numpy as np

from ...ir.types import BOOL, FLOAT, INT, NONE, STR, TensorType, TupleType
from ...calling import bind_by_name, check_array_kind
from ...realign import Twins, needs_twins
from ...signatures import parse_arg_type, split_top_level
from . import FORMAT, SECTION
from .integrity import damage, section_span
from ..llvm.runtime import entry_runtime, symbols, threads
from ..llvm.runtime.entry_runtime import (
    builtin_function,
    entry_unsupported_reason,
    make_state,
    needs_rebuild,
    out_reader,
)
from ..llvm.runtime.errors import decode_argument, exception_class
from ..llvm.runtime.native import _rebuild
from ..llvm.runtime.threads import THREADS_SYMBOL
from .cabi import DTYPE_CODES

DTYPES = {code: np.dtype(name) for name, code in DTYPE_CODES.items()}


class LoadError(ImportError):
    """The file is not a library scriptc exported, or not one this machine can run."""


class ScriptcArray(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.c_int64 * 8),
        ("strides", ctypes.c_int64 * 8),
        ("ndim", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("owner", ctypes.c_void_p),
    ]


C_TYPES = {INT: ctypes.c_int64, FLOAT: ctypes.c_double, BOOL: ctypes.c_bool, STR: ctypes.c_char_p}


def read_manifest(path: Path) -> dict:
    """The manifest of an exported library, read from its ELF section headers (the library is not loaded)."""
    try:
        if not path.is_file():  # (a device or a pipe would be read without end)
            raise LoadError(f"{path} is not a file")
        with open(path, "rb") as f:
            if f.read(6) != b"\x7fELF\x02\x01":
                raise LoadError(f"{path} is not a 64-bit little-endian ELF shared library")
        data = path.read_bytes()
    except OSError as e:
        raise LoadError(f"cannot read {path}: {e.strerror}") from None
    try:
        span = section_span(data, SECTION)
        if span is None:
            raise LoadError(f"{path} was not made by scriptc export (no {SECTION} section)")
        offset, size = span
        manifest = json.loads(data[offset : offset + size].rstrip(b"\0"))
    except (struct.error, ValueError, IndexError, UnicodeDecodeError) as e:
        raise LoadError(f"{path}: damaged library or manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise LoadError(
            f"{path}: manifest format {manifest.get('format') if isinstance(manifest, dict) else '?'}, "
            f"this scriptc reads format {FORMAT}: export it again"
        )
    why = damage(data, SECTION, manifest)
    if why is not None:
        raise LoadError(f"{path}: damaged library: {why}; export it again")
    return manifest


def check_target(path: Path, manifest: dict) -> None:
    import llvmlite.binding as llvm

    triple = llvm.get_process_triple()
    if manifest.get("triple", "").split("-")[0] != triple.split("-")[0]:
        raise LoadError(f"{path} was compiled for {manifest.get('triple')}, this machine is {triple}")
    have = set(llvm.get_host_cpu_features().flatten().split(","))
    missing = [f for f in manifest.get("features", []) if f not in have]
    if missing:
        raise LoadError(
            f"{path} was compiled for a {manifest.get('cpu')} CPU; this CPU "
            f"({llvm.get_host_cpu_name()}) lacks {', '.join(f.lstrip('+') for f in missing[:8])}: "
            "export it again on (or for) this machine"
        )


class Library:
    """The functions of an exported library, as attributes."""

    def __init__(self, path, manifest: dict, lib: ctypes.CDLL):
        self.path, self.name, self._lib = str(path), manifest["library"], lib
        self._last_error = getattr(lib, f"{self.name}_last_error")
        self._last_error.restype, self._last_error.argtypes = ctypes.c_char_p, []
        self._release = getattr(lib, f"{self.name}_release")
        self._release.restype, self._release.argtypes = None, [ctypes.POINTER(ScriptcArray)]
        # libraries older than f-strings in exported code return no strs of their own
        self._release_str = getattr(lib, f"{self.name}_release_str", None)
        if self._release_str is not None:
            self._release_str.restype, self._release_str.argtypes = None, [ctypes.c_void_p]
        self._python_error = None
        self._exact_errors = {int(code): entry for code, entry in manifest.get("errors", {}).items()}
        entries = self._fill_python_table(manifest)
        defaults = manifest.get("defaults", {})
        self.functions = {
            name: LoadedFunction(self, name, sigs, entries, defaults.get(name))
            for name, sigs in manifest["functions"].items()
        }
        for name, fn in self.functions.items():
            setattr(self, name, fn)

    def _fill_python_table(self, manifest: dict) -> bool:
        """Fill the table the CPython entries read (False, and the ctypes path only, where anything is missing
        or this process's object layouts are not the ones the entries were made for)."""
        table, error = manifest.get("python_table"), manifest.get("python_error")
        if not table or not error:
            return False
        if entry_runtime.OBJECT_LAYOUT_ERROR:
            return False
        addresses = [symbols.address_of(name) for name in table["slots"]]
        try:
            slots = (ctypes.c_void_p * len(addresses)).in_dll(self._lib, table["symbol"])
            self._python_error = getattr(self._lib, error)
        except (ValueError, AttributeError):
            return False
        if not all(addresses):
            return False
        for k, address in enumerate(addresses):
            slots[k] = address
        self._python_error.restype, self._python_error.argtypes = ctypes.c_int, [ctypes.c_int32]
        return True

    def raise_python_error(self, status: int):
        """``raise_error`` of the CPython entries: the library formats this thread's message, then it is raised."""
        self._python_error(status)
        self.raise_error(status)

    def __repr__(self):
        return f"<scriptc library {self.name!r} from {self.path}: {', '.join(self.functions)}>"

    def __reduce__(self):  # by reference, as scripted functions pickle: the file is loaded where unpickled
        return _restore, (self.path,)

    def raise_error(self, status: int):
        exact = self._exact_errors.get(status)
        if exact is not None:  # the exception the scripted function raises, its arguments as they were
            exc_type = exception_class(exact[0])
            if exc_type is not None:
                raise exc_type(*(decode_argument(a) for a in exact[1]))
        text = (self._last_error() or b"").decode("utf-8", "replace")
        name, _, message = text.partition(": ")
        exc_type = getattr(builtins, name, None)
        if not (isinstance(exc_type, type) and issubclass(exc_type, Exception)):
            exc_type, message = RuntimeError, f"{text} (status {status})"
        if exc_type is KeyError:  # its text is its argument's repr: KeyError(2) says 2, KeyError('2') '2'
            try:
                raise exc_type(ast.literal_eval(message))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                pass
        raise exc_type(message)


class GraphText(str):
    """The IR a function was exported from, as text (``print(m.f.graph)``)."""

    def __str__(self):
        return str.__str__(self)


class LoadedFunction:
    """One exported function: its signatures, each a C entry point (and a CPython one, ``entries``)."""

    def __init__(
        self, library: Library, name: str, signatures: list[dict], entries: bool = False, defaults: dict | None = None
    ):
        self.__name__ = name
        self._library = library
        self._signatures = [_Signature(library, s) for s in signatures]
        self.signatures = [s["signature"] for s in signatures]
        self.graph = GraphText(signatures[0]["graph"])
        self.graphs = {s["signature"]: GraphText(s["graph"]) for s in signatures}
        self._params = list(signatures[0]["params"])
        self._defaults = defaults or {}
        # its own class, whose __call__ becomes the first CPython entry (see _install_entries)
        self.__class__ = type(f"LoadedFunction[{name}]", (LoadedFunction,), {})
        self._entry = None
        if entries:
            self._install_entries(signatures)

    def __repr__(self):
        return f"<exported function {self.__name__} ({'; '.join(self.signatures)})>"

    def __reduce__(self):
        return _restore, (self._library.path, self.__name__)

    def _bind(self, args: tuple, kwargs: dict) -> tuple:
        """Keyword arguments and defaults in their parameters' places, with CPython's errors."""
        defaults = {p: decode_argument(value) for p, value in self._defaults.items()}
        return tuple(bind_by_name(self.__name__, self._params, defaults, args, kwargs))

    def _dispatch(self, *args, **kwargs):
        if kwargs or len(args) != len(self._params):
            args = self._bind(args, kwargs)
        for name, a in zip(self._params, args):
            if isinstance(a, np.ndarray) and (type(a) is not np.ndarray or not a.dtype.isnative):
                check_array_kind(self.__name__, name, a, alignment=False)  # a mask, a byte order: as scripted
        if needs_twins(args):  # unaligned arrays: through aligned twins, as scripted functions take them
            twins = Twins(args)
            sig = next((sig for sig in self._signatures if sig.accepts(twins.args)), None)
            if sig is not None:
                try:
                    result = sig.call(twins.args)
                finally:
                    twins.write_back(sig.written)
                return twins.result(result)
        for sig in self._signatures:
            if sig.accepts(args):
                return sig.call(args)
        for sig in self._signatures:  # an int beyond 64 bits where an int goes: the scripted function's error
            if sig.accepts([0 if type(a) is int else a for a in args]):
                raise OverflowError("int too large to convert to a 64-bit int")
        got = ", ".join(_describe(a) for a in args)
        raise TypeError(f"{self.__name__}() was exported for ({'), ('.join(self.signatures)}), not ({got})")

    __call__ = _dispatch

    def _install_entries(self, signatures: list[dict]) -> None:
        """A chain of the signatures' CPython entries, in export order, each falling back to the next and the
        last to ``_dispatch``; a signature an earlier one accepts every argument of is left out (the dispatch
        picks the earlier one for its arguments)."""
        usable = []
        for k, (sig, info) in enumerate(zip(self._signatures, signatures)):
            symbol = info.get("python_entry")
            if not symbol or any(_shadows(earlier, sig) for earlier in self._signatures[:k]):
                continue
            if entry_unsupported_reason(sig, rebuild=True) is not None:
                continue
            usable.append((sig, ctypes.cast(self._library._lib[symbol], ctypes.c_void_p).value))
        fallback = self._dispatch
        for sig, address in reversed(usable):
            rebuild = sig.rebuild_out if needs_rebuild(sig.result_type) else None
            state = make_state(fallback, rebuild, self._library.raise_python_error)
            state.native, state.symbol = sig, f"{self.__name__}({sig.signature})"
            fallback = builtin_function(address, self.__name__, state)
        if usable:
            self._entry = fallback
            type(self).__call__ = staticmethod(fallback)


class _Signature:
    def __init__(self, library: Library, entry: dict):
        self.library = library
        self.signature = entry["signature"]
        self.types = [_parse_type(t) for t in _split(entry["signature"])]
        self.results = [_parse_type(t) for t in entry["results"]]
        self.is_tuple = entry["tuple"]
        # arguments the code may write: a read-only one raises NumPy's error, as the scripted function's does
        self.written = {int(k): str(message) for k, message in entry.get("written", {}).items()}
        # the kernel's signature, as the CPython entry sees it
        self.arg_types = self.types
        self.result_type = (
            TupleType(tuple(self.results)) if self.is_tuple else self.results[0] if self.results else NONE
        )
        self._reader = None
        self.fn = getattr(library._lib, entry["c_name"])
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [
            ctypes.POINTER(ScriptcArray) if isinstance(t, TensorType) else C_TYPES[t] for t in self.types
        ] + [
            ctypes.POINTER(ScriptcArray) if isinstance(t, TensorType) else ctypes.POINTER(C_TYPES[t])
            for t in self.results
        ]

    def accepts(self, args) -> bool:
        return len(args) == len(self.types) and all(_fits(t, a) for t, a in zip(self.types, args))

    def rebuild_out(self, out_address: int, args):
        """The result from the kernel's out struct (the CPython entry's ``rebuild``: results that are views)."""
        if self._reader is None:
            self._reader = out_reader(self.result_type)
        return _rebuild(self.result_type, iter(self._reader(out_address)), args)

    def call(self, args):
        for k, message in self.written.items():
            if isinstance(args[k], np.ndarray) and not args[k].flags.writeable:
                raise ValueError(message)
        c_args = [
            _c_array(a)
            if isinstance(t, TensorType)
            else (a.encode() if t == STR else (bool(a) if t == BOOL else (int(a) if t == INT else float(a))))
            for t, a in zip(self.types, args)
        ]
        outs = [ScriptcArray() if isinstance(t, TensorType) else C_TYPES[t]() for t in self.results]
        status = self.fn(
            *[ctypes.byref(a) if isinstance(a, ScriptcArray) else a for a in c_args], *[ctypes.byref(o) for o in outs]
        )
        if status:
            self.library.raise_error(status)
        values = [self._result(t, o, args) for t, o in zip(self.results, outs)]
        if self.is_tuple:
            return tuple(values)
        return values[0] if values else None

    def _result(self, t, out, args):
        if not isinstance(t, TensorType):
            value = out.value
            if t != STR:
                return value
            if self.library._release_str is not None:  # a str the library made: copied, then given back
                self.library._release_str(ctypes.cast(ctypes.byref(out), ctypes.POINTER(ctypes.c_void_p))[0])
            return value.decode()
        shape = tuple(out.shape[: out.ndim])
        strides = tuple(out.strides[: out.ndim])
        dtype = DTYPES[out.dtype]
        interface = {
            "data": (out.data or 0, False),
            "shape": shape,
            "strides": strides,
            "typestr": dtype.str,
            "version": 3,
        }
        holder = _Memory(interface)
        if out.owner:
            kept = ScriptcArray.from_buffer_copy(out)
            weakref.finalize(holder, self.library._release, ctypes.byref(kept))
            holder.kept = kept
            return np.asarray(holder)
        for a in args:
            if isinstance(a, np.ndarray) and _contains(a, out.data or 0):
                holder.owner = a
                if not a.flags.writeable:
                    interface["data"] = (out.data, True)
                return np.asarray(holder)
        return np.array(np.asarray(holder), copy=True)  # constant data inside the library


class _Memory:
    def __init__(self, interface):
        self.__array_interface__ = interface


def _contains(a: np.ndarray, address: int) -> bool:
    lo, hi = np.lib.array_utils.byte_bounds(a) if hasattr(np.lib, "array_utils") else np.byte_bounds(a)
    return lo <= address < max(hi, lo + 1)


def _c_array(a: np.ndarray) -> ScriptcArray:
    s = ScriptcArray()
    s.data = a.__array_interface__["data"][0]
    for k in range(a.ndim):
        s.shape[k], s.strides[k] = a.shape[k], a.strides[k]
    s.ndim, s.dtype = a.ndim, DTYPE_CODES[a.dtype.name]
    return s


def _shadows(earlier: _Signature, later: _Signature) -> bool:
    """Whether ``earlier`` accepts every argument whose kinds are exactly ``later``'s (then the dispatch never
    picks ``later`` for them)."""
    if len(earlier.types) != len(later.types):
        return False
    wider = {INT: (BOOL,), FLOAT: (INT, BOOL)}
    return all(e == t or t in wider.get(e, ()) for e, t in zip(earlier.types, later.types))


def _fits(t, a) -> bool:
    if isinstance(t, TensorType):
        return (
            isinstance(a, np.ndarray)
            and a.dtype.name == t.dtype
            and a.ndim == t.rank
            and a.dtype.isnative
            and a.flags.aligned
        )
    if t == BOOL:
        return isinstance(a, (bool, np.bool_))
    if t == INT:
        return isinstance(a, (int, np.integer)) and -(2**63) <= int(a) < 2**63
    if t == FLOAT:
        return isinstance(a, (float, int, np.floating, np.integer))
    return t == STR and isinstance(a, str)


def _describe(a) -> str:
    if isinstance(a, np.ndarray):
        return f"{a.dtype.name}[{','.join('*' * a.ndim)}]"
    return type(a).__name__


def _parse_type(text: str):
    """A type of the manifest: an argument type of the command line, or str (an f-string's result)."""
    return STR if text.strip() == "str" else parse_arg_type(text.strip())


def _split(signature: str) -> list[str]:
    return split_top_level(signature) if signature.strip() else []


def load(path) -> Library:
    """Load a library made by ``scriptc export``."""
    path = Path(path).resolve()
    manifest = read_manifest(path)
    check_target(path, manifest)
    try:
        lib = _dlopen(path)
    except (OSError, UnicodeDecodeError) as e:  # (dlopen's message, of a damaged file, need not be UTF-8)
        raise LoadError(f"cannot load {path}: {e}") from None
    try:
        count = ctypes.c_int64.in_dll(lib, THREADS_SYMBOL)  # a library with parallel regions (pool.c)
    except ValueError:
        count = None
    if count is not None:
        threads.follow(count)
    try:
        return Library(path, manifest, lib)
    except (KeyError, ValueError, TypeError, AttributeError) as e:  # the manifest and the library disagree
        raise LoadError(f"{path}: damaged library or manifest ({type(e).__name__}: {e})") from None


_OPENED: dict[str, tuple] = {}  # path -> the file's identity when this process loaded it
_UNPICKLED: dict[tuple, Library] = {}  # (path, identity) -> the library unpickled functions come from


def _restore(path: str, name: str | None = None):
    """A pickled library (or one of its functions): the file at ``path``, loaded once per process and version
    of the file (a process pool unpickles a function for every task)."""
    key = (path, _identity(Path(path)))
    found = _UNPICKLED.get(key)
    if found is None:
        found = _UNPICKLED[key] = load(path)
    if name is None:
        return found
    function = found.functions.get(name)
    if function is None:
        raise pickle.UnpicklingError(
            f"{path} exports no function {name!r} (any more): exported functions "
            f"pickle by reference to their library's file"
        )
    return function


def _identity(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None  # load() says what is wrong with the file
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _dlopen(path: Path) -> ctypes.CDLL:
    """The library at ``path``. The dynamic loader hands back the library it already loaded from a path, so a
    file exported again to the same path since (a notebook's edit, export, load) is loaded from a private
    copy: the old machine code would run with the new manifest."""
    identity = _identity(path)
    seen = _OPENED.setdefault(str(path), identity)
    if seen == identity:
        return ctypes.CDLL(str(path))
    with tempfile.TemporaryDirectory(prefix="scriptc-load-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        return ctypes.CDLL(str(copy))  # (mapped: the file may go)
