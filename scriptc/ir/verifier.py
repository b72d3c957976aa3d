"""Checks a graph's invariants; run after the frontend and after every pass in tests.

- SSA: every use is dominated by its definition (earlier in the same block or an enclosing one); names unique;
  use lists agree with inputs.
- Structure: ``prim::If`` has a bool condition and two blocks whose returns match its outputs;
  ``prim::Loop`` has (int trips, bool condition, carried...) inputs, a body taking (int, carried...) and
  returning (bool, carried...), and outputs typed like the carried values; calls match the callee's signature.
- Types: every other node's output types equal what its operator's type rule gives for its input types.
"""

from __future__ import annotations

from .core import Block, Graph, Node
from .registry import REGISTRY, UNDECLARED, NeedsSpecialization, OpTypeError
from .types import BOOL, INT, TensorType, Type


class VerifyError(AssertionError):
    pass


def compatible(declared: Type, inferred: Type) -> bool:
    """Declared types may be more precise than the rule's (shape inference refines dimensions)."""
    if declared == inferred:
        return True
    if isinstance(declared, TensorType) and isinstance(inferred, TensorType):
        if inferred.dtype is None:
            return True
        return (
            declared.dtype == inferred.dtype
            and declared.rank == inferred.rank
            and all(b is None or a == b for a, b in zip(declared.shape, inferred.shape))
        )
    return False


class Verifier:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.names: set[str] = set()

    def fail(self, node: Node | None, msg: str):
        where = f" at {node.kind}" + (f" ({node.source.short()})" if node and node.source else "") if node else ""
        raise VerifyError(f"graph {self.graph.name}{where}: {msg}")

    def run(self, callees: bool = True) -> None:
        self.block(self.graph.block, set())
        if callees:
            for g in self.graph.subgraphs():  # every reachable graph once (recursive calls come back)
                Verifier(g).run(callees=False)

    def define(self, v, node, visible):
        if v.name in self.names:
            self.fail(node, f"%{v.name} defined twice")
        self.names.add(v.name)
        visible.add(id(v))

    def block(self, block: Block, outer: set) -> None:
        visible = set(outer)
        for p in block.params:
            self.define(p, block.owner, visible)
        for node in block.nodes:
            if node.block is not block:
                self.fail(node, "node's block pointer is stale")
            for i, v in enumerate(node.inputs):
                if id(v) not in visible:
                    self.fail(node, f"%{v.name} is used where its definition does not dominate")
                if not any(u.user is node and u.index == i for u in v.uses):
                    self.fail(node, f"use list of %{v.name} misses this node")
            self.node(node)
            for b in node.blocks:
                self.block(b, visible)
            for o in node.outputs:
                self.define(o, node, visible)
        for v in block.returns:
            if id(v) not in visible:
                self.fail(block.owner, f"block returns %{v.name}, which is not visible there")

    def node(self, node: Node) -> None:
        op = REGISTRY.get(node.kind)
        if op is None:
            self.fail(node, "unknown operator" + (UNDECLARED if not REGISTRY else ""))
        ins = [v.type for v in node.inputs]
        outs = [v.type for v in node.outputs]
        if node.kind == "prim::If":
            if len(ins) != 1 or ins[0] != BOOL or len(node.blocks) != 2:
                self.fail(node, "needs one bool input and two blocks")
            for b in node.blocks:
                self.block_signature(node, b, [], outs)
        elif node.kind == "prim::Loop":
            if len(ins) < 2 or ins[0] != INT or ins[1] != BOOL or len(node.blocks) != 1:
                self.fail(node, "needs (int trips, bool condition, carried...) and one block")
            if len(ins) - 2 != len(outs) or not all(map(compatible, ins[2:], outs)):
                self.fail(node, "carried input types differ from output types")
            self.block_signature(node, node.blocks[0], [INT] + outs, [BOOL] + outs)
        elif node.kind in ("prim::CallFunction", "prim::FusionGroup"):
            callee = node.attrs.get("fn" if node.kind == "prim::CallFunction" else "subgraph")
            if not isinstance(callee, Graph):
                self.fail(node, "fn attribute is not a graph")
            if ins != [v.type for v in callee.inputs] or outs != [v.type for v in callee.outputs]:
                self.fail(node, "arguments or results do not match the callee's signature")
        elif node.blocks:
            self.fail(node, "only prim::If and prim::Loop have blocks")
        elif op.infer is not None:
            try:
                expected = op.result_types(ins, node.attrs)
            except NeedsSpecialization:
                return
            except OpTypeError as e:
                self.fail(node, f"operands {', '.join(map(str, ins))} rejected: {e}")
            if len(expected) != len(outs) or not all(map(compatible, outs, expected)):
                self.fail(
                    node, f"outputs typed ({', '.join(map(str, outs))}), rule gives ({', '.join(map(str, expected))})"
                )

    def block_signature(self, node, block, params, returns) -> None:
        if [p.type for p in block.params] != params:
            self.fail(
                node,
                f"block parameters ({', '.join(str(p.type) for p in block.params)}) should be "
                f"({', '.join(map(str, params))})",
            )
        got = [v.type for v in block.returns]
        # what a block returns may be more precise than the joined output it flows into
        if len(got) != len(returns) or not all(map(compatible, got, returns)):
            self.fail(node, f"block returns ({', '.join(map(str, got))}) should be ({', '.join(map(str, returns))})")


def verify(graph: Graph) -> Graph:
    Verifier(graph).run()
    return graph
