"""unswitch: loop unswitching. A ``prim::If`` at the top level of a loop body whose condition is defined outside
the loop takes the same branch in every iteration; the loop is copied into both branches of one If before it,
each copy keeping only that branch's nodes:

    loop:                          if c:
        ...                            loop: ...; <then-nodes>; ...
        if c: A else: B     ->     else:
        ...                            loop: ...; <else-nodes>; ...

so each copy is straight-line code that fusion can join across where the If stood (a gradient's test for a
broadcast operand, ``x.shape[0] == 1``, is one such If in a training loop). The condition's computation is first
hoisted out of the loop when it is loop-invariant (``licm.hoist``).

Assumes: the If's condition is loop-invariant exactly when it is defined outside the loop (SSA). Loops whose body
has more than ``MAX_BODY`` nodes are left alone, and at most ``MAX_UNSWITCH`` conditions are taken out of one loop
(each doubles its code). A prange loop stays one loop.
"""

from __future__ import annotations

from ..ir.builder import Builder
from ..ir.clone import clone_nodes_into
from ..ir.core import Block, Graph, Node
from .analysis import count_nodes, inline_if_branch, is_removable, loops_post_order, maybe_unbound
from .licm import _defined_inside, hoist
from .manager import register

MAX_BODY = 200
MAX_UNSWITCH = 2


def _invariant_if(loop: Node) -> Node | None:
    for node in loop.blocks[0].nodes:
        if node.kind == "prim::If" and not _defined_inside(node.inputs[0], loop) and not _dead(node):
            return node
    return None


def _dead(node: Node) -> bool:
    """An If whose outputs nothing uses and whose blocks do nothing (one that folding emptied, left for dce)."""
    return not any(o.uses for o in node.outputs) and all(is_removable(n) for b in node.blocks for n in b.walk())


def _copy_loop_into(loop: Node, dst: Block) -> Node:
    """A copy of ``loop`` at the end of ``dst`` (which is inside the block ``loop`` is in)."""
    holder = Block(loop.block.graph)
    holder.nodes.append(loop)  # clone_nodes_into copies a block's nodes: give the loop one of its own
    try:
        clone_nodes_into(holder, dst, None, {})
    finally:
        holder.nodes.clear()
    return dst.nodes[-1]


def unswitch(loop: Node, condition_if: Node) -> list[Node]:
    switch = Builder.before(loop).op(
        "prim::If", [condition_if.inputs[0]], [o.type for o in loop.outputs], source=condition_if.source
    )
    then, other = switch.add_block(), switch.add_block()
    copies = []
    for taken, branch in ((0, then), (1, other)):
        copy = _copy_loop_into(loop, branch)
        copies.append(copy)
        mine = copy.blocks[0].nodes[loop.blocks[0].nodes.index(condition_if)]
        inline_if_branch(mine, taken)
        for o in copy.outputs:
            branch.add_return(o)
    for old, new in zip(list(loop.outputs), switch.outputs):
        new.name, old.name = old.name, new.name
        old.replace_all_uses_with(new)
    loop.destroy()
    return copies


@register("unswitch")
def run(graph: Graph) -> bool:
    """Copy a loop into both branches of an If on a loop-invariant condition tested in its body (at most twice
    per loop, bodies of at most 200 nodes), so each copy's body has no branch there."""
    unbound = maybe_unbound(graph)
    work = [(loop, 0) for loop in loops_post_order(graph.block) if not loop.attrs.get("parallel")]
    changed = False
    while work:
        loop, depth = work.pop()
        hoist(loop, unbound)
        cond_if = _invariant_if(loop) if count_nodes(loop.blocks[0]) <= MAX_BODY else None
        if cond_if is None or depth >= MAX_UNSWITCH:
            continue
        work += [(copy, depth + 1) for copy in unswitch(loop, cond_if)]
        changed = True
    return changed
