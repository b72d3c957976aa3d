"""Views in native code: transposes, permutations, integer and slice indexing along one axis, reshapes. A view
shares its base's data and meminfo (and takes a reference); Python's index and slice rules, NumPy's IndexError and
reshape errors."""

from __future__ import annotations

from llvmlite import ir

from ....ir.types import NONE, TensorType
from .array_value import Arr, index_checked
from .common import I1, I32, I64, i32, i64
from .rules import lowers_array
from ..runtime.folding import FoldingBuilder
from . import summation


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def view(ctx, a: Arr, t: TensorType, data, shape, strides) -> list:
    ctx.array_retain([a.mi])
    return [a.mi, data, *shape, *strides]


def normalize_index(ctx, i, n, axis: int, checked: bool = True):
    """Python's negative index wrap, and NumPy's IndexError when out of bounds; an index the
    bounds-check pass proved in ``[0, n)`` (``checked=False``) is used as it is. The common case costs one
    unsigned comparison and a branch: an index in ``[0, n)`` is used as it is, and only the others (negative
    or out of bounds) wrap and check again off the hot path."""
    if not checked:
        return i
    b = ctx.b
    before = b.block
    with b.if_then(b.icmp_unsigned(">=", i, n), likely=False):
        wrapped = b.add(i, n)  # in [0, n) for a negative index in range; any other index raises
        ctx.raise_with(
            b.icmp_unsigned(">=", wrapped, n),
            IndexError,
            f"index {{0}} is out of bounds for axis {axis} with size {{1}}",
            [i, n],
        )
        wrapped_block = b.block
    j = b.phi(I64)
    j.add_incoming(i, before)
    j.add_incoming(wrapped, wrapped_block)
    return j


def slice_indices(ctx, start, stop, step, n):
    """PySlice_Unpack + PySlice_AdjustIndices: (first index, length, step)."""
    b = ctx.b
    if step is None:
        step = i64(1)
    else:
        ctx.raise_if(b.icmp_signed("==", step, i64(0)), ValueError, "slice step cannot be zero")
    neg = b.icmp_signed("<", step, i64(0))

    def adjust(x, default_pos, default_neg):
        if x is None:
            return b.select(neg, default_neg, default_pos)
        lo = b.select(neg, i64(-1), i64(0))
        hi = b.select(neg, b.sub(n, i64(1)), n)
        wrapped = b.add(x, n)
        under = b.select(b.icmp_signed("<", wrapped, i64(0)), lo, wrapped)
        return b.select(b.icmp_signed("<", x, i64(0)), under, b.select(b.icmp_signed(">=", x, n), hi, x))

    first = adjust(start, i64(0), b.sub(n, i64(1)))
    last = adjust(stop, n, i64(-1))
    up = b.select(
        b.icmp_signed("<", first, last),
        b.add(b.sdiv(b.sub(b.sub(last, first), i64(1)), b.select(neg, i64(1), step)), i64(1)),
        i64(0),
    )
    down = b.select(
        b.icmp_signed("<", last, first),
        b.add(b.sdiv(b.sub(b.sub(first, last), i64(1)), b.select(neg, b.neg(step), i64(1))), i64(1)),
        i64(0),
    )
    return first, b.select(neg, down, up), step


def reshape_dims(ctx, a: Arr, dims: list) -> list:
    """NumPy's ``_fix_unknown_dimension``: a negative dimension (any) is the unknown one, at most one, the
    others multiplied (overflow checked) must divide the size, or equal it with no unknown; NumPy's messages,
    whose shape shows the unknown as "newaxis" (dropped when it leads). One call to the module's helper for
    the rank (``_reshape_dims_function``: inline, ~30 lines of IR per reshape, the MLP training step has 19)."""
    b, n = ctx.b, len(dims)
    codes = [ctx.error_code(ValueError, "can only specify one unknown dimension")] + [
        ctx.error_code(ValueError, _reshape_message(n, k), 1 + n) for k in range(-1, n)
    ]
    out = ctx.alloca(ir.ArrayType(I64, max(n, 1)))
    status = b.call(
        _reshape_dims_function(ctx, n),
        [ctx.element_count(a.shape), *dims, b.gep(out, [i64(0), i64(0)]), *map(i32, codes)],
    )
    with b.if_then(b.icmp_unsigned("!=", status, i32(0)), likely=False):
        ctx.fail(status)
    return [b.load(b.gep(out, [i64(0), i64(k)])) for k in range(n)]


def _reshape_dims_function(ctx, n: int) -> ir.Function:
    """``i32 reshape_dims(i64 size, i64 dims..., i64* out, i32 one_unknown, i32 mismatch...)``: the
    dimensions with the unknown one resolved into ``out``, returning 0; or the code to raise (``mismatch``:
    with no unknown, then with the unknown at 0, 1, ...), its numbers in the payload. Once per module and
    rank; inlined at O3, a call in the first tier."""
    key = f"scriptc.rt.reshape_dims.{n}"
    fn = ctx.mod._decls.get(key)
    if fn is not None:
        return fn
    fnty = ir.FunctionType(I32, [I64] * (1 + n) + [I64.as_pointer()] + [I32] * (n + 2))
    fn = ctx.mod._decls[key] = ir.Function(ctx.mod.module, fnty, key)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    total, dims, out = fn.args[0], fn.args[1 : 1 + n], fn.args[1 + n]
    one_unknown, mismatch = fn.args[2 + n], fn.args[3 + n :]
    b = FoldingBuilder(fn.append_basic_block())
    negative = [b.icmp_signed("<", d, i64(0)) for d in dims]
    if n > 1:
        count = i64(0)
        for neg in negative:
            count = b.add(count, b.zext(neg, I64))
        with b.if_then(b.icmp_signed(">", count, i64(1)), likely=False):
            b.ret(one_unknown)
    known, unknown, overflow = i64(1), i64(-1), ir.Constant(I1, 0)
    for k, (d, neg) in enumerate(zip(dims, negative)):
        unknown = b.select(neg, i64(k), unknown)
        factor = b.select(neg, i64(1), d)
        if isinstance(known, ir.Constant) and known.constant == 1:
            known = factor
        else:
            product = b.smul_with_overflow(known, factor)
            known, overflow = b.extract_value(product, 0), b.or_(overflow, b.extract_value(product, 1))
    safe = b.select(b.icmp_signed("==", known, i64(0)), i64(1), known)
    has_unknown = b.icmp_signed(">=", unknown, i64(0))
    bad = b.or_(
        overflow,
        b.select(
            has_unknown,
            b.or_(b.icmp_signed("==", known, i64(0)), b.icmp_signed("!=", b.srem(total, safe), i64(0))),
            b.icmp_signed("!=", total, known),
        ),
    )
    with b.if_then(bad, likely=False):  # the message of the place the unknown is in (-1: none)
        code = mismatch[0]
        for k in range(n):
            code = b.select(b.icmp_signed("==", unknown, i64(k)), mismatch[1 + k], code)
        ctx.write_payload(b, [total, *dims])
        b.ret(code)
    free = b.sdiv(total, safe)
    for k, (d, neg) in enumerate(zip(dims, negative)):
        b.store(b.select(neg, free, d), b.gep(out, [i64(k)]))
    b.ret(i32(0))
    return fn


def view_strides(ctx, a: Arr, dims: list, strides, same):
    """An i1: whether NumPy reshapes ``a`` to ``dims`` as a view (the shape it has, ``same``: its strides;
    C-contiguous: C strides; else, not empty, ``_attempt_nocopy_reshape`` in C order); if so, the view's
    strides are stored in ``strides`` (an [n x i64]). Compiled once per process and pair of ranks."""
    rank, new_rank = a.t.rank, len(dims)
    fnty = ir.FunctionType(I1, [I64] * (2 * rank + new_rank) + [I64.as_pointer(), I64, I1])

    def build(lowering, fn):
        view_strides_body(lowering, rank, new_rank, fn.args)

    callee = summation.call_compiled_once(ctx, ("reshape_view", rank, new_rank), fnty, build)
    return ctx.b.call(
        callee, [*a.shape, *a.strides, *dims, ctx.b.gep(strides, [i64(0), i64(0)]), i64(a.itemsize), same]
    )


def view_strides_body(ctx, rank: int, new_rank: int, args) -> None:
    """The body of ``view_strides``: the array's own strides for its own shape, C strides for a
    C-contiguous array (NumPy's contiguity: strides of a row-major layout, ignoring dimensions of length 1),
    no view of an empty one that is not, else ``nocopy_reshape_body``."""
    b = ctx.b
    old_dims, old_strides, new_dims = args[:rank], args[rank : 2 * rank], args[2 * rank : 2 * rank + new_rank]
    out, itemsize, same = args[-3], args[-2], args[-1]
    if rank == new_rank:
        with b.if_then(same):
            for k, s in enumerate(old_strides):
                b.store(s, b.gep(out, [i64(k)]))
            b.ret(ir.Constant(I1, 1))
    contiguous, expect, total = ir.Constant(I1, 1), itemsize, i64(1)
    for d, s in zip(reversed(old_dims), reversed(old_strides)):
        contiguous = b.and_(contiguous, b.or_(b.icmp_signed("==", d, i64(1)), b.icmp_signed("==", s, expect)))
        expect, total = b.mul(expect, d), b.mul(total, d)
    with b.if_then(contiguous):
        stride = itemsize
        for k in reversed(range(new_rank)):
            b.store(stride, b.gep(out, [i64(k)]))
            stride = b.mul(stride, new_dims[k])
        b.ret(ir.Constant(I1, 1))
    with b.if_then(b.icmp_signed("==", total, i64(0))):
        b.ret(ir.Constant(I1, 0))
    nocopy_reshape_body(ctx, rank, new_rank, args[:-1])


def nocopy_reshape_body(ctx, rank: int, new_rank: int, args) -> None:
    """NumPy's ``_attempt_nocopy_reshape``: the old axes of length 1 dropped, runs of old and new axes of equal
    product are matched; each run of old axes must be contiguous, its new axes get the strides of a
    row-major layout ending at the run's last old stride; new axes left over (ones) get the last stride."""
    b = ctx.b
    old_dims, old_strides, new_dims = args[:rank], args[rank : 2 * rank], args[2 * rank : 2 * rank + new_rank]
    out, itemsize = args[-2], args[-1]

    def array(values):
        slots = ctx.alloca(ir.ArrayType(I64, max(len(values), 1)))
        for k, v in enumerate(values):
            b.store(v, b.gep(slots, [i64(0), i64(k)]))
        return lambda k: b.gep(slots, [i64(0), k])

    def var(init):
        slot = ctx.alloca(I64)
        b.store(init, slot)
        return slot

    od, os_, nd = array([i64(1)] * rank), array([i64(0)] * rank), array(list(new_dims))
    ns = lambda k: b.gep(out, [k])  # noqa: E731
    n = var(i64(0))
    for d, s in zip(old_dims, old_strides):  # the old axes but those of length 1
        with b.if_then(b.icmp_signed("!=", d, i64(1))):
            k = b.load(n)
            b.store(d, od(k))
            b.store(s, os_(k))
            b.store(b.add(k, i64(1)), n)
    oi, oj, ni, nj = var(i64(0)), var(i64(1)), var(i64(0)), var(i64(1))
    fn = b.function
    head, body, done = (fn.append_basic_block(x) for x in ("runs", "run", "runs.done"))
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(
        b.and_(b.icmp_signed("<", b.load(ni), i64(new_rank)), b.icmp_signed("<", b.load(oi), b.load(n))), body, done
    )
    b.position_at_end(body)
    np_, op = var(b.load(nd(b.load(ni)))), var(b.load(od(b.load(oi))))
    grow, grow_body, grown = (fn.append_basic_block(x) for x in ("grow", "grow.body", "grown"))
    b.branch(grow)
    b.position_at_end(grow)
    b.cbranch(b.icmp_signed("!=", b.load(np_), b.load(op)), grow_body, grown)
    b.position_at_end(grow_body)
    with b.if_else(b.icmp_signed("<", b.load(np_), b.load(op))) as (new_side, old_side):
        with new_side:
            j = b.load(nj)
            b.store(b.mul(b.load(np_), b.load(nd(j))), np_)
            b.store(b.add(j, i64(1)), nj)
        with old_side:
            j = b.load(oj)
            b.store(b.mul(b.load(op), b.load(od(j))), op)
            b.store(b.add(j, i64(1)), oj)
    b.branch(grow)
    b.position_at_end(grown)
    with ctx.for_range(b.sub(b.load(oj), i64(1)), start=b.load(oi)) as k:  # the run's old axes: contiguous
        after = b.add(k, i64(1))
        with b.if_then(b.icmp_signed("!=", b.load(os_(k)), b.mul(b.load(od(after)), b.load(os_(after)))), likely=False):
            b.ret(ir.Constant(I1, 0))
    last = b.sub(b.load(nj), i64(1))
    b.store(b.load(os_(b.sub(b.load(oj), i64(1)))), ns(last))
    first = b.load(ni)
    with ctx.for_range(b.sub(last, first)) as k:  # row-major strides down to the run's first new axis
        at = b.sub(last, k)
        b.store(b.mul(b.load(ns(at)), b.load(nd(at))), ns(b.sub(at, i64(1))))
    b.store(b.load(nj), ni)
    b.store(b.add(b.load(nj), i64(1)), nj)
    b.store(b.load(oj), oi)
    b.store(b.add(b.load(oj), i64(1)), oj)
    b.branch(head)
    b.position_at_end(done)
    end = b.load(ni)
    last_stride = b.select(
        b.icmp_signed(">=", end, i64(1)),
        b.load(ns(b.select(b.icmp_signed(">=", end, i64(1)), b.sub(end, i64(1)), i64(0)))),
        itemsize,
    )
    with ctx.for_range(i64(new_rank), start=end) as k:  # new axes of length 1 left over
        b.store(last_stride, ns(k))
    b.ret(ir.Constant(I1, 1))


def is_c_contiguous(ctx, a: Arr):
    """NumPy's C-contiguity: strides of a row-major layout, ignoring dimensions of length 1."""
    b = ctx.b
    ok, expect = ir.Constant(I1, 1), i64(a.itemsize)
    for k, (d, s) in enumerate(zip(reversed(a.shape), reversed(a.strides))):
        ok = b.and_(ok, b.or_(b.icmp_signed("==", d, i64(1)), b.icmp_signed("==", s, expect)))
        if k + 1 < len(a.shape):  # (the outermost dimension's length scales nothing)
            expect = b.mul(expect, d)
    return ok


def _reshape_message(n: int, unknown: int) -> str:
    """NumPy's message for a reshape to ``n`` dimensions, the unknown one at ``unknown`` (-1: none)."""
    texts = ["newaxis" if j == unknown else f"{{{j + 1}}}" for j in range(n)][1 if unknown == 0 else 0 :]
    return f"cannot reshape array of size {{0}} into shape ({','.join(texts)}{',' if n == 1 else ''})"


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers_array("aten::numpy_T")
def lower_transpose(ctx, node):
    a = ctx.arr(node.inputs[0])
    return [view(ctx, a, node.output.type, a.data, a.shape[::-1], a.strides[::-1])]


@lowers_array("aten::permute")
def lower_permute(ctx, node):
    a = ctx.arr(node.inputs[0])
    dims = node.attrs["dims"]
    return [view(ctx, a, node.output.type, a.data, [a.shape[d] for d in dims], [a.strides[d] for d in dims])]


@lowers_array("aten::select")
def lower_select(ctx, node):
    a, (_, index) = ctx.arr(node.inputs[0]), node.inputs
    dim = node.attrs["dim"]
    j = normalize_index(ctx, ctx.scalar(index), a.shape[dim], node.attrs.get("axis", dim), index_checked(node, 0))
    data = ctx.b.gep(a.data, [ctx.b.mul(j, a.strides[dim])])
    shape = a.shape[:dim] + a.shape[dim + 1 :]
    strides = a.strides[:dim] + a.strides[dim + 1 :]
    return [view(ctx, a, node.output.type, data, shape, strides)]


@lowers_array("aten::slice")
def lower_slice(ctx, node):
    a = ctx.arr(node.inputs[0])
    dim = node.attrs["dim"]
    start, stop, step = [None if v.type == NONE else ctx.scalar(v) for v in node.inputs[1:]]
    first, length, step = slice_indices(ctx, start, stop, step, a.shape[dim])
    b = ctx.b
    data = b.gep(a.data, [b.mul(first, a.strides[dim])])
    shape = list(a.shape)
    strides = list(a.strides)
    shape[dim], strides[dim] = length, b.mul(a.strides[dim], step)
    return [view(ctx, a, node.output.type, data, shape, strides)]


@lowers_array("aten::reshape")
def lower_reshape(ctx, node):
    """NumPy's reshape: a view where strides can express the new shape, else a C-contiguous copy (which of
    the two, and the view's strides, one call decides: ``view_strides``)."""
    b = ctx.b
    a = ctx.arr(node.inputs[0])
    given = [ctx.scalar(v) for v in node.inputs[1:]]
    same = ir.Constant(I1, len(given) == a.t.rank)  # NumPy's first check: the same shape is a plain view
    if len(given) == a.t.rank:
        for d, n in zip(given, a.shape):
            same = b.and_(same, b.icmp_signed("==", d, n))
    dims = reshape_dims(ctx, a, given)
    strides = ctx.alloca(ir.ArrayType(I64, len(dims)))
    with b.if_else(view_strides(ctx, a, dims, strides, same)) as (then, otherwise):
        with then:
            viewed = view(
                ctx,
                a,
                node.output.type,
                a.data,
                dims,
                [b.load(b.gep(strides, [i64(0), i64(k)])) for k in range(len(dims))],
            )
            from_view = b.block
        with otherwise:
            copy = ctx.alloc(TensorType(a.t.dtype, a.t.rank), a.shape)
            ctx.copy_into(copy, a)
            copied = [copy.mi, copy.data, *dims, *ctx.c_strides(dims, a.itemsize)]
            from_copy = b.block
    out = []
    for x, y in zip(viewed, copied):
        if x is y:
            out.append(x)
        else:
            phi = b.phi(x.type)
            phi.add_incoming(x, from_view)
            phi.add_incoming(y, from_copy)
            out.append(phi)
    return [out]
