"""What reverse mode must know about arrays written in place: ``MemoryPlan(graph)``.

The backward recomputes loop bodies and branches instead of saving their values (``autodiff.py``); when the
function writes arrays in place (``x[i] = v``, ``out[a:b] = y``, ``x += y``, ``fill``), memory no longer holds
what a recomputed read saw. So, for every array written somewhere (its *written class*: the array and the views
of it, ``x[i]``, ``x[a:b]``, ``x.T``, ``reshape``):

- each read of its contents in the forward is a *read*: a scalar ``x[i]``, or a copy (snapshot) of the array or
  view where an operator consumes it, taken where the operator runs; reads inside a loop or a branch (which the
  backward recomputes) are recorded on a tape and replayed from it by the recomputation, which skips the writes;
- its adjoint lives in one buffer of its root's shape (the *shadow*), and the adjoint of a view is the same view
  of the shadow: a write ``x[i] = v`` hands ``shadow[i]`` to ``v`` and zeroes it, ``x += y`` hands it to ``y``.

The root of a written class is a parameter or an array the function creates; a written class whose members
merge through control flow (a written array swapped or rebound in a loop, or chosen by an ``if``) is refused.
Two parameters passed the same array are one memory the analysis cannot see: ``GradFunction`` refuses such
calls when the function writes a parameter.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir.core import Block, Graph, Node, Value
from ..ir.registry import REGISTRY
from ..ir.types import TensorType
from .lists import ListPlan

VIEWS = {"aten::select", "aten::slice", "aten::numpy_T", "aten::unsqueeze", "aten::reshape", "aten::diagonal"}
ELEMENT_WRITES = {"aten::setitem"}
REGION_WRITES = {"aten::copy_", "aten::fill_", "aten::masked_put_", "aten::index_put_", "aten::index_add_"}
SHAPE_ONLY = {"aten::size", "aten::dim", "aten::numel", "aten::len"}


def is_write(node: Node) -> bool:
    if node.kind in ELEMENT_WRITES or node.kind in REGION_WRITES:
        return True
    op = REGISTRY.get(node.kind)
    return op is not None and bool(op.extra.get("inplace_of"))


def _is_array(v: Value) -> bool:
    return isinstance(v.type, TensorType)


class MemoryPlan:
    def __init__(self, graph: Graph):
        self.parent: dict[int, Value] = {}  # a view's operand (the next step towards its root)
        self.view_node: dict[int, Node] = {}  # a view's defining node
        self.root_of: dict[int, Value] = {}
        self.merged: set[int] = set()  # roots whose class meets a loop parameter or an if result
        self.written: set[int] = set()  # roots of written classes
        self._merges: list[tuple] = []
        self._classes(graph.block)
        self._writes(graph.block)
        self.active = bool(self.written)
        if self.active:
            self._check_merges()
        self.lists = ListPlan(graph)
        self.list_reads = bool(self.lists.written)  # reads of written lists are replayed in recomputations

    # -- classes ------------------------------------------------------------------------------------------
    def root(self, v: Value) -> Value:
        r = self.root_of.get(id(v))
        if r is None:
            p = self.parent.get(id(v))
            r = v if p is None else self.root(p)
            self.root_of[id(v)] = r
        return r

    def _classes(self, block: Block) -> None:
        for node in block.nodes:
            if node.kind in VIEWS and node.outputs and _is_array(node.output):
                self.parent[id(node.output)] = node.inputs[0]
                self.view_node[id(node.output)] = node
            if node.kind == "prim::Loop":
                body = node.blocks[0]
                for p, init, out in zip(body.params[1:], node.inputs[2:], node.outputs):
                    if _is_array(p):
                        self._merge(init, p, out, *[body.returns[1 + body.params[1:].index(p)]])
            elif node.kind == "prim::If":
                for k, out in enumerate(node.outputs):
                    if _is_array(out):
                        self._merge(out, *[b.returns[k] for b in node.blocks])
            for b in node.blocks:
                self._classes(b)

    def _merge(self, *values: Value) -> None:
        """Values that may be the same memory through control flow: recorded, refused if one is written."""
        self._merges.append(values)

    def _writes(self, block: Block) -> None:
        for node in block.nodes:
            if is_write(node) and _is_array(node.inputs[0]):
                self.written.add(id(self.root(node.inputs[0])))
            for b in node.blocks:
                self._writes(b)

    def _check_merges(self) -> None:
        for group in self._merges:
            written = [v for v in group if self.member(v)]
            if written:
                v = written[0]
                raise CompileError(
                    "grad: an array written in place is rebound in a loop or chosen by an if",
                    v.node.source if v.node is not None else None,
                    "write into one array throughout (or copy it before rebinding: y = x.copy())",
                )

    # -- queries ------------------------------------------------------------------------------------------
    def member(self, v: Value) -> bool:
        """``v`` is (a view of) an array written in place somewhere in the function."""
        return _is_array(v) and id(self.root(v)) in self.written

    def is_root(self, v: Value) -> bool:
        return self.member(v) and id(v) not in self.parent

    def view_path(self, v: Value) -> list[Node]:
        """The view nodes from ``v``'s root to ``v``, in order."""
        path = []
        while id(v) in self.parent:
            path.append(self.view_node[id(v)])
            v = self.parent[id(v)]
        return path[::-1]

    def reads(self, node: Node) -> list[int]:
        """The inputs of ``node`` whose contents it reads from a written array (each a snapshot)."""
        if (
            not self.active
            or node.kind in VIEWS
            or node.kind in SHAPE_ONLY
            or node.kind in ELEMENT_WRITES
            or node.kind == "aten::getitem"
            or node.kind in ("prim::If", "prim::Loop", "prim::Print")
        ):
            return []
        first = 1 if is_write(node) and not REGISTRY[node.kind].extra.get("inplace_of") else 0
        return [k for k in range(first, len(node.inputs)) if self.member(node.inputs[k])]

    def is_scalar_read(self, node: Node) -> bool:
        """A read of one value from written memory: an element of a written array, or a value read from a
        written list (``lists.py``: ``lst[i]``, ``len(lst)``, ``pop``'s result ...)."""
        return (self.active and node.kind == "aten::getitem" and self.member(node.inputs[0])) or (
            self.list_reads and self.lists.read_list(node) is not None
        )

    def written_params(self, graph: Graph) -> list[int]:
        return [k for k, p in enumerate(graph.inputs) if self.member(p)]
