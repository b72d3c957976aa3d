"""Which values of a graph depend on the batch, for ``scriptc.vmap`` (``vmap.py`` emits the batched graph).

``BatchAnalysis(graph, mapped)`` computes, to a fixed point over loops, a *kind* per value: ``True`` (batched: it
differs between examples), ``False`` (the same for every example), or a tuple of kinds for a tuple value.

- Parameters are batched where mapped. An operator's results are batched when an operand is, unless its batching
  rule says the result never depends on the batch (``BatchRule.unbatched_result``: shapes, lengths).
- ``prim::If`` on a batched condition runs both branches under a mask: its results are batched (except where a
  branch leaves the value unassigned: then the other branch's value is taken as it is). A ``prim::Loop`` whose trip
  count or condition is batched runs until every example is done: it is *masked*, and what it carries is batched.
- Memory: arrays and lists that may share memory (views, values merged by ``if`` and loops, elements of lists and
  tuples, call results) form one *storage class*. Writing a batched value into a class, or writing inside a masked
  region, makes the whole class batched (each example needs its own copy): ``y = np.zeros(3); y[0] = x`` allocates
  ``y`` per example. A class holding a parameter that is not mapped cannot become batched (the examples would
  share one array): that write is a CompileError.

Kinds only ever change from unbatched to batched, so the iteration ends.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir.core import Block, Graph, Node, Value
from ..ir.registry import Effect, lookup
from ..ir.types import ListType, TensorType, TupleType


def holds_memory(t) -> bool:
    return isinstance(t, (TensorType, ListType, TupleType))


def any_batched(kind) -> bool:
    if isinstance(kind, tuple):
        return any(any_batched(k) for k in kind)
    return bool(kind)


def batched_like(t, kind=True):
    """The kind of a value of type ``t`` that is batched all through (tuples element by element)."""
    if isinstance(t, TupleType):
        return tuple(batched_like(e, kind) for e in t.elems)
    return kind


def join(t, a, b):
    """The kind of a value that is ``a`` on one path and ``b`` on another."""
    if isinstance(t, TupleType):
        a = a if isinstance(a, tuple) else batched_like(t, a)
        b = b if isinstance(b, tuple) else batched_like(t, b)
        return tuple(join(e, x, y) for e, x, y in zip(t.elems, a, b))
    return bool(a) or bool(b)


def is_uninitialized(v: Value) -> bool:
    """The frontend's ``prim::Uninitialized``: a local not assigned on this path (never read there)."""
    return v.node is not None and v.node.kind == "prim::Uninitialized"


class BatchAnalysis:
    def __init__(self, graph: Graph, mapped: list[bool], param_names: list[str] | None = None):
        self.graph = graph
        self.kinds: dict[int, object] = {}
        self.parent: dict[int, int] = {}
        self.batched_classes: set[int] = set()
        self.class_writer: dict[int, tuple] = {}  # the write that first made a class batched, and whether masked
        self.masked: set[int] = set()  # ids of If nodes with a batched condition, masked loops
        self.tuple_elems: dict[int, list] = {}  # tuple value -> its element values, where constructed here
        self.unassigned: set[int] = set()  # values that are prim::Uninitialized on every path
        self.changed = True
        for p, m in zip(graph.inputs, mapped):
            self.kinds[id(p)] = batched_like(p.type, bool(m))
        while self.changed:
            self.changed = False
            self.block(graph.block, masked=False)
        self.check_parameters(mapped, param_names or [p.name for p in graph.inputs])

    # -- storage classes --------------------------------------------------------------------------------
    def find(self, v: Value) -> int:
        k = id(v)
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, *values: Value) -> None:
        values = [v for v in values if holds_memory(v.type)]
        if len(values) < 2:
            return
        root = self.find(values[0])
        for v in values[1:]:
            other = self.find(v)
            if other != root:
                self.parent[other] = root
                if other in self.batched_classes and root not in self.batched_classes:
                    self.batched_classes.add(root)
                    self.class_writer.setdefault(root, self.class_writer.get(other))
                    self.changed = True

    def mark_class(self, v: Value, writer: Node, masked: bool) -> None:
        root = self.find(v)
        if root not in self.batched_classes:
            self.batched_classes.add(root)
            self.class_writer[root] = (writer, masked)
            self.changed = True

    # -- kinds ----------------------------------------------------------------------------------------------
    def kind(self, v: Value):
        k = self.kinds.get(id(v), False)
        if holds_memory(v.type) and self.find(v) in self.batched_classes:
            if isinstance(v.type, TupleType):
                k = k if isinstance(k, tuple) else batched_like(v.type, k)
                return tuple(True if isinstance(e, (TensorType, ListType)) else x for e, x in zip(v.type.elems, k))
            return True
        return k

    def batched(self, v: Value) -> bool:
        return any_batched(self.kind(v))

    def set(self, v: Value, kind) -> None:
        old = self.kinds.get(id(v), False)
        new = join(v.type, old, kind)
        if new != old:
            self.kinds[id(v)] = new
            self.changed = True

    def is_masked(self, node: Node) -> bool:
        return id(node) in self.masked

    def is_unassigned(self, v: Value) -> bool:
        return id(v) in self.unassigned

    def add_unassigned(self, v: Value) -> None:
        if id(v) not in self.unassigned:
            self.unassigned.add(id(v))
            self.changed = True

    # -- the walk ---------------------------------------------------------------------------------------------
    def block(self, block: Block, masked: bool) -> None:
        for node in block.nodes:
            if node.kind == "prim::If":
                self.if_node(node, masked)
            elif node.kind == "prim::Loop":
                self.loop_node(node, masked)
            else:
                self.op_node(node, masked)

    def if_node(self, node: Node, masked: bool) -> None:
        cond = self.batched(node.inputs[0])
        if cond:
            self.masked.add(id(node))
        for b in node.blocks:
            self.block(b, masked or cond)
        then, other = node.blocks
        for out, a, b in zip(node.outputs, then.returns, other.returns):
            if self.is_unassigned(a) and self.is_unassigned(b):
                self.add_unassigned(out)
            if self.is_unassigned(a) or self.is_unassigned(b):
                kind = self.kind(b if self.is_unassigned(a) else a)
            else:
                kind = join(out.type, self.kind(a), self.kind(b))
                if cond and a is not b:
                    kind = batched_like(out.type)
            self.set(out, kind)
            self.union(out, a, b)

    def loop_node(self, node: Node, masked: bool) -> None:
        body = node.blocks[0]
        trips, cond, *init = node.inputs
        loop_masked = self.batched(trips) or self.batched(cond) or self.batched(body.returns[0])
        if loop_masked and id(node) not in self.masked:
            self.masked.add(id(node))
            self.changed = True
        for param, start, ret, out in zip(body.params[1:], init, body.returns[1:], node.outputs):
            kind = join(out.type, self.kind(start), self.kind(ret))
            if self.is_unassigned(start) and (ret is param or self.is_unassigned(ret)):
                self.add_unassigned(param)
                self.add_unassigned(out)
            if loop_masked and ret is not param and not self.is_unassigned(ret):
                kind = batched_like(out.type)
            for v in (param, out):
                self.set(v, kind)
            self.union(param, start, ret, out)
        self.block(body, masked or loop_masked)

    def op_node(self, node: Node, masked: bool) -> None:
        kind = node.kind
        if kind == "prim::Uninitialized":
            self.add_unassigned(node.output)
        if kind in ("prim::Constant", "prim::Uninitialized"):
            return
        if kind == "prim::TupleConstruct":
            self.set(node.output, tuple(self.kind(v) for v in node.inputs))
            self.tuple_elems[id(node.output)] = list(node.inputs)
            self.union(node.output, *node.inputs)
            return
        if kind in ("prim::TupleUnpack", "prim::TupleIndex"):
            t = node.inputs[0]
            k = self.kind(t)
            k = k if isinstance(k, tuple) else batched_like(t.type, k)
            picks = range(len(node.outputs)) if kind == "prim::TupleUnpack" else [node.attrs["index"]]
            for out, i in zip(node.outputs, picks):
                self.set(out, k[i])
                self.union(out, t)
            return
        op = lookup(kind)
        rule = op.batch
        ins = [self.batched(v) for v in node.inputs]
        if op.effect == Effect.WRITES and node.inputs:
            if any(ins[1:]) or masked:
                self.mark_class(node.inputs[0], node, masked and not any(ins[1:]))
            if isinstance(node.inputs[0].type, ListType) or kind == "aten::append":
                self.union(*node.inputs)  # a list holds the arrays stored in it
        if rule is not None and rule.view and not any(ins[1:]):
            self.union(node.outputs[0], node.inputs[0])
        elif kind in (
            "prim::ListConstruct",
            "aten::list_getitem",
            "aten::pop",
            "aten::list_slice",
            "aten::list_add",
            "aten::list_mul",
            "prim::CallFunction",
        ):
            self.union(*node.outputs, *node.inputs)
        if rule is not None and rule.unbatched_result:
            return
        if any(ins):
            for out in node.outputs:
                self.set(out, batched_like(out.type))

    def check_parameters(self, mapped: list[bool], names: list[str]) -> None:
        for p, m, name in zip(self.graph.inputs, mapped, names):
            if not m and holds_memory(p.type) and self.find(p) in self.batched_classes:
                writer, masked = self.class_writer.get(self.find(p), (None, False))
                how = (
                    "under a condition that depends on a mapped value"
                    if masked
                    else "a value that differs between examples"
                )
                raise CompileError(
                    f"vmap: this writes into argument '{name}', which is not mapped (in_axes None), {how}",
                    writer.source if writer else None,
                    "the examples would share one array; map the argument, or write into a copy",
                )
