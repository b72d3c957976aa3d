"""``Builder``: creates IR nodes at an insertion point, as MLIR's ``OpBuilder`` and xDSL's ``Builder`` do.

The insertion point is a block and the node to insert before (``anchor``; None: the block's end). Nodes built one
after another land in that order, all ahead of the anchor, so a pass that expands a node into several builds
them at ``Builder.before(node)`` without counting indices. ``op`` creates the node, inserts it and returns it:
``Block.append`` names its outputs from the hints, in the order nodes are inserted, as before this builder.

It assumes the anchor stays in the block while the builder inserts before it (a pass that moves or removes the
anchor moves the builder first), and it checks nothing about types: an op's output types are given, or the
operator's registered rule infers them from the input types (``types=None``: the operators must be declared,
which ``scriptc.ops`` does when imported).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from .core import Block, Node, SourceRange, Value
from .registry import lookup, type_of
from .types import Type


class Builder:
    """Inserts new nodes into ``block`` before ``anchor`` (at the end when ``anchor`` is None)."""

    def __init__(self, block: Block, anchor: Node | None = None):
        self.block, self.anchor = block, anchor

    # -- where: the insertion point -----------------------------------------------------------------------
    @classmethod
    def at_end(cls, block: Block) -> Builder:
        return cls(block)

    @classmethod
    def before(cls, node: Node) -> Builder:
        return cls(node.block, node)

    @classmethod
    def after(cls, node: Node) -> Builder:
        return cls.at_index(node.block, node.block.nodes.index(node) + 1)

    @classmethod
    def at_index(cls, block: Block, index: int) -> Builder:
        """Before the node now at ``index`` (at the end past the last one): ``Block.append(node, at=index)``."""
        return cls(block, block.nodes[index] if index < len(block.nodes) else None)

    def move_to(self, block: Block, anchor: Node | None = None) -> None:
        self.block, self.anchor = block, anchor

    @contextmanager
    def inserting_into(self, block: Block, anchor: Node | None = None) -> Iterator[Builder]:
        """Insert into ``block`` (before ``anchor``) inside the ``with``; the previous point comes back after."""
        saved = self.block, self.anchor
        self.move_to(block, anchor)
        try:
            yield self
        finally:
            self.block, self.anchor = saved

    # -- what: nodes and blocks -----------------------------------------------------------------------------
    def op(
        self,
        kind: str,
        inputs: Sequence[Value] = (),
        types: Sequence[Type] | None = None,
        attrs: dict | None = None,
        *,
        source: SourceRange | None = None,
        hints: str | Sequence[str | None] | None = None,
    ) -> Node:
        """A new ``kind`` node on ``inputs``, inserted at the insertion point. ``types``: its outputs' types
        (None: the operator's rule infers them); ``hints``: their name hints, one string for every output or
        one per output (None: numbered names)."""
        attrs = dict(attrs or {})
        if types is None:
            types = lookup(kind).result_types([v.type for v in inputs], attrs)
        if hints is None or isinstance(hints, str):
            hints = [hints] * len(types)
        return self.insert(Node(kind, inputs, list(zip(types, hints, strict=True)), attrs, source))

    def constant(self, value, type: Type | None = None) -> Value:
        """``prim::Constant`` of ``value`` (no attribute for None), of the value's type unless ``type`` is given."""
        attrs = {} if value is None else {"value": value}
        return self.op("prim::Constant", (), [type_of(value) if type is None else type], attrs).output

    def insert(self, node: Node) -> Node:
        """Insert ``node``, made but not yet in a block, at the insertion point (which stays before the anchor)."""
        at = None if self.anchor is None else self.block.nodes.index(self.anchor)
        return self.block.append(node, at)

    @staticmethod
    def add_block(owner: Node, params: Sequence[tuple[Type, str | None]] = ()) -> Block:
        """A new nested block of ``owner`` (an If's branch, a Loop's body) with parameters of these (type, name
        hint); ``owner`` must be in a block already, for the parameters' names."""
        block = owner.add_block()
        for t, hint in params:
            block.add_param(t, hint)
        return block
