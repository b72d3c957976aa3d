"""Calls, array attributes and indexing, as a mixin of FunctionEmitter.

A call's target is resolved to a Python object at compile time (``np.exp``, ``math.sqrt``, ``len``, another
scripted function). Objects the op registry binds (``OpDef.py``, ``OpDef.methods``) become that operator with
its schema's arguments and attributes; the few calls with their own shape rules (print, range, min/max,
array creation, reshape, astype) are handled here."""

from __future__ import annotations

import ast
import builtins
import copy
import inspect
import math
import string

import numpy as np

from ..ir.builder import Builder
from ..parallel import prange
from ..ir.registry import NeedsSpecialization, OpDef, op_for_callable, op_for_method
from ..ir.types import (
    BOOL,
    DTYPE_NAMES,
    FLOAT,
    INT,
    STR,
    ListType,
    NamedTupleType,
    NumpyScalarType,
    TensorType,
    TupleType,
    is_named_tuple_class,
    scalar_dtype,
)
from .arrays import ARRAY_CALLS, ARRAY_METHODS, ArrayFrontend
from .builtin_calls import BUILTIN_CALLS, NUMPY_SCALAR_TYPES
from .library_calls import LibraryCallsMixin
from .named_tuples import NamedTupleMixin
from .scopes import literal_int
from .lists import LIST_CALLS
from .values import Static, describe

CREATORS = {np.zeros: "aten::zeros", np.ones: "aten::ones", np.empty: "aten::empty"}
LIKE = {np.zeros_like: "aten::zeros_like", np.ones_like: "aten::ones_like", np.empty_like: "aten::empty_like"}
# NumPy's arithmetic as functions: an array operand's operator (np.add(x, y) is x + y for arrays); of two
# numbers NumPy returns a NumPy scalar by its own rules (1/0 is inf), which scripted code does not model. Not
# np.power: ndarray's ** takes np.square, np.sqrt, np.reciprocal for 2, 0.5, -1 (a bool array ** 2 is int8,
# np.power's int64; (-0.0) ** 0.5 is -0.0, np.power's 0.0), and aten::pow is **
ARITHMETIC_UFUNCS = {
    np.add: "aten::add",
    np.subtract: "aten::sub",
    np.multiply: "aten::mul",
    np.true_divide: "aten::div",
    np.floor_divide: "aten::floordiv",
    np.remainder: "aten::remainder",
}
# Callables call_object handles itself (the rest map onto registry operators through OpDef.py)
SPECIAL_CALLS = {
    builtins.print,
    builtins.range,
    prange,
    builtins.min,
    builtins.max,
    builtins.len,
    np.full,
    np.full_like,
    np.arange,
    np.reshape,
    *CREATORS,
    *LIKE,
    *BUILTIN_CALLS,
    *LIST_CALLS,
    *ARITHMETIC_UFUNCS,
    builtins.str,
    builtins.repr,
    builtins.format,
    builtins.pow,
}


class CallsMixin(ArrayFrontend, LibraryCallsMixin, NamedTupleMixin):
    # -- helpers --------------------------------------------------------------------------------------
    def is_builtin(self, func_node, obj) -> bool:
        if isinstance(func_node, ast.Name) and func_node.id not in self.locals:
            return self.resolver.lookup_global(self.fn, func_node.id) is obj
        return False

    def const_eval(self, node):
        """A compile-time constant argument (an axis, a dtype, a literal)."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return -node.operand.value
        if isinstance(node, ast.Tuple):
            return tuple(self.const_eval(e) for e in node.elts)
        if isinstance(node, (ast.Name, ast.Attribute)):
            r = self.visit(node)
            if isinstance(r, Static):
                return r.obj
        raise self.fn.error(f"'{ast.unparse(node)}' must be a constant here", node)

    def dtype_of(self, node) -> str:
        obj = self.const_eval(node)
        try:
            python_types = {builtins.float: "float64", builtins.int: "int64", builtins.bool: "bool"}
            name = np.dtype(python_types.get(obj, obj)).name
        except TypeError:
            name = None
        if name not in DTYPE_NAMES:
            raise self.fn.error(
                f"unsupported dtype '{ast.unparse(node)}'",
                node,
                "use np.float64, np.float32, np.int64, np.int32 or np.bool_",
            )
        return name

    def keywords(self, call, allowed) -> dict:
        kw = {}
        for k in call.keywords:
            if k.arg is None or k.arg not in allowed:
                raise self.fn.error(f"unexpected keyword argument '{k.arg}'", k)
            kw[k.arg] = k.value
        return kw

    def shape_values(self, node) -> list:
        """Dimensions given as an int, a tuple display, or a tuple value such as ``x.shape``."""
        if isinstance(node, ast.Tuple):
            dims = [self.expr(e) for e in node.elts]
        else:
            v = self.expr(node)
            dims = self.emit("prim::TupleUnpack", [v], at=node).outputs if isinstance(v.type, TupleType) else [v]
        for d in dims:
            if d.type == BOOL:  # NumPy: TypeError (an integer is required)
                raise self.fn.error("an array's dimensions must be ints, not bools", node, "write int(b)")
        return dims

    # -- calls ----------------------------------------------------------------------------------------
    def visit_Call(self, node):
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)
        ):
            return self.str_format(node)
        if isinstance(node.func, ast.Attribute):
            base = self.visit(node.func.value)
            if isinstance(base, Static) and isinstance(base.obj, np.ndarray):  # a module-level array
                base = self.static_value(base, node.func.value)
            if not isinstance(base, Static):
                return self.method_call(base, node.func.attr, node)
        target = self.visit(node.func)
        if not isinstance(target, Static):
            raise self.fn.error(f"'{ast.unparse(node.func)}' is not callable", node.func)
        return self.call_object(target.obj, node)

    def call_object(self, obj, node):
        name = ast.unparse(node.func)
        listed = self.list_call(obj, node)
        if listed is not NotImplemented:
            return listed
        if obj is builtins.print:
            return self.call_print(node)
        if obj is builtins.range or obj is prange:
            raise self.fn.error(f"{obj.__name__}() can only be the iterable of a for loop", node)
        if obj in (builtins.min, builtins.max):
            return self.call_minmax(obj, node)
        if obj in BUILTIN_CALLS:
            return self.call_builtin(obj, node)
        if obj in NUMPY_SCALAR_TYPES:
            return self.call_numpy_scalar(obj, node)
        if obj is builtins.len:
            return self.call_len(node)
        if obj in (builtins.str, builtins.repr, builtins.format):
            return self.call_text(obj, node)
        if obj is builtins.pow:
            if node.keywords or len(node.args) != 2:
                raise self.fn.error("pow() takes two positional arguments here (a modulus is not supported)", node)
            return self.visit(ast.copy_location(ast.BinOp(node.args[0], ast.Pow(), node.args[1]), node))
        if obj in (builtins.int, builtins.float, builtins.bool) and not node.args and not node.keywords:
            return self.const(obj())  # int() is 0, float() 0.0, bool() False
        if (
            obj in (builtins.int, builtins.float)
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            return self.number_from_str(obj, node)
        if self.resolver.is_script_function(obj):
            return self.call_script(obj, node)
        if getattr(obj, "scriptc_transform", False):  # scriptc.grad(f, argnums=1) inside scripted code
            return self.apply_transform(obj, node)
        if is_named_tuple_class(obj):
            return self.construct_named_tuple(obj, node)
        if getattr(obj, "__scriptc_library__", None) is not None:  # scriptc.random.uniform, ...
            return self.call_library(obj.__scriptc_library__, node)
        if obj in CREATORS:
            kw = self.keywords(node, {"shape", "dtype"})
            shape = node.args[0] if node.args else kw.get("shape")
            dtype = (
                self.dtype_of(kw["dtype"] if "dtype" in kw else node.args[1])
                if "dtype" in kw or len(node.args) > 1
                else "float64"
            )
            return self.op(CREATORS[obj], self.shape_values(shape), {"dtype": dtype}, at=node)
        if obj is np.full:
            kw = self.keywords(node, {"dtype", "fill_value", "shape"})
            fill = self.expr(node.args[1] if len(node.args) > 1 else kw["fill_value"])
            dtype = self.dtype_of(kw["dtype"]) if "dtype" in kw else self.scalar_dtype(fill, node)
            return self.op("aten::full", [fill] + self.shape_values(node.args[0]), {"dtype": dtype}, at=node)
        if obj in LIKE or obj is np.full_like:
            return self.call_like(obj, node)
        if obj is np.arange:
            return self.call_arange(node)
        if obj is np.reshape:
            return self.reshape(self.expr(node.args[0]), node.args[1:], node)
        if obj in ARRAY_CALLS:
            return ARRAY_CALLS[obj](self, node)
        if obj is math.hypot and len(node.args) != 2:
            raise self.fn.error(
                f"math.hypot() of {len(node.args)} argument{'s' * (len(node.args) != 1)} is not supported (two only)",
                node,
                "for a vector's length use np.linalg.norm(np.array([...]))",
            )
        if obj is np.where and len(node.args) == 1:
            raise self.fn.error(
                "np.where(condition) with one argument (the indices, np.nonzero) is not supported",
                node,
                "use a boolean mask, x[condition], or np.where(condition, a, b)",
            )
        if obj is math.log and len(node.args) == 2 and not node.keywords:  # CPython: log(x) / log(base)
            x, base = (self.decay(self.expr(a), node) for a in node.args)
            logs = [self.bind_op(op_for_callable(math.log), [v], node) for v in (x, base)]
            return self.op("aten::div", logs, at=node)
        if obj in ARITHMETIC_UFUNCS:
            return self.arithmetic_ufunc(obj, name, node)
        if obj is np.clip and any(isinstance(a, ast.Constant) and a.value is None for a in node.args[1:]):
            return self.clip_one_side(node)
        op = op_for_callable(obj)
        if op is None:
            raise self.fn.error(
                f"'{name}' is not supported in scripted functions", node.func, self.resolver.unsupported_hint(obj)
            )
        if obj is int and len(node.args) == 2:
            raise self.fn.error("int() with a base is not supported", node, "parse the text outside")
        args = [self.expr(a) for a in node.args]
        if getattr(obj, "__module__", None) == "math":  # math.sqrt(x[i]) is a float, as in Python
            args = [self.decay(a, node) for a in args]
        if obj in (np.floor, np.ceil, np.trunc) and len(args) == 1 and args[0].type == FLOAT and not node.keywords:
            return self.op(f"aten::{obj.__name__}_float", args, at=node)  # not math's int
        result = self.bind_op(op, args, node)
        if isinstance(obj, np.ufunc) and all(a.type.is_scalar for a in result.node.inputs):
            result = self.ufunc_scalar_kind(obj, result, node)
        return result

    def ufunc_scalar_kind(self, ufunc, result, node):
        """A ufunc of Python scalars is a scalar of the kind NumPy's loop gives (asked of NumPy with sample
        values): np.floor(2.5) is 2.0 where math.floor gives 2, np.maximum(5, 2) is 5, np.abs(True) True."""
        samples = {INT: 3, FLOAT: 1.5, BOOL: True}
        try:
            with np.errstate(all="ignore"):
                kind = np.asarray(ufunc(*(samples[a.type] for a in result.node.inputs))).dtype.kind
        except (KeyError, TypeError, ValueError):
            return result
        want = {"f": FLOAT, "i": INT, "u": INT, "b": BOOL}.get(kind)
        if want is None or want == result.type or result.type not in (INT, FLOAT, BOOL):
            return result
        return self.op({FLOAT: "aten::Float", INT: "aten::Int", BOOL: "aten::Bool"}[want], [result], at=node)

    def clip_one_side(self, node):
        """``np.clip`` with a bound None is what NumPy makes it: ``np.minimum(x, hi)`` or ``np.maximum(x, lo)``
        (their NaNs, ties and dtypes), and for both a copy of x (``np.positive``, which has no bool loop): here
        a clip to the extremes of x's dtype, which bound nothing."""
        if len(node.args) != 3 or node.keywords:
            raise self.fn.error("np.clip() with a None bound takes three positional arguments here", node)
        x = self.expr(node.args[0])
        lo, hi = (None if isinstance(a, ast.Constant) and a.value is None else a for a in node.args[1:])
        if lo is not None or hi is not None:
            other = self.expr(lo if lo is not None else hi)
            return self.bind_op(op_for_callable(np.maximum if lo is not None else np.minimum), [x, other], node)
        dtype = (
            x.type.dtype
            if isinstance(x.type, TensorType)
            else scalar_dtype(x.type)
            if x.type in (INT, FLOAT, BOOL)
            else None
        )
        if dtype is None:
            raise NeedsSpecialization("np.clip(x, None, None)")
        if dtype == "bool":
            raise self.fn.error(
                "ufunc 'positive' did not contain a loop with signature matching types "
                "<class 'numpy.dtypes.BoolDType'> -> None",
                node,
            )
        extremes = (
            (-math.inf, math.inf)
            if np.dtype(dtype).kind == "f"
            else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
        )
        return self.bind_op(op_for_callable(np.clip), [x, *map(self.const, extremes)], node)

    def arithmetic_ufunc(self, obj, name: str, node):
        """``np.add(x, y)`` and the like with an array operand: the operator's node."""
        if len(node.args) != 2 or node.keywords:
            raise self.fn.error(f"{name}() takes two operands here (out=, where= and dtype= are not supported)", node)
        operands = [self.expr(a) for a in node.args]
        if not any(isinstance(v.type, TensorType) for v in operands):
            raise self.fn.error(
                f"{name}() of two numbers gives a NumPy scalar by NumPy's rules (1/0 is inf), which "
                f"scripted code does not model",
                node,
                "write the operator (a + b: Python's rules), or pass an array",
            )
        return self.op(ARITHMETIC_UFUNCS[obj], operands, at=node)

    def bind_op(self, op: OpDef, args: list, node, what=None):
        what = what or ast.unparse(node.func)
        if op.variadic is None and len(op.params) < len(args) and len(args) - len(op.params) <= len(node.args):
            args, node = _positional_attributes(op, args, node)
        if (
            op.extra.get("reduction")
            and op.name != "aten::mean"
            and args
            and isinstance(args[0].type, TensorType)
            and args[0].type.rank == 0
            and any(k.arg == "axis" and self.const_eval(k.value) in (0, -1) for k in node.keywords)
        ):
            node = copy.copy(node)  # NumPy reduces a 0-d array along axis 0 or -1 whole (keepdims or not)
            node.keywords = [k for k in node.keywords if k.arg not in ("axis", "keepdims")]
        if op.extra.get("reduction") and any(k.arg == "keepdims" for k in node.keywords):
            return self.reduce_with_keepdims(op, args, node, what)
        attrs = {}
        if op.variadic is None and len(args) > len(op.params):
            extra = args[len(op.params) :]
            if len(extra) > len(op.attrs):
                raise self.fn.error(f"{what}() takes {len(op.params)} argument(s), {len(args)} given", node)
            raise self.fn.error(f"{what}(): pass {', '.join(op.attrs[: len(extra)])} as a keyword argument", node)
        for k in node.keywords:
            if k.arg in op.attrs:
                attrs[k.arg] = self.const_eval(k.value)  # an explicit None too: np.sort(x, axis=None)
            elif k.arg in op.params and op.params.index(k.arg) == len(args):
                args = args + [self.expr(k.value)]
            else:
                raise self.fn.error(f"{what}() got an unexpected keyword argument '{k.arg}'", k)
        defaults = op.extra.get("defaults", {})  # trailing parameters with the Python function's defaults
        while op.variadic is None and len(args) < len(op.params) and op.params[len(args)] in defaults:
            args = args + [self.const(defaults[op.params[len(args)]])]
        if op.variadic is None and len(args) < len(op.params):
            missing = op.params[len(args)]  # 'self' is the schema's name (TorchScript's) for NumPy's array
            raise self.fn.error(
                f"{what}() missing " + ("its array argument" if missing == "self" else f"argument '{missing}'"), node
            )
        emitted = self.emit(op.name, args, attrs, at=node)
        return emitted.output if emitted.outputs else self.const(None)  # x.fill(v) is None, as in Python

    def call_text(self, obj, node):
        """``str(x)``, ``repr(x)``, ``format(x, spec)`` (a constant spec): the f-string each stands for."""
        name = obj.__name__
        if (
            node.keywords
            or len(node.args) > (2 if obj is builtins.format else 1)
            or (obj is not builtins.str and not node.args)
        ):
            raise self.fn.error(
                f"{name}() takes {'a value and a constant spec' if name == 'format' else 'one value'} here", node
            )
        if not node.args:
            return self.const("")
        spec = self.const_eval(node.args[1]) if len(node.args) == 2 else ""
        if not isinstance(spec, str):
            raise self.fn.error("format() spec must be a constant str", node.args[1])
        value = self.expr(node.args[0])
        plain = "{!s}" if isinstance(value.type, NumpyScalarType) else "{}"  # (str(np.float32(0.1)) is 0.1, its
        # format(x, "") the double's digits)
        piece = "{!r}" if name == "repr" else "{:" + spec.replace("{", "{{").replace("}", "}}") + "}" if spec else plain
        return self.op("aten::format", [value], {"fmt": piece}, at=node)

    def str_format(self, node):
        """``"{} is {:.3f}".format(a, b)`` on a literal: the f-string it stands for (positional fields, ``{}``
        or ``{0}``, each with its conversion and a constant spec), CPython's errors for a bad field."""
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fn.error(
                "str.format() takes positional arguments here", node, 'write an f-string: f"{name} is {value:.3f}"'
            )
        values = [self.expr(a) for a in node.args]  # each evaluated once, in order, as CPython does
        fmt, used, auto, manual = [], [], 0, False
        try:
            fields = list(string.Formatter().parse(node.func.value.value))
        except ValueError as e:
            raise self.fn.error(str(e), node.func.value) from None
        for literal, field, spec, conversion in fields:
            fmt.append(literal.replace("{", "{{").replace("}", "}}"))
            if field is None:
                continue
            if field and not field.isdigit():
                raise self.fn.error(
                    f"str.format() field '{{{field}}}': only positions ({{}} or {{0}}) are supported here",
                    node.func.value,
                    "write an f-string",
                )
            if "{" in (spec or ""):
                raise self.fn.error("format specs computed at run time are not supported", node.func.value)
            if (field == "" and manual) or (field != "" and auto):
                raise self.fn.error(
                    "cannot switch from manual field specification to automatic field numbering"
                    if field == ""
                    else "cannot switch from automatic field numbering to manual field specification",
                    node.func.value,
                )
            index = int(field) if field else auto
            manual, auto = manual or field != "", auto + (field == "")
            if index >= len(values):
                raise self.fn.error(f"Replacement index {index} out of range for positional args tuple", node)
            used.append(values[index])
            fmt.append("{" + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")
        return self.op("aten::format", used, {"fmt": "".join(fmt)}, at=node)

    def method_call(self, base, name, node):
        if isinstance(base.type, ListType):
            return self.list_method(base, name, node)
        if isinstance(base.type, NamedTupleType):
            return self.named_tuple_method(base, name, node)
        if not isinstance(base.type, TensorType):
            raise self.fn.error(f"{describe_type(base.type)} has no method '{name}'", node.func)
        if name == "astype":
            if len(node.args) != 1:
                raise self.fn.error("astype() takes one dtype", node)
            return self.op("aten::to", [base], {"dtype": self.dtype_of(node.args[0])}, at=node)
        if name == "reshape":
            return self.reshape(base, node.args, node)
        if name in ARRAY_METHODS:
            return ARRAY_METHODS[name](self, base, node)
        op = op_for_method(name)
        if op is None:
            raise self.fn.error(f"array method '{name}' is not supported", node.func)
        return self.bind_op(op, [base] + [self.expr(a) for a in node.args], node, what=name)

    def reshape(self, base, args, node):
        dims = self.shape_values(args[0]) if len(args) == 1 else [self.expr(a) for a in args]
        return self.op("aten::reshape", [base] + dims, at=node)

    def scalar_dtype(self, v, node) -> str:
        if v.type in (INT, FLOAT, BOOL):
            return scalar_dtype(v.type)
        raise self.fn.error(f"fill value must be a number, got {describe_type(v.type)}", node)

    def call_like(self, obj, node):
        kw = self.keywords(node, {"dtype", "fill_value"})
        base = self.expr(node.args[0])
        if not isinstance(base.type, TensorType):
            raise self.fn.error(f"{ast.unparse(node.func)}() needs an array", node.args[0])
        if base.type.dtype is None and "dtype" not in kw:
            raise NeedsSpecialization("dtype of a *_like result")
        dtype = self.dtype_of(kw["dtype"]) if "dtype" in kw else base.type.dtype
        if obj is np.full_like:
            fill = self.expr(node.args[1] if len(node.args) > 1 else kw["fill_value"])
            return self.op("aten::full_like", [base, fill], {"dtype": dtype}, at=node)
        return self.op(LIKE[obj], [base], {"dtype": dtype}, at=node)

    def call_arange(self, node):
        self.keywords(node, set())
        args = [self.expr(a) for a in node.args]
        if not 1 <= len(args) <= 3:
            raise self.fn.error("np.arange() takes 1 to 3 arguments", node)
        if len(args) == 1:
            args = [self.const(0), args[0]]
        if len(args) == 2:
            args.append(self.const(1))
        return self.op("aten::arange", args, at=node)

    def call_print(self, node):
        kw = self.keywords(node, {"sep", "end", "flush"})
        values = [self.expr(a) for a in node.args]
        seps = {k: self.print_separator(kw.get(k), default) for k, default in (("sep", " "), ("end", "\n"))}
        sep, end = seps["sep"], seps["end"]
        if isinstance(sep, str) and isinstance(end, str):
            attrs = {k: v for k, v in (("sep", sep), ("end", end)) if v != {"sep": " ", "end": "\n"}[k]}
            self.emit("prim::Print", values, attrs, at=node)
            return
        # A separator computed at run time: the same text, written piece by piece.
        for i, v in enumerate(values):
            if i:
                self.print_piece(sep, node)
            self.emit("prim::Print", [v], {"end": ""}, at=node)
        self.print_piece(end, node)

    def print_separator(self, node, default):
        if node is None or isinstance(node, ast.Constant) and node.value is None:
            return default
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        v = self.expr(node)
        if v.type != STR:
            raise self.fn.error(f"print() separators must be str, got {describe_type(v.type)}", node)
        return v

    def print_piece(self, piece, node):
        if isinstance(piece, str):
            if piece:
                self.emit("prim::Print", [self.const(piece)], {"end": ""}, at=node)
        else:
            self.emit("prim::Print", [piece], {"end": ""}, at=node)

    def call_minmax(self, obj, node):
        if node.keywords:
            raise self.fn.error(
                f"{obj.__name__}() with {', '.join(f'{k.arg}=' for k in node.keywords)} is not supported",
                node,
                "compare in a loop, or test for an empty list first",
            )
        if len(node.args) < 2:
            raise self.fn.error(
                f"{obj.__name__}() of scalars needs two or more arguments",
                node,
                f"for the {obj.__name__}imum of an array use np.{obj.__name__}(x)",
            )
        kind = f"prim::{obj.__name__}"
        acc = self.expr(node.args[0])
        for a in node.args[1:]:
            acc = self.op(kind, [acc, self.expr(a)], at=node)
        return acc

    def call_len(self, node):
        if len(node.args) != 1:
            raise self.fn.error("len() takes one argument", node)
        v = self.expr(node.args[0])
        if isinstance(v.type, TupleType):
            return self.const(len(v.type.elems))
        if isinstance(v.type, ListType):
            return self.op("aten::list_len", [v], at=node)
        return self.op("aten::len", [v], at=node)

    def apply_transform(self, transform, node):
        """``scriptc.grad(f, ...)`` met in scripted code: made at compile time (its arguments are constants), a
        function the enclosing call then calls like any scripted function."""
        args = [self.const_eval(a) for a in node.args]
        kwargs = {k.arg: self.const_eval(k.value) for k in node.keywords}
        try:
            return Static(transform(*args, **kwargs))
        except (TypeError, ValueError) as e:
            raise self.fn.error(str(e), node) from None

    def call_script(self, callee, node):
        return self.call_script_values(callee, self.script_arguments(callee, node), node)

    def call_script_values(self, callee, args: list, node):
        params, graph, returns = self.resolver.callee_graph(callee, [a.type for a in args], self.fn, node)
        args = [self.convert(a, t, node) for a, t in zip(args, params)]
        if returns is None:
            return self.op("prim::CallFunction", args, {"fn": graph}, at=node)
        # a recursive call: the callee's graph is still being built, its result type is the one assumed
        return (
            Builder.at_end(self.block)
            .op("prim::CallFunction", args, [returns], {"fn": graph}, source=self.fn.loc(node))
            .output
        )

    def script_arguments(self, callee, node) -> list:
        """The values of a call's arguments in parameter order: positional, keyword, then the defaults
        (constants captured when the callee was decorated), bound as Python binds them."""
        names, name = callee.param_names, callee.__name__
        if len(node.args) > len(names):
            raise self.fn.error(
                f"{name}() takes {len(names)} positional arguments but {len(node.args)} were given", node
            )
        bound = [self.expr(a) for a in node.args] + [None] * (len(names) - len(node.args))
        for k in node.keywords:
            if k.arg is None:
                raise self.fn.error("**kwargs in calls is not supported", k)
            if k.arg not in names:
                raise self.fn.error(f"{name}() got an unexpected keyword argument '{k.arg}'", k)
            i = names.index(k.arg)
            if bound[i] is not None:
                raise self.fn.error(f"{name}() got multiple values for argument '{k.arg}'", k)
            bound[i] = self.expr(k.value)
        for i, p in enumerate(names):
            if bound[i] is None:
                if p not in callee.defaults:
                    raise self.fn.error(f"{name}() missing required argument '{p}'", node)
                bound[i] = self.const(callee.defaults[p])
        return bound

    # -- arrays: attributes and indexing --------------------------------------------------------------
    def array_attribute(self, base, node):
        if isinstance(base.type, NamedTupleType):
            return self.named_tuple_attribute(base, node)
        if not isinstance(base.type, TensorType):
            raise self.fn.error(f"{describe_type(base.type)} has no attribute '{node.attr}'", node)
        if node.attr == "dtype":
            return self.dtype_attribute(base, node)
        kinds = {"shape": "aten::size", "ndim": "aten::dim", "size": "aten::numel", "T": "aten::numpy_T"}
        if node.attr not in kinds:
            raise self.fn.error(f"array attribute '{node.attr}' is not supported", node)
        return self.op(kinds[node.attr], [base], at=node)

    def index_parts(self, node) -> list:
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for p in parts:
            if isinstance(p, ast.Constant) and p.value is Ellipsis:
                raise self.fn.error("indexing with ... is not supported", p)
        return parts

    def visit_Subscript(self, node):
        base = self.expr(node.value)
        if isinstance(base.type, TupleType):
            if isinstance(node.slice, ast.Slice):  # t[1:], t[::-1]: a new tuple of those elements
                bounds = [
                    self.const_eval(p) if p is not None else None
                    for p in (node.slice.lower, node.slice.upper, node.slice.step)
                ]
                if not all(b is None or type(b) is int for b in bounds) or bounds[2] == 0:
                    raise self.fn.error("a tuple is sliced by int constants (a nonzero step)", node.slice)
                picked = range(len(base.type.elems))[slice(*bounds)]
                return self.op("prim::TupleConstruct", [self.tuple_element(base, k, node) for k in picked], at=node)
            index = literal_int(node.slice)
            if index is None and isinstance(node.slice, ast.Name) and node.slice.id not in self.locals:
                index = self.const_eval(node.slice)  # a module-level constant
            if not isinstance(index, int):
                return self.tuple_at(base, node.slice, node)
            return self.op("prim::TupleIndex", [base], {"index": index}, at=node)
        if isinstance(base.type, ListType):
            return self.list_subscript(base, node)
        if not isinstance(base.type, TensorType):
            raise self.fn.error(f"{describe_type(base.type)} is not subscriptable", node.value)
        return self.index_value(base, self.index_parts(node), node)

    def index_value(self, base, parts, node):
        """Read ``base[parts]``: an element when every dimension gets an int, otherwise a view."""
        kind, values = self.index_plan(base, parts, node)
        if kind == "element":
            return self.op("aten::getitem", [base] + values, at=node)
        if kind == "mask":
            return self.mask_read(base, values, node)
        if kind == "array":
            return self.index_read(values, node)
        return values

    def index_plan(self, base, parts, node):
        rank = base.type.rank
        if rank is None:
            raise NeedsSpecialization("indexing")
        values = [
            p
            if not isinstance(p, ast.AST)
            else self.slice_bounds(p)
            if isinstance(p, ast.Slice)
            else "newaxis"
            if self.is_newaxis(p)
            else self.index_list(self.expr(p), p)
            for p in parts
        ]
        mask = self.mask_index(base, values, parts, node)
        if mask is not None:
            return "mask", mask
        indexed = sum(1 for v in values if not isinstance(v, str))
        if indexed > rank:
            raise self.fn.error(
                f"too many indices for array: array is {rank}-dimensional, but {indexed} were indexed", node
            )
        plan = self.array_index(base, values, parts, node)
        if plan is not None:
            return "array", plan
        if len(values) == rank and not any(isinstance(v, (tuple, str)) for v in values):
            for v, p in zip(values, parts):
                if v.type != INT:
                    raise self.fn.error(
                        f"array indices must be ints, got {describe_type(v.type)}",
                        p if isinstance(p, ast.AST) else node,
                    )
            return "element", values
        view, dim, axis = base, 0, 0  # dim: of the view so far; axis: of base, which errors name
        for v in values:
            if isinstance(v, str):  # np.newaxis: a new dimension of length 1
                view = self.op("aten::unsqueeze", [view], {"dim": dim}, at=node)
                dim += 1
                continue
            if v == ():
                dim += 1  # a bare ':' keeps the dimension as it is
            elif isinstance(v, tuple):
                view = self.op("aten::slice", [view, *v], {"dim": dim}, at=node)
                dim += 1
            else:
                view = self.op(
                    "aten::select", [view, v], {"dim": dim, **({"axis": axis} if axis != dim else {})}, at=node
                )
            axis += 1
        return "view", view

    def slice_bounds(self, s: ast.Slice) -> tuple:
        if s.lower is None and s.upper is None and s.step is None:
            return ()
        return tuple(self.expr(b) if b is not None else self.const(None) for b in (s.lower, s.upper, s.step))

    def number_from_str(self, cls, node):
        """``int("42")``, ``float("1e-3")``: the number; a str CPython refuses raises its ValueError where the call
        runs (not when compiling: a path never taken must not fail)."""
        text = node.args[0].value
        try:
            return self.const(cls(text))
        except ValueError as e:
            self.emit("prim::RaiseException", [self.const(str(e))], {"exc": "ValueError"}, at=node)
            return self.const(cls())

    def store_subscript(self, target, value):
        base = self.expr(target.value)
        if isinstance(base.type, ListType):
            return self.list_store(base, target, value)
        if not isinstance(base.type, TensorType):
            raise self.fn.error(f"{describe_type(base.type)} does not support item assignment", target.value)
        kind, index = self.index_plan(base, self.index_parts(target), target)
        if kind == "element":
            self.emit("aten::setitem", [base] + index + [value], at=target)
        elif kind == "mask":
            self.mask_store(base, index, value, target)
        elif kind == "array":
            self.index_store(index, value, target)
        else:
            self.emit("aten::copy_", [index, value], at=target)

    def augassign_subscript(self, target, kind, node):
        base = self.expr(target.value)
        if isinstance(base.type, ListType):
            return self.list_augassign(base, target, kind, node)
        if not isinstance(base.type, TensorType):
            raise self.fn.error(f"{describe_type(base.type)} does not support item assignment", target.value)
        plan, index = self.index_plan(base, self.index_parts(target), target)
        # CPython reads x[i] (its IndexError first) before it evaluates the right-hand side
        if plan == "mask":
            self.mask_augassign(base, index, kind, node.value, node)
        elif plan == "array":
            self.index_augassign(index, kind, node.value, node)
        elif plan == "element":
            old = self.op("aten::getitem", [base] + index, at=target)
            new = self.op(f"aten::{kind}", [old, self.expr(node.value)], at=node)
            self.emit("aten::setitem", [base] + index + [new], at=node)
        else:
            self.emit(f"aten::{kind}_", [index, self.expr(node.value)], at=node)


def describe_type(t) -> str:
    return describe(t)


def _positional_attributes(op: OpDef, args: list, node):
    """``np.round(x, 2)``, ``np.sum(x, 0)``, ``x.max(1)``: trailing positional arguments that NumPy's function
    names (by its signature, which its ndarray method shares) as attributes of the operator, passed as those
    keywords (each a compile-time constant). Anything else is left for ``bind_op`` to refuse."""
    extra = len(args) - len(op.params)
    names = next((_parameter_names(fn) for fn in op.py if _parameter_names(fn) is not None), [])
    names = names[len(op.params) : len(op.params) + extra]
    if len(names) != extra or not all(name in op.attrs for name in names) or any(k.arg in names for k in node.keywords):
        return args, node
    node = copy.copy(node)
    moved = node.args[len(node.args) - extra :]
    node.args = node.args[: len(node.args) - extra]
    node.keywords = [ast.keyword(arg=name, value=value) for name, value in zip(names, moved)] + node.keywords
    return args[: len(op.params)], node


def _parameter_names(fn) -> list[str] | None:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
