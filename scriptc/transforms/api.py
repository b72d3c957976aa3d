"""``scriptc.grad`` and ``scriptc.value_and_grad``: the reverse-mode transform (``autodiff.py``) wrapped as a
callable compiled per argument signature, like a scripted function.

A GradFunction binds arguments with the wrapped function's rules, builds the gradient graph from the
function's frontend graph for that signature (inlined first, so calls between scripted functions are
differentiated too), runs the normal pass pipeline and compiles native code, once per signature. It offers
``graph_for_types(types, optimize=False)`` as scripted functions do, so ``grad(grad(f))`` differentiates the
gradient graph.
"""

from __future__ import annotations

import numpy as np

from ..compiled import CompiledFunction
from ..errors import CompileError
from ..ir.clone import clone_graph
from ..ir.core import Graph
from ..ir.types import FLOAT, decayed
from ..ir.verifier import verify
from ..passes import PassManager
from .autodiff import differentiable, gradient_graph
from .memory import MemoryPlan

_PREPARE = ["inline", "canonicalize", "constant-propagation", "cse", "dce"]


class GradFunction(CompiledFunction):
    """``grad(f)``: its graph per signature is the reverse-mode transform of ``f``'s."""

    scriptc_callable = True  # callable from scripted code, like a scripted function

    def __init__(self, fn, argnums=0, with_value: bool = False):
        if not getattr(type(fn), "scriptc_callable", False):
            raise TypeError(
                f"scriptc.{'value_and_grad' if with_value else 'grad'} needs a scripted function "
                f"(@scriptc.script), not {type(fn).__name__}"
            )
        if not (
            isinstance(argnums, int)
            or isinstance(argnums, tuple)
            and argnums
            and all(isinstance(k, int) for k in argnums)
        ):
            raise TypeError(f"argnums must be an int or a tuple of ints, not {argnums!r}")
        self.fn = fn
        self.single = isinstance(argnums, int)
        self.argnums = (argnums,) if self.single else tuple(argnums)
        self.with_value = with_value
        self.__name__ = f"{'value_and_grad' if with_value else 'grad'}({fn.__name__})"
        self._init_compiled(fn.__name__, fastmath=fn.fastmath, nogil=fn.nogil, tiered=fn.tiered, cache=fn.cache)
        # what calls from scripted code bind arguments with: the function's own parameters
        self.param_names, self.param_types, self.param_dtypes = fn.param_names, fn.param_types, fn.param_dtypes
        self.defaults = fn.defaults
        self._graphs: dict[tuple, Graph] = {}
        self._written: dict[tuple, list[int]] = {}  # parameters the function writes, per signature

    def __repr__(self):
        return f"<scriptc.{self.__name__}>"

    def __reduce__(self):
        # as what it was made of (the function pickles by reference): compiled code stays in its process
        return GradFunction, (self.fn, self.argnums[0] if self.single else self.argnums, self.with_value)

    def _bind(self, args, kwargs):
        return self.fn._bind(args, kwargs)

    def specialization(self, types: tuple) -> tuple:
        return self.fn.specialization(types)

    def _check(self, types: tuple, graph: Graph) -> None:
        where = self.fn.source.loc(self.fn.source.tree) if hasattr(self.fn, "source") else None
        for k in self.argnums:
            if not -len(types) <= k < len(types):
                raise CompileError(f"grad: argnums {k} is out of range for {len(types)} parameters", where)
            p = graph.inputs[k]
            if not differentiable(p):
                raise CompileError(
                    f"grad: parameter '{self.param_names[k]}' (argnums {k}) is {p.type}, not a float or a float array",
                    where,
                    "only float scalars and float arrays have gradients",
                )
        if decayed(graph.outputs[0].type) != FLOAT:  # (a float32 result too: its gradients are float32)
            raise CompileError(
                f"grad: '{self.fn.__name__}' returns {graph.outputs[0].type}, not a float",
                where,
                "grad differentiates functions that return one float",
            )

    def _source_graph(self, types: tuple) -> Graph:
        """The gradient graph of a signature, from the function's graph inlined and simplified."""
        g = self._graphs.get(types)
        if g is None:
            src = clone_graph(self.fn.graph_for_types(types, optimize=False))
            PassManager(passes=list(_PREPARE)).run(src)
            self._check(types, src)
            argnums = tuple(k % len(types) for k in self.argnums)
            g = self._graphs[types] = verify(gradient_graph(src, argnums, self.with_value, self.single))
            self._written[types] = MemoryPlan(src).written_params(src)
        return g

    def _check_call(self, types: tuple, values: list) -> None:
        if self._written.get(types):
            _check_not_shared(self.param_names, values, self._written[types])

    def _entry_allowed(self, types: tuple) -> bool:
        # a function that writes an argument has its arguments checked for shared memory in Python first
        return not self._written.get(types)

    @property
    def source(self):
        return self.fn.source


def _check_not_shared(names, values, written) -> None:
    """The backward keeps one adjoint per array: two arguments that are one memory, one of them written,
    would need one adjoint between them."""
    arrays = [(k, v) for k, v in enumerate(values) if isinstance(v, np.ndarray)]
    for k in written:
        for j, other in arrays:
            if j != k and np.shares_memory(values[k], other):
                raise ValueError(
                    f"grad: arguments '{names[k]}' and '{names[j]}' share memory and the function "
                    f"writes '{names[k]}' in place; pass a copy of one of them"
                )


def _transform(fn, argnums, with_value: bool) -> GradFunction:
    """One GradFunction per (function, argnums, kind), so that each is compiled once however often it is made
    (``scriptc.grad(f)`` written inside a scripted function, or in a Python loop)."""
    if isinstance(argnums, list):
        argnums = tuple(argnums)
    if not (
        isinstance(argnums, int) or isinstance(argnums, tuple) and argnums and all(isinstance(k, int) for k in argnums)
    ):
        raise TypeError(f"argnums must be an int or a tuple of ints, not {argnums!r}")
    made = fn.__dict__.setdefault("_scriptc_grads", {})
    key = (argnums, with_value)
    g = made.get(key)
    if g is None:
        g = made[key] = GradFunction(fn, argnums, with_value)
    return g


def grad(fn, argnums=0) -> GradFunction:
    """The gradient of ``fn`` (a scripted function returning a float) with respect to argument ``argnums``
    (an int, or a tuple of ints: then a tuple of gradients), as a compiled callable, which scripted
    functions can call too."""
    if not getattr(type(fn), "scriptc_callable", False):
        raise TypeError(f"scriptc.grad needs a scripted function (@scriptc.script), not {type(fn).__name__}")
    return _transform(fn, argnums, False)


def value_and_grad(fn, argnums=0) -> GradFunction:
    """``(fn(*args), grad(fn, argnums)(*args))`` computed together."""
    if not getattr(type(fn), "scriptc_callable", False):
        raise TypeError(f"scriptc.value_and_grad needs a scripted function (@scriptc.script), not {type(fn).__name__}")
    return _transform(fn, argnums, True)


grad.scriptc_transform = value_and_grad.scriptc_transform = True  # applied at compile time in scripted code
