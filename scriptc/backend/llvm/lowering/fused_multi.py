"""Lowering of multi-output ``prim::FusionGroup`` nodes (made by the fusion pass's sibling merging): one loop
over the group's shape computes every node of the body once per element, stores each element-wise result and
feeds each full reduction. Every value is rounded to its dtype as in ``fused.py``.

Float sums and means (``pairwise_reducible``) equal NumPy's sums of the materialized, C-contiguous arrays bit
for bit: the loop walks the leaves of NumPy's pairwise tree in position order (``pairwise_sums``: the tree
depends only on the count, so all sums share it), computes each leaf block's elements once, puts each sum's
value in that sum's 128-element buffer and then sums every buffer as the tree does. The other reductions (max,
min, prod, any, all, integer sums) are sequential in NumPy too and take each element from the same walk, in
position order (``Accumulator``). A sum that NumPy casts (a float16 or integer mean) restarts its tree every
``BUFFER_SIZE`` elements; beside uncast sums it gets a second walk, which recomputes the elements but stores
nothing. The fusion pass only groups consumers whose arrays are the producer's, so every result iterates over
the same shape.
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.registry import REGISTRY
from ....ir.types import TensorType
from .array_value import Arr, kind_of
from .common import F64, I8, I64, i64
from . import array_math, conversions, fused, sum_reductions, summation


def is_full_reduction(n) -> bool:
    op = REGISTRY.get(n.kind)
    return op is not None and bool(op.extra.get("reduction")) and not isinstance(n.output.type, TensorType)


class Accumulator:
    """One full reduction's running value, in an alloca: ``add(kind, x)`` per element, ``result()`` at the
    end (NumPy's result dtype and rounding)."""

    def __init__(self, low, reduction, count):
        self.low, self.reduction, self.count = low, reduction, count
        self.name = reduction.kind.split("::")[1]
        src_t = reduction.inputs[0].type
        self.res = array_math.reduction_dtype(reduction.kind, src_t, None)
        kind = kind_of(src_t.dtype)
        self.kind = "f" if self.name == "mean" else kind if self.name in ("max", "min") else kind_of(self.res)
        array_math.check_nonempty(low, self.name, count)
        self.slot = low.alloca(F64 if self.kind == "f" else ir.IntType(1) if self.kind == "b" else I64)
        low.b.store(array_math.reduction_init(low, self.name, self.kind), self.slot)

    def add(self, kind, x) -> None:
        low = self.low
        new, _ = array_math.reduction_step(
            low, self.name, low.b.load(self.slot), conversions.cast(low, x, kind, self.kind), self.kind, self.res
        )
        low.b.store(new, self.slot)

    def result(self) -> list:
        low, b = self.low, self.low.b
        total = b.load(self.slot)
        if self.name == "mean":
            total = b.fdiv(total, b.sitofp(self.count, F64))
        k, x = array_math.round_to(low, total, self.kind, self.res)
        return low.scalar_result(x, k, self.reduction.output.type)


class PairwiseSum:
    """One float sum or mean of the group, summed as NumPy sums the materialized array: each leaf block of the
    pairwise tree is computed into ``buffer`` (``put``), then summed (``source``)."""

    def __init__(self, low, reduction):
        self.low, self.reduction = low, reduction
        self.name = reduction.kind.split("::")[1]
        self.src_dtype = reduction.inputs[0].type.dtype
        self.res = array_math.reduction_dtype(reduction.kind, reduction.inputs[0].type, None)
        self.sum_dtype = summation.summation_dtype(self.name, self.src_dtype)
        self.fty = summation.accumulator_type(self.sum_dtype)
        # a cast sum (a float16 or integer mean) restarts its tree every BUFFER_SIZE elements, as NumPy's
        # buffered iterator calls the inner loop once per buffer
        self.chunk = summation.BUFFER_SIZE if self.sum_dtype != self.src_dtype else None
        self.buffer = low.alloca(ir.ArrayType(self.fty, summation.PW_BLOCKSIZE + summation.UNROLL))

    def put(self, j, kind, x) -> None:
        """Element ``j`` of the current leaf block."""
        low, b = self.low, self.low.b
        x = conversions.cast(low, x, kind, "f")  # exact: the element is already rounded to its dtype
        if x.type != self.fty:
            x = b.fptrunc(x, self.fty)
        b.store(x, b.gep(self.buffer, [i64(0), j]))

    def source(self, leaf_start) -> summation.Source:
        b = self.low.b

        def at(pos, ty):
            return b.bitcast(b.gep(self.buffer, [i64(0), b.sub(pos, leaf_start())]), ty.as_pointer())

        def scalar(pos):
            return b.load(at(pos, self.fty))

        def vector(pos):
            return b.load(at(pos, ir.VectorType(self.fty, summation.UNROLL)), align=summation.fty_size(self.fty))

        def block(start, count):
            # the buffer is a contiguous run of <= 128 elements: its pairwise sum is the leaf's, and the
            # process-wide compiled run loop keeps each sum's block code out of this function
            dtype = "float64" if self.fty == F64 else "float32"
            data = b.bitcast(self.buffer, I8.as_pointer())
            return summation.run_sum(
                self.low,
                ir.Constant(self.fty, -0.0),
                data,
                i64(summation.fty_size(self.fty)),
                count,
                dtype,
                dtype,
                None,
            )

        return summation.Source(scalar, vector, block=block)

    def result(self, total, count) -> list:
        low = self.low
        value = (
            sum_reductions.finish_mean(low, total, count, self.res, array=False)
            if self.name == "mean"
            else sum_reductions.widen(low, total)
        )
        return low.scalar_result(sum_reductions.round_result(low, value, self.res), "f", self.reduction.output.type)


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def fused_accumulator(ctx, reduction, count) -> Accumulator:
    return Accumulator(ctx, reduction, count)


def lower_multi_output_group(ctx, node):
    sub = node.attrs["subgraph"]
    arrays = [ctx.arr(v) for v in node.inputs if isinstance(v.type, TensorType)]
    values = [r.node.inputs[0] if r.node is not None and is_full_reduction(r.node) else r for r in sub.outputs]
    rank = max(v.type.rank for v in values)
    shape = array_math.broadcast_shape(ctx, arrays, rank)
    count = ctx.element_count(shape)
    results, accumulators, stores, sums = [None] * len(sub.outputs), [], [], []
    for k, r in enumerate(sub.outputs):
        if isinstance(r.type, TensorType):
            out = ctx.alloc(node.outputs[k].type, shape)
            results[k] = out
            stores.append((r, fused.store_sink(ctx, out)))
        elif summation.pairwise_reducible(r.node.kind.split("::")[1], r.node.inputs[0].type.dtype):
            results[k] = PairwiseSum(ctx, r.node)
            sums.append((r.node.inputs[0], results[k]))
        else:
            acc = fused_accumulator(ctx, r.node, count)
            results[k] = acc
            accumulators.append((r.node.inputs[0], acc))

    def element(load):
        env = {}
        for p, outer in zip(sub.inputs, node.inputs):
            env[id(p)] = load(outer) if isinstance(outer.type, TensorType) else ctx.scalar_operand(outer)
        for n in sub.nodes:
            if not is_full_reduction(n):
                fused.fused_element_node(ctx, n, env)
        return None, env

    def sink(env, flat, index=None):
        for r, store in stores:
            store(*env[id(r)], flat, index)
        for v, acc in accumulators:
            acc.add(*env[id(v)])

    totals = {}
    chunks = sorted({s.chunk for _, s in sums}, key=lambda c: c is not None)
    if not chunks:
        first_out = next((r for r in results if not isinstance(r, Accumulator)), None)
        array_math.broadcast_loops(
            ctx, shape, node.inputs, arrays, element, lambda _, env, flat, index: sink(env, flat, index), out=first_out
        )
    for pass_number, chunk in enumerate(chunks):
        # one walk over the elements per chunking (in practice one: mixing a cast mean with an uncast
        # sum in one group is rare); the first walk also stores the arrays and feeds the other reductions
        group = [(v, s) for v, s in sums if s.chunk == chunk]
        walked = pairwise_walk(
            ctx, shape, count, node, arrays, element, group, chunk, sink if pass_number == 0 else None
        )
        totals.update(zip([id(s) for _, s in group], walked))

    return [
        r.result()
        if isinstance(r, Accumulator)
        else r.result(totals[id(r)], count)
        if isinstance(r, PairwiseSum)
        else r.leaves
        for r in results
    ]


def pairwise_walk(ctx, shape, count, node, arrays, element, group, chunk, sink) -> list:
    """The totals of the group's pairwise sums ``group`` ([(value, PairwiseSum)], one chunking), walking
    the elements once in position order: each leaf block of the (shared) tree computes its elements,
    puts each sum's value in that sum's buffer and hands the element to ``sink(env, flat)``."""
    b = ctx.b
    tensors = [v for v in node.inputs if isinstance(v.type, TensorType)]
    by_value = {id(v): a for v, a in zip(tensors, arrays)}
    flat = array_math.all_flat(ctx, shape, arrays)
    strides = {id(a): array_math.broadcast_to(ctx, a, shape, "") for a in arrays}
    leaf_start = ctx.alloca(I64)

    def compute(i, j, load):
        _, env = element(load)
        for v, s in group:
            s.put(j, *env[id(v)])
        if sink is not None:
            sink(env, i)

    def fill(first, n):
        with b.if_else(flat, likely=True) as (contiguous, broadcast):
            with contiguous:
                with ctx.for_range(n) as j:
                    i = b.add(first, j)

                    def load(v, i=i):
                        a = by_value[id(v)]
                        ptr = b.bitcast(b.gep(a.data, [b.mul(i, i64(a.itemsize))]), array_math.elem_ptr_type(ctx, a))
                        return kind_of(a.t.dtype), ctx.load_element(ptr, a.t.dtype)

                    compute(i, j, load)
            with broadcast:
                with ctx.for_range(n) as j:
                    i = b.add(first, j)
                    index = sum_reductions.unravel(ctx, i, shape)

                    def load(v, index=index):
                        a = by_value[id(v)]
                        view = Arr(a.t, [a.mi, a.data, *a.shape, *strides[id(a)]])
                        ptr = ctx.element_ptr(view, index[len(index) - a.t.rank :])
                        return kind_of(a.t.dtype), ctx.load_element(ptr, a.t.dtype)

                    compute(i, j, load)

    sums = [s for _, s in group]

    def sums_of(offset, n):
        def begin(start, length):
            b.store(start, leaf_start)
            fill(b.add(offset, start), length)

        sources = [s.source(lambda: b.load(leaf_start)) for s in sums]
        return summation.pairwise_sums(ctx, n, [s.fty for s in sums], sources, begin)

    return summation.chunked_sums(
        ctx,
        [ir.Constant(s.fty, 0.0) for s in sums],
        count,
        [s.fty for s in sums],
        [s.sum_dtype for s in sums],
        chunk,
        sums_of,
    )
