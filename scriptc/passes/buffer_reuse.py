"""buffer-reuse: a loop-carried array updated by an element-wise expression is updated in place.

For ``x = x + 1.0`` in a loop, where the iteration's ``x`` is used only by that expression and the result is
carried on as the next ``x``, the expression (a ``prim::FusionGroup``, made here for a single operator) gets
the attribute ``reuse=k``: its result may be written into its input ``k``. Whether it is, is decided at run
time by the backend: only when that buffer is referenced by nothing else (reference count 1: no view, no
alias, not the caller's array) and has the result's shape — so no alias can ever observe the update.

Assumes the fusion pass has run (it reuses its outlining). The interpreter ignores the attribute.
"""

from __future__ import annotations

from ..ir.core import Graph, Node
from ..ir.types import TensorType
from .fusion import outline, fusible
from .manager import register


def _candidate(node: Node) -> int | None:
    """The input index a node may overwrite, or None."""
    block = node.block
    loop = block.owner
    if loop is None or loop.kind != "prim::Loop" or len(node.outputs) != 1:
        return None
    out = node.output
    if not isinstance(out.type, TensorType):
        return None
    for k, v in enumerate(node.inputs):
        if v.block is not block or v not in block.params or len(v.uses) != 1:
            continue
        if not isinstance(v.type, TensorType) or v.type.dtype != out.type.dtype or v.type.rank != out.type.rank:
            continue
        slot = block.params.index(v)  # params are (iteration, carried...); returns are (condition, carried...)
        if slot > 0 and block.returns[slot] is out:
            return k
    return None


@register("buffer-reuse")
def reuse_buffers(graph: Graph) -> bool:
    """Mark element-wise updates of loop-carried arrays that may write in place (``reuse=k``)."""
    changed = False
    counter = [sum(1 for n in graph.walk() if n.kind == "prim::FusionGroup") + 100]
    for node in list(graph.walk()):
        if node.block is None:
            continue
        if node.kind == "prim::FusionGroup" and "reuse" not in node.attrs:
            k = _candidate(node)
            if k is not None:
                node.attrs["reuse"] = k
                changed = True
        elif fusible(node):
            k = _candidate(node)
            if k is not None:
                reused = node.inputs[k]
                group = outline([node], counter)
                # the group's own index: outlining copies scalar constants in, so `3 * x` has one input, x
                group.attrs["reuse"] = group.inputs.index(reused)
                changed = True
    return changed
