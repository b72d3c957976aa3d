"""Copying blocks and graphs with value remapping.

``clone_nodes_into`` copies a block's nodes (nested blocks included) into another block of the same or another
graph at a given position: inputs are looked up in ``value_map`` (a dict from ``id`` of an old Value to the new
Value; values not in the map are used as they are, i.e. they must be visible at the destination), outputs and
nested block parameters get fresh names from the destination graph (``Graph.fresh_name``, hinted by the old
names), and the map is extended with every value defined by the copy. It returns the copies of the block's
returns. Attributes are copied shallowly: a callee graph (``fn=...``) is shared, not copied.

``clone_graph`` copies a whole graph, keeping every value name (callee graphs stay shared): tests run a pass on
the copy and interpret both.
"""

from __future__ import annotations

from .core import Block, Graph, Node, Value


def _hint(name: str) -> str | None:
    return None if name.isdigit() else name


def _lookup(value_map: dict, v: Value) -> Value:
    return value_map.get(id(v), v)


class _Namer:
    """Names for copied values: fresh ones (hinted by the old name), or the old names kept exactly."""

    def __init__(self, graph: Graph, keep: bool):
        self.graph, self.keep = graph, keep

    def name(self, old: str) -> str:
        if self.keep:
            self.graph.claim_name(old)
            return old
        return self.graph.fresh_name(_hint(old))


def _clone_node(node: Node, dst: Block, at: int | None, value_map: dict, namer: _Namer) -> Node:
    new = Node(node.kind, [_lookup(value_map, v) for v in node.inputs], (), dict(node.attrs), source=node.source)
    dst.append(new, at)
    for o in node.outputs:
        nv = Value(o.type, namer.name(o.name), node=new)
        new.outputs.append(nv)
        value_map[id(o)] = nv
    for b in node.blocks:
        nb = new.add_block()
        for p in b.params:
            np_ = Value(p.type, namer.name(p.name), block=nb)
            nb.params.append(np_)
            value_map[id(p)] = np_
        _clone_body(b, nb, None, value_map, namer)
        for r in b.returns:
            nb.add_return(_lookup(value_map, r))
    return new


def _clone_body(src: Block, dst: Block, at: int | None, value_map: dict, namer: _Namer) -> list[Node]:
    made = []
    for n in src.nodes:
        made.append(_clone_node(n, dst, at, value_map, namer))
        if at is not None:
            at += 1
    return made


def clone_nodes_into(src: Block, dst: Block, at: int | None, value_map: dict) -> list[Value]:
    """Copy ``src``'s nodes into ``dst`` before index ``at`` (None: at the end); returns ``src``'s returns
    mapped through ``value_map`` (which the copy extends)."""
    _clone_body(src, dst, at, value_map, _Namer(dst.graph, keep=False))
    return [_lookup(value_map, r) for r in src.returns]


def clone_node_before(node: Node, dst: Block, at: int | None, value_map: dict) -> Node:
    """Copy one node (with its blocks) into ``dst`` at index ``at``; fresh names."""
    return _clone_node(node, dst, at, value_map, _Namer(dst.graph, keep=False))


def clone_graph(graph: Graph) -> Graph:
    """A copy of ``graph`` with the same value names; callee graphs are shared, not copied."""
    g = Graph(graph.name)
    namer = _Namer(g, keep=True)
    value_map: dict = {}
    for p in graph.inputs:
        v = Value(p.type, namer.name(p.name), block=g.block)
        g.block.params.append(v)
        value_map[id(p)] = v
    _clone_body(graph.block, g.block, None, value_map, namer)
    for r in graph.outputs:
        g.block.add_return(_lookup(value_map, r))
    g.restore_namer(graph.namer_state())  # the same names are taken: fresh names continue alike
    return g
