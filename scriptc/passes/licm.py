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

A carried value that the body returns unchanged (``for ...: x = x``) is invariant too: its body parameter and
the loop's output are the initial value itself, the same object, whatever the trip count. Their uses read the
initial value and the carried value is removed, so later passes never mistake it for a value the loop makes
(a write through it after the loop must reach the caller's array).
"""

from __future__ import annotations

from ..ir.core import Graph, Node
from .analysis import (
    block_has_side_effects,
    is_removable,
    loops_post_order,
    makes_array,
    maybe_unbound,
    reads_arrays,
    remove_input,
    remove_output,
    remove_param,
)
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


def drop_invariant_carried(loop: Node) -> bool:
    """Remove the carried values the body returns unchanged; their uses read the initial value."""
    body = loop.blocks[0]
    same = [j for j, (p, r) in enumerate(zip(body.params[1:], body.returns[1:])) if p is r]
    for j in reversed(same):
        init = loop.inputs[2 + j]
        remove_input(body.return_node, 1 + j)
        body.params[1 + j].replace_all_uses_with(init)
        loop.outputs[j].replace_all_uses_with(init)
        remove_param(body, 1 + j)
        if "reduce" in loop.attrs:  # a prange loop's reduction kinds, one per carried value
            loop.attrs["reduce"] = [k for i, k in enumerate(loop.attrs["reduce"]) if i != j]
        remove_output(loop, j)
        remove_input(loop, 2 + j)
    return bool(same)


@register("licm")
def run(graph: Graph) -> bool:
    """Hoist loop-invariant nodes (inputs defined outside the loop) out of prim::Loop bodies when they have no
    side effect, cannot raise (a zero-trip loop must not raise) and make no array; array readers only from
    loops without writes; carried values the body returns unchanged become their initial value. Innermost
    loops first."""
    changed = False
    unbound = maybe_unbound(graph)
    for loop in loops_post_order(graph.block):
        changed |= drop_invariant_carried(loop)
        changed |= hoist(loop, unbound)
    return changed
