"""``NativeFunction``: machine code for one graph, called from Python (the ctypes path), and its CPython entry
point when the module carries one. Compiling is ``compile.py``; this half imports no LLVM, so that code the
on-disk cache loads (``cached.py``) runs without llvmlite."""

from __future__ import annotations

import ctypes

import numpy as np

from ....ir.core import Graph
from ...argument_writes import written_inputs
from ....ir.types import BOOL, FLOAT, INT, STR, ListType, NamedTupleType, NumpyScalarType, TensorType, TupleType, Type
from .callbacks import constant_containing, take_str
from .entry_runtime import (
    builtin_function,
    make_state,
    needs_rebuild,
    out_reader,
    register_release_capsule,
    release_capsule_address,
)
from .errors import ERROR_TABLE
from .layout import PTR, leaves
from .symbols import LIBC

_probe = np.zeros(3)
_ARRAY_LAYOUT_OK = ctypes.c_void_p.from_address(id(_probe) + 16).value == _probe.__array_interface__["data"][0]
del _probe
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


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
        return None  # listbox.call_with_lists converts lists
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
    borrowed = args if isinstance(args, Borrowed) else Borrowed(args)
    for a in borrowed.at.get(data, ()):  # memory borrowed from an argument: return it, or a view of it
        if a.shape == shape and a.strides == strides and a.dtype.name == t.dtype:
            return a
    mem = _ArrayMemory()
    mem.owner = next((a for a in borrowed.arrays if _contains(a, data)), None)
    if mem.owner is not None and not mem.owner.flags.writeable:
        interface["data"] = (data, True)  # a view of a read-only argument is read-only, as in NumPy
    mem.__array_interface__ = interface
    if mem.owner is None:
        constant = constant_containing(data)
        if constant is not None:  # a module-level array frozen into the code: the caller gets a copy
            mem.owner = constant
            return np.array(np.asarray(mem), copy=True)
    return np.asarray(mem)


class Borrowed:
    """The arrays among a call's arguments (inside tuples too), indexed by data pointer: the arrays of a list
    argument come back in one pass, not one scan of the arguments per element (quadratic in the list's
    length: 570 ms a call for 1,000 arrays)."""

    __slots__ = ("arrays", "at")

    def __init__(self, args):
        self.arrays = list(_arrays_in(args))
        self.at: dict[int, list] = {}
        for a in self.arrays:
            if type(a) is np.ndarray:
                self.at.setdefault(_data_pointer(a), []).append(a)


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
    if isinstance(t, NumpyScalarType):
        return np.dtype(t.dtype).type(next(vals))  # (the value fits: it was computed in the dtype)
    if isinstance(t, TensorType):
        return _array(t, vals, args)
    if isinstance(t, ListType):
        from .listbox import take_list  # listbox loads llvmlite.ir: only for lists (other hits load no llvmlite)

        return take_list(t, next(vals), args)
    return None


class NativeFunction:
    """A graph compiled to machine code. ``f(*args)`` returns what the interpreter returns (or raises what it
    raises). ``llvm_ir`` is the optimized LLVM IR, ``asm`` the host assembly (for code loaded from the on-disk
    cache, made again on first use). ``python_entry_address``: the module's CPython entry point for this kernel
    (``entry.py``), when it has one; ``python_entry(fallback)`` makes it a builtin function. ``tier``: "first"
    for code of the short pipeline whose O3 code is on its way (``optimizing`` is set once it is installed, or
    failed: ``tier_error``), "optimized" otherwise (optimizer.py)."""

    tier = "optimized"
    optimizing = None
    tier_error = None

    def __init__(
        self,
        graph: Graph,
        ir_text: str | None,
        entry: str,
        address: int,
        unoptimized_ir: str | None,
        remake_ir=None,
        python_entry_address: int = 0,
        release_address: int = 0,
        written=None,
        signature=None,
    ):
        """``signature``: (name, argument types, result type) of code loaded from the on-disk cache by the source
        key, whose ``graph`` is then a function making the graph (the frontend and the passes) on first use."""
        self._graph = graph
        self.name, self.arg_types, self.result_type = signature or (
            graph.name,
            [v.type for v in graph.inputs],
            graph.outputs[0].type,
        )
        self._llvm_ir, self._unoptimized_ir, self._remake_ir = ir_text, unoptimized_ir, remake_ir
        self.entry = entry
        self.address = address
        self.python_entry_address = python_entry_address
        if release_address:
            register_release_capsule(release_address)
        # inputs the code may write (through any view, in any callee): NumPy's message for a read-only one
        self.written_inputs = written_inputs(graph) if written is None else written
        self._converters = [_arg_converter(t, self.written_inputs.get(i)) for i, t in enumerate(self.arg_types)]
        self._caller = None
        self._asm: str | None = None
        self._reader = None
        self._has_lists = any(isinstance(t, ListType) for t in self.arg_types)

    @property
    def graph(self) -> Graph:
        if not isinstance(self._graph, Graph):
            self._graph = self._graph()
        return self._graph

    @property
    def _call(self):
        """The ctypes caller (made on first use: calls through the CPython entry never need it)."""
        if self._caller is None:
            self._caller = make_caller(
                self.address, [t for ty in self.arg_types for t in leaves(ty)], leaves(self.result_type)
            )
        return self._caller

    def python_entry(self, fallback, nogil: bool = False, raise_error=None):
        """The CPython entry point compiled into this function's module as a builtin function falling back to
        ``fallback``; None when the module has none."""
        if not self.python_entry_address:
            return None
        state = make_state(fallback, self.rebuild_out if needs_rebuild(self.result_type) else None, raise_error)
        state.native, state.nogil, state.symbol = self, nogil, f"{self.entry}.python"
        return builtin_function(self.python_entry_address, self.name, state, nogil)

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
            from .engine import engine  # .asm only: a cache hit loads no engine (nor LLVM)

            self._asm = engine().assembly(self.llvm_ir)
        return self._asm

    def __call__(self, *args):
        if self._has_lists:
            # listbox loads llvmlite.ir: only for lists (other hits load no llvmlite)
            from .listbox import call_with_lists

            return call_with_lists(self, args)
        if len(args) != len(self._converters):
            raise TypeError(f"{self.name}() takes {len(self._converters)} arguments ({len(args)} given)")
        flat = [x for conv, a in zip(self._converters, args) for x in conv(a)]
        status, outs = self._call(*flat)
        if status:
            raise ERROR_TABLE[status].make()
        return _rebuild(self.result_type, iter(outs), args)

    def rebuild_out(self, out_address: int, args) -> object:
        """The Python result from an out struct native code filled (for the fast entry point)."""
        if self._reader is None:
            self._reader = out_reader(self.result_type)
        return _rebuild(self.result_type, iter(self._reader(out_address)), args)

    def __repr__(self):
        return f"<NativeFunction {self.name} at {self.address:#x}>"


_CTYPES = {INT: ctypes.c_int64, FLOAT: ctypes.c_double, BOOL: ctypes.c_int8, PTR: ctypes.c_void_p}


def make_caller(address: int, arg_types: list, out_types: list):
    """A Python callable ``call(*scalars) -> (status, [out scalars])`` for a native entry point

        i32 entry(<i64|double|i8 per argument>, ptr out)

    where ``out`` points at a C struct with one i64/double/i8 field per output scalar. This is the one
    function to replace with a faster CPython entry point."""
    # PYFUNCTYPE keeps the GIL held while native code runs (CFUNCTYPE would release it)
    proto = ctypes.PYFUNCTYPE(ctypes.c_int32, *[_CTYPES[t] for t in arg_types], ctypes.c_void_p)
    cfunc = proto(address)
    fields = [(f"f{i}", _CTYPES[t]) for i, t in enumerate(out_types)]
    Out = type("Out", (ctypes.Structure,), {"_fields_": fields})
    getters = [(f"f{i}", t) for i, t in enumerate(out_types)]
    convert = {BOOL: bool, PTR: lambda p: p or 0}  # ctypes gives None for a null pointer

    def call(*args):
        out = Out()
        status = cfunc(*args, ctypes.addressof(out))
        if status:
            return status, None
        return 0, [convert[t](getattr(out, name)) if t in convert else getattr(out, name) for name, t in getters]

    call.cfunc = cfunc
    return call
