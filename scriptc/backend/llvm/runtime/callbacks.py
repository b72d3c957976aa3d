"""What native code calls back into Python for, without LLVM: str constants kept for the life of the process,
the plans of ``print`` and ``aten::format`` nodes and the callback that runs them, and the exception a callback
raised. The lowering that emits the calls is ``strings.py`` (whose docstring describes the protocol); this half
is what a process running cached machine code needs, so it does not import llvmlite.
"""

from __future__ import annotations

import builtins
import ctypes
import sys
import threading

import numpy as np

from ....ir.types import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    ListType,
    NamedTupleType,
    NumpyScalarType,
    TensorType,
    TupleType,
    Type,
    parse_type,
)
from . import symbols
from .digests import blake2b
from .errors import TRAVELLING_EXCEPTIONS
from .layout import PTR, leaves

# -- symbols bound in the JIT ------------------------------------------------------------------------------

CALLBACK_SYMBOL = "scriptc.py.callback"
PY_SYMBOLS = {
    "incref": ("scriptc.py.incref", "Py_IncRef"),
    "decref": ("scriptc.py.decref", "Py_DecRef"),
    "gil_ensure": ("scriptc.py.gil_ensure", "PyGILState_Ensure"),
    "gil_release": ("scriptc.py.gil_release", "PyGILState_Release"),
    "check_signals": ("scriptc.py.check_signals", "PyErr_CheckSignals"),
}


def _address(cfunc) -> int:
    return ctypes.cast(cfunc, ctypes.c_void_p).value


# -- array constants ---------------------------------------------------------------------------------------

# data address -> a module-level array frozen into machine code (``lowering/constants.py``), kept alive for the
# life of the process: code referring to it never outlives it, and a result pointing into it is copied
_ARRAY_CONSTANTS: dict[int, np.ndarray] = {}


def keep_array(a: np.ndarray) -> int:
    """The address of ``a``'s data, ``a`` kept alive for the life of the process."""
    address = a.ctypes.data
    _ARRAY_CONSTANTS.setdefault(address, a)
    return address


def constant_containing(address: int) -> np.ndarray | None:
    """The array constant whose memory holds ``address``, if any."""
    for start, a in _ARRAY_CONSTANTS.items():
        if start <= address < start + max(a.nbytes, 1):
            return a
    return None


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
    return "scriptc.str." + blake2b(value.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


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
        self.__array_interface__ = {
            "data": (data, True),
            "shape": shape,
            "strides": strides,
            "typestr": dtype.str,
            "version": 3,
        }


def _decoder(t: Type):
    """A function taking an iterator over a record's leaves to the Python value of type ``t``."""
    if t == INT or t == FLOAT:
        return next
    if isinstance(t, NumpyScalarType):  # printed and formatted as NumPy does (float32's 0.1)
        make = np.dtype(t.dtype).type
        return lambda it: make(next(it))
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
        if isinstance(t, NamedTupleType):  # printed as its class prints it: P(a=1, b=2.0)
            return lambda it: t.make([d(it) for d in elems])
        return lambda it: tuple(d(it) for d in elems)
    if isinstance(t, TensorType) and t.known:
        dtype, rank = t.np_dtype, t.rank

        def decode_array(it):
            next(it)  # meminfo: native code keeps the memory alive
            data = next(it) or 0
            shape = tuple(next(it) for _ in range(rank))
            strides = tuple(next(it) for _ in range(rank))
            if 0 in shape or not data:
                return np.empty(shape, dtype)
            return np.asarray(_ArrayInterface(data, dtype, shape, strides))

        return decode_array
    if isinstance(t, ListType):
        from .listbox import from_native  # listbox loads llvmlite.ir: only for lists (other hits load no llvmlite)

        return lambda it: from_native(t, next(it))
    raise TypeError(f"cannot pass {t} to a callback")


def _detached(value):
    """``value`` with its arrays copied: a decoded array views native memory, which the code frees once the
    callback returns (print and format use it before; an exception keeps it)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple):
        items = [_detached(v) for v in value]
        return value._make(items) if hasattr(value, "_make") else tuple(items)
    return value


class Plan:
    """What one print or format node does at run time with its record."""

    def __init__(self, kind: str, types: tuple, sep: str = " ", end: str = "\n", fmt: str = ""):
        self.kind, self.types, self.sep, self.end, self.fmt = kind, types, sep, end, fmt
        self.kw = ()  # the keywords plan_id was given (its id hashes them)
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
        if self.kind == "raise":  # ``raise`` with values known at run time: fmt names the builtin exception
            raise getattr(builtins, self.fmt)(*map(_detached, values))
        if self.kind == "print":
            print(*values, sep=self.sep, end=self.end)
            return
        s = self.fmt.format(*values)
        _incref(s)  # native code owns one reference to the result
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
            pid = _content_id(kind, [str(t) for t in types], key[2])
            while pid in _PLANS:
                plans_stable = False
                pid += 1
            plan = _PLANS[pid] = Plan(kind, tuple(types), **kw)
            plan.kw = key[2]
            _PLAN_IDS[key] = pid
        return pid


plans_stable = True


def _content_id(kind: str, type_texts: list[str], kw: tuple) -> int:
    text = repr((kind, type_texts, kw))
    return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "little") >> 2


def describe_plan(pid: int) -> list | None:
    """Plan ``pid`` as plain JSON values (for the on-disk cache); None if its id is not its content's."""
    plan = _PLANS.get(pid)
    if plan is None:
        return None
    texts = [str(t) for t in plan.types]
    if _content_id(plan.kind, texts, plan.kw) != pid:
        return None
    return [pid, plan.kind, texts, [list(item) for item in plan.kw]]


def restore_plan(description) -> bool:
    """Register a plan ``describe_plan`` gave (in another process); False unless it decodes to the plan its id
    was derived from and that id is free here (or already that plan). A ``raise`` plan must name a builtin
    exception: nothing else is ever called."""
    try:
        pid, kind, texts, kw = description
        kw = {k: v for k, v in kw}
        if kind not in ("print", "format", "raise") or not all(type(v) is str for v in kw.values()):
            return False
        if kind == "raise":
            cls = getattr(builtins, kw.get("fmt", ""), None)
            if not (isinstance(cls, type) and issubclass(cls, BaseException)):
                return False
        types = [parse_type(t) for t in texts]
        if [str(t) for t in types] != texts:
            return False
        return plan_id(kind, types, **kw) == pid
    except Exception:  # noqa: BLE001 - a description that does not decode is a miss, whatever the reason
        return False


def restore_str(value) -> bool:
    """Bind the symbol of a str constant a cache entry lists."""
    if type(value) is not str:
        return False
    symbols.bind(str_symbol(value), keep_str(value))
    return True


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
    except BaseException as e:  # noqa: BLE001 -- every exception goes back to the caller of native code
        _PENDING.exc = e
        return 1


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p)(_callback)
_incref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", ctypes.pythonapi))
_decref = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("Py_DecRef", ctypes.pythonapi))


ROUND_SYMBOL = "scriptc.py.round_ndigits"


def _round_ndigits(x: float, n: int, out) -> int:
    try:
        out[0] = round(x, n)
        return 0
    except OverflowError:  # "rounded value too large to represent": the only error for a float and an int
        return 1


_ROUND = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_double, ctypes.c_int64, ctypes.POINTER(ctypes.c_double))(
    _round_ndigits
)


def _bind_symbols() -> None:
    symbols.bind(ROUND_SYMBOL, _address(_ROUND))
    symbols.bind(CALLBACK_SYMBOL, _address(_CALLBACK))
    for symbol, c_name in PY_SYMBOLS.values():
        symbols.bind(symbol, _address(getattr(ctypes.pythonapi, c_name)))


_bind_symbols()
TRAVELLING_EXCEPTIONS[f"{PendingException.__module__}:{PendingException.__qualname__}"] = PendingException


@symbols.provider("scriptc.str.")
def _unknown_str(name: str) -> None:
    """A str constant is bound when its value is known (``keep_str``): a cache entry lists its values."""
    return None
