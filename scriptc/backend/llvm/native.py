"""``compile_graph(graph) -> NativeFunction``: lower, optimize, JIT, and call from Python."""
from __future__ import annotations

import ctypes
import itertools
import re
import struct
import threading

import numpy as np

from ...ir.core import Graph
from ..argument_writes import written_inputs
from ...ir.types import BOOL, FLOAT, INT, STR, ListType, NamedTupleType, TensorType, TupleType, Type
from .constants import constant_containing
from . import disk_cache, strings
from .engine import LIBC, LinkError, engine, make_caller
from .errors import ERROR_TABLE
from .lower import ModuleLowering, check_graph, leaves
from .strings import take_str

_COUNTER = itertools.count()
_probe = np.zeros(3)
_ARRAY_LAYOUT_OK = ctypes.c_void_p.from_address(id(_probe) + 16).value == _probe.__array_interface__["data"][0]
del _probe
_COUNTER_LOCK = threading.Lock()
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _arg_converter(t: Type, read_only_message: str | None = None):
    """Python argument -> the list of C values (leaves) for a graph input of type ``t`` (the numeric tower: a
    bool is an int, an int a float). ``read_only_message``: the input may be written, so a read-only array is
    refused with NumPy's ValueError."""
    if t == INT:
        def conv(x):
            if not isinstance(x, (int, np.integer)):
                raise TypeError(f"expected int, got {type(x).__name__}")
            v = int(x)
            if not INT64_MIN <= v <= INT64_MAX:
                raise OverflowError("int too large to convert to a 64-bit int")
            return [v]
        return conv
    if t == FLOAT:
        def conv(x):
            if not isinstance(x, (float, int, np.floating, np.integer)):
                raise TypeError(f"expected float, got {type(x).__name__}")
            return [float(x)]
        return conv
    if t == BOOL:
        def conv(x):
            if not isinstance(x, (bool, np.bool_)):
                raise TypeError(f"expected bool, got {type(x).__name__}")
            return [bool(x)]
        return conv
    if isinstance(t, TensorType):
        def conv(x):
            if not isinstance(x, np.ndarray) or x.dtype.name != t.dtype or x.ndim != t.rank:
                raise TypeError(f"expected a {t.dtype} array of rank {t.rank}, got {_describe(x)}")
            if not (x.dtype.isnative and x.flags.aligned):
                raise TypeError("arrays with a non-native byte order or unaligned data are not supported")
            if read_only_message is not None and not x.flags.writeable:
                raise ValueError(read_only_message)
            return [0, x.__array_interface__["data"][0], *x.shape, *x.strides]
        return conv
    if isinstance(t, ListType):
        return None   # listbox.call_with_lists converts lists
    if isinstance(t, TupleType):
        parts = [_arg_converter(e, read_only_message) for e in t.elems]

        def conv(x):
            if not isinstance(x, tuple) or len(x) != len(parts):
                raise TypeError(f"expected {t}, got {_describe(x)}")
            return [leaf for p, e in zip(parts, x) for leaf in p(e)]
        return conv
    raise TypeError(f"cannot pass {t} to native code")


def _describe(x) -> str:
    if isinstance(x, np.ndarray):
        return f"a {x.dtype} array of rank {x.ndim}"
    return type(x).__name__


def _release(meminfo: int) -> None:
    """Drop one reference to native array memory from Python (a list's element when the list is freed)."""
    count = ctypes.c_int64.from_address(meminfo)
    count.value -= 1
    if count.value == 0:
        LIBC.free(ctypes.c_void_p(meminfo))


class _ArrayMemory:
    """The object a returned array's ``base`` is: it exposes native memory to NumPy and keeps alive what owns
    that memory (``owner``): the argument it views, or for memory native code allocated a capsule holding one
    reference, whose destructor (native code, no Python: it may run late in interpreter exit) releases it."""
    __slots__ = ("__array_interface__", "owner")


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def _owning_capsule(meminfo: int):
    from .entry import release_capsule_address
    return _PyCapsule_New(meminfo, None, release_capsule_address())


_TYPESTR = {}


def _data_pointer(a: np.ndarray) -> int:
    """An array's data pointer, read from the PyArrayObject (the entry point checks that layout at import)."""
    if _ARRAY_LAYOUT_OK:
        return ctypes.c_void_p.from_address(id(a) + 16).value or 0
    return a.__array_interface__["data"][0]


def _array(t: TensorType, vals, args) -> np.ndarray:
    meminfo, data = next(vals), next(vals)
    shape = tuple(next(vals) for _ in range(t.rank))
    strides = tuple(next(vals) for _ in range(t.rank))
    typestr = _TYPESTR.get(t.dtype) or _TYPESTR.setdefault(t.dtype, np.dtype(t.dtype).str)
    interface = {"data": (data, False), "shape": shape, "strides": strides, "typestr": typestr, "version": 3}
    if meminfo:
        mem = _ArrayMemory()
        mem.owner, mem.__array_interface__ = _owning_capsule(meminfo), interface
        return np.asarray(mem)
    args = list(_arrays_in(args))
    for a in args:  # memory borrowed from an argument: return it, or a view of it
        if type(a) is np.ndarray and _data_pointer(a) == data and a.shape == shape and a.strides == strides \
                and a.dtype.name == t.dtype:
            return a
    mem = _ArrayMemory()
    mem.owner = next((a for a in args if isinstance(a, np.ndarray) and _contains(a, data)), None)
    if mem.owner is not None and not mem.owner.flags.writeable:
        interface["data"] = (data, True)    # a view of a read-only argument is read-only, as in NumPy
    mem.__array_interface__ = interface
    if mem.owner is None:
        constant = constant_containing(data)
        if constant is not None:   # a module-level array frozen into the code: the caller gets a copy
            mem.owner = constant
            return np.array(np.asarray(mem), copy=True)
    return np.asarray(mem)


def _arrays_in(args):
    """The arrays among the arguments, also those inside tuples."""
    for a in args:
        if isinstance(a, tuple):
            yield from _arrays_in(a)
        elif isinstance(a, np.ndarray):
            yield a


def _contains(a: np.ndarray, address: int) -> bool:
    lo, hi = np.byte_bounds(a) if hasattr(np, "byte_bounds") else np.lib.array_utils.byte_bounds(a)
    return lo <= address < max(hi, lo + 1)


def _rebuild(t: Type, vals, args=()):
    """The Python value of type ``t`` from an iterator over its leaves."""
    if t == STR:
        return take_str(next(vals))  # takes over native code's reference
    if isinstance(t, NamedTupleType):
        return t.make([_rebuild(e, vals, args) for e in t.elems])
    if isinstance(t, TupleType):
        return tuple(_rebuild(e, vals, args) for e in t.elems)
    if t in (INT, FLOAT, BOOL):
        return next(vals)
    if isinstance(t, TensorType):
        return _array(t, vals, args)
    if isinstance(t, ListType):
        from .listbox import take_list
        return take_list(t, next(vals), args)
    return None


class NativeFunction:
    """A graph compiled to machine code. ``f(*args)`` returns what the interpreter returns (or raises what it
    raises). ``llvm_ir`` is the optimized LLVM IR, ``asm`` the host assembly (for code loaded from the on-disk
    cache, made again on first use)."""

    def __init__(self, graph: Graph, ir_text: str | None, entry: str, address: int, unoptimized_ir: str | None,
                 remake_ir=None):
        self.graph = graph
        self._llvm_ir, self._unoptimized_ir, self._remake_ir = ir_text, unoptimized_ir, remake_ir
        self.entry = entry
        self.address = address
        self.arg_types = [v.type for v in graph.inputs]
        self.result_type = graph.outputs[0].type
        # inputs the code may write (through any view, in any callee): NumPy's message for a read-only one
        self.written_inputs = written_inputs(graph)
        self._converters = [_arg_converter(t, self.written_inputs.get(i)) for i, t in enumerate(self.arg_types)]
        self._call = make_caller(address, [t for ty in self.arg_types for t in leaves(ty)],
                                 leaves(self.result_type))
        self._asm: str | None = None
        self._reader = None
        self._has_lists = any(isinstance(t, ListType) for t in self.arg_types)

    @property
    def llvm_ir(self) -> str:
        if self._llvm_ir is None:
            self._unoptimized_ir, self._llvm_ir = self._remake_ir()
        return self._llvm_ir

    @property
    def unoptimized_ir(self) -> str:
        if self._unoptimized_ir is None:
            self._unoptimized_ir, self._llvm_ir = self._remake_ir()
        return self._unoptimized_ir

    @property
    def asm(self) -> str:
        if self._asm is None:
            self._asm = engine().assembly(self.llvm_ir)
        return self._asm

    def __call__(self, *args):
        if self._has_lists:
            from .listbox import call_with_lists
            return call_with_lists(self, args)
        if len(args) != len(self._converters):
            raise TypeError(f"{self.graph.name}() takes {len(self._converters)} arguments ({len(args)} given)")
        flat = [x for conv, a in zip(self._converters, args) for x in conv(a)]
        status, outs = self._call(*flat)
        if status:
            raise ERROR_TABLE[status].make()
        return _rebuild(self.result_type, iter(outs), args)

    def rebuild_out(self, out_address: int, args) -> object:
        """The Python result from an out struct native code filled (for the fast entry point)."""
        if self._reader is None:
            from .entry import out_reader
            self._reader = out_reader(self.result_type)
        return _rebuild(self.result_type, iter(self._reader(out_address)), args)

    def __repr__(self):
        return f"<NativeFunction {self.graph.name} at {self.address:#x}>"


FAST_MATH = re.compile(r"\b(fadd|fsub|fmul|fdiv|frem|fneg|fcmp)\b(?! fast)")


def compile_graph(graph: Graph, fastmath: bool = False, nogil: bool = False, cache=None) -> NativeFunction:
    """Compile a graph (scalars, arrays, tuples of them; calls to other such graphs) to native code. Raises
    LoweringError, naming the operator and its source position, for anything it cannot lower. ``cache``: a
    ``disk_cache.DiskCache`` to take the machine code from, or to store it in."""
    check_graph(graph)
    eng = engine()
    key = None
    if cache is not None:
        key = disk_cache.cache_key(str(graph), _source_files(graph), {"fastmath": fastmath, "nogil": nogil})
        prefix = f"scriptc.c{key[:20]}"     # the same code has the same symbols in every process
    else:
        with _COUNTER_LOCK:
            prefix = f"scriptc{next(_COUNTER)}"
    mod = ModuleLowering(prefix, nogil=nogil)
    entry = mod.entry(graph)     # also binds, in this process, what the code refers to by name

    def make_text():
        text = str(mod.module)
        if fastmath:  # every float instruction may be reassociated, contracted (FMA), vectorized as a reduction
            text = FAST_MATH.sub(r"\1 fast", text)
        return text

    if key is not None and _cache_trusted():
        address = _LOADED.get(key) or _load_cached(cache, graph.name, key, entry)
        if address:
            _LOADED[key] = address
            return NativeFunction(graph, None, entry, address, None,
                                  lambda: (make_text(), str(eng.optimize(make_text()))))
    text = make_text()
    llmod = eng.optimize(text)
    optimized = str(llmod)
    obj = eng.emit_object(llmod)
    address = eng.add_object(obj, [entry], llmod)[entry]
    if key is not None:
        disk_cache.stats["misses"] += 1
        _LOADED[key] = address
        if _cache_trusted() and not disk_cache.ABSOLUTE_ADDRESS.search(optimized):
            cache.store(graph.name, key, obj, {"entry": entry})
    return NativeFunction(graph, optimized, entry, address, text)


_LOADED: dict[str, int] = {}      # cache key -> address of code already linked into this process


def _cache_trusted() -> bool:
    """Error codes and print-plan ids are the ones every process derives (no hash collision happened here)."""
    return ERROR_TABLE.deterministic and strings.plans_stable


def _load_cached(cache, name: str, key: str, entry: str) -> int:
    obj = cache.load(name, key)
    if obj is None:
        return 0
    try:
        address = engine().add_object(obj, [entry])[entry]
    except (LinkError, ValueError, IndexError, struct.error):
        disk_cache.stats["rejected"] += 1
        return 0
    disk_cache.stats["hits"] += 1
    return address


def _source_files(graph: Graph) -> list[str]:
    files = set()
    for g in [graph, *graph.subgraphs()]:
        for node in g.walk():
            if node.source is not None:
                files.add(node.source.filename)
    return sorted(files)
