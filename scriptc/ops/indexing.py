"""Indexing beyond ints and slices: unit dimensions (``np.newaxis``/``None`` in an index, ``keepdims=True``) and
boolean masks.

- ``aten::unsqueeze(x, dim=d)`` is ``x[:, ..., None]`` with ``d`` slices: a view with a dimension of length 1 (stride 0)
  inserted before dimension ``d``; writes through it reach ``x``.
- ``aten::masked_select(x, m)`` is ``x[m]`` for a bool array ``m`` whose shape matches the first ``m.ndim``
  dimensions of ``x``: a copy of shape ``(count of True,) + x.shape[m.ndim:]`` (1-D for a full-shape mask),
  NumPy's IndexError when a dimension differs.
- ``aten::masked_put_(x, m, v)`` is ``x[m] = v``: a scalar fills the selected elements; an array is broadcast to
  the selection's shape as NumPy does (for a full-shape mask: 0-d, or 1-D of length 1 or of the count of True,
  with NumPy's ValueError otherwise). A value sharing memory with ``x`` is read as copied first, as in every other
  assignment (NumPy's boolean assignment does not check for overlap: its result depends on its copy order).
"""

from __future__ import annotations

import numpy as np

from ..ir.registry import Batch, Effect, OpTypeError, no_outputs, register, shape_of
from ..ir.types import TensorType


def _array(t, what) -> TensorType:
    if not isinstance(t, TensorType):
        raise OpTypeError(f"{what} needs an array, got {t}")
    return t


# -- unit dimensions ------------------------------------------------------------------------------------------
def _unsqueeze(x, *, dim):
    return x[(slice(None),) * dim + (None,)]  # np.expand_dims would reshape: other strides


def _unsqueeze_rule(t, *, dim):
    _array(t, "np.newaxis")
    if t.rank is not None and not 0 <= dim <= t.rank:
        raise OpTypeError(f"np.newaxis: dimension {dim} is out of range for an array of dimension {t.rank}")
    return TensorType(t.dtype, None if t.rank is None else t.rank + 1)


def _unsqueeze_shape(types, consts, *, dim):
    shape = shape_of(types[0])
    return [None if shape is None else shape[:dim] + (1,) + shape[dim:]]


register(
    "aten::unsqueeze(Tensor self, *, int dim) -> Tensor",
    impl=_unsqueeze,
    infer=_unsqueeze_rule,
    shape=_unsqueeze_shape,
    view=True,
    vjp=lambda e, g, out, x, dim: (e.reshape_like(g, x),),
    batch=Batch.custom(lambda b, node, ins: [b.op(node.kind, ins[0], dim=node.attrs["dim"] + 1)], view=True),
)


# -- boolean masks ----------------------------------------------------------------------------------------------
def _mask_types(t, m, what):
    _array(t, what)
    _array(m, what)
    if m.dtype is not None and m.dtype != "bool":
        raise OpTypeError(f"{what}: the mask must be a bool array, got {m}")
    if t.rank is not None and m.rank is not None and m.rank > t.rank:
        raise OpTypeError(f"too many indices for array: array is {t.rank}-dimensional, but {m.rank} were indexed")


def _masked_select(x, m):
    return x[m]


def _masked_select_rule(t, m):
    _mask_types(t, m, "boolean indexing")
    rank = None if t.rank is None or m.rank is None else 1 + t.rank - m.rank
    return TensorType(t.dtype, rank)


def _masked_select_shape(types, consts):
    shape, mask = shape_of(types[0]), shape_of(types[1])
    if shape is None or mask is None:
        return [None]
    return [(None,) + shape[len(mask) :]]


def _masked_select_vjp(e, g, out, x, m):
    """The selected elements' adjoints, added back where they were selected."""

    def write(e, acc):
        e.node("aten::masked_put_", [acc, m, e.add(e.op("aten::masked_select", acc, m), g)], [])

    return e.scatter(write), None


# Batched: per example (selections differ in length between examples; writes go through each example's view).
register(
    "aten::masked_select(Tensor self, Tensor mask) -> Tensor",
    impl=_masked_select,
    infer=_masked_select_rule,
    effect=Effect.RAISES,
    shape=_masked_select_shape,
    batch=Batch.LANES,
    vjp=_masked_select_vjp,
)


def _masked_put_(x, m, v):
    if isinstance(v, np.ndarray) and np.shares_memory(x, v):
        v = v.copy()  # read as copied first, as every other assignment (NumPy's result depends on its copy order)
    x[m] = v


def _masked_put_rule(t, m, v):
    _mask_types(t, m, "boolean index assignment")
    if isinstance(v, TensorType):
        if v.rank is not None and t.rank is not None and m.rank is not None:
            if m.rank == t.rank and v.rank > 1:
                raise OpTypeError(
                    "NumPy boolean array indexing assignment requires a 0 or 1-dimensional input, "
                    f"input has {v.rank} dimensions"
                )
            if v.rank > 1 + t.rank - m.rank:
                raise OpTypeError(f"could not broadcast a {v.rank}-d array into a {1 + t.rank - m.rank}-d selection")
    elif not v.is_scalar:
        raise OpTypeError(f"cannot assign {v} to masked elements")
    return []


register(
    "aten::masked_put_(Tensor self, Tensor mask, Number|Tensor values) -> ()",
    impl=_masked_put_,
    infer=_masked_put_rule,
    effect=Effect.WRITES,
    shape=no_outputs,
    batch=Batch.LANES,
    numpy_scalars="last",
)
