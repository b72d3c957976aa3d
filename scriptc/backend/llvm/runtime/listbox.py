"""Lists at the boundary between Python and native code (the ctypes path of ``NativeFunction``).

A Python list passed for a ``list[T]`` parameter is copied into a native list object (``lowering/lists.py``'s layout: a
32-byte header ``refcount, len, cap, data`` and an element buffer, both from libc ``malloc``); arrays in it are
borrowed (a null meminfo), as array arguments are. After the call, what native code did to the list is copied
back into the caller's list object (reflection, as TorchScript and numba's reflected lists do): elements that
compare equal to the old ones (same type, same value) stay the caller's objects; an ``int`` stored in a
``list[float]`` argument is read as a float. A returned list is a new Python list, or the caller's own list
object when native code returns the list it was given. The boundary then drops its references: the last one
frees the list (and releases the arrays it held).
"""

from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from ....ir.types import BOOL, FLOAT, INT, ListType, TensorType
from .errors import ERROR_TABLE
from .native import Borrowed, _array, _rebuild, _release
from . import symbols
from .layout import elem_size
from .symbols import LIBC

_SCALAR_DTYPES = {INT: np.int64, FLOAT: np.float64, BOOL: np.uint8}
_INPUTS = threading.local()

LIBC.malloc.restype = ctypes.c_void_p
LIBC.malloc.argtypes = [ctypes.c_size_t]
_free = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(("free", LIBC))


def _words(p: int, n: int):
    return (ctypes.c_int64 * n).from_address(p)


def to_native(t: ListType, xs: list) -> int:
    """A new native list (one reference) holding the elements of ``xs`` (checked by the dispatcher)."""
    elem, n = t.elem, len(xs)
    cap = max(n, 4)
    if isinstance(elem, TensorType):
        rank = elem.rank
        rows = np.empty((n, 2 + 2 * rank), np.int64)
        for k, a in enumerate(xs):
            rows[k] = [0, a.__array_interface__["data"][0], *a.shape, *a.strides]
        buf = rows
    else:
        buf = np.asarray([float(x) for x in xs] if elem == FLOAT else xs, _SCALAR_DTYPES[elem])
    data = LIBC.malloc(cap * elem_size(elem))
    head = LIBC.malloc(32)
    if not data or not head:
        raise MemoryError("out of memory")
    if n:
        ctypes.memmove(data, buf.ctypes.data, n * elem_size(elem))
    h = _words(head, 4)
    h[0], h[1], h[2], h[3] = 1, n, cap, data
    symbols.LIST_ALLOCATIONS.value += 1
    return head


def release(t: ListType, p: int) -> None:
    """Drop one reference to the native list at ``p`` (the last frees it and releases its arrays)."""
    h = _words(p, 4)
    h[0] -= 1
    if h[0]:
        return
    if isinstance(t.elem, TensorType):
        width = 2 + 2 * t.elem.rank
        for k in range(h[1]):
            mi = ctypes.c_int64.from_address(h[3] + 8 * width * k).value
            if mi:
                _release(mi)
    _free(h[3])
    _free(p)
    symbols.LIST_FREES.value += 1


def from_native(t: ListType, p: int, args=()) -> list:
    """The Python list of the native list's elements (arrays: NumPy arrays, owning a reference each)."""
    h = _words(p, 4)
    n, data, elem = h[1], h[3], t.elem
    if not isinstance(elem, TensorType):
        raw = (
            np.ctypeslib.as_array((ctypes.c_uint8 * (n * elem_size(elem))).from_address(data))
            if n
            else np.zeros(0, np.uint8)
        )
        values = raw.view(_SCALAR_DTYPES[elem]).tolist()
        return [bool(v) for v in values] if elem == BOOL else values
    width = 2 + 2 * elem.rank
    out = []
    for k in range(n):
        row = list(_words(data + 8 * width * k, width))
        if row[0]:
            ctypes.c_int64.from_address(row[0]).value += 1  # the new array's own reference
        out.append(_array(elem, iter(row), args))
    return out


def _same(old, new) -> bool:
    numbers = (bool, int, float)
    if type(old) is not type(new) and not (isinstance(old, numbers) and isinstance(new, numbers)):
        return False
    if isinstance(new, float):
        if math.isnan(new):
            return isinstance(old, float) and math.isnan(old)
        return old == new and math.copysign(1.0, old) == math.copysign(1.0, new)
    if isinstance(new, np.ndarray):
        return old is new
    return old == new


def reflect(t: ListType, p: int, xs: list, args) -> None:
    """Copy the native list's contents back into the caller's list ``xs``."""
    new = from_native(t, p, args)
    merged = [xs[k] if k < len(xs) and _same(xs[k], v) else v for k, v in enumerate(new)]
    if len(merged) != len(xs) or any(a is not b for a, b in zip(merged, xs)):
        xs[:] = merged


def take_list(t: ListType, p: int, args) -> list:
    """A returned list: the caller's list object if native code returned the one it was given, else a new
    list; the result's reference is dropped."""
    given = getattr(_INPUTS, "lists", {}).get(p)
    result = given if given is not None else from_native(t, p, args)
    release(t, p)
    return result


# Held from a list's copy-in to its copy-back: threads passing one list would each copy back their own copy and
# lose the others' appends (CPython's list.append is atomic); calls with lists run one at a time instead
_LIST_CALLS = threading.RLock()


def call_with_lists(native, args):
    """``native(*args)`` for a signature with list parameters: convert in, call, reflect, convert out."""
    with _LIST_CALLS:
        return _call_with_lists(native, args)


def _call_with_lists(native, args):
    if len(args) != len(native.arg_types):
        raise TypeError(f"{native.name}() takes {len(native.arg_types)} arguments ({len(args)} given)")
    flat, lists, borrowed = [], [], list(args)
    made = {}  # one native list per Python list: a list passed twice is one list, as in CPython
    try:
        for k, (t, a, conv) in enumerate(zip(native.arg_types, args, native._converters)):
            if isinstance(t, ListType):
                message = native.written_inputs.get(k)
                if (
                    message is not None
                    and isinstance(t.elem, TensorType)
                    and isinstance(a, list)
                    and any(isinstance(e, np.ndarray) and not e.flags.writeable for e in a)
                ):
                    raise ValueError(message)  # (an array in it the code may write, as for an argument)
                if (id(a), t) in made:
                    flat.append(made[id(a), t])
                    continue
                p = made[id(a), t] = to_native(t, a)
                lists.append((t, p, a))
                flat.append(p)
                if isinstance(t.elem, TensorType):
                    borrowed += a
            else:
                flat += conv(a)
        status, outs = native._call(*flat)
        borrowed = Borrowed(borrowed)
        for t, p, a in lists:
            reflect(t, p, a, borrowed)
        if status:
            raise ERROR_TABLE[status].make()
        _INPUTS.lists = {p: a for _, p, a in lists}
        try:
            return _rebuild(native.result_type, iter(outs), borrowed)
        finally:
            _INPUTS.lists = {}
    finally:
        for t, p, _ in lists:
            release(t, p)
