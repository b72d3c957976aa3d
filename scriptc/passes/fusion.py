"""fusion: groups of element-wise array operators become one ``prim::FusionGroup`` node.

The group's body is a subgraph (printed after the graph as ``with prim::FusionGroup_N = graph(...)``) whose
inputs are the arrays and scalars the group reads and whose single output is the last operator's result; a
full reduction (``np.sum``, ``np.max``, ... with no axis) of a fused expression joins the group as its last
operator. Backends evaluate a group as one loop nest with no intermediate arrays.

Assumes a verified graph whose array types know dtype and rank. Grows groups backwards from a consumer, as
TorchScript's fuser does: a producer joins when it is element-wise, in the same block, used only by the group,
and moving it down to the group crosses no node that could write memory (``Effect.WRITES``/``IO``, loops,
ifs, calls) when it reads an array — so a fused read never sees a later write. Errors keep their order and
happen: a producer that may raise (arrays of two shapes that may not broadcast; an integer power whose
exponent may be negative) crosses no node that may raise, and an integer power that may raise is never a
producer (its result may be broadcast to an empty array, so that no element of it would be computed, where
NumPy computes it whole and raises).

Multi-output groups (after the groups above are formed): an element-wise producer whose result is read by
several sibling consumers (element-wise groups, or groups ending in a full reduction, e.g. ``err = a*x + b - y;
ga = np.mean(err * x); gb = np.mean(err)``) becomes one group with several results — one loop computes every
consumer's element and accumulates every reduction. The producer's result is a result of the group only when
something else reads it too; otherwise it is never materialized. A consumer joins only when every array it
reads besides the producer's result is an array the producer reads (so its iteration shape is the producer's:
the group's loop runs over one shape), its other operands are available where the group is placed (the first
consumer), and no node between the producer and the last consumer may write memory or raise (the consumers
move up to the first one).
"""

from __future__ import annotations

from ..ir.builder import Builder
from ..ir.core import Graph, Node, Value
from ..ir.registry import REGISTRY, Effect
from ..ir.types import TensorType
from .analysis import may_raise
from .manager import register

BARRIERS = {"prim::Loop", "prim::If", "prim::CallFunction", "prim::FusionGroup"}


def fusible(node: Node) -> bool:
    op = REGISTRY.get(node.kind)
    return (
        op is not None
        and op.elementwise
        and len(node.outputs) == 1
        and isinstance(node.output.type, TensorType)
        and node.output.type.known
    )


def full_reduction(node: Node) -> bool:
    op = REGISTRY.get(node.kind)
    return (
        op is not None
        and op.extra.get("reduction")
        and node.attrs.get("axis") is None
        and node.kind not in ("aten::argmax", "aten::argmin")
        and isinstance(node.inputs[0].type, TensorType)
        and node.inputs[0].type.known
    )


def _element_error(node: Node) -> bool:
    """An integer power of arrays whose exponent is not a non-negative constant (NumPy raises ValueError)."""
    if node.kind != "aten::pow" or not all(
        isinstance(v.type, TensorType)
        and v.type.dtype.startswith(("int", "uint"))
        or not isinstance(v.type, TensorType)
        for v in node.inputs
    ):
        return False
    exponent = node.inputs[1]
    value = (
        exponent.node.attrs.get("value")
        if exponent.node is not None and exponent.node.kind == "prim::Constant"
        else None
    )
    return not (isinstance(value, int) and value >= 0)


def _raises_in_group(node: Node) -> bool:
    """The operator may raise inside a group: two different arrays (their shapes may not broadcast), or an
    element error."""
    arrays = {id(v) for v in node.inputs if isinstance(v.type, TensorType) and v.type.rank > 0}
    return len(arrays) > 1 or _element_error(node)


def writes_memory(node: Node) -> bool:
    op = REGISTRY.get(node.kind)
    return node.kind in BARRIERS or op is None or op.effect >= Effect.WRITES


def _grow(block_nodes: list[Node], root: Node) -> list[Node]:
    """The nodes fused with ``root`` (root last), in block order: a worklist from root (a producer is looked at
    again when another of its users joins)."""
    # p moves down to root: nothing in between may write what p reads (a writer is never fusible, so never a
    # member: only producers after the last writer before root can join)
    start = block_nodes.index(root)
    while start > 0 and not writes_memory(block_nodes[start - 1]):
        start -= 1
    candidates = block_nodes[start : block_nodes.index(root, start) + 1]
    after_writer = {id(n) for n in candidates}
    excluded: set[int] = set()
    while True:
        members, work = {id(root)}, [root]
        while work:
            for v in work.pop().inputs:
                p = v.node
                if (
                    p is None
                    or id(p) in members
                    or id(p) not in after_writer
                    or id(p) in excluded
                    or not fusible(p)
                    or _element_error(p)
                    or not all(id(u.user) in members for u in p.output.uses)
                ):
                    continue
                members.add(id(p))
                work.append(p)
        # a member that may raise must cross no node left outside that may raise (its error would come later)
        crossing = [
            n
            for n in candidates
            if id(n) in members
            and n is not root
            and _raises_in_group(n)
            and any(id(m) not in members and may_raise(m) for m in candidates[candidates.index(n) + 1 : -1])
        ]
        if not crossing:
            return [n for n in candidates if id(n) in members]
        excluded.update(id(n) for n in crossing)


def outline(nodes: list[Node], counter: list[int]) -> Node:
    """Replace ``nodes`` (the last one's output is the result) by a prim::FusionGroup node."""
    root = nodes[-1]
    inside = {id(n) for n in nodes}
    sub = Graph(f"prim::FusionGroup_{counter[0]}")
    counter[0] += 1
    in_sub = Builder.at_end(sub.block)
    mapping: dict[int, Value] = {}
    inputs: list[Value] = []
    for n in nodes:
        for v in n.inputs:
            if id(v) not in mapping and (v.node is None or id(v.node) not in inside):
                if v.node is not None and v.node.kind == "prim::Constant" and not isinstance(v.type, TensorType):
                    mapping[id(v)] = in_sub.op("prim::Constant", [], [v.type], v.node.attrs).output
                    continue
                mapping[id(v)] = sub.add_input(v.type, v.name.split(".")[0] if not v.name.isdigit() else None)
                inputs.append(v)
        copy = in_sub.op(
            n.kind, [mapping[id(v)] for v in n.inputs], [o.type for o in n.outputs], n.attrs, source=n.source
        )
        for o, c in zip(n.outputs, copy.outputs):
            mapping[id(o)] = c
    sub.block.add_return(mapping[id(root.output)])
    group = Builder.before(root).op(
        "prim::FusionGroup", inputs, [root.output.type], {"subgraph": sub}, source=root.source
    )
    group.output.name, root.output.name = root.output.name, group.output.name
    root.output.replace_all_uses_with(group.output)
    for n in reversed(nodes):
        n.destroy()
    return group


@register("fusion")
def fuse(graph: Graph) -> bool:
    """Fuse maximal groups of element-wise array operators (and a full reduction consuming them) into
    prim::FusionGroup nodes. Groups of a single operator are left alone, except a C library math function
    (``np.exp(z)``): its group's loop is the one that calls the library's SIMD variants."""
    counter = [0]
    changed = False

    def visit(block):
        nonlocal changed
        for node in list(block.nodes):
            for b in node.blocks:
                visit(b)
        for node in reversed(list(block.nodes)):
            if node.block is not block or not (fusible(node) or full_reduction(node)):
                continue
            members = _grow(block.nodes, node)
            if len(members) < 2 and not REGISTRY[node.kind].extra.get("libm"):
                continue
            outline(members, counter)
            changed = True
        while merge_siblings(block, counter):
            changed = True

    visit(graph.block)
    return changed


# -- multi-output groups -------------------------------------------------------------------------------------


def _elementwise_producer(node: Node) -> bool:
    if node.kind == "prim::FusionGroup":
        return (
            len(node.outputs) == 1
            and "reuse" not in node.attrs
            and isinstance(node.output.type, TensorType)
            and node.output.type.known
        )
    return fusible(node)


def _sibling_consumer(node: Node) -> bool:
    if node.kind == "prim::FusionGroup":
        return len(node.outputs) == 1 and "reuse" not in node.attrs
    return fusible(node) or full_reduction(node)


def _top(node: Node, block) -> Node | None:
    """The node of ``block`` containing ``node`` (itself or an ancestor)."""
    while node is not None and node.block is not block:
        node = node.block.owner
    return node


def _siblings(block, producer: Node):
    """(consumers, other users) of the producer's result that can share one loop with it, or None."""
    out = producer.output
    reads = {id(v) for v in producer.inputs if isinstance(v.type, TensorType)} | {id(out)}
    users = list({id(u.user): u.user for u in out.uses}.values())
    consumers = [
        u
        for u in users
        if u.block is block
        and _sibling_consumer(u)
        and all(not isinstance(v.type, TensorType) or id(v) in reads for v in u.inputs)
    ]
    others = [u for u in users if all(u is not c for c in consumers)]
    if not consumers or len(consumers) + bool(others) < 2:
        return None
    position = {id(n): i for i, n in enumerate(block.nodes)}  # (only now: most producers stop above)
    consumers.sort(key=lambda n: position[id(n)])
    first, last = position[id(consumers[0])], position[id(consumers[-1])]
    for u in others:
        top = _top(u, block)
        if top is None or (top is not block.return_node and position.get(id(top), -1) <= first):
            return None
    members = {id(c) for c in consumers}
    for c in consumers:
        for v in c.inputs:
            if v is not out and v.node is not None and v.node.block is block and position[id(v.node)] >= first:
                return None
    # consumers move up to the first one: nothing they pass may write memory, print, or raise first
    between = block.nodes[position[id(producer)] + 1 : last]
    if any((writes_memory(n) or may_raise(n)) and id(n) not in members for n in between):
        return None
    return consumers, others


def _copy_into(sub: Graph, node: Node, mapping: dict, inputs: list) -> Value:
    """Copy ``node`` (a group: its body) into ``sub``; outer values it reads become group inputs; its result."""
    in_sub = Builder.at_end(sub.block)

    def value(v):
        if id(v) not in mapping:
            if v.node is not None and v.node.kind == "prim::Constant" and not isinstance(v.type, TensorType):
                mapping[id(v)] = in_sub.op("prim::Constant", [], [v.type], v.node.attrs).output
            else:
                mapping[id(v)] = sub.add_input(v.type, v.name.split(".")[0] if not v.name.isdigit() else None)
                inputs.append(v)
        return mapping[id(v)]

    if node.kind != "prim::FusionGroup":
        return in_sub.op(
            node.kind, [value(v) for v in node.inputs], [node.output.type], node.attrs, source=node.source
        ).output
    body = node.attrs["subgraph"]
    local = {id(p): value(v) for p, v in zip(body.inputs, node.inputs)}
    for n in body.nodes:
        copy = in_sub.op(
            n.kind, [local[id(v)] for v in n.inputs], [o.type for o in n.outputs], n.attrs, source=n.source
        )
        for o, c in zip(n.outputs, copy.outputs):
            local[id(o)] = c
    return local[id(body.outputs[0])]


def merge_siblings(block, counter: list[int]) -> bool:
    """Merge one producer with its sibling consumers into a multi-output prim::FusionGroup; True if done."""
    for producer in list(block.nodes):
        if not _elementwise_producer(producer):
            continue
        found = _siblings(block, producer)
        if found is None:
            continue
        consumers, others = found
        sub = Graph(f"prim::FusionGroup_{counter[0]}")
        counter[0] += 1
        mapping, inputs = {}, []
        mapping[id(producer.output)] = _copy_into(sub, producer, mapping, inputs)
        results = [_copy_into(sub, c, mapping, inputs) for c in consumers]
        kept = consumers + ([producer] if others else [])
        if others:
            results.append(mapping[id(producer.output)])
        for r in results:
            sub.block.add_return(r)
        group = Builder.before(consumers[0]).op(
            "prim::FusionGroup", inputs, [n.output.type for n in kept], {"subgraph": sub}, source=consumers[0].source
        )
        for n, g in zip(kept, group.outputs):
            g.name, n.output.name = n.output.name, g.name
            n.output.replace_all_uses_with(g)
        for n in reversed(consumers):
            n.destroy()
        producer.destroy()
        return True
    return False
