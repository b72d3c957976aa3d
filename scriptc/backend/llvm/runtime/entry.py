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

The generated code embeds no address of this process: it names the objects it compares with (``int``,
``np.ndarray``, NumPy's dtype descriptors, ``True``...: ``scriptc.obj.*``, bound by ``entry_runtime``) and the
C API functions it calls, and reads the callables it calls (fallback, rebuild, raise_error) from its
``__self__``, an ``EntryState`` tuple. So the code is the same in every process and for every function it is
loaded for: ``compile.py`` lowers it into the kernel's own module (one LLVM module, one object file per signature,
which the on-disk cache keeps), and ``make_entry`` builds one for any kernel address. It relies on CPython object
layouts (``ob_type`` at 8, a float's value at 16, a tuple's items at 24, ``PyArrayObject_fields``); the layouts
are checked against live objects at import (``entry_runtime``), and entries are refused (``EntryUnsupported``:
use the ctypes path) where they do not match. The ``EntryState`` keeps everything the code refers to alive (the
method definition, the fallback, the helpers, the native function) for as long as the function lives; the
machine code itself is never unmapped.

``bind_to_class(entry)`` makes a class whose instances' ``__call__`` is the entry: ``obj(*args)`` goes
straight to native code (a new signature's entry falls back to the previous one's, the last to Python's
dispatcher: a chain).
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
from llvmlite import ir

from ....ir.types import BOOL, FLOAT, INT, NONE, STR, NamedTupleType, TensorType, TupleType, Type
from .llvm_types import F64, I8, I8P, I32, I64, leaves, mem_type, out_struct, process_function, process_global
from .engine import engine
from .entry_runtime import (
    ARR_DATA,
    ARR_DESCR,
    ARR_DIMS,
    ARR_FLAGS,
    ARR_ND,
    ARR_STRIDES,  # noqa: F401
    ARRAY_LAYOUT_ERROR,
    CANONICAL_DESCRS,
    FLOAT_VALUE,
    NPY_ARRAY_ALIGNED,
    NPY_ARRAY_WRITEABLE,
    NUMPY_ADDRESSES,
    NUMPY_SLOTS,
    OB_TYPE,
    OBJECT_LAYOUT_ERROR,
    OBJECTS,
    RELEASE_SYMBOL,
    STATE_FALLBACK,
    STATE_RAISE,
    STATE_REBUILD,
    TUPLE_ITEMS,
    EntryState,
    EntryUnsupported,
    bind_to_class,
    builtin_function,
    descr_symbol,
    entry_unsupported_reason,
    holds_str as _holds_str,
    make_state,
    named_tuple_symbol,
    needs_rebuild as _needs_rebuild,
    object_symbol,
    out_reader,
    rebind,
    release_capsule_address,
)
from .folding import FoldingBuilder
from .text_builder import TextBuilder

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
    "PyErr_Occurred": ir.FunctionType(I8P, []),
}
# NumPy's array API functions, called under ``scriptc.<name>`` (bound by entry_runtime)
NUMPY_API = {
    "PyArray_DescrFromType": (NUMPY_SLOTS["PyArray_DescrFromType"], ir.FunctionType(I8P, [I32])),
    "PyArray_NewFromDescr": (
        NUMPY_SLOTS["PyArray_NewFromDescr"],
        ir.FunctionType(I8P, [I8P, I8P, I32, I8P, I8P, I8P, I32, I8P]),
    ),
    "PyArray_SetBaseObject": (NUMPY_SLOTS["PyArray_SetBaseObject"], ir.FunctionType(I32, [I8P, I8P])),
}
RELEASE_TYPE = ir.FunctionType(VOID, [I8P])

# -- code generation ---------------------------------------------------------------------------------------

_COUNTER = itertools.count()
_COUNTER_LOCK = threading.Lock()


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


def _i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def python_table_names() -> list[str]:
    """Every name a CPython entry may refer to (C API and NumPy functions, objects), in a fixed order: the slots
    of a ``PythonTable``."""
    return (
        list(CAPI)
        + ["scriptc." + name for name in NUMPY_API]
        + [object_symbol(k) for k in OBJECTS]
        + [descr_symbol(d, k) for d, descrs in CANONICAL_DESCRS.items() for k in range(len(descrs))]
    )


class PythonTable:
    """For code that must load without Python (an exported library): the C API functions, NumPy's functions and
    the Python objects CPython entries use are read from one table of pointers the module defines (``name``),
    which ``scriptc.load`` fills (the manifest lists its slots), instead of being symbols the dynamic linker
    would have to resolve: the library keeps needing only the C and math libraries."""

    def __init__(self, module: ir.Module, name: str):
        self.names = python_table_names()
        self.index = {n: k for k, n in enumerate(self.names)}
        self.table = ir.GlobalVariable(module, ir.ArrayType(I8P, len(self.names)), name)
        self.table.initializer = ir.Constant(self.table.value_type, None)
        self.table.align = 8

    def load(self, b: ir.IRBuilder, name: str) -> ir.Value:
        slot = b.gep(self.table, [ir.Constant(I32, 0), ir.Constant(I32, self.index[name])], inbounds=True)
        return b.load(slot)


class EntryLowering:
    """Builds ``PyObject *entry(self, args, nargs, kwnames)`` for one kernel into ``module``: ``kernel`` is the
    kernel's function in the same module, or (``kernel_address``) machine code elsewhere in the process.
    ``arg_types``/``result_type`` are the kernel's signature, ``written`` the indices of the arguments whose
    arrays it may write; with a ``table``, what the entry refers to in Python comes from that ``PythonTable``."""

    def __init__(
        self,
        module: ir.Module,
        symbol: str,
        arg_types,
        result_type,
        written,
        nogil: bool,
        kernel: ir.Function | None = None,
        kernel_address: int | None = None,
        table: PythonTable | None = None,
    ):
        self.module, self.symbol, self.table = module, symbol, table
        self.arg_types, self.result_type, self.written = list(arg_types), result_type, set(written)
        self.kernel, self.kernel_address = kernel, kernel_address
        self._decls: dict[str, ir.Function] = {}
        self.nogil = nogil
        self.fn = ir.Function(self.module, ir.FunctionType(I8P, [I8P, I8PP, I64, I8P]), symbol)
        self.self_, self.args, self.nargs, self.kwnames = self.fn.args
        for a, n in zip(self.fn.args, ("self", "args", "nargs", "kwnames")):
            a.name = n
        self.entry_block = self.fn.append_basic_block("entry")
        self.slow = self.fn.append_basic_block("fallback")
        self.b = FoldingBuilder(self.entry_block)

    def capi(self, name: str) -> ir.Value:
        full = "scriptc." + name if name in NUMPY_API else name
        fnty = NUMPY_API[name][1] if name in NUMPY_API else CAPI[name]
        if self.table is not None:
            return self.b.bitcast(self.table.load(self.b, full), fnty.as_pointer())
        fn = self._decls.get(name)
        if fn is None:
            fn = self._decls[name] = self.module.globals.get(full) or ir.Function(self.module, fnty, full)
        return fn

    def obj(self, x) -> ir.Value:
        """A pointer to an object the code compares with: a type or singleton (``OBJECTS``), or a NumPy dtype
        descriptor given as (dtype name, index in CANONICAL_DESCRS)."""
        if isinstance(x, tuple):
            name, address = descr_symbol(*x), id(CANONICAL_DESCRS[x[0]][x[1]])
        elif isinstance(x, NamedTupleType):  # its class, found by name in every process
            name, address = named_tuple_symbol(x.qualname), id(x.cls)
        else:
            key = next(k for k, v in OBJECTS.items() if v is x)
            name, address = object_symbol(key), id(x)
        if self.table is not None:
            return self.table.load(self.b, name)
        return process_global(self.module, name, address, I8)

    def state_item(self, k: int) -> ir.Value:
        """Item ``k`` of the entry's EntryState (its ``self``): a callable, borrowed."""
        return self.field(self.self_, TUPLE_ITEMS + 8 * k, I8P)

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
        return self.b.icmp_unsigned("==", self.field(obj, OB_TYPE, I8P), self.obj(tp))

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
            is_true = b.icmp_unsigned("==", obj, self.obj(True))
            is_false = b.icmp_unsigned("==", obj, self.obj(False))
            self.require(b.or_(is_true, is_false), f"{what}.bool")
            return [b.zext(is_true, I8)]
        if t == NONE:
            self.require(b.icmp_unsigned("==", obj, self.obj(None)), f"{what}.none")
            return []
        if t == STR:
            self.require(self.type_is(obj, str), f"{what}.str")
            return [obj]
        if isinstance(t, TupleType):
            self.require(self.type_is(obj, t if isinstance(t, NamedTupleType) else tuple), f"{what}.tuple")
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
        leaves_ = self.alloca(ir.ArrayType(I64, 1 + 2 * t.rank), f"{what}.leaves")
        self.require(
            b.call(self._unboxer(t, written), [obj, b.gep(leaves_, [_i64(0), _i64(0)], inbounds=True)]), f"{what}.array"
        )
        data, *dims_strides = [b.load(b.gep(leaves_, [_i64(0), _i64(k)], inbounds=True)) for k in range(1 + 2 * t.rank)]
        dims = dims_strides[: t.rank]
        for k, (d, want) in enumerate(zip(dims, t.shape)):
            if want is not None:
                self.require(b.icmp_unsigned("==", d, _i64(want)), f"{what}.dim{k}")
        return [ir.Constant(I8P, None), b.inttoptr(data, I8P)] + dims_strides

    def _unboxer(self, t: TensorType, written: bool) -> ir.Function:
        """``i1 unbox(PyObject *obj, i64 *leaves)``: whether ``obj`` is an ndarray of ``t``'s rank and dtype,
        aligned (and writeable when ``written``); if so its data pointer, dimensions and strides go to
        ``leaves``. One per module, rank, dtype and writeability: inlined at O3, a call in the first tier (the
        MLP training step's entry unpacks 20 arrays, ~45 lines of IR each inline)."""
        key = f"scriptc.rt.unbox_array.{t.rank}.{t.dtype}.{int(written)}"
        fn = self.module.globals.get(key)
        if fn is not None:
            return fn
        fn = ir.Function(self.module, ir.FunctionType(ir.IntType(1), [I8P, I64.as_pointer()]), key)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        obj, leaves_ = fn.args
        saved, self.b = self.b, FoldingBuilder(fn.append_basic_block())
        try:
            b, no = self.b, ir.Constant(ir.IntType(1), 0)

            def check(cond) -> None:
                with b.if_then(b.not_(cond), likely=False):
                    b.ret(no)

            check(self.type_is(obj, np.ndarray))
            check(b.icmp_unsigned("==", self.field(obj, ARR_ND, I32), ir.Constant(I32, t.rank)))
            descr = self.field(obj, ARR_DESCR, I8P)
            same = None
            for k in range(len(CANONICAL_DESCRS[t.dtype])):
                eq = b.icmp_unsigned("==", descr, self.obj((t.dtype, k)))
                same = eq if same is None else b.or_(same, eq)
            check(same)
            need = NPY_ARRAY_ALIGNED | (NPY_ARRAY_WRITEABLE if written else 0)
            check(
                b.icmp_unsigned(
                    "==", b.and_(self.field(obj, ARR_FLAGS, I32), ir.Constant(I32, need)), ir.Constant(I32, need)
                )
            )
            b.store(b.ptrtoint(self.field(obj, ARR_DATA, I8P), I64), leaves_)
            for base, offset in ((1, ARR_DIMS), (1 + t.rank, ARR_STRIDES)):
                p = self.field(obj, offset, I64.as_pointer())
                for k in range(t.rank):
                    b.store(b.load(b.gep(p, [_i64(k)], inbounds=True)), b.gep(leaves_, [_i64(base + k)], inbounds=True))
            b.ret(ir.Constant(ir.IntType(1), 1))
        finally:
            self.b = saved
        return fn

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
            return self.call("PyType_GenericAlloc", self.obj(t), _i64(len(t.elems)))
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
            obj = self.obj(None)
        else:
            assert t == BOOL, t
            obj = b.select(b.icmp_unsigned("!=", vals[0], ir.Constant(I8, 0)), self.obj(True), self.obj(False))
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
        arr = self.call(
            "PyArray_NewFromDescr",
            self.obj(np.ndarray),
            descr,
            ir.Constant(I32, t.rank),
            b.bitcast(dims, I8P),
            b.bitcast(strides, I8P),
            data,
            ir.Constant(I32, 0x0400),
            ir.Constant(I8P, None),
        )
        self.fail_if_null(arr, None)
        capsule = self.call("PyCapsule_New", meminfo, ir.Constant(I8P, None), b.bitcast(self.capsule_destructor(), I8P))
        self.call("PyArray_SetBaseObject", arr, capsule)
        return arr

    def capsule_destructor(self) -> ir.Function:
        """The module's ``release_capsule`` (``define_release_capsule``), else the process's."""
        fn = self._decls.get("release")
        if fn is None and self.table is not None:
            fn = self.module.globals[define_release_capsule(self.module, self.table)]
        if fn is None:
            fn = self.module.globals.get(release_symbol(self.module)) or self.module.globals.get(RELEASE_SYMBOL)
            if fn is None:
                fn = process_function(self.module, RELEASE_SYMBOL, release_capsule_address(), RELEASE_TYPE)
            self._decls["release"] = fn
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
        return self.call(
            "PyObject_Vectorcall",
            callable_,
            self.b.gep(stack, [_i64(0), _i64(0)], inbounds=True),
            _i64(len(items)),
            ir.Constant(I8P, None),
        )

    # -- the whole function ------------------------------------------------------------------------------
    def lower(self) -> None:
        b = self.b
        arg_types, result_type = self.arg_types, self.result_type
        n = len(arg_types)
        self.require(
            b.and_(
                b.icmp_unsigned("==", self.kwnames, ir.Constant(I8P, None)), b.icmp_unsigned("==", self.nargs, _i64(n))
            ),
            "nargs",
        )
        kernel_args = []
        for i, t in enumerate(arg_types):
            obj = b.load(b.gep(self.args, [_i64(i)], inbounds=True))
            kernel_args += self.unpack(obj, t, f"arg{i}", written=i in self.written)
        in_types = [x for t in arg_types for x in leaves(t)]
        assert len(kernel_args) == len(in_types)
        out_t = out_struct(result_type, self.module)
        out = self.alloca(out_t, "out")
        b.store(ir.Constant(out_t, None), out)  # a kernel that writes no result leaves null meminfos
        kernel = self.kernel
        if kernel is None:  # machine code elsewhere, by a private symbol bound to its address: a direct call
            kty = ir.FunctionType(I32, [mem_type(x) for x in in_types] + [out_t.as_pointer()])
            kernel = process_function(self.module, kernel_symbol(self.kernel_address), self.kernel_address, kty)
        if self.nogil:
            ts = self.call("PyEval_SaveThread")
            status = b.call(kernel, kernel_args + [out])
            self.call("PyEval_RestoreThread", ts)
        else:
            status = b.call(kernel, kernel_args + [out])
        with b.if_then(b.icmp_unsigned("!=", status, ir.Constant(I32, 0)), likely=False):
            # an exception set already (Python's SIGINT handler ran inside the kernel: interrupts.py) is the error
            with b.if_then(b.icmp_unsigned("!=", self.call("PyErr_Occurred"), ir.Constant(I8P, None))):
                b.ret(ir.Constant(I8P, None))
            code = self.call("PyLong_FromLongLong", b.sext(status, I64))
            self.fail_if_null(code, None)
            r = self.vectorcall(self.state_item(STATE_RAISE), [code])
            self.call("Py_DecRef", code)
            with b.if_then(b.icmp_unsigned("!=", r, ir.Constant(I8P, None)), likely=False):
                self.call("Py_DecRef", r)  # raise_error returned instead of raising: SystemError
            b.ret(ir.Constant(I8P, None))
        vals = [
            b.load(b.gep(out, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True))
            for k, _ in enumerate(leaves(result_type))
        ]
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
            r = self.vectorcall(self.state_item(STATE_REBUILD), [addr, tup])
            self.call("Py_DecRef", addr)
            self.call("Py_DecRef", tup)
            b.ret(r)
        else:
            b.ret(self.box(result_type, vals))
        b.position_at_end(self.slow)
        b.ret(
            b.call(
                self.capi("PyObject_Vectorcall"),
                [self.state_item(STATE_FALLBACK), self.args, self.nargs, self.kwnames],
                tail=True,
            )
        )


def release_symbol(module: ir.Module) -> str:
    return f"{module.name}.release_capsule"


def define_release_capsule(module: ir.Module, table: PythonTable | None = None) -> str:
    """Define ``void <module>.release_capsule(PyObject *capsule)`` (see ``entry_runtime.release_capsule_address``)
    in ``module``: every compiled module carries its own, so that code loaded from the on-disk cache needs
    nothing compiled in this process. Returns its symbol."""
    name = release_symbol(module)
    if name in module.globals:
        return name
    fn = ir.Function(module, RELEASE_TYPE, name)
    free = module.globals.get("free") or ir.Function(module, ir.FunctionType(VOID, [I8P]), "free")
    b = TextBuilder(fn.append_basic_block())
    if table is not None:
        get = b.bitcast(table.load(b, "PyCapsule_GetPointer"), CAPI["PyCapsule_GetPointer"].as_pointer())
    else:
        get = module.globals.get("PyCapsule_GetPointer") or ir.Function(
            module, CAPI["PyCapsule_GetPointer"], "PyCapsule_GetPointer"
        )
    mi = b.call(get, [fn.args[0], ir.Constant(I8P, None)])
    rc = b.bitcast(mi, I64.as_pointer())
    n = b.sub(b.load(rc), _i64(1))
    b.store(n, rc)
    with b.if_then(b.icmp_signed("==", n, _i64(0))):
        b.call(free, [mi])
    b.ret_void()
    return name


def compile_release_capsule() -> int:
    """A ``release_capsule`` of its own (for processes that need one before any module brought it)."""
    module = ir.Module(name="scriptc.release")
    name = define_release_capsule(module)
    eng = engine()
    return eng.add_module(eng.optimize(str(module)), [name])[name]


def kernel_symbol(address: int) -> str:
    return f"scriptc.kernel.{address:x}"


def lower_python_entry(
    module: ir.Module,
    symbol: str,
    kernel: ir.Function,
    arg_types,
    result_type,
    written,
    nogil: bool,
    table: PythonTable | None = None,
) -> None:
    """Add ``symbol``, the CPython entry of ``kernel`` (a function of ``module``), and the module's
    ``release_capsule``, to ``module``."""
    define_release_capsule(module, table)
    EntryLowering(module, symbol, arg_types, result_type, written, nogil, kernel=kernel, table=table).lower()


def make_entry(native, fallback, *, nogil: bool = False, rebuild=None, raise_error=None):
    """A builtin function calling ``native`` (a ``NativeFunction``: ``.address``, ``.arg_types``,
    ``.result_type``, ``.graph``) for arguments of exactly its signature's kinds, and ``fallback(*args,
    **kwargs)`` for anything else. Raises ``EntryUnsupported`` where it cannot (the ctypes path still works).
    A function compiled by ``compile_graph(..., python_entry=True)`` carries its entry already
    (``native.python_entry``); this compiles one for any kernel address.

    ``rebuild(out_address, args_tuple) -> value`` turns results holding arrays or strs into Python values;
    ``raise_error(status)`` raises the exception of a nonzero status (default: from ``ERROR_TABLE``).
    Without ``rebuild``, a result holding arrays or strs uses ``native.rebuild_out`` where it has one."""
    if rebuild is None and _needs_rebuild(native.result_type):
        rebuild = getattr(native, "rebuild_out", None)
    reason = entry_unsupported_reason(native, rebuild)
    if reason:
        raise EntryUnsupported(reason)
    state = make_state(fallback, rebuild, raise_error)
    name = getattr(getattr(native, "graph", None), "name", None) or "native"
    with _COUNTER_LOCK:
        symbol = f"scriptc.pyentry{next(_COUNTER)}.{name}"
    module = ir.Module(name=symbol)
    EntryLowering(
        module,
        symbol,
        native.arg_types,
        native.result_type,
        getattr(native, "written_inputs", {}),
        nogil,
        kernel_address=native.address,
    ).lower()
    eng = engine()
    llmod = eng.optimize(str(module))
    address = eng.add_module(llmod, [symbol])[symbol]
    state.native, state.nogil, state.symbol, state.entry_ir = native, nogil, symbol, str(llmod)
    return builtin_function(address, name, state, nogil)


__all__ = [
    "ARRAY_LAYOUT_ERROR",
    "OBJECT_LAYOUT_ERROR",
    "EntryState",
    "EntryUnsupported",
    "bind_to_class",
    "entry_unsupported_reason",
    "make_entry",
    "out_reader",
    "rebind",
]
