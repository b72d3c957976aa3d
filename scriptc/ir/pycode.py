"""Prints a Graph back as Python-like source (TorchScript's ``.code``): what the compiler made of a function,
readable after inlining, unrolling and fusion. It is for reading, not for running: operators without Python
syntax print as calls (``aten.exp(x)``, ``prim.FusionGroup_0(x)``), and the fusion groups and callees a graph
refers to follow it as their own ``def``s.

    def f(x: "Double(*)", n: int) -> "Double(*)":
        x_1 = x
        for k in range(3):
            x_1 = aten.exp(x_1) * 2.0
        return x_1

Loops: a constant-true condition is a ``for ... in range(n)``; an unbounded trip count with a condition is a
``while``; both at once is a ``for`` with ``if not cond: break``. Each value used once, right where it is
made, is written inline; loop-carried values are plain variables assigned before the loop and at the end of
its body. A fused time loop (``prim::FusedLoop``) is the ``for`` over its steps that it means, each step a
call of its body's ``def``.
"""

from __future__ import annotations

import re

from .core import Block, Graph, Node, Value
from .registry import REGISTRY, Effect

INT64_MAX = 2**63 - 1
BINARY = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "floordiv": "//",
    "remainder": "%",
    "pow": "**",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "__and__": "&",
    "__or__": "|",
    "__xor__": "^",
    "__lshift__": "<<",
    "__rshift__": ">>",
    "matmul": "@",
}
UNARY = {"neg": "-", "bitwise_not": "~", "__not__": "not "}


def _ident(name: str) -> str:
    name = re.sub(r"\W", "_", name.split("::")[-1])
    return f"_{name}" if name[0].isdigit() else name


def _annotation(t) -> str:
    """The IR type as an annotation: quoted where it is not Python (``"Double(*, 3)"``)."""
    text = str(t)
    return f'"{text}"' if any(c in text for c in "(*[") else text


class PyCode:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        for k, g in enumerate(graph.subgraphs()):
            self.names[id(g)] = _ident(g.name) if g.name != "graph" else f"graph_{k}"

    def print(self, name: str) -> str:
        self.names[id(self.graph)] = _ident(name)  # a recursive call names the function itself
        self.function(self.graph, name)
        for g in self.graph.subgraphs():
            self.lines.append("")
            self.function(g, self.names[id(g)])
        return "\n".join(self.lines) + "\n"

    def function(self, g: Graph, name: str) -> None:
        params = ", ".join(f"{_ident(v.name)}: {_annotation(v.type)}" for v in g.inputs)
        outs = g.outputs
        ret = (
            _annotation(outs[0].type)
            if len(outs) == 1
            else _annotation("tuple[" + ", ".join(str(v.type) for v in outs) + "]")
        )
        self.lines.append(f"def {_ident(name)}({params}) -> {ret}:")
        self.inline: dict[int, str] = {}
        self.infix: set[int] = set()
        self.block(g.block, 1)
        self.emit(1, "return " + ", ".join(self.ref(v) for v in outs) if outs else "return None")

    # -- values -----------------------------------------------------------------------------------------
    def ref(self, v: Value, nested: bool = False) -> str:
        """How ``v`` is written: its name, or its expression when it is inlined (in parentheses when it is an
        operand of an operator)."""
        text = self.inline.get(id(v))
        if text is None:
            return _ident(v.name)
        return f"({text})" if nested and id(v) in self.infix else text

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def assign(self, depth: int, targets: list[Value], sources: list[str]) -> None:
        pairs = [(_ident(t.name), s) for t, s in zip(targets, sources) if _ident(t.name) != s]
        if pairs:
            self.emit(depth, ", ".join(t for t, _ in pairs) + " = " + ", ".join(s for _, s in pairs))

    # -- nodes ------------------------------------------------------------------------------------------
    def block(self, block: Block, depth: int) -> None:
        for n in block.nodes:
            self.node(n, depth)

    def node(self, n: Node, depth: int) -> None:
        if n.kind == "prim::Constant":
            self.inline[id(n.output)] = repr(n.attrs.get("value"))
            return
        if n.kind == "prim::Loop":
            return self.loop(n, depth)
        if n.kind == "prim::If":
            return self.if_(n, depth)
        if n.kind == "prim::FusedLoop":
            return self.fused_loop(n, depth)
        text = self.expression(n)
        if self.inlinable(n):
            self.inline[id(n.output)] = text
            if n.kind.split("::")[1] in BINARY or n.kind.split("::")[1] in UNARY:
                self.infix.add(id(n.output))
        elif n.outputs:
            self.emit(depth, ", ".join(_ident(v.name) for v in n.outputs) + " = " + text)
        else:
            self.emit(depth, text)

    @staticmethod
    def inlinable(n: Node) -> bool:
        """Used once, later in the same block, with nothing in between that has an effect: writing it at its
        use neither reorders an error nor reads memory a write changed in between."""
        if len(n.outputs) != 1 or len(n.output.uses) != 1 or n.blocks or _effect(n) > Effect.RAISES:
            return False
        user = n.output.uses[0].user
        if user.block is not n.block:
            return False
        nodes = n.block.nodes
        end = nodes.index(user) if user in nodes else len(nodes)  # else: the block's return uses it
        between = nodes[nodes.index(n) + 1 : end]
        return all(_effect(m) == Effect.PURE for m in between)

    def expression(self, n: Node) -> str:
        ns, op = n.kind.split("::")
        if ns == "aten" and (op in BINARY and len(n.inputs) == 2 or op in UNARY and len(n.inputs) == 1) and not n.attrs:
            a = [self.ref(v, nested=True) for v in n.inputs]
            return f"{a[0]} {BINARY[op]} {a[1]}" if op in BINARY else f"{UNARY[op]}{a[0]}"
        args = [self.ref(v) for v in n.inputs]
        if n.kind == "prim::Print":
            return "print(" + ", ".join(args) + ")"
        if n.kind == "prim::TupleIndex":
            fields = getattr(n.inputs[0].type, "fields", None)
            base = self.ref(n.inputs[0], nested=True)
            return f"{base}.{fields[n.attrs['index']]}" if fields else f"{base}[{n.attrs['index']}]"
        if n.kind == "prim::TupleConstruct":
            named = n.attrs.get("named")
            return (
                f"{named.rsplit('.', 1)[-1]}({', '.join(args)})"
                if named
                else "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
            )
        callee = f"{ns}.{op}"
        kwargs = []
        for k, v in n.attrs.items():
            if isinstance(v, Graph):
                callee = self.names[id(v)]  # a fusion group or callee: its def follows
            else:
                kwargs.append(f"{k}={v!r}")
        return f"{callee}(" + ", ".join(args + kwargs) + ")"

    def loop(self, n: Node, depth: int) -> None:
        trip, cond, *init = n.inputs
        body = n.blocks[0]
        index, *carried = body.params
        self.assign(depth, carried, [self.ref(v) for v in init])
        new_cond, *updates = body.returns
        always = (
            new_cond.node is not None
            and new_cond.node.kind == "prim::Constant"
            and new_cond.node.attrs.get("value") is True
        )
        unbounded = (
            trip.node is not None and trip.node.kind == "prim::Constant" and trip.node.attrs.get("value") == INT64_MAX
        )
        flag = _ident(n.outputs[0].name) + "_cond" if n.outputs else "_cond"
        if always:
            self.emit(depth, f"for {_ident(index.name)} in range({self.ref(trip)}):")
        elif unbounded:
            self.emit(depth, f"{flag} = {self.ref(cond)}")
            self.emit(depth, f"while {flag}:")
        else:
            self.emit(depth, f"{flag} = {self.ref(cond)}")
            self.emit(depth, f"for {_ident(index.name)} in range({self.ref(trip)}):")
            self.emit(depth + 1, f"if not {flag}: break")
        self.block(body, depth + 1)
        self.assign(depth + 1, carried, [self.ref(v) for v in updates])
        if not always:
            self.emit(depth + 1, f"{flag} = {self.ref(new_cond)}")
        if not body.nodes and not any(_ident(c.name) != self.ref(u) for c, u in zip(carried, updates)) and always:
            self.emit(depth + 1, "pass")
        self.assign(depth, list(n.outputs), [_ident(c.name) for c in carried])

    def fused_loop(self, n: Node, depth: int) -> None:
        """``for step in range(trips): carried = body(step, *carried, *invariants)``, which it means (the
        backends run the steps inside the loop over the elements)."""
        trips, *rest = n.inputs
        init, invariants = rest[: n.attrs["carried"]], rest[n.attrs["carried"] :]
        carried = ", ".join(_ident(v.name) for v in n.outputs)
        self.assign(depth, list(n.outputs), [self.ref(v) for v in init])
        self.emit(
            depth, f"for step in range({self.ref(trips)}):  # fused: the steps run inside one pass over the elements"
        )
        body = self.names[id(n.attrs["subgraph"])]
        self.emit(depth + 1, f"{carried} = {body}(" + ", ".join(["step", carried, *map(self.ref, invariants)]) + ")")

    def if_(self, n: Node, depth: int) -> None:
        self.emit(depth, f"if {self.ref(n.inputs[0])}:")
        for k, b in enumerate(n.blocks):
            if k == 1:
                self.emit(depth, "else:")
            start = len(self.lines)
            self.block(b, depth + 1)
            self.assign(depth + 1, list(n.outputs), [self.ref(v) for v in b.returns])
            if len(self.lines) == start:
                self.emit(depth + 1, "pass")


def _effect(n: Node) -> Effect:
    op = REGISTRY.get(n.kind)
    return op.effect if op is not None else Effect.IO


def python_code(graph: Graph, name: str) -> str:
    return PyCode(graph).print(name)
