"""``FoldingBuilder``: a ``TextBuilder`` (text_builder.py) that folds integer operations whose result is known
while lowering, as LLVM's own IRBuilder does with its ConstantFolder.

Why: the lowering is written for run-time values, and many are constants (a reshape to ``(n, 1)``, a stride of
one item, a shape check against a literal). Unfolded, each is an instruction that Python builds and prints and
LLVM parses and folds back: ~5% of a large program's IR (the MLP training step), all of it in the first tier's
compile time. Folded here: integer ``icmp``, ``add``/``sub``/``mul`` and the bitwise operators of two constants,
``select`` of a constant condition or of two equal operands, ``zext``/``sext``/``trunc`` of a constant, and the
identities ``x + 0``, ``x - 0``, ``x * 1``, ``x & true``, ``x | false`` (and their absorbing constants), ``x & x``,
``x | x`` and a value compared with itself. Every fold gives the value LLVM computes (two's complement at the
operand's width), so the IR means the same.

A select of booleans is written as and/or: FastISel, the first tier's code generator, has no i1 select and hands
the rest of its block to the SelectionDAG (the MLP training step's body had 19: 33 -> 25 ms of code generation).
"""

from __future__ import annotations

import operator

from llvmlite import ir

from .text_builder import TextBuilder

_SIGNED = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_BOOL = ir.IntType(1)


def _int(v) -> bool:
    return isinstance(v, ir.Constant) and isinstance(v.type, ir.IntType) and isinstance(v.constant, int)


def _unsigned(c: ir.Constant) -> int:
    return int(c.constant) & ((1 << c.type.width) - 1)


def _signed(c: ir.Constant) -> int:
    u, w = _unsigned(c), c.type.width
    return u - (1 << w) if u >> (w - 1) else u


def _make(t: ir.IntType, value: int) -> ir.Constant:
    """A constant of ``t`` holding ``value`` wrapped to its width (signed; i1 as 0/1)."""
    u = value & ((1 << t.width) - 1)
    return ir.Constant(t, u if t.width == 1 else (u - (1 << t.width) if u >> (t.width - 1) else u))


def _is(v, value: int) -> bool:
    return _int(v) and _unsigned(v) == value & ((1 << v.type.width) - 1)


class FoldingBuilder(TextBuilder):
    """``TextBuilder`` folding integer constants (module docstring)."""

    def icmp_signed(self, cmpop, lhs, rhs, name=""):
        if _int(lhs) and _int(rhs):
            return _make(_BOOL, _SIGNED[cmpop](_signed(lhs), _signed(rhs)))
        if lhs is rhs and not isinstance(lhs.type, ir.VectorType):
            return _make(_BOOL, cmpop in ("==", "<=", ">="))
        return super().icmp_signed(cmpop, lhs, rhs, name)

    def icmp_unsigned(self, cmpop, lhs, rhs, name=""):
        if _int(lhs) and _int(rhs):
            return _make(_BOOL, _SIGNED[cmpop](_unsigned(lhs), _unsigned(rhs)))
        if lhs is rhs and not isinstance(lhs.type, ir.VectorType):
            return _make(_BOOL, cmpop in ("==", "<=", ">="))
        return super().icmp_unsigned(cmpop, lhs, rhs, name)

    def add(self, lhs, rhs, name="", flags=()):
        if _int(lhs) and _int(rhs):
            return _make(lhs.type, lhs.constant + rhs.constant)
        if _is(rhs, 0) and lhs.type == rhs.type:
            return lhs
        if _is(lhs, 0) and lhs.type == rhs.type:
            return rhs
        return super().add(lhs, rhs, name, flags)

    def sub(self, lhs, rhs, name="", flags=()):
        if _int(lhs) and _int(rhs):
            return _make(lhs.type, lhs.constant - rhs.constant)
        if _is(rhs, 0) and lhs.type == rhs.type:
            return lhs
        return super().sub(lhs, rhs, name, flags)

    def mul(self, lhs, rhs, name="", flags=()):
        if _int(lhs) and _int(rhs):
            return _make(lhs.type, lhs.constant * rhs.constant)
        if _is(rhs, 1) and lhs.type == rhs.type:
            return lhs
        if _is(lhs, 1) and lhs.type == rhs.type:
            return rhs
        return super().mul(lhs, rhs, name, flags)

    def _bitwise(self, op, lhs, rhs, absorbing: int | None, identity: int | None):
        """``op`` of two constants; with one constant: the other operand (``identity``, all ones for -1) or the
        constant itself (``absorbing``); else None (not folded)."""
        if _int(lhs) and _int(rhs):
            return _make(lhs.type, op(_unsigned(lhs), _unsigned(rhs)))
        if lhs.type != rhs.type:
            return None
        if lhs is rhs and op is not operator.xor:
            return lhs
        for const, other in ((lhs, rhs), (rhs, lhs)):
            if absorbing is not None and _is(const, absorbing):
                return const
            if identity is not None and _is(const, identity):
                return other
        return None

    def and_(self, lhs, rhs, name="", flags=()):
        folded = self._bitwise(operator.and_, lhs, rhs, 0, -1)
        return folded if folded is not None else super().and_(lhs, rhs, name, flags)

    def or_(self, lhs, rhs, name="", flags=()):
        folded = self._bitwise(operator.or_, lhs, rhs, -1, 0)
        return folded if folded is not None else super().or_(lhs, rhs, name, flags)

    def xor(self, lhs, rhs, name="", flags=()):
        folded = self._bitwise(operator.xor, lhs, rhs, None, 0)
        return folded if folded is not None else super().xor(lhs, rhs, name, flags)

    def not_(self, value, name=""):
        if _int(value):
            return _make(value.type, ~_unsigned(value))
        return super().not_(value, name)

    def select(self, cond, lhs, rhs, name="", flags=()):
        if _int(cond):
            return lhs if _unsigned(cond) else rhs
        if lhs is rhs or (_int(lhs) and _int(rhs) and lhs.type == rhs.type and _unsigned(lhs) == _unsigned(rhs)):
            return lhs
        if lhs.type == _BOOL and rhs.type == _BOOL and cond.type == _BOOL:
            # as logic (module docstring); O3 makes it a select again
            return self.or_(self.and_(cond, lhs), self.and_(self.not_(cond), rhs), name)
        return super().select(cond, lhs, rhs, name, flags)

    def zext(self, value, typ, name=""):
        if _int(value) and isinstance(typ, ir.IntType):
            return _make(typ, _unsigned(value))
        return super().zext(value, typ, name)

    def sext(self, value, typ, name=""):
        if _int(value) and isinstance(typ, ir.IntType):
            return _make(typ, _signed(value))
        return super().sext(value, typ, name)

    def trunc(self, value, typ, name=""):
        if _int(value) and isinstance(typ, ir.IntType):
            return _make(typ, _unsigned(value))
        return super().trunc(value, typ, name)
