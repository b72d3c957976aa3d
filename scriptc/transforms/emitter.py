"""``Emitter``: appends typed nodes to a block. Derivative rules (``OpDef.vjp``, beside each operator in
``scriptc/ops``) build their adjoints with it, so a rule reads as the math it implements: ``e.mul(g, b)``."""

from __future__ import annotations

import math

from ..ir.builder import Builder
from ..ir.core import Block, Node, Value
from ..ir.registry import type_of
from ..ir.types import BOOL, FLOAT, INT, ListType, NamedTupleType, TensorType, TupleType, decayed

FLOAT_DTYPES = ("float64", "float32", "float16")


def differentiable(v_or_type) -> bool:
    """Floats, float arrays, and tuples (NamedTuples) holding one of them."""
    t = getattr(v_or_type, "type", v_or_type)
    if isinstance(t, TupleType):
        return any(differentiable(e) for e in t.elems)
    return decayed(t) == FLOAT or (isinstance(t, TensorType) and t.dtype in FLOAT_DTYPES)


def _holds_array(t) -> bool:
    return isinstance(t, TensorType) or isinstance(t, TupleType) and any(map(_holds_array, t.elems))


class Scatter:
    """An adjoint contribution to part of an array (``x[i]``, a row, a slice): ``write(e, acc)`` adds it in
    place into ``acc``, a buffer of the array's shape that only this adjoint refers to. A loop reading one
    element per iteration so costs one element per iteration, not a whole array."""

    def __init__(self, write):
        self.write = write


class Emitter:
    def __init__(self, block: Block, source=None):
        self.block, self.source = block, source

    def op(self, kind: str, *inputs: Value, **attrs) -> Value:
        node = Builder.at_end(self.block).op(kind, inputs, attrs=attrs, source=self.source)
        return node.outputs[0] if node.outputs else None

    def node(self, kind, inputs, types, attrs=None) -> Node:
        return Builder.at_end(self.block).op(kind, inputs, types, attrs, source=self.source)

    def const(self, value) -> Value:
        return self.node("prim::Constant", [], [type_of(value)], {"value": value}).output

    def add(self, a, b):
        return self.op("aten::add", a, b)

    def sub(self, a, b):
        return self.op("aten::sub", a, b)

    def mul(self, a, b):
        return self.op("aten::mul", a, b)

    def div(self, a, b):
        return self.op("aten::div", a, b)

    def ieee_div(self, a, b):
        """``a / b`` that gives inf or NaN where Python's raises ZeroDivisionError: for derivatives that are
        infinite at a point where the function is defined (sqrt at 0, log at 0)."""
        return self.op("aten::div", a, b, ieee=True)

    def neg(self, a):
        return self.op("aten::neg", a)

    @staticmethod
    def differentiable(v: Value) -> bool:
        return differentiable(v)

    @staticmethod
    def constant_of(v: Value):
        """The value of a constant operand (None for anything else)."""
        node = v.node
        return node.attrs.get("value") if node is not None and node.kind == "prim::Constant" else None

    def broadcast(self, g: Value, like: Value) -> Value:
        """A scalar adjoint standing for every element of the array ``like``, as an array of its shape."""
        if isinstance(g.type, TensorType) or not isinstance(like.type, TensorType):
            return g
        return self.add(self.zeros_like(like), g)

    @staticmethod
    def scatter(write) -> Scatter:
        return Scatter(write)

    # -- arrays ------------------------------------------------------------------------------------------
    def zeros_like(self, v: Value) -> Value:
        """The zero adjoint of ``v``: 0.0, a zero array, or a tuple of zeros (ints and bools keep their type)."""
        t = v.type
        if isinstance(t, TensorType):
            return self.op("aten::zeros_like", v, dtype=t.dtype)
        if isinstance(t, TupleType):  # elements read only where an array's shape is needed (a tuple
            # may be a value not bound yet: the result of an early return that has not happened)
            parts = [
                self.zeros_like(self.op("prim::TupleIndex", v, index=k)) if _holds_array(e) else self.zero_of(e)
                for k, e in enumerate(t.elems)
            ]
            return self.tuple_like(t, parts)
        return self.zero_of(t)

    def zero_of(self, t) -> Value:
        """The zero of a type without arrays: 0.0, 0, False, or a tuple of them."""
        if isinstance(t, TupleType):
            return self.tuple_like(t, [self.zero_of(e) for e in t.elems])
        return self.const({INT: 0, BOOL: False}.get(t, 0.0))

    def tuple_like(self, t: TupleType, parts: list) -> Value:
        named = {"named": t.qualname} if isinstance(t, NamedTupleType) else {}
        return self.op("prim::TupleConstruct", *parts, **named)

    def tape(self, t) -> Value:
        """A new empty list of ``t`` (``ListType(t)``) that the forward appends to and the backward reads."""
        return self.node("prim::ListConstruct", [], [ListType(t)], {"elem": str(t), "tape": True}).output

    def clone(self, v: Value) -> Value:
        return self.op("aten::clone", v)

    def dims(self, x: Value) -> list[Value]:
        return self.node("prim::TupleUnpack", [self.op("aten::size", x)], [INT] * x.type.rank).outputs

    def dim_size(self, x: Value, axis: int) -> Value:
        return self.op("prim::TupleIndex", self.op("aten::size", x), index=axis)

    def add_at(self, acc: Value, indices: list, g: Value) -> None:
        """``acc[indices] += g`` for one element."""
        old = self.op("aten::getitem", acc, *indices)
        self.node("aten::setitem", [acc, *indices, self.add(old, g)], [])

    def add_into(self, view: Value, g: Value) -> None:
        """``view += g`` in place (``view`` a view of an adjoint buffer)."""
        self.node("aten::add_", [view, g], [])

    def unsqueeze(self, x: Value, dim: int) -> Value:
        return self.op("aten::unsqueeze", x, dim=dim)

    def reshape_like(self, g: Value, like: Value) -> Value:
        return self.op("aten::reshape", g, *self.dims(like)) if like.type.rank else self.op("aten::reshape", g)

    def pow_ieee(self, x: Value, p: Value) -> Value:
        """``x ** p`` as IEEE's pow has it for a float base: a zero base to a negative power is inf, where
        Python's float ``**`` raises ZeroDivisionError (the factor of d(x ** b)/dx at 0 for b < 1)."""
        if isinstance(x.type, TensorType) or isinstance(p.type, TensorType):
            return self.op("aten::pow", x, p)
        pole = self.op("aten::__and__", self.op("aten::eq", x, self.const(0.0)), self.op("aten::lt", p, self.const(0)))
        node = self.node("prim::If", [pole], [FLOAT])
        then, other = node.add_block(), node.add_block()
        then.add_return(Emitter(then).const(math.inf))
        other.add_return(Emitter(other).op("aten::pow", x, p))
        return node.output

    def log_or_zero(self, x: Value) -> Value:
        """log(x) where x > 0, else 0 (the factor of d(x**y)/dy; where x <= 0 it only matters for y's
        adjoint at points where x**y is not smooth)."""
        if isinstance(x.type, TensorType):
            pos = self.op("aten::gt", x, self.const(0.0))
            safe = self.op("aten::where", pos, x, self.const(1.0))
            return self.op("aten::log", safe)
        pos = self.op("aten::gt", x, self.const(0.0))
        node = self.node("prim::If", [pos], [FLOAT])
        then, other = node.add_block(), node.add_block()
        then.add_return(Emitter(then).op("aten::log", x))
        other.add_return(Emitter(other).const(0.0))
        return node.output

    def expand_reduced(self, g: Value, x: Value, axis) -> Value:
        """``g`` (a reduction of ``x`` over ``axis``, or over everything) broadcast back to ``x``'s shape."""
        if axis is not None and x.type.rank > 1:  # a rank-1 reduction over its axis is a scalar already
            shape = self.dims(x)
            k = axis % x.type.rank
            dims = list(shape[:k]) + [self.const(1)] + list(shape[k + 1 :])
            g = self.op("aten::reshape", g, *dims)
        return self.add(self.zeros_like(x), g)

    def sum_to(self, g: Value, like: Value, others=None) -> Value:
        """The adjoint of a broadcast: ``g`` summed over the axes along which ``like`` was broadcast. With
        ``others`` (the operator's other operands), whether an axis was broadcast is asked of the operands'
        shapes (``like`` has 1 there and another operand does not), which stay the same in a loop where the
        operands' shapes do, so the test can leave the loop (licm, unswitch)."""
        if not isinstance(g.type, TensorType):
            return g
        if not isinstance(like.type, TensorType):
            return self.op("aten::sum", g)
        for _ in range(g.type.rank - like.type.rank):
            g = self.op("aten::sum", g, axis=0)
        if isinstance(g.type, TensorType):
            for _ in range(like.type.rank - g.type.rank):  # dst[...] = src, src's extra leading axes of length 1
                g = self.unsqueeze(g, 0)
        if others is not None:
            return self._sum_broadcast_axes(g, like, [o for o in others if isinstance(o.type, TensorType)])
        return self._sum_size_one_axes(g, like)

    def _sum_broadcast_axes(self, g: Value, like: Value, others: list) -> Value:
        rank = like.type.rank
        if rank == 0 or not others:
            return g
        like_shape = self.dims(like)
        other_shapes = [(o.type.rank, self.dims(o)) for o in others]
        one = self.const(1)
        for k in range(rank):
            wider = [self.op("aten::ne", dims[k - (rank - r)], one) for r, dims in other_shapes if k - (rank - r) >= 0]
            if not wider:
                continue
            cond = wider[0]
            for w in wider[1:]:
                cond = self.op("aten::__or__", cond, w)
            cond = self.op("aten::__and__", self.op("aten::eq", like_shape[k], one), cond)
            node = self.node("prim::If", [cond], [g.type])
            then, other = node.add_block(), node.add_block()
            e = Emitter(then)
            summed = e.op("aten::sum", g, axis=k)
            if rank == 1:  # like has shape (1,) here; the sum keeps g's dtype (like's may be narrower)
                then.add_return(e.add(e.op("aten::zeros_like", like, dtype=g.type.dtype), summed))
            else:
                g_shape = e.dims(g)
                dims = list(g_shape[:k]) + [e.const(1)] + list(g_shape[k + 1 :])
                then.add_return(e.op("aten::reshape", summed, *dims))
            other.add_return(g)
            g = node.output
        return g

    def _sum_size_one_axes(self, g: Value, like: Value) -> Value:
        """Sum (keeping the axis) where ``like`` has length 1 and ``g`` does not: known only at run time."""
        rank = like.type.rank
        if rank == 0:
            return g
        like_shape = self.dims(like)
        for k in range(rank):
            if like.type.shape[k] is not None and like.type.shape[k] != 1 and g.type.shape[k] == like.type.shape[k]:
                continue  # known not to be broadcast along k
            g_shape = self.dims(g)
            one = self.const(1)
            cond = self.op(
                "aten::__and__", self.op("aten::eq", like_shape[k], one), self.op("aten::ne", g_shape[k], one)
            )
            node = self.node("prim::If", [cond], [g.type])
            then, other = node.add_block(), node.add_block()
            e = Emitter(then)
            if rank == 1:  # like has shape (1,) here
                then.add_return(e.add(e.zeros_like(like), e.op("aten::sum", g)))
            else:
                summed = e.op("aten::sum", g, axis=k)
                dims = list(g_shape[:k]) + [e.const(1)] + list(g_shape[k + 1 :])
                then.add_return(e.op("aten::reshape", summed, *dims))
            other.add_return(g)
            g = node.output
        return g
