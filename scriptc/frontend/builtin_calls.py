"""Python builtins written out in the IR, and ``assert``/``raise``, as a mixin of FunctionEmitter.

- ``for`` iterables: ``range``, arrays, and ``enumerate(it, start=)``, ``zip(a, b[, c])`` (stops at the
  shortest), ``reversed(range(...) | array)`` over them, nested freely. An iterable is a *plan*: a trip count
  and a function giving the element of iteration ``i`` (a Value, or a list of Values for a tuple).
- ``sum``/``any``/``all`` of a 1-D array are loops in the graph, exactly as Python runs them: ``sum`` adds the
  elements left to right starting from 0 (not NumPy's pairwise ``np.sum``), ``any``/``all`` stop at the first
  element that decides.
- ``isinstance`` is folded: a value's type is known at compile time.
- ``round``, ``divmod``, ``math.isclose``, ``math.gcd`` map onto the operators of ``ops/builtins.py``.
- ``raise E``, ``raise E(args...)`` and ``assert cond[, msg]`` emit ``prim::RaiseException``; a ``raise`` ends
  its path like a ``return`` (it sets the return flag without a value), an ``assert`` is a conditional raise.
"""

from __future__ import annotations

import ast
import builtins
import math

import numpy as np

from ..errors import CompileError
from ..ir.builder import Builder
from ..ir.core import Value, constant_value, is_constant
from ..ir.registry import NeedsSpecialization, lookup
from ..ir.types import (
    BOOL,
    FLOAT,
    INT,
    NARROW_SCALARS,
    NONE,
    ListType,
    NumpyScalarType,
    TensorType,
    TupleType,
    exact_numpy_join,
    scalar_type,
)
from .values import RET, describe

ITERATORS = (builtins.enumerate, builtins.zip, builtins.reversed)
REDUCTIONS = (builtins.sum, builtins.any, builtins.all)
BUILTIN_CALLS = {*ITERATORS, *REDUCTIONS, builtins.round, builtins.isinstance, math.isclose, math.gcd}
# np.float32(x), np.int64(x), ...: NumPy's scalar types called as conversions
NUMPY_SCALAR_TYPES = {np.dtype(name).type: name for name in (*NARROW_SCALARS, "float64", "int64", "bool")}


def from_array(v: Value) -> bool:
    """Whether ``v`` is an int or float read out of an array (an element of an int64 or float64 array, a
    reduction): a NumPy scalar in NumPy, strong in its promotion (NEP 50) and cast (not range-checked) by
    np.int32(v), which scriptc holds as the Python scalar."""
    return (
        v.type in (INT, FLOAT)
        and v.node is not None
        and "-> Number" in lookup(v.node.kind).schema
        and any(isinstance(i.type, TensorType) for i in v.node.inputs)
    )  # (not len(x), x.size: Python ints)


# Builtins outside the subset, and what does the job instead.
UNSUPPORTED_BUILTINS = {
    "map": "write a for loop over the array or range",
    "filter": "write a for loop with an if",
    "open": "file I/O is not supported in scripted functions: read the data outside and pass arrays in",
    "input": "read input outside the scripted function and pass it as an argument",
    "dict": "dicts are not supported yet: use arrays indexed by int, or tuples",
    "set": "sets are not supported yet: use a boolean array as a membership mask",
    "list": "build a list with [...] and append, or an array with np.empty(n) / np.zeros(n) filled in a loop",
    "tuple": "write a tuple display (a, b, c)",
    "getattr": "access attributes directly (x.shape, x.ndim, ...)",
    "setattr": "attributes cannot be set in scripted functions",
    "hasattr": "types are known at compile time: use isinstance(x, int | float | bool | np.ndarray)",
    "iter": "iterate with a for loop over range(...), an array, enumerate or zip",
    "next": "iterate with a for loop over range(...), an array, enumerate or zip",
    "type": "types are known at compile time: use isinstance(x, int | float | bool | np.ndarray)",
    "hash": None,
    "id": None,
    "eval": None,
    "exec": None,
    "vars": None,
    "globals": None,
    "locals": None,
    "super": None,
    "object": None,
    "ord": None,
    "chr": None,
    "bin": "use an f-string: f'{x:b}'",
    "hex": "use an f-string: f'{x:x}'",
    "oct": "use an f-string: f'{x:o}'",
    "complex": "complex numbers are not supported",
    "bytes": None,
    "bytearray": None,
    "frozenset": "sets are not supported yet: use a boolean array as a membership mask",
    "slice": "write the slice in the subscript: x[a:b:c]",
    "callable": None,
}


def unsupported_builtin_hint(name: str) -> str | None:
    return UNSUPPORTED_BUILTINS.get(name)


class BuiltinCallsMixin:
    # -- for-loop iterables -------------------------------------------------------------------------------
    def iteration_builtin(self, it):
        """range, enumerate, zip or reversed when the iterable is a call to one of them, else None."""
        if isinstance(it, ast.Call) and isinstance(it.func, (ast.Name, ast.Attribute)):
            try:
                obj = getattr(self.visit(it.func), "obj", None)
            except CompileError:  # a method of a value (x.copy()): not a builtin, an iterable to evaluate
                return None
            if obj in (builtins.range, builtins.enumerate, builtins.zip, builtins.reversed):
                return obj
        return None

    def iteration_plan(self, it):
        """(trip count Value, element function) of a for loop's iterable."""
        plans = {
            builtins.range: self.range_plan,
            builtins.enumerate: self.enumerate_plan,
            builtins.zip: self.zip_plan,
            builtins.reversed: self.reversed_plan,
        }
        obj = self.iteration_builtin(it)
        if obj is not None:
            return plans[obj](it)
        return self.sequence_plan(self.expr(it), it)

    def sequence_plan(self, seq, it):
        """An array's or a list's elements by index (a list's length as the loop starts)."""
        if isinstance(seq.type, TensorType):
            return self.op("aten::len", [seq], at=it), lambda i: self.index_value(seq, [i], it)
        if isinstance(seq.type, ListType):
            return self.op("aten::list_len", [seq], at=it), lambda i: self.op("aten::list_getitem", [seq, i], at=it)
        if isinstance(seq.type, TupleType):  # for over a tuple is unrolled (tuple_loops.py), not a loop
            raise self.fn.error(
                f"a tuple ({seq.type}) is zipped only with other tuples, and enumerated alone",
                it,
                "loop over the tuple itself, or over zip(...) of tuples only",
            )
        raise self.fn.error(
            f"for loops over {self.describe(seq.type)} are not supported",
            it,
            "iterate over range(...), an array, a list, a tuple, enumerate(...) or zip(...)",
        )

    def range_arguments(self, it):
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.fn.error("range() takes 1 to 3 positional arguments", it)
        args = [self.expr(a) for a in it.args]
        for a, node in zip(args, it.args):
            if a.type not in (INT, BOOL):
                raise self.fn.error(f"range() needs ints, got {self.describe(a.type)}", node)
        if len(args) == 1:
            return None, args[0], None
        return args[0], args[1], args[2] if len(args) == 3 else self.const(1)

    def range_plan(self, it):
        lo, hi, step = self.range_arguments(it)
        if lo is None:  # range(n): the trip count is n (a negative n runs no iteration; range(True) runs one)
            return (self.op("aten::Int", [hi], at=it) if hi.type == BOOL else hi), lambda i: i
        trips = self.op("aten::__range_length", [lo, hi, step], at=it)
        return trips, lambda i: self.op("aten::__derive_index", [i, lo, step], at=it)

    def enumerate_plan(self, it):
        trips, element = self.iteration_plan(self.enumerate_iterable(it))
        start = self.enumerate_start(it)

        def pair(i):
            index = self.op("aten::add", [start, i], at=it) if start is not None else i
            return [index, self.as_value(element(i), it)]

        return trips, pair

    def enumerate_iterable(self, it):
        if len(it.args) + len(self.keywords(it, {"start"})) > 2 or not it.args:
            raise self.fn.error("enumerate() takes an iterable and an optional start", it)
        return it.args[0]

    def enumerate_start(self, it) -> Value | None:
        """``enumerate``'s start, None when it is not given (evaluated after the iterable, as CPython does)."""
        start_node = it.args[1] if len(it.args) == 2 else self.keywords(it, {"start"}).get("start")
        start = self.expr(start_node) if start_node is not None else None
        if start is not None and start.type not in (INT, BOOL):
            raise self.fn.error(f"enumerate() start must be an int, got {self.describe(start.type)}", start_node)
        return start

    def zip_plan(self, it):
        if it.keywords:
            raise self.fn.error("zip() keyword arguments (strict=) are not supported", it)
        if len(it.args) < 2:
            raise self.fn.error(
                "zip() of fewer than two iterables is not supported", it, "iterate over the iterable itself"
            )
        plans = [self.iteration_plan(a) for a in it.args]
        trips = plans[0][0]
        for t, _ in plans[1:]:
            trips = self.op("prim::min", [trips, t], at=it)
        return trips, lambda i: [self.as_value(element(i), it) for _, element in plans]

    def reversed_plan(self, it):
        if it.keywords or len(it.args) != 1:
            raise self.fn.error("reversed() takes one argument", it)
        arg = it.args[0]
        if isinstance(arg, ast.Call) and self.is_builtin(arg.func, builtins.range):
            lo, hi, step = self.range_arguments(arg)
            if lo is None:
                lo, step = self.const(0), self.const(1)
            trips = self.op("aten::__range_length", [lo, hi, step], at=arg)
            # from the last element down (not lo + (trips - 1 - i) * step: trips is capped at 2**63 - 1 where
            # a range is longer, reversed(range(-2**63, 2**63 - 1)))
            last = self.op("aten::__range_last", [lo, hi, step], at=arg)
            down = self.op("aten::neg", [step], at=arg)
            return trips, lambda i: self.op("aten::__derive_index", [i, last, down], at=it)
        seq = self.expr(arg)
        if not isinstance(seq.type, TensorType):
            raise self.fn.error(
                f"reversed() of {self.describe(seq.type)} is not supported", arg, "reverse a range(...) or an array"
            )
        trips = self.op("aten::len", [seq], at=arg)

        def element(i):
            last = self.op("aten::sub", [self.op("aten::sub", [trips, self.const(1)], at=it), i], at=it)
            return self.index_value(seq, [last], it)

        return trips, element

    def as_value(self, v, at):
        return self.op("prim::TupleConstruct", v, at=at) if isinstance(v, list) else v

    # -- calls --------------------------------------------------------------------------------------------
    def call_builtin(self, obj, node):
        name = ast.unparse(node.func)
        if obj in ITERATORS:
            raise self.fn.error(
                f"{obj.__name__}() can only be the iterable of a for loop", node, f"write: for ... in {name}(...):"
            )
        if obj in REDUCTIONS:
            return self.call_reduction(obj, node)
        if obj is builtins.isinstance:
            return self.call_isinstance(node)
        if obj is builtins.round:
            return self.call_round(node)
        if obj is math.isclose:
            kw = self.keywords(node, {"rel_tol", "abs_tol"})
            if len(node.args) != 2:
                raise self.fn.error("math.isclose() takes two positional arguments", node)
            rel = self.expr(kw["rel_tol"]) if "rel_tol" in kw else self.const(1e-09)
            tol = self.expr(kw["abs_tol"]) if "abs_tol" in kw else self.const(0.0)
            return self.op("prim::isclose", [self.expr(a) for a in node.args] + [rel, tol], at=node)
        if obj is math.gcd:
            self.keywords(node, set())
            args = [self.expr(a) for a in node.args]
            acc = args[0] if args else self.const(0)
            for a in args[1:] or [self.const(0)]:
                acc = self.op("prim::gcd", [acc, a], at=node)
            return acc
        raise AssertionError(obj)

    def call_numpy_scalar(self, obj, node):
        """``np.float32(x)``, ``np.int32(x)``, ``np.float64(x)``, ``np.bool_(x)``, as NumPy converts: a NumPy scalar
        (an array's element) is cast (wrapping, truncating); a Python float to an integer type is ``int(x)``
        first (ValueError for NaN, OverflowError for infinities), and a Python int out of the type's range is
        NumPy's OverflowError."""
        dtype = NUMPY_SCALAR_TYPES[obj]
        if len(node.args) != 1 or node.keywords:
            raise self.fn.error(f"np.{obj.__name__}() takes one number here", node)
        v = self.expr(node.args[0])
        if not v.type.is_scalar:
            raise self.fn.error(
                f"np.{obj.__name__}() of {self.describe(v.type)} is not supported",
                node,
                f"for an array, use .astype(np.{obj.__name__})",
            )
        if dtype == "bool":
            return self.truth(v, node)
        python = not isinstance(v.type, NumpyScalarType) and not from_array(v)
        if python and np.dtype(dtype).kind in "iu" and v.type == FLOAT:
            v = self.op("aten::Int", [v], at=node)  # np.int32(2.7) is np.int32(int(2.7))
        if dtype == "float64" and python:
            return self.convert(v, FLOAT, node)
        return self.op("aten::numpy_scalar", [v], {"dtype": dtype, **({} if python else {"cast": True})}, at=node)

    def call_round(self, node):
        kw = self.keywords(node, {"ndigits"})
        if not 1 <= len(node.args) + len(kw) <= 2 or not node.args:
            raise self.fn.error("round() takes a number and an optional ndigits", node)
        x = self.expr(node.args[0])
        nd = node.args[1] if len(node.args) == 2 else kw.get("ndigits")
        if nd is None or isinstance(nd, ast.Constant) and nd.value is None:
            return self.op("prim::round", [x], at=node)
        return self.op("prim::round_ndigits", [x, self.expr(nd)], at=node)

    def call_isinstance(self, node):
        if node.keywords or len(node.args) != 2:
            raise self.fn.error("isinstance() takes two arguments", node)
        t = self.expr(node.args[0]).type
        classes = self.classes_of(node.args[1])
        result = False
        for cls in classes:
            checks = {
                int: t in (INT, BOOL),
                float: t == FLOAT,
                bool: t == BOOL,
                np.ndarray: isinstance(t, TensorType),
                tuple: isinstance(t, TupleType),
                type(None): t == NONE,
            }
            if not isinstance(cls, type) or cls not in checks:
                raise self.fn.error(
                    f"isinstance() against '{ast.unparse(node.args[1])}' is not supported",
                    node.args[1],
                    "check against int, float, bool, np.ndarray, tuple or a tuple of those",
                )
            result = result or checks[cls]
        return self.const(result)

    def classes_of(self, node) -> tuple:
        """The classes of isinstance's second argument: a class, a tuple of them, or ``int | float``."""
        if isinstance(node, ast.Tuple):
            return tuple(c for e in node.elts for c in self.classes_of(e))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.classes_of(node.left) + self.classes_of(node.right)
        if isinstance(node, ast.Constant) and node.value is None:
            return (type(None),)
        return (self.const_eval(node),)

    def call_reduction(self, obj, node):
        name = obj.__name__
        if node.keywords or not 1 <= len(node.args) <= (2 if obj is builtins.sum else 1):
            raise self.fn.error(
                f"{name}() of an array takes the array" + (" and an optional start" if obj is builtins.sum else ""),
                node,
            )
        seq = self.expr(node.args[0])
        if isinstance(seq.type, ListType) and obj is builtins.sum and len(node.args) == 1:
            return self.op("aten::list_sum", [seq], at=node)
        if not isinstance(seq.type, TensorType):
            raise self.fn.error(
                f"{name}() of {self.describe(seq.type)} is not supported",
                node.args[0],
                f"{name}() takes a 1-D array" + (" or a list" if obj is builtins.sum else ""),
            )
        if seq.type.rank is None:
            raise NeedsSpecialization(f"{name}() of an array")
        if seq.type.rank != 1:
            raise self.fn.error(
                f"{name}() of a {seq.type.rank}-D array adds up its rows as arrays, which is not supported",
                node,
                f"use np.{name}(x) for the whole array, or np.{name}(x, axis=0)",
            )
        if obj is builtins.sum:
            start = self.expr(node.args[1]) if len(node.args) == 2 else self.const(0)
            return self.sum_loop(seq, start, node)
        return self.any_all_loop(seq, obj is builtins.any, node)

    def element_type(self, seq):
        dtype = seq.type.dtype
        if dtype is None:
            raise NeedsSpecialization("element type")
        kind = np.dtype(dtype).kind
        return FLOAT if kind == "f" else BOOL if kind == "b" else INT

    def array_loop(self, seq, init, acc_type, step, at, name):
        """A prim::Loop over the elements of a 1-D array carrying one accumulator: ``step(acc, element)``
        returns (continue condition or None, new accumulator)."""
        trips = self.op("aten::len", [seq], at=at)
        # no output yet: added once the body is emitted
        node = Builder.at_end(self.block).op(
            "prim::Loop", [trips, self.const(True), self.convert(init, acc_type, at)], [], source=self.fn.loc(at)
        )
        body = Builder.add_block(node, [(INT, "i"), (acc_type, name)])
        i, acc = body.params

        def inside():
            element = self.op("aten::getitem", [seq, i], at=at)
            cond, new = step(acc, element)
            body.add_return(cond if cond is not None else self.const(True))
            body.add_return(self.convert(new, acc_type, at))

        self.in_block(body, inside)
        return node.add_output(acc_type, self.graph.fresh_name(name))

    def sum_loop(self, seq, start, at):
        element = self.element_type(seq)
        if start.type not in (INT, FLOAT, BOOL):
            raise self.fn.error(f"sum() start must be a number, got {self.describe(start.type)}", at)
        acc_type = FLOAT if FLOAT in (element, start.type) else INT
        if (
            seq.type.dtype in NARROW_SCALARS
            and is_constant(start)
            and exact_numpy_join(constant_value(start), scalar_type(seq.type.dtype))
        ):
            acc_type = scalar_type(seq.type.dtype)  # 0 + np.float32 is an np.float32: it sums in float32
        return self.array_loop(
            seq, start, acc_type, lambda acc, x: (None, self.op("aten::add", [acc, x], at=at)), at, "sum"
        )

    def any_all_loop(self, seq, is_any, at):
        self.element_type(seq)

        def step(acc, x):
            truth = self.truth(x, at)
            go_on = self.op("aten::__not__", [truth], at=at) if is_any else truth
            return go_on, truth

        return self.array_loop(seq, self.const(not is_any), BOOL, step, at, "any" if is_any else "all")

    # -- statements ---------------------------------------------------------------------------------------
    def visit_Raise(self, node):
        if node.cause is not None:
            raise self.fn.error("'raise ... from ...' is not supported", node, "raise the exception alone")
        if node.exc is None:
            raise self.fn.error(
                "a bare 'raise' re-raises the current exception, and there is none: try/except is not supported",
                node,
                "raise ValueError('...') or another builtin exception",
            )
        exc = node.exc
        call = exc if isinstance(exc, ast.Call) else None
        try:
            cls = self.const_eval(call.func if call else exc)
        except CompileError:
            cls = None
        if isinstance(cls, type) and issubclass(cls, BaseException) and not issubclass(cls, Exception):
            raise self.fn.error(
                f"raising {cls.__name__} (a BaseException that is not an Exception) is not supported",
                exc,
                "raise a builtin Exception such as RuntimeError, and exit in the caller",
            )
        if not (isinstance(cls, type) and issubclass(cls, Exception) and getattr(builtins, cls.__name__, None) is cls):
            raise self.fn.error(
                f"only builtin exception types can be raised, not '{ast.unparse(exc)}'",
                exc,
                "raise ValueError, RuntimeError, IndexError, ... with a str or f-string message",
            )
        if call is not None and call.keywords:
            raise self.fn.error("exception arguments must be positional", call)
        values = [self.expr(a) for a in call.args] if call else []
        self.emit("prim::RaiseException", values, {"exc": cls.__name__}, at=node)
        self.env.vars[RET] = True  # nothing after a raise runs: its path returns no value

    def visit_Assert(self, node):
        cond = self.condition(node.test)
        failed = self.op("aten::__not__", [cond], at=node)

        def raise_it():
            values = [self.expr(node.msg)] if node.msg is not None else []
            self.emit("prim::RaiseException", values, {"exc": "AssertionError"}, at=node)

        self.emit_if(failed, raise_it, lambda: None, node)

    @staticmethod
    def describe(t):
        return describe(t)
