"""``Adjoints``: the adjoint accumulated so far for each value of the source graph, while the backward is built.

An adjoint is a Value of the gradient graph, or for a tuple (a NamedTuple state) a list with one adjoint per
element (None where nothing has reached an element yet). A contribution is a Value, such a list, or a
``Scatter`` (part of an array: ``x[i]``, a row, a slice), which is added in place into a buffer only this table
refers to ("owned"): zeros made for it, a copy, or the result of an addition this table made. Owned arrays also
take dense contributions in place (``acc += c``), so a loop accumulating into an outer array's adjoint
allocates nothing per iteration.

Adjoints cross ``prim::If`` and ``prim::Loop`` as flat lists of leaf Values (``leaves`` / ``set_leaves``): the
differentiable leaves of the value's type, in order, zeros where there is no adjoint.
"""

from __future__ import annotations

from ..ir.core import Value
from ..ir.types import TensorType, TupleType
from .emitter import Emitter, Scatter, _holds_array, differentiable


def leaf_paths(t, prefix=()) -> list[tuple]:
    """Index paths of the differentiable leaves of a value of type ``t`` (``()`` for the value itself)."""
    if isinstance(t, TupleType):
        return [p for k, e in enumerate(t.elems) for p in leaf_paths(e, prefix + (k,))]
    return [prefix] if differentiable(t) else []


class Adjoints:
    def __init__(self, e: Emitter, owned=()):
        self.e = e
        self.of: dict[int, object] = {}
        self.owned: set[int] = set(owned)
        self.redirect = None  # (value, contribution) -> True where the adjoint lives in memory (inplace.py)
        self.wanted = differentiable  # which source values get adjoints (the transform's activity analysis)

    # -- accumulating ----------------------------------------------------------------------------------
    def add(self, src: Value, contribution, primal: Value) -> None:
        """Add ``contribution`` to the adjoint of ``src`` (whose value in the gradient graph is ``primal``)."""
        if contribution is None or not self.wanted(src):
            return
        if self.redirect is not None and self.redirect(src, contribution):
            return
        self.of[id(src)] = self._combine(self.of.get(id(src)), contribution, primal)

    def _combine(self, prior, c, primal: Value):
        e = self.e
        if isinstance(c, Scatter):
            acc = self.own(prior, primal)
            c.write(e, acc)
            return acc
        if isinstance(primal.type, TupleType):
            n = len(primal.type.elems)
            prior = list(prior) if prior is not None else [None] * n
            if isinstance(c, Value):
                c = [e.op("prim::TupleIndex", c, index=k) for k in range(n)]
            for k, ck in enumerate(c):
                if ck is not None and differentiable(primal.type.elems[k]):
                    prior[k] = self._combine(prior[k], ck, _Element(e, primal, k))
            return prior
        if prior is None:
            return c
        if (
            id(prior) in self.owned
            and isinstance(prior.type, TensorType)
            and isinstance(c.type, TensorType)
            and c.type.dtype == prior.type.dtype
            and c.type.rank <= prior.type.rank
        ):
            e.add_into(prior, c)
            return prior
        total = e.add(prior, c)
        if isinstance(total.type, TensorType):
            self.owned.add(id(total))
        return total

    def own(self, prior, primal) -> Value:
        """A buffer holding the adjoint so far that only this table refers to."""
        primal = primal.value if isinstance(primal, (_Element, _Leaf)) else primal
        if prior is None:
            acc = self.e.zeros_like(primal)
        elif id(prior) in self.owned:
            return prior
        else:
            acc = self.e.clone(prior)
        self.owned.add(id(acc))
        return acc

    # -- reading -----------------------------------------------------------------------------------------
    def get(self, src: Value):
        """The adjoint (Value or list) of ``src`` so far, or None."""
        return self.of.get(id(src))

    def take(self, src: Value):
        """The adjoint of ``src`` for its derivative rule, which may hand it on to other values: from here on
        it is shared, no longer updated in place."""
        a = self.of.get(id(src))
        if isinstance(a, Value):
            self.owned.discard(id(a))
        return a

    def value(self, src: Value, primal: Value) -> Value:
        """The adjoint as one Value of ``primal``'s type: zeros where there is none (a tuple is built)."""
        return _as_value(self.e, self.of.get(id(src)), primal)

    # -- crossing control flow -----------------------------------------------------------------------------
    def leaves(self, src: Value, primal: Value) -> list[Value]:
        a = self.of.get(id(src))
        return [_as_value(self.e, _at(a, path), _leaf(self.e, primal, path)) for path in leaf_paths(primal.type)]

    def owned_leaves(self, src: Value, primal: Value) -> list[bool]:
        a = self.of.get(id(src))
        return [id(_at(a, path)) in self.owned for path in leaf_paths(primal.type)]

    def set_leaves(self, src: Value, primal: Value, values: list[Value], owned: list[bool]) -> None:
        paths = leaf_paths(primal.type)
        if paths == [()]:
            self.of[id(src)] = values[0]
        else:
            structure = [None] * len(primal.type.elems)
            for path, v in zip(paths, values):
                _put(structure, path, v, primal.type)
            self.of[id(src)] = structure
        self.owned.update(id(v) for v, o in zip(values, owned) if o and isinstance(v.type, TensorType))


class _Element:
    """Element ``k`` of a tuple ``value``, read (``prim::TupleIndex``) only if a rule needs the value itself."""

    def __init__(self, e: Emitter, tup: Value, k: int):
        self.e, self.tup, self.k = e, tup, k
        self.type = tup.type.elems[k]
        self._value = None

    @property
    def value(self) -> Value:
        if self._value is None:
            tup = self.tup.value if isinstance(self.tup, (_Element, _Leaf)) else self.tup
            self._value = self.e.op("prim::TupleIndex", tup, index=self.k)
        return self._value


def _at(a, path):
    for k in path:
        if a is None:
            return None
        a = a[k]
    return a


def _put(structure: list, path: tuple, v, t) -> None:
    for k in path[:-1]:
        if structure[k] is None:
            structure[k] = [None] * len(t.elems[k].elems)
        structure, t = structure[k], t.elems[k]
    structure[path[-1]] = v


class _Leaf:
    """The element at ``path`` of a tuple, read only if an array's shape is needed (a tuple may not be bound
    yet: an early return's result before the return)."""

    def __init__(self, e: Emitter, tup: Value, path):
        self.e, self.tup, self.path = e, tup, path
        t = tup.type
        for k in path:
            t = t.elems[k]
        self.type = t

    @property
    def value(self) -> Value:
        v = self.tup
        for k in self.path:
            v = self.e.op("prim::TupleIndex", v, index=k)
        return v


def _leaf(e: Emitter, primal: Value, path):
    return _Leaf(e, primal, path) if path else primal


def _as_value(e: Emitter, a, primal) -> Value:
    if isinstance(a, Value):
        if isinstance(primal.type, TensorType) and not isinstance(a.type, TensorType):
            return e.broadcast(a, primal.value if isinstance(primal, (_Element, _Leaf)) else primal)
        return a
    if a is None:
        if not isinstance(primal.type, TensorType) and not _holds_array(primal.type):
            return e.zero_of(primal.type)
        return e.zeros_like(primal.value if isinstance(primal, (_Element, _Leaf)) else primal)
    parts = [_as_value(e, ak, _Element(e, primal, k)) for k, ak in enumerate(a)]
    return e.tuple_like(primal.type, parts)
