"""Indexing beyond ints and slices: unit dimensions (``np.newaxis``/``None`` in an index, ``keepdims=True``),
boolean masks and integer arrays.

- ``aten::unsqueeze(x, dim=d)`` is ``x[:, ..., None]`` with ``d`` slices: a view with a dimension of length 1 (stride 0)
  inserted before dimension ``d``; writes through it reach ``x``.
- ``aten::masked_select(x, m)`` is ``x[m]`` for a bool array ``m`` whose shape matches the first ``m.ndim``
  dimensions of ``x``: a copy of shape ``(count of True,) + x.shape[m.ndim:]`` (1-D for a full-shape mask),
  NumPy's IndexError when a dimension differs.
- ``aten::masked_put_(x, m, v)`` is ``x[m] = v``: a scalar fills the selected elements; an array is broadcast to
  the selection's shape as NumPy does (for a full-shape mask: 0-d, or 1-D of length 1 or of the count of True,
  with NumPy's ValueError otherwise). A value sharing memory with ``x`` is read as copied first, as in every other
  assignment (NumPy's boolean assignment does not check for overlap: its result depends on its copy order).
- ``aten::index(x, i0, ..., ik-1, dim=d, axes=[...])`` is ``x[:, ..., i0, ..., ik-1]`` with ``d`` slices before
  the integer arrays (NumPy's advanced indexing when the arrays are next to each other): the arrays broadcast
  together to ``B`` and the result is a copy of shape ``x.shape[:d] + B + x.shape[d+k:]``; negative indices
  count from the end, NumPy's IndexError out of bounds (``axes``: the axes of the array the user indexed, which
  the message names) or when the arrays do not broadcast.
- ``aten::index_put_(x, v, i0, ..., dim=d, axes=[...])`` is ``x[..., i0, ...] = v``: ``v`` broadcast to that
  shape, stored in row-major order, so that of repeated indices the last write stays (as NumPy's).
- ``aten::index_add_(x, v, i0, ..., dim=d, axes=[...])`` is ``np.add.at``: unbuffered, a repeated index adds
  every time (the derivative of ``index``). ``x[i] += v`` is ``index``, an in-place add, ``index_put_``:
  buffered, as NumPy's.

The frontend (``frontend/arrays.py``) turns the ints and slices of an index into views first and moves
non-adjacent arrays' axes to the front (``aten::permute``), as NumPy places their broadcast shape.
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


# -- diagonals ---------------------------------------------------------------------------------------------------
def _diagonal(x, *, offset, axis1, axis2):
    return np.diagonal(x, offset, axis1, axis2)  # (a read-only view, as the frontend keeps it)


def _diagonal_rule(t, *, offset, axis1, axis2):
    _array(t, "np.diagonal")
    if t.rank is not None and t.rank < 2:
        raise OpTypeError("diag requires an array of at least two dimensions")
    return TensorType(t.dtype, None if t.rank is None else t.rank - 1)


def _diagonal_shape(types, consts, *, offset, axis1, axis2):
    shape = shape_of(types[0])
    if shape is None:
        return [None]
    n, m = shape[axis1], shape[axis2]
    length = None if n is None or m is None else max(0, min(n + min(offset, 0), m - max(offset, 0)))
    return [tuple(d for k, d in enumerate(shape) if k not in (axis1, axis2)) + (length,)]


def _diagonal_vjp(e, g, out, x, *, offset, axis1, axis2):
    def write(e, acc):
        e.node("aten::add_", [e.op("aten::diagonal", acc, offset=offset, axis1=axis1, axis2=axis2), g], [])

    return (e.scatter(write),)


def _diagonal_batch(b, node, ins):
    a = node.attrs
    return [b.op("aten::diagonal", ins[0], offset=a["offset"], axis1=a["axis1"] + 1, axis2=a["axis2"] + 1)]


# ``np.diagonal(x, offset, axis1, axis2)``: a view (the two axes' lengths and strides become one axis, last)
register(
    "aten::diagonal(Tensor self, *, int offset, int axis1, int axis2) -> Tensor",
    impl=_diagonal,
    infer=_diagonal_rule,
    shape=_diagonal_shape,
    view=True,
    vjp=_diagonal_vjp,
    batch=Batch.custom(_diagonal_batch, view=True),
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


# -- integer arrays -------------------------------------------------------------------------------------------
def _where(x, indices, dim):
    return (slice(None),) * dim + tuple(indices)


def _index(x, *indices, dim, axes):
    return x[_where(x, indices, dim)]


def _index_types(t, indices, dim, what):
    _array(t, what)
    for i in indices:
        _array(i, what)
        if i.dtype == "bool":
            raise OpTypeError("a boolean mask must be the only index")
        if i.dtype is not None and i.dtype.startswith("float"):
            raise OpTypeError("arrays used as indices must be of integer (or boolean) type")
    if t.rank is not None and dim + len(indices) > t.rank:
        raise OpTypeError(
            f"too many indices for array: array is {t.rank}-dimensional, but {dim + len(indices)} were indexed"
        )
    ranks = [i.rank for i in indices]
    return None if t.rank is None or None in ranks else t.rank - len(indices) + max(ranks)


def _index_rule(t, *indices, dim, axes):
    return TensorType(t.dtype, _index_types(t, indices, dim, "integer array indexing"))


def _index_shape(types, consts, *, dim, axes):
    shape, indices = shape_of(types[0]), [shape_of(i) for i in types[1:]]
    if shape is None or None in indices:
        return [None]
    rank = max(len(s) for s in indices)
    if any(None in s for s in indices):
        b = (None,) * rank  # (a length known at run time only)
    else:
        try:
            b = np.broadcast_shapes(*indices)
        except ValueError:
            return [None]  # (raises when it runs)
    return [shape[:dim] + tuple(b) + shape[dim + len(indices) :]]


def _index_vjp(e, g, out, x, *indices, dim, axes):
    """The adjoints of the elements read, added where they were read: a repeated index gets each one."""

    def write(e, acc):
        e.node("aten::index_add_", [acc, g, *indices], [], {"dim": dim, "axes": list(axes)})

    return (e.scatter(write),) + (None,) * len(indices)


register(
    "aten::index(Tensor self, Tensor... indices, *, int dim, int[] axes) -> Tensor",
    impl=_index,
    infer=_index_rule,
    effect=Effect.RAISES,
    shape=_index_shape,
    batch=Batch.LANES,
    vjp=_index_vjp,
)


def _index_put_(x, v, *indices, dim, axes):
    if isinstance(v, np.ndarray) and np.shares_memory(x, v):
        v = v.copy()  # read as copied first, as every other assignment
    x[_where(x, indices, dim)] = v


def _index_write_rule(what):
    def rule(t, v, *indices, dim, axes):
        rank = _index_types(t, indices, dim, what)
        if isinstance(v, TensorType):
            if v.rank is not None and rank is not None and v.rank > rank:
                raise OpTypeError(f"could not broadcast a {v.rank}-d array into a {rank}-d selection")
        elif not v.is_scalar:
            raise OpTypeError(f"cannot assign {v} to indexed elements")
        return []

    return rule


register(
    "aten::index_put_(Tensor self, Number|Tensor values, Tensor... indices, *, int dim, int[] axes) -> ()",
    impl=_index_put_,
    infer=_index_write_rule("integer array index assignment"),
    effect=Effect.WRITES,
    shape=no_outputs,
    batch=Batch.LANES,
    numpy_scalars=1,
)


def _index_add_(x, v, *indices, dim, axes):
    if isinstance(v, np.ndarray) and np.shares_memory(x, v):
        v = v.copy()
    np.add.at(x, _where(x, indices, dim), v)


register(
    "aten::index_add_(Tensor self, Number|Tensor values, Tensor... indices, *, int dim, int[] axes) -> ()",
    impl=_index_add_,
    infer=_index_write_rule("np.add.at"),
    effect=Effect.WRITES,
    shape=no_outputs,
    batch=Batch.LANES,
    numpy_scalars=1,
)
