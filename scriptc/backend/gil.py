"""Whether native code for a graph runs with the GIL released although ``nogil`` was not asked for: a graph with a
parallel loop that touches no Python object. An analysis of the graph alone (no LLVM), decided before the
machine code is compiled or taken from the on-disk cache."""

from __future__ import annotations

from ..ir.core import Graph
from ..ir.types import STR, ListType, TupleType


def releases_gil(graph: Graph) -> bool:
    """Whether a graph has a parallel loop and touches no Python object (no str anywhere, callees included):
    then it runs with the GIL released, like ``nogil=True``."""
    graphs = [graph, *graph.subgraphs()]
    if not any(n.attrs.get("parallel") for g in graphs for n in g.walk()):
        return False  # (most graphs: their types need no look)
    for g in graphs:
        if any(_holds_str(v.type) for v in g.inputs):
            return False
        for n in g.walk():
            if any(_holds_str(v.type) for v in list(n.inputs) + list(n.outputs)):
                return False
    return True


def _holds_str(t) -> bool:
    if t == STR:
        return True
    if isinstance(t, ListType):
        return _holds_str(t.elem)
    return isinstance(t, TupleType) and any(_holds_str(e) for e in t.elems)
