"""np.sum, np.mean and .sum() of float arrays (and the mean of integer and bool arrays) as NumPy computes them:
the pairwise loop (summation.py), called as NumPy's reduction machinery calls it (NumPy 2.4:
``reduction.c``, and the iterator's ``npyiter_find_best_axis_ordering``, ``npyiter_coalesce_axes`` and
``npyiter_find_buffering_setup`` in ``nditer_constr.c``). Checked against NumPy on every layout the tests make:

- the result starts at the identity +0.0 (so a sum of -0.0 is +0.0), and each inner-loop call adds the pairwise
  sum of its elements to it, rounded to the result dtype (a float16 sum is rounded to half after each call);
- the iterator's axes are the array's axes of length > 1, innermost first, stably sorted by absolute stride (a
  zero stride compares with none) and merged where one stride reaches two: a C-contiguous array, or any
  contiguous transpose, is one axis;
- a full reduction's inner loop covers the innermost axis, or a buffer (``BUFFER_SIZE`` = 8192 elements, a
  whole number of rows) holding several axes copied out, whichever the iterator's overhead estimate prefers;
  a reduction that casts (a float16 mean sums in float32, an integer or bool mean in float64) is always
  buffered, so its sums restart every 8192 elements;
- an ``axis=`` reduction whose axis comes innermost is one pairwise sum per output element (in 8192-element
  chunks when cast); otherwise the axis is an outer loop and each output element a sequential sum
  (``out = out + x[k]``, rounded to the result dtype each step);
- ``mean`` divides in float64 (the sum over an ``np.intp`` count) and rounds once to the result dtype; a
  float16 mean along an axis is rounded through float32 first (NumPy divides into the float32 sum array);
- a fused group ending in a full sum or mean sums the elements as NumPy sums the materialized, C-contiguous
  result, computing each block of them with the routines the element-wise loop would use.

The loop over a run, the full-reduction driver and the loop over an axis reduction's output are compiled once per
process (per dtype, and rank; and axis) and called from every function that sums (allocating the output where the
node is); a fused group's loop is inlined, as its elements are computed in it.
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.types import TensorType
from .array_value import Arr, ELEM, kind_of
from .common import F64, I1, I8, I64, i64
from . import array_math, conversions, simd, summation


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


# -- np.sum / np.mean without fusion ------------------------------------------------------------------
def lower_pairwise_reduction(ctx, node, name: str, a: Arr, axis, res: str):
    """np.sum/np.mean of ``a`` (float, or any dtype for mean) over ``axis`` (None: all) as NumPy sums."""
    b = ctx.b
    sum_dtype = summation.summation_dtype(name, a.t.dtype)
    fty = summation.accumulator_type(sum_dtype)
    chunk = summation.BUFFER_SIZE if sum_dtype != a.t.dtype else None
    zero = ir.Constant(fty, 0.0)
    if axis is None or not isinstance(node.output.type, TensorType):  # all axes, or the only one
        total = shared_full_sum(ctx, a, zero, sum_dtype, chunk is not None)
        count = ctx.element_count(a.shape)
        value = finish_mean(ctx, total, count, res, array=False) if name == "mean" else widen(ctx, total)
        return [ctx.scalar_result(round_result(ctx, value, res), "f", node.output.type)]
    axis %= a.t.rank
    out_t = node.output.type
    out = ctx.alloc(out_t, [a.shape[d] for d in range(a.t.rank) if d != axis])
    rank, i8p = a.t.rank, I8.as_pointer()
    fnty = ir.FunctionType(ir.VoidType(), [i8p] + [I64] * (2 * rank) + [i8p] + [I64] * (rank - 1))

    def build(lowering, fn):
        data, *dims = fn.args[: 1 + 2 * rank]
        into, *strides = fn.args[1 + 2 * rank :]
        shape = [dims[d] for d in range(rank) if d != axis]
        axis_reduction(
            lowering,
            name,
            Arr(a.t, [ir.Constant(i8p, None), data, *dims]),
            axis,
            res,
            sum_dtype,
            chunk,
            Arr(out_t, [ir.Constant(i8p, None), into, *shape, *strides]),
        )
        lowering.b.ret_void()

    reduce = summation.call_compiled_once(ctx, ("axis", name, a.t.dtype, rank, axis, res, out_t.dtype), fnty, build)
    b.call(reduce, [a.data, *a.shape, *a.strides, out.data, *out.strides])
    return [out.leaves]


def axis_reduction(ctx, name: str, a: Arr, axis: int, res: str, sum_dtype: str, chunk, out: Arr) -> None:
    """``out`` (allocated) = np.sum/np.mean of ``a`` along ``axis``: each output element one line's sum, pairwise
    when NumPy's iterator puts the axis innermost, else in order (the body of a function compiled once per
    process, operator, dtypes, rank and axis)."""
    b = ctx.b
    innermost = reduced_axis_is_innermost(ctx, a, axis)
    n = a.shape[axis]
    line_sum = shared_line_sum(ctx, a.t.dtype, sum_dtype, chunk)

    def reduce_at(out_index):
        index = list(out_index)
        index.insert(axis, i64(0))
        base = b.bitcast(ctx.element_ptr(a, index), I8.as_pointer())
        total = b.call(line_sum, [base, a.strides[axis], n, b.zext(innermost, I8)])
        value = finish_mean(ctx, total, n, res, array=True) if name == "mean" else widen(ctx, total)
        ctx.store_element(ctx.element_ptr(out, out_index), value, "f", out.t.dtype)

    ctx.loop_nest(out.shape, reduce_at)


def shared_line_sum(ctx, dtype: str, sum_dtype: str, chunk):
    """The sum of one line of an axis reduction (``n`` elements ``stride`` bytes apart), compiled once per
    process and dtype: pairwise as NumPy's inner loop when the axis is innermost, else in order."""
    fty = summation.accumulator_type(sum_dtype)
    fnty = ir.FunctionType(fty, [I8.as_pointer(), I64, I64, I8])

    def build(lowering, fn):
        base, stride, n, innermost = fn.args
        b, zero = lowering.b, ir.Constant(fty, 0.0)
        slot = lowering.alloca(fty)
        with b.if_else(b.icmp_unsigned("!=", innermost, ir.Constant(I8, 0))) as (pairwise, sequential):
            with pairwise:
                b.store(summation.run_sum(lowering, zero, base, stride, n, dtype, sum_dtype, chunk), slot)
            with sequential:
                b.store(zero, slot)
                source = summation.run_source(lowering, base, stride, dtype, fty, False)(i64(0))
                with lowering.for_range(n) as k:
                    b.store(summation.round_sum(lowering, b.fadd(b.load(slot), source.scalar(k)), sum_dtype), slot)
        b.ret(b.load(slot))

    return summation.call_compiled_once(ctx, ("line", dtype, sum_dtype, chunk), fnty, build)


def shared_full_sum(ctx, a: Arr, total, sum_dtype: str, cast: bool):
    """``full_sum`` as a call to its code for this dtype and rank, compiled once per process."""
    rank = a.t.rank
    fty = summation.accumulator_type(sum_dtype)
    fnty = ir.FunctionType(fty, [I8.as_pointer()] + [I64] * (2 * rank) + [fty])

    def build(lowering, fn):
        data, *dims, start = fn.args
        arr = Arr(a.t, [ir.Constant(I8.as_pointer(), None), data, *dims])
        lowering.b.ret(full_sum(lowering, arr, start, sum_dtype, cast))

    callee = summation.call_compiled_once(ctx, ("full", a.t.dtype, sum_dtype, rank, cast), fnty, build)
    return ctx.b.call(callee, [ctx.b.bitcast(a.data, I8.as_pointer()), *a.shape, *a.strides, total])


def full_sum(ctx, a: Arr, total, sum_dtype: str, cast: bool):
    """``total`` plus every element of ``a`` (C order), in the inner-loop calls NumPy's iterator makes
    (``iteration_plan``): blocks of the innermost coalesced dimensions, each summed in chunks; a chunk
    spanning several dimensions is first copied to a buffer, as NumPy does."""
    b = ctx.b
    fty = summation.accumulator_type(sum_dtype)
    if a.t.rank == 0:
        source = summation.run_source(ctx, b.bitcast(a.data, I8.as_pointer()), i64(0), a.t.dtype, fty, False)
        return summation.round_sum(ctx, b.fadd(total, source(i64(0)).scalar(i64(0))), sum_dtype)
    acc = ctx.alloca(fty)
    b.store(total, acc)
    n = ctx.element_count(a.shape)
    with b.if_then(b.icmp_signed(">", n, i64(0))):
        lengths, strides, k = coalesced_dims(ctx, a)
        best_dim, block, chunk = iteration_plan(ctx, lengths, k, cast)
        buffer = ctx.alloca(ir.ArrayType(fty, summation.BUFFER_SIZE))
        fdtype = "float64" if fty == F64 else "float32"
        with ctx.for_range(b.sdiv(n, block)) as j:
            base = b.gep(
                b.bitcast(a.data, I8.as_pointer()), [offset_of(ctx, j, lengths, strides, b.add(best_dim, i64(1)), k)]
            )
            with ctx.for_range(b.sdiv(b.add(block, b.sub(chunk, i64(1))), chunk)) as c:
                first = b.mul(c, chunk)
                rest = b.sub(block, first)
                count = b.select(b.icmp_signed("<", rest, chunk), rest, chunk)
                with b.if_else(b.icmp_signed("==", best_dim, i64(0))) as (run, spanning):
                    with run:
                        stride = b.load(b.gep(strides, [i64(0), i64(0)]))
                        start = b.gep(base, [b.mul(first, stride)])
                        b.store(
                            summation.run_sum(ctx, b.load(acc), start, stride, count, a.t.dtype, sum_dtype, None), acc
                        )
                    with spanning:
                        # chunks hold whole rows of the innermost axis (they are multiples of the core)
                        row = b.load(b.gep(lengths, [i64(0), i64(0)]))
                        stride = b.load(b.gep(strides, [i64(0), i64(0)]))
                        with ctx.for_range(b.sdiv(count, row)) as r:
                            at = offset_of(
                                ctx, b.add(b.sdiv(first, row), r), lengths, strides, i64(1), b.add(best_dim, i64(1))
                            )
                            start = b.gep(base, [at])
                            with ctx.for_range(row) as e:
                                ptr = b.bitcast(b.gep(start, [b.mul(e, stride)]), ELEM[a.t.dtype].as_pointer())
                                x = summation.convert_to(ctx, b.load(ptr), a.t.dtype, fty)
                                b.store(x, b.gep(buffer, [i64(0), b.add(b.mul(r, row), e)]))
                        data = b.bitcast(buffer, I8.as_pointer())
                        b.store(
                            summation.run_sum(
                                ctx, b.load(acc), data, i64(summation.ELEM_SIZE[fdtype]), count, fdtype, sum_dtype, None
                            ),
                            acc,
                        )
    return b.load(acc)


def iterator_axes(ctx, a: Arr):
    """NumPy's iterator axes for ``a``, innermost first (``npyiter_find_best_axis_ordering``): the axes
    longer than 1 in reversed C order, then a stable insertion sort by absolute stride in which a zero
    stride (a broadcast axis) compares with nothing. (lengths, strides, axis numbers) as [rank x i64]
    allocas, and their count."""
    b = ctx.b
    rank = a.t.rank
    columns = [ctx.alloca(ir.ArrayType(I64, rank)) for _ in range(3)]
    count = ctx.alloca(I64)

    def at(array, k):
        return b.gep(array, [i64(0), k])

    b.store(i64(0), count)
    for d in reversed(range(rank)):
        with b.if_then(b.icmp_signed("!=", a.shape[d], i64(1))):
            k = b.load(count)
            for column, value in zip(columns, (a.shape[d], a.strides[d], i64(d))):
                b.store(value, at(column, k))
            b.store(b.add(k, i64(1)), count)
    k = b.load(count)
    strides = columns[1]
    position, stop = ctx.alloca(I64), ctx.alloca(I1)
    with ctx.for_range(k, i64(1)) as i:
        item = [b.load(at(column, i)) for column in columns]
        mine = item[1]
        b.store(i, position)
        b.store(ir.Constant(I1, 0), stop)
        with ctx.for_range(i) as t:
            j = b.sub(b.sub(i, t), i64(1))
            other = b.load(at(strides, j))
            comparable = b.and_(b.icmp_signed("!=", mine, i64(0)), b.icmp_signed("!=", other, i64(0)))
            with b.if_then(b.and_(comparable, b.not_(b.load(stop)))):
                with b.if_else(b.icmp_signed(">", iabs(ctx, other), iabs(ctx, mine))) as (move, stay):
                    with move:
                        b.store(j, position)
                    with stay:
                        b.store(ir.Constant(I1, 1), stop)
        target = b.load(position)
        with ctx.for_range(b.sub(i, target)) as t:
            j = b.sub(i, t)
            for column in columns:
                b.store(b.load(at(column, b.sub(j, i64(1)))), at(column, j))
        for column, value in zip(columns, item):
            b.store(value, at(column, target))
    return columns, k


def coalesced_dims(ctx, a: Arr):
    """The iterator's axes (``iterator_axes``) with neighbours merged where one stride reaches both
    (``npyiter_coalesce_axes``): (lengths, strides) as [rank x i64] allocas, and their count (at least 1)."""
    b = ctx.b
    (lengths, strides, _), k = iterator_axes(ctx, a)

    def at(array, k):
        return b.gep(array, [i64(0), k])

    merged = ctx.alloca(I64)
    b.store(i64(0), merged)
    with b.if_then(b.icmp_signed("==", k, i64(0))):
        b.store(i64(1), at(lengths, i64(0)))
        b.store(i64(0), at(strides, i64(0)))
    with ctx.for_range(k, i64(1)) as i:
        last = b.load(merged)
        length, stride = b.load(at(lengths, i)), b.load(at(strides, i))
        last_length = b.load(at(lengths, last))
        with b.if_else(b.icmp_signed("==", b.mul(last_length, b.load(at(strides, last))), stride)) as (merge, new):
            with merge:
                b.store(b.mul(last_length, length), at(lengths, last))
            with new:
                nxt = b.add(last, i64(1))
                b.store(length, at(lengths, nxt))
                b.store(stride, at(strides, nxt))
                b.store(nxt, merged)
    return lengths, strides, b.add(b.load(merged), i64(1))


def iabs(ctx, x):
    return ctx.b.select(ctx.b.icmp_signed("<", x, i64(0)), ctx.b.neg(x), x)


def reduced_axis_is_innermost(ctx, a: Arr, axis: int):
    """i1: NumPy's iterator puts the reduced axis innermost, so each output is one pairwise sum (when it
    is not, it is an outer loop and each output a sequential sum)."""
    b = ctx.b
    (_, _, numbers), k = iterator_axes(ctx, a)
    first = b.load(b.gep(numbers, [i64(0), i64(0)]))
    return b.or_(b.icmp_signed("==", k, i64(0)), b.icmp_signed("==", first, i64(axis)))


def iteration_plan(ctx, lengths, k, cast: bool):
    """How NumPy's buffered reduction iterator chunks a full reduction (``npyiter_find_buffering_setup``):
    grow the core over the inner axes while the estimated overhead ``(1 + buffered operands) / size``
    does not increase; the input needs a buffer once the core spans two axes (or when it is cast).
    (best axis, block = elements of the axes up to it, chunk = elements per inner-loop call)."""
    b = ctx.b
    slots = {name: ctx.alloca(I64) for name in ("size", "cost", "dim", "best_cost", "best_size", "core", "stop")}
    first = b.load(b.gep(lengths, [i64(0), i64(0)]))
    for name, value in (
        ("size", first),
        ("cost", i64(2 if cast else 1)),
        ("dim", i64(0)),
        ("best_cost", i64(2 if cast else 1)),
        ("best_size", first),
        ("core", i64(1)),
        ("stop", i64(0)),
    ):
        b.store(value, slots[name])
    with ctx.for_range(k, i64(1)) as idim:
        size, cost = b.load(slots["size"]), b.load(slots["cost"])
        full = b.and_(b.icmp_signed(">=", size, i64(summation.BUFFER_SIZE)), b.icmp_signed(">", cost, i64(1)))
        b.store(b.select(full, i64(1), b.load(slots["stop"])), slots["stop"])
        with b.if_then(b.icmp_signed("==", b.load(slots["stop"]), i64(0))):
            if not cast:
                # the input stops being one stride at the second axis (the axes are coalesced)
                cost = b.select(b.icmp_signed("==", idim, i64(1)), b.add(cost, i64(1)), cost)
            b.store(cost, slots["cost"])
            grown = b.mul(size, b.load(b.gep(lengths, [i64(0), idim])))
            b.store(grown, slots["size"])
            capped = b.and_(b.icmp_signed(">", cost, i64(1)), b.icmp_signed(">", grown, i64(summation.BUFFER_SIZE)))
            bufsize = b.select(capped, i64(summation.BUFFER_SIZE), grown)
            better = b.icmp_signed(
                "<=", b.mul(cost, b.load(slots["best_size"])), b.mul(b.load(slots["best_cost"]), bufsize)
            )
            with b.if_then(better):
                for name, value in (("best_cost", cost), ("core", size), ("best_size", grown), ("dim", idim)):
                    b.store(value, slots[name])
    best_dim, block, core = b.load(slots["dim"]), b.load(slots["best_size"]), b.load(slots["core"])
    buffered = b.or_(ir.Constant(I1, int(cast)), b.icmp_signed(">", best_dim, i64(0)))
    capped = b.and_(buffered, b.icmp_signed(">", block, i64(summation.BUFFER_SIZE)))
    chunk = b.select(capped, b.mul(core, b.sdiv(i64(summation.BUFFER_SIZE), core)), block)
    return best_dim, block, chunk


def offset_of(ctx, flat, lengths, strides, lo, hi):
    """The byte offset of position ``flat`` (C order) over coalesced axes lo..hi-1 (innermost first)."""
    b = ctx.b
    offset = ctx.alloca(I64)
    rest = ctx.alloca(I64)
    b.store(i64(0), offset)
    b.store(flat, rest)
    with ctx.for_range(hi, lo) as m:
        length = b.load(b.gep(lengths, [i64(0), m]))
        r = b.load(rest)
        step = b.mul(b.srem(r, length), b.load(b.gep(strides, [i64(0), m])))
        b.store(b.add(b.load(offset), step), offset)
        b.store(b.sdiv(r, length), rest)
    return b.load(offset)


def round_result(ctx, x, res: str):
    """A double rounded to the float dtype ``res`` (once, as NumPy casts), back as a double."""
    b = ctx.b
    if res == "float64":
        return x
    if res == "float32":
        return b.fpext(b.fptrunc(x, summation.F32), F64)
    return b.fpext(b.fptrunc(to_float_rounding_to_odd(ctx, x), summation.HALF), F64)


def to_float_rounding_to_odd(ctx, x):
    """A double as a float, rounded to odd: rounding that float to half then equals rounding the double to
    half directly (24 bits >= 11 + 2), with no libcall (the JIT has no ``__truncdfhf2``)."""
    b = ctx.b
    nearest = b.fptrunc(x, summation.F32)
    back = b.fpext(nearest, F64)
    bits = b.bitcast(nearest, ir.IntType(32))
    fabs = ctx.mod.intrinsic("fabs")
    away = b.fcmp_ordered(">", b.call(fabs, [back]), b.call(fabs, [x]))
    bits = b.select(away, b.sub(bits, ir.Constant(ir.IntType(32), 1)), bits)
    inexact = b.fcmp_ordered("!=", back, x)
    bits = b.select(inexact, b.or_(bits, ir.Constant(ir.IntType(32), 1)), bits)
    return b.bitcast(bits, summation.F32)


def widen(ctx, x):
    return x if x.type == F64 else ctx.b.fpext(x, F64)


def finish_mean(ctx, total, count, res: str, array: bool):
    """NumPy's ``sum / count``: the sum as float64 over the count as float64; a float16 mean along an
    axis is a float32 array first."""
    b = ctx.b
    value = b.fdiv(widen(ctx, total), b.sitofp(count, F64))
    if array and res == "float16":
        value = b.fpext(b.fptrunc(value, summation.F32), F64)
    return value


# -- the full reduction ending a fusion group ---------------------------------------------------------
def fused_pairwise_reduction(ctx, reduction, node, src_dtype: str, res: str, shape, arrays, element):
    """np.sum/np.mean of a fused group's elements, as NumPy sums the materialized (C-contiguous) array:
    each leaf block of <= 128 elements is computed into a buffer, then summed pairwise."""
    b = ctx.b
    name = reduction.kind.split("::")[1]
    sum_dtype = summation.summation_dtype(name, src_dtype)
    fty = summation.accumulator_type(sum_dtype)
    chunk = summation.BUFFER_SIZE if sum_dtype != src_dtype else None
    n = ctx.element_count(shape)
    buffer = ctx.alloca(ir.ArrayType(fty, summation.PW_BLOCKSIZE + summation.UNROLL))
    fill = block_filler(ctx, reduction, node, shape, arrays, element, fty)

    def source_at(offset):
        leaf = {}

        def begin(start, count):
            leaf["start"] = start
            fill(buffer, b.add(offset, start), count)

        def at(pos, ty):
            slot = b.gep(buffer, [i64(0), b.sub(pos, leaf["start"])])
            return b.bitcast(slot, ty.as_pointer())

        def scalar(pos):
            return b.load(at(pos, fty))

        def vector(pos):
            return b.load(at(pos, ir.VectorType(fty, summation.UNROLL)), align=summation.fty_size(fty))

        return summation.Source(scalar, vector, begin)

    total = summation.chunked_sum(
        ctx,
        ir.Constant(fty, 0.0),
        n,
        fty,
        sum_dtype,
        chunk,
        lambda offset, count: summation.pairwise_sum(ctx, count, fty, source_at(offset)),
    )
    value = finish_mean(ctx, total, n, res, array=False) if name == "mean" else widen(ctx, total)
    return ctx.scalar_result(round_result(ctx, value, res), "f", node.output.type)


def block_filler(ctx, reduction, node, shape, arrays, element, fty):
    """``fill(buffer, first, count)``: elements first..first+count-1 (flat, C order) of the group into
    ``buffer`` as ``fty``. Contiguous operands are read by one flat index, W elements at a time where the
    element-wise loop would use SIMD (the same elements, computed by the same routines: ``first`` is a
    multiple of 8, so the vectors line up with that loop's); broadcast operands are unravelled."""
    b = ctx.b
    sub = node.attrs["subgraph"]
    tensors = [v for v in node.inputs if isinstance(v.type, TensorType)]
    by_value = {id(v): a for v, a in zip(tensors, arrays)}
    flat = array_math.all_flat(ctx, shape, arrays)
    strides = {id(a): array_math.broadcast_to(ctx, a, shape, "") for a in arrays}
    lanes = simd.simd_width(ctx, sub, stop=reduction) if fty == F64 else None
    n = ctx.element_count(shape)

    def store(buffer, j, kind, x):
        x = conversions.cast(ctx, x, kind, "f")
        if fty != F64:
            x = b.fptrunc(x, fty)
        b.store(x, b.gep(buffer, [i64(0), j]))

    def flat_element(buffer, first, j):
        i = b.add(first, j)

        def load(v):
            a = by_value[id(v)]
            ptr = b.bitcast(b.gep(a.data, [b.mul(i, i64(a.itemsize))]), array_math.elem_ptr_type(ctx, a))
            return kind_of(a.t.dtype), ctx.load_element(ptr, a.t.dtype)

        store(buffer, j, *element(load))

    def flat_elements(buffer, first, count):
        if lanes is None:
            with ctx.for_range(count) as j:
                flat_element(buffer, first, j)
            return
        vec = ir.VectorType(F64, lanes)
        vector_end = b.sub(n, b.srem(n, i64(lanes)))
        with ctx.for_range(b.sdiv(b.add(count, i64(lanes - 1)), i64(lanes))) as c:
            j = b.mul(c, i64(lanes))
            i = b.add(first, j)
            with b.if_else(b.icmp_signed("<=", b.add(i, i64(lanes)), vector_end)) as (whole, tail):
                with whole:
                    values = simd.simd_values(ctx, node, sub, i, vec, stop=reduction)[id(reduction.inputs[0])]
                    b.store(values, b.bitcast(b.gep(buffer, [i64(0), j]), vec.as_pointer()), align=8)
                with tail:
                    rest = b.sub(count, j)
                    with ctx.for_range(b.select(b.icmp_signed("<", rest, i64(lanes)), rest, i64(lanes))) as t:
                        flat_element(buffer, first, b.add(j, t))

    def fill(buffer, first, count):
        with b.if_else(flat, likely=True) as (contiguous, broadcast):
            with contiguous:
                flat_elements(buffer, first, count)
            with broadcast:
                with ctx.for_range(count) as j:
                    index = unravel(ctx, b.add(first, j), shape)

                    def load(v, index=index):
                        a = by_value[id(v)]
                        view = Arr(a.t, [a.mi, a.data, *a.shape, *strides[id(a)]])
                        ptr = ctx.element_ptr(view, index[len(index) - a.t.rank :])
                        return kind_of(a.t.dtype), ctx.load_element(ptr, a.t.dtype)

                    store(buffer, j, *element(load))

    return fill


def unravel(ctx, i, shape) -> list:
    """The C-order index of flat position ``i`` in ``shape``."""
    b = ctx.b
    index = []
    for d in reversed(shape):
        index.insert(0, b.urem(i, d))
        i = b.udiv(i, d)
    return index
