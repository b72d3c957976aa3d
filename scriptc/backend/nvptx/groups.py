"""Which fusion groups of a GPU signature run as kernels, and as which kind of kernel.

- a **grid group** (codegen.py): every result is either an array stored per element or a full reduction of the
  group's elements, all over one iteration shape: element-wise chains, chains ending in a reduction, and the
  multi-output groups of the fusion pass (sibling consumers of one producer: several arrays, several reductions,
  or a mix), and writes into an operand (``into``);
- an **axis reduction** (axis_reduce.py): one reduction along an axis, alone in its group;
- a **matrix product** (matmul.py): ``@`` / ``np.dot`` / ``np.matmul`` alone in its group.

Any other group with device operands is refused by the executor (``GpuUnsupported``), never run on the host.
"""

from __future__ import annotations

from ...ir.core import Graph, Node
from ...ir.registry import REGISTRY
from ...ir.types import TensorType

GPU_REDUCTIONS = {"aten::sum", "aten::mean", "aten::prod", "aten::max", "aten::min", "aten::any", "aten::all"}
PRODUCTS = {"aten::matmul", "aten::dot"}
STORE, REDUCE = "store", "reduce"


class GpuUnsupported(Exception):
    """A node this version cannot run on the GPU (says which and why)."""


def gpu_groups(graph: Graph) -> list[Node]:
    """The fusion groups of a graph (and of its blocks) that run as kernels, in program order."""
    return [n for n in graph.walk() if n.kind == "prim::FusionGroup" and runs_on_gpu(n)]


def runs_on_gpu(node: Node) -> bool:
    return grid_results(node) is not None or axis_reduction(node) is not None or matrix_product(node) is not None


def full_reduction(v) -> Node | None:
    """The node computing ``v`` when it is a full reduction (no axis) of an array of known rank."""
    n = v.node
    if n is None or n.kind not in GPU_REDUCTIONS or n.attrs.get("axis") is not None or isinstance(v.type, TensorType):
        return None
    src = n.inputs[0].type
    return n if isinstance(src, TensorType) and src.rank is not None else None


def grid_results(node: Node) -> list[tuple[str, object]] | None:
    """Per result of a grid group, in the group's output order: (STORE, the body's value), stored element by
    element into a new array (or into the ``into`` operand), or (REDUCE, the reduction node), accumulated over
    the elements. None when the group is not one: a result of another kind, or values of different ranks
    (the group's one loop runs over one shape; the fusion pass only groups values of the same shape)."""
    sub = node.attrs["subgraph"]
    into = node.attrs.get("into")
    if into is not None and (len(sub.outputs) != 1 or node.outputs):
        return None
    results, ranks = [], set()
    for k, v in enumerate(sub.outputs):
        reduction = full_reduction(v)
        if reduction is not None:
            results.append((REDUCE, reduction))
            ranks.add(reduction.inputs[0].type.rank)
            continue
        if (
            v.node is not None
            and REGISTRY.get(v.node.kind) is not None
            and REGISTRY[v.node.kind].extra.get("reduction")
        ):
            return None  # along an axis, or an arg reduction
        t = node.inputs[into].type if into is not None else node.outputs[k].type
        if not isinstance(t, TensorType) or t.rank is None:
            return None
        results.append((STORE, v))
        ranks.add(t.rank)
    return results if len(ranks) == 1 else None


def grid_rank(node: Node) -> int:
    """The rank of a grid group's iteration shape (its results' common rank)."""
    kind, x = grid_results(node)[0]
    if kind == REDUCE:
        return x.inputs[0].type.rank
    into = node.attrs.get("into")
    return (node.inputs[into] if into is not None else node.outputs[0]).type.rank


def axis_reduction(node: Node) -> Node | None:
    """The group's reduction along an axis (``np.sum(x, axis=1)``, ...), when that is all the group is."""
    sub = node.attrs["subgraph"]
    root = sub.outputs[0].node if len(sub.outputs) == 1 else None
    if root is None or root.kind not in GPU_REDUCTIONS or root.attrs.get("axis") is None or len(sub.nodes) != 1:
        return None
    return root if isinstance(root.inputs[0].type, TensorType) and root.inputs[0].type.rank else None


def matrix_product(node: Node) -> Node | None:
    """The group's matrix product (``a @ b``, ``np.dot``), when that is all the group is: operands of rank >= 1
    (a 0-d ``np.dot`` operand is a multiplication, which the element-wise path does not see here)."""
    sub = node.attrs["subgraph"]
    root = sub.outputs[0].node if len(sub.outputs) == 1 else None
    if root is None or root.kind not in PRODUCTS or len(sub.nodes) != 1:
        return None
    ok = all(isinstance(v.type, TensorType) and v.type.rank and v.type.known for v in root.inputs)
    return root if ok else None


def describe(node: Node) -> str:
    """A group as an error message names it: its operators and its line."""
    members = [n.kind for n in node.attrs["subgraph"].nodes if n.kind != "prim::Constant"]
    shown = ", ".join(dict.fromkeys(members)) or "a copy"
    where = f" at {node.source.short()}" if node.source is not None else ""
    return f"the fusion group ({shown}){where}"
