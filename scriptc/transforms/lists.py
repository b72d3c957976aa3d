"""Lists in reverse mode: lists written in place (``append``, ``lst[i] = v``, ``insert``, ``pop``) are memory, as
arrays written in place are (``memory.py``, ``inplace.py``).

Which lists (``ListPlan``): the list values of the function grouped into classes of values that may be one list
object (loop-carried and branch-merged values, lists put in and taken out of tuples); a class is *written* when
one of its values is written.

- Forward and recomputation. The backward recomputes loop bodies and branches; it must not redo a write to a
  list made outside what it recomputes (the list holds its final contents then), and a read of such a list
  (``lst[i]``, ``len(lst)``, ``pop``'s value) must see what the forward saw. So each read of a written list
  inside a loop or a branch goes on a tape and is replayed (``inplace.read``), and those writes are skipped. A
  list made inside what is recomputed is made again: its writes and reads run as they did.
- Tapes (``prim::ListConstruct[tape=True]``: the lists reverse mode itself records loop values on) are
  appended to and then read by non-negative index only, after all their appends: their reads need no replay.
  Marked, a gradient graph can be differentiated again (``grad(grad(f))``): its tapes are lists like any other.
- Backward (``ListMixin``). A written list that a derivative flows through (a float or float array was written
  into it) has an adjoint list, its *shadow*, as long as the list at each point of the backward: made of zeros
  once the forward of the block that makes the list has run, then, visiting the list's operations last first:
  a read ``lst[i]`` adds its adjoint into ``shadow[i]``; ``append(v)`` takes the shadow's last entry off as
  ``v``'s adjoint; ``lst[i] = v`` hands ``shadow[i]`` to ``v`` and zeroes it; ``insert(i, v)`` takes entry
  ``i`` off; ``pop(i)`` puts its result's adjoint back at ``i``. Such a list must be one object throughout (not
  rebound in a loop, chosen by an if, or kept in a tuple): otherwise a CompileError.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir.core import Block, Graph, Node, Value
from ..ir.types import FLOAT, INT, ListType, TupleType
from .emitter import Emitter, differentiable

LIST_WRITES = {"aten::append": 1, "aten::list_setitem": 2, "aten::insert": 2, "aten::pop": None}  # -> value input
_STRUCTURAL = {"prim::TupleConstruct", "prim::TupleIndex", "prim::TupleUnpack", "prim::If", "prim::Loop"}


def is_tape(v: Value) -> bool:
    node = v.node
    return node is not None and node.kind == "prim::ListConstruct" and bool(node.attrs.get("tape"))


def is_list_write(node: Node) -> bool:
    return node.kind in LIST_WRITES and bool(node.inputs) and isinstance(node.inputs[0].type, ListType)


def _holds_list(t) -> bool:
    return isinstance(t, ListType) or isinstance(t, TupleType) and any(map(_holds_list, t.elems))


class ListPlan:
    """The list values of a graph in classes that may be one object (union-find), and the written classes."""

    def __init__(self, graph: Graph):
        self.parent: dict[int, Value] = {}
        self.values: dict[int, Value] = {}
        self._visit(graph.block)
        for v in graph.inputs:
            self._add(v)
        self.members: dict[int, list[Value]] = {}
        for v in self.values.values():
            self.members.setdefault(id(self.find(v)), []).append(v)
        self.written: set[int] = set()  # class roots
        self._writes(graph.block)

    def _add(self, v: Value) -> None:
        if _holds_list(v.type) and id(v) not in self.values:
            self.values[id(v)] = v
            self.parent[id(v)] = v

    def find(self, v: Value) -> Value:
        while self.parent.get(id(v), v) is not v:
            v = self.parent[id(v)]
        return v

    def _union(self, *values: Value) -> None:
        holders = [v for v in values if _holds_list(v.type)]
        for v in holders:
            self._add(v)
        for v in holders[1:]:
            a, b = self.find(holders[0]), self.find(v)
            if a is not b:
                self.parent[id(b)] = a

    def _visit(self, block: Block) -> None:
        for node in block.nodes:
            for o in node.outputs:
                self._add(o)
            if node.kind == "prim::Loop":
                body = node.blocks[0]
                for init, p, r, out in zip(node.inputs[2:], body.params[1:], body.returns[1:], node.outputs):
                    self._union(init, p, r, out)
            elif node.kind == "prim::If":
                for k, out in enumerate(node.outputs):
                    self._union(out, *[b.returns[k] for b in node.blocks])
            elif node.kind in ("prim::TupleIndex", "prim::TupleUnpack", "prim::TupleConstruct"):
                self._union(*node.inputs, *node.outputs)  # a list in a tuple is the list itself
            for b in node.blocks:
                self._visit(b)

    def _writes(self, block: Block) -> None:
        for node in block.nodes:
            if is_list_write(node):
                self.written.add(id(self.find(node.inputs[0])))
            for b in node.blocks:
                self._writes(b)

    # -- queries ------------------------------------------------------------------------------------------
    def same(self, v: Value) -> list[Value]:
        """The values that may be the list ``v`` (``v`` among them)."""
        return self.members.get(id(self.find(v)), [v]) if id(v) in self.values else [v]

    def is_written(self, v: Value) -> bool:
        return id(v) in self.values and id(self.find(v)) in self.written

    def inside(self, v: Value, region: Block | None) -> bool:
        """Every value that may be the list ``v`` is made in ``region`` (the block being recomputed)."""
        return region is not None and all(x.owning_block.is_within(region) for x in self.same(v))

    def read_list(self, node: Node) -> Value | None:
        """The written list (not a tape) that ``node`` reads, where what it returns must be replayed in a
        recomputation: ``lst[i]``, ``len(lst)``, ``pop``'s value, ``sum(lst)`` ..."""
        if node.kind in _STRUCTURAL or len(node.outputs) != 1 or node.blocks:
            return None
        if is_list_write(node) and node.kind != "aten::pop":
            return None
        for v in node.inputs:
            if isinstance(v.type, ListType) and self.is_written(v) and not is_tape(v):
                return v
        return None


def activate_list(node: Node, active: set[int], lists: ListPlan) -> bool:
    """A list that an active value is written into is active, with every value that may be that list (its
    reads then are). True when that changed anything."""
    k = LIST_WRITES.get(node.kind)
    if k is None or not is_list_write(node) or id(node.inputs[k]) not in active or not differentiable(node.inputs[k]):
        return False
    changed = False
    for v in lists.same(node.inputs[0]):
        if id(v) not in active:
            active.add(id(v))
            changed = True
    return changed


class ListMixin:
    """The backward of written lists that derivatives flow through, as a mixin of ``autodiff.Transform``."""

    active_ids: set[int]
    lists: ListPlan
    recomputing: Block | None

    def list_active(self, v: Value) -> bool:
        return isinstance(v.type, ListType) and id(v) in self.active_ids and self.lists.is_written(v)

    def skip_list_write(self, node: Node) -> bool:
        """A write to a list made outside the block being recomputed: the list has its contents already."""
        return is_list_write(node) and not self.lists.inside(node.inputs[0], self.recomputing)

    def replays(self, node: Node) -> bool:
        """A read of a list made outside the block being recomputed: its value comes from the tape."""
        lst = self.lists.read_list(node)
        return lst is None or not self.lists.inside(lst, self.recomputing)

    def touches_lists(self, node: Node) -> bool:
        """A loop or branch that writes an active list: its backward must undo those writes on the shadow."""
        return any(is_list_write(n) and self.list_active(n.inputs[0]) for b in node.blocks for n in b.walk())

    def make_list_shadows(self, src: Block, e: Emitter, vmap: dict, inputs=()) -> None:
        """Zero adjoints, as long as each list is now, for the active written lists made in ``src`` (or passed
        in as ``inputs``)."""
        made = list(inputs) + [o for n in src.nodes for o in n.outputs]
        for v in made:
            if not self.list_active(v):
                continue
            if len(self.lists.same(v)) > 1:
                raise CompileError(
                    "grad: a list that derivatives flow through is rebound in a loop, chosen by an "
                    "if or kept in a tuple",
                    v.node.source if v.node is not None else None,
                    "append to (and read) one list throughout",
                )
            made = v.node.kind if v.node is not None else None
            if made not in (None, "prim::ListConstruct") and any(
                id(x) in self.active_ids and (differentiable(x) or isinstance(x.type, ListType)) for x in v.node.inputs
            ):
                raise CompileError(
                    f"grad: a list made by {made} from values that carry derivatives, then written in place",
                    v.node.source,
                    "start from a list display ([a, b]) or an empty list and append",
                )
            t = v.type.elem
            if not differentiable(t) or isinstance(t, TupleType):
                raise CompileError(
                    f"grad: a list of {t} that derivatives flow through",
                    v.node.source if v.node is not None else None,
                    "lists of floats and of float arrays carry derivatives",
                )
            lst = vmap.get(id(v), v)
            n = e.op("aten::list_len", lst)
            if t == FLOAT:
                zero = e.node("prim::ListConstruct", [e.const(0.0)], [ListType(FLOAT)], {"elem": "float"}).output
                self.list_shadows[id(v)] = e.op("aten::list_mul", zero, n)
                continue
            shadow = e.node("prim::ListConstruct", [], [ListType(t)], {"elem": str(t)}).output
            loop = e.node("prim::Loop", [n, e.const(True)], [])
            body = loop.add_block()
            j = body.add_param(INT, "j")
            b = Emitter(body)
            b.node("aten::append", [shadow, b.zeros_like(b.op("aten::list_getitem", lst, j))], [])
            body.add_return(b.const(True))
            self.list_shadows[id(v)] = shadow

    def backward_list(self, node: Node, e: Emitter, vmap: dict, adj) -> bool:
        """The backward of a read or write of an active list; False for any other node."""
        if node.kind == "prim::ListConstruct" and self.list_active(node.output):
            shadow = self.list_shadows[id(node.output)]  # as long as the display now: its elements' adjoints
            for k, v in enumerate(node.inputs):
                self._give(e, adj, v, vmap.get(id(v), v), e.op("aten::list_getitem", shadow, e.const(k)))
            return True
        lst = node.inputs[0] if node.inputs else None
        if lst is None or not self.list_active(lst):
            return False
        shadow = self.list_shadows[id(lst)]
        inputs = [vmap.get(id(v), v) for v in node.inputs]
        if node.kind == "aten::list_getitem":
            g = adj.take(node.output)
            if g is not None:
                self._add_at(e, shadow, inputs[1], e.broadcast(g, vmap[id(node.output)]))
        elif node.kind == "aten::append":
            self._give(e, adj, node.inputs[1], inputs[1], e.op("aten::pop", shadow, e.const(-1)))
        elif node.kind == "aten::list_setitem":
            g = e.op("aten::list_getitem", shadow, inputs[1])
            e.node("aten::list_setitem", [shadow, inputs[1], e.zeros_like(g)], [])
            self._give(e, adj, node.inputs[2], inputs[2], g)
        elif node.kind == "aten::insert":  # at the index Python's insert used, the list one shorter then
            at = _insert_position(e, inputs[1], e.sub(e.op("aten::list_len", shadow), e.const(1)))
            self._give(e, adj, node.inputs[2], inputs[2], e.op("aten::pop", shadow, at))
        elif node.kind == "aten::pop":  # its result's adjoint goes back where the element was
            g = adj.take(node.output)
            value = vmap[id(node.output)]
            g = e.zeros_like(value) if g is None else e.broadcast(g, value)
            size = e.add(e.op("aten::list_len", shadow), e.const(1))
            at = _python_index(e, inputs[1], size)
            e.node("aten::insert", [shadow, at, g], [])
        elif node.kind == "aten::list_len":
            pass
        else:
            return False
        return True

    @staticmethod
    def _give(e: Emitter, adj, src: Value, primal: Value, g: Value) -> None:
        if differentiable(src):
            adj.add(src, g, primal)

    @staticmethod
    def _add_at(e: Emitter, shadow: Value, i: Value, g: Value) -> None:
        total = e.add(e.op("aten::list_getitem", shadow, i), g)
        e.node("aten::list_setitem", [shadow, i, total], [])


def _python_index(e: Emitter, i: Value, size: Value) -> Value:
    """A valid index ``i`` of a sequence of ``size`` elements, counted from the front."""
    return e.op("aten::add", i, e.mul(e.op("aten::Int", e.op("aten::lt", i, e.const(0))), size))


def _insert_position(e: Emitter, i: Value, size: Value) -> Value:
    """Where ``insert(i, v)`` put ``v`` in a list of ``size`` elements: ``i`` counted from the front, clamped to
    ``[0, size]``."""
    at = _python_index(e, i, size)
    return e.op("prim::min", e.op("prim::max", at, e.const(0)), size)


__all__ = ["LIST_WRITES", "ListMixin", "ListPlan", "activate_list", "is_list_write", "is_tape"]
