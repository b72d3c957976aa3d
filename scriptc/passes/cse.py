"""cse: common subexpression elimination, scoped by dominance.

Walks the blocks in order with a scoped table: a node that matches an earlier node (same kind, same input
values, same attributes, same output types) visible from it (earlier in the same block or in an enclosing
block) is replaced by that node's outputs. Entries made in a nested block are dropped when the block ends, so
a value computed in an enclosing block can replace one in a nested block, never the reverse.

Which nodes: non-structural ops with effect PURE or RAISES. A RAISES node may be merged with the identical
node that dominates it: the dominating one ran first with the same operands, so had it raised, the later one
would never run. Never merged:

- WRITES/IO nodes, calls, prim::If/prim::Loop;
- nodes producing arrays (two evaluations give two distinct arrays: merging would alias them);
- nodes reading array contents across a possible write: such entries live in a table of their own, local to
  one block (never seen from nested blocks, where a loop could have written since), and cleared at every node
  that may write (WRITES, IO, calls, or an If/Loop containing one). Shape queries (size, dim, numel) do not
  read contents and are merged freely.
Attributes compare by type and ``repr`` (so ``0.0`` and ``-0.0``, ``1`` and ``True`` differ); callee graphs by
identity.
"""

from __future__ import annotations

from ..ir.core import Block, Graph, Node
from ..ir.registry import Effect
from .analysis import STRUCTURAL, effect, has_side_effects, makes_array, reads_arrays
from .manager import register


def _attr_key(v):
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_attr_key(x) for x in v))
    if isinstance(v, (int, float, bool, str, type(None))):
        return (type(v).__name__, repr(v))
    return ("id", id(v))


def node_key(node: Node):
    attrs = node.attrs
    return (
        node.kind,
        tuple(id(v) for v in node.inputs),
        tuple(sorted((k, _attr_key(a)) for k, a in attrs.items())) if attrs else (),
        tuple(o.type for o in node.outputs),
    )


class _CSE:
    def __init__(self):
        self.changed = False

    def block(self, block: Block, scope: dict) -> None:
        table = dict(scope)  # array-independent entries: visible in nested blocks
        memory: dict = {}  # entries reading arrays: this block only, until a write
        for node in list(block.nodes):
            if node.blocks or node.kind in STRUCTURAL or effect(node) >= Effect.WRITES:
                for b in node.blocks:
                    self.block(b, table)
                if has_side_effects(node):
                    memory.clear()
                continue
            if makes_array(node):
                continue
            t = memory if reads_arrays(node) else table
            key = node_key(node)
            prev = t.get(key)
            if prev is None:
                t[key] = node
                continue
            for o, p in zip(list(node.outputs), prev.outputs):
                o.replace_all_uses_with(p)
            node.destroy()
            self.changed = True


@register("cse")
def run(graph: Graph) -> bool:
    """Common subexpression elimination of PURE/RAISES ops with identical kind, inputs and attributes, scoped by
    dominance (an enclosing block's value replaces a nested block's, never the reverse). Array-producing
    nodes are never merged; array-reading nodes only within one block with no possible write between."""
    c = _CSE()
    c.block(graph.block, {})
    return c.changed
