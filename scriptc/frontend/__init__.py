"""Python source -> IR: ``FunctionEmitter(...).build()`` makes the SSA graph of one function for given parameter
types."""

from __future__ import annotations

import ast
import builtins
import typing

import numpy as np

from .. import ops  # noqa: F401  (declares the operators this package finds in the registry)

from ..errors import CompileError
from ..ir.core import Graph
from ..ir.registry import NeedsSpecialization, op_for_callable
from ..interop import is_array_class
from ..ir.types import (
    BOOL,
    DTYPE_NAMES,
    FLOAT,
    INT,
    NONE,
    TENSOR,
    TupleType,
    Type,
    is_named_tuple_class,
    named_tuple_type,
)
from .builtin_calls import unsupported_builtin_hint
from .calls import SPECIAL_CALLS
from .emitter import UNSUPPORTED, FunctionEmitter
from .lists import list_annotation
from .source import FunctionSource, get_source

__all__ = ["CompileError", "FunctionEmitter", "FunctionSource", "Resolver", "get_source", "validate", "annotation_type"]

_MISSING = object()


def annotation_type(obj) -> Type | None:
    """The IR type of a parameter or return annotation, or None if it is not one we compile."""
    if obj is int:
        return INT
    if obj is float:
        return FLOAT
    if obj is bool:
        return BOOL
    if obj is None or obj is type(None):
        return NONE
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return numpy_scalar_annotation(obj)
    origin = typing.get_origin(obj)
    if obj is np.ndarray or origin is np.ndarray:
        return array_annotation(obj)
    if is_array_class(obj):  # torch.Tensor, jax.Array: viewed as NumPy arrays at the call (interop.py)
        return TENSOR
    if origin is list:
        return list_annotation(obj, annotation_type)
    if origin is tuple:
        elems = [annotation_type(a) for a in typing.get_args(obj)]
        return None if None in elems or Ellipsis in typing.get_args(obj) else TupleType(tuple(elems))
    if is_named_tuple_class(obj):
        return named_tuple_type(obj, annotation_type)
    return None


def numpy_scalar_annotation(obj) -> Type | None:
    """``np.float64``, ``np.int32``, ``np.bool_``: the Python scalar such a value converts to (a parameter so
    annotated takes NumPy scalars and Python numbers alike, and holds them as Python scalars)."""
    for base, t in ((np.bool_, BOOL), (np.integer, INT), (np.floating, FLOAT)):
        if issubclass(obj, base):
            return t
    return None


def array_annotation(obj) -> Type | None:
    """``np.ndarray``, ``npt.NDArray[np.float64]``, ``np.ndarray[Any, np.dtype[np.int32]]``: an array (its
    dtype, when named, is checked at each call: ``annotated_dtype``)."""
    dtype = annotated_dtype(obj)
    return None if dtype not in DTYPE_NAMES and dtype is not None else TENSOR


def annotated_dtype(obj) -> str | None:
    """The dtype an array annotation names (``npt.NDArray[np.float64]``: float64), else None."""
    if not (obj is np.ndarray or typing.get_origin(obj) is np.ndarray):
        return None
    args = typing.get_args(obj)
    scalar = typing.get_args(args[1])[0] if len(args) == 2 and typing.get_args(args[1]) else None
    if isinstance(scalar, type) and issubclass(scalar, np.generic) and not scalar.__subclasses__():
        return np.dtype(scalar).name  # a concrete scalar type (np.floating names a family: any dtype)
    return None


class Resolver:
    """Answers the emitter's questions about the world outside the function: globals, annotations, callees."""

    # While any scripted function is being decorated (a class-wide count: decorating ``c`` compiles its callee
    # ``a``, whose own callee ``b`` may be defined further down the module), a name may not be bound yet: the
    # generic compile is then skipped, and the name is looked up again when the function is first called.
    decorating = 0

    def __init__(self, compile_callee):
        self.compile_callee = compile_callee
        # every global name and dotted path (``np.exp``) the frontend read, with what it named: what the graphs
        # of this function depend on besides its source (the on-disk cache's source key: ``source_key.py``)
        self.seen: dict[str, object] = {}

    def lookup_global(self, fn: FunctionSource, name: str):
        obj = self.seen[name] = self.current_value(fn, name)
        return obj

    def seen_attribute(self, path: str, obj) -> None:
        self.seen[path] = obj

    @staticmethod
    def current_value(fn: FunctionSource, name: str):
        """What ``name`` means in the function's closure, module or builtins now (``_MISSING``: nothing)."""
        func = fn.func
        code = func.__code__
        if name in code.co_freevars and func.__closure__:
            cell = func.__closure__[code.co_freevars.index(name)]
            try:
                return cell.cell_contents
            except ValueError:
                return _MISSING
        if name in func.__globals__:
            return func.__globals__[name]
        return getattr(builtins, name, _MISSING)

    def resolve_global(self, fn: FunctionSource, node: ast.Name):
        obj = self.lookup_global(fn, node.id)
        if obj is _MISSING:
            if Resolver.decorating:
                raise NeedsSpecialization(node.id)
            raise fn.error(f"name '{node.id}' is not defined", node)
        return obj

    def annotation(self, fn: FunctionSource, node: ast.AST) -> Type:
        for name in ast.walk(node):
            if isinstance(name, ast.Name):
                self.lookup_global(fn, name.id)
        obj = _evaluated_annotation(fn, node)
        if obj is _MISSING:  # a string annotation (``from __future__ import annotations``): the module's names
            try:
                obj = eval(
                    compile(ast.Expression(node), fn.filename, "eval"),  # noqa: S307 - the user's own
                    dict(fn.func.__globals__),
                    {},
                )
            except Exception as e:  # noqa: BLE001 - any failure to evaluate is the user's annotation error
                raise fn.error(f"cannot evaluate annotation '{ast.unparse(node)}': {e}", node) from None
        t = annotation_type(obj)
        if t is None and obj in (tuple, list):
            what = "tuple[float, float]" if obj is tuple else "list[float] (or list[int], list[bool], list[np.ndarray])"
            raise fn.error(
                f"a bare '{obj.__name__}' annotation does not say what it holds",
                node,
                f"write {what}, or leave it unannotated: it then takes what is passed (or returned)",
            )
        if t is None:
            raise fn.error(
                f"unsupported annotation '{ast.unparse(node)}'",
                node,
                "annotate with int, float, bool, np.ndarray, tuple[...] of those, a typing.NamedTuple "
                "class, or list[int], list[float], list[bool], list[np.ndarray] (NumPy scalar types such "
                "as np.float64 and npt.NDArray[np.float64] are accepted too)",
            )
        return t

    def array_dtype(self, fn: FunctionSource, node: ast.AST) -> str | None:
        """The dtype an array annotation names, checked at each call (None: any dtype)."""
        try:
            obj = eval(
                compile(ast.Expression(node), fn.filename, "eval"),  # noqa: S307 - the user's own annotation
                dict(fn.func.__globals__),
                {},
            )
        except Exception:  # noqa: BLE001 - ``annotation`` has reported it
            return None
        return annotated_dtype(obj)

    @staticmethod
    def is_script_function(obj) -> bool:
        """A scripted function, or a transform of one (``scriptc.grad(f)``): callable from scripted code."""
        return getattr(type(obj), "scriptc_callable", False)

    def callee_graph(self, callee, arg_types, fn: FunctionSource, node) -> tuple[list[Type], Graph, Type | None]:
        """(parameter types, graph, None) for a call; for a recursive call, whose graph is still being built,
        (parameter types, that graph, the result type assumed for it)."""
        return self.compile_callee(callee, arg_types, fn, node)

    def unsupported_hint(self, obj) -> str | None:
        """What to write instead of calling ``obj``."""
        if (getattr(obj, "__module__", None) or "").startswith("numpy.random"):
            return (
                "draw with scriptc.random and an explicit key (scriptc.random.normal(key, shape)), or make the "
                "numbers outside with np.random and pass the array in"
            )
        if obj is np.power:
            return "write x ** y (ndarray's **: np.square for 2, np.sqrt for 0.5), or np.float_power(x, y)"
        name = getattr(obj, "__name__", None)
        if name and getattr(builtins, name, None) is obj:
            return unsupported_builtin_hint(name)
        if callable(obj) and hasattr(obj, "__code__"):
            return f"decorate '{obj.__name__}' with @scriptc.script to call it from compiled code"
        return None

    def supported_callable(self, obj) -> bool:
        return (
            obj in SPECIAL_CALLS
            or op_for_callable(obj) is not None
            or self.is_script_function(obj)
            or getattr(obj, "__scriptc_library__", None) is not None
            or is_named_tuple_class(obj)
            or getattr(obj, "scriptc_transform", False)
        )


def validate(fn: FunctionSource, resolver: Resolver) -> None:
    """Reject constructs outside the subset anywhere in the function, before any typing; type errors that
    depend on array dtypes surface when the function is specialized."""
    tree = fn.tree
    args = tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise fn.error("*args, **kwargs, keyword-only and positional-only parameters are not supported", tree)
    local_names = {a.arg for a in args.args} | {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    raised = {id(n.exc) for n in ast.walk(tree) if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call)}
    for node in ast.walk(tree):
        if node is tree or id(node) in raised:  # raise E(...): the emitter checks E
            continue
        if type(node) in UNSUPPORTED:
            reason, hint = UNSUPPORTED[type(node)]
            raise fn.error(reason, node, hint)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in local_names:
            obj = resolver.lookup_global(fn, node.func.id)
            if isinstance(obj, type) and issubclass(obj, BaseException) and resolver.supported_callable(obj) is False:
                raise fn.error(
                    "an exception is made only where it is raised", node.func, f"write: raise {node.func.id}(...)"
                )
            if obj is not _MISSING and not resolver.supported_callable(obj):
                raise fn.error(
                    f"'{node.func.id}' is not supported in scripted functions",
                    node.func,
                    resolver.unsupported_hint(obj),
                )
        if isinstance(node, ast.Compare):
            for op in node.ops:
                if isinstance(op, (ast.Is, ast.IsNot)):
                    raise fn.error("'is' comparisons are not supported", node)


def _evaluated_annotation(fn: FunctionSource, node: ast.AST):
    """The object Python evaluated for this annotation when the function was defined (so a nested function's
    annotation may name the enclosing function's locals), or _MISSING when it was kept as a string."""
    tree = fn.tree
    params = tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs
    key = "return" if node is tree.returns else next((a.arg for a in params if a.annotation is node), None)
    value = getattr(fn.func, "__annotations__", {}).get(key, _MISSING)
    return _MISSING if isinstance(value, str) else value
