"""inline: replace every ``prim::CallFunction[fn=G]`` by a copy of G's body.

The callee's parameters become the call's arguments, its return value replaces the call's output, and its
values get fresh names from the caller graph (``Graph.fresh_name``). Calls found in the copied bodies (callees
of callees) are inlined in turn, until no call is left. Callee graphs are copied, never modified (they are
shared with the functions that own them).

Calls to a recursive graph (one that reaches itself through its calls) stay calls: native code makes a real
call there. Assumes: a callee graph has one output.
"""

from __future__ import annotations

from ..ir.clone import clone_nodes_into
from ..ir.core import Graph, Node
from .manager import register

MAX_ROUNDS = 64  # a call chain deeper than this would be recursion, which the frontend rejects


def inline_call(node: Node) -> None:
    """Inline one ``prim::CallFunction`` node in place."""
    callee: Graph = node.attrs["fn"]
    block = node.block
    at = block.nodes.index(node)
    value_map = {id(p): a for p, a in zip(callee.inputs, node.inputs)}
    results = clone_nodes_into(callee.block, block, at, value_map)
    for out, r in zip(list(node.outputs), results):
        out.replace_all_uses_with(r)
    node.destroy()


def _callees(graph: Graph) -> list:
    return [n.attrs["fn"] for n in graph.walk() if n.kind == "prim::CallFunction"]


def is_recursive(graph: Graph) -> bool:
    """Whether ``graph`` reaches itself through its calls."""
    seen, stack = set(), _callees(graph)
    while stack:
        g = stack.pop()
        if g is graph:
            return True
        if id(g) not in seen:
            seen.add(id(g))
            stack.extend(_callees(g))
    return False


@register("inline")
def run(graph: Graph) -> bool:
    """Inline every prim::CallFunction (callees of callees too): the callee's body is copied into the caller
    with fresh value names; the callee graph itself is left unchanged. Calls to recursive graphs stay."""
    changed = False
    for _ in range(MAX_ROUNDS):
        calls = [n for n in graph.walk() if n.kind == "prim::CallFunction" and not is_recursive(n.attrs["fn"])]
        if not calls:
            return changed
        for n in calls:
            inline_call(n)
        changed = True
    raise RecursionError(f"inline: call chain in graph {graph.name} deeper than {MAX_ROUNDS} (recursion?)")
