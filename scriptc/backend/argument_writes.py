"""Which array arguments a graph may write: ``written_inputs(graph) -> {input index: NumPy's message}``.

NumPy refuses to write into a read-only array (``np.frombuffer(bytes)``, ``flags.writeable = False``) with
``ValueError``; native code cannot see the flag, so the call boundary checks it for every argument this
analysis finds written, and raises the message NumPy gives for the first write (in program order) that may
reach it: ``output array is read-only`` for in-place arithmetic (a ufunc's ``out=``), ``assignment destination
is read-only`` for every other write (index and slice assignment, ``fill``).

A may-alias analysis over the whole graph, flow-insensitive, computed to a fixed point: each value gets the set
(a bit mask) of graph inputs whose memory it may share.

- a graph input aliases itself; scalars and strs alias nothing;
- a node's array (or tuple, list, ...) outputs alias everything its inputs alias, unless the operator is known
  to allocate its result (element-wise operators, fusion groups, reductions, copies and casts, ``*_like``,
  matmul/dot/where/clip): views (select, slice, reshape, transpose) and any operator added later are
  aliases by default, so a new view can only make the check stricter, never miss a write;
- ``prim::If`` outputs alias what any branch returns; loop-carried values what flows in or around;
- a WRITES node whose first operand is an array writes what that operand aliases; one whose first operand is
  a container (a list) writes the container, not the arrays in it, and makes it alias its other operands
  (``lst.append(x)``);
- ``prim::CallFunction``: the callee's own summary (the inputs it writes, what its result aliases), mapped onto
  the arguments; recursive callees are solved by iterating every summary until none changes.

A fusion group marked ``reuse=k`` writes into input ``k`` only when, at run time, that buffer has a reference
count of one, which borrowed arguments and their views never have (their meminfo is null): it is not a write
of an argument.
"""

from __future__ import annotations

from ..ir.core import Graph, Node
from ..ir.registry import REGISTRY, Effect
from ..ir.types import BOOL, FLOAT, INT, NONE, STR, TensorType, Type

OUTPUT_READ_ONLY = "output array is read-only"
ASSIGNMENT_READ_ONLY = "assignment destination is read-only"

# Operators whose array result is always newly allocated (beyond the element-wise ones).
FRESH_RESULT = frozenset(
    {
        "prim::FusionGroup",
        "aten::clone",
        "aten::to",
        "aten::zeros_like",
        "aten::ones_like",
        "aten::empty_like",
        "aten::full_like",
        "aten::sum",
        "aten::prod",
        "aten::mean",
        "aten::max",
        "aten::min",
        "aten::any",
        "aten::all",
        "aten::argmax",
        "aten::argmin",
        "aten::matmul",
        "aten::dot",
        "aten::where",
        "aten::clip",
    }
)
_NO_MEMORY = (INT, FLOAT, BOOL, STR, NONE)


class _Summary:
    """What a graph does to its inputs: written inputs (index -> message), and per output the inputs it
    may alias (bit mask)."""

    __slots__ = ("written", "returns")

    def __init__(self, written: dict[int, str], returns: tuple[int, ...]):
        self.written, self.returns = written, returns

    def __eq__(self, other):
        return self.written == other.written and self.returns == other.returns


def written_inputs(graph: Graph) -> dict[int, str]:
    """{index of a graph input that may be written (through any alias, in any callee): NumPy's message}."""
    memo: dict[int, _Summary] = {}
    while True:
        before = dict(memo)
        done: set[int] = set()
        guessed = False

        def summary(g: Graph) -> _Summary:
            nonlocal guessed
            key = id(g)
            if key in done:  # being computed (recursion) or computed this round: the latest value
                guessed = guessed or key not in memo
                return memo.get(key) or _Summary({}, (0,) * len(g.outputs))
            done.add(key)
            memo[key] = _flow(g, summary)
            return memo[key]

        top = summary(graph)
        if memo == before or not (guessed or before):  # (no recursion: one round is exact)
            return top.written


def _may_hold_memory(t: Type) -> bool:
    return t not in _NO_MEMORY


def _fresh(node: Node) -> bool:
    op = REGISTRY.get(node.kind)
    return node.kind in FRESH_RESULT or (op is not None and op.elementwise)


def _write_message(node: Node) -> str:
    op = REGISTRY.get(node.kind)
    return OUTPUT_READ_ONLY if op is not None and op.extra.get("inplace_of") else ASSIGNMENT_READ_ONLY


def _flow(graph: Graph, summary) -> _Summary:
    alias: dict[int, int] = {id(v): 1 << i for i, v in enumerate(graph.inputs) if _may_hold_memory(v.type)}

    def get(v) -> int:
        return alias.get(id(v), 0)

    changed = True

    def add(v, mask: int) -> None:
        nonlocal changed
        if mask and _may_hold_memory(v.type) and mask & ~get(v):
            alias[id(v)] = get(v) | mask
            changed = True

    while changed:
        changed = False
        for node in graph.walk():
            kind = node.kind
            if kind == "prim::If":
                for j, out in enumerate(node.outputs):
                    for block in node.blocks:
                        add(out, get(block.returns[j]))
            elif kind == "prim::Loop":
                body = node.blocks[0]
                for j, out in enumerate(node.outputs):
                    mask = get(node.inputs[2 + j]) | get(body.returns[1 + j])
                    add(out, mask)
                    add(body.params[1 + j], mask)
            elif kind == "prim::CallFunction":
                callee = summary(node.attrs["fn"])
                for out, returned in zip(node.outputs, callee.returns):
                    add(out, _union(get(a) for i, a in enumerate(node.inputs) if returned >> i & 1))
            else:
                if _is_write(node) and not isinstance(node.inputs[0].type, TensorType):
                    add(node.inputs[0], _union(get(v) for v in node.inputs[1:]))
                if not _fresh(node):
                    mask = _union(get(v) for v in node.inputs)
                    for out in node.outputs:
                        add(out, mask)

    written: dict[int, str] = {}
    for node in graph.walk():  # program order: the first write of an input gives its message
        if node.kind == "prim::CallFunction":
            for i, message in summary(node.attrs["fn"]).written.items():
                _mark(written, get(node.inputs[i]), message)
        elif _is_write(node) and isinstance(node.inputs[0].type, TensorType):
            _mark(written, get(node.inputs[0]), _write_message(node))
    return _Summary(written, tuple(get(v) for v in graph.outputs))


def _is_write(node: Node) -> bool:
    op = REGISTRY.get(node.kind)
    return op is not None and op.effect == Effect.WRITES and bool(node.inputs)


def _mark(written: dict[int, str], mask: int, message: str) -> None:
    i = 0
    while mask:
        if mask & 1:
            written.setdefault(i, message)
        mask >>= 1
        i += 1


def _union(masks) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


__all__ = ["ASSIGNMENT_READ_ONLY", "OUTPUT_READ_ONLY", "written_inputs"]
