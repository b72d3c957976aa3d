"""Lowering of ``scriptc/ops/indexing.py``: unit dimensions, diagonals, boolean masks and integer arrays.

- ``unsqueeze`` is a view: the new dimension has length 1 and stride 0 (NumPy's ``np.newaxis`` strides).
- ``diagonal`` is a view: the two axes become one of stride the sum of theirs, starting ``offset`` along one.
- ``masked_select`` checks the mask's shape against the array's leading dimensions (NumPy's IndexError), counts
  the True elements, allocates ``(count,) + rest`` and copies the selected sub-arrays in row-major order.
- ``masked_put_`` checks the same, then stores a scalar, or a value array broadcast to ``(count,) + rest``
  (NumPy's messages when it does not fit), into the selected elements in row-major order; a value array that
  shares memory with the destination is read as copied first.
- ``index`` broadcasts the index arrays together (NumPy's IndexError when they do not), allocates the selection
  and copies each element, checking each index against its axis (NumPy's IndexError) and counting negative ones
  from the end; ``index_put_`` and ``index_add_`` (``np.add.at``) visit the same elements in the same order and
  store, or add, a scalar or the value array broadcast to the selection.
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.types import TensorType
from .array_value import Arr, kind_of
from .common import I1, I64, i64
from .rules import lowers_array
from . import conversions, views


def compact_shape(rank: int, first: int) -> str:
    """A shape template as NumPy's mapiter messages print it: (3,4), (3,)."""
    if rank == 1:
        return f"({{{first}}},)"
    return "(" + ",".join(f"{{{first + k}}}" for k in range(rank)) + ")"


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


# -- masks ------------------------------------------------------------------------------------------------
def check_mask(ctx, a: Arr, m: Arr) -> None:
    b = ctx.b
    for d in range(m.t.rank):
        ctx.raise_with(
            b.icmp_signed("!=", a.shape[d], m.shape[d]),
            IndexError,
            f"boolean index did not match indexed array along axis {d}; size of axis is {{0}} "
            f"but size of corresponding boolean axis is {{1}}",
            [a.shape[d], m.shape[d]],
        )


def count_true(ctx, m: Arr):
    b = ctx.b
    counter = ctx.alloca(I64)
    b.store(i64(0), counter)

    def count(index):
        x = ctx.load_element(ctx.element_ptr(m, index), "bool")
        b.store(b.add(b.load(counter), b.zext(x, I64)), counter)

    ctx.loop_nest(m.shape, count)
    return b.load(counter)


def for_each_selected(ctx, a: Arr, m: Arr, body) -> None:
    """``body(j, index)`` for the j-th True element of ``m`` (row-major) and each index of ``a``'s
    trailing dimensions under it (``index`` is the full index into ``a``)."""
    b = ctx.b
    counter = ctx.alloca(I64)
    b.store(i64(0), counter)
    rest = a.shape[m.t.rank :]

    def visit(index):
        with b.if_then(ctx.load_element(ctx.element_ptr(m, index), "bool")):
            j = b.load(counter)
            ctx.loop_nest(rest, lambda inner: body(j, index + inner))
            b.store(b.add(j, i64(1)), counter)

    ctx.loop_nest(m.shape, visit)


def value_strides(ctx, src: Arr, target: list, full_mask: bool) -> list:
    """Which of ``src``'s dimensions broadcast (length 1 against another length): a list of i1, raising
    NumPy's ValueError when ``src`` does not fit ``target``."""
    b = ctx.b
    if full_mask:  # 0-d or 1-D values: the count of True must match (or the value has one element)
        if src.t.rank == 0:
            return []
        n = src.shape[0]
        bad = b.and_(b.icmp_signed("!=", n, target[0]), b.icmp_signed("!=", n, i64(1)))
        ctx.raise_with(
            bad,
            ValueError,
            "NumPy boolean array indexing assignment cannot assign {0} input "
            "values to the {1} output values where the mask is true",
            [n, target[0]],
        )
        return [b.icmp_signed("!=", n, target[0])]
    pad = len(target) - src.t.rank
    bad, flags = ir.Constant(I1, 0), []
    for d, n in enumerate(src.shape):
        out = target[pad + d]
        bad = b.or_(bad, b.and_(b.icmp_signed("!=", n, out), b.icmp_signed("!=", n, i64(1))))
        flags.append(b.icmp_signed("!=", n, out))
    shapes = (
        f"shape mismatch: value array of shape {compact_shape(src.t.rank, 0)} could not be broadcast to "
        f"indexing result of shape {compact_shape(len(target), src.t.rank)}"
    )
    ctx.raise_with(bad, ValueError, shapes, [*src.shape, *target])
    return flags


def restride(ctx, src: Arr, broadcast: list) -> list:
    """``src``'s strides with 0 where its dimension is broadcast."""
    return [ctx.b.select(flag, i64(0), s) for flag, s in zip(broadcast, src.strides)]


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers_array("aten::unsqueeze")
def lower_unsqueeze(ctx, node):
    a = ctx.arr(node.inputs[0])
    dim = node.attrs["dim"]
    shape = a.shape[:dim] + [i64(1)] + a.shape[dim:]
    strides = a.strides[:dim] + [i64(0)] + a.strides[dim:]
    return [views.view(ctx, a, node.output.type, a.data, shape, strides)]


@lowers_array("aten::diagonal")
def lower_diagonal(ctx, node):
    a = ctx.arr(node.inputs[0])
    b = ctx.b
    k, p, q = node.attrs["offset"], node.attrs["axis1"], node.attrs["axis2"]
    n, m = a.shape[p], a.shape[q]
    rows, cols = (b.sub(n, i64(-k)), m) if k < 0 else (n, b.sub(m, i64(k)))
    length = b.select(b.icmp_signed("<", rows, cols), rows, cols)
    length = b.select(b.icmp_signed("<", length, i64(0)), i64(0), length)
    start = b.mul(i64(-k), a.strides[p]) if k < 0 else b.mul(i64(k), a.strides[q])
    # an empty diagonal starts nowhere: its offset must not move the pointer past the array
    start = b.select(b.icmp_signed(">", length, i64(0)), start, i64(0))
    data = b.gep(a.data, [start])
    keep = [d for d in range(a.t.rank) if d not in (p, q)]
    shape = [a.shape[d] for d in keep] + [length]
    strides = [a.strides[d] for d in keep] + [b.add(a.strides[p], a.strides[q])]
    return [views.view(ctx, a, node.output.type, data, shape, strides)]


@lowers_array("aten::masked_select")
def lower_masked_select(ctx, node):
    a, m = ctx.arr(node.inputs[0]), ctx.arr(node.inputs[1])
    check_mask(ctx, a, m)
    out = ctx.alloc(node.output.type, [count_true(ctx, m)] + a.shape[m.t.rank :])
    k = kind_of(a.t.dtype)

    def copy(j, index):
        x = ctx.load_element(ctx.element_ptr(a, index), a.t.dtype)
        ctx.store_element(ctx.element_ptr(out, [j] + index[m.t.rank :]), x, k, out.t.dtype)

    for_each_selected(ctx, a, m, copy)
    return [out.leaves]


@lowers_array("aten::masked_put_")
def lower_masked_put(ctx, node):
    a, m = ctx.arr(node.inputs[0]), ctx.arr(node.inputs[1])
    value = node.inputs[2]
    check_mask(ctx, a, m)
    if not isinstance(value.type, TensorType):
        kind, x = conversions.element_from_python(ctx, value, a.t.dtype)
        for_each_selected(ctx, a, m, lambda j, index: ctx.store_element(ctx.element_ptr(a, index), x, kind, a.t.dtype))
        return []
    count = count_true(ctx, m)
    src0 = ctx.arr(value)
    target = [count] + a.shape[m.t.rank :]
    strides = value_strides(ctx, src0, target, m.t.rank == a.t.rank)
    src = ctx.unaliased(src0, a)
    view = Arr(src.t, [src.mi, src.data, *target[len(target) - src.t.rank :], *restride(ctx, src, strides)])
    k = kind_of(src.t.dtype)
    pad = len(target) - src.t.rank

    def store(j, index):
        where = ([j] + index[m.t.rank :])[pad:]
        x = ctx.load_element(ctx.element_ptr(view, where), src.t.dtype)
        ctx.store_element(ctx.element_ptr(a, index), x, k, a.t.dtype)

    for_each_selected(ctx, a, m, store)
    ctx.release_temp(src, src0)
    return []


# -- integer arrays ---------------------------------------------------------------------------------------------
def broadcast_indices(ctx, arrays: list) -> tuple[list, list]:
    """(the shape the index arrays broadcast to, each as a view of that shape: stride 0 where it broadcasts),
    raising NumPy's IndexError when they do not broadcast."""
    b = ctx.b
    rank = max(a.t.rank for a in arrays)
    shape = []
    for d in range(rank):
        lengths = [a.shape[d - rank + a.t.rank] for a in arrays if d - rank + a.t.rank >= 0]
        n = lengths[0]
        for m in lengths[1:]:
            n = b.select(b.icmp_signed("==", n, i64(1)), m, n)
        shape.append(n)
    bad = ir.Constant(I1, 0)
    for a in arrays:
        for d, m in enumerate(a.shape):
            bad = b.or_(bad, b.and_(b.icmp_signed("!=", m, shape[rank - a.t.rank + d]), b.icmp_signed("!=", m, i64(1))))
    shapes, values, k = [], [], 0
    for a in arrays:
        shapes.append(compact_shape(a.t.rank, k) if a.t.rank else "()")
        values += a.shape
        k += a.t.rank
    message = "shape mismatch: indexing arrays could not be broadcast together with shapes " + " ".join(shapes) + " "
    ctx.raise_with(bad, IndexError, message, values)
    views = []
    for a in arrays:
        pad = rank - a.t.rank
        strides = [i64(0)] * pad + [
            b.select(b.icmp_signed("!=", m, shape[pad + d]), i64(0), s)
            for d, (m, s) in enumerate(zip(a.shape, a.strides))
        ]
        views.append(Arr(TensorType(a.t.dtype, rank), [a.mi, a.data, *shape, *strides]))
    return shape, views


def for_each_indexed(ctx, a: Arr, node, body) -> list:
    """``body(target, source)`` for each element of ``a[..., i0, ..., ik-1, ...]`` (the arrays ``node``'s
    index operands, at ``node.attrs["dim"]``) in row-major order: ``target`` its index in the selection,
    ``source`` the index of the element of ``a`` it is. Negative indices count from the end; NumPy's IndexError
    for one out of bounds. Returns the selection's shape."""
    b = ctx.b
    dim, axes = node.attrs["dim"], node.attrs["axes"]
    first = len(node.inputs) - len(axes)
    arrays = [ctx.arr(v) for v in node.inputs[first:]]
    shape, views = broadcast_indices(ctx, arrays)
    k = len(arrays)
    before, after = a.shape[:dim], a.shape[dim + k :]

    def visit(outer):
        source = list(outer[:dim])
        for j, (view, axis) in enumerate(zip(views, axes)):
            raw = i = ctx.load_element(ctx.element_ptr(view, outer[dim:]), view.t.dtype)
            n = a.shape[dim + j]
            if kind_of(view.t.dtype) == "u":
                bad = b.icmp_unsigned(">=", i, n)
            else:
                i = b.select(b.icmp_signed("<", i, i64(0)), b.add(i, n), i)
                bad = b.icmp_unsigned(">=", i, n)  # (still negative: a large unsigned number)
            ctx.raise_with(bad, IndexError, f"index {{0}} is out of bounds for axis {axis} with size {{1}}", [raw, n])
            source.append(i)
        ctx.loop_nest(after, lambda inner: body(outer + inner, source + inner))

    ctx.loop_nest(before + shape, visit)
    return before + shape + after


def selection_shape(ctx, a: Arr, node) -> list:
    dim, axes = node.attrs["dim"], node.attrs["axes"]
    shape, _ = broadcast_indices(ctx, [ctx.arr(v) for v in node.inputs[len(node.inputs) - len(axes) :]])
    return a.shape[:dim] + shape + a.shape[dim + len(axes) :]


@lowers_array("aten::index")
def lower_index(ctx, node):
    a = ctx.arr(node.inputs[0])
    out = ctx.alloc(node.output.type, selection_shape(ctx, a, node))
    k = kind_of(a.t.dtype)

    def copy(target, source):
        x = ctx.load_element(ctx.element_ptr(a, source), a.t.dtype)
        ctx.store_element(ctx.element_ptr(out, target), x, k, out.t.dtype)

    for_each_indexed(ctx, a, node, copy)
    return [out.leaves]


def lower_index_write(ctx, node, combine) -> list:
    """``x[..., i, ...] = v`` (``combine`` None) or ``np.add.at`` (``combine(old, new, kind)``): ``v`` a scalar
    or an array broadcast to the selection's shape (NumPy's ValueError when it does not fit)."""
    a, value = ctx.arr(node.inputs[0]), node.inputs[1]

    def put(target, source, x, kind):
        ptr = ctx.element_ptr(a, source)
        if combine is not None:
            x, kind = combine(ctx.load_element(ptr, a.t.dtype), x, kind)
        ctx.store_element(ptr, x, kind, a.t.dtype)

    if not isinstance(value.type, TensorType):
        kind, x = conversions.element_from_python(ctx, value, a.t.dtype)
        for_each_indexed(ctx, a, node, lambda target, source: put(target, source, x, kind))
        return []
    target_shape = selection_shape(ctx, a, node)
    src0 = ctx.arr(value)
    strides = value_strides(ctx, src0, target_shape, False)
    src = ctx.unaliased(src0, a)
    pad = len(target_shape) - src.t.rank
    view = Arr(src.t, [src.mi, src.data, *target_shape[pad:], *restride(ctx, src, strides)])
    k = kind_of(src.t.dtype)

    def store(target, source):
        put(target, source, ctx.load_element(ctx.element_ptr(view, target[pad:]), src.t.dtype), k)

    for_each_indexed(ctx, a, node, store)
    ctx.release_temp(src, src0)
    return []


@lowers_array("aten::index_put_")
def lower_index_put(ctx, node):
    return lower_index_write(ctx, node, None)


@lowers_array("aten::index_add_")
def lower_index_add(ctx, node):
    dtype = ctx.arr(node.inputs[0]).t.dtype

    def add(old, new, kind):
        # NumPy's add of the element and the value in the array's dtype (np.add.at casts the value first)
        mine = kind_of(dtype)
        new = conversions.from_memory(ctx, conversions.to_memory(ctx, new, kind, dtype), dtype)
        if mine == "f":
            return ctx.b.fadd(old, new), mine
        if mine == "b":
            return ctx.b.or_(old, new), mine
        return ctx.b.add(old, new), mine

    return lower_index_write(ctx, node, add)
