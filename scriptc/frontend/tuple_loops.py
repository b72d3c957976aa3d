"""``for`` over tuples, unrolled: the body is emitted once per element, since a tuple's elements may differ in
type and a ``prim::Loop`` carries one type per variable (TorchScript unrolls them too). Covers a tuple,
``enumerate`` of one and ``zip`` of several. ``break`` and ``continue`` keep their meaning through the exit flags
the emitter already keeps (``emit_body``): an iteration after a possible ``break`` is emitted under a
``prim::If`` of the flag, and a ``continue`` ends its own iteration only.
"""

from __future__ import annotations

import ast
import builtins

from ..ir.core import Value
from ..ir.types import TupleType
from .values import BRK, CONT, RET


class TupleLoopsMixin:
    """Mixin of FunctionEmitter."""

    def tuple_steps(self, it, seq: Value | None) -> list | None:
        """What the loop target takes at each iteration when ``it`` iterates over tuples (``seq``: ``it``
        evaluated, when it is not a call to range, enumerate, zip or reversed); None otherwise."""
        if seq is not None:
            return self.tuple_items(seq, it) if isinstance(seq.type, TupleType) else None
        kind = self.iteration_builtin(it)
        if kind is builtins.enumerate and it.args and self.is_tuple(it.args[0]):
            items = self.tuple_items(self.expr(self.enumerate_iterable(it)), it)
            start = self.enumerate_start(it)
            return [
                [self.const(k) if start is None else self.op("aten::add", [start, self.const(k)], at=it), item]
                for k, item in enumerate(items)
            ]
        if kind is builtins.zip and len(it.args) >= 2 and not it.keywords and all(map(self.is_tuple, it.args)):
            columns = [self.tuple_items(self.expr(a), a) for a in it.args]
            return [list(step) for step in zip(*columns)]
        return None

    def is_tuple(self, node) -> bool:
        """Whether an expression is a tuple, told without emitting it (a tuple display or a tuple variable)."""
        if isinstance(node, ast.Tuple):
            return True
        value = self.env.vars.get(node.id) if isinstance(node, ast.Name) else None
        return isinstance(getattr(value, "type", None), TupleType)

    def tuple_items(self, seq: Value, at) -> list[Value]:
        return [self.tuple_element(seq, k, at) for k in range(len(seq.type.elems))]

    def emit_unrolled(self, loop: ast.For, steps: list) -> None:

        def iteration(k: int) -> None:
            flags = [(name, self.env.vars[name]) for name in (BRK, RET)]
            if k == len(steps) or any(f is True for _, f in flags):
                return
            pending = [name for name, f in flags if isinstance(f, Value)]
            if pending:  # a break or return may have been taken: the rest runs where none was
                self.emit_if(
                    self.any_of([self.env.vars[n] for n in pending]),
                    lambda: self.exit_taken(pending),
                    lambda: after_exits(pending, k),
                    None,
                )
                return
            self.env.vars[CONT] = False
            self.assign(loop.target, steps[k], loop)
            self.emit_body(loop.body)
            iteration(k + 1)

        def after_exits(pending: list[str], k: int) -> None:
            for name in pending:
                self.env.vars[name] = False
            iteration(k)

        iteration(0)
        self.env.vars[BRK] = self.env.vars[CONT] = False
