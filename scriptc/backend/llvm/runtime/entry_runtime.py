"""The Python side of JIT-generated CPython entry points (``entry.py`` generates their code): the CPython and
NumPy layouts the code relies on, checked against live objects; the objects it refers to by name; the state an
entry reads its callables from; and the builtin function object wrapping the machine code. This half imports no
LLVM, so that an entry point loaded from the on-disk cache becomes a callable without llvmlite.
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np

from ....ir.types import (
    BOOL,
    DTYPE_NAMES,
    FLOAT,
    INT,
    NAMED_TUPLES,
    NONE,
    STR,
    ListType,
    NamedTupleType,
    NumpyScalarType,
    TensorType,
    TupleType,
    Type,
)
from . import symbols
from .errors import ERROR_TABLE
from .layout import holds_ref, leaves


class EntryState(tuple):
    """The ``__self__`` of an entry: the tuple ``(fallback, rebuild, raise_error)`` its machine code reads the
    callables it calls from (so the same code serves every function it is loaded for), and, as attributes,
    what else it refers to: the method definition, the native function."""

    fallback = property(lambda self: self[0])
    rebuild = property(lambda self: self[1])
    raise_error = property(lambda self: self[2])

    @property
    def llvm_ir(self) -> str:
        """The optimized LLVM IR of the entry (for an entry compiled into its kernel's module, the module's)."""
        text = self.__dict__.get("entry_ir")
        return text if text is not None else self.native.llvm_ir

    def __repr__(self):
        name = getattr(getattr(getattr(self, "native", None), "graph", None), "name", "?")
        nogil = " nogil" if getattr(self, "nogil", False) else ""
        return f"<EntryState {name} -> {getattr(self, 'symbol', '?')}{nogil}>"


STATE_FALLBACK, STATE_REBUILD, STATE_RAISE = 0, 1, 2  # the items of an EntryState


METH_FASTCALL = 0x0080
METH_KEYWORDS = 0x0002
NPY_ARRAY_ALIGNED = 0x0100
NPY_ARRAY_WRITEABLE = 0x0400

# CPython object layout (64-bit, release build; checked below)
OB_TYPE = 8
FLOAT_VALUE = 16
TUPLE_ITEMS = 24  # PyTupleObject's ob_item: the entry reads its callables from its state tuple
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
    state = EntryState((x, n, s))
    if [_word(id(state) + TUPLE_ITEMS + 8 * k) for k in range(3)] != [id(x), id(n), id(s)]:
        return f"a tuple's items are not at offset {TUPLE_ITEMS}"
    return None


def _check_array_layout() -> str | None:
    """None if NumPy's ``PyArrayObject_fields`` are where the generated code reads them, else what differs."""
    base = np.arange(48, dtype=np.float64).reshape(4, 3, 4)
    samples = [
        base[1:, ::-1, ::2],
        np.asfortranarray(base),
        np.zeros((2, 3), np.int32),
        np.ones(3, bool),
        np.frombuffer(b"\0" * 17, np.uint8)[1:].view(np.int64),
    ]  # the last one is misaligned
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
    except Exception as e:  # noqa: BLE001 - any surprise means: do not generate code that reads memory
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


# NumPy's C API, by its slots in the _ARRAY_API table (checked at import by building an array through them):
# returned arrays are made natively instead of by the Python ``rebuild``.
NUMPY_SLOTS = {"PyArray_DescrFromType": 45, "PyArray_NewFromDescr": 94, "PyArray_SetBaseObject": 282}


def _numpy_api() -> dict[str, int] | None:
    """{function: address} when NumPy's table has the functions at the expected slots, else None."""
    try:
        api = ctypes.pythonapi
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        table = api.PyCapsule_GetPointer(np._core._multiarray_umath._ARRAY_API, None)
        addresses = {name: ctypes.c_void_p.from_address(table + 8 * slot).value for name, slot in NUMPY_SLOTS.items()}
        descr = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_int)(addresses["PyArray_DescrFromType"])(12)
        if descr != np.dtype("float64"):
            return None
        new = ctypes.PYFUNCTYPE(
            ctypes.py_object,
            ctypes.c_void_p,
            ctypes.py_object,
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_void_p,
        )(addresses["PyArray_NewFromDescr"])
        buf, dims, strides = (ctypes.c_double * 6)(*range(6)), (ctypes.c_int64 * 2)(2, 3), (ctypes.c_int64 * 2)(8, 16)
        api.Py_IncRef(ctypes.py_object(descr))
        a = new(
            id(np.ndarray),
            descr,
            2,
            ctypes.addressof(dims),
            ctypes.addressof(strides),
            ctypes.addressof(buf),
            0x0400,
            None,
        )
        base = object()
        api.Py_IncRef(ctypes.py_object(base))
        set_base = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.py_object)(
            addresses["PyArray_SetBaseObject"]
        )
        if set_base(a, base) != 0 or a.base is not base or a.tolist() != [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]:
            return None
        return addresses
    except Exception:  # noqa: BLE001 - any surprise means: build arrays in Python
        return None


NUMPY_ADDRESSES = _numpy_api()


# -- what the generated code refers to by name ------------------------------------------------------------

OBJECTS = {
    "int": int,
    "float": float,
    "str": str,
    "tuple": tuple,
    "ndarray": np.ndarray,
    "True": True,
    "False": False,
    "None": None,
}


def object_symbol(name: str) -> str:
    return f"scriptc.obj.{name}"


def descr_symbol(dtype: str, k: int) -> str:
    return f"scriptc.obj.descr.{dtype}.{k}"


def _bind_objects() -> None:
    """The types and singletons the code compares with, NumPy's descriptors (kept alive by CANONICAL_DESCRS),
    the C API and NumPy's array API, under the names the code uses."""
    for name, obj in OBJECTS.items():
        symbols.bind(object_symbol(name), id(obj))
    for dtype, descrs in CANONICAL_DESCRS.items():
        for k, d in enumerate(descrs):
            symbols.bind(descr_symbol(dtype, k), id(d))
    for name, address in (NUMPY_ADDRESSES or {}).items():
        symbols.bind("scriptc." + name, address)


_bind_objects()


@symbols.provider("Py")
def _c_api(name: str) -> int | None:
    try:
        return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
    except AttributeError:
        return None


# -- releasing returned arrays ---------------------------------------------------------------------------

RELEASE_SYMBOL = "scriptc.release_capsule"
_RELEASE: list[int] = []
_RELEASE_LOCK = threading.Lock()


def register_release_capsule(address: int) -> None:
    """A module's copy of ``release_capsule`` (every compiled module carries one); the first is the process's."""
    with _RELEASE_LOCK:
        if not _RELEASE:
            _RELEASE.append(address)
            symbols.bind(RELEASE_SYMBOL, address)


def release_capsule_address() -> int:
    """The address of ``void release_capsule(PyObject *capsule)``, the destructor of the capsule that is the
    base of every array native code allocated and returned: it drops the array reference the capsule holds
    (its pointer is the meminfo) and frees the memory at zero. It runs no Python code, so it works at any point
    of interpreter exit, when module globals may already be gone; native code is never unmapped. Compiled with
    LLVM if no compiled module has brought one yet."""
    if not _RELEASE:
        # (cycle: entry imports this module); entry loads llvmlite: only with no release capsule yet
        from .entry import compile_release_capsule

        register_release_capsule(compile_release_capsule())
    return _RELEASE[0]


@symbols.provider(RELEASE_SYMBOL)
def _release_symbol(name: str) -> int | None:
    return release_capsule_address() if name == RELEASE_SYMBOL else None


# -- the builtin function object ---------------------------------------------------------------------------


class _PyMethodDef(ctypes.Structure):
    _fields_ = [
        ("ml_name", ctypes.c_char_p),
        ("ml_meth", ctypes.c_void_p),
        ("ml_flags", ctypes.c_int),
        ("ml_doc", ctypes.c_char_p),
    ]


_PyCFunction_NewEx = ctypes.pythonapi.PyCFunction_NewEx
_PyCFunction_NewEx.restype = ctypes.py_object
_PyCFunction_NewEx.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


def _raise_native_error(status: int):
    raise ERROR_TABLE[status].make()


def needs_rebuild(t: Type) -> bool:
    return holds_ref(t) or holds_str(t)


def holds_str(t: Type) -> bool:
    """Strs, lists (listbox.py) and NumPy scalars are boxed by ``rebuild`` in Python."""
    return (
        t == STR
        or isinstance(t, (ListType, NumpyScalarType))
        or isinstance(t, TupleType)
        and any(map(holds_str, t.elems))
    )


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
    if needs_rebuild(native.result_type) and rebuild is None:
        return f"a result of type {native.result_type} needs a rebuild callable"
    return None


def _unknown_named_tuple(t: Type) -> bool:
    if isinstance(t, NamedTupleType) and t.cls is None:
        return True
    return isinstance(t, TupleType) and any(map(_unknown_named_tuple, t.elems))


def named_tuple_symbol(qualname: str) -> str:
    """A NamedTuple class the entry code tests arguments against and makes results of (``NAMED_TUPLES``)."""
    return f"scriptc.obj.namedtuple.{qualname}"


@symbols.provider("scriptc.obj.namedtuple.")
def _named_tuple_class(name: str) -> int | None:
    cls = NAMED_TUPLES.get(name[len("scriptc.obj.namedtuple.") :])
    return id(cls) if cls is not None else None  # registered for good: the address stays valid


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


def builtin_function(address: int, name: str, state: EntryState, nogil: bool = False):
    """The builtin function object (``METH_FASTCALL | METH_KEYWORDS``) running the entry at ``address`` with
    ``state`` as its ``__self__`` (which keeps the method definition alive)."""
    state.method_def = _PyMethodDef(
        name.encode(),
        address,
        METH_FASTCALL | METH_KEYWORDS,
        f"native entry of {name}{' (nogil)' if nogil else ''}".encode(),
    )
    return _PyCFunction_NewEx(ctypes.addressof(state.method_def), state, None)


def make_state(fallback, rebuild=None, raise_error=None) -> EntryState:
    if raise_error is None:
        raise_error = _raise_native_error
    if not callable(fallback) or not callable(raise_error) or (rebuild is not None and not callable(rebuild)):
        raise TypeError("fallback, rebuild and raise_error must be callable")
    return EntryState((fallback, rebuild, raise_error))


def bind_to_class(entry, base: type = object, name: str | None = None) -> type:
    """A subclass of ``base`` whose instances' ``__call__`` is ``entry`` itself (no bound method, no
    wrapper): ``obj(*args)`` runs the entry's native code. ``rebind(cls, entry)`` swaps in a newer entry."""
    cls_name = name or f"{base.__name__}_native"
    return type(
        cls_name,
        (base,),
        {"__call__": staticmethod(entry), "__slots__": (), "__module__": getattr(base, "__module__", __name__)},
    )


def rebind(cls: type, entry) -> None:
    """Make ``entry`` the ``__call__`` of ``cls``'s instances (CPython updates the type's call slot)."""
    cls.__call__ = staticmethod(entry)
