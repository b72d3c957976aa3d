"""List operators: typed Python lists (``int[]``, ``float[]``, ``bool[]``, ``Double(*)[]``: arrays of one dtype and
rank), their methods and builtins, and the NumPy functions building arrays from lists.

The reference implementations are Python's list behaviour, written out where the native backend computes it
element by element (``sum`` adds left to right from ``0``, ``min``/``max`` keep the first of equal items and
compare with ``<``/``>``, ``in`` compares with ``==``: a NaN is never found, where CPython also tries identity).
A list is a mutable reference: every operator that changes one is ``Effect.WRITES`` on its first operand, and the
passes treat lists as they treat arrays (never merged, hoisted or folded: two literals are two lists).
"""
from __future__ import annotations

import numpy as np

from ..ir.registry import Effect, OpTypeError, register
from ..ir.types import BOOL, FLOAT, INT, ListType, TensorType, TupleType, Type, parse_type


def _list(t: Type, what: str) -> ListType:
    if not isinstance(t, ListType) or t.elem is None:
        raise OpTypeError(f"{what} needs a list, got {t}")
    return t


def _fits(elem: Type, value: Type) -> bool:
    """Whether a value of type ``value`` may be stored in a list of ``elem`` (the frontend converts ints and
    bools to a float list's floats before)."""
    if isinstance(elem, TensorType) and isinstance(value, TensorType):
        return elem.dtype is None or value.dtype is None or (elem.dtype, elem.rank) == (value.dtype, value.rank)
    return elem == value


def _check_elem(lt: ListType, value: Type, what: str) -> None:
    if not _fits(lt.elem, value):
        raise OpTypeError(f"{what}: cannot store {value} in a list of {lt.elem}")


def _index(t: Type, what: str) -> None:
    if t not in (INT, BOOL):
        raise OpTypeError(f"list indices must be integers, not {t}")


# -- construction ------------------------------------------------------------------------------------------

def _construct_rule(*types, elem):
    lt = ListType(parse_type(elem))
    for t in types:
        _check_elem(lt, t, "list literal")
    return lt


register("prim::ListConstruct(Any... elems, *, str elem) -> Any", impl=lambda *xs, elem: list(xs),
         infer=_construct_rule)


# -- reading -----------------------------------------------------------------------------------------------

register("aten::list_len(Any self) -> int", impl=len,
         infer=lambda t: (_list(t, "len()"), INT)[1])


def _getitem(xs, i):
    if not -len(xs) <= i < len(xs):
        raise IndexError("list index out of range")
    return xs[i]


def _getitem_rule(t, i):
    _index(i, "")
    return _list(t, "indexing").elem


register("aten::list_getitem(Any self, int index) -> Any", impl=_getitem, infer=_getitem_rule,
         effect=Effect.RAISES)


def _slice(xs, start, stop, step):
    if step == 0:
        raise ValueError("slice step cannot be zero")
    return xs[start:stop:step]


def _slice_rule(t, *bounds):
    for b in bounds:
        if b not in (INT, BOOL) and str(b) != "NoneType":
            raise OpTypeError(f"slice indices must be integers or None, not {b}")
    return _list(t, "slicing")


register("aten::list_slice(Any self, int? start, int? stop, int? step) -> Any", impl=_slice, infer=_slice_rule,
         effect=Effect.RAISES)


def _contains(xs, v):
    return any(x == v for x in xs)


def _contains_rule(t, v):
    lt = _list(t, "'in'")
    if isinstance(lt.elem, TensorType):
        raise OpTypeError("'in' on a list of arrays is not supported (NumPy compares arrays element-wise)")
    if not (lt.elem == v or {lt.elem, v} <= {INT, FLOAT, BOOL}):
        raise OpTypeError(f"'in' compares {v} with the elements of a list of {lt.elem}")
    return BOOL


register("aten::list_contains(Any self, Any value) -> bool", impl=_contains, infer=_contains_rule)


def _sum(xs):
    acc = 0
    for v in xs:
        acc = acc + v
    return acc


def _number_list(t, what):
    lt = _list(t, what)
    if lt.elem not in (INT, FLOAT, BOOL):
        raise OpTypeError(f"{what} of a list of {lt.elem} is not supported")
    return lt


register("aten::list_sum(Any self) -> Number", impl=_sum,
         infer=lambda t: FLOAT if _number_list(t, "sum()").elem == FLOAT else INT)


def _empty_message(name: str) -> str:
    try:
        (min if name == "min" else max)([])
    except ValueError as e:
        return str(e)
    raise AssertionError


MIN_EMPTY, MAX_EMPTY = _empty_message("min"), _empty_message("max")


def _min(xs):
    if not xs:
        raise ValueError(MIN_EMPTY)
    cur = xs[0]
    for v in xs[1:]:
        if v < cur:
            cur = v
    return cur


def _max(xs):
    if not xs:
        raise ValueError(MAX_EMPTY)
    cur = xs[0]
    for v in xs[1:]:
        if v > cur:
            cur = v
    return cur


register("aten::list_min(Any self) -> Any", impl=_min, infer=lambda t: _number_list(t, "min()").elem,
         effect=Effect.RAISES)
register("aten::list_max(Any self) -> Any", impl=_max, infer=lambda t: _number_list(t, "max()").elem,
         effect=Effect.RAISES)


def _sorted(xs, *, reverse=False):
    return sorted(xs, reverse=reverse)


register("aten::sorted(Any self, *, bool reverse) -> Any", impl=_sorted,
         infer=lambda t, reverse=False: _number_list(t, "sorted()"))


def _concat_rule(a, b):
    if _list(a, "+") != _list(b, "+"):
        raise OpTypeError(f"cannot concatenate {a} and {b}")
    return a


register("aten::list_add(Any a, Any b) -> Any", impl=lambda a, b: a + b, infer=_concat_rule)


def _repeat_rule(t, n):
    _index(n, "")
    return _list(t, "*")


register("aten::list_mul(Any self, int n) -> Any", impl=lambda xs, n: xs * n, infer=_repeat_rule)


# -- writing -----------------------------------------------------------------------------------------------

def _append_rule(t, v):
    _check_elem(_list(t, "append()"), v, "append()")
    return []


register("aten::append(Any self, Any value) -> ()", impl=lambda xs, v: xs.append(v), infer=_append_rule,
         effect=Effect.WRITES)


def _setitem(xs, i, v):
    if not -len(xs) <= i < len(xs):
        raise IndexError("list assignment index out of range")
    xs[i] = v


def _setitem_rule(t, i, v):
    _index(i, "")
    _check_elem(_list(t, "item assignment"), v, "item assignment")
    return []


register("aten::list_setitem(Any self, int index, Any value) -> ()", impl=_setitem, infer=_setitem_rule,
         effect=Effect.WRITES)


def _pop(xs, i):
    if not xs:
        raise IndexError("pop from empty list")
    if not -len(xs) <= i < len(xs):
        raise IndexError("pop index out of range")
    return xs.pop(i)


register("aten::pop(Any self, int index) -> Any", impl=_pop, infer=_getitem_rule, effect=Effect.WRITES)


def _insert_rule(t, i, v):
    _index(i, "")
    _check_elem(_list(t, "insert()"), v, "insert()")
    return []


register("aten::insert(Any self, int index, Any value) -> ()", impl=lambda xs, i, v: xs.insert(i, v),
         infer=_insert_rule, effect=Effect.WRITES)


# -- arrays from lists -------------------------------------------------------------------------------------

_SCALAR_DTYPES = {INT: "int64", FLOAT: "float64", BOOL: "bool"}


def _to_array(xs, *, dtype, rank):
    if not xs:
        return np.zeros((0,) * rank, dtype)
    return np.array(xs)


def _to_array_rule(t, *, dtype, rank):
    lt = _list(t, "np.array()")
    if isinstance(lt.elem, TensorType):
        return TensorType(lt.elem.dtype, None if lt.elem.rank is None else lt.elem.rank + 1)
    return TensorType(_SCALAR_DTYPES[lt.elem], 1)


# ``dtype`` and ``rank`` are the result's, known at compile time: an empty list makes an empty array of them
# (NumPy makes float64 of shape (0,) from any empty list)
register("aten::list_to_array(Any self, *, str dtype, int rank) -> Tensor", impl=_to_array, infer=_to_array_rule,
         effect=Effect.RAISES, shape=lambda types, consts, *, dtype, rank: [(None,) * rank])


def _array_list(t, what):
    lt = _list(t, what)
    if not isinstance(lt.elem, TensorType):
        raise OpTypeError(f"{what} needs a list or tuple of arrays, got {t}")
    return lt.elem


def _axis_for(rank, axis, what):
    if rank is None:
        return
    if not -rank <= axis < rank:
        raise OpTypeError(f"axis {axis} is out of bounds for array of dimension {rank}")


def _concatenate_rule(t, *, axis=0):
    e = _array_list(t, "np.concatenate()")
    if e.rank == 0:
        raise OpTypeError("zero-dimensional arrays cannot be concatenated")
    _axis_for(e.rank, axis, "np.concatenate()")
    return TensorType(e.dtype, e.rank)


def _stack_rule(t, *, axis=0):
    e = _array_list(t, "np.stack()")
    _axis_for(None if e.rank is None else e.rank + 1, axis, "np.stack()")
    return TensorType(e.dtype, None if e.rank is None else e.rank + 1)


def _unknown_dims(extra: int):
    """Shape rule: a list's type does not know its arrays' shapes, only their rank."""
    def rule(types, consts, **attrs):
        e = types[0].elem if isinstance(types[0], ListType) else None
        return [None if not isinstance(e, TensorType) or e.rank is None else (None,) * (e.rank + extra)]
    return rule


def _parts(e, arrays):
    """The arrays a list display joins (the transform reads the display's elements: ``a`` and ``b`` of
    ``[a, b]``), or a tuple's elements."""
    if isinstance(arrays.type, TupleType):
        return [e.op("prim::TupleIndex", arrays, index=k) for k in range(len(arrays.type.elems))]
    node = arrays.node
    if node is None or node.kind != "prim::ListConstruct":
        raise NotImplementedError("a list not written as a display")
    return list(node.inputs)


def _concatenate_vjp(e, g, out, arrays, *, axis=0):
    """Each array's adjoint is its own stretch of ``g`` along the axis."""
    parts, start, none = _parts(e, arrays), e.const(0), e.const(None)
    k = axis % out.type.rank
    pieces = []
    for a in parts:
        stop = e.add(start, e.dim_size(a, k))
        pieces.append(e.op("aten::slice", g, start, stop, none, dim=k))
        start = stop
    return (pieces,)


def _stack_vjp(e, g, out, arrays, *, axis=0):
    parts = _parts(e, arrays)
    k = axis % out.type.rank
    return ([e.op("aten::select", g, e.const(j), dim=k) for j in range(len(parts))],)


register("aten::concatenate(Any arrays, *, int axis) -> Tensor", effect=Effect.RAISES, shape=_unknown_dims(0),
         impl=lambda xs, *, axis=0: np.concatenate(xs, axis=axis), infer=_concatenate_rule, vjp=_concatenate_vjp)
register("aten::stack(Any arrays, *, int axis) -> Tensor", effect=Effect.RAISES, shape=_unknown_dims(1),
         impl=lambda xs, *, axis=0: np.stack(xs, axis=axis), infer=_stack_rule, vjp=_stack_vjp)
