"""Prints a Graph in TorchScript's text format; ``parser.parse`` reads the same text back.

    graph(%x : Tensor,
          %n : int):
      %y : Tensor = prim::Loop(%n, %true, %x)  # f.py:4:5
        block0(%i : int, %x.1 : Tensor):
          ...
          -> (%true, %x.2)
      return (%y)
    with helper = graph(...)

Graphs referred to by node attributes (callees, fusion groups) are printed after the main graph in
``with NAME = graph(...)`` sections; an attribute names them.
"""

from __future__ import annotations

import math

import numpy as np

from .arrayconst import UnrestoredArray, format_array
from .core import Block, Graph, Node
from .types import BOOL


def format_attr(value, names: dict[int, str]) -> str:
    if isinstance(value, Graph):
        return names[id(value)]
    if isinstance(value, (np.ndarray, UnrestoredArray)):
        return format_array(value)  # a module-level array frozen into the graph
    if isinstance(value, np.generic) and not isinstance(value, np.bool_):
        value = value.item()  # a NumPy scalar constant: its value (the output's type says which dtype)
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return repr(value)
        return repr(value)
    if isinstance(value, str):
        return '"' + value.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'
    if isinstance(value, tuple):  # (axes): parsed back as a tuple
        return "(" + ", ".join(format_attr(v, names) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(format_attr(v, names) for v in value) + "]"
    return str(value)


def _attrs(node: Node, names) -> str:
    if not node.attrs:
        return ""
    parts = []
    for k, v in node.attrs.items():
        if node.kind == "prim::Constant" and k == "value" and node.outputs and node.outputs[0].type == BOOL:
            parts.append(f"value={int(v)}")  # TorchScript writes bool constants as 1/0
        else:
            parts.append(f"{k}={format_attr(v, names)}")
    return "[" + ", ".join(parts) + "]"


class Printer:
    def __init__(self, graph: Graph, sources: bool = True, anonymous: bool = False):
        self.sources = sources
        self.lines: list[str] = []
        self.names: dict[int, str] = {id(graph): graph.name}  # a recursive graph calls itself by name
        taken: set[str] = {graph.name}
        for k, g in enumerate(graph.subgraphs()):
            name, n = (f"graph.{k}", 0) if anonymous else (g.name, 0)
            while name in taken:
                n += 1
                name = f"{g.name}.{n}"
            taken.add(name)
            self.names[id(g)] = name
        self.graph = graph
        # anonymous: values numbered in printing order, so that graphs equal but for names print alike
        self.value_names: dict[int, str] | None = {} if anonymous else None

    def _name(self, v) -> str:
        if self.value_names is None:
            return v.name
        return self.value_names.setdefault(id(v), str(len(self.value_names)))

    def _values(self, vs) -> str:
        return ", ".join(f"%{self._name(v)}" for v in vs)

    def _typed(self, vs) -> str:
        return ", ".join(f"%{self._name(v)} : {v.type}" for v in vs)

    def print(self) -> str:
        self.print_graph(self.graph, "graph")
        for g in self.graph.subgraphs():
            self.print_graph(g, f"with {self.names[id(g)]} = graph")
        return "\n".join(self.lines) + "\n"

    def print_graph(self, g: Graph, head: str) -> None:
        pad = " " * (len(head) + 1)
        params = [f"%{self._name(v)} : {v.type}" for v in g.inputs]
        self.lines.append(head + "(" + f",\n{pad}".join(params) + "):")
        self.print_nodes(g.block, 1)
        self.lines.append(f"  return ({self._values(g.outputs)})")

    def print_nodes(self, block: Block, depth: int) -> None:
        for n in block.nodes:
            self.print_node(n, depth)

    def print_node(self, n: Node, depth: int) -> None:
        ind = "  " * depth
        inputs = self._values(n.inputs)
        line = f"{ind}{self._typed(n.outputs)} = {n.kind}{_attrs(n, self.names)}({inputs})"
        if n.source is not None and self.sources:
            line += f"  # {n.source.short()}"
        self.lines.append(line)
        for i, b in enumerate(n.blocks):
            self.lines.append(f"{ind}  block{i}({self._typed(b.params)}):")
            self.print_nodes(b, depth + 2)
            self.lines.append(f"{ind}    -> ({self._values(b.returns)})")


def print_graph(graph: Graph, sources: bool = True, anonymous: bool = False) -> str:
    """The graph as text; ``sources``: each node's source position as a trailing comment; ``anonymous``: values
    and subgraphs numbered instead of named (graphs that differ only in names print alike)."""
    return Printer(graph, sources, anonymous).print()
