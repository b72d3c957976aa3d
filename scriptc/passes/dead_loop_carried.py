"""dead-loop-carried: remove loop-carried values nobody needs.

A carried value j of a ``prim::Loop`` (initial input ``2 + j``, body parameter ``1 + j``, body return
``1 + j``, output ``j``) is live when its output is used after the loop, or when its body parameter is used
by something live in the body: the loop condition, a live carried value's next value, or a node that must
run anyway (side effects, or may raise: then all its operands are live), including anything used inside a
nested If/Loop (nested control flow is treated as always live). Liveness is computed to a fixed point, so
carried values that only feed their own (or each other's) next values are dead even in cycles.

A dead carried value is removed with its input, parameter, return and output, and the body nodes that only
computed it (removable nodes: no side effect, cannot raise) are deleted. A carried value whose update may
raise (``s = s // d``) stays live: the raise must still happen. Innermost loops first.
"""

from __future__ import annotations

from ..ir.core import Graph, Node
from .analysis import is_removable, loops_post_order, maybe_unbound, remove_input, remove_output, remove_param
from .manager import register


def _live_values(body, live_carried: set[int], unbound: set) -> set[int]:
    """ids of the values the body needs, given the carried indices that are live."""
    live: set[int] = set()
    work = [body.returns[0]] + [body.returns[1 + j] for j in live_carried]
    for node in body.nodes:
        if node.blocks or not is_removable(node, unbound):
            for n in node.walk():
                work.extend(n.inputs)
                for b in n.blocks:
                    work.extend(b.returns)
    while work:
        v = work.pop()
        if id(v) in live:
            continue
        live.add(id(v))
        if v.node is not None and v.node.block is body and is_removable(v.node, unbound):
            work.extend(v.node.inputs)
    return live


def prune(loop: Node, unbound: set) -> bool:
    body = loop.blocks[0]
    n = len(loop.outputs)
    live_carried = {j for j in range(n) if loop.outputs[j].uses}
    while True:
        live = _live_values(body, live_carried, unbound)
        more = {j for j in range(n) if j not in live_carried and id(body.params[1 + j]) in live}
        if not more:
            break
        live_carried |= more
    dead = [j for j in range(n) if j not in live_carried]
    if not dead:
        return False
    for j in reversed(dead):
        remove_input(body.return_node, 1 + j)
    # delete the body nodes that fed only dead values (removable ones with unused outputs), last first
    for node in reversed(list(body.nodes)):
        if not node.blocks and is_removable(node, unbound) and not any(o.uses for o in node.outputs):
            node.destroy()
    for j in reversed(dead):
        p = body.params[1 + j]
        if p.uses:  # still needed by something (cannot happen: it would be live); keep the value carried
            raise AssertionError(f"dead-loop-carried: %{p.name} still used")
        remove_param(body, 1 + j)
        if "reduce" in loop.attrs:  # a prange loop's reduction kinds, one per carried value
            loop.attrs["reduce"] = [k for i, k in enumerate(loop.attrs["reduce"]) if i != j]
        remove_output(loop, j)
        remove_input(loop, 2 + j)
    return True


@register("dead-loop-carried")
def run(graph: Graph) -> bool:
    """Remove loop-carried values (input, block parameter, block return, output) whose output is unused and whose
    parameter only feeds its own next value (or other dead carried values, or nothing); updates that may raise
    or have side effects keep their value live. Innermost loops first."""
    changed = False
    unbound = maybe_unbound(graph)
    for loop in loops_post_order(graph.block):
        changed |= prune(loop, unbound)
    return changed
