"""licm: loop-invariant code motion.

Hoists out of each ``prim::Loop`` body, to just before the loop, the body's top-level nodes whose inputs are
all defined outside the loop (or by nodes already hoisted) and that are safe to compute unconditionally and
once:

- removable (``analysis.is_removable``): no side effect and provably no exception. A node that may raise
  (``a // b``, an array read, a math function) is not hoisted: the loop may run zero times, and then it must
  not raise;
- reading no possibly unbound local (``analysis.maybe_unbound``): hoisted above its prim::AssertBound, an op on
  the unbound marker would raise TypeError instead of the UnboundLocalError;
- producing no array (each iteration would make its own array; one hoisted array would be shared);
- reading array contents only if the loop contains no node that may write (WRITES, IO, calls).

Nodes inside nested If blocks stay (they run conditionally). Loops are processed innermost first, so a value
hoisted out of an inner loop can leave the outer loop too.
"""
from __future__ import annotations

from ..ir.core import Graph, Node
from .analysis import (block_has_side_effects, is_removable, loops_post_order, makes_array, maybe_unbound,
                       reads_arrays)
from .manager import register


def _defined_inside(v, loop: Node) -> bool:
    """``v`` is defined in one of ``loop``'s blocks (at any depth)."""
    return any(v.owning_block.is_within(b) for b in loop.blocks)


def hoist(loop: Node, unbound: set) -> bool:
    body = loop.blocks[0]
    writes = block_has_side_effects(body)
    changed = False
    for node in list(body.nodes):
        if node.blocks or not is_removable(node, unbound) or makes_array(node):
            continue
        if writes and reads_arrays(node):
            continue
        if any(_defined_inside(v, loop) for v in node.inputs):
            continue
        body.nodes.remove(node)
        parent = loop.block
        parent.nodes.insert(parent.nodes.index(loop), node)
        node.block = parent
        changed = True
    return changed


@register("licm")
def run(graph: Graph) -> bool:
    """Hoist loop-invariant nodes (inputs defined outside the loop) out of prim::Loop bodies when they have no
    side effect, cannot raise (a zero-trip loop must not raise) and make no array; array readers only from
    loops without writes. Innermost loops first."""
    changed = False
    unbound = maybe_unbound(graph)
    for loop in loops_post_order(graph.block):
        changed |= hoist(loop, unbound)
    return changed
