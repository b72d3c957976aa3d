"""canonicalize: peephole simplifications that are exact for every value (scalars only; an array op makes a
new array and must keep doing so, so ``a * 1.0`` on an array is never touched).

Arithmetic identities, applied only when the operand is a scalar of the result's type:

- ``x * 1``, ``1 * x`` (int or float x, constant 1 or 1.0; not ``True``), ``x / 1`` (float x);
- ``x + 0``, ``0 + x`` for int x only: for a float, ``-0.0 + 0 == 0.0`` is not ``-0.0``; ``x + (-0.0)`` for
  float x is exact and is simplified;
- ``x - 0`` (int x), ``x - 0.0`` / ``x - 0`` (float x; ``+0`` only: ``-0.0 - (-0.0)`` is ``0.0``);
- ``-(-x)`` (int: wraps back; float: exact), ``not not b``, ``int(x)``/``float(x)``/``bool(x)`` of a value
  already of that type, ``__derive_index(i, 0, 1)`` -> ``i``;
- tuple construct/unpack and construct/index pairs forward the elements;
- the shape of an element-wise operator's result whose only array operand is ``x`` (the others scalars) is
  ``x``'s: ``aten::size`` / ``aten::numel`` / ``aten::len`` read it from ``x`` (so the result need not be
  stored only to have its size read, as a gradient's mean does).

Control flow: ``prim::If`` with a constant condition becomes its taken block; inside ``if c:`` the uses of
``c`` become True, inside its else-block False; an If output that both
branches give as the same value is that value, and a bool output that is True in the then-branch and False
in the else-branch is the condition; a ``prim::Loop`` with a constant
max trip count <= 0 or a constant false initial condition becomes its initial values; a loop with constant
trip count 1 and constant true initial condition becomes its body (iteration 0; its returned condition does
not matter after one iteration).

Unused nodes left behind are for dce.
"""

from __future__ import annotations

import math

from ..ir.builder import Builder
from ..ir.core import Block, Graph, Node, Value
from ..ir.registry import REGISTRY
from ..ir.types import BOOL, FLOAT, INT, TensorType, TupleType
from .analysis import (
    constant_value,
    inline_if_branch,
    inline_loop_once,
    is_constant,
    is_true_constant,
    propagate_condition,
    replace_loop_by_inits,
    simplify_if_outputs,
    trip_count,
)
from .manager import register


def _const_is(v: Value, wanted: float, signed_zero_matters=False) -> bool:
    """``v`` is an int or float constant (not a bool) equal to ``wanted``; for zero, optionally +0 only."""
    if not is_constant(v) or v.type not in (INT, FLOAT):
        return False
    c = constant_value(v)
    if type(c) not in (int, float) or c != wanted:
        return False
    if signed_zero_matters and isinstance(c, float) and c == 0:
        return math.copysign(1.0, c) > 0
    return True


def _is_neg_zero(v: Value) -> bool:
    return is_constant(v) and v.type == FLOAT and constant_value(v) == 0 and math.copysign(1.0, constant_value(v)) < 0


def _same_scalar(node: Node, x: Value) -> bool:
    return x.type in (INT, FLOAT) and node.outputs[0].type == x.type


def simplify(node: Node, made: "_Made | None" = None) -> list[Value] | None:
    """Values to replace ``node``'s outputs with, or None. ``made``: the shape nodes this run has made so far
    (``_broadcast_query``)."""
    k, ins = node.kind, node.inputs
    if k == "aten::mul":
        a, b = ins
        if _const_is(b, 1) and _same_scalar(node, a):
            return [a]
        if _const_is(a, 1) and _same_scalar(node, b):
            return [b]
    elif k == "aten::add":
        a, b = ins
        for x, c in ((a, b), (b, a)):
            if not _same_scalar(node, x):
                continue
            if x.type == INT and c.type == INT and _const_is(c, 0):
                return [x]
            if x.type == FLOAT and _is_neg_zero(c):
                return [x]
    elif k == "aten::sub":
        a, b = ins
        if _same_scalar(node, a) and (a.type == FLOAT or b.type == INT) and _const_is(b, 0, True):
            return [a]
    elif k == "aten::div":
        a, b = ins
        if a.type == FLOAT and _same_scalar(node, a) and _const_is(b, 1):
            return [a]
    elif k == "aten::neg":
        (a,) = ins
        if (
            a.node is not None
            and a.node.kind == "aten::neg"
            and _same_scalar(node, a)
            and _same_scalar(a.node, a.node.inputs[0])
        ):
            return [a.node.inputs[0]]
    elif k == "aten::__not__":
        (a,) = ins
        if a.node is not None and a.node.kind == "aten::__not__" and a.node.inputs[0].type == BOOL:
            return [a.node.inputs[0]]
    elif k in ("aten::Int", "aten::Float", "aten::Bool"):
        want = {"aten::Int": INT, "aten::Float": FLOAT, "aten::Bool": BOOL}[k]
        if ins[0].type == want:
            return [ins[0]]
    elif k == "aten::__derive_index":
        i, start, step = ins
        if _const_is(start, 0) and start.type == INT and _const_is(step, 1) and step.type == INT:
            return [i]
    elif k == "prim::TupleUnpack":
        src = ins[0].node
        if src is not None and src.kind == "prim::TupleConstruct" and len(src.inputs) == len(node.outputs):
            return list(src.inputs)
    elif k == "prim::TupleIndex":
        src = ins[0].node
        if src is not None and src.kind == "prim::TupleConstruct":
            return [src.inputs[node.attrs["index"]]]
    elif k in ("aten::size", "aten::numel", "aten::len"):
        shaped = _shape_operand(ins[0])
        if shaped is not None:
            while _shape_operand(shaped) is not None:
                shaped = _shape_operand(shaped)
            return [_same_query(node, shaped)]
        operands = _broadcast_operands(ins[0])
        if operands is not None:
            return [_broadcast_query(node, operands, made or _Made())]
    return None


def _broadcast_operands(v: Value) -> list[Value] | None:
    """The array operands of the element-wise operator making ``v`` when there are several (its shape is
    theirs broadcast together), all of known rank."""
    src = v.node
    if src is None or len(src.outputs) != 1 or not REGISTRY.get(src.kind) or not REGISTRY[src.kind].elementwise:
        return None
    arrays = [x for x in src.inputs if isinstance(x.type, TensorType)]
    if (
        len(arrays) < 2
        or any(a.type.rank is None for a in arrays)
        or not isinstance(v.type, TensorType)
        or v.type.rank is None
    ):
        return None
    return arrays


class _Made:
    """The nodes a run's shape queries made: by (block, kind, inputs, attributes), and all of them."""

    def __init__(self):
        self.by_key: dict = {}
        self.nodes: set[Node] = set()


def _broadcast_query(node: Node, operands: list[Value], made: _Made) -> Value:
    """``node`` (a shape query of a broadcast result) computed from the operands' dimensions: along each axis
    the result has an operand's length unless that is 1 (the operator ran, so they agree), so
    ``d = a + (b - a) * int(b != 1)``, folded over the operands right-aligned. What an earlier query of this
    run made in the same block is used again (``made``: a gradient asks for the same shapes many times; made
    again, they were most of the nodes cse then merged)."""
    block, before_node = node.block, Builder.before(node)
    rank = node.inputs[0].type.rank
    # a query an expansion made sits among that expansion's nodes, some of them after it: those it cannot use
    # (any other query comes after every node made so far in its block)
    among = node in made.nodes

    def emit(kind, inputs, t, attrs=None):
        key = (block, kind, *map(id, inputs), repr(attrs))  # (the block, not its id: it stays alive)
        known = made.by_key.get(key)
        # still there, on the same inputs (not moved by an If's branch inlined, nor rewired to other values)
        if (
            known is not None
            and known.block is block
            and all(a is b for a, b in zip(known.inputs, inputs))
            and not (among and block.nodes.index(known) >= block.nodes.index(node))
        ):
            return known
        n = before_node.op(kind, inputs, t if isinstance(t, list) else [t], attrs, source=node.source)
        made.by_key[key] = n
        made.nodes.add(n)
        return n

    def const(value, t=INT):
        return emit("prim::Constant", [], t, {"value": value}).output

    one = const(1)
    dims = [None] * rank
    for x in operands:
        r = x.type.rank
        size = emit("aten::size", [x], TupleType((INT,) * r))
        parts = emit("prim::TupleUnpack", [size.output], [INT] * r)
        for j, d in enumerate(parts.outputs):
            k = rank - r + j
            if dims[k] is None:
                dims[k] = d
                continue
            grow = emit("aten::Int", [emit("aten::ne", [d, one], BOOL).output], INT).output
            step = emit("aten::mul", [emit("aten::sub", [d, dims[k]], INT).output, grow], INT).output
            dims[k] = emit("aten::add", [dims[k], step], INT).output
    dims = [d if d is not None else one for d in dims]
    if node.kind == "aten::size":
        return emit("prim::TupleConstruct", dims, node.output.type).output
    if node.kind == "aten::len":
        return dims[0]
    total = one
    for d in dims:
        total = emit("aten::mul", [total, d], INT).output
    return total


def _shape_operand(v: Value) -> Value | None:
    """The one array operand of the element-wise operator making ``v``, when the others are scalars."""
    src = v.node
    if src is None or len(src.outputs) != 1 or not REGISTRY.get(src.kind) or not REGISTRY[src.kind].elementwise:
        return None
    arrays = [x for x in src.inputs if isinstance(x.type, TensorType)]
    if len(arrays) != 1 or not isinstance(v.type, TensorType) or arrays[0].type.rank != v.type.rank:
        return None
    return arrays[0]


def _same_query(node: Node, x: Value) -> Value:
    return Builder.before(node).op(node.kind, [x], [node.output.type], node.attrs, source=node.source).output


def simplify_control(node: Node) -> bool:
    if node.kind == "prim::If" and is_constant(node.inputs[0]):
        inline_if_branch(node, 0 if constant_value(node.inputs[0]) else 1)
        return True
    if node.kind == "prim::Loop":
        trips, cond = trip_count(node), node.inputs[1]
        if (trips is not None and trips <= 0) or (is_constant(cond) and not constant_value(cond)):
            replace_loop_by_inits(node)
            return True
        if trips == 1 and is_true_constant(cond):
            inline_loop_once(node)
            return True
    return False


def _run_block(block: Block, made: _Made) -> bool:
    changed = False
    i = 0
    while i < len(block.nodes):
        node = block.nodes[i]
        if simplify_control(node):
            changed = True
            continue  # the inlined nodes start at index i
        if node.kind == "prim::If":
            changed |= propagate_condition(node)
            changed |= simplify_if_outputs(node)
        repl = simplify(node, made) if any(o.uses for o in node.outputs) else None
        if repl is not None and all(r.type == o.type for r, o in zip(repl, node.outputs)):
            for o, r in zip(list(node.outputs), repl):
                o.replace_all_uses_with(r)
            changed = True
        for b in node.blocks:
            changed |= _run_block(b, made)
        i += 1
    return changed


@register("canonicalize")
def run(graph: Graph) -> bool:
    """Peephole: exact scalar identities (x*1, int x+0, x-0, x/1.0, --x, not not b, redundant int/float/bool
    conversions, tuple construct/unpack pairs; never float x+0.0, never array ops), constant-condition If ->
    taken branch, zero-trip loops removed, loops with constant trip count 1 -> body. Leaves dead nodes to dce."""
    return _run_block(graph.block, _Made())
