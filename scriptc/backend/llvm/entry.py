"""JIT-generated CPython entry points: calling a ``NativeFunction`` from Python without ctypes.

``make_entry(native, fallback)`` compiles, for one compiled signature, a ``METH_FASTCALL | METH_KEYWORDS``
C function in LLVM IR

    PyObject *entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)

and wraps it in a builtin function object (``PyCFunction_NewEx``). The entry checks that the arguments are
exactly the kinds the signature was specialized for, unpacks them into the kernel's leaves (``common.leaves``),
calls the kernel

    i32 kernel(<leaves of each argument in memory types>, out_struct *out)

with ``out`` on its stack, and boxes the result. Anything it does not handle goes, untouched, to
``fallback`` through ``PyObject_Vectorcall(fallback, args, nargs, kwnames)`` (a tail call):

- keyword arguments, or the wrong number of arguments;
- int parameter: not exactly ``int`` (a bool, an ``np.int64``, a subclass) or outside 64 bits;
- float parameter: not exactly ``float`` (an int has its own specialization, ``np.float64`` is a subclass);
- bool parameter: not ``True``/``False`` (``np.bool_`` included);
- array parameter: not exactly ``np.ndarray``, another rank, a dtype descriptor other than the canonical
  native-byte-order one (pointer identity), not aligned, read-only where the code may write it
  (``native.written_inputs``: the fallback raises NumPy's ValueError), or (if the signature fixes it) another
  shape.
  Arrays are borrowed: meminfo is null;
- str parameter: not exactly ``str`` (passed as the borrowed object pointer).

A nonzero status calls ``raise_error(status)`` (by default: raise ``ERROR_TABLE[status].make()``) and returns
NULL. Results made of int/float/bool/None and tuples are boxed natively; results holding arrays or strs are
returned by ``rebuild(out_address, args_tuple)``, a Python callable that reads the out struct (the kernel wrote
owned references into it) and may make views of the borrowed argument arrays.

``nogil=True`` releases the GIL around the kernel call: only for kernels that touch no Python object (no
strs, no Python calls).

The generated code embeds the addresses of the kernel, the fallback and the helper callables, and CPython
object layouts (``ob_type`` at 8, a float's value at 16, ``PyArrayObject_fields``); the layouts are checked
against live objects at import, and entries are refused (``EntryUnsupported``: use the ctypes path) where
they do not match. The builtin function's ``__self__`` is an ``EntryState`` that keeps everything the code
refers to alive (the method definition, the fallback, the helpers, the native function) for as long as the
function lives; the machine code itself lives in the process's JIT forever.

``bind_to_class(entry)`` makes a class whose instances' ``__call__`` is the entry: ``obj(*args)`` goes
straight to native code (a new signature's entry falls back to the previous one's, the last to Python's
dispatcher: a chain).
"""
from __future__ import annotations

import ctypes
import itertools
import sys
import threading

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from ...ir.types import BOOL, DTYPE_NAMES, FLOAT, INT, NONE, STR, ListType, NamedTupleType, TensorType, TupleType, Type
from .common import F64, I8, I8P, I32, I64, holds_ref, leaves, mem_type, out_struct
from .engine import engine
from .errors import ERROR_TABLE

METH_FASTCALL = 0x0080
METH_KEYWORDS = 0x0002
NPY_ARRAY_ALIGNED = 0x0100
NPY_ARRAY_WRITEABLE = 0x0400

# CPython object layout (64-bit, release build; checked below)
OB_TYPE = 8
FLOAT_VALUE = 16
# PyArrayObject_fields (checked below)
ARR_DATA, ARR_ND, ARR_DIMS, ARR_STRIDES, ARR_DESCR, ARR_FLAGS = 16, 24, 32, 40, 56, 64


class EntryUnsupported(Exception):
    """No native entry point can be built for this signature (or in this process): use the ctypes path."""


# -- layout checks -----------------------------------------------------------------------------------------

def _word(address: int) -> int:
    return ctypes.c_void_p.from_address(address).value or 0


def _check_object_layout() -> str | None:
    """None if ``ob_type`` is at 8 and a float's double at 16, else what differs."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return "not a 64-bit process"
    if hasattr(sys, "gettotalrefcount"):
        return "debug build of CPython (object header differs)"
    x, n, s = 1.25, 12345678901, "scriptc"
    for obj in (x, n, s, (x, n), np.zeros(1)):
        if _word(id(obj) + OB_TYPE) != id(type(obj)):
            return f"ob_type of a {type(obj).__name__} is not at offset {OB_TYPE}"
    if ctypes.c_double.from_address(id(x) + FLOAT_VALUE).value != x:
        return f"a float's value is not at offset {FLOAT_VALUE}"
    return None


def _check_array_layout() -> str | None:
    """None if NumPy's ``PyArrayObject_fields`` are where the generated code reads them, else what differs."""
    base = np.arange(48, dtype=np.float64).reshape(4, 3, 4)
    samples = [base[1:, ::-1, ::2], np.asfortranarray(base), np.zeros((2, 3), np.int32), np.ones(3, bool),
               np.frombuffer(b"\0" * 17, np.uint8)[1:].view(np.int64)]   # the last one is misaligned
    for a in samples:
        addr = id(a)
        if _word(addr + OB_TYPE) != id(np.ndarray):
            return "ob_type of an ndarray"
        if _word(addr + ARR_DATA) != a.__array_interface__["data"][0]:
            return f"data is not at offset {ARR_DATA}"
        if ctypes.c_int32.from_address(addr + ARR_ND).value != a.ndim:
            return f"nd is not at offset {ARR_ND}"
        dims, strides = _word(addr + ARR_DIMS), _word(addr + ARR_STRIDES)
        if tuple((ctypes.c_int64 * a.ndim).from_address(dims)) != a.shape:
            return f"dimensions are not at offset {ARR_DIMS}"
        if tuple((ctypes.c_int64 * a.ndim).from_address(strides)) != a.strides:
            return f"strides are not at offset {ARR_STRIDES}"
        if _word(addr + ARR_DESCR) != id(a.dtype):
            return f"descr is not at offset {ARR_DESCR}"
        flags = ctypes.c_int32.from_address(addr + ARR_FLAGS).value
        if flags != a.flags.num or bool(flags & NPY_ARRAY_ALIGNED) != a.flags.aligned:
            return f"flags are not at offset {ARR_FLAGS}"
    if samples[-1].flags.aligned:
        return "cannot make a misaligned array to check the ALIGNED flag"
    return None


def _layout_error(check) -> str | None:
    try:
        return check()
    except Exception as e:   # noqa: BLE001 - any surprise means: do not generate code that reads memory
        return f"{type(e).__name__}: {e}"


OBJECT_LAYOUT_ERROR = _layout_error(_check_object_layout)
ARRAY_LAYOUT_ERROR = OBJECT_LAYOUT_ERROR or _layout_error(_check_array_layout)


def _canonical_descrs() -> dict[str, tuple[np.dtype, ...]]:
    """Per dtype name, the builtin native-byte-order descriptors an array of that dtype can carry (int64 is
    both ``long`` and ``long long`` on LP64). Kept here, so their ids stay valid."""
    out: dict[str, list[np.dtype]] = {name: [np.dtype(name)] for name in DTYPE_NAMES}
    for t in set(np.sctypeDict.values()):
        try:
            d = np.dtype(t)
        except TypeError:
            continue
        if d.name in out and d.isnative and all(d is not e for e in out[d.name]) and d == out[d.name][0]:
            out[d.name].append(d)
    return {k: tuple(v) for k, v in out.items()}


CANONICAL_DESCRS = _canonical_descrs()

# -- the C API, as the generated code declares it ----------------------------------------------------------

I32P = I32.as_pointer()
I8PP = I8P.as_pointer()
VOID = ir.VoidType()
CAPI = {
    "PyLong_AsLongLongAndOverflow": ir.FunctionType(I64, [I8P, I32P]),
    "PyLong_FromLongLong": ir.FunctionType(I8P, [I64]),
    "PyLong_FromVoidPtr": ir.FunctionType(I8P, [I8P]),
    "PyFloat_FromDouble": ir.FunctionType(I8P, [F64]),
    "PyTuple_New": ir.FunctionType(I8P, [I64]),
    "PyType_GenericAlloc": ir.FunctionType(I8P, [I8P, I64]),
    "PyTuple_SetItem": ir.FunctionType(I32, [I8P, I64, I8P]),
    "PyTuple_Size": ir.FunctionType(I64, [I8P]),
    "PyTuple_GetItem": ir.FunctionType(I8P, [I8P, I64]),
    "Py_IncRef": ir.FunctionType(VOID, [I8P]),
    "Py_DecRef": ir.FunctionType(VOID, [I8P]),
    "PyObject_Vectorcall": ir.FunctionType(I8P, [I8P, I8PP, I64, I8P]),
    "PyEval_SaveThread": ir.FunctionType(I8P, []),
    "PyEval_RestoreThread": ir.FunctionType(VOID, [I8P]),
    "PyCapsule_New": ir.FunctionType(I8P, [I8P, I8P, I8P]),
    "PyCapsule_GetPointer": ir.FunctionType(I8P, [I8P, I8P]),
}
# NumPy's C API, by its slots in the _ARRAY_API table (checked at import by building an array through them):
# returned arrays are made natively instead of by the Python ``rebuild``.
NUMPY_API = {"PyArray_DescrFromType": (45, ir.FunctionType(I8P, [I32])),
             "PyArray_NewFromDescr": (94, ir.FunctionType(I8P, [I8P, I8P, I32, I8P, I8P, I8P, I32, I8P])),
             "PyArray_SetBaseObject": (282, ir.FunctionType(I32, [I8P, I8P]))}


def _numpy_api() -> dict[str, int] | None:
    """{function: address} when NumPy's table has the functions at the expected slots, else None."""
    try:
        api = ctypes.pythonapi
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        table = api.PyCapsule_GetPointer(np._core._multiarray_umath._ARRAY_API, None)
        addresses = {name: ctypes.c_void_p.from_address(table + 8 * slot).value
                     for name, (slot, _) in NUMPY_API.items()}
        descr = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_int)(addresses["PyArray_DescrFromType"])(12)
        if descr != np.dtype("float64"):
            return None
        new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.c_int,
                                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                ctypes.c_void_p)(addresses["PyArray_NewFromDescr"])
        buf, dims, strides = (ctypes.c_double * 6)(*range(6)), (ctypes.c_int64 * 2)(2, 3), (ctypes.c_int64 * 2)(8, 16)
        api.Py_IncRef(ctypes.py_object(descr))
        a = new(id(np.ndarray), descr, 2, ctypes.addressof(dims), ctypes.addressof(strides),
                ctypes.addressof(buf), 0x0400, None)
        base = object()
        api.Py_IncRef(ctypes.py_object(base))
        set_base = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.py_object)(
            addresses["PyArray_SetBaseObject"])
        if set_base(a, base) != 0 or a.base is not base or a.tolist() != [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]:
            return None
        return addresses
    except Exception:  # noqa: BLE001 - any surprise means: build arrays in Python
        return None


NUMPY_ADDRESSES = _numpy_api()
_BOUND = False


_BIND_LOCK = threading.RLock()


def _bind_capi() -> None:
    with _BIND_LOCK:
        _bind_capi_locked()


def _bind_capi_locked() -> None:
    global _BOUND
    if not _BOUND:
        engine()   # binds free (the allocator's)
        for name in CAPI:
            llvm.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
        for name, address in (NUMPY_ADDRESSES or {}).items():
            llvm.add_symbol("scriptc." + name, address)
        _BOUND = True


# -- the builtin function object ---------------------------------------------------------------------------

class _PyMethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_PyCFunction_NewEx = ctypes.pythonapi.PyCFunction_NewEx
_PyCFunction_NewEx.restype = ctypes.py_object
_PyCFunction_NewEx.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


class EntryState:
    """The ``__self__`` of an entry: owns what its machine code refers to by address."""
    __slots__ = ("native", "fallback", "rebuild", "raise_error", "method_def", "nogil", "symbol", "llvm_ir",
                 "__weakref__")

    def __repr__(self):
        name = getattr(getattr(self.native, "graph", None), "name", "?")
        return f"<EntryState {name} -> {self.symbol}{' nogil' if self.nogil else ''}>"


def _raise_native_error(status: int):
    raise ERROR_TABLE[status].make()


# -- code generation ---------------------------------------------------------------------------------------

_COUNTER = itertools.count()
_COUNTER_LOCK = threading.Lock()


def _holds_str(t: Type) -> bool:
    """Strs, and lists (listbox.py), are boxed by ``rebuild`` in Python."""
    return t == STR or isinstance(t, ListType) or isinstance(t, TupleType) and any(map(_holds_str, t.elems))


def _meminfo_positions(t: Type, start: int = 0) -> list[int]:
    """Indices of the meminfo leaves of the arrays in a value of type ``t``."""
    if isinstance(t, TensorType):
        return [start]
    out = []
    if isinstance(t, TupleType):
        for e in t.elems:
            out += _meminfo_positions(e, start)
            start += len(leaves(e))
    return out


def _needs_rebuild(t: Type) -> bool:
    return holds_ref(t)


def _tuple_class(t: TupleType) -> type:
    """``tuple``, or the NamedTuple class (registered for good in ``NAMED_TUPLES``, so its address stays valid)."""
    return t.cls if isinstance(t, NamedTupleType) else tuple


def _const_ptr(obj) -> ir.Constant:
    """The address of a Python object (kept alive by the entry's state, or immortal) as a constant."""
    return ir.Constant(I64, id(obj)).inttoptr(I8P)


def _i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


class _EntryLowering:
    """Builds ``entry(self, args, nargs, kwnames)`` for one native function."""

    def __init__(self, symbol: str, native, fallback, rebuild, raise_error, nogil: bool):
        self.native = native
        self.module = ir.Module(name=symbol)
        self.symbol = symbol
        self._decls: dict[str, ir.Function] = {}
        self.fallback, self.rebuild, self.raise_error, self.nogil = fallback, rebuild, raise_error, nogil
        self.fn = ir.Function(self.module, ir.FunctionType(I8P, [I8P, I8PP, I64, I8P]), symbol)
        self.self_, self.args, self.nargs, self.kwnames = self.fn.args
        for a, n in zip(self.fn.args, ("self", "args", "nargs", "kwnames")):
            a.name = n
        self.entry_block = self.fn.append_basic_block("entry")
        self.slow = self.fn.append_basic_block("fallback")
        self.b = ir.IRBuilder(self.entry_block)

    def capi(self, name: str) -> ir.Function:
        fn = self._decls.get(name)
        if fn is None:
            if name in NUMPY_API:
                fn = ir.Function(self.module, NUMPY_API[name][1], "scriptc." + name)
            else:
                fn = ir.Function(self.module, CAPI[name], name)
            self._decls[name] = fn
        return fn

    def call(self, name: str, *args):
        return self.b.call(self.capi(name), list(args))

    def alloca(self, ty, name=""):
        with self.b.goto_entry_block():
            self.b.position_at_start(self.entry_block)
            return self.b.alloca(ty, name=name)

    def require(self, cond, what: str) -> None:
        """Continue if ``cond`` (i1) holds, else go to the fallback."""
        ok = self.fn.append_basic_block(what)
        self.b.cbranch(cond, ok, self.slow)
        self.b.position_at_end(ok)

    def field(self, obj, offset: int, ty: ir.Type):
        p = self.b.gep(obj, [_i64(offset)], inbounds=True)
        return self.b.load(self.b.bitcast(p, ty.as_pointer()))

    def type_is(self, obj, tp) -> ir.Value:
        return self.b.icmp_unsigned("==", self.field(obj, OB_TYPE, I8P), _const_ptr(tp))

    # -- arguments -----------------------------------------------------------------------------------------
    def unpack(self, obj, t: Type, what: str, written: bool = False) -> list:
        """Check ``obj`` (borrowed) is of kind ``t``; its leaves in memory types. ``written``: the code may
        write its arrays, so read-only ones go to the fallback (which raises NumPy's error)."""
        b = self.b
        if t == INT:
            self.require(self.type_is(obj, int), f"{what}.int")
            overflow = self.alloca(I32, "overflow")
            b.store(ir.Constant(I32, 0), overflow)
            v = self.call("PyLong_AsLongLongAndOverflow", obj, overflow)
            self.require(b.icmp_unsigned("==", b.load(overflow), ir.Constant(I32, 0)), f"{what}.i64")
            return [v]
        if t == FLOAT:
            self.require(self.type_is(obj, float), f"{what}.float")
            return [self.field(obj, FLOAT_VALUE, F64)]
        if t == BOOL:
            is_true = b.icmp_unsigned("==", obj, _const_ptr(True))
            is_false = b.icmp_unsigned("==", obj, _const_ptr(False))
            self.require(b.or_(is_true, is_false), f"{what}.bool")
            return [b.zext(is_true, I8)]
        if t == NONE:
            self.require(b.icmp_unsigned("==", obj, _const_ptr(None)), f"{what}.none")
            return []
        if t == STR:
            self.require(self.type_is(obj, str), f"{what}.str")
            return [obj]
        if isinstance(t, TupleType):
            self.require(self.type_is(obj, _tuple_class(t)), f"{what}.tuple")
            n = len(t.elems)
            self.require(b.icmp_unsigned("==", self.call("PyTuple_Size", obj), _i64(n)), f"{what}.len")
            out = []
            for i, e in enumerate(t.elems):
                out += self.unpack(self.call("PyTuple_GetItem", obj, _i64(i)), e, f"{what}.{i}", written)
            return out
        if isinstance(t, TensorType) and t.known:
            return self.unpack_array(obj, t, what, written)
        raise EntryUnsupported(f"cannot take an argument of type {t}")

    def unpack_array(self, obj, t: TensorType, what: str, written: bool) -> list:
        b = self.b
        self.require(self.type_is(obj, np.ndarray), f"{what}.ndarray")
        self.require(b.icmp_unsigned("==", self.field(obj, ARR_ND, I32), ir.Constant(I32, t.rank)), f"{what}.nd")
        descr = self.field(obj, ARR_DESCR, I8P)
        same = None
        for d in CANONICAL_DESCRS[t.dtype]:
            eq = b.icmp_unsigned("==", descr, _const_ptr(d))
            same = eq if same is None else b.or_(same, eq)
        self.require(same, f"{what}.dtype")
        flags = self.field(obj, ARR_FLAGS, I32)
        need = NPY_ARRAY_ALIGNED | (NPY_ARRAY_WRITEABLE if written else 0)
        has = b.and_(flags, ir.Constant(I32, need))
        self.require(b.icmp_unsigned("==", has, ir.Constant(I32, need)), f"{what}.flags")
        data = self.field(obj, ARR_DATA, I8P)
        dims_p = self.field(obj, ARR_DIMS, I64.as_pointer())
        strides_p = self.field(obj, ARR_STRIDES, I64.as_pointer())
        dims = [b.load(b.gep(dims_p, [_i64(k)], inbounds=True)) for k in range(t.rank)]
        strides = [b.load(b.gep(strides_p, [_i64(k)], inbounds=True)) for k in range(t.rank)]
        for k, (d, want) in enumerate(zip(dims, t.shape)):
            if want is not None:
                self.require(b.icmp_unsigned("==", d, _i64(want)), f"{what}.dim{k}")
        return [ir.Constant(I8P, None), data] + dims + strides

    # -- results ---------------------------------------------------------------------------------------------
    def box(self, t: Type, vals: list):
        """A new reference to the Python value of type ``t`` from its leaves (memory types); on failure the
        function returns NULL."""
        if isinstance(t, TupleType):
            tup = self.new_tuple(t)
            self.fail_if_null(tup, None)
            self.fill(tup, t, vals, tup)
            return tup
        return self.box_scalar(t, vals)

    def new_tuple(self, t: TupleType):
        """An empty tuple of ``t``'s length, or an instance of its NamedTuple class (made as ``tuple.__new__``
        makes instances of tuple subclasses: the type's allocator, then the items set in place)."""
        if isinstance(t, NamedTupleType):
            return self.call("PyType_GenericAlloc", _const_ptr(_tuple_class(t)), _i64(len(t.elems)))
        return self.call("PyTuple_New", _i64(len(t.elems)))

    def fill(self, tup, t: TupleType, vals: list, root) -> None:
        """Store the elements into the new tuple ``tup``. A nested tuple goes into its parent as soon as it
        exists (empty slots are NULL, which tuples tolerate), so dropping ``root`` frees all on failure."""
        for i, e in enumerate(t.elems):
            n = len(leaves(e))
            part, vals = vals[:n], vals[n:]
            if isinstance(e, TupleType):
                item = self.new_tuple(e)
                self.fail_if_null(item, root)
                self.call("PyTuple_SetItem", tup, _i64(i), item)
                self.fill(item, e, part, root)
            else:
                item = self.box_scalar(e, part)
                self.fail_if_null(item, root)
                self.call("PyTuple_SetItem", tup, _i64(i), item)

    def box_scalar(self, t: Type, vals: list):
        b = self.b
        if isinstance(t, TensorType):
            return self.box_array(t, vals)
        if t == INT:
            return self.call("PyLong_FromLongLong", vals[0])
        if t == FLOAT:
            return self.call("PyFloat_FromDouble", vals[0])
        if t == NONE:
            obj = _const_ptr(None)
        else:
            assert t == BOOL, t
            obj = b.select(b.icmp_unsigned("!=", vals[0], ir.Constant(I8, 0)), _const_ptr(True),
                           _const_ptr(False))
        self.call("Py_IncRef", obj)
        return obj

    def box_array(self, t: TensorType, vals: list):
        """A NumPy array over native memory (meminfo non-null: checked by the caller) whose base is a capsule
        holding the array's reference; the capsule's destructor releases it."""
        b = self.b
        meminfo, data = vals[0], vals[1]
        dims = self.alloca(ir.ArrayType(I64, max(t.rank, 1)), "dims")
        strides = self.alloca(ir.ArrayType(I64, max(t.rank, 1)), "strides")
        for k in range(t.rank):
            b.store(vals[2 + k], b.gep(dims, [_i64(0), _i64(k)], inbounds=True))
            b.store(vals[2 + t.rank + k], b.gep(strides, [_i64(0), _i64(k)], inbounds=True))
        descr = self.call("PyArray_DescrFromType", ir.Constant(I32, np.dtype(t.dtype).num))
        arr = self.call("PyArray_NewFromDescr", _const_ptr(np.ndarray), descr, ir.Constant(I32, t.rank),
                        b.bitcast(dims, I8P), b.bitcast(strides, I8P), data, ir.Constant(I32, 0x0400),
                        ir.Constant(I8P, None))
        self.fail_if_null(arr, None)
        capsule = self.call("PyCapsule_New", meminfo, ir.Constant(I8P, None),
                            b.bitcast(self.capsule_destructor(), I8P))
        self.call("PyArray_SetBaseObject", arr, capsule)
        return arr

    def capsule_destructor(self) -> ir.Function:
        """The process's one ``release_capsule`` (bound by make_entry)."""
        fn = self._decls.get("release")
        if fn is None:
            fn = self._decls["release"] = ir.Function(self.module, RELEASE_TYPE, RELEASE_SYMBOL)
        return fn

    def fail_if_null(self, obj, root) -> None:
        b = self.b
        bad = b.icmp_unsigned("==", obj, ir.Constant(I8P, None))
        with b.if_then(bad, likely=False):
            if root is not None:
                self.call("Py_DecRef", root)
            b.ret(ir.Constant(I8P, None))

    def args_tuple(self, n: int):
        tup = self.call("PyTuple_New", _i64(n))
        self.fail_if_null(tup, None)
        for i in range(n):
            item = self.b.load(self.b.gep(self.args, [_i64(i)], inbounds=True))
            self.call("Py_IncRef", item)
            self.call("PyTuple_SetItem", tup, _i64(i), item)
        return tup

    def vectorcall(self, callable_, items: list):
        stack = self.alloca(ir.ArrayType(I8P, max(len(items), 1)), "stack")
        for i, x in enumerate(items):
            self.b.store(x, self.b.gep(stack, [_i64(0), _i64(i)], inbounds=True))
        return self.call("PyObject_Vectorcall", _const_ptr(callable_),
                         self.b.gep(stack, [_i64(0), _i64(0)], inbounds=True), _i64(len(items)),
                         ir.Constant(I8P, None))

    # -- the whole function ------------------------------------------------------------------------------
    def lower(self) -> str:
        b, native = self.b, self.native
        arg_types, result_type = list(native.arg_types), native.result_type
        n = len(arg_types)
        self.require(b.and_(b.icmp_unsigned("==", self.kwnames, ir.Constant(I8P, None)),
                            b.icmp_unsigned("==", self.nargs, _i64(n))), "nargs")
        kernel_args = []
        written = getattr(native, "written_inputs", {})
        for i, t in enumerate(arg_types):
            obj = b.load(b.gep(self.args, [_i64(i)], inbounds=True))
            kernel_args += self.unpack(obj, t, f"arg{i}", written=i in written)
        in_types = [x for t in arg_types for x in leaves(t)]
        assert len(kernel_args) == len(in_types)
        out_t = out_struct(result_type)
        out = self.alloca(out_t, "out")
        b.store(ir.Constant(out_t, None), out)    # a kernel that writes no result leaves null meminfos
        kty = ir.FunctionType(I32, [mem_type(x) for x in in_types] + [out_t.as_pointer()])
        # the kernel by a private symbol bound to its address (make_entry binds it): a direct call
        kernel = ir.Function(self.module, kty, kernel_symbol(native.address))
        if self.nogil:
            ts = self.call("PyEval_SaveThread")
            status = b.call(kernel, kernel_args + [out])
            self.call("PyEval_RestoreThread", ts)
        else:
            status = b.call(kernel, kernel_args + [out])
        with b.if_then(b.icmp_unsigned("!=", status, ir.Constant(I32, 0)), likely=False):
            code = self.call("PyLong_FromLongLong", b.sext(status, I64))
            self.fail_if_null(code, None)
            r = self.vectorcall(self.raise_error, [code])
            self.call("Py_DecRef", code)
            with b.if_then(b.icmp_unsigned("!=", r, ir.Constant(I8P, None)), likely=False):
                self.call("Py_DecRef", r)     # raise_error returned instead of raising: SystemError
            b.ret(ir.Constant(I8P, None))
        vals = [b.load(b.gep(out, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True))
                for k, _ in enumerate(leaves(result_type))]
        if _needs_rebuild(result_type) and NUMPY_ADDRESSES is not None and not _holds_str(result_type):
            # arrays native code allocated: boxed here; borrowed ones (views of arguments) go to rebuild
            owned = ir.Constant(ir.IntType(1), 1)
            for k in _meminfo_positions(result_type):
                owned = b.and_(owned, b.icmp_unsigned("!=", vals[k], ir.Constant(I8P, None)))
            native_box = self.fn.append_basic_block("box")
            python_box = self.fn.append_basic_block("rebuild")
            b.cbranch(owned, native_box, python_box)
            b.position_at_end(native_box)
            b.ret(self.box(result_type, vals))
            b.position_at_end(python_box)
        if _needs_rebuild(result_type):
            tup = self.args_tuple(n)
            addr = self.call("PyLong_FromVoidPtr", b.bitcast(out, I8P))
            self.fail_if_null(addr, tup)
            r = self.vectorcall(self.rebuild, [addr, tup])
            self.call("Py_DecRef", addr)
            self.call("Py_DecRef", tup)
            b.ret(r)
        else:
            b.ret(self.box(result_type, vals))
        b.position_at_end(self.slow)
        b.ret(b.call(self.capi("PyObject_Vectorcall"),
                     [_const_ptr(self.fallback), self.args, self.nargs, self.kwnames], tail=True))
        return str(self.module)


RELEASE_SYMBOL = "scriptc.release_capsule"
RELEASE_TYPE = ir.FunctionType(VOID, [I8P])
_RELEASE_ADDRESS: list[int] = []


def release_capsule_address() -> int:
    """The address of ``void release_capsule(PyObject *capsule)``, the destructor of the capsule that is the
    base of every array native code allocated and returned: it drops the array reference the capsule holds
    (its pointer is the meminfo) and frees the memory at zero. Compiled once per process. It runs no Python
    code, so it works at any point of interpreter exit, when module globals may already be gone; JIT code is
    never unmapped (llvmlite does not dispose engines at exit)."""
    with _BIND_LOCK:
        if not _RELEASE_ADDRESS:
            _bind_capi_locked()
            module = ir.Module(name="scriptc.release")
            fn = ir.Function(module, RELEASE_TYPE, RELEASE_SYMBOL)
            get = ir.Function(module, CAPI["PyCapsule_GetPointer"], "PyCapsule_GetPointer")
            free = ir.Function(module, ir.FunctionType(VOID, [I8P]), "free")
            b = ir.IRBuilder(fn.append_basic_block())
            mi = b.call(get, [fn.args[0], ir.Constant(I8P, None)])
            rc = b.bitcast(mi, I64.as_pointer())
            n = b.sub(b.load(rc), _i64(1))
            b.store(n, rc)
            with b.if_then(b.icmp_signed("==", n, _i64(0))):
                b.call(free, [mi])
            b.ret_void()
            eng = engine()
            address = eng.add_module(eng.optimize(str(module)), [RELEASE_SYMBOL])[RELEASE_SYMBOL]
            llvm.add_symbol(RELEASE_SYMBOL, address)
            _RELEASE_ADDRESS.append(address)
    return _RELEASE_ADDRESS[0]


def kernel_symbol(address: int) -> str:
    return f"scriptc.kernel.{address:x}"


def entry_unsupported_reason(native, rebuild=None) -> str | None:
    """Why no entry can be built for ``native`` (None: it can)."""
    if OBJECT_LAYOUT_ERROR:
        return f"unexpected CPython object layout: {OBJECT_LAYOUT_ERROR}"

    def bad(t: Type) -> str | None:
        if t in (INT, FLOAT, BOOL, NONE, STR):
            return None
        if isinstance(t, NamedTupleType) and t.cls is None:
            return f"the NamedTuple class {t.qualname} is not known in this process"
        if isinstance(t, TupleType):
            return next((r for r in map(bad, t.elems) if r), None)
        if isinstance(t, TensorType) and t.known:
            if ARRAY_LAYOUT_ERROR:
                return f"unexpected NumPy array layout: {ARRAY_LAYOUT_ERROR}"
            return None if t.dtype in CANONICAL_DESCRS else f"unsupported dtype {t.dtype}"
        return f"cannot take an argument of type {t}"

    for t in native.arg_types:
        reason = bad(t)
        if reason:
            return reason
    try:
        leaves(native.result_type)
    except TypeError:
        return f"cannot return {native.result_type}"
    if _unknown_named_tuple(native.result_type):
        return f"a NamedTuple class in {native.result_type} is not known in this process"
    if _needs_rebuild(native.result_type) and rebuild is None:
        return f"a result of type {native.result_type} needs a rebuild callable"
    return None


def _unknown_named_tuple(t: Type) -> bool:
    if isinstance(t, NamedTupleType) and t.cls is None:
        return True
    return isinstance(t, TupleType) and any(map(_unknown_named_tuple, t.elems))


_OUT_CTYPES = {INT: ctypes.c_int64, FLOAT: ctypes.c_double, BOOL: ctypes.c_int8}


def out_reader(result_type: Type):
    """``read(out_address) -> [leaves]`` for an out struct of ``result_type``: ints, floats, bools, and
    pointers as ints (0 for null). For ``rebuild`` callables."""
    kinds = leaves(result_type)
    fields = [(f"f{i}", _OUT_CTYPES.get(t, ctypes.c_void_p)) for i, t in enumerate(kinds)]
    Out = type("Out", (ctypes.Structure,), {"_fields_": fields})
    names = [name for name, _ in fields]

    def convert(t):
        if t == BOOL:
            return bool
        if t in _OUT_CTYPES:
            return None
        return lambda p: p or 0

    getters = list(zip(names, map(convert, kinds)))

    def read(out_address: int) -> list:
        out = Out.from_address(out_address)
        return [getattr(out, n) if c is None else c(getattr(out, n)) for n, c in getters]

    read.Out = Out
    return read


def make_entry(native, fallback, *, nogil: bool = False, rebuild=None, raise_error=None):
    """A builtin function calling ``native`` (a ``NativeFunction``: ``.address``, ``.arg_types``,
    ``.result_type``, ``.graph``) for arguments of exactly its signature's kinds, and ``fallback(*args,
    **kwargs)`` for anything else. Raises ``EntryUnsupported`` where it cannot (the ctypes path still works).

    ``rebuild(out_address, args_tuple) -> value`` turns results holding arrays or strs into Python values;
    ``raise_error(status)`` raises the exception of a nonzero status (default: from ``ERROR_TABLE``).
    Without ``rebuild``, a result holding arrays or strs uses ``native.rebuild_out`` where it has one."""
    if rebuild is None and _needs_rebuild(native.result_type):
        rebuild = getattr(native, "rebuild_out", None)
    reason = entry_unsupported_reason(native, rebuild)
    if reason:
        raise EntryUnsupported(reason)
    if raise_error is None:
        raise_error = _raise_native_error
    if not callable(fallback) or not callable(raise_error) or (rebuild is not None and not callable(rebuild)):
        raise TypeError("fallback, rebuild and raise_error must be callable")
    _bind_capi()
    release_capsule_address()
    name = getattr(getattr(native, "graph", None), "name", None) or "native"
    with _COUNTER_LOCK:
        symbol = f"scriptc.pyentry{next(_COUNTER)}.{name}"
    text = _EntryLowering(symbol, native, fallback, rebuild, raise_error, nogil).lower()
    eng = engine()
    llvm.add_symbol(kernel_symbol(native.address), native.address)
    llmod = eng.optimize(text)
    address = eng.add_module(llmod, [symbol])[symbol]

    state = EntryState()
    state.native, state.fallback, state.rebuild, state.raise_error = native, fallback, rebuild, raise_error
    state.nogil, state.symbol, state.llvm_ir = nogil, symbol, str(llmod)
    state.method_def = _PyMethodDef(name.encode(), address, METH_FASTCALL | METH_KEYWORDS,
                                    f"native entry of {name}{' (nogil)' if nogil else ''}".encode())
    return _PyCFunction_NewEx(ctypes.addressof(state.method_def), state, None)


def bind_to_class(entry, base: type = object, name: str | None = None) -> type:
    """A subclass of ``base`` whose instances' ``__call__`` is ``entry`` itself (no bound method, no
    wrapper): ``obj(*args)`` runs the entry's native code. ``rebind(cls, entry)`` swaps in a newer entry."""
    cls_name = name or f"{base.__name__}_native"
    return type(cls_name, (base,), {"__call__": staticmethod(entry), "__slots__": (),
                                    "__module__": getattr(base, "__module__", __name__)})


def rebind(cls: type, entry) -> None:
    """Make ``entry`` the ``__call__`` of ``cls``'s instances (CPython updates the type's call slot)."""
    cls.__call__ = staticmethod(entry)


__all__ = ["ARRAY_LAYOUT_ERROR", "OBJECT_LAYOUT_ERROR", "EntryState", "EntryUnsupported", "bind_to_class",
           "entry_unsupported_reason", "make_entry", "out_reader", "rebind"]


# -- benchmark ---------------------------------------------------------------------------------------------

def bench_entry(n: int = 1_000_000, repeat: int = 7) -> dict[str, float]:
    """ns per call of ``add(1.0, 2.0)``: Python, the entry, the entry through ``bind_to_class``, ctypes."""
    import timeit

    import scriptc
    from . import compile_graph

    def add(a: float, b: float) -> float:
        return a + b

    sf = scriptc.script(add)
    native = compile_graph(sf.graph_for(1.0, 2.0))
    entry = make_entry(native, native)
    obj = bind_to_class(entry)()
    assert entry(1.0, 2.0) == obj(1.0, 2.0) == native(1.0, 2.0) == add(1.0, 2.0) == 3.0
    results = {}
    for label, f in [("python def", add), ("entry", entry), ("entry via bind_to_class", obj),
                     ("ctypes (NativeFunction)", native), ("ctypes raw caller", native._call)]:
        t = min(timeit.Timer("f(1.0, 2.0)", globals={"f": f}).repeat(repeat, n)) / n
        results[label] = t * 1e9
        print(f"{label:28s} {t * 1e9:7.1f} ns/call")
    return results


if __name__ == "__main__":
    bench_entry()
