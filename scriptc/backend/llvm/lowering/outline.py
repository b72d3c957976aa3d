"""Outlining: in a function with many loop nests, each fusion group, fused loop, matrix product and reduction
along an axis becomes a function of its own (``noinline``), called where the node was.

Why: LLVM's optimisation and, above all, its code generation (machine scheduling, register coalescing and
allocation) grow faster than linearly with a function's size. The digits MLP's training step, its forty fusion
groups lowered inline, was one function of ~24,000 lines of IR that took 12.4 s to compile; outlined (with the
unwind table of unwind.py), 6.0 s. The price is a call per node (a few ns, next to the node's allocation and loops), so
functions with only a few such nodes, the usual kernels, keep them inline.

An outlined node is lowered as a graph of its own (its inputs as parameters, constants copied in so that they
stay constants, its outputs as the result, a tuple for several), by the same ``FunctionLowering`` as any callee:
arguments are borrowed, the result is owned, an error is a status the caller propagates.

Equal nodes share one function: equal graphs, source positions and names aside (``np.var(x)`` and ``np.std(x)``
have the same two groups; the MLP training step's 61 outlined nodes are 22 functions, 25 when the values' names
counted, as Adam's update of each layer names its values after that layer's). Their
errors differ only in the position they name, so each call site turns the codes the shared function returns
into its own place's (``Shared.relocation``).
"""

from __future__ import annotations

import os

from ....ir.builder import Builder
from ....ir.core import Graph, Node
from ....ir.printer import print_graph
from ....ir.types import BOOL, TensorType, TupleType
from .common import I1, i32, leaves, out_struct
from ..runtime.errors import ERROR_TABLE
from . import summation

OUTLINED_KINDS = frozenset({"prim::FusionGroup", "prim::FusedLoop", "aten::matmul"})
REDUCTIONS = frozenset({"aten::sum", "aten::mean", "aten::prod", "aten::max", "aten::min"})
# a function with at least this many outlinable nodes outlines them (SCRIPTC_OUTLINE_MIN: to test the path)
OUTLINE_MIN = int(os.environ.get("SCRIPTC_OUTLINE_MIN", "6"))


def outlinable(node: Node) -> bool:
    """A node lowered to loop nests of its own: fusion groups, fused loops, matrix products, reductions of an
    array along an axis (but sums and means, whose loops are compiled once per process)."""
    if node.kind in REDUCTIONS:  # (a float sum or any mean along an axis is a call already: sum_reductions.py)
        return (
            "axis" in node.attrs
            and isinstance(node.inputs[0].type, TensorType)
            and not summation.pairwise_reducible(node.kind.split("::")[1], node.inputs[0].type.dtype)
        )
    return node.kind in OUTLINED_KINDS


def outlinable_count(graph: Graph) -> int:
    return sum(map(outlinable, graph.walk()))


class NodeGraph(Graph):
    """The graph of an outlined node."""


def node_graph(node: Node, name: str) -> NodeGraph:
    """A graph computing ``node`` alone: non-constant inputs become parameters, constants are copied."""
    g = NodeGraph(name)
    body = Builder.at_end(g.block)
    inputs = []
    for v, is_param in zip(node.inputs, node_params(node)):
        if is_param:
            inputs.append(g.add_input(v.type))  # unnamed: equal nodes print (and key) alike
        else:
            src = v.node
            inputs.append(body.op("prim::Constant", (), [v.type], src.attrs, source=src.source).output)
    copy = body.op(node.kind, inputs, [o.type for o in node.outputs], node.attrs, source=node.source)
    if len(copy.outputs) == 1:
        g.block.add_return(copy.output)
    else:
        result_t = TupleType(tuple(o.type for o in copy.outputs))
        pack = body.op("prim::TupleConstruct", copy.outputs, [result_t])
        g.block.add_return(pack.output)
    return g


def structure_key(g: Graph) -> str:
    """Equal for nodes whose outlined functions are the same code: the printed graph (operator, types,
    attributes, constants, a fusion group's body) without source positions or names (a layer's matrix products,
    written once in a helper, share one function; so do ``np.var(x)`` and ``np.std(x)`` on two lines, and the
    Adam update of each of a network's weight matrices)."""
    return "outlined:" + print_graph(g, sources=False, anonymous=True)


def node_sources(g: Graph) -> list:
    """The source position of each node of an outlined node's graph and its subgraphs, in printing order."""
    return [n.source for graph in (g, *g.subgraphs()) for n in graph.walk()]


class Shared:
    """An outlined function, the source positions of the nodes it was made from, and the error codes it (and
    what it calls) may return."""

    def __init__(self, fn, sources: list, codes: set[int]):
        self.fn, self.sources, self.codes = fn, sources, codes

    def relocation(self, sources: list) -> dict[int, int] | None:
        """{code: the code of that error at ``sources``}, for the codes that differ there; None when the two
        graphs' positions do not correspond one to one (then the node gets a function of its own)."""
        places: dict = {}
        for here, there in zip(self.sources, sources):
            if (here is None) != (there is None) or places.setdefault(here, there) != there:
                return None
        moved = {code: ERROR_TABLE.relocated(code, places) for code in sorted(self.codes)}
        return {code: to for code, to in moved.items() if to != code}


class Outlining:
    """Part of FunctionLowering's core: operators lowered as calls to functions of their own (big graphs)."""

    def outlines(self, node: Node) -> bool:
        if not self.mod.target.outline or not outlinable(node) or self.atomic_refcounts:
            return False  # (a prange body's nodes count references atomically: they stay in its kernel)
        decided = getattr(self, "_outlining", None)
        if decided is None:  # (an outlined node's own graph lowers it inline)
            decided = self._outlining = (
                not isinstance(self.graph, NodeGraph) and outlinable_count(self.graph) >= OUTLINE_MIN
            )
        return decided

    def lower_outlined(self, node: Node) -> list[list]:
        g = node_graph(node, f"{self.graph.name}.{node.kind.split('::')[1]}")
        key, sources = structure_key(g), node_sources(g)
        shared = self.mod._outlined.get(key)
        relocation = shared.relocation(sources) if shared is not None else None
        if relocation is None:
            if shared is not None:  # equal code, but not to be told apart by where it raises
                key += "\n" + print_graph(g)
                shared = self.mod._outlined.get(key)
            if shared is None:
                with ERROR_TABLE.record() as codes:
                    fn = self.mod.function_for(g)
                fn.attributes.add("noinline")
                shared = self.mod._outlined[key] = Shared(fn, sources, codes)
                self.mod.finished()
            relocation = {}
        args = [x for v, p in zip(node.inputs, node_params(node)) if p for x in self.get(v)]
        result_t = g.outputs[0].type
        out = self.alloca(out_struct(result_t, self.mod.module))
        status = self.b.call(shared.fn, args + [out])
        with self.b.if_then(self.b.icmp_signed("!=", status, i32(0)), likely=False):
            for code, to in relocation.items():  # this place's errors
                status = self.b.select(self.b.icmp_signed("==", status, i32(code)), i32(to), status)
            self.fail(status)  # the outlined function has released its own references
        vals = []
        for k, t in enumerate(leaves(result_t)):
            x = self.b.load(self.b.gep(out, [i32(0), i32(k)], inbounds=True))
            vals.append(self.b.trunc(x, I1) if t == BOOL else x)  # bools travel as i8 in result structs
        outs = []
        for o in node.outputs:
            n = len(leaves(o.type))
            outs.append(vals[:n])
            vals = vals[n:]
        return outs


def node_params(node: Node) -> list[bool]:
    """Which of ``node``'s inputs are parameters of its outlined graph (constants are copied in)."""
    return [not (v.node is not None and v.node.kind == "prim::Constant") for v in node.inputs]
