"""Lowering of ``prim::FusionGroup``: the group's element-wise operators evaluated per element in one loop
(flat and vectorizable when the operands are contiguous), storing only the group's result, or accumulating it
when the group ends in a full reduction (float sums and means in blocks, summed pairwise as NumPy sums the
materialized array: summation.py). Every intermediate is rounded to its own dtype, as NumPy's materialized
temporaries are, so a fused group computes what the unfused operators compute."""

from __future__ import annotations

from llvmlite import ir

from ...ir.registry import REGISTRY
from ...ir.types import TensorType
from .array_math import element_name, reduction_dtype
from .arrays import ELEM, Arr, kind_of, scalar_kind
from .common import F64, I64, i64
from .rules import lowers
from .structure import lower_constant
from .summation import pairwise_reducible


class FusedOps:
    """Mixin of FunctionLowering."""

    def fused_scalars(self, node, sub, reduction) -> dict:
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
                    operand = (scalar_kind(v.type), lower_constant(self, v.node)[0][0])
                else:
                    operand = self.scalar_operand(outer_of[id(v)])
                scalars[id(n), k] = self.weak_scalar(n.kind.split("::")[1], k, *operand, self.loop_dtype(n))
        return scalars

    def fused_element_node(self, n, env, scalars=None) -> None:
        """One node of a fused body on one element: ``env`` maps values to (kind, register). A Python scalar
        operand is converted as the operator's ufunc converts it (``weak_scalar``): taken from ``scalars`` when
        the caller converted it before the loop, else converted here."""
        if n.kind == "prim::Constant":
            t = n.output.type
            env[id(n.output)] = (scalar_kind(t), lower_constant(self, n)[0][0])
            return
        op = n.kind.split("::")[1]
        dtype = self.loop_dtype(n)
        compute = kind_of(dtype)
        args = []
        for k, v in enumerate(n.inputs):
            if scalars is not None and (id(n), k) in scalars:
                kind, x = scalars[id(n), k]
            elif not isinstance(v.type, TensorType):
                kind, x = self.weak_scalar(op, k, *env[id(v)], dtype)
            else:
                kind, x = env[id(v)]
            args.append(self.cast(x, kind, "b" if op == "where" and k == 0 else compute))
        kind, x = self.in_loop_precision(*self.element_op(element_name(n), args, compute, dtype), dtype)
        env[id(n.output)] = self.round_through(kind, x, n.output.type.dtype)

    def output_buffer(self, node, shape):
        """A new array for the result, or (``reuse=k``) input k's buffer when nothing else references it and
        it has the result's shape; either way the result owns one reference."""
        t = node.output.type
        k = node.attrs.get("reuse")
        if k is None:
            return self.alloc(t, shape)
        b = self.b
        src = self.arr(node.inputs[k])
        unique = b.icmp_unsigned("!=", src.mi, ir.Constant(src.mi.type, None))
        slots = self.alloca_leaves(t)
        with b.if_else(unique) as (known, borrowed):
            with known:
                count = b.load(b.bitcast(src.mi, I64.as_pointer()))
                ok = b.icmp_signed("==", count, i64(1))
                for d, e in zip(src.shape, shape):
                    ok = b.and_(ok, b.icmp_signed("==", d, e))
                with b.if_else(ok) as (inplace, fresh):
                    with inplace:
                        self.array_retain([src.mi])
                        self.store_leaves(slots, src.leaves)
                    with fresh:
                        self.store_leaves(slots, self.alloc(t, shape).leaves)
            with borrowed:
                self.store_leaves(slots, self.alloc(t, shape).leaves)
        return Arr(t, self.load_leaves(slots))

    def store_sink(self, out):
        def store(kind, x, flat, index):
            if flat is not None:
                ptr = self.b.bitcast(
                    self.b.gep(out.data, [self.b.mul(flat, i64(out.itemsize))]), ELEM[out.t.dtype].as_pointer()
                )
            else:
                ptr = self.element_ptr(out, index)
            self.store_element(ptr, x, kind, out.t.dtype)

        return store

    def round_through(self, kind, x, dtype):
        """(kind, x) as it is once stored in an array of ``dtype`` and read back."""
        b = self.b
        k = kind_of(dtype)
        x = self.cast(x, kind, k)
        if k == "f":
            x = self.round_float(x, dtype)
        elif k in "iu" and dtype != "int64":
            narrow = b.trunc(x, ELEM[dtype])
            x = b.zext(narrow, I64) if k == "u" else b.sext(narrow, I64)
        return k, x

    def fused_reduction(self, reduction, node, shape, arrays, element):
        b = self.b
        name = reduction.kind.split("::")[1]
        src_t = reduction.inputs[0].type
        res = reduction_dtype(reduction.kind, src_t, None)
        if pairwise_reducible(name, src_t.dtype):
            return self.fused_pairwise_reduction(reduction, node, src_t.dtype, res, shape, arrays, element)
        count = self.size(shape)
        self.check_nonempty(name, count)
        kind = kind_of(src_t.dtype)
        acc_kind = "f" if name == "mean" else kind if name in ("max", "min") else kind_of(res)
        acc = self.alloca(F64 if acc_kind == "f" else ir.IntType(1) if acc_kind == "b" else I64)
        b.store(self.reduction_init(name, acc_kind), acc)

        def sink(k, x, flat, index):
            new, _ = self.reduction_step(name, b.load(acc), self.cast(x, k, acc_kind), acc_kind, res)
            b.store(new, acc)

        self.broadcast_loops(shape, node.inputs, arrays, element, sink)
        total = b.load(acc)
        if name == "mean":
            total = b.fdiv(total, b.sitofp(count, F64))
        k, x = self.round_to(total, acc_kind, res)
        return self.scalar_result(x, k, node.output.type)


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers("prim::FusionGroup")
def lower_fusion_group(ctx, node):
    sub = node.attrs["subgraph"]
    if len(sub.outputs) > 1:
        return ctx.lower_multi_output_group(node)
    root = sub.outputs[0].node
    reduction = root if REGISTRY[root.kind].extra.get("reduction") else None
    value = reduction.inputs[0] if reduction is not None else sub.outputs[0]
    arrays = [ctx.arr(v) for v in node.inputs if isinstance(v.type, TensorType)]
    shapes = ctx.group_shapes(node, sub, reduction)
    shape = shapes[id(value)] if id(value) in shapes else ctx.broadcast_shape(arrays, value.type.rank)

    scalars = ctx.fused_scalars(node, sub, reduction)

    def element(load):
        env = {}
        for p, outer in zip(sub.inputs, node.inputs):
            if isinstance(outer.type, TensorType):
                env[id(p)] = load(outer)
        for n in sub.nodes:
            if n is reduction:
                break
            if n.kind != "prim::Constant":  # constants: read through ``scalars``
                ctx.fused_element_node(n, env, scalars)
        return env[id(value)]

    if reduction is None:  # (the operands broadcast to the shape: group_shapes or broadcast_shape said so)
        out = ctx.output_buffer(node, shape)

        def sequential():
            start = ctx.simd_loop(node, sub, out, arrays, shape)
            ctx.broadcast_loops(
                out.shape, node.inputs, arrays, element, ctx.store_sink(out), out=out, flat_start=start, checked=True
            )

        in_chunks = ctx.parallel_flat_group(node, sub, out, arrays, shape, scalars)
        if in_chunks is None:
            sequential()
        else:  # the flat case ran as chunks: what is left is strided or broadcast
            with ctx.b.if_then(ctx.b.not_(in_chunks)):
                ctx.broadcast_loops(
                    out.shape, node.inputs, arrays, element, ctx.store_sink(out), out=out, flat=False, checked=True
                )
        return [out.leaves]
    return [ctx.fused_reduction(reduction, node, shape, arrays, element)]
