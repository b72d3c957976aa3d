"""``scriptc.vmap``: the batching transform (``vmap.py``) wrapped as a callable compiled per argument signature.

A VmapFunction binds the per-example arguments with the wrapped function's own rules (a scripted function, a
``grad``/``value_and_grad``, or another vmap), builds the batched graph from the wrapped function's graph for
those per-example types, runs the normal pass pipeline and compiles native code, once per signature. It offers
``graph_for_types(types, optimize=False)`` as scripted and grad functions do, so vmaps nest and ``vmap(grad(f))``
batches a gradient graph.
"""

from __future__ import annotations

import numpy as np

from ..compiled import CompiledFunction
from ..errors import user_facing
from ..function import ScriptFunction
from ..interop import as_array
from ..ir.clone import clone_graph
from ..ir.core import Graph
from ..ir.types import TensorType, element_type
from ..ir.verifier import verify
from ..ops.interpreter import interpret
from ..passes import PassManager
from .api import GradFunction
from .vmap import vmap_graph

_PREPARE = ["inline", "canonicalize", "constant-propagation", "cse", "dce"]


def _axes_spec(value, what: str):
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(_axes_spec(v, what) for v in value)
    raise TypeError(f"vmap {what} must be an int, None, or a tuple of them, not {type(value).__name__}")


class VmapFunction(CompiledFunction):
    """``vmap(f)``: its graph per signature is the batching transform of ``f``'s for the per-example types; a
    signature's caches are keyed by the batched types and the axes mapped."""

    def __init__(self, fn, in_axes=0, out_axes=0):
        if not isinstance(fn, (ScriptFunction, GradFunction, VmapFunction)):
            raise TypeError(
                f"scriptc.vmap needs a scripted function (@scriptc.script), a scriptc.grad or another "
                f"scriptc.vmap, not {type(fn).__name__}"
            )
        self.fn = fn
        self.in_axes = _axes_spec(in_axes, "in_axes")
        self.out_axes = _axes_spec(out_axes, "out_axes")
        if isinstance(self.in_axes, tuple) and any(isinstance(a, tuple) for a in self.in_axes):
            raise TypeError("vmap in_axes: one int or None per positional argument")
        self.__name__ = f"vmap({fn.__name__})"
        self._init_compiled(fn.__name__, fastmath=fn.fastmath, nogil=fn.nogil, tiered=fn.tiered, cache=fn.cache)
        self.param_names = fn.param_names
        self._examples: dict[tuple, tuple] = {}  # (types, axes) -> the per-example types
        self._axes: dict[tuple, tuple] = {}  # types -> the axes of the last call with them
        self._graphs: dict[tuple, Graph] = {}

    def __repr__(self):
        return f"<scriptc.{self.__name__}>"

    def __reduce__(self):
        # as what it was made of (the function pickles by reference): compiled code stays in its process
        return VmapFunction, (self.fn, self.in_axes, self.out_axes)

    @property
    def source(self):
        return self.fn.source

    # -- binding --------------------------------------------------------------------------------------------
    def _axes_for(self, count: int) -> tuple:
        if isinstance(self.in_axes, tuple):
            if len(self.in_axes) != count:
                raise ValueError(
                    f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                    f"positional arguments passed to the function, but got len(in_axes)="
                    f"{len(self.in_axes)}, len(args)={count}"
                )
            axes = self.in_axes
        else:
            axes = (self.in_axes,) * count
        if all(a is None for a in axes):
            raise ValueError("vmap must have at least one non-None value in in_axes")
        return axes + (None,) * (len(self.param_names) - count)  # parameters left to their defaults

    def _bind(self, args, kwargs) -> tuple[tuple, list]:
        """(types of the batched graph's parameters, the values to pass): mapped arrays as given, the rest
        bound by the wrapped function from a stand-in per-example argument."""
        if kwargs:
            raise TypeError(f"{self.__name__}() takes its arguments by position (in_axes names them by position)")
        axes = self._axes_for(len(args))
        arrays, scalars, zero_d = {}, list(args), list(args)
        for k, (a, axis) in enumerate(zip(args, axes)):
            if axis is None:
                continue
            name = self.param_names[k] if k < len(self.param_names) else str(k)
            arr = a if isinstance(a, np.ndarray) else as_array(self.__name__, name, a)
            if arr is None and not isinstance(a, (int, float, bool, np.generic)):
                raise TypeError(
                    f"{self.__name__}() argument '{name}' is mapped (in_axes {axis}) but is a "
                    f"{type(a).__name__}, not an array"
                )
            rank = arr.ndim if arr is not None else 0
            if arr is None or not -rank <= axis < rank or rank == 0:
                shape = f" (its shape is {arr.shape})" if arr is not None else ""
                raise ValueError(
                    f"vmap was requested to map its argument along axis {axis}, which implies that its "
                    f"rank should be at least {axis + 1 if axis >= 0 else -axis}, but is only {rank}"
                    f"{shape}"
                )
            arrays[k] = arr
            if rank == 1:  # an example of a 1-D array is an element: a Python scalar, or a 0-d array
                scalars[k], zero_d[k] = arr.dtype.type(0), np.empty((), arr.dtype)
            else:
                scalars[k] = zero_d[k] = np.empty((0,) * (rank - 1), arr.dtype)
        try:
            per_types, values = self.fn._bind(scalars, {})
        except TypeError:  # a parameter that takes arrays only: examples are 0-d arrays
            if all(a is b for a, b in zip(scalars, zero_d)):
                raise
            per_types, values = self.fn._bind(zero_d, {})
        types, values = list(per_types), list(values)
        for k, arr in arrays.items():
            types[k], values[k] = TensorType(arr.dtype.name, arr.ndim), arr
        types = tuple(types)
        self._examples[(types, axes)] = tuple(per_types)
        self._axes[types] = axes
        return types, values

    def _signature(self, types: tuple) -> tuple:
        """(axes, per-example types) for batched parameter types; from the call that bound them, else derived
        (an element of a 1-D array as a Python scalar)."""
        axes = self._axes.get(types) or self._axes_for(len(types))
        per = self._examples.get((types, axes))
        if per is None:
            per = tuple(
                t if a is None else element_type(t.dtype) if t.rank == 1 else TensorType(t.dtype, t.rank - 1)
                for t, a in zip(types, axes)
            )
        return axes, per

    # -- graphs -------------------------------------------------------------------------------------------------
    def _key(self, types: tuple):
        return types, self._signature(types)[0]

    def _source_graph(self, types: tuple) -> Graph:
        """The batched graph of a signature, from the wrapped function's per-example graph inlined and
        simplified."""
        axes, per = self._signature(types)
        key = (types, axes)
        g = self._graphs.get(key)
        if g is None:
            src = clone_graph(self.fn.graph_for_types(per, optimize=False))
            PassManager(passes=list(_PREPARE)).run(src)
            g = self._graphs[key] = verify(vmap_graph(src, types, axes, self.out_axes, self.param_names))
        return g

    @user_facing
    def interpret(self, *args, **kwargs):
        """Run the batched graph (before the pass pipeline) through the reference interpreter."""
        types, values = self._bind(args, kwargs)
        # both sides of a masked branch run for every example: NumPy would warn (divide by zero, invalid value)
        # for the examples whose results are not selected; native code never warns
        with np.errstate(all="ignore"):
            return interpret(self.graph_for_types(types, optimize=False), values)


def vmap(fn, in_axes=0, out_axes=0) -> VmapFunction:
    """``fn`` mapped over a batch axis of its arguments, as ``jax.vmap``: ``in_axes`` is an int, None (not
    mapped) or a tuple with one entry per positional argument; ``out_axes`` an int, None, or a tuple for a tuple
    result. The result is compiled per signature like a scripted function."""
    return VmapFunction(fn, in_axes, out_axes)


__all__ = ["VmapFunction", "vmap"]
