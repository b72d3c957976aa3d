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

from ..ir.registry import Batch, Effect, OpTypeError, register
from ..ir.types import BOOL, FLOAT, INT, ListType, TensorType, TupleType, Type, parse_type


# -- batching rules (``OpDef.batch``) -----------------------------------------------------------------------
# A batched list holds batched elements (each element differs between examples, the length does not): element i
# of the list is element i of every example's list. Its length, and which element an index picks, must therefore
# be the same for every example: appending under a condition on mapped values, or indexing with a mapped index,
# is refused.
_SORTED_PER_EXAMPLE = Batch.unbatchable("sorting each example's list (use np.sort on an array)")


def _fold(b, node, xs, start, step, first=0):
    """``acc = start; for v in xs[first:]: acc = step(acc, v)`` over a list (batched or not), as a loop whose
    accumulator is batched: Python's left-to-right order, element by element, for every example at once."""
    out_t = node.outputs[0].type
    acc = b.coerce(start, out_t, True)
    trips = b.op("aten::sub", b.op("aten::list_len", xs), b.const(first))
    loop = b.node("prim::Loop", [trips, b.const(True), acc], [])
    body = loop.add_block()
    i = body.add_param(INT, "k")
    carried = b.mark(body.add_param(b.batched_type(out_t), "acc"), out_t)

    def run():
        v = b.op("aten::list_getitem", xs, b.op("aten::add", i, b.const(first)))
        if b.batched(xs):
            b.mark(v, node.inputs[0].type.elem)
        return [b.const(True), b.fix_dtype(step(carried, v), out_t)]

    for r in b.in_block(body, b.mask, run):
        body.add_return(r)
    return [loop.add_output(carried.type, b.graph.fresh_name(None))]


def _sum_batch(b, node, ins):
    start = b.const(0.0 if node.outputs[0].type == FLOAT else 0)
    return _fold(b, node, ins[0], start, lambda acc, v: b.op("aten::add", acc, v))


def _extremum_batch(compare):
    def rule(b, node, ins):
        (xs,) = ins
        empty = b.op("aten::eq", b.op("aten::list_len", xs), b.const(0))
        check = b.node("prim::If", [empty], [])
        fail, _ = check.add_block(), check.add_block()  # (the else block does nothing)
        b.in_block(
            fail,
            None,
            lambda: b.node(
                "prim::RaiseException",
                [b.const(MIN_EMPTY if compare == "aten::lt" else MAX_EMPTY)],
                [],
                {"exc": "ValueError"},
            ),
        )
        first = b.op("aten::list_getitem", xs, b.const(0))
        if b.batched(xs):
            b.mark(first, node.inputs[0].type.elem)
        # Python keeps the first of equal items and replaces only when strictly smaller (larger)
        return _fold(b, node, xs, first, lambda acc, v: b.op("aten::where", b.op(compare, v, acc), v, acc), 1)

    return Batch.custom(rule)


def _contains_batch(b, node, ins):
    xs, value = ins
    return _fold(b, node, xs, b.const(False), lambda acc, v: b.op("aten::__or__", acc, b.op("aten::eq", v, value)))


def _element(b, node, v, example):
    return b.coerce(v, example, True)


def _not_masked(b, node, what):
    if b.mask is not None:
        raise b.error(
            node,
            f"{what} under a condition that depends on a mapped value",
            "the list's length would differ between examples; use an array (grad records a loop's "
            "iterations in lists: vmap of grad of a loop whose trip count depends on a mapped value "
            "is not supported)",
        )


def _same_index(b, node, ins):
    if any(b.batched(v) for v in ins[1:] if v.type in (INT, BOOL)):
        raise b.error(node, "a list indexed or sliced at a position that differs between examples")


def _construct_batch(b, node, ins):
    elem = node.output.type.elem
    t = b.batched_type(elem)
    return [b.node(node.kind, [_element(b, node, v, elem) for v in ins], [ListType(t)], {"elem": str(t)}).output]


def _getitem_batch(b, node, ins):
    xs, i = ins
    if not b.batched(xs):  # an unbatched list read at an index that differs: per example
        return b.lanes(node, ins)
    _same_index(b, node, ins)
    return [b.op(node.kind, xs, i)]


def _setitem_batch(b, node, ins):
    xs, i, v = ins
    _same_index(b, node, ins)
    elem = node.inputs[0].type.elem
    v = _element(b, node, v, elem)
    if b.mask is not None:
        v = b.masked(v, b.op("aten::list_getitem", xs, i), elem.rank if isinstance(elem, TensorType) else 0)
    b.node(node.kind, [xs, i, v], [])
    return []


def _grow_batch(b, node, ins):
    _not_masked(b, node, f"{node.kind.split('::')[1]}() on a list")
    _same_index(b, node, ins)
    xs, *rest = ins
    elem = node.inputs[0].type.elem
    rest = [_element(b, node, v, elem) if s.type == elem else v for v, s in zip(rest, node.inputs[1:])]
    return b.node(node.kind, [xs, *rest], [xs.type.elem for _ in node.outputs]).outputs


def _same_list_batch(b, node, ins):
    _same_index(b, node, ins)
    if not all(b.batched(v) for v in ins if isinstance(v.type, ListType)):
        raise b.error(node, "lists of values that differ between examples mixed with lists of values that do not")
    return [b.op(node.kind, *ins, **node.attrs)]


def _len_batch(b, node, ins):
    return [b.op(node.kind, ins[0])]


def _to_array_batch(b, node, ins):
    """np.array(list): the examples' elements stacked after the batch axis (an empty list gives an empty array
    per example, as np.array does)."""
    (xs,) = ins
    dtype, rank = node.attrs["dtype"], node.attrs["rank"]
    empty = b.op("aten::eq", b.op("aten::list_len", xs), b.const(0))
    choice = b.node("prim::If", [empty], [])
    then, other = choice.add_block(), choice.add_block()
    zeros = b.in_block(then, b.mask, lambda: b.op("aten::zeros", b.size, *[b.const(0)] * rank, dtype=dtype))
    then.add_return(zeros)
    other.add_return(b.in_block(other, b.mask, lambda: b.cast(b.op("aten::stack", xs, axis=1), dtype)))
    return [choice.add_output(zeros.type, b.graph.fresh_name(None))]


def _join_batch(extra):
    """np.concatenate / np.stack of a batched list: the axis moves by one."""

    def rule(b, node, ins):
        rank = node.inputs[0].type.elem.rank + extra
        return [b.op(node.kind, ins[0], axis=node.attrs["axis"] % rank + 1)]

    return rule


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


def _construct_rule(*types, elem, tape=False):
    lt = ListType(parse_type(elem))
    for t in types:
        _check_elem(lt, t, "list literal")
    return lt


# ``tape``: a list that reverse mode records a loop's values on (appended to, then read back); marked so that
# differentiating a gradient graph again (``grad(grad(f))``) can tell it from a list of the user's
register(
    "prim::ListConstruct(Any... elems, *, str elem, bool tape) -> Any",
    impl=lambda *xs, elem, tape=False: list(xs),
    infer=_construct_rule,
    batch=Batch.custom(_construct_batch, fresh=True),
)


# -- reading -----------------------------------------------------------------------------------------------

register(
    "aten::list_len(Any self) -> int",
    impl=len,
    infer=lambda t: (_list(t, "len()"), INT)[1],
    batch=Batch.custom(_len_batch, unbatched_result=True),
)


def _getitem(xs, i):
    if not -len(xs) <= i < len(xs):
        raise IndexError("list index out of range")
    return xs[i]


def _getitem_rule(t, i):
    _index(i, "")
    return _list(t, "indexing").elem


register(
    "aten::list_getitem(Any self, int index) -> Any",
    impl=_getitem,
    infer=_getitem_rule,
    effect=Effect.RAISES,
    batch=Batch.custom(_getitem_batch),
)


def _slice(xs, start, stop, step):
    if step == 0:
        raise ValueError("slice step cannot be zero")
    return xs[start:stop:step]


def _slice_rule(t, *bounds):
    for b in bounds:
        if b not in (INT, BOOL) and str(b) != "NoneType":
            raise OpTypeError(f"slice indices must be integers or None, not {b}")
    return _list(t, "slicing")


register(
    "aten::list_slice(Any self, int? start, int? stop, int? step) -> Any",
    impl=_slice,
    infer=_slice_rule,
    effect=Effect.RAISES,
    batch=Batch.custom(_same_list_batch),
)


def _contains(xs, v):
    return any(x == v for x in xs)


def _contains_rule(t, v):
    lt = _list(t, "'in'")
    if isinstance(lt.elem, TensorType):
        raise OpTypeError("'in' on a list of arrays is not supported (NumPy compares arrays element-wise)")
    if not (lt.elem == v or {lt.elem, v} <= {INT, FLOAT, BOOL}):
        raise OpTypeError(f"'in' compares {v} with the elements of a list of {lt.elem}")
    return BOOL


register(
    "aten::list_contains(Any self, Any value) -> bool",
    impl=_contains,
    infer=_contains_rule,
    batch=Batch.custom(_contains_batch),
)


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


register(
    "aten::list_sum(Any self) -> Number",
    impl=_sum,
    batch=Batch.custom(_sum_batch),
    infer=lambda t: FLOAT if _number_list(t, "sum()").elem == FLOAT else INT,
)


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


register(
    "aten::list_min(Any self) -> Any",
    impl=_min,
    infer=lambda t: _number_list(t, "min()").elem,
    effect=Effect.RAISES,
    batch=_extremum_batch("aten::lt"),
)
register(
    "aten::list_max(Any self) -> Any",
    impl=_max,
    infer=lambda t: _number_list(t, "max()").elem,
    effect=Effect.RAISES,
    batch=_extremum_batch("aten::gt"),
)


def _sorted(xs, *, reverse=False):
    return sorted(xs, reverse=reverse)


register(
    "aten::sorted(Any self, *, bool reverse) -> Any",
    impl=_sorted,
    batch=_SORTED_PER_EXAMPLE,
    infer=lambda t, reverse=False: _number_list(t, "sorted()"),
)


def _concat_rule(a, b):
    if _list(a, "+") != _list(b, "+"):
        raise OpTypeError(f"cannot concatenate {a} and {b}")
    return a


register(
    "aten::list_add(Any a, Any b) -> Any",
    impl=lambda a, b: a + b,
    infer=_concat_rule,
    batch=Batch.custom(_same_list_batch),
)


def _repeat_rule(t, n):
    _index(n, "")
    return _list(t, "*")


register(
    "aten::list_mul(Any self, int n) -> Any",
    impl=lambda xs, n: xs * n,
    infer=_repeat_rule,
    batch=Batch.custom(_same_list_batch),
)


# -- writing -----------------------------------------------------------------------------------------------


def _append_rule(t, v):
    _check_elem(_list(t, "append()"), v, "append()")
    return []


register(
    "aten::append(Any self, Any value) -> ()",
    impl=lambda xs, v: xs.append(v),
    infer=_append_rule,
    effect=Effect.WRITES,
    batch=Batch.custom(_grow_batch),
)


def _setitem(xs, i, v):
    if not -len(xs) <= i < len(xs):
        raise IndexError("list assignment index out of range")
    xs[i] = v


def _setitem_rule(t, i, v):
    _index(i, "")
    _check_elem(_list(t, "item assignment"), v, "item assignment")
    return []


register(
    "aten::list_setitem(Any self, int index, Any value) -> ()",
    impl=_setitem,
    infer=_setitem_rule,
    effect=Effect.WRITES,
    batch=Batch.custom(_setitem_batch),
)


def _pop(xs, i):
    if not xs:
        raise IndexError("pop from empty list")
    if not -len(xs) <= i < len(xs):
        raise IndexError("pop index out of range")
    return xs.pop(i)


register(
    "aten::pop(Any self, int index) -> Any",
    impl=_pop,
    infer=_getitem_rule,
    effect=Effect.WRITES,
    batch=Batch.custom(_grow_batch),
)


def _insert_rule(t, i, v):
    _index(i, "")
    _check_elem(_list(t, "insert()"), v, "insert()")
    return []


register(
    "aten::insert(Any self, int index, Any value) -> ()",
    impl=lambda xs, i, v: xs.insert(i, v),
    infer=_insert_rule,
    effect=Effect.WRITES,
    batch=Batch.custom(_grow_batch),
)


# -- arrays from lists -------------------------------------------------------------------------------------


def _to_array(xs, *, dtype, rank):
    if not xs:
        return np.zeros((0,) * rank, dtype)
    return np.array(xs) if rank > 1 else np.array(xs, dtype)  # (a list of float32 elements' values: float32)


def _to_array_rule(t, *, dtype, rank):
    lt = _list(t, "np.array()")
    if isinstance(lt.elem, TensorType):
        return TensorType(lt.elem.dtype, None if lt.elem.rank is None else lt.elem.rank + 1)
    return TensorType(dtype, 1)


def _to_array_vjp(e, g, out, xs, *, dtype, rank):
    """``np.array([a, b])``: each element's adjoint is its row of ``g`` (a scalar's, its element)."""
    parts = _parts(e, xs)
    if isinstance(out.type, TensorType) and out.type.rank == 1:
        return ([e.op("aten::getitem", g, e.const(j), checked=[0]) for j in range(len(parts))],)
    return ([e.op("aten::select", g, e.const(j), dim=0) for j in range(len(parts))],)


# ``dtype`` and ``rank`` are the result's, known at compile time: an empty list makes an empty array of them
# (NumPy makes float64 of shape (0,) from any empty list)
register(
    "aten::list_to_array(Any self, *, str dtype, int rank) -> Tensor",
    impl=_to_array,
    infer=_to_array_rule,
    effect=Effect.RAISES,
    shape=lambda types, consts, *, dtype, rank: [(None,) * rank],
    batch=Batch.custom(_to_array_batch),
    vjp=_to_array_vjp,
)


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


register(
    "aten::concatenate(Any arrays, *, int axis) -> Tensor",
    effect=Effect.RAISES,
    shape=_unknown_dims(0),
    impl=lambda xs, *, axis=0: np.concatenate(xs, axis=axis),
    infer=_concatenate_rule,
    batch=Batch.custom(_join_batch(0)),
    vjp=_concatenate_vjp,
)
register(
    "aten::stack(Any arrays, *, int axis) -> Tensor",
    effect=Effect.RAISES,
    shape=_unknown_dims(1),
    impl=lambda xs, *, axis=0: np.stack(xs, axis=axis),
    infer=_stack_rule,
    batch=Batch.custom(_join_batch(1)),
    vjp=_stack_vjp,
)
