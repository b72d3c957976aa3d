"""Name analyses on the AST that SSA construction needs: which names a statement list stores and loads, and
which variables a loop must carry from one iteration to the next."""

from __future__ import annotations

import ast
from collections import Counter


def _names(node, ctx) -> list[str]:
    """Names with this context (ast.Store / ast.Load) in source order, without descending into nested scopes."""
    if isinstance(node, list):
        return [name for s in node for name in _node_names(s, ctx)]
    return list(_node_names(node, ctx))


def _node_names(node: ast.AST, ctx) -> tuple[str, ...]:
    """``_names`` of one node, kept on the node: the analyses ask again for every loop and every variable, and
    walking the tree each time made the frontend quadratic in the function's length. (A copy of the node does
    not take its memo: the frontend edits copies.)"""
    kept = node.__dict__.get("_scriptc_names")
    if kept is None or kept[0] != id(node):
        kept = node.__dict__["_scriptc_names"] = (id(node), {})
    memo = kept[1]
    found = memo.get(ctx)
    if found is None:
        out = []

        def walk(n):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ctx):
                out.append(n.id)
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and ctx is ast.Load:
                out.append(n.target.id)
            for child in ast.iter_child_nodes(n):
                if not isinstance(child, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
                    walk(child)

        walk(node)
        found = memo[ctx] = tuple(out)
    return found


def stores(node) -> list[str]:
    return list(dict.fromkeys(_names(node, ast.Store)))


def load_counts(node) -> Counter:
    return Counter(_names(node, ast.Load))


def contains(stmts, kinds, stop_at_loops=False) -> bool:
    """Whether any statement of these AST kinds occurs (optionally not looking inside nested loops)."""

    def walk(n):
        if isinstance(n, kinds):
            return True
        if stop_at_loops and isinstance(n, (ast.For, ast.While)):
            return False
        return any(walk(c) for c in ast.iter_child_nodes(n))

    return any(walk(s) for s in stmts)


def _definite_store(stmt, name) -> bool:
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    else:
        return False
    return any(name in _names(t, ast.Store) and not isinstance(t, ast.Subscript) for t in targets)


def iteration_local(name: str, body: list, prelude_loads: set[str], stored_first: bool) -> bool:
    """True when every read of ``name`` in the body follows an assignment in the same iteration, so its value
    never crosses from one iteration to the next."""
    if stored_first:
        return True
    if name in prelude_loads:
        return False
    for s in body:
        if name in _names(s, ast.Load) or isinstance(s, ast.AugAssign) and name in _names(s.target, ast.Store):
            return False
        if _definite_store(s, name):
            return True
    return True


def carried_names(loop: ast.For | ast.While, function_loads: Counter, defined_before) -> list[str]:
    """Variables a loop carries: those it assigns that exist before it, are read after it, or may be read
    in an iteration before that iteration assigns them."""
    body = loop.body
    target = stores(loop.target) if isinstance(loop, ast.For) else []
    assigned = list(dict.fromkeys(target + stores(body)))
    inner = load_counts(body)
    prelude = set()
    if isinstance(loop, ast.While):
        inner += load_counts(loop.test)
        prelude = set(load_counts(loop.test))
    carried = []
    for name in assigned:
        if defined_before(name) or function_loads[name] > inner[name]:
            carried.append(name)
        elif not iteration_local(name, body, prelude, name in target):
            carried.append(name)
    return carried


_EXACT = {
    ast.Add: int.__add__,
    ast.Sub: int.__sub__,
    ast.Mult: int.__mul__,
    ast.BitAnd: int.__and__,
    ast.BitOr: int.__or__,
    ast.BitXor: int.__xor__,
}
TOO_BIG = object()  # an int literal expression too large to compute (2 ** 10 ** 9): far beyond 64 bits
_MAX_BITS = 1 << 16


def literal_int(node) -> int | object | None:
    """The exact value of an int expression written with literals only (``10 ** 30``, ``-(1 << 40) * 3``), as
    CPython computes it; ``TOO_BIG`` for one too large to compute (and anything computed from it); None for
    anything else (a name, a float, a raising one such as ``1 // 0`` or ``2 ** -1``)."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        v = literal_int(node.operand)
        if v is None or v is TOO_BIG:
            return v
        return -v if isinstance(node.op, ast.USub) else ~v if isinstance(node.op, ast.Invert) else v
    if not isinstance(node, ast.BinOp):
        return None
    a, b = literal_int(node.left), literal_int(node.right)
    if a is None or b is None:
        return None
    if a is TOO_BIG or b is TOO_BIG:
        return TOO_BIG
    op = type(node.op)
    if op in _EXACT:
        return _EXACT[op](a, b)
    if op in (ast.FloorDiv, ast.Mod) and b:
        return a // b if op is ast.FloorDiv else a % b
    if op is ast.Pow and 0 <= b:
        return a**b if abs(a) <= 1 or b * a.bit_length() <= _MAX_BITS else TOO_BIG
    if op is ast.LShift and 0 <= b:
        return a << b if b <= _MAX_BITS or not a else TOO_BIG
    if op is ast.RShift and 0 <= b:
        return a >> b
    return None
