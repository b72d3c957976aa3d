"""``typing.NamedTuple`` classes in scripted code: parameters, results and locals whose fields are read by name.

A NamedTuple value is a tuple in the IR (``NamedTupleType``, a ``TupleType`` that keeps its class): ``s.step``
is ``prim::TupleIndex``, ``TrainState(step=0, w=w)`` a ``prim::TupleConstruct[named=...]`` and
``s._replace(step=s.step + 1)`` reads the other fields and builds a new one, so every pass and backend that
handles tuples handles NamedTuples. Field annotations are checked as parameter annotations are (an int fits a
``float`` field and stays an int, as in Python). ``==``/``!=`` of tuples (``a.shape == b.shape``) compare element
by element; ``+`` concatenates tuples and ``*`` repeats one a constant number of times (a tuple's length is part
of its type).
"""

from __future__ import annotations

import ast

from ..ir.core import constant_value, is_constant
from ..ir.types import BOOL, FLOAT, INT, NamedTupleType, TensorType, TupleType, Type, named_tuple_type
from .values import MISSING, describe


class NamedTupleMixin:
    def named_tuple_class_type(self, cls, node) -> NamedTupleType:
        from . import annotation_type  # (cycle: the package imports calls, which imports this module)

        t = named_tuple_type(cls, annotation_type)
        if t is None:
            raise self.fn.error(
                f"NamedTuple '{cls.__name__}' has a field whose annotation is not supported",
                node,
                "annotate fields with int, float, bool, np.ndarray, tuples or other NamedTuples",
            )
        return t

    def named_tuple_attribute(self, base, node):
        t: NamedTupleType = base.type
        if node.attr not in t.fields:
            raise self.fn.error(
                f"'{t.qualname.rsplit('.', 1)[-1]}' has no field '{node.attr}'",
                node,
                f"its fields are {', '.join(t.fields)}",
            )
        return self.op("prim::TupleIndex", [base], {"index": t.fields.index(node.attr)}, at=node)

    def construct_named_tuple(self, cls, node):
        """``Cls(a, b)`` / ``Cls(x=a, y=b)``, missing fields from the class's defaults."""
        t = self.named_tuple_class_type(cls, node)
        name = cls.__name__
        if len(node.args) > len(t.fields):
            raise self.fn.error(f"{name}() takes {len(t.fields)} arguments, {len(node.args)} given", node)
        values = [self.expr(a) for a in node.args] + [None] * (len(t.fields) - len(node.args))
        for k in node.keywords:
            if k.arg not in t.fields:
                raise self.fn.error(f"{name}() got an unexpected keyword argument '{k.arg}'", k)
            i = t.fields.index(k.arg)
            if values[i] is not None:
                raise self.fn.error(f"{name}() got multiple values for argument '{k.arg}'", k)
            values[i] = self.expr(k.value)
        defaults = getattr(cls, "_field_defaults", {})
        for i, f in enumerate(t.fields):
            if values[i] is None:
                if f not in defaults or type(defaults[f]) not in (int, float, bool):
                    raise self.fn.error(f"{name}() missing required argument '{f}'", node)
                values[i] = self.const(defaults[f])
        return self.build_named_tuple(t, values, node)

    def build_named_tuple(self, t: NamedTupleType, values: list, node):
        values = [self.field_value(v, want, f, node) for v, want, f in zip(values, t.elems, t.fields)]
        return self.op("prim::TupleConstruct", values, {"named": t.qualname}, at=node)

    def field_value(self, v, want: Type, field: str, node):
        """``v`` as the value of a field annotated ``want`` (the numeric tower widens; arrays of any dtype fit
        ``np.ndarray``; tuples element by element)."""
        tower = (BOOL, INT, FLOAT)
        if want in tower and v.type in tower and tower.index(v.type) <= tower.index(want):
            return v  # kept as it is, as Python keeps an int in a float field
        if (
            isinstance(want, TensorType)
            and isinstance(v.type, TensorType)
            and (want.dtype is None or want.dtype == v.type.dtype)
        ):
            return v
        if (
            isinstance(want, TupleType)
            and isinstance(v.type, TupleType)
            and len(want.elems) == len(v.type.elems)
            and (not isinstance(want, NamedTupleType) or getattr(v.type, "qualname", None) == want.qualname)
        ):
            return v
        raise self.fn.error(f"field '{field}' must be {describe(want)}, got {describe(v.type)}", node)

    def named_tuple_method(self, base, name: str, node):
        t: NamedTupleType = base.type
        if name != "_replace":
            raise self.fn.error(
                f"NamedTuple method '{name}' is not supported",
                node.func,
                "read fields by name and make new values with _replace(field=...)",
            )
        if node.args:
            raise self.fn.error("_replace() takes keyword arguments only", node)
        values = self.emit("prim::TupleUnpack", [base], at=node).outputs
        values = list(values)
        for k in node.keywords:
            if k.arg not in t.fields:
                raise self.fn.error(f"got unexpected field name '{k.arg}'", k)  # CPython's ValueError text
            values[t.fields.index(k.arg)] = self.expr(k.value)
        declared = self.named_tuple_class_type(t.cls, node) if t.cls is not None else t
        return self.build_named_tuple(declared, values, node)

    def tuple_equal(self, a, b, node):
        """``a == b`` where one side is a tuple: False for another arity or a non-tuple, else the elements'
        ``==`` joined by ``and`` (scalars and nested tuples; arrays have no single truth value)."""
        ta, tb = a.type, b.type
        if a is b and isinstance(ta, TupleType) and not any(isinstance(e, TensorType) for e in ta.elems):
            return self.const(True)  # the same objects item by item: CPython's identity check
        if not (isinstance(ta, TupleType) and isinstance(tb, TupleType)) or len(ta.elems) != len(tb.elems):
            return self.const(False)
        result = self.const(True)
        for k, (ea, eb) in enumerate(zip(ta.elems, tb.elems)):
            if isinstance(ea, TensorType) or isinstance(eb, TensorType):
                raise self.fn.error(
                    f"'{ast.unparse(node)}': tuples holding arrays cannot be compared (an array's "
                    "== has no single truth value)",
                    node,
                    "compare the fields one by one",
                )
            x, y = self.tuple_element(a, k, node), self.tuple_element(b, k, node)
            if x is y:  # the same object twice: equal, as CPython's identity check makes even a NaN
                continue
            same = (
                self.tuple_equal(x, y, node)
                if isinstance(ea, TupleType) or isinstance(eb, TupleType)
                else self.op("aten::eq", [x, y], at=node)
            )
            result = self.op("aten::__and__", [result, same], at=node)
        return result

    def tuple_element(self, t, k: int, node):
        """Element k of a tuple value: what a tuple built here holds (the same value, as CPython's tuple holds
        the same object), else ``prim::TupleIndex``."""
        if t.node is not None and t.node.kind == "prim::TupleConstruct":
            return t.node.inputs[k]
        return self.op("prim::TupleIndex", [t], {"index": k}, at=node)

    def tuple_at(self, t, index_node, node):
        """``t[i]`` for an int known at run time: a chain of ``prim::If`` on ``i`` (negative from the end), and
        CPython's IndexError past either end. The elements must share one type (the result has one)."""
        elems = t.type.elems
        if len(set(elems)) > 1:
            raise self.fn.error(
                f"the elements of {t.type} differ in type: it can only be indexed by an int constant",
                index_node,
                "iterate over it (for v in t), or hold the values in a list or an array",
            )
        index = self.expr(index_node)
        if index.type not in (INT, BOOL):
            raise self.fn.error(f"tuple indices must be ints, not {describe(index.type)}", index_node)

        def element_from(k: int):
            if k == len(elems):
                self.emit(
                    "prim::RaiseException", [self.const("tuple index out of range")], {"exc": "IndexError"}, at=node
                )
                return self.materialize(MISSING, elems[0])
            hit = self.op(
                "aten::__or__",
                [
                    self.op("aten::eq", [index, self.const(k)], at=node),
                    self.op("aten::eq", [index, self.const(k - len(elems))], at=node),
                ],
                at=node,
            )
            return self.emit_if(hit, lambda: self.tuple_element(t, k, node), lambda: element_from(k + 1), node)

        return element_from(0)

    def tuple_binop(self, node, left, right):
        """``t + u`` and ``t * n`` / ``n * t`` (n a constant int), as CPython builds them."""
        text = ast.unparse(node)
        if isinstance(node.op, ast.Add):
            if not (isinstance(left.type, TupleType) and isinstance(right.type, TupleType)):
                raise self.fn.error(f"'{text}': can only concatenate tuple to tuple", node)
            items = [self.tuple_element(t, k, node) for t in (left, right) for k in range(len(t.type.elems))]
            return self.op("prim::TupleConstruct", items, at=node)
        if isinstance(node.op, ast.Mult):
            t, n = (left, right) if isinstance(left.type, TupleType) else (right, left)
            if n.type != INT or not is_constant(n):
                raise self.fn.error(
                    f"'{text}': a tuple can be repeated a constant number of times only",
                    node,
                    "its length is part of its type: write the count as a literal",
                )
            items = [self.tuple_element(t, k, node) for k in range(len(t.type.elems))]
            return self.op("prim::TupleConstruct", items * max(constant_value(n), 0), at=node)
        raise self.fn.error(f"'{text}': tuples support + and * only", node)
