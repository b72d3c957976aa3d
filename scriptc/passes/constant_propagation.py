"""constant-propagation: fold nodes whose inputs are all constants, by calling the operator's reference
implementation (``OpDef.impl``, the one the interpreter runs: no operator is re-implemented here).

- A node is folded only when its effect is PURE, or RAISES and evaluating it does not raise (when it raises,
  the node stays: the error must happen at run time, after what runs before it). WRITES/IO nodes and
  prim::Uninitialized are never folded.
- Only results that are scalars (int, float, bool), str or None become constants; arrays never, and tuples
  neither (a tuple constant has no text form the parser reads back; tuple construct/index pairs are
  simplified by canonicalize instead). Nodes reading an array constant are not folded either. Results are normalized
  exactly as the interpreter does (ints wrap to
  64 bits) and must have the node's declared type.
- A RAISES node without outputs (prim::AssertBound) whose evaluation succeeds is removed.
- ``prim::If`` with a constant condition is replaced by its taken block; ``prim::Loop`` whose initial condition
  is constant false or whose max trip count is a constant <= 0 is replaced by its initial carried values; an
  If output both blocks give alike (or True/False: the condition) is replaced, as canonicalize does.

One forward walk; values folded early make later nodes (and nested blocks) constant in the same run.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..ops.interpreter import normalize
from ..ir.core import Block, Graph, Node
from ..ir.registry import Effect, lookup, type_of
from ..ir.types import BOOL, FLOAT, INT, NONE, STR
from .analysis import (
    constant_value,
    inline_if_branch,
    is_constant,
    is_tensor,
    make_constant,
    replace_loop_by_inits,
    simplify_if_outputs,
    trip_count,
)
from .manager import register

_FOLDABLE_TYPES = (INT, FLOAT, BOOL, STR, NONE)
_NEVER = {"prim::Constant", "prim::Uninitialized", "prim::If", "prim::Loop", "prim::CallFunction"}
# Folding must not take longer than a moment: huge integer powers and shifts are left to run time.
_BIG_EXPONENT = 4096


def _too_costly(node: Node, args) -> bool:
    if node.kind in ("aten::pow", "aten::__lshift__") and all(isinstance(a, int) for a in args):
        return abs(args[1]) > _BIG_EXPONENT
    return False


_FAILED = object()


def evaluate(node: Node):
    """Run ``node``'s implementation on its constant inputs; _FAILED if it raises or may not be folded."""
    op = lookup(node.kind)
    if op.impl is None or op.effect >= Effect.WRITES:
        return _FAILED
    args = [constant_value(v) for v in node.inputs]
    if _too_costly(node, args):
        return _FAILED
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return op.impl(*args, **node.attrs)
    except Exception:  # noqa: BLE001 - it raises at run time; leave it there
        return _FAILED


def fold(node: Node) -> bool:
    """Fold one node whose inputs are constants; True if it was replaced."""
    if node.kind in _NEVER or node.blocks or not all(is_constant(v) for v in node.inputs):
        return False
    if any(is_tensor(v.type) for v in node.inputs):
        return False  # an array constant's contents may be written at run time
    if not all(o.type in _FOLDABLE_TYPES for o in node.outputs):
        return False
    out = evaluate(node)
    if out is _FAILED:
        return False
    n = len(node.outputs)
    if n == 0:
        node.destroy()  # a check that passes (prim::AssertBound on a constant true)
        return True
    values = [out] if n == 1 else list(out)
    if len(values) != n:
        return False
    normalized = []
    for o, x in zip(node.outputs, values):
        x = normalize(x, o.type)
        if not isinstance(x, (int, float, bool, str, type(None))) or type_of(x) != o.type:
            return False
        normalized.append(x)
    block = node.block
    at = block.nodes.index(node)
    for o, x in zip(list(node.outputs), normalized):
        c = make_constant(block, at, x, o.type)
        at += 1
        o.replace_all_uses_with(c)
    node.destroy()
    return True


def simplify_control(node: Node) -> bool:
    """Constant-condition If and zero-trip Loop; True if ``node`` was replaced."""
    if node.kind == "prim::If" and is_constant(node.inputs[0]):
        inline_if_branch(node, 0 if constant_value(node.inputs[0]) else 1)
        return True
    if node.kind == "prim::Loop":
        trips = trip_count(node)
        cond = node.inputs[1]
        if (trips is not None and trips <= 0) or (is_constant(cond) and not constant_value(cond)):
            replace_loop_by_inits(node)
            return True
    return False


def _run_block(block: Block) -> bool:
    changed = False
    i = 0
    while i < len(block.nodes):
        node = block.nodes[i]
        if node.kind == "prim::If" and is_constant(node.inputs[0]):
            simplify_control(node)  # the taken block's nodes now start at index i: visit them next
            changed = True
            continue
        if simplify_control(node):
            changed = True
            continue
        if fold(node):
            changed = True
            # the new constants sit at i..; skip past them
            while i < len(block.nodes) and block.nodes[i].kind == "prim::Constant":
                i += 1
            continue
        for b in node.blocks:
            changed |= _run_block(b)
        if node.kind == "prim::If":  # once its blocks are folded, an output may be a constant or the condition
            changed |= simplify_if_outputs(node)
        i += 1
    return changed


@register("constant-propagation")
def run(graph: Graph) -> bool:
    """Fold nodes with constant inputs through the operator's reference implementation (PURE ops, and RAISES
    ops whose evaluation does not raise; scalar/str/None results only, never arrays); inline prim::If with a
    constant condition; replace loops that run no iteration by their initial values."""
    return _run_block(graph.block)
