"""device-groups: every array operator a GPU signature runs on the device becomes a ``prim::FusionGroup``, the
one node kind the device executor launches as a kernel.

- a lone element-wise operator or full reduction: a group of one;
- ``aten::clone`` (``x.copy()``) and ``aten::to`` (``astype``): a group whose result is its operand, stored in
  the result's dtype;
- an axis reduction (``np.sum(x, axis=1)``, ...): a group of the reduction alone;
- a matrix product (``a @ b``, ``np.matmul``, ``np.dot``) of arrays of rank >= 1: a group of the product alone;
- a write into an existing array: ``x += y`` (``aten::add_``, every in-place operator), ``x[a:b] = y``
  (``aten::copy_`` of a view) and ``x.fill(v)``: a group with ``into=0`` and no result, whose body computes the
  value to store into its first operand (the destination; the body reads it only if the operator does, as
  ``x += y`` does), converted to the destination's dtype as NumPy converts on assignment.

Runs on the optimized graph of GPU signatures only (``ScriptFunction.gpu_graph_for_types``): the CPU lowers
these operators directly. Assumes array types of known dtype and rank.
"""

from __future__ import annotations

from ..ir.builder import Builder
from ..ir.core import Graph, Node
from ..ir.registry import REGISTRY
from ..ir.types import TensorType
from .fusion import full_reduction, fusible, outline

COPIES = {"aten::clone", "aten::to"}
PRODUCTS = {"aten::matmul", "aten::dot"}
AXIS_REDUCTIONS = {"aten::sum", "aten::mean", "aten::prod", "aten::max", "aten::min", "aten::any", "aten::all"}


def outline_for_device(graph: Graph) -> bool:
    counter = [
        1
        + max(
            (int(g.attrs["subgraph"].name.rsplit("_", 1)[1]) for g in graph.walk() if g.kind == "prim::FusionGroup"),
            default=-1,
        )
    ]
    changed = False
    for node in list(graph.walk()):
        if fusible(node) or full_reduction(node) or axis_reduction(node) or product(node):
            outline([node], counter)
        elif node.kind in COPIES and _known(node.inputs[0]):
            _group(node, counter, node.inputs, lambda sub: sub.inputs[0], node.output.type)
        elif _write(node):
            _group(node, counter, node.inputs, lambda sub: _stored_value(node, sub), None)
        else:
            continue
        changed = True
    return changed


def axis_reduction(node: Node) -> bool:
    return (
        node.kind in AXIS_REDUCTIONS
        and node.attrs.get("axis") is not None
        and _known(node.inputs[0])
        and isinstance(node.output.type, TensorType)
    )


def product(node: Node) -> bool:
    return node.kind in PRODUCTS and all(_known(v) and v.type.rank >= 1 for v in node.inputs)


def _write(node: Node) -> bool:
    op = REGISTRY.get(node.kind)
    if op is None or not (op.extra.get("inplace_of") or node.kind in ("aten::copy_", "aten::fill_")):
        return False
    if (
        node.kind == "aten::copy_"
        and isinstance(node.inputs[1].type, TensorType)
        and node.inputs[1].type.rank > node.inputs[0].type.rank
    ):
        return False  # a source with extra leading length-1 axes: no kernel yet (GpuUnsupported)
    return _known(node.inputs[0]) and all(_known(v) or v.type.is_scalar for v in node.inputs[1:])


def _known(v) -> bool:
    return isinstance(v.type, TensorType) and v.type.known


def _stored_value(node: Node, sub: Graph):
    """The body's value to store: the out-of-place operator for ``x op= y``, else the source operand."""
    inplace_of = REGISTRY[node.kind].extra.get("inplace_of")
    if inplace_of is None:
        return sub.inputs[1]
    (t,) = REGISTRY[inplace_of].result_types([v.type for v in sub.inputs], {})
    return Builder.at_end(sub.block).op(inplace_of, sub.inputs, [t], source=node.source).output


def _group(node: Node, counter: list[int], operands, body, result_type) -> Node:
    """Replace ``node`` by a group over ``operands`` whose body returns ``body(sub)``; ``result_type`` None
    makes a group that stores into its first operand (``into=0``) and has no result."""
    sub = Graph(f"prim::FusionGroup_{counter[0]}")
    counter[0] += 1
    for v in operands:
        sub.add_input(v.type, v.name.split(".")[0] if not v.name.isdigit() else None)
    sub.block.add_return(body(sub))
    attrs = {"subgraph": sub} if result_type is not None else {"subgraph": sub, "into": 0}
    group = Builder.before(node).op(
        "prim::FusionGroup", operands, [result_type] if result_type is not None else [], attrs, source=node.source
    )
    if result_type is not None:
        group.output.name, node.output.name = node.output.name, group.output.name
        node.output.replace_all_uses_with(group.output)
    node.destroy()
    return group
