"""Lowering of the array functions in ``scriptc/ops/arrayfns.py``: NaN/inf predicates, np.round, running sums
and products, differences and a stable merge sort, each computing what NumPy computes.

- Predicates are element-wise (and fuse): their element rules are in elements.py.
- ``np.round`` is NumPy's ``multiply(x, 10**d)``, ``rint``, ``true_divide`` (for negative ``d``, divide then
  multiply), each step rounded to the array's dtype as NumPy's float32 and float16 loops round it.
- ``cumsum``/``cumprod`` accumulate sequentially in the result dtype (NumPy's ``add.accumulate``).
- ``sort``/``argsort`` sort each lane along the axis with a bottom-up merge sort of indices (stable; NaN
  greater than everything, so NaNs come last as in NumPy): ``argsort`` equals NumPy's ``kind="stable"``.
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.types import TensorType
from .array_value import Arr, kind_of
from .array_value import scalar_kind
from .common import F64, I1, I64, f64, i64
from .rules import lowers, lowers_array
from ..runtime.text_builder import TextBuilder
from . import array_math, conversions, elements, fused


def power_of_ten(n: int) -> float:
    """NumPy's ``power_of_ten`` for ``np.round``: a table up to 1e8, then repeated multiplication."""
    if n < 9:
        return 10.0**n
    r = 1e9
    for _ in range(n - 9):
        r *= 10.0
    return r


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def round_dtype(ctx, x, dtype: str):
    """A double result of ``dtype``'s float loop as NumPy's loop leaves it (the element-wise rule: rounded
    in the loop's precision, then to ``dtype``)."""
    return fused.round_through(ctx, *array_math.in_loop_precision(ctx, "f", x, dtype), dtype)[1]


# -- lanes along an axis -----------------------------------------------------------------------------------
def lanes(ctx, a: Arr, axis):
    """(source, axis) with ``axis=None`` meaning the C-order flattening: a contiguous copy seen as 1-D."""
    if axis is not None:
        return a, axis % a.t.rank, None
    flat_t = TensorType(a.t.dtype, 1)
    n = ctx.element_count(a.shape)
    if a.t.rank == 1:
        return a, 0, None
    copy = ctx.alloc(TensorType(a.t.dtype, a.t.rank), a.shape)
    ctx.copy_into(copy, a)
    flat = Arr(flat_t, [copy.mi, copy.data, n, i64(copy.itemsize)])
    return flat, 0, copy


def for_each_lane(ctx, a: Arr, axis: int, body) -> None:
    """``body(index)`` with index[axis] = None for every lane along ``axis``."""
    others = [d for d in range(a.t.rank) if d != axis]

    def at(index):
        full = list(index)
        full.insert(axis, None)
        body(full)

    ctx.loop_nest([a.shape[d] for d in others], at)


def at_position(index: list, axis: int, i) -> list:
    return [i if d == axis else x for d, x in enumerate(index)]


def merge_sort_function(ctx, kk: str) -> ir.Function:
    """``void sort(key *keys, i64 *idx, i64 *work, i64 n)``: idx (a permutation) stably sorted by keys,
    bottom-up: runs of width 1, 2, 4, ... merged from one buffer into the other."""
    name = f"scriptc.merge_sort.{kk}"
    decls = ctx.mod._decls
    if name in decls:
        return decls[name]
    key_t = F64 if kk == "f" else I64
    i64p = I64.as_pointer()
    fn = ir.Function(ctx.mod.module, ir.FunctionType(ir.VoidType(), [key_t.as_pointer(), i64p, i64p, I64]), name)
    fn.linkage = "internal"
    decls[name] = fn
    keys, idx, work, n = fn.args
    b = TextBuilder(fn.append_basic_block("entry"))
    src_slot, dst_slot, width_slot = b.alloca(i64p), b.alloca(i64p), b.alloca(I64)
    lo_slot, i_slot, j_slot, o_slot = (b.alloca(I64) for _ in range(4))
    b.store(idx, src_slot)
    b.store(work, dst_slot)
    b.store(i64(1), width_slot)

    def blocks(*names):
        return [fn.append_basic_block(x) for x in names]

    def less(p, q):
        """keys[q] < keys[p] decides "take from the right" (NaN greatest; ties keep the left)."""
        x, y = b.load(b.gep(keys, [p])), b.load(b.gep(keys, [q]))
        if kk == "f":
            return b.or_(b.fcmp_ordered("<", x, y), b.and_(b.fcmp_unordered("uno", y, y), b.fcmp_ordered("ord", x, x)))
        return b.icmp_signed("<", x, y)

    def min_(x, y):
        return b.select(b.icmp_signed("<", x, y), x, y)

    (
        pass_head,
        pass_body,
        run_head,
        run_body,
        merge_head,
        merge_body,
        merge_done,
        run_next,
        pass_next,
        copy_back,
        done,
    ) = blocks(
        "pass",
        "pass_body",
        "run",
        "run_body",
        "merge",
        "merge_body",
        "merge_done",
        "run_next",
        "pass_next",
        "copy_back",
        "done",
    )
    b.branch(pass_head)
    b.position_at_end(pass_head)
    b.cbranch(b.icmp_signed("<", b.load(width_slot), n), pass_body, copy_back)
    b.position_at_end(pass_body)
    b.store(i64(0), lo_slot)
    b.branch(run_head)
    b.position_at_end(run_head)
    b.cbranch(b.icmp_signed("<", b.load(lo_slot), n), run_body, pass_next)
    b.position_at_end(run_body)
    lo, width = b.load(lo_slot), b.load(width_slot)
    mid = min_(b.add(lo, width), n)
    hi = min_(b.add(mid, width), n)
    b.store(lo, i_slot)
    b.store(mid, j_slot)
    b.store(lo, o_slot)
    b.branch(merge_head)
    b.position_at_end(merge_head)
    b.cbranch(b.icmp_signed("<", b.load(o_slot), hi), merge_body, merge_done)
    b.position_at_end(merge_body)
    src, dst = b.load(src_slot), b.load(dst_slot)
    i, j, o = b.load(i_slot), b.load(j_slot), b.load(o_slot)
    left_empty = b.icmp_signed(">=", i, mid)
    right_empty = b.icmp_signed(">=", j, hi)
    safe_i, safe_j = b.select(left_empty, lo, i), b.select(right_empty, lo, j)
    p, q = b.load(b.gep(src, [safe_i])), b.load(b.gep(src, [safe_j]))
    take_right = b.or_(left_empty, b.and_(b.not_(right_empty), less(q, p)))
    b.store(b.select(take_right, q, p), b.gep(dst, [o]))
    b.store(b.select(take_right, i, b.add(i, i64(1))), i_slot)
    b.store(b.select(take_right, b.add(j, i64(1)), j), j_slot)
    b.store(b.add(o, i64(1)), o_slot)
    b.branch(merge_head)
    b.position_at_end(merge_done)
    b.branch(run_next)
    b.position_at_end(run_next)
    b.store(b.add(b.load(lo_slot), b.mul(b.load(width_slot), i64(2))), lo_slot)
    b.branch(run_head)
    b.position_at_end(pass_next)
    s, d = b.load(src_slot), b.load(dst_slot)
    b.store(d, src_slot)
    b.store(s, dst_slot)
    b.store(b.mul(b.load(width_slot), i64(2)), width_slot)
    b.branch(pass_head)
    b.position_at_end(copy_back)  # the sorted permutation is in src: leave it in idx
    final = b.load(src_slot)
    with b.if_then(b.icmp_unsigned("!=", final, idx)):
        memcpy = ctx.mod.module.declare_intrinsic(
            "llvm.memcpy", [ir.IntType(8).as_pointer(), ir.IntType(8).as_pointer(), I64]
        )
        b.call(
            memcpy,
            [
                b.bitcast(idx, ir.IntType(8).as_pointer()),
                b.bitcast(final, ir.IntType(8).as_pointer()),
                b.mul(n, i64(8)),
                ir.Constant(I1, 0),
            ],
        )
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers("aten::isnan", "aten::isinf", "aten::isfinite")
def lower_scalar_predicate(ctx, node):
    v = node.inputs[0]
    k = scalar_kind(v.type)
    x = ctx.scalar(v)
    return [[elements.element(ctx, node.kind.split("::")[1], [x], "f" if k == "f" else "i")[1]]]


@lowers("aten::logical_and", "aten::logical_or", "aten::logical_xor", "aten::logical_not")
def lower_scalar_logical(ctx, node):
    """Of numbers: each operand's truth in its own kind (an int and a float are not converted first)."""
    truths = [elements.truth(ctx, ctx.scalar(v), scalar_kind(v.type)) for v in node.inputs]
    return [[elements.logical(ctx, node.kind.split("::")[1], truths)]]


# -- np.round ------------------------------------------------------------------------------------------
@lowers_array("aten::round")
def lower_np_round(ctx, node):
    a = ctx.arr(node.inputs[0])
    out = ctx.alloc(node.output.type, a.shape)
    decimals = node.attrs.get("decimals") or 0
    dtype = a.t.dtype
    k = kind_of(dtype)
    rint = ctx.mod.module.declare_intrinsic("llvm.rint", [F64])
    factor = round_dtype(ctx, f64(power_of_ten(abs(decimals))), dtype) if k == "f" else None
    first, then = (ctx.b.fmul, ctx.b.fdiv) if decimals >= 0 else (ctx.b.fdiv, ctx.b.fmul)

    def body(index):
        x = ctx.load_element(ctx.element_ptr(a, index), dtype)
        if k == "f":
            y = round_dtype(ctx, first(x, factor), dtype) if decimals else x
            y = ctx.b.call(rint, [y])
            x = round_dtype(ctx, then(y, factor), dtype) if decimals else y
        ctx.store_element(ctx.element_ptr(out, index), x, k, out.t.dtype)

    ctx.loop_nest(a.shape, body)
    return [out.leaves]


# -- cumsum / cumprod ----------------------------------------------------------------------------------------
@lowers_array("aten::cumsum", "aten::cumprod")
def lower_scan(ctx, node):
    b = ctx.b
    src, axis, tmp = lanes(ctx, ctx.arr(node.inputs[0]), node.attrs.get("axis"))
    out_t = node.output.type
    out = ctx.alloc(out_t, src.shape)
    k = kind_of(out_t.dtype)
    k = "i" if k == "b" else k
    add = node.kind == "aten::cumsum"
    step = (b.fadd if add else b.fmul) if k == "f" else (b.add if add else b.mul)
    init = (f64(-0.0) if add else f64(1.0)) if k == "f" else i64(0 if add else 1)  # -0.0 + x is x, even -0.0

    def lane(index):
        acc = ctx.alloca(F64 if k == "f" else I64)
        b.store(init, acc)
        with ctx.for_range(src.shape[axis]) as i:
            where = at_position(index, axis, i)
            x = conversions.cast(
                ctx, ctx.load_element(ctx.element_ptr(src, where), src.t.dtype), kind_of(src.t.dtype), k
            )
            value = step(b.load(acc), x)
            value = round_dtype(ctx, value, out_t.dtype) if k == "f" else value
            b.store(value, acc)
            ctx.store_element(ctx.element_ptr(out, where), value, k, out_t.dtype)

    for_each_lane(ctx, src, axis, lane)
    if tmp is not None:
        ctx.release_scratch(tmp)
    return [out.leaves]


# -- np.diff ------------------------------------------------------------------------------------------
@lowers_array("aten::diff")
def lower_diff(ctx, node):
    b = ctx.b
    a = ctx.arr(node.inputs[0])
    axis = node.attrs.get("axis", -1) % a.t.rank
    n = node.attrs.get("n", 1)
    dtype = node.output.type.dtype
    k = kind_of(dtype)
    cur, owned = a, None
    for _ in range(n):
        length = b.select(b.icmp_signed(">", cur.shape[axis], i64(0)), b.sub(cur.shape[axis], i64(1)), i64(0))
        shape = at_position(cur.shape, axis, length)
        nxt = ctx.alloc(node.output.type, shape)

        def body(index, cur=cur, nxt=nxt):
            hi = at_position(index, axis, b.add(index[axis], i64(1)))
            x = conversions.cast(ctx, ctx.load_element(ctx.element_ptr(cur, hi), cur.t.dtype), kind_of(cur.t.dtype), k)
            y = conversions.cast(
                ctx, ctx.load_element(ctx.element_ptr(cur, index), cur.t.dtype), kind_of(cur.t.dtype), k
            )
            r = b.xor(x, y) if k == "b" else b.fsub(x, y) if k == "f" else b.sub(x, y)
            ctx.store_element(ctx.element_ptr(nxt, index), r, k, dtype)

        ctx.loop_nest(shape, body)
        if owned is not None:
            ctx.release_scratch(owned)
        cur = owned = nxt
    return [cur.leaves]


# -- np.nonzero / np.argwhere --------------------------------------------------------------------------------
@lowers_array("aten::nonzero", "aten::argwhere")
def lower_nonzero(ctx, node):
    """Count the nonzero elements, then write each one's index (row-major order, as NumPy lists them)."""
    b = ctx.b
    a = ctx.arr(node.inputs[0])
    rank = a.t.rank
    counter = ctx.alloca(I64)
    b.store(i64(0), counter)

    def nonzero(index):
        x = ctx.load_element(ctx.element_ptr(a, index), a.t.dtype)
        return conversions.cast(ctx, x, kind_of(a.t.dtype), "b")

    def count(index):
        b.store(b.add(b.load(counter), b.zext(nonzero(index), I64)), counter)

    ctx.loop_nest(a.shape, count)
    total = b.load(counter)
    if node.kind == "aten::argwhere":
        outs = [ctx.alloc(node.output.type, [total, i64(rank)])]
    else:
        outs = [ctx.alloc(TensorType("int64", 1), [total]) for _ in range(rank)]
    b.store(i64(0), counter)

    def record(index):
        with b.if_then(nonzero(index)):
            k = b.load(counter)
            for d, i in enumerate(index):
                out, where = (outs[0], [k, i64(d)]) if node.kind == "aten::argwhere" else (outs[d], [k])
                ctx.store_element(ctx.element_ptr(out, where), i, "i", "int64")
            b.store(b.add(k, i64(1)), counter)

    ctx.loop_nest(a.shape, record)
    return [[leaf for out in outs for leaf in out.leaves]]


# -- sort / argsort ---------------------------------------------------------------------------------------
@lowers_array("aten::sort", "aten::argsort")
def lower_sort(ctx, node):
    b = ctx.b
    src, axis, tmp = lanes(ctx, ctx.arr(node.inputs[0]), node.attrs.get("axis", -1))
    out_t = node.output.type
    out = ctx.alloc(out_t, src.shape)
    n = src.shape[axis]
    kk = "f" if kind_of(src.t.dtype) == "f" else "i"
    key_t = F64 if kk == "f" else I64
    keys = ctx.alloc(TensorType("float64" if kk == "f" else "int64", 1), [n])
    idx = ctx.alloc(TensorType("int64", 1), [n])
    work = ctx.alloc(TensorType("int64", 1), [n])
    key_ptr = b.bitcast(keys.data, key_t.as_pointer())
    idx_ptr, work_ptr = (b.bitcast(x.data, I64.as_pointer()) for x in (idx, work))
    sort = merge_sort_function(ctx, kk)

    def lane(index):
        with ctx.for_range(n) as i:
            x = ctx.load_element(ctx.element_ptr(src, at_position(index, axis, i)), src.t.dtype)
            b.store(conversions.cast(ctx, x, kind_of(src.t.dtype), kk), b.gep(key_ptr, [i]))
            b.store(i, b.gep(idx_ptr, [i]))
        b.call(sort, [key_ptr, idx_ptr, work_ptr, n])
        with ctx.for_range(n) as i:
            j = b.load(b.gep(idx_ptr, [i]))
            where = ctx.element_ptr(out, at_position(index, axis, i))
            if node.kind == "aten::argsort":
                ctx.store_element(where, j, "i", out_t.dtype)
            else:
                ctx.store_element(where, b.load(b.gep(key_ptr, [j])), kk, out_t.dtype)

    for_each_lane(ctx, src, axis, lane)
    for t in (keys, idx, work) + ((tmp,) if tmp is not None else ()):
        ctx.release_scratch(t)
    return [out.leaves]
