"""The SSA IR: a Graph owns a top Block; a Block has parameters, an ordered list of Nodes and a return Node;
a Node has a kind (``aten::add``), input Values, output Values, attributes and nested Blocks.

Values keep use lists so that passes can rewrite with ``replace_all_uses_with``. Every value gets a name that is
unique within its graph when it is created (``Graph.fresh_name``), so printing needs no renaming and
``parse(print(g))`` prints the same text.
"""

from __future__ import annotations

import re
from typing import Iterator

from .records import record
from .types import Type


@record(frozen=True)
class SourceRange:
    """A span of user source; columns are 1-based as editors and compilers report them."""

    filename: str
    line: int
    col: int
    end_line: int | None = None
    end_col: int | None = None

    def __init__(self, filename: str, line: int, col: int, end_line: int | None = None, end_col: int | None = None):
        set_field = object.__setattr__
        set_field(self, "filename", filename)
        set_field(self, "line", line)
        set_field(self, "col", col)
        set_field(self, "end_line", end_line)
        set_field(self, "end_col", end_col)

    def short(self) -> str:
        return f"{self.filename.rsplit('/', 1)[-1]}:{self.line}:{self.col}"


class Use:
    __slots__ = ("user", "index")

    def __init__(self, user: "Node", index: int):
        self.user, self.index = user, index


class Value:
    __slots__ = ("type", "name", "node", "block", "uses")

    def __init__(self, type: Type, name: str, node: "Node | None" = None, block: "Block | None" = None):
        self.type, self.name, self.node, self.block = type, name, node, block
        self.uses: list[Use] = []

    def replace_all_uses_with(self, other: "Value") -> None:
        for use in list(self.uses):
            use.user.set_input(use.index, other)

    @property
    def owning_block(self) -> "Block":
        return self.block if self.block is not None else self.node.block

    def __repr__(self):
        return f"%{self.name} : {self.type}"


class Node:
    def __init__(self, kind: str, inputs=(), output_types=(), attrs=None, source: SourceRange | None = None):
        self.kind = kind
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.blocks: list[Block] = []
        self.attrs: dict = dict(attrs or {})
        self.source = source
        self.block: Block | None = None
        self._pending_outputs = list(output_types)
        for v in inputs:
            self.add_input(v)

    # -- inputs -------------------------------------------------------------------------------
    def add_input(self, v: Value) -> None:
        v.uses.append(Use(self, len(self.inputs)))
        self.inputs.append(v)

    def set_input(self, i: int, v: Value) -> None:
        old = self.inputs[i]
        old.uses = [u for u in old.uses if not (u.user is self and u.index == i)]
        v.uses.append(Use(self, i))
        self.inputs[i] = v

    def drop_inputs(self) -> None:
        for i, v in enumerate(self.inputs):
            v.uses = [u for u in v.uses if not (u.user is self and u.index == i)]
        self.inputs = []

    # -- structure ----------------------------------------------------------------------------
    def add_output(self, type: Type, name: str) -> Value:
        v = Value(type, name, node=self)
        self.outputs.append(v)
        return v

    def add_block(self) -> "Block":
        b = Block(self.graph if self.block else None, owner=self)
        self.blocks.append(b)
        return b

    @property
    def graph(self) -> "Graph":
        return self.block.graph

    @property
    def output(self) -> Value:
        assert len(self.outputs) == 1, self.kind
        return self.outputs[0]

    def destroy(self) -> None:
        """Remove from its block; its outputs must be unused."""
        for b in self.blocks:
            for n in reversed(list(b.nodes)):
                n.destroy()
            b.return_node.drop_inputs()
        self.drop_inputs()
        self.block.nodes.remove(self)
        self.block = None

    def walk(self) -> Iterator["Node"]:
        yield self
        for b in self.blocks:
            yield from b.walk()

    def __repr__(self):
        return f"<Node {self.kind}>"


class Block:
    def __init__(self, graph: "Graph | None", owner: Node | None = None):
        self.graph = graph
        self.owner = owner
        self.params: list[Value] = []
        self.nodes: list[Node] = []
        self.return_node = Node("prim::Return")
        self.return_node.block = self

    def is_within(self, other: "Block") -> bool:
        """Whether this block is ``other`` or nested (at any depth) in a node of ``other``."""
        b = self
        while b is not None:
            if b is other:
                return True
            b = b.owner.block if b.owner is not None else None
        return False

    def add_param(self, type: Type, hint: str | None = None) -> Value:
        v = Value(type, self.graph.fresh_name(hint), block=self)
        self.params.append(v)
        return v

    @property
    def returns(self) -> list[Value]:
        return self.return_node.inputs

    def add_return(self, v: Value) -> None:
        self.return_node.add_input(v)

    def append(self, node: Node, at: int | None = None) -> Node:
        node.block = self
        for b in node.blocks:
            b._adopt(self.graph)
        for t, hint in node._pending_outputs:
            node.add_output(t, self.graph.fresh_name(hint))
        node._pending_outputs = []
        if at is None:
            self.nodes.append(node)
        else:
            self.nodes.insert(at, node)
        return node

    def _adopt(self, graph: "Graph") -> None:
        self.graph = graph
        for n in self.nodes:
            for b in n.blocks:
                b._adopt(graph)

    def walk(self) -> Iterator[Node]:
        for n in self.nodes:
            yield n  # (not n.walk(): a generator per node, for the few that hold blocks)
            for b in n.blocks:
                yield from b.walk()


class Graph:
    """A function body. ``name`` names it where another graph refers to it (prim::CallFunction)."""

    def __init__(self, name: str = "graph"):
        self.name = name
        self._used: set[str] = set()
        self._next_number = 0
        self.block = Block(self)

    @property
    def inputs(self) -> list[Value]:
        return self.block.params

    @property
    def outputs(self) -> list[Value]:
        return self.block.returns

    def add_input(self, type: Type, hint: str | None = None) -> Value:
        return self.block.add_param(type, hint)

    def fresh_name(self, hint: str | None = None) -> str:
        """A name not used yet in this graph: ``x``, then ``x.1``, ``x.2``...; numbers when there is no hint."""
        if hint is None:
            while str(self._next_number) in self._used:
                self._next_number += 1
            name = str(self._next_number)
        else:
            base = re.sub(r"\.\d+$", "", hint)
            name, k = hint, 0
            while name in self._used:
                k += 1
                name = f"{base}.{k}"
        self._used.add(name)
        return name

    def claim_name(self, name: str) -> None:
        """Reserve a name exactly as given (the parser keeps the names it reads)."""
        if name in self._used:
            raise ValueError(f"value %{name} defined twice")
        self._used.add(name)

    def namer_state(self):
        return set(self._used), self._next_number

    def restore_namer(self, state) -> None:
        used, self._next_number = state
        self._used = set(used)

    @property
    def nodes(self) -> list[Node]:
        return self.block.nodes

    def walk(self) -> Iterator[Node]:
        return self.block.walk()

    def subgraphs(self) -> list["Graph"]:
        """Graphs referred to by attributes of nodes (callees, fusion groups), each once, in first-use order."""
        seen: dict[int, Graph] = {}
        stack = [self]
        while stack:  # depth first, without revisiting: recursive functions call graphs that call them back
            found = [
                a
                for n in stack.pop().walk()
                for a in n.attrs.values()
                if isinstance(a, Graph) and id(a) not in seen and a is not self
            ]
            for a in found:
                seen.setdefault(id(a), a)
            stack.extend(reversed(found))
        return list(seen.values())

    def __str__(self):
        from .printer import print_graph  # (cycle: printer imports this module)

        return print_graph(self)


def is_constant(v: Value) -> bool:
    """Whether ``v`` is the output of a ``prim::Constant``."""
    return v.node is not None and v.node.kind == "prim::Constant"


def constant_value(v: Value):
    """The Python value of a prim::Constant output (None for the None constant)."""
    return v.node.attrs.get("value")
