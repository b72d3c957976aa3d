"""Lowering of multi-output ``prim::FusionGroup`` nodes (made by the fusion pass's sibling merging): one loop
over the group's shape computes every node of the body per element, stores each element-wise result and feeds
each full reduction's accumulator. Every value is rounded to its dtype as in ``fused.py``.

Each reduction result gets its accumulation from one ``fused_accumulator`` (initial value, one step per
element, the final scalar), so another summation scheme can replace it in one place. The fusion pass only
groups consumers whose arrays are the producer's, so every result iterates over the same shape.
"""
from __future__ import annotations

from llvmlite import ir

from ...ir.registry import REGISTRY
from ...ir.types import TensorType
from .array_math import reduction_dtype
from .arrays import kind_of
from .common import F64, I64


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
        self.res = reduction_dtype(reduction.kind, src_t, None)
        kind = kind_of(src_t.dtype)
        self.kind = "f" if self.name == "mean" else kind if self.name in ("max", "min") else kind_of(self.res)
        low.check_nonempty(self.name, count)
        self.slot = low.alloca(F64 if self.kind == "f" else ir.IntType(1) if self.kind == "b" else I64)
        low.b.store(low.reduction_init(self.name, self.kind), self.slot)

    def add(self, kind, x) -> None:
        low = self.low
        new, _ = low.reduction_step(self.name, low.b.load(self.slot), low.cast(x, kind, self.kind), self.kind)
        low.b.store(new, self.slot)

    def result(self) -> list:
        low, b = self.low, self.low.b
        total = b.load(self.slot)
        if self.name == "mean":
            total = b.fdiv(total, b.sitofp(self.count, F64))
        k, x = low.round_to(total, self.kind, self.res)
        return low.scalar_result(x, k, self.reduction.output.type)


class FusedMultiOps:
    """Mixin of FunctionLowering."""

    def fused_accumulator(self, reduction, count) -> Accumulator:
        return Accumulator(self, reduction, count)

    def lower_multi_output_group(self, node):
        sub = node.attrs["subgraph"]
        arrays = [self.arr(v) for v in node.inputs if isinstance(v.type, TensorType)]
        values = [r.node.inputs[0] if r.node is not None and is_full_reduction(r.node) else r for r in sub.outputs]
        rank = max(v.type.rank for v in values)
        shape = self.broadcast_shape(arrays, rank)
        count = self.size(shape)
        results, accumulators, stores = [None] * len(sub.outputs), [], []
        for k, r in enumerate(sub.outputs):
            if isinstance(r.type, TensorType):
                out = self.alloc(node.outputs[k].type, shape)
                results[k] = out
                stores.append((r, self.store_sink(out)))
            else:
                acc = self.fused_accumulator(r.node, count)
                results[k] = acc
                accumulators.append((r.node.inputs[0], acc))

        def element(load):
            env = {}
            for p, outer in zip(sub.inputs, node.inputs):
                env[id(p)] = load(outer) if isinstance(outer.type, TensorType) else self.scalar_operand(outer)
            for n in sub.nodes:
                if not is_full_reduction(n):
                    self.fused_element_node(n, env)
            return None, env

        def sink(_, env, flat, index):
            for r, store in stores:
                store(*env[id(r)], flat, index)
            for v, acc in accumulators:
                acc.add(*env[id(v)])

        first_out = next((r for r in results if not isinstance(r, Accumulator)), None)
        self.broadcast_loops(shape, node.inputs, arrays, element, sink, out=first_out)
        return [r.result() if isinstance(r, Accumulator) else r.leaves for r in results]
