"""time-loop-fusion: a counted loop of element-wise updates of loop-carried arrays becomes one
``prim::FusedLoop`` node, which backends run as one loop over the elements with the time loop inside it.

``for _ in range(n): x = x * a + 1.0`` makes n passes over ``x``; as a FusedLoop each element is loaded once,
updated n times in registers and stored once. Each element sees exactly the operations it saw before, in the
same order (element-wise operators commute with the order of elements), so the results are bit-identical.

Which loops (all must hold):

- a ``for`` loop: the initial condition and the body's condition are the constant true (no break, return or
  early exit), so the trip count alone says how many iterations run;
- every carried value is an array of known dtype and rank, the same dtype and rank before the loop, in the
  body and after it (the frontend already rejects a carried type that changes), and all have one rank; or a
  scalar (a counter, a time ``t += dt``) of one type, computed from scalars only (at least one array);
- the body's nodes are element-wise operators (``fusion.fusible``), scalar constants, and scalar operations
  that cannot raise nor write (computed from the iteration index, constants and invariant scalars): no print,
  no indexing (no read of another element), no call, no nested loop or if, no reduction;
- every array operand is a carried array, a body result, or a value defined before the loop (loop-invariant)
  whose rank is not above the carried rank;
- every carried array result is computed in the body from some carried array, so its shape is the carried
  shape and it is a new array (a carried array returned as it is, ``x, y = y, x``, is the same object after
  the loop, which a FusedLoop's new arrays are not).

Shapes: when the carried arrays share one shape S and every invariant array broadcasts into S without growing
it, every element-wise result of a carried array has shape S, in every iteration. When that is not evident
from the graph (several carried arrays, or invariant arrays of rank >= 1), the pass emits the check
``prim::ShapesFit`` and keeps the original loop in the other branch of a ``prim::If`` (it raises or grows as
NumPy does). Runs before ``unroll``, which would otherwise split the loop into two; the ``prim::FusedLoop`` is
not a ``prim::Loop``, so unroll and buffer-reuse leave it alone.
"""

from __future__ import annotations

from ..ir.builder import Builder
from ..ir.core import Block, Graph, Node, Value
from ..ir.registry import REGISTRY
from ..ir.types import BOOL, FLOAT, INT, TensorType
from .analysis import is_removable, is_true_constant, loops_post_order
from .fusion import fusible
from .manager import register


def _same_array_type(a, b) -> bool:
    return (
        isinstance(a, TensorType)
        and isinstance(b, TensorType)
        and a.known
        and b.known
        and a.dtype == b.dtype
        and a.rank == b.rank
    )


def _defined_inside(v: Value, body: Block) -> bool:
    return v.owning_block is body


def _scalar_constant(v: Value) -> bool:
    return v.node is not None and v.node.kind == "prim::Constant" and not isinstance(v.type, TensorType)


def _scalar_node_ok(node: Node) -> bool:
    """A scalar constant, or an operation on scalars that can neither raise nor write (a counter's update)."""
    if len(node.outputs) != 1 or isinstance(node.output.type, TensorType) or node.blocks:
        return False
    if node.kind == "prim::Constant":
        return True
    return not any(isinstance(v.type, TensorType) for v in node.inputs) and is_removable(node)


def _invariants(loop: Node) -> list[Value] | None:
    """The values defined outside the loop that the body reads, or None when the body cannot be fused."""
    body = loop.blocks[0]
    rank = next(p.type.rank for p in body.params[1:] if isinstance(p.type, TensorType))
    seen: dict[int, Value] = {}
    for node in body.nodes:
        if node.kind in ("prim::Loop", "prim::If") or node.blocks:
            return None
        if not (fusible(node) or _scalar_node_ok(node)):
            return None
        op = REGISTRY.get(node.kind)
        if op is not None and op.extra.get("reduction"):
            return None
        for v in node.inputs:
            if _defined_inside(v, body):
                continue
            if isinstance(v.type, TensorType) and not (v.type.known and v.type.rank <= rank):
                return None
            if _scalar_constant(v):
                continue  # copied into the subgraph, as fusion does, so backends see the literal
            seen.setdefault(id(v), v)
    for r in body.returns[1:]:  # a scalar carried on unchanged, or set to an invariant
        if not _defined_inside(r, body) and not _scalar_constant(r):
            seen.setdefault(id(r), r)
    return list(seen.values())


def _carried_from_params(body: Block) -> bool:
    """Every carried array result is computed in the body from a carried array (so it has the carried shape
    and is a new array each iteration, as the FusedLoop's results are). A result that is a carried array
    itself (``x, y = y, x``) is that very object after the loop in Python: not fused."""
    derived = {id(p) for p in body.params[1:] if isinstance(p.type, TensorType)}
    computed = set()
    for node in body.nodes:
        if any(id(v) in derived for v in node.inputs):
            derived.update(id(o) for o in node.outputs)
            computed.update(id(o) for o in node.outputs)
    return all(id(r) in computed for r in body.returns[1:] if isinstance(r.type, TensorType))


def _same_scalar_type(p, init, r, out) -> bool:
    return p.type in (INT, FLOAT, BOOL) and init.type == r.type == out.type == p.type


def candidate(loop: Node) -> list[Value] | None:
    """The loop's invariant operands when it can become a prim::FusedLoop, else None."""
    body = loop.blocks[0]
    if not is_true_constant(loop.inputs[1]) or not is_true_constant(body.returns[0]):
        return None
    carried = loop.inputs[2:]
    if not carried:
        return None
    ranks = {p.type.rank for p in body.params[1:] if isinstance(p.type, TensorType)}
    if len(ranks) != 1:
        return None
    for init, p, r, out in zip(carried, body.params[1:], body.returns[1:], loop.outputs):
        if _same_scalar_type(p, init, r, out):
            continue
        if not all(_same_array_type(p.type, t.type) for t in (init, r, out)):
            return None
    if not _carried_from_params(body):
        return None
    return _invariants(loop)


def fused_subgraph(loop: Node, invariants: list[Value], name: str) -> Graph:
    """(iteration, carried..., invariants...) -> next carried values: a copy of the loop body."""
    body = loop.blocks[0]
    sub = Graph(name)
    mapping = {id(body.params[0]): sub.add_input(INT, "i")}
    for p in body.params[1:]:
        mapping[id(p)] = sub.add_input(p.type, p.name.split(".")[0])
    for v in invariants:
        mapping[id(v)] = sub.add_input(v.type, v.name.split(".")[0] if not v.name.isdigit() else None)
    in_sub = Builder.at_end(sub.block)
    for n in body.nodes:
        for v in n.inputs:
            if id(v) not in mapping and _scalar_constant(v):
                mapping[id(v)] = in_sub.op("prim::Constant", [], [v.type], v.node.attrs).output
        copy = in_sub.op(
            n.kind, [mapping[id(v)] for v in n.inputs], [o.type for o in n.outputs], n.attrs, source=n.source
        )
        for o, c in zip(n.outputs, copy.outputs):
            mapping[id(o)] = c
    for r in body.returns[1:]:
        if id(r) not in mapping:  # a scalar constant
            mapping[id(r)] = in_sub.op("prim::Constant", [], [r.type], r.node.attrs).output
        sub.block.add_return(mapping[id(r)])
    return sub


def _carried_arrays(loop: Node) -> list[Value]:
    return [v for v in loop.inputs[2:] if isinstance(v.type, TensorType)]


def _needs_check(loop: Node, invariants: list[Value]) -> bool:
    return len(_carried_arrays(loop)) > 1 or any(isinstance(v.type, TensorType) and v.type.rank > 0 for v in invariants)


def fuse_loop(loop: Node, invariants: list[Value], name: str) -> Node:
    """Replace ``loop`` by a prim::FusedLoop (guarded by prim::ShapesFit when needed); the FusedLoop node."""
    block = loop.block
    inputs = [loop.inputs[0], *loop.inputs[2:], *invariants]
    types = [o.type for o in loop.outputs]
    attrs = {"subgraph": fused_subgraph(loop, invariants, name), "carried": len(loop.outputs)}
    if not _needs_check(loop, invariants):
        fused = Builder.before(loop).op("prim::FusedLoop", inputs, types, attrs, source=loop.source)
        for o, f in zip(loop.outputs, fused.outputs):
            f.name, o.name = o.name, f.name
            o.replace_all_uses_with(f)
        loop.destroy()
        return fused
    carried_arrays = _carried_arrays(loop)
    arrays = [*carried_arrays, *(v for v in invariants if isinstance(v.type, TensorType))]
    before_loop = Builder.before(loop)
    check = before_loop.op(
        "prim::ShapesFit", arrays, [BOOL], {"carried": len(carried_arrays)}, source=loop.source, hints="fits"
    )
    guard = before_loop.op("prim::If", [check.output], types, source=loop.source)
    then, other = guard.add_block(), guard.add_block()
    for o, g in zip(loop.outputs, guard.outputs):
        g.name, o.name = o.name, g.name
        o.replace_all_uses_with(g)
    fused = Builder.at_end(then).op("prim::FusedLoop", inputs, types, attrs, source=loop.source)
    for f in fused.outputs:
        then.add_return(f)
    block.nodes.remove(loop)
    other.append(loop)
    for o in loop.outputs:
        other.add_return(o)
    return fused


@register("time-loop-fusion")
def fuse_time_loops(graph: Graph) -> bool:
    """Turn counted loops whose body only updates loop-carried arrays element-wise (no print, no indexing, no
    early exit, no reduction) into prim::FusedLoop nodes: one loop over the elements, the time loop inside.
    A prim::ShapesFit check keeps the original loop for shapes that would change across iterations."""
    changed = False
    count = sum(1 for n in graph.walk() if n.kind == "prim::FusedLoop")
    for loop in loops_post_order(graph.block):
        invariants = candidate(loop)
        if invariants is None:
            continue
        fuse_loop(loop, invariants, f"prim::FusedLoop_{count}")
        count += 1
        changed = True
    return changed
