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

from ...ir.types import TensorType
from .arrays import Arr, kind_of
from .common import I1, I64, i64
from .rules import lowers_array


def compact_shape(rank: int, first: int) -> str:
    """A shape template as NumPy's mapiter messages print it: (3,4), (3,)."""
    if rank == 1:
        return f"({{{first}}},)"
    return "(" + ",".join(f"{{{first + k}}}" for k in range(rank)) + ")"


class MaskOps:
    """Mixin of FunctionLowering."""

    # -- masks ------------------------------------------------------------------------------------------------
    def check_mask(self, a: Arr, m: Arr) -> None:
        b = self.b
        for d in range(m.t.rank):
            self.raise_with(
                b.icmp_signed("!=", a.shape[d], m.shape[d]),
                IndexError,
                f"boolean index did not match indexed array along axis {d}; size of axis is {{0}} "
                f"but size of corresponding boolean axis is {{1}}",
                [a.shape[d], m.shape[d]],
            )

    def count_true(self, m: Arr):
        b = self.b
        counter = self.alloca(I64)
        b.store(i64(0), counter)

        def count(index):
            x = self.load_element(self.element_ptr(m, index), "bool")
            b.store(b.add(b.load(counter), b.zext(x, I64)), counter)

        self.loop_nest(m.shape, count)
        return b.load(counter)

    def for_each_selected(self, a: Arr, m: Arr, body) -> None:
        """``body(j, index)`` for the j-th True element of ``m`` (row-major) and each index of ``a``'s
        trailing dimensions under it (``index`` is the full index into ``a``)."""
        b = self.b
        counter = self.alloca(I64)
        b.store(i64(0), counter)
        rest = a.shape[m.t.rank :]

        def visit(index):
            with b.if_then(self.load_element(self.element_ptr(m, index), "bool")):
                j = b.load(counter)
                self.loop_nest(rest, lambda inner: body(j, index + inner))
                b.store(b.add(j, i64(1)), counter)

        self.loop_nest(m.shape, visit)

    def value_strides(self, src: Arr, target: list, full_mask: bool) -> list:
        """Which of ``src``'s dimensions broadcast (length 1 against another length): a list of i1, raising
        NumPy's ValueError when ``src`` does not fit ``target``."""
        b = self.b
        if full_mask:  # 0-d or 1-D values: the count of True must match (or the value has one element)
            if src.t.rank == 0:
                return []
            n = src.shape[0]
            bad = b.and_(b.icmp_signed("!=", n, target[0]), b.icmp_signed("!=", n, i64(1)))
            self.raise_with(
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
        self.raise_with(bad, ValueError, shapes, [*src.shape, *target])
        return flags

    def restride(self, src: Arr, broadcast: list) -> list:
        """``src``'s strides with 0 where its dimension is broadcast."""
        return [self.b.select(flag, i64(0), s) for flag, s in zip(broadcast, src.strides)]


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers_array("aten::unsqueeze")
def lower_unsqueeze(ctx, node):
    a = ctx.arr(node.inputs[0])
    dim = node.attrs["dim"]
    shape = a.shape[:dim] + [i64(1)] + a.shape[dim:]
    strides = a.strides[:dim] + [i64(0)] + a.strides[dim:]
    return [ctx.view(a, node.output.type, a.data, shape, strides)]


@lowers_array("aten::masked_select")
def lower_masked_select(ctx, node):
    a, m = ctx.arr(node.inputs[0]), ctx.arr(node.inputs[1])
    ctx.check_mask(a, m)
    out = ctx.alloc(node.output.type, [ctx.count_true(m)] + a.shape[m.t.rank :])
    k = kind_of(a.t.dtype)

    def copy(j, index):
        x = ctx.load_element(ctx.element_ptr(a, index), a.t.dtype)
        ctx.store_element(ctx.element_ptr(out, [j] + index[m.t.rank :]), x, k, out.t.dtype)

    ctx.for_each_selected(a, m, copy)
    return [out.leaves]


@lowers_array("aten::masked_put_")
def lower_masked_put(ctx, node):
    a, m = ctx.arr(node.inputs[0]), ctx.arr(node.inputs[1])
    value = node.inputs[2]
    ctx.check_mask(a, m)
    if not isinstance(value.type, TensorType):
        kind, x = ctx.element_from_python(value, a.t.dtype)
        ctx.for_each_selected(a, m, lambda j, index: ctx.store_element(ctx.element_ptr(a, index), x, kind, a.t.dtype))
        return []
    count = ctx.count_true(m)
    src0 = ctx.arr(value)
    target = [count] + a.shape[m.t.rank :]
    strides = ctx.value_strides(src0, target, m.t.rank == a.t.rank)
    src = ctx.unaliased(src0, a)
    view = Arr(src.t, [src.mi, src.data, *target[len(target) - src.t.rank :], *ctx.restride(src, strides)])
    k = kind_of(src.t.dtype)
    pad = len(target) - src.t.rank

    def store(j, index):
        where = ([j] + index[m.t.rank :])[pad:]
        x = ctx.load_element(ctx.element_ptr(view, where), src.t.dtype)
        ctx.store_element(ctx.element_ptr(a, index), x, k, a.t.dtype)

    ctx.for_each_selected(a, m, store)
    ctx.release_temp(src, src0)
    return []
