"""Reads the text that ``printer`` writes back into a Graph (names, types, attributes, blocks, source ranges)."""

from __future__ import annotations

import ast
import re

import numpy as np

from .arrayconst import parse_array
from .core import Graph, Node, SourceRange, Value
from .types import (
    BOOL,
    FLOAT,
    INT,
    NAME_DTYPES,
    NARROW_SCALARS,
    NONE,
    STR,
    ListType,
    NamedTupleType,
    NumpyScalarType,
    TENSOR,
    TensorType,
    TupleType,
    Type,
)


class ParseError(ValueError):
    pass


_SCALARS = {"int": INT, "float": FLOAT, "bool": BOOL, "str": STR, "NoneType": NONE, "Tensor": TENSOR}


class TypeParser:
    def __init__(self, text: str):
        self.s, self.i = text, 0

    def parse(self) -> Type:
        t = self.type()
        self.ws()
        if self.i != len(self.s):
            raise ParseError(f"unexpected {self.s[self.i :]!r} after type")
        return t

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1

    def eat(self, tok: str) -> bool:
        self.ws()
        if self.s.startswith(tok, self.i):
            self.i += len(tok)
            return True
        return False

    def type(self) -> Type:
        t = self.base_type()
        while self.eat("[]"):
            t = ListType(t)
        return t

    def named_tuple(self, qualname: str) -> NamedTupleType:
        """``module.Name(field: type, ...)``: a NamedTuple type (its class, when this process has it, is
        ``NAMED_TUPLES[qualname]``)."""
        if not self.eat("("):
            raise ParseError(f"unknown type {qualname!r}")
        fields, elems = [], []
        while not self.eat(")"):
            self.ws()
            m = re.compile(r"(\w+):").match(self.s, self.i)
            if not m:
                raise ParseError(f"expected 'field: type' at {self.s[self.i :]!r}")
            self.i = m.end()
            fields.append(m.group(1))
            elems.append(self.type())
            self.eat(",")
        return NamedTupleType(tuple(elems), qualname, tuple(fields))

    def base_type(self) -> Type:
        self.ws()
        if self.eat("("):
            elems = []
            while not self.eat(")"):
                elems.append(self.type())
                self.eat(",")
            return TupleType(tuple(elems))
        m = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*").match(self.s, self.i)
        if not m:
            raise ParseError(f"expected a type at {self.s[self.i :]!r}")
        self.i = m.end()
        word = m.group()
        if word in _SCALARS:
            return _SCALARS[word]
        if word in NARROW_SCALARS:
            return NumpyScalarType(word)
        if word not in NAME_DTYPES or re.compile(r"\(\s*\w+:").match(self.s, self.i):
            return self.named_tuple(word)
        if not self.eat("("):
            raise ParseError(f"expected '(' after {word}")
        if self.eat("...)"):
            return TensorType(NAME_DTYPES[word])
        dims = []
        while not self.eat(")"):
            self.ws()
            if self.eat("*"):
                dims.append(None)
            else:
                m = re.compile(r"\d+").match(self.s, self.i)
                if not m:
                    raise ParseError(f"bad dimension at {self.s[self.i :]!r}")
                self.i = m.end()
                dims.append(int(m.group()))
            self.eat(",")
        return TensorType(NAME_DTYPES[word], None, tuple(dims))


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets, parentheses and quotes."""
    parts, depth, cur, quote = [], 0, [], None
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == "\\":
                cur.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
            cur.append(c)
        elif c in "([":
            depth += 1
            cur.append(c)
        elif c in ")]":
            depth -= 1
            cur.append(c)
        elif c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def _attr_value(text: str):
    text = text.strip()
    if text in ("inf", "-inf", "nan"):
        return float(text)
    if text.startswith("array("):
        return parse_array(text)
    if text.startswith("["):
        return [_attr_value(p) for p in split_top(text[1:-1])]
    if text.startswith("("):
        return tuple(_attr_value(p) for p in split_top(text[1:-1]) if p.strip())
    if re.fullmatch(r"[A-Za-z_][\w.:]*", text) and text not in ("True", "False", "None"):
        return _GraphRef(text)
    return ast.literal_eval(text)


class _GraphRef(str):
    pass


_NODE = re.compile(r"^(?P<lhs>.*?)= (?P<kind>[\w]+::[\w]+)(?P<rest>.*)$")
_SOURCE = re.compile(r"\s+# (?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+)$")


class GraphParser:
    def __init__(self, text: str):
        # blank lines and whole-line comments (an IR test file's RUN and CHECK lines) are not the graph's
        self.lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        self.i = 0
        self.env: dict[str, Value] = {}
        self.graph: Graph | None = None
        self.refs: list[tuple[Node, str, str]] = []

    def parse(self) -> Graph:
        main = self.parse_graph("graph")
        named: dict[str, Graph] = {}
        while self.i < len(self.lines):
            m = re.match(r"with (\S+) = graph", self.lines[self.i])
            if not m:
                raise ParseError(f"line {self.i + 1}: expected 'with NAME = graph(...)': {self.lines[self.i]!r}")
            named[m.group(1)] = self.parse_graph(m.group(1), head=f"with {m.group(1)} = graph")
        for node, key, ref in self.refs:
            if ref not in named:
                if key != "fn" or main.name not in ("graph", ref):
                    raise ParseError(f"attribute {key}={ref} names no graph")
                main.name, named[ref] = ref, main  # a recursive graph calls itself (the printer names it)
            node.attrs[key] = named[ref]
        return main

    def parse_graph(self, name: str, head: str = "graph") -> Graph:
        header = self.lines[self.i]
        while not header.rstrip().endswith("):"):
            self.i += 1
            header += " " + self.lines[self.i].strip()
        self.i += 1
        if not header.startswith(head + "("):
            raise ParseError(f"expected {head}(...): got {header!r}")
        g = Graph(name)
        self.graph, self.env = g, {}
        for p in split_top(header[len(head) + 1 : -2]):
            vname, t = self.typed(p)
            g.claim_name(vname)
            v = Value(t, vname, block=g.block)
            g.block.params.append(v)
            self.env[vname] = v
        self.parse_block_body(g.block, 1)
        line = self.lines[self.i].strip()
        if not line.startswith("return ("):
            raise ParseError(f"expected return: {line!r}")
        for v in self.uses(line[len("return (") : -1]):
            g.block.add_return(v)
        self.i += 1
        return g

    def typed(self, text: str) -> tuple[str, Type]:
        name, _, t = text.partition(" : ")
        if not name.startswith("%"):
            raise ParseError(f"expected %name : Type, got {text!r}")
        return name[1:], TypeParser(t).parse()

    def uses(self, text: str) -> list[Value]:
        out = []
        for p in split_top(text):
            if p[1:] not in self.env:
                raise ParseError(f"use of undefined value {p}")
            out.append(self.env[p[1:]])
        return out

    def parse_block_body(self, block, depth: int) -> None:
        ind = "  " * depth
        while self.i < len(self.lines):
            line = self.lines[self.i]
            stripped = line.strip()
            deeper = line[len(ind) : len(ind) + 1] == " " and not line[len(ind) :].startswith(" = ")
            if not line.startswith(ind) or deeper or stripped.startswith(("return (", "-> (")):
                return
            self.parse_node(block, line, depth)

    def parse_node(self, block, line: str, depth: int) -> None:
        source = None
        m = _SOURCE.search(line)
        if m:
            source = SourceRange(m.group("file"), int(m.group("line")), int(m.group("col")))
            line = line[: m.start()]
        m = _NODE.match(line.strip())
        if not m:
            raise ParseError(f"line {self.i + 1}: cannot read node {line.strip()!r}")
        outs = [self.typed(p) for p in split_top(m.group("lhs"))]
        rest = m.group("rest")
        attrs = {}
        if rest.startswith("["):
            close = _matching(rest, 0)
            for p in split_top(rest[1:close]):
                k, _, v = p.partition("=")
                attrs[k] = _attr_value(v)
            rest = rest[close + 1 :]
        inputs = self.uses(rest.strip()[1:-1])
        node = Node(m.group("kind"), inputs, attrs=attrs, source=source)
        block.append(node)
        for name, t in outs:
            self.graph.claim_name(name)
            v = Value(t, name, node=node)
            node.outputs.append(v)
        for k, v in list(attrs.items()):
            if isinstance(v, _GraphRef):
                self.refs.append((node, k, str(v)))
        if node.kind == "prim::Constant" and "value" in attrs and outs and outs[0][1] == BOOL:
            node.attrs["value"] = bool(attrs["value"])
        elif node.kind == "prim::Constant" and "value" in attrs and outs and isinstance(outs[0][1], NumpyScalarType):
            node.attrs["value"] = np.dtype(outs[0][1].dtype).type(attrs["value"])
        self.i += 1
        ind = "  " * (depth + 1)
        while self.i < len(self.lines) and self.lines[self.i].startswith(ind + "block"):
            header = self.lines[self.i].strip()
            self.i += 1
            b = node.add_block()
            params = header[header.index("(") + 1 : header.rindex(")")]
            for p in split_top(params):
                name, t = self.typed(p)
                self.graph.claim_name(name)
                v = Value(t, name, block=b)
                b.params.append(v)
                self.env[name] = v
            self.parse_block_body(b, depth + 2)
            ret = self.lines[self.i].strip()
            if not ret.startswith("-> ("):
                raise ParseError(f"line {self.i + 1}: expected '-> (...)', got {ret!r}")
            for v in self.uses(ret[4:-1]):
                b.add_return(v)
            self.i += 1
        for v in node.outputs:
            self.env[v.name] = v


def _matching(s: str, i: int) -> int:
    depth, quote = 0, None
    for j in range(i, len(s)):
        c = s[j]
        if quote:
            if c == quote and s[j - 1] != "\\":
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return j
    raise ParseError(f"unbalanced brackets in {s!r}")


def parse(text: str) -> Graph:
    """Parse a graph printed by ``print_graph`` (with its ``with NAME = graph`` sections)."""
    return GraphParser(text).parse()
