"""The generic batching rules (``BatchRule`` kinds) and the operators ``vmap`` handles itself (tuples, print,
raise, messages, unbound-variable checks). Custom rules live beside their operators in ``scriptc/ops``."""

from __future__ import annotations

from ..ir.core import Node, Value
from ..ir.registry import Effect, lookup
from ..ir.types import BOOL, FLOAT, INT, ListType, TensorType, TupleType, result_dtype
from .batching import batched_like
from .vmap import CANONICAL, Batcher, LaneMessage, _has_effects, example_rank


def emit_rule(b: Batcher, node: Node, ins: list) -> list[Value]:
    """The batched outputs of ``node`` (some operand batched), by its operator's rule."""
    rule = lookup(node.kind).batch
    if any(isinstance(v, LaneMessage) for v in ins):
        raise b.error(node, "a string built from mapped values can only be the message of a raise")
    if rule is None:
        raise b.error(
            node, f"{node.kind} has no batching rule", "see the README's vmap section for the operators vmap batches"
        )
    if rule.kind == "unbatchable":
        raise b.error(node, f"{node.kind} cannot be batched: {rule.reason}")
    if rule.view and any(b.batched(v) for v in ins[1:]):
        return lanes(b, node, ins)  # a view at an index that differs between examples: a copy per example
    if rule.kind == "elementwise":
        return [elementwise(b, node, ins, rule.promote)]
    if rule.kind == "reduction":
        return [along_axis(b, node, ins)]
    if rule.kind == "axis":
        return [along_axis(b, node, ins)]
    if rule.kind == "same":
        if any(b.batched(v) for v in ins[1:]):
            return lanes(b, node, ins)
        return [b.op(node.kind, *ins, **node.attrs)]
    if rule.kind == "lanes":
        return lanes(b, node, ins)
    if rule.kind == "custom":
        return list(rule.emit(b, node, ins))
    raise AssertionError(f"unknown batching rule kind {rule.kind}")


# -- element-wise ------------------------------------------------------------------------------------------
def computation_dtype(types: list, result) -> str:
    """The dtype the per-example operation computes in, for batched operands that were scalars: NumPy's
    promotion where an array takes part (Python scalars are weak, NEP 50); Python's where all are scalars
    (bool arithmetic is int arithmetic, int with float is float)."""
    if any(isinstance(t, TensorType) for t in types):
        return result_dtype(*types)
    if FLOAT in types:
        return "float64"
    if all(t == BOOL for t in types) and result == BOOL:
        return "bool"
    return "int64"


def elementwise(b: Batcher, node: Node, ins: list, promote=None) -> Value:
    examples = [v.type for v in node.inputs]
    out_t = node.outputs[0].type
    promote = range(len(ins)) if promote is None else promote
    dtype = computation_dtype([examples[i] for i in promote], out_t)
    rank = max(example_rank(t) for t in examples)
    args = []
    for i, (v, t) in enumerate(zip(ins, examples)):
        if b.batched(v):
            if not isinstance(t, TensorType) and i in promote:
                v = b.cast(v, dtype)
            v = b.align(v, rank)
        args.append(v)
    return b.fix_dtype(b.op(node.kind, *args, **node.attrs), out_t)


# -- reductions, scans, sorts: the axis moves by one -------------------------------------------------------
def along_axis(b: Batcher, node: Node, ins: list) -> Value:
    x, *rest = ins
    if any(b.batched(v) for v in rest):
        return lanes(b, node, ins)[0]
    attrs = dict(node.attrs)
    rank = node.inputs[0].type.rank
    axis = attrs.get("axis")
    if axis is None and "axis" in lookup(node.kind).attrs:
        if rank != 1:
            x = b.flatten(x)
        attrs["axis"] = 1
    elif axis is not None:
        attrs["axis"] = axis % rank + 1
    return b.fix_dtype(b.op(node.kind, x, *rest, **attrs), node.outputs[0].type)


# -- lanes: a loop over the examples ---------------------------------------------------------------------
def lane(b: Batcher, v: Value, i: Value) -> Value:
    """Example ``i`` of a batched value (a view of an array; a Python scalar)."""
    example = b.example_type(v)
    if isinstance(example, TupleType):
        kind = b.kind(v)
        parts = [
            lane(b, b.mark(p, e, k), i) if k else p
            for p, e, k in zip(
                b.unpack(v), example.elems, kind if isinstance(kind, tuple) else batched_like(example, kind)
            )
        ]
        return b.node("prim::TupleConstruct", parts, [TupleType(tuple(p.type for p in parts))]).output
    if isinstance(example, TensorType):
        return b.op("aten::select", v, i, dim=0)
    if isinstance(example, ListType):
        raise b.error(None, "a list that differs between examples cannot be used here")
    return b.op("aten::getitem", v, i)


class _Collector:
    """Gathers one output per example into a batched value: scalars into an array, arrays into a list then
    ``np.stack`` (which raises, as stacking the per-example results would, when their shapes differ)."""

    def __init__(self, b: Batcher, example):
        self.example = example
        if isinstance(example, TupleType):
            self.parts = [_Collector(b, e) for e in example.elems]
        elif isinstance(example, TensorType):
            self.store = b.node(
                "prim::ListConstruct",
                [],
                [ListType(TensorType(example.dtype, example.rank))],
                {"elem": str(TensorType(example.dtype, example.rank))},
            ).output
        elif example in CANONICAL:
            self.store = b.op("aten::empty", b.size, dtype=CANONICAL[example])
        else:
            raise b.error(None, f"a {example} result cannot differ between examples")

    def put(self, b: Batcher, i: Value, v: Value) -> None:
        if isinstance(self.example, TupleType):
            for c, p in zip(self.parts, b.unpack(v)):
                c.put(b, i, p)
        elif isinstance(self.example, TensorType):
            b.node("aten::append", [self.store, v], [])
        else:
            b.node("aten::setitem", [self.store, i, v], [])

    def finish(self, b: Batcher) -> Value:
        if isinstance(self.example, TupleType):
            parts = [c.finish(b) for c in self.parts]
            out = b.node("prim::TupleConstruct", parts, [TupleType(tuple(p.type for p in parts))]).output
            return b.mark(out, self.example, batched_like(self.example))
        if isinstance(self.example, TensorType):
            return b.mark(b.op("aten::stack", self.store, axis=0), self.example)
        return b.mark(self.store, self.example)


def lanes(b: Batcher, node: Node, ins: list) -> list[Value]:
    """``node`` run once per example, in a loop. Under a mask, an operator that writes runs only for the active
    examples; one that reads runs for every example, inactive ones reading the first active example's operands
    (so that nothing raises for an example whose path does not reach the operator, and every result has the
    shape of a real one)."""
    calls = node.kind == "prim::CallFunction"
    writes = lookup(node.kind).effect == Effect.WRITES or (calls and _has_effects(node.attrs["fn"]))
    if calls and writes and any(n.kind == "prim::Print" for n in node.attrs["fn"].walk()):
        raise b.error(
            node,
            "a call of a function that prints, with mapped values",
            "the batched function runs every example at once and cannot print per example",
        )
    if writes and node.outputs and b.mask is not None:
        raise b.error(node, "a call that writes into arrays, under a condition that depends on a mapped value")
    collectors = [_Collector(b, o.type) for o in node.outputs]
    source = None
    if b.mask is not None and not writes:
        first = b.op("aten::argmax", b.mask)
        every = b.op("aten::arange", b.const(0), b.size, b.const(1))
        source = b.op("aten::where", b.mask, every, first)
    loop = b.node("prim::Loop", [b.size, b.const(True)], [])
    body = loop.add_block()
    i = body.add_param(INT, "lane")

    def run():
        k = i if source is None else b.op("aten::getitem", source, i)
        if writes and b.mask is not None:
            guard = b.node("prim::If", [b.op("aten::getitem", b.mask, i)], [])
            then, _ = guard.add_block(), guard.add_block()  # (a masked-off lane does nothing)
            b.in_block(then, None, lambda: b.copy(node, [lane(b, v, k) if b.batched(v) else v for v in ins]))
            return
        results = b.copy(node, [lane(b, v, k) if b.batched(v) else v for v in ins]).outputs
        for c, r in zip(collectors, results):
            c.put(b, i, r)

    b.in_block(body, b.mask, run)
    body.add_return(b.in_block(body, None, lambda: b.const(True)))
    return [c.finish(b) for c in collectors]


# -- operators vmap handles itself -------------------------------------------------------------------------
def emit_structural(b: Batcher, node: Node, ins: list) -> bool:
    kind = node.kind
    if kind == "prim::TupleConstruct":
        kinds = b.an.kind(node.output)
        parts = [b.coerce(v, s.type, k) for v, s, k in zip(ins, node.inputs, kinds)]
        out = b.node(kind, parts, [TupleType(tuple(p.type for p in parts))]).output
        b.bind(node.output, b.mark(out, node.output.type, kinds))
        return True
    if kind in ("prim::TupleUnpack", "prim::TupleIndex"):
        t = ins[0]
        have = b.kind(t)
        have = have if isinstance(have, tuple) else batched_like(node.inputs[0].type, have)
        picks = range(len(node.outputs)) if kind == "prim::TupleUnpack" else [node.attrs["index"]]
        outs = b.copy(node, [t]).outputs
        for o, n, k in zip(node.outputs, outs, picks):
            n.type = t.type.elems[k]
            b.bind(o, b.mark(n, o.type, have[k]))
        return True
    if kind == "aten::format":
        if any(b.batched(v) for v in ins):
            b.bind(node.output, LaneMessage(node, ins))
            return True
        return False
    if kind == "prim::Print":
        if any(b.batched(v) for v in ins):
            raise b.error(
                node,
                "print of a value that differs between examples",
                "the batched function runs every example at once and cannot print per example; "
                "return the value instead",
            )
        return False
    if kind == "prim::RaiseException":
        if any(b.batched(v) for v in ins):
            first = b.const(0) if b.mask is None else b.op("aten::argmax", b.mask)
            ins = [
                message(b, v, first) if isinstance(v, LaneMessage) else lane(b, v, first) if b.batched(v) else v
                for v in ins
            ]
            b.copy(node, ins)
            return True
        return False
    if kind == "prim::AssertBound":
        (defined,) = ins
        if b.batched(defined):
            if b.mask is not None:
                defined = b.op("aten::__or__", defined, b.op("aten::bitwise_not", b.mask))
            b.copy(node, [b.op("aten::all", defined)])
            return True
        return False
    return False


def message(b: Batcher, msg: LaneMessage, first: Value) -> Value:
    """The message the first raising example would give."""
    ins = [lane(b, v, first) if b.batched(v) else v for v in msg.inputs]
    return b.copy(msg.node, ins).output


__all__ = ["elementwise", "along_axis", "lanes", "lane", "emit_rule", "emit_structural"]
