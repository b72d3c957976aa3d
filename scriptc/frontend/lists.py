"""Lists in the frontend, as a mixin of FunctionEmitter: literals, comprehensions, methods, indexing, ``in``,
iteration, the builtins taking lists and the NumPy functions building arrays from them.

Element types. A literal's elements share one type: bools, ints and floats widen to the widest (``[1, 2.5]`` is
a ``float[]``), arrays must agree in dtype and rank. An annotation (``xs: list[float] = [1, 2]``) gives the
element type, converting ints to floats. An empty ``[]`` without one takes its element type from the first
``append``/``insert`` that follows it; any other use before that is a CompileError asking for the annotation.
A value stored into a ``float[]`` is converted to float (an int stays an int in CPython: it prints as ``1.0``).

A comprehension ``[e for v in it if c]`` is emitted as the loop ``for v in it: if c: $lc.append(e)`` on a fresh
list, with ``v`` local to it as in Python 3.
"""

from __future__ import annotations

import ast
import builtins
import copy
import warnings
from collections import Counter

import numpy as np

from ..calling import unsupported_layout
from ..ir.builder import Builder
from ..ir.registry import NeedsSpecialization
from ..ir.types import (
    BOOL,
    DTYPE_NAMES,
    FLOAT,
    INT,
    ListType,
    NumpyScalarType,
    TensorType,
    TupleType,
    Type,
    decayed,
    scalar_dtype,
)
from .scopes import load_counts
from .values import describe

LIST_CALLS = {builtins.sorted, np.array, np.concatenate, np.stack}  # sum(list): builtin_calls
INT64_MAX = 2**63 - 1
_TOWER = {BOOL: 0, INT: 1, FLOAT: 2}
_HINT = (
    "annotate it where it is created, e.g. xs: list[int] = []; a list of arrays takes its dtype and rank "
    "from its first append (append before passing it on)"
)


def list_annotation(obj, annotation_type):
    """``list[T]`` / ``typing.List[T]`` as an IR type (None when it is not a list annotation we support)."""
    import typing

    if typing.get_origin(obj) is not list:
        return None
    args = typing.get_args(obj)
    elem = annotation_type(args[0]) if len(args) == 1 else None
    if elem in _TOWER or isinstance(elem, TensorType):
        return ListType(elem)
    return None


class ListsMixin:
    """List emission; needs FunctionEmitter's ``op``, ``expr``, ``emit_loop``, ``fn``."""

    # -- element types ---------------------------------------------------------------------------------------
    def describe_list(self, t: Type) -> str:
        return describe(t)

    def list_elem(self, lt: ListType, v, at):
        """``v`` as an element of a list of ``lt.elem`` (ints widen to a float list's floats; a NumPy scalar is
        stored as the Python scalar holding it: docs/language.md)."""
        e = lt.elem
        v = self.decay(v, at)
        if v.type == e:
            return v
        if e == FLOAT and v.type in (INT, BOOL):
            return self.op("aten::Float", [v], at=at)
        if e == INT and v.type == BOOL:
            return self.op("aten::Int", [v], at=at)
        if isinstance(e, TensorType) and isinstance(v.type, TensorType):
            if v.type.dtype is None or e.dtype is None:
                raise NeedsSpecialization("list of arrays")
            if (v.type.dtype, v.type.rank) == (e.dtype, e.rank):
                return v
        raise self.fn.error(
            f"cannot store {self.describe_list(v.type)} in a list of {self.describe_list(e)}",
            at,
            "a list holds one type: annotate it, e.g. xs: list[float] = [...]",
        )

    def common_elem(self, values, at) -> Type:
        types = [decayed(v.type) for v in values]
        if all(t in _TOWER for t in types):
            return max(types, key=_TOWER.__getitem__)
        if all(isinstance(t, TensorType) for t in types):
            if any(t.dtype is None for t in types):
                raise NeedsSpecialization("list of arrays")
            if len({(t.dtype, t.rank) for t in types}) == 1:
                return TensorType(types[0].dtype, types[0].rank)
        raise self.fn.error(
            "list elements must all have one type: numbers, or arrays of one dtype and rank, "
            f"got {', '.join(sorted(set(map(str, types))))}",
            at,
        )

    def new_list(self, elem: Type | None, values, at) -> object:
        attrs = {"elem": str(elem)} if elem is not None else {}
        node = Builder.at_end(self.block).op(
            "prim::ListConstruct", values, [ListType(elem)], attrs, source=self.fn.loc(at), hints="list"
        )
        if elem is None:
            self.pending_lists().append((node, at))
        return node.output

    def pending_lists(self) -> list:
        if not hasattr(self, "_pending_lists"):
            self._pending_lists = []
        return self._pending_lists

    def settle_list(self, lst, v, at):
        """An empty literal's element type, from the first value stored in it."""
        if lst.type.elem is not None:
            return
        if lst.node is None or lst.node.kind != "prim::ListConstruct":
            raise self.fn.error("the element type of this empty list is not known where the paths merge", at, _HINT)
        elem = v.type
        if isinstance(elem, TensorType):
            if elem.dtype is None:
                raise NeedsSpecialization("list of arrays")
            elem = TensorType(elem.dtype, elem.rank)
        if not (elem in _TOWER or isinstance(elem, TensorType)):
            raise self.fn.error(f"lists of {self.describe_list(elem)} are not supported", at)
        lst.type = ListType(elem)
        lst.node.attrs["elem"] = str(elem)

    def check_list_known(self, v, at) -> None:
        """Reading an empty literal whose element type nothing has given yet."""
        if isinstance(v.type, ListType) and v.type.elem is None:
            raise self.fn.error(
                f"the element type of the empty list {self.value_name(at)} is not known here", at, _HINT
            )

    def check_lists_settled(self) -> None:
        for node, at in self.pending_lists():
            if node.output.type.elem is None:
                raise self.fn.error("cannot tell the element type of this empty list", at, _HINT)

    def list_fits_annotation(self, t: Type, declared: Type) -> bool:
        if not (isinstance(t, ListType) and isinstance(declared, ListType)):
            return False
        d, e = declared.elem, t.elem
        any_array = isinstance(d, TensorType) and d.dtype is None
        # an empty list of arrays of a dtype not annotated (list[np.ndarray]) is typed by its use, as xs = [] is
        return e == d or any_array and (isinstance(e, TensorType) or e is None)

    def expr_as(self, node, declared: Type):
        """An expression assigned to an annotated name: a list literal takes the annotated element type."""
        if isinstance(declared, ListType) and isinstance(node, ast.List):
            elem = declared.elem
            if isinstance(elem, TensorType) and elem.dtype is None:
                return self.visit_List(node)
            return self.new_list(elem, [self.list_elem(declared, self.expr(e), e) for e in node.elts], node)
        return self.expr(node)

    # -- expressions -----------------------------------------------------------------------------------------
    def visit_List(self, node):
        if not isinstance(node.ctx, ast.Load):
            raise self.fn.error("cannot assign to a list display; use a tuple target", node)
        return self.list_of([self.expr(e) for e in node.elts], node)

    def list_of(self, values, node):
        if not values:
            return self.new_list(None, [], node)
        lt = ListType(self.common_elem(values, node))
        return self.new_list(lt.elem, [self.list_elem(lt, v, e) for v, e in zip(values, node.elts)], node)

    def visit_ListComp(self, node):
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise self.fn.error(
                "list comprehensions with more than one 'for' are not supported",
                node,
                "nest explicit for loops and append to a list",
            )
        gen = node.generators[0]
        if not isinstance(gen.target, ast.Name):
            raise self.fn.error("a comprehension's target must be a name", gen.target)
        k = len(self.pending_lists())
        name = f"$lc{k}"
        lst = self.new_list(None, [], node)
        append = ast.Expr(
            ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "append", ast.Load()), [copy.deepcopy(node.elt)], [])
        )
        body = [append]
        for cond in reversed(gen.ifs):
            body = [ast.If(copy.deepcopy(cond), body, [])]
        loop = ast.For(gen.target, gen.iter, body, [])
        for n in (append, append.value, append.value.func, append.value.func.value, *body, loop):
            ast.copy_location(n, node)
        target = gen.target.id
        saved_var, saved_bound = self.env.vars.pop(target, None), self.env.bound.pop(target, None)
        saved_loads = self.function_loads
        self.function_loads = Counter(load_counts(body))  # nothing but the comprehension reads its variable
        self.locals.add(name)
        self.env.vars[name] = lst
        try:
            self.visit_For(loop)
        finally:
            self.function_loads = saved_loads
        self.env.vars.pop(name, None)
        self.env.vars.pop(target, None)
        self.env.bound.pop(target, None)
        if saved_var is not None:
            self.env.vars[target] = saved_var
        if saved_bound is not None:
            self.env.bound[target] = saved_bound
        if lst.type.elem is None:  # nothing appended at compile time: the element's type is still known
            raise self.fn.error("cannot tell the element type of this comprehension", node, _HINT)
        return lst

    def list_for(self, node, seq):
        """``for v in xs``: as CPython's list iterator, index by index while the index is below the list's
        current length (a body appending to the list makes the loop longer)."""
        it = node.iter
        box = {}

        def prefix(i):
            box["i"] = i
            self.assign(node.target, self.op("aten::list_getitem", [seq, i], at=it), node)

        def next_cond():
            nxt = self.op("aten::add", [box["i"], self.const(1)], at=it)
            return self.op("aten::lt", [nxt, self.op("aten::list_len", [seq], at=it)], at=it)

        first = self.op("aten::gt", [self.op("aten::list_len", [seq], at=it), self.const(0)], at=it)
        hint = node.target.id if isinstance(node.target, ast.Name) else "iter"
        return self.const(INT64_MAX), prefix, hint, first, next_cond

    def list_binop(self, node, left, right):
        if isinstance(node.op, ast.Add) and isinstance(left.type, ListType) and left.type == right.type:
            return self.op("aten::list_add", [left, right], at=node)
        if isinstance(node.op, ast.Mult):
            lst, n = (left, right) if isinstance(left.type, ListType) else (right, left)
            if isinstance(lst.type, ListType) and n.type in (INT, BOOL):
                return self.op("aten::list_mul", [lst, n], at=node)
        raise self.fn.error(
            f"unsupported operand types for {ast.unparse(node)}: {self.describe_list(left.type)} "
            f"and {self.describe_list(right.type)}",
            node,
        )

    def list_in(self, node):
        v, seq = self.expr(node.left), self.expr(node.comparators[0])  # (CPython's order)
        if isinstance(seq.type, TupleType):
            found = self.tuple_contains(seq, v, node)
        elif isinstance(seq.type, ListType):
            found = self.op("aten::list_contains", [seq, v], at=node)
        else:
            raise self.fn.error("'in' is supported on lists and tuples only", node)
        return self.op("aten::__not__", [found], at=node) if isinstance(node.ops[0], ast.NotIn) else found

    def tuple_contains(self, t, v, node):
        """``v in (a, b, c)`` of numbers: ``v == a or v == b or v == c`` (CPython's identity test first only
        differs for a NaN, which scripted code does not tell apart from another NaN)."""
        numbers = (INT, FLOAT, BOOL)
        if v.type not in numbers or not all(e in numbers for e in t.type.elems):
            raise self.fn.error("'in' a tuple is supported for numbers in a tuple of numbers", node)
        found = self.const(False)
        for k in range(len(t.type.elems)):
            same = self.op("aten::eq", [v, self.tuple_element(t, k, node)], at=node)
            found = same if k == 0 else self.op("aten::__or__", [found, same], at=node)
        return found

    # -- methods, indexing -----------------------------------------------------------------------------------
    def list_method(self, base, name, node):
        args = node.args
        if node.keywords:
            raise self.fn.error(f"{name}() takes no keyword arguments", node)
        if name in ("append", "insert"):
            if len(args) != (1 if name == "append" else 2):
                raise self.fn.error(f"{name}() takes {1 if name == 'append' else 2} argument(s)", node)
            value = self.expr(args[-1])
            self.settle_list(base, value, node)
            value = self.list_elem(base.type, value, args[-1])
            index = [self.expr(args[0])] if name == "insert" else []
            self.emit(f"aten::{name}", [base, *index, value], at=node)
            return None
        self.check_list_known(base, node.func.value)
        if name == "pop":
            if len(args) > 1:
                raise self.fn.error("pop() takes at most 1 argument", node)
            index = self.expr(args[0]) if args else self.const(-1)
            return self.op("aten::pop", [base, index], at=node)
        raise self.fn.error(f"list method '{name}' is not supported", node.func, "lists support append, insert and pop")

    def list_subscript(self, base, node):
        if isinstance(node.slice, ast.Slice):
            s = node.slice
            bounds = [self.expr(b) if b is not None else self.const(None) for b in (s.lower, s.upper, s.step)]
            return self.op("aten::list_slice", [base, *bounds], at=node)
        return self.op("aten::list_getitem", [base, self.expr(node.slice)], at=node)

    def list_store(self, base, target, value):
        if isinstance(target.slice, ast.Slice):
            raise self.fn.error("assigning to a list slice is not supported", target)
        index = self.expr(target.slice)
        self.emit("aten::list_setitem", [base, index, self.list_elem(base.type, value, target)], at=target)

    def list_augassign(self, base, target, kind, node):
        if isinstance(target.slice, ast.Slice):
            raise self.fn.error("assigning to a list slice is not supported", target)
        index = self.expr(target.slice)
        old = self.op("aten::list_getitem", [base, index], at=target)
        if isinstance(old.type, TensorType):  # xs[i] += v: ndarray.__iadd__ updates the array the list holds
            self.emit(f"aten::{kind}_", [old, self.expr(node.value)], at=node)
            return
        new = self.op(f"aten::{kind}", [old, self.expr(node.value)], at=node)
        self.emit("aten::list_setitem", [base, index, self.list_elem(base.type, new, node)], at=node)

    # -- calls -----------------------------------------------------------------------------------------------
    def list_call(self, obj, node):
        """Builtins and NumPy functions on lists; NotImplemented for every other call."""
        if obj in (builtins.min, builtins.max) and len(node.args) == 1 and not node.keywords:
            lst = self.expr(node.args[0])
            if not isinstance(lst.type, ListType):
                raise self.fn.error(
                    f"{obj.__name__}() of one argument needs a list",
                    node,
                    f"for the {obj.__name__}imum of an array use np.{obj.__name__}(x)",
                )
            return self.op(f"aten::list_{obj.__name__}", [lst], at=node)
        if obj not in LIST_CALLS:
            return NotImplemented
        name = ast.unparse(node.func)
        if obj is builtins.sorted:
            kw = self.keywords(node, {"reverse"})
            reverse = bool(self.const_eval(kw["reverse"])) if "reverse" in kw else False
            return self.op("aten::sorted", [self.one_list(node, name)], {"reverse": reverse}, at=node)
        if obj is np.array:
            self.keywords(node, set())
            return self.array_from(node, name)
        kw = self.keywords(node, {"axis"})
        axis = self.const_eval(kw["axis"]) if "axis" in kw else 0
        if len(node.args) == 2 and "axis" not in kw:
            axis = self.const_eval(node.args[1])
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise self.fn.error(f"{name}(): axis must be an int constant", node)
        arrays = self.arrays_list(node, name)
        kind = "aten::concatenate" if obj is np.concatenate else "aten::stack"
        return self.op(kind, [arrays], {"axis": axis}, at=node)

    def one_list(self, node, name):
        if len(node.args) != 1:
            raise self.fn.error(f"{name}() takes one list", node)
        v = self.expr(node.args[0])
        if not isinstance(v.type, ListType):
            hint = "sort an array with np.sort(x)" if name == "sorted" and isinstance(v.type, TensorType) else None
            raise self.fn.error(f"{name}() needs a list here, got {self.describe_list(v.type)}", node.args[0], hint)
        return v

    def arrays_list(self, node, name):
        """The first argument as a list: a list value, or a list/tuple display or tuple value of arrays."""
        if not 1 <= len(node.args) <= 2:
            raise self.fn.error(f"{name}() takes a list or tuple of arrays", node)
        arg = node.args[0]
        if isinstance(arg, (ast.List, ast.Tuple)):
            return self.visit_List(ast.copy_location(ast.List(arg.elts, ast.Load()), arg))
        v = self.expr(arg)
        if isinstance(v.type, TupleType):
            parts = self.emit("prim::TupleUnpack", [v], at=arg).outputs
            return self.new_list(self.common_elem(parts, arg), parts, arg)
        if not isinstance(v.type, ListType):
            raise self.fn.error(f"{name}() needs a list or tuple of arrays, got {self.describe_list(v.type)}", arg)
        return v

    def array_from(self, node, name):
        if len(node.args) != 1:
            raise self.fn.error("np.array() takes one argument here", node, "pass dtype changes as .astype(dtype)")
        arg = node.args[0]
        if isinstance(arg, (ast.List, ast.Tuple)) and any(isinstance(e, (ast.List, ast.Tuple)) for e in arg.elts):
            return self.nested_array_literal(arg, node)
        numpy_dtype = None
        if isinstance(arg, (ast.List, ast.Tuple)):
            values = [self.expr(e) for e in arg.elts]
            if values and all(isinstance(v.type, NumpyScalarType) for v in values):
                # np.array([x[0], x[1]]) of float32 elements is float32 (the list holds their Python values)
                numpy_dtype = np.result_type(*[v.type.dtype for v in values]).name
            v = self.list_of(values, arg)
        else:
            v = self.expr(arg)
        if isinstance(v.type, TensorType):
            return self.op("aten::clone", [v], at=node)
        if isinstance(v.type, TupleType):
            parts = self.emit("prim::TupleUnpack", [v], at=arg).outputs
            lt = ListType(self.common_elem(parts, arg))
            v = self.new_list(lt.elem, [self.list_elem(lt, p, arg) for p in parts], arg)
        if not isinstance(v.type, ListType):
            raise self.fn.error(f"np.array() of {self.describe_list(v.type)} is not supported", arg)
        self.check_list_known(v, arg)
        e = v.type.elem
        if isinstance(e, TensorType):
            dtype, rank = e.dtype, e.rank + 1
        else:
            dtype, rank = numpy_dtype or scalar_dtype(e), 1
        return self.op("aten::list_to_array", [v], {"dtype": dtype, "rank": rank}, at=node)

    def nested_array_literal(self, arg, node):
        """``np.array([[1.0, 2.0], [3.0, 4.0]])`` of number literals: the array NumPy makes, built once when
        compiling and copied on each call (the caller gets a new, writable array, as from NumPy)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                a = np.array(ast.literal_eval(arg))
        except (ValueError, TypeError, SyntaxError, Warning) as e:
            if isinstance(e, ValueError) and "inhomogeneous" in str(e):
                raise self.fn.error(f"np.array() of nested lists: {str(e).splitlines()[0]}", arg) from None
            raise self.fn.error(
                "np.array() of nested lists: only number literals are supported there",
                arg,
                "for values known at run time, make the rows with np.array([...]) and combine "
                "them with np.stack([...])",
            ) from None
        return self.op("aten::clone", [self.array_constant(a, node)], at=node)


# -- the call boundary: which Python lists a list[T] parameter takes ------------------------------------------


def accept_list(want: ListType, got: ListType) -> ListType | None:
    """The parameter type for a list of ``got`` passed where ``want`` is annotated (lists are references:
    their element types must agree; a ``list[np.ndarray]`` takes arrays of any one dtype and rank)."""
    if want == got:
        return want
    if isinstance(want.elem, TensorType) and want.elem.dtype is None and isinstance(got.elem, TensorType):
        return got
    return None


def list_argument(fname: str, pname: str, want: ListType, arg) -> tuple:
    """(the specialized type, the value) for a Python list passed for a ``list[T]`` parameter; TypeError naming
    the parameter for anything else. The interpreter gets the caller's list itself; native code a copy that is
    reflected back (backend/llvm/runtime/listbox.py)."""
    if type(arg) is not list:
        raise TypeError(f"{fname}() argument '{pname}' must be a list, not {type(arg).__name__}")
    elem = want.elem
    if isinstance(elem, TensorType):
        if not arg:
            raise TypeError(
                f"{fname}() argument '{pname}': an empty list[np.ndarray] has no dtype and rank to "
                f"compile for; pass at least one array"
            )
        kinds = {(a.dtype.name, a.ndim) if isinstance(a, np.ndarray) else None for a in arg}
        if None in kinds or len(kinds) != 1:
            raise TypeError(f"{fname}() argument '{pname}' must be a list of arrays of one dtype and rank")
        dtype, rank = kinds.pop()
        if dtype not in DTYPE_NAMES:
            raise TypeError(f"{fname}() argument '{pname}' has arrays of unsupported dtype {dtype}")
        layout = next((unsupported_layout(a) for a in arg if unsupported_layout(a) is not None), None)
        if layout is not None:
            raise TypeError(f"{fname}() argument '{pname}' has an array that {layout}")
        return ListType(TensorType(dtype, rank)), arg
    allowed = {BOOL: (bool, np.bool_), INT: (int, np.integer), FLOAT: (int, float, np.integer, np.floating)}[elem]
    for k, v in enumerate(arg):
        if elem == INT and isinstance(v, int) and not -(2**63) <= v < 2**63:  # as an int argument
            raise OverflowError("int too large to convert to a 64-bit int")
        if not isinstance(v, allowed):
            raise TypeError(
                f"{fname}() argument '{pname}' must be a list of {elem}, but element {k} is {type(v).__name__}"
            )
    return want, arg
