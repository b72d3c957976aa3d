"""The reference interpreter: runs any verified graph with Python/NumPy semantics, node by node, through each
operator's reference implementation. It is the oracle that every pass and backend is checked against."""

from __future__ import annotations

import sys

from ..ir.core import Block, Graph
from ..ir.registry import Effect, lookup
from ..ir.types import BOOL, FLOAT, INT, TupleType
from .prim import UNBOUND

_WRAP = 2**64
_HALF = 2**63


def normalize(value, type):
    """Keep scalars as Python scalars; ints wrap to 64 bits (two's complement) as native code does."""
    if value is UNBOUND:
        return value
    if type == INT:
        value = int(value)
        if not -_HALF <= value < _HALF:
            value = (value + _HALF) % _WRAP - _HALF
        return value
    if type == FLOAT:
        return float(value)
    if type == BOOL:
        return bool(value)
    if isinstance(type, TupleType) and value.__class__ is tuple:  # (divmod's ints wrap too)
        return tuple(normalize(v, t) for v, t in zip(value, type.elems))
    return value


def check_arguments(values, types) -> None:
    """An int argument beyond 64 bits is native code's OverflowError here too (not wrapped)."""
    for v, t in zip(values, types):
        if t == INT and isinstance(v, int) and not -_HALF <= v < _HALF:
            raise OverflowError("int too large to convert to a 64-bit int")
        if isinstance(t, TupleType) and isinstance(v, tuple):
            check_arguments(v, t.elems)


class Interpreter:
    def __init__(self):
        self._impls: dict[str, object] = {}
        # calls between scripted functions nest as deep as CPython lets Python functions nest (native code
        # has the same limit), whatever number of interpreter frames one level takes
        self.depth, self.max_depth = 0, sys.getrecursionlimit()

    def call(self, graph: Graph, args) -> object:
        if self.depth >= self.max_depth:
            raise RecursionError("maximum recursion depth exceeded")
        self.depth += 1
        limit = sys.getrecursionlimit()
        if limit < 64 * self.max_depth:
            sys.setrecursionlimit(64 * self.max_depth)
        try:
            return self.run(graph, args)
        finally:
            self.depth -= 1
            if self.depth == 0:
                sys.setrecursionlimit(limit)

    def run(self, graph: Graph, args) -> object:
        env = dict(zip(map(id, graph.inputs), args))
        (result,) = self.run_block(graph.block, env)
        return result

    def run_block(self, block: Block, env: dict) -> list:
        for node in block.nodes:
            inputs = [env[id(v)] for v in node.inputs]
            kind = node.kind
            if kind == "prim::Loop":
                outs = self.run_loop(node, inputs, env)
            elif kind == "prim::If":
                outs = self.run_block(node.blocks[0 if inputs[0] else 1], env)
            elif kind == "prim::CallFunction":
                outs = [self.call(node.attrs["fn"], inputs)]
            elif kind == "prim::FusionGroup":  # one result, or several (a multi-output group)
                outs = self.run_fusion_group(node, inputs)
            elif kind == "prim::FusedLoop":
                outs = self.run_fused_loop(node, inputs)
            elif (
                node.outputs
                and any(x is UNBOUND for x in inputs)
                and lookup(kind).effect <= Effect.RAISES
                and all(v.type in (INT, FLOAT, BOOL) for v in node.outputs)
            ):
                outs = [UNBOUND] * len(node.outputs)  # a scalar computed from a variable not bound on this path
                #                                         (x = float(x) widening it): unread, as in native code
            else:
                impl = self._impls.get(kind) or self._impls.setdefault(kind, lookup(kind).impl)
                out = impl(*inputs, **node.attrs)
                n = len(node.outputs)
                outs = [] if n == 0 else [out] if n == 1 and kind != "prim::TupleUnpack" else list(out)
            for v, x in zip(node.outputs, outs):
                env[id(v)] = normalize(x, v.type)
        return [env[id(v)] for v in block.returns]

    def run_fusion_group(self, node, inputs) -> list:
        sub = node.attrs["subgraph"]
        return self.run_block(sub.block, dict(zip(map(id, sub.inputs), inputs)))

    def run_fused_loop(self, node, inputs) -> list:
        """``for i in range(trips): carried = subgraph(i, *carried, *invariants)``, array at a time."""
        sub, k = node.attrs["subgraph"], node.attrs["carried"]
        trips, carried, invariants = inputs[0], inputs[1 : 1 + k], inputs[1 + k :]
        for i in range(trips):
            env = dict(zip(map(id, sub.inputs), [i, *carried, *invariants]))
            carried = [normalize(x, v.type) for x, v in zip(self.run_block(sub.block, env), sub.outputs)]
        return carried

    def run_loop(self, node, inputs, env) -> list:
        max_trips, cond, *carried = inputs
        body = node.blocks[0]
        params = [id(p) for p in body.params]
        i = 0
        while cond and i < max_trips:
            env.update(zip(params, [i, *carried]))
            cond, *carried = self.run_block(body, env)
            i += 1
        return carried


def interpret(graph: Graph, args) -> object:
    return Interpreter().run(graph, args)
