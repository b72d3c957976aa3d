"""dce: dead code elimination.

Removes, in every block (innermost first, last node first, until nothing changes):

- nodes whose outputs are all unused and that are removable (``analysis.is_removable``: no side effect and
  provably no exception: PURE ops on scalars, RAISES ops in the proven-safe cases such as ``+`` on scalars or
  ``//`` by a nonzero constant), and not reading a possibly unbound local. RAISES nodes that may raise, WRITES and IO
  nodes always stay;
- outputs of ``prim::If`` that are unused (with the matching returns of both blocks);
- a ``prim::If`` with no outputs left whose blocks contain nothing but removable nodes;
- a ``prim::Loop`` whose outputs are all unused and whose body has only removable nodes, when it surely
  terminates: its max trip count is not a constant >= 2**31 (a ``while`` loop's trip count is INT64_MAX; such
  a loop may not terminate, and removing it would turn a hang into a result).

Unused loop-carried values are the job of ``dead-loop-carried``.
"""

from __future__ import annotations

from ..ir.core import Block, Graph, Node
from .analysis import constant_value, is_constant, is_removable, maybe_unbound, remove_input, remove_output
from .manager import register

_SURELY_FINITE = 2**31


def _pure_block(block: Block, unbound: set) -> bool:
    return all(
        is_removable(n, unbound) or (n.blocks and _removable_structure(n, unbound, ignore_uses=True))
        for n in block.nodes
    )


def _removable_structure(node: Node, unbound: set, ignore_uses: bool = False) -> bool:
    if not ignore_uses and any(o.uses for o in node.outputs):
        return False
    if node.kind == "prim::If":
        return all(_pure_block(b, unbound) for b in node.blocks)
    if node.kind == "prim::Loop":
        trips = node.inputs[0]
        if is_constant(trips) and constant_value(trips) >= _SURELY_FINITE:
            return False
        return _pure_block(node.blocks[0], unbound)
    return False


def _prune_if_outputs(node: Node) -> bool:
    changed = False
    for i in reversed(range(len(node.outputs))):
        if not node.outputs[i].uses:
            remove_output(node, i)
            for b in node.blocks:
                remove_input(b.return_node, i)
            changed = True
    return changed


def dce_block(block: Block, unbound: set) -> bool:
    changed = False
    for node in reversed(list(block.nodes)):
        if node.kind == "prim::If":
            changed |= _prune_if_outputs(node)
        for b in node.blocks:
            changed |= dce_block(b, unbound)
        if any(o.uses for o in node.outputs):
            continue
        if is_removable(node, unbound) or (node.blocks and _removable_structure(node, unbound)):
            node.destroy()
            changed = True
    return changed


@register("dce")
def run(graph: Graph) -> bool:
    """Remove unused nodes that have no side effect and cannot raise (RAISES nodes stay unless proven safe;
    WRITES/IO stay), unused prim::If outputs, and side-effect-free If/Loop nodes whose results are unused
    (loops only when surely finite). Recursive into blocks."""
    changed = False
    while dce_block(graph.block, maybe_unbound(graph)):
        changed = True
    return changed
