"""Shared queries and rewrites for the classic passes: constants, effects, may-raise, side effects, and small
structural edits (inline a block in place of its node, drop one input/output/parameter, make an op).

Effects come from the registry (``OpDef.effect``), refined here:

- ``may_raise(node)``: False only when the node provably cannot raise. Registry PURE ops with scalar operands
  never raise; PURE ops with an array operand may (broadcasting, dtype errors of a generic ``Tensor``) except
  the shape queries and copies in ``SAFE_ARRAY_OPS``. RAISES ops are proven safe for the scalar cases below
  (``+ - *`` on Python scalars never raise: ints wrap, floats overflow to inf; ``/ // %`` by a nonzero
  constant; conversions of ints and bools; ``range`` lengths with a nonzero constant step).
- ``maybe_unbound(graph)``: values that may be the unbound-local marker (ops on it raise TypeError).
- ``is_removable(node)``: no side effect and cannot raise, so unused it may be deleted, and it may be computed
  once for two identical uses or earlier than written (when its inputs are available).
- ``has_side_effects(node)``: WRITES or IO (calls, prints), or a prim::If/prim::Loop containing one.

Passes never import llvmlite; the interpreter's normalization of results (64-bit int wrap) is reused by folding.
"""

from __future__ import annotations

import math

from ..ir.builder import Builder
from ..ir.core import Block, Node, Value, constant_value, is_constant  # noqa: F401  (passes import them here)
from ..ir.registry import REGISTRY, Effect, lookup
from ..ir.types import BOOL, FLOAT, INT, ListType, TensorType, TupleType, Type

STRUCTURAL = ("prim::If", "prim::Loop", "prim::CallFunction")

# PURE ops taking arrays that cannot raise on any array: shape queries, transposition, copies and casts.
SAFE_ARRAY_OPS = frozenset(
    {
        "aten::size",
        "aten::dim",
        "aten::numel",
        "aten::numpy_T",
        "aten::clone",
        "aten::to",
        "aten::zeros_like",
        "aten::ones_like",
        "aten::empty_like",
    }
)
# Ops whose result depends on an array's shape only, never on its contents (writes cannot change it).
SHAPE_ONLY_OPS = frozenset({"aten::size", "aten::dim", "aten::numel"})

_NUMBERS = (INT, FLOAT, BOOL)


def is_tensor(t: Type) -> bool:
    return isinstance(t, TensorType)


# -- constants -------------------------------------------------------------------------------------------
def is_constant_value(v: Value, want) -> bool:
    """``v`` is a constant equal to ``want`` with the same Python type (``1`` is not ``True`` nor ``1.0``)."""
    if not is_constant(v):
        return False
    c = constant_value(v)
    if type(c) is not type(want):
        return False
    if isinstance(c, float):
        return c == want and math.copysign(1.0, c) == math.copysign(1.0, want)
    return c == want


def is_true_constant(v: Value) -> bool:
    return is_constant(v) and v.type == BOOL and constant_value(v) is True


def make_constant(block: Block, at: int, value, type: Type | None = None) -> Value:
    """Insert ``prim::Constant[value=...]`` into ``block`` at index ``at``; its type is the value's."""
    return Builder.at_index(block, at).constant(value, type)


def insert_op(block: Block, at: int, kind: str, inputs, attrs=None, source=None, hint=None) -> Node:
    """Insert a node of ``kind`` typed by its operator's rule."""
    return Builder.at_index(block, at).op(kind, inputs, attrs=attrs, source=source, hints=hint)


# -- effects ---------------------------------------------------------------------------------------------
def effect(node: Node) -> Effect:
    op = REGISTRY.get(node.kind)
    return Effect.IO if op is None else op.effect


def has_side_effects(node: Node) -> bool:
    """Writes memory or does I/O (a call is unknown: I/O), here or in a nested block."""
    if node.kind == "prim::CallFunction":
        return True
    if node.blocks:
        return any(has_side_effects(n) for b in node.blocks for n in b.nodes)
    return effect(node) >= Effect.WRITES


def block_has_side_effects(block: Block) -> bool:
    return any(has_side_effects(n) for n in block.nodes)


def _nonzero_constant(v: Value) -> bool:
    return (
        is_constant(v)
        and v.type in _NUMBERS
        and constant_value(v) != 0
        and not (isinstance(constant_value(v), float) and math.isnan(constant_value(v)))
    )


_TOTAL_REDUCTIONS = frozenset({"aten::sum", "aten::mean", "aten::prod"})


def may_raise(node: Node) -> bool:
    """False only if this (non-structural) node cannot raise for any operand values."""
    kind = node.kind
    if kind in STRUCTURAL:
        return True
    eff = effect(node)
    ins = node.inputs
    types = [v.type for v in ins]
    if eff >= Effect.WRITES:
        return True
    if eff == Effect.PURE:
        if any(isinstance(t, ListType) for t in types) or isinstance(
            node.outputs[0].type if node.outputs else None, ListType
        ):
            return False  # list_len, list_contains (== of scalars), ListConstruct, list_add
        if any(is_tensor(t) for t in types):
            return kind not in SAFE_ARRAY_OPS
        return False
    # RAISES: the proven-safe cases
    if kind in _TOTAL_REDUCTIONS and len(ins) == 1 and is_tensor(types[0]) and types[0].known:
        return False  # a sum, mean or product of any array is a number (empty: 0, nan, 1)
    arrays = [t for t in types if is_tensor(t)]
    if (
        len(arrays) == 1
        and arrays[0].dtype in ("float64", "float32", "float16")
        and lookup(kind).elementwise
        and all(t in _NUMBERS or is_tensor(t) for t in types)
    ):
        return False  # float arrays with scalars: NumPy gives inf and nan where Python would raise
    if not all(t in _NUMBERS for t in types):
        return True
    if kind in (
        "aten::add",
        "aten::sub",
        "aten::mul",
        "aten::neg",
        "aten::abs",
        "aten::Float",
        "aten::Bool",
        "aten::__and__",
        "aten::__or__",
        "aten::__xor__",
    ):
        return False
    if kind in ("aten::div", "aten::floordiv", "aten::remainder"):
        return not _nonzero_constant(ins[1])
    if kind in ("aten::Int", "aten::floor", "aten::ceil", "aten::trunc"):
        return any(t == FLOAT for t in types)
    if kind in ("aten::__range_length", "aten::__range_last"):
        return not _nonzero_constant(ins[2])
    if kind == "prim::AssertBound":
        return not is_true_constant(ins[0])
    return True


def is_removable(node: Node, unbound: set | None = None) -> bool:
    """No side effect and cannot raise: an unused one may go, a repeated one may be computed once. With
    ``unbound`` (``maybe_unbound``), a node reading a possibly unbound value is not removable: on the unbound
    value it would raise (TypeError) where its prim::AssertBound does not guard it."""
    if unbound and node.kind not in _MARKER_SAFE and any(id(v) in unbound for v in node.inputs):
        return False
    return node.kind not in STRUCTURAL and not has_side_effects(node) and not may_raise(node)


_MARKER_SAFE = frozenset({"prim::TupleConstruct"})  # ops that only hold their operands, never use them


def maybe_unbound(graph) -> set[int]:
    """ids of the values that may hold the unbound marker at run time: prim::Uninitialized outputs and
    everything computed from them (through any node, If outputs and loop-carried values). An op given the
    marker raises TypeError, so such nodes must not be moved above (or removed from below) their
    prim::AssertBound check."""
    tainted: set[int] = set()
    if not any(node.kind == "prim::Uninitialized" for node in graph.walk()):
        return tainted  # (most graphs: one quick walk, not the fixpoint's)
    changed = True
    while changed:
        changed = False

        def mark(v):
            nonlocal changed
            if id(v) not in tainted:
                tainted.add(id(v))
                changed = True

        for node in graph.walk():
            if node.kind == "prim::Uninitialized":
                for o in node.outputs:
                    mark(o)
            elif node.kind == "prim::If":
                for k, o in enumerate(node.outputs):
                    if any(id(b.returns[k]) in tainted for b in node.blocks):
                        mark(o)
            elif node.kind == "prim::Loop":
                body = node.blocks[0]
                for j, o in enumerate(node.outputs):
                    if id(node.inputs[2 + j]) in tainted or id(body.returns[1 + j]) in tainted:
                        mark(o)
                        mark(body.params[1 + j])
            elif any(id(v) in tainted for v in node.inputs):
                for o in node.outputs:
                    mark(o)
    return tainted


def is_mutable(t: Type) -> bool:
    """Arrays and lists: values whose contents a write can change (lists: append, pop, item assignment)."""
    return is_tensor(t) or isinstance(t, ListType)


def reads_arrays(node: Node) -> bool:
    """Its result may depend on array or list contents (which a write can change; a list's length too)."""
    return node.kind not in SHAPE_ONLY_OPS and any(is_mutable(v.type) or _contains_tensor(v.type) for v in node.inputs)


def makes_array(node: Node) -> bool:
    """It produces an array (a fresh one or a view) or a list: such nodes are never merged, hoisted nor
    folded, since two evaluations give two distinct objects."""
    return any(is_mutable(o.type) or _contains_tensor(o.type) for o in node.outputs)


def _contains_tensor(t: Type) -> bool:
    return isinstance(t, TupleType) and any(is_mutable(e) or _contains_tensor(e) for e in t.elems)


# -- structural edits ----------------------------------------------------------------------------------
def remove_input(node: Node, i: int) -> None:
    """Drop input ``i`` of ``node`` (also a block's return node), keeping use lists right."""
    vals = list(node.inputs)
    node.drop_inputs()
    for j, v in enumerate(vals):
        if j != i:
            node.add_input(v)


def remove_output(node: Node, i: int) -> None:
    out = node.outputs[i]
    assert not out.uses, f"%{out.name} is still used"
    node.outputs.pop(i)


def remove_param(block: Block, i: int) -> None:
    p = block.params[i]
    assert not p.uses, f"%{p.name} is still used"
    block.params.pop(i)


def move_nodes_before(src: Block, anchor: Node) -> None:
    """Move every node of ``src`` into ``anchor``'s block, in order, just before ``anchor``."""
    dst = anchor.block
    at = dst.nodes.index(anchor)
    moved = list(src.nodes)
    src.nodes.clear()
    for n in moved:
        n.block = dst
    dst.nodes[at:at] = moved


def inline_if_branch(node: Node, taken: int) -> None:
    """Replace ``prim::If`` by the nodes of block ``taken``; its outputs become that block's returns."""
    block = node.blocks[taken]
    move_nodes_before(block, node)
    for out, r in zip(list(node.outputs), list(block.returns)):
        out.replace_all_uses_with(r)
    node.destroy()


def propagate_condition(node: Node) -> bool:
    """In the then-block of ``prim::If(c)`` c is True and in the else-block False: uses of c there become those
    constants (so a test of c repeated inside, or a loop c starts, folds away). True if anything changed."""
    cond = node.inputs[0]
    if is_constant(cond):
        return False
    changed = False
    for known, block in zip((True, False), node.blocks):
        uses = [u for u in cond.uses if u.user.block.is_within(block)]
        if uses:
            c = make_constant(block, 0, known)
            for u in uses:
                u.user.set_input(u.index, c)
            changed = True
    return changed


def simplify_if_outputs(node: Node) -> bool:
    """An If output that both branches give as the same value is that value; a bool output that is True in the
    then-block and False in the else-block is the condition. True if any use changed."""
    changed = False
    cond = node.inputs[0]
    then_b, else_b = node.blocks
    for k, out in enumerate(node.outputs):
        if not out.uses:
            continue
        a, b = then_b.returns[k], else_b.returns[k]
        if a is b and a.type == out.type:
            out.replace_all_uses_with(a)
            changed = True
        elif out.type == BOOL and is_constant_value(a, True) and is_constant_value(b, False):
            out.replace_all_uses_with(cond)
            changed = True
    return changed


def replace_loop_by_inits(node: Node) -> None:
    """A loop that runs no iteration: its outputs are the initial carried values."""
    for out, init in zip(list(node.outputs), list(node.inputs[2:])):
        out.replace_all_uses_with(init)
    node.destroy()


def inline_loop_once(node: Node) -> None:
    """Replace a loop known to run exactly one iteration by its body (iteration 0, carried = initial)."""
    block = node.block
    body = node.blocks[0]
    at = block.nodes.index(node)
    zero = make_constant(block, at, 0)
    body.params[0].replace_all_uses_with(zero)
    for p, init in zip(body.params[1:], node.inputs[2:]):
        p.replace_all_uses_with(init)
    move_nodes_before(body, node)
    for out, r in zip(list(node.outputs), list(body.returns[1:])):
        out.replace_all_uses_with(r)
    node.destroy()


def loops_post_order(block: Block) -> list[Node]:
    """The loops nested in ``block``, inner loops before the loops containing them."""
    out: list[Node] = []
    for n in block.nodes:
        for b in n.blocks:
            out.extend(loops_post_order(b))
        if n.kind == "prim::Loop":
            out.append(n)
    return out


def count_nodes(block: Block) -> int:
    return sum(1 for _ in block.walk())


def trip_count(node: Node):
    """The constant max trip count of a loop, or None."""
    v = node.inputs[0]
    return constant_value(v) if is_constant(v) and v.type == INT else None
