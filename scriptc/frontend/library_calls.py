"""Calls to library functions written in scripted code (``scriptc.random.uniform``...), as a mixin of
FunctionEmitter.

Such a function is a plain Python function carrying a ``LibraryCall``: its parameters, the compile-time ones
(dtypes, which choose the scripted kernel), and at most one shape parameter. A call binds the arguments as
Python does, passes the shape's number of elements to the kernel and reshapes the kernel's flat result. The
same binding (``LibraryCall.run``) serves calls from Python, so both run the same kernels.
"""

from __future__ import annotations

import ast
import inspect
import math
from typing import Callable

import numpy as np

from ..ir.records import field, record
from ..ir.types import TensorType
from .values import describe


NEGATIVE_DIMENSIONS = "negative dimensions are not allowed"  # NumPy's message
KEY = "a uint32 array of shape (2,) (scriptc.random.key(seed), or a row of split's result)"


def _key_problem(value) -> str | None:
    """Why a key argument passed from Python is not a key (None if it is)."""
    if not isinstance(value, np.ndarray):
        return f"got {type(value).__name__}"
    if value.dtype != np.uint32 or value.shape != (2,):
        return f"got an array of dtype {value.dtype} and shape {value.shape}"
    return None


@record
class LibraryCall:
    kernel: Callable  # kernel(**static dtype names) -> a scripted function
    shape: str | None = None  # the parameter giving the result's shape, if any
    static: tuple[str, ...] = ()  # dtype parameters, compile-time constants
    params: tuple[str, ...] = ()
    defaults: dict = field(default_factory=dict)
    name: str = ""  # as the user calls it: scriptc.random.uniform

    def run(self, bound: dict):
        """Call from Python with the arguments bound by name."""
        problem = _key_problem(bound["key"]) if "key" in self.params else None
        if problem is not None:
            raise TypeError(f"{self.name}(): key must be {KEY}, {problem}")
        static = {p: np.dtype(bound[p]).name for p in self.static}
        kernel = self.kernel(**static)
        values, shape = [], None
        for p in self.params:
            if p in self.static:
                continue
            if p == self.shape:
                shape = (bound[p],) if isinstance(bound[p], (int, np.integer)) else tuple(bound[p])
                if any(d < 0 for d in shape):
                    raise ValueError(NEGATIVE_DIMENSIONS)
                values.append(math.prod(shape))
            else:
                values.append(bound[p])
        try:
            out = kernel(*values)
        except TypeError as e:  # the kernel's argument checks: say which function the user called
            raise TypeError(str(e).replace(f"{kernel.__name__}()", f"{self.name}()")) from None
        return out.reshape(shape) if shape is not None else out


def library(kernel, shape=None, static=()):
    """Mark ``fn`` (whose body is ``return run(fn, locals())``) as callable from scripted code."""

    def mark(fn):
        sig = inspect.signature(fn)
        fn.__scriptc_library__ = LibraryCall(
            kernel,
            shape,
            tuple(static),
            tuple(sig.parameters),
            {k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty},
            f"{fn.__module__}.{fn.__qualname__}",
        )
        return fn

    return mark


def run(fn, bound: dict):
    return fn.__scriptc_library__.run(bound)


class LibraryCallsMixin:
    def call_library(self, spec: LibraryCall, node):
        name = ast.unparse(node.func)
        bound = self.bind_library_arguments(spec, name, node)
        evaluated = {}
        if "key" in bound:  # checked here: the kernel's own check would point into scriptc/random.py
            evaluated["key"] = self.expr(bound["key"])
            t = evaluated["key"].type
            if not (isinstance(t, TensorType) and t.dtype in (None, "uint32") and t.rank in (None, 1)):
                raise self.fn.error(f"{name}(): key must be {KEY}, got {describe(t)}", bound["key"])
        static = {p: self.dtype_of(bound[p]) if p in bound else np.dtype(spec.defaults[p]).name for p in spec.static}
        try:
            kernel = spec.kernel(**static)
        except TypeError as e:
            raise self.fn.error(str(e), node) from None
        args, dims = [], None
        for p in spec.params:
            if p in spec.static:
                continue
            if p == spec.shape:
                dims = self.shape_values(bound[p]) if p in bound else [self.const(d) for d in spec.defaults[p]]
                n = self.const(1)
                for d in dims:
                    n = self.op("aten::mul", [n, d], at=node)
                    self.raise_if_negative(d, node)
                args.append(n)
            else:
                args.append(
                    evaluated[p]
                    if p in evaluated
                    else self.expr(bound[p])
                    if p in bound
                    else self.const(spec.defaults[p])
                )
        out = self.call_script_values(kernel, args, node)
        return self.op("aten::reshape", [out] + dims, at=node) if dims is not None else out

    def raise_if_negative(self, d, node) -> None:
        """NumPy's ValueError for a negative dimension (the flat draw of size 0 was reshaped: another error)."""
        if d.node is not None and d.node.kind == "prim::Constant" and d.node.attrs.get("value", -1) >= 0:
            return

        def raise_it():
            self.emit("prim::RaiseException", [self.const(NEGATIVE_DIMENSIONS)], {"exc": "ValueError"}, at=node)

        self.emit_if(self.op("aten::lt", [d, self.const(0)], at=node), raise_it, lambda: None, node)

    def bind_library_arguments(self, spec: LibraryCall, name: str, node) -> dict:
        if len(node.args) > len(spec.params):
            raise self.fn.error(
                f"{name}() takes {len(spec.params)} positional arguments but {len(node.args)} were given", node
            )
        bound = dict(zip(spec.params, node.args))
        for k in node.keywords:
            if k.arg not in spec.params:
                raise self.fn.error(f"{name}() got an unexpected keyword argument '{k.arg}'", k)
            if k.arg in bound:
                raise self.fn.error(f"{name}() got multiple values for argument '{k.arg}'", k)
            bound[k.arg] = k.value
        for p in spec.params:
            if p not in bound and p not in spec.defaults:
                raise self.fn.error(f"{name}() missing required argument '{p}'", node)
        return bound
