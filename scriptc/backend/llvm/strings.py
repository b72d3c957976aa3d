"""Strings and printing in native code: str constants, str reference counts, ``prim::Print`` and
``aten::format``.

A str is one pointer leaf, a ``PyObject*`` to a Python str. Constants point at objects kept alive for the life
of the process (``keep_str``); every str value native code holds owns one reference (ownership.py), taken and
dropped with the C API's ``Py_IncRef``/``Py_DecRef``.

Printing and formatting call back into Python, so that the text is CPython's exactly (float repr, NumPy's
array formatting, every format spec) and goes through ``sys.stdout``. At compile time each print or format
node registers a *plan* (the IR types of its values and ``sep``/``end`` or ``fmt``); at run time native code
stores the values' leaves in a stack record (an LLVM struct of their memory types) and calls

    i32 scriptc.py.callback(i64 plan_id, i8* record)

a ``ctypes`` callback that decodes the record into Python values (arrays as NumPy views of native memory, no
copy) and prints or formats them. ``aten::format``'s record ends with an out slot where the callback writes a
new reference to the result. A callback that raises stores the exception (per thread) and returns nonzero;
native code then returns the node's ``PendingException`` error code, and the Python side, raising
``ERROR_TABLE[code].make()``, re-raises that very exception object.

Threads and the GIL. The callback is a ctypes callback: it takes the GIL itself, so printing works whether or
not the caller holds it. Reference counts must be changed with the GIL held: by default (``nogil`` false) native
code calls ``Py_IncRef``/``Py_DecRef`` directly, which is right when the native entry point is called with the
GIL held; a lowering with ``nogil`` true routes them through ``scriptc.str.incref.gil`` /
``scriptc.str.decref.gil`` (internal functions wrapping the call in ``PyGILState_Ensure``/``Release``).
``FunctionLowering.py_refcount`` is the one place that chooses.
"""
from __future__ import annotations

import builtins
import ctypes
import hashlib
import sys
import threading

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from ...ir.types import BOOL, FLOAT, INT, NONE, STR, ListType, TensorType, NamedTupleType, TupleType, Type
from .common import I8, I8P, I32, I64, PTR, handles, i32, i64, leaves, mem_type, process_global

# -- symbols bound in the JIT ------------------------------------------------------------------------------

CALLBACK_SYMBOL = "scriptc.py.callback"
PY_SYMBOLS = {"incref": ("scriptc.py.incref", "Py_IncRef"), "decref": ("scriptc.py.decref", "Py_DecRef"),
              "gil_ensure": ("scriptc.py.gil_ensure", "PyGILState_Ensure"),
              "gil_release": ("scriptc.py.gil_release", "PyGILState_Release")}
VOID = ir.VoidType()


def _address(cfunc) -> int:
    return ctypes.cast(cfunc, ctypes.c_void_p).value


# -- str constants ---------------------------------------------------------------------------------------

_CONSTANTS: dict[str, str] = {}
_LOCK = threading.Lock()


def keep_str(value: str) -> int:
    """The address of a str object equal to ``value``, kept alive for the life of the process (the interned
    one, so that recompiling reuses it)."""
    if type(value) is not str:
        raise TypeError(f"str constant expected, got {type(value).__name__}")
    obj = sys.intern(value)
    with _LOCK:
        obj = _CONSTANTS.setdefault(obj, obj)
    return id(obj)


def str_symbol(value: str) -> str:
    """The name native code knows a str constant by (the same in every process)."""
    return "scriptc.str." + hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def take_str(address: int) -> str:
    """The str at ``address`` whose reference native code hands over (a result's leaf): the caller now owns
    it as a Python object."""
    if not address:
        raise SystemError("native code returned a null str")
    obj = ctypes.cast(address, ctypes.py_object).value
    _decref(address)
    return obj


# -- plans: what a callback does with a record -------------------------------------------------------------

_CTYPES = {INT: ctypes.c_int64, FLOAT: ctypes.c_double, BOOL: ctypes.c_int8}


def _ctype(t: Type):
    return ctypes.c_void_p if t is PTR else _CTYPES[t]


class _ArrayInterface:
    """Exposes native array memory to ``np.asarray`` (a view: no copy)."""

    def __init__(self, data: int, dtype: np.dtype, shape: tuple, strides: tuple):
        self.__array_interface__ = {"data": (data, True), "shape": shape, "strides": strides,
                                    "typestr": dtype.str, "version": 3}


def _decoder(t: Type):
    """A function taking an iterator over a record's leaves to the Python value of type ``t``."""
    if t == INT or t == FLOAT:
        return next
    if t == BOOL:
        return lambda it: bool(next(it))
    if t == NONE:
        return lambda it: None
    if t == STR:
        def decode_str(it):
            p = next(it)
            if not p:
                raise SystemError("native code passed a null str")
            return ctypes.cast(p, ctypes.py_object).value
        return decode_str
    if isinstance(t, TupleType):
        elems = [_decoder(e) for e in t.elems]
        if isinstance(t, NamedTupleType):       # printed as its class prints it: P(a=1, b=2.0)
            return lambda it: t.make([d(it) for d in elems])
        return lambda it: tuple(d(it) for d in elems)
    if isinstance(t, TensorType) and t.known:
        dtype, rank = t.np_dtype, t.rank

        def decode_array(it):
            next(it)                                    # meminfo: native code keeps the memory alive
            data = next(it) or 0
            shape = tuple(next(it) for _ in range(rank))
            strides = tuple(next(it) for _ in range(rank))
            if 0 in shape or not data:
                return np.empty(shape, dtype)
            return np.asarray(_ArrayInterface(data, dtype, shape, strides))
        return decode_array
    if isinstance(t, ListType):
        from .listbox import from_native
        return lambda it: from_native(t, next(it))
    raise TypeError(f"cannot pass {t} to a callback")


class Plan:
    """What one print or format node does at run time with its record."""

    def __init__(self, kind: str, types: tuple, sep: str = " ", end: str = "\n", fmt: str = ""):
        self.kind, self.types, self.sep, self.end, self.fmt = kind, types, sep, end, fmt
        leaf_types = [x for t in types for x in leaves(t)]
        fields = [(f"f{i}", _ctype(x)) for i, x in enumerate(leaf_types)]
        if kind == "format":
            fields.append(("out", ctypes.c_void_p))
        self.Record = type("Record", (ctypes.Structure,), {"_fields_": fields})
        self.names = [f"f{i}" for i in range(len(leaf_types))]
        self.decoders = [_decoder(t) for t in types]

    def values(self, address: int) -> list:
        rec = self.Record.from_address(address)
        it = iter([getattr(rec, n) for n in self.names])
        return [d(it) for d in self.decoders]

    def run(self, address: int) -> None:
        values = self.values(address)
        if self.kind == "raise":      # ``raise`` with values known at run time: fmt names the builtin exception
            raise getattr(builtins, self.fmt)(*values)
        if self.kind == "print":
            print(*values, sep=self.sep, end=self.end)
            return
        s = self.fmt.format(*values)
        _incref(s)                                    # native code owns one reference to the result
        self.Record.from_address(address).out = id(s)


_PLANS: dict[int, Plan] = {}
_PLAN_IDS: dict[tuple, int] = {}


def plan_id(kind: str, types, **kw) -> int:
    """The id of the plan (registered once per distinct kind, types and separators or format). Ids are derived
    from the plan's description, so the same plan has the same id in every process (cached machine code
    carries them as constants); a collision takes the next free id and makes ids untrusted (``plans_stable``)."""
    global plans_stable
    key = (kind, tuple(types), tuple(sorted(kw.items())))
    with _LOCK:
        pid = _PLAN_IDS.get(key)
        if pid is None:
            text = repr((kind, [str(t) for t in types], key[2]))
            pid = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 2
            while pid in _PLANS:
                plans_stable = False
                pid += 1
            _PLANS[pid] = Plan(kind, tuple(types), **kw)
            _PLAN_IDS[key] = pid
        return pid


plans_stable = True


# -- exceptions raised in callbacks ------------------------------------------------------------------------

_PENDING = threading.local()


class PendingException(Exception):
    """The error-table type of "a callback raised": making it returns (and clears) the exception object the
    callback stored on this thread, so that ``raise ERROR_TABLE[code].make()`` re-raises exactly it."""

    def __new__(cls, *args):
        exc = getattr(_PENDING, "exc", None)
        _PENDING.exc = None
        if exc is None:
            return SystemError("native code reported a callback error, but none is pending")
        return exc


def _callback(pid: int, address: int) -> int:
    try:
        _PLANS[pid].run(address)
        return 0
    except BaseException as e:      # noqa: BLE001 -- every exception goes back to the caller of native code
        _PENDING.exc = e
        return 1


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p)(_callback)
_incref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", ctypes.pythonapi))
_decref = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("Py_DecRef", ctypes.pythonapi))


def _bind_symbols() -> None:
    llvm.add_symbol(CALLBACK_SYMBOL, _address(_CALLBACK))
    for symbol, c_name in PY_SYMBOLS.values():
        llvm.add_symbol(symbol, _address(getattr(ctypes.pythonapi, c_name)))


_bind_symbols()


# -- lowering ------------------------------------------------------------------------------------------------

class StringOps:
    """Mixin of FunctionLowering: str constants and reference counts, printing and formatting."""

    nogil = False       # native code runs with the GIL held; true: refcount calls take the GIL themselves

    def extern(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        """The module's declaration of an external function (bound with ``llvm.add_symbol``)."""
        fn = self.mod.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.mod.module, fnty, name)
            fn.attributes.add("nounwind")
        return fn

    def py_refcount(self, which: str) -> ir.Function:
        """``void (i8*)`` changing a PyObject's reference count (``which``: incref or decref), null-safe. The one
        place that decides how: directly (GIL held) or wrapped in PyGILState_Ensure/Release (``nogil``)."""
        direct = self.extern(PY_SYMBOLS[which][0], ir.FunctionType(VOID, [I8P]))
        if not self.nogil:
            return direct
        name = f"scriptc.str.{which}.gil"
        fn = self.mod.module.globals.get(name)
        if fn is None:
            ensure = self.extern(PY_SYMBOLS["gil_ensure"][0], ir.FunctionType(I32, []))
            release = self.extern(PY_SYMBOLS["gil_release"][0], ir.FunctionType(VOID, [I32]))
            fn = ir.Function(self.mod.module, ir.FunctionType(VOID, [I8P]), name)
            fn.linkage = "internal"
            fn.attributes.add("nounwind")
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            state = b.call(ensure, [])
            b.call(direct, [fn.args[0]])
            b.call(release, [state])
            b.ret_void()
        return fn

    # -- strs ----------------------------------------------------------------------------------------------
    def str_constant(self, value: str) -> list:
        """The leaves of a str constant: its object's address. The value owns a reference, like every value
        a node produces (ownership.py), so the constant takes one each time it is evaluated."""
        vals = [process_global(self.mod.module, str_symbol(value), keep_str(value), I8)]
        self.str_retain(vals)
        return vals

    def str_retain(self, vals: list) -> None:
        self.b.call(self.py_refcount("incref"), [vals[0]])

    def str_release(self, vals: list) -> None:
        self.b.call(self.py_refcount("decref"), [vals[0]])

    # -- callbacks ---------------------------------------------------------------------------------------------
    def call_back(self, pid: int, values, out: bool = False):
        """Store the values' leaves in a stack record, call the Python callback with plan ``pid``, return the
        node's error code if it raised; the record's out slot (an i8*) when ``out``."""
        b = self.b
        types = [t for v in values for t in leaves(v.type)]
        vals = [x for v in values for x in self.get(v)]
        rec_t = ir.LiteralStructType([mem_type(t) for t in types] + ([I8P] if out else []))
        rec = self.alloca(rec_t)
        for k, (x, t) in enumerate(zip(vals, types)):
            if t == BOOL:
                x = b.zext(x, I8)
            b.store(x, b.gep(rec, [i32(0), i32(k)], inbounds=True))
        callback = self.extern(CALLBACK_SYMBOL, ir.FunctionType(I32, [I64, I8P]))
        status = b.call(callback, [i64(pid), b.bitcast(rec, I8P)])
        self.raise_if(b.icmp_signed("!=", status, i32(0)), PendingException)
        if out:
            return b.load(b.gep(rec, [i32(0), i32(len(types))], inbounds=True))
        return None

    @handles("prim::Print")
    def lower_print(self, node):
        pid = plan_id("print", [v.type for v in node.inputs], sep=node.attrs.get("sep", " "),
                      end=node.attrs.get("end", "\n"))
        self.call_back(pid, node.inputs)
        return []

    @handles("aten::format")
    def lower_format(self, node):
        pid = plan_id("format", [v.type for v in node.inputs], fmt=node.attrs["fmt"])
        return [[self.call_back(pid, node.inputs, out=True)]]
