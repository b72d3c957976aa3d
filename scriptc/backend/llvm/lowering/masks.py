"""Lowering of ``scriptc/ops/indexing.py``: unit dimensions and boolean masks.

- ``unsqueeze`` is a view: the new dimension has length 1 and stride 0 (NumPy's ``np.newaxis`` strides).
- ``masked_select`` checks the mask's shape against the array's leading dimensions (NumPy's IndexError), counts
  the True elements, allocates ``(count,) + rest`` and copies the selected sub-arrays in row-major order.
- ``masked_put_`` checks the same, then stores a scalar, or a value array broadcast to ``(count,) + rest``
  (NumPy's messages when it does not fit), into the selected elements in row-major order; a value array that
  shares memory with the destination is read as copied first.
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
