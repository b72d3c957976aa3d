"""Lowering of ``prim::FusionGroup``: the group's element-wise operators evaluated per element in one loop
(flat and vectorizable when the operands are contiguous), storing only the group's result, or accumulating it
when the group ends in a full reduction (float sums and means in blocks, summed pairwise as NumPy sums the
materialized array: summation.py). Every intermediate is rounded to its own dtype, as NumPy's materialized
temporaries are, so a fused group computes what the unfused operators compute."""

from __future__ import annotations

from llvmlite import ir

from ....ir.registry import REGISTRY
from ....ir.types import TensorType
from .array_value import ELEM, Arr, kind_of, scalar_kind
from .common import F64, I64, i64
from .rules import lowers
from . import array_math, conversions, fused_multi, fused_parallel, simd, structure, sum_reductions, summation


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def fused_scalars(ctx, node, sub, reduction) -> dict:
    """{(id(member), operand position): (kind, x)} for every Python scalar a member reads, converted as
    that operator's ufunc converts it (weak_scalar), before the loops: range errors are raised once."""
    outer_of = {id(p): outer for p, outer in zip(sub.inputs, node.inputs)}
    scalars = {}
    for n in sub.nodes:
        if n is reduction:
            break
        if n.kind == "prim::Constant":
            continue
        for k, v in enumerate(n.inputs):
            if isinstance(v.type, TensorType):
                continue
            if v.node is not None and v.node.kind == "prim::Constant":
                operand = (scalar_kind(v.type), structure.lower_constant(ctx, v.node)[0][0])
            else:
                operand = ctx.scalar_operand(outer_of[id(v)])
            scalars[id(n), k] = array_math.weak_scalar(
                ctx, n.kind.split("::")[1], k, *operand, array_math.loop_dtype(ctx, n)
            )
    return scalars


def fused_element_node(ctx, n, env, scalars=None) -> None:
    """One node of a fused body on one element: ``env`` maps values to (kind, register). A Python scalar
    operand is converted as the operator's ufunc converts it (``weak_scalar``): taken from ``scalars`` when
    the caller converted it before the loop, else converted here."""
    if n.kind == "prim::Constant":
        t = n.output.type
        env[id(n.output)] = (scalar_kind(t), structure.lower_constant(ctx, n)[0][0])
        return
    op = n.kind.split("::")[1]
    dtype = array_math.loop_dtype(ctx, n)
    compute = kind_of(dtype)
    args = []
    for k, v in enumerate(n.inputs):
        if scalars is not None and (id(n), k) in scalars:
            kind, x = scalars[id(n), k]
        elif not isinstance(v.type, TensorType):
            kind, x = array_math.weak_scalar(ctx, op, k, *env[id(v)], dtype)
        else:
            kind, x = env[id(v)]
        args.append(conversions.cast(ctx, x, kind, "b" if op == "where" and k == 0 else compute))
    kind, x = array_math.in_loop_precision(
        ctx, *array_math.element_op(ctx, array_math.element_name(n), args, compute, dtype), dtype
    )
    env[id(n.output)] = round_through(ctx, kind, x, n.output.type.dtype)


def output_buffer(ctx, node, shape):
    """A new array for the result, or (``reuse=k``) input k's buffer when nothing else references it and
    it has the result's shape; either way the result owns one reference."""
    t = node.output.type
    k = node.attrs.get("reuse")
    if k is None:
        return ctx.alloc(t, shape)
    b = ctx.b
    src = ctx.arr(node.inputs[k])
    unique = b.icmp_unsigned("!=", src.mi, ir.Constant(src.mi.type, None))
    slots = ctx.alloca_leaves(t)
    with b.if_else(unique) as (known, borrowed):
        with known:
            count = b.load(b.bitcast(src.mi, I64.as_pointer()))
            ok = b.icmp_signed("==", count, i64(1))
            for d, e in zip(src.shape, shape):
                ok = b.and_(ok, b.icmp_signed("==", d, e))
            with b.if_else(ok) as (inplace, fresh):
                with inplace:
                    ctx.array_retain([src.mi])
                    ctx.store_leaves(slots, src.leaves)
                with fresh:
                    ctx.store_leaves(slots, ctx.alloc(t, shape).leaves)
        with borrowed:
            ctx.store_leaves(slots, ctx.alloc(t, shape).leaves)
    return Arr(t, ctx.load_leaves(slots))


def store_sink(ctx, out):
    def store(kind, x, flat, index):
        if flat is not None:
            ptr = ctx.b.bitcast(
                ctx.b.gep(out.data, [ctx.b.mul(flat, i64(out.itemsize))]), ELEM[out.t.dtype].as_pointer()
            )
        else:
            ptr = ctx.element_ptr(out, index)
        ctx.store_element(ptr, x, kind, out.t.dtype)

    return store


def round_through(ctx, kind, x, dtype):
    """(kind, x) as it is once stored in an array of ``dtype`` and read back."""
    b = ctx.b
    k = kind_of(dtype)
    x = conversions.cast(ctx, x, kind, k)
    if k == "f":
        x = conversions.round_float(ctx, x, dtype)
    elif k in "iu" and dtype != "int64":
        narrow = b.trunc(x, ELEM[dtype])
        x = b.zext(narrow, I64) if k == "u" else b.sext(narrow, I64)
    return k, x


def fused_reduction(ctx, reduction, node, shape, arrays, element):
    b = ctx.b
    name = reduction.kind.split("::")[1]
    src_t = reduction.inputs[0].type
    res = array_math.reduction_dtype(reduction.kind, src_t, None)
    if summation.pairwise_reducible(name, src_t.dtype):
        return sum_reductions.fused_pairwise_reduction(ctx, reduction, node, src_t.dtype, res, shape, arrays, element)
    count = ctx.element_count(shape)
    array_math.check_nonempty(ctx, name, count)
    kind = kind_of(src_t.dtype)
    acc_kind = "f" if name == "mean" else kind if name in ("max", "min") else kind_of(res)
    acc = ctx.alloca(F64 if acc_kind == "f" else ir.IntType(1) if acc_kind == "b" else I64)
    b.store(array_math.reduction_init(ctx, name, acc_kind), acc)

    def sink(k, x, flat, index):
        new, _ = array_math.reduction_step(ctx, name, b.load(acc), conversions.cast(ctx, x, k, acc_kind), acc_kind, res)
        b.store(new, acc)

    array_math.broadcast_loops(ctx, shape, node.inputs, arrays, element, sink)
    total = b.load(acc)
    if name == "mean":
        total = b.fdiv(total, b.sitofp(count, F64))
    k, x = array_math.round_to(ctx, total, acc_kind, res)
    return ctx.scalar_result(x, k, node.output.type)


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers("prim::FusionGroup")
def lower_fusion_group(ctx, node):
    sub = node.attrs["subgraph"]
    if len(sub.outputs) > 1:
        return fused_multi.lower_multi_output_group(ctx, node)
    root = sub.outputs[0].node
    reduction = root if REGISTRY[root.kind].extra.get("reduction") else None
    value = reduction.inputs[0] if reduction is not None else sub.outputs[0]
    arrays = [ctx.arr(v) for v in node.inputs if isinstance(v.type, TensorType)]
    shapes = array_math.group_shapes(ctx, node, sub, reduction)
    shape = shapes[id(value)] if id(value) in shapes else array_math.broadcast_shape(ctx, arrays, value.type.rank)

    scalars = fused_scalars(ctx, node, sub, reduction)

    def element(load):
        env = {}
        for p, outer in zip(sub.inputs, node.inputs):
            if isinstance(outer.type, TensorType):
                env[id(p)] = load(outer)
        for n in sub.nodes:
            if n is reduction:
                break
            if n.kind != "prim::Constant":  # constants: read through ``scalars``
                fused_element_node(ctx, n, env, scalars)
        return env[id(value)]

    if reduction is None:  # (the operands broadcast to the shape: group_shapes or broadcast_shape said so)
        out = output_buffer(ctx, node, shape)

        def sequential():
            start = simd.simd_loop(ctx, node, sub, out, arrays, shape)
            array_math.broadcast_loops(
                ctx,
                out.shape,
                node.inputs,
                arrays,
                element,
                store_sink(ctx, out),
                out=out,
                flat_start=start,
                checked=True,
            )

        in_chunks = fused_parallel.parallel_flat_group(ctx, node, sub, out, arrays, shape, scalars)
        if in_chunks is None:
            sequential()
        else:  # the flat case ran as chunks: what is left is strided or broadcast
            with ctx.b.if_then(ctx.b.not_(in_chunks)):
                array_math.broadcast_loops(
                    ctx,
                    out.shape,
                    node.inputs,
                    arrays,
                    element,
                    store_sink(ctx, out),
                    out=out,
                    flat=False,
                    checked=True,
                )
        return [out.leaves]
    return [fused_reduction(ctx, reduction, node, shape, arrays, element)]
