"""Where native code takes and drops references to arrays.

Arrays (and strs) in native code are reference counted (a meminfo shared by an allocation and all its views; arrays
borrowed from the caller have none, and counting them is a no-op). The rules, uniform for every value whose
type holds an array (an array, or a tuple with one inside):

- every value a node produces, and every loop-body parameter, owns one reference (an element taken out of a
  tuple too: ``prim::TupleUnpack``/``prim::TupleIndex`` outputs take their own, the tuple keeps its);
- a *consuming* use takes a reference of its own: block returns (values flowing into ``prim::If`` /
  ``prim::Loop`` outputs and the graph's result), a loop's initial carried inputs, and ``prim::TupleConstruct``
  elements; every other use borrows;
- an owned value drops its reference right after its last use in the block that defines it (a use inside a
  nested block counts as a use by the node that holds the block), or at once if it is never used.

Graph inputs are borrowed from the caller for the whole call and never dropped, and so is an element taken out of
one (the caller's tuple holds it): neither takes a reference nor drops one. A consuming use that is also the
value's last use takes over the value's reference (a *move*): no increment there, no decrement after it. This pass
computes the drop points, the borrowed values and the moves; the lowering emits the increments and decrements.

The same rules say what a raise must release: at a raising node, the owned values defined so far in the enclosing blocks
and not yet dropped, plus what the raising operator itself has taken for its outputs. The native backend tracks exactly
that while it lowers (``backend/llvm/lowering/unwind.py``), so its error path follows these drop points without a second
analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.core import Block, Graph, Node, Value
from ..ir.types import STR, ListType, TensorType, TupleType, Type

CONSUMING_NODES = {"prim::TupleConstruct"}
MOVING_NODES = {"prim::TupleConstruct", "prim::Return"}  # consuming uses that cannot raise
PROJECTIONS = {"prim::TupleIndex", "prim::TupleUnpack"}


def holds_array(t: Type) -> bool:
    """Values whose references are counted: arrays, strs and lists, and tuples holding them."""
    if isinstance(t, (TensorType, ListType)) or t == STR:
        return True
    return isinstance(t, TupleType) and any(holds_array(e) for e in t.elems)


def consumes(node: Node, index: int) -> bool:
    """Whether ``node``'s input ``index`` takes its own reference."""
    if node.kind == "prim::Return":
        return True
    if node.kind == "prim::Loop":
        return index >= 2
    return node.kind in CONSUMING_NODES


@dataclass
class Ownership:
    drop_after: dict[int, list[Value]] = field(default_factory=dict)  # id(node) -> values to drop after it
    drop_at_entry: dict[int, list[Value]] = field(default_factory=dict)  # id(block) -> unused block params
    drop_unused: dict[int, list[Value]] = field(default_factory=dict)  # id(node) -> its outputs never used
    moved_into: dict[int, list[Value]] = field(default_factory=dict)  # id(node) -> inputs it takes over
    borrowed: set[int] = field(default_factory=set)  # ids of values that hold no reference

    def after(self, node: Node) -> list[Value]:
        return self.drop_after.get(id(node), []) + self.drop_unused.get(id(node), [])

    def moves(self, node: Node, v: Value) -> bool:
        return any(m is v for m in self.moved_into.get(id(node), ()))


def _top_user(user: Node, block: Block) -> Node | None:
    """The node of ``block`` that contains ``user`` (itself, or an ancestor); None if it is block's return."""
    while user.block is not block:
        owner = user.block.owner
        if owner is None:
            return None
        user = owner
    return user


def analyze(graph: Graph) -> Ownership:
    own = Ownership(borrowed=set(map(id, graph.inputs)))
    _block(graph.block, own)
    return own


def _block(block: Block, own: Ownership) -> None:
    position = {id(n): i for i, n in enumerate(block.nodes)}

    def place(v: Value, unused):
        """Drop ``v`` after its last user in this block (the block's end if it flows out), or via ``unused``;
        or move it into that user when the user consumes it, once."""
        last, rank, uses_by_last = None, -1, 0
        for use in v.uses:
            top = _top_user(use.user, block)
            top = block.return_node if top is None else top
            r = len(block.nodes) if top is block.return_node else position[id(top)]
            if r > rank:
                last, rank, uses_by_last = top, r, 0
            uses_by_last += top is last
        if last is None:
            unused(v)
        elif last.kind in MOVING_NODES and uses_by_last == 1:
            own.moved_into.setdefault(id(last), []).append(v)
        else:
            own.drop_after.setdefault(id(last), []).append(v)

    for p in block.params:
        if holds_array(p.type) and id(p) not in own.borrowed:
            place(p, lambda v: own.drop_at_entry.setdefault(id(block), []).append(v))
    for node in block.nodes:
        for b in node.blocks:
            _block(b, own)
        if node.kind in PROJECTIONS and id(node.inputs[0]) in own.borrowed:
            own.borrowed.update(id(o) for o in node.outputs)
            continue
        for o in node.outputs:
            if holds_array(o.type):
                place(o, lambda v, n=node: own.drop_unused.setdefault(id(n), []).append(v))
