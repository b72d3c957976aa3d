"""Array operators: shape queries, creation, indexing and views, reductions, copies and casts.

Indexing follows NumPy: ``x[i, j]`` with one int per dimension reads an element (as a Python scalar);
fewer ints or any slice give a view (``aten::select`` / ``aten::slice``), so writes through it reach ``x``.
Negative indices wrap; out-of-bounds indices raise IndexError."""

from __future__ import annotations

import numpy as np

import math

from ..ir.registry import (
    ZERO_DERIVATIVE,
    Batch,
    Effect,
    NeedsSpecialization,
    OpTypeError,
    by_sample,
    const_dim,
    no_outputs,
    numel,
    register,
    same_shape,
    scalar_result,
    shape_of,
)
from ..ir.types import BOOL, INT, NARROW_SCALARS, NONE, TensorType, TupleType, Type, element_type, scalar_dtype


def _array(t: Type, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise OpTypeError(f"{what} needs an array, got {t}")
    if t.rank is None:
        raise NeedsSpecialization(what)
    return t


def _ints(types, what):
    for t in types:
        if t not in (INT, BOOL) if what == "shape" else t != INT:
            raise OpTypeError(f"{what} must be int, got {t}")


# -- shape queries ----------------------------------------------------------------------------------------
# Batching rules (``OpDef.batch``): the shape of an example is the batched shape without its first dimension.
def _size_batch(b, node, ins):
    dims = b.dims(ins[0])
    return [b.node("prim::TupleConstruct", dims, [TupleType((INT,) * len(dims))]).output]


def _dim_batch(b, node, ins):
    return [b.const(node.inputs[0].type.rank)]


def _numel_batch(b, node, ins):
    return [b.product(b.dims(ins[0]))]


def _len_batch(b, node, ins):
    return [b.dims(ins[0])[0]]


register(
    "aten::size(Tensor self) -> (int, ...)",
    impl=lambda x: tuple(x.shape),
    batch=Batch.custom(_size_batch, unbatched_result=True),
    infer=lambda t: TupleType((INT,) * _array(t, "x.shape").rank),
)
register(
    "aten::dim(Tensor self) -> int",
    impl=lambda x: x.ndim,
    infer=lambda t: INT,
    batch=Batch.custom(_dim_batch, unbatched_result=True),
)
register(
    "aten::numel(Tensor self) -> int",
    impl=lambda x: x.size,
    infer=lambda t: INT,
    batch=Batch.custom(_numel_batch, unbatched_result=True),
)


def _len(x):
    return len(x)


def _len_rule(t):
    if isinstance(t, TensorType) and t.rank == 0:
        raise OpTypeError("len() of a 0-d array")
    if not isinstance(t, TensorType):
        raise OpTypeError(f"len() of {t} is not supported")
    return INT


register(
    "aten::len(Tensor self) -> int",
    impl=_len,
    infer=_len_rule,
    effect=Effect.RAISES,
    py=(len,),
    batch=Batch.custom(_len_batch, unbatched_result=True),
)


def _transpose_batch(b, node, ins):
    """The example's axes reversed, the batch axis kept first (a view)."""
    rank = node.inputs[0].type.rank
    if rank < 2:
        return [ins[0]]  # x.T of a 1-D array is x
    return [b.op("aten::permute", ins[0], dims=[0] + list(range(rank, 0, -1)))]


register(
    "aten::numpy_T(Tensor self) -> Tensor",
    impl=lambda x: x.T,
    batch=Batch.custom(_transpose_batch, view=True),
    vjp=lambda e, g, out, x: (e.op("aten::numpy_T", g),),
    infer=lambda t: (
        TensorType(t.dtype, t.rank, t.shape[::-1] if t.shape else None)
        if isinstance(t, TensorType)
        else _array(t, "x.T")
    ),
    shape=lambda types, consts: [None if shape_of(types[0]) is None else shape_of(types[0])[::-1]],
)


def _reshape(x, *shape):
    return x.reshape(shape)


def _reshape_rule(t, *shape):
    _array(t, "reshape")
    _ints(shape, "a reshape dimension")
    return TensorType(t.dtype, len(shape))


def _reshape_shape(types, consts):
    """Known dimensions are kept; one -1 is the total divided by the others when all those are known."""
    dims = [const_dim(t, c) if c != -1 else -1 for t, c in zip(types[1:], consts[1:])]
    if dims.count(-1) == 1:
        rest, total = numel([d for d in dims if d != -1]), numel(shape_of(types[0]))
        inferred = None
        if rest and total is not None and total % rest == 0:
            inferred = total // rest
        dims = [inferred if d == -1 else d for d in dims]
    return [tuple(None if d == -1 else d for d in dims)]


def _reshape_batch(b, node, ins):
    return [b.op("aten::reshape", ins[0], b.size, *ins[1:])]


register(
    "aten::reshape(Tensor self, int... shape) -> Tensor",
    impl=_reshape,
    infer=_reshape_rule,
    effect=Effect.RAISES,
    shape=_reshape_shape,
    batch=Batch.custom(_reshape_batch, view=True),
    vjp=lambda e, g, out, x, *shape: (e.reshape_like(g, x),) + (None,) * len(shape),
)


# ``x`` with its axes permuted (``np.transpose(x, dims)``, a view): made by vmap to move batch axes.
def _permute(x, *, dims):
    return np.transpose(x, dims)


def _permute_rule(t, *, dims):
    _array(t, "permute")
    if sorted(dims) != list(range(t.rank)):
        raise OpTypeError(f"permute: {list(dims)} is not a permutation of the {t.rank} axes")
    return TensorType(t.dtype, None, tuple(t.shape[d] for d in dims))


def _permute_batch(b, node, ins):
    return [b.op("aten::permute", ins[0], dims=[0] + [d + 1 for d in node.attrs["dims"]])]


register(
    "aten::permute(Tensor self, *, int[] dims) -> Tensor",
    impl=_permute,
    infer=_permute_rule,
    shape=lambda types, consts, *, dims: [
        None if shape_of(types[0]) is None else tuple(shape_of(types[0])[d] for d in dims)
    ],
    view=True,
    batch=Batch.custom(_permute_batch, view=True),
)

# -- copies and casts -----------------------------------------------------------------------------------
# a C-ordered copy, as ndarray.copy() makes and native code makes for np.copy too (NumPy's np.copy keeps an
# F-ordered array's order: README)
register(
    "aten::clone(Tensor self) -> Tensor",
    impl=lambda x: np.array(x, order="C"),
    infer=lambda t: _array_keep(t, "copy()"),
    batch=Batch.SAME,
    methods=("copy",),
    py=(np.copy,),
    shape=same_shape,
    vjp=lambda e, g, out, x: (g,),
)


def _array_keep(t, what):
    if not isinstance(t, TensorType):
        raise OpTypeError(f"{what} needs an array, got {t}")
    return t


def _astype(x, *, dtype):
    return x.astype(dtype)


register(
    "aten::to(Tensor self, *, str dtype) -> Tensor",
    impl=_astype,
    batch=Batch.SAME,
    infer=lambda t, dtype: TensorType(dtype, _array_keep(t, "astype()").rank, t.shape),
    shape=same_shape,
    vjp=lambda e, g, out, x, dtype: (e.op("aten::to", g, dtype=x.type.dtype),),
)

# -- creation -----------------------------------------------------------------------------------------------


def _creation_shape(make_fill=False):
    """The shape is the (int) inputs: each dimension whose value is known."""

    def rule(types, consts, *, dtype):
        skip = 1 if make_fill else 0
        return [tuple(const_dim(t, c) for t, c in zip(types[skip:], consts[skip:]))]

    return rule


def _shape_rule(make_fill=False):
    def rule(*types, dtype):
        shape = types[1:] if make_fill else types
        _ints(shape, "shape")
        return TensorType(dtype, len(shape))

    return rule


def _create_batch(b, node, ins):
    """An array per example: (B,) + shape, when batched values are written into it later. Sizes that differ
    between examples give arrays of different shapes: a loop over the examples, then np.stack (which raises, as
    stacking the per-example results would, unless the shapes agree)."""
    if any(b.batched(d) for d in ins):
        return b.lanes(node, ins)
    return [b.op(node.kind, b.size, *ins, **node.attrs)]


register(
    "aten::zeros(int... shape, *, str dtype) -> Tensor",
    impl=lambda *s, dtype: np.zeros(s, dtype),
    infer=_shape_rule(),
    effect=Effect.RAISES,
    shape=_creation_shape(),
    batch=Batch.custom(_create_batch, fresh=True),
)
register(
    "aten::ones(int... shape, *, str dtype) -> Tensor",
    impl=lambda *s, dtype: np.ones(s, dtype),
    infer=_shape_rule(),
    effect=Effect.RAISES,
    shape=_creation_shape(),
    batch=Batch.custom(_create_batch, fresh=True),
)
register(
    "aten::empty(int... shape, *, str dtype) -> Tensor",
    impl=lambda *s, dtype: np.empty(s, dtype),
    infer=_shape_rule(),
    effect=Effect.RAISES,
    shape=_creation_shape(),
    batch=Batch.custom(_create_batch, fresh=True),
)


def _filled(b, like_or_dims, fill, rank, dtype):
    """A batched array of per-example rank ``rank`` filled with a batched value (converted as NumPy's fill)."""
    if isinstance(like_or_dims, list):
        out = b.op("aten::empty", b.size, *like_or_dims, dtype=dtype)
    else:
        out = b.op("aten::empty_like", like_or_dims, dtype=dtype)
    b.node("aten::copy_", [out, b.align(fill, rank)], [])
    return out


def _full_batch(b, node, ins):
    fill, *dims = ins
    if any(b.batched(d) for d in dims):
        return b.lanes(node, ins)
    if not b.batched(fill):
        return [b.op(node.kind, fill, b.size, *dims, **node.attrs)]
    return [_filled(b, dims, fill, len(dims), node.attrs["dtype"])]


register(
    "aten::full(Number fill_value, int... shape, *, str dtype) -> Tensor",
    impl=lambda v, *s, dtype: np.full(s, v, dtype),
    infer=_shape_rule(True),
    effect=Effect.RAISES,
    shape=_creation_shape(True),
    batch=Batch.custom(_full_batch, fresh=True),
    vjp=lambda e, g, out, v, *shape, dtype: (e.op("aten::sum", g),) + (None,) * len(shape),
)


def _like(make):
    def impl(x, *fill, dtype):
        return make(x, *fill, dtype=dtype)

    def rule(t, *fill, dtype):
        return TensorType(dtype, _array(t, "the *_like argument").rank)

    return impl, rule


for _name, _make in [("zeros_like", np.zeros_like), ("ones_like", np.ones_like), ("empty_like", np.empty_like)]:
    _i, _r = _like(_make)
    register(
        f"aten::{_name}(Tensor self, *, str dtype) -> Tensor",
        impl=_i,
        infer=_r,
        shape=same_shape,
        batch=Batch.SAME,
        vjp=ZERO_DERIVATIVE,
    )
_i, _r = _like(np.full_like)


def _full_like_batch(b, node, ins):
    x, fill = ins
    if not b.batched(fill):
        return [b.op(node.kind, x, fill, **node.attrs)]
    like = x if b.batched(x) else b.dims(x)
    return [_filled(b, like, fill, node.inputs[0].type.rank, node.attrs["dtype"])]


register(
    "aten::full_like(Tensor self, Number fill_value, *, str dtype) -> Tensor",
    impl=_i,
    infer=_r,
    shape=same_shape,
    batch=Batch.custom(_full_like_batch),
    vjp=lambda e, g, out, x, v, dtype: (None, e.op("aten::sum", g)),
)


def _arange(start, stop, step):
    return np.arange(start, stop, step)


def arange_length(start, stop, step) -> int | None:
    """NumPy's arange length (_calc_length): ceil((stop - start) / step) in Python's arithmetic, with its
    underflow rule; None where NumPy raises (zero step, NaN, overflow)."""
    try:
        q = (stop - start) / step
        if q == 0 and stop - start != 0:
            return 0 if math.copysign(1.0, q) < 0 else 1
        c = math.ceil(q)
    except (ZeroDivisionError, ValueError, OverflowError):
        return None
    if not -(2**63) <= c < 2**63:
        return None
    return max(c, 0)


def _arange_shape(types, consts):
    """The length, when start, stop and step are all known (NumPy's formula, not ``range``'s)."""
    if any(c is None for c in consts):
        return [(None,)]
    return [(arange_length(*consts),)]


def _arange_vjp(e, g, out, start, stop, step):
    """start + i * step for i below the length (which moves in steps: no derivative for stop)."""
    i = e.op("aten::arange", e.const(0), e.op("aten::len", out), e.const(1))
    return e.op("aten::sum", g), None, e.op("aten::sum", e.mul(g, i))


register(
    "aten::arange(Number start, Number stop, Number step) -> Tensor",
    impl=_arange,
    infer=by_sample(_arange),
    effect=Effect.RAISES,
    shape=_arange_shape,
    batch=Batch.LANES,
    vjp=_arange_vjp,
)


def _linspace(start, stop, num):
    return np.linspace(start, stop, num)


def _linspace_rule(a, b, n):
    if n != INT:
        raise OpTypeError("linspace's num must be an int")
    return by_sample(_linspace)(a, b, n)


def _linspace_vjp(e, g, out, start, stop, num):
    """Element i is start + (stop - start) * t_i with t_i = i / (num - 1) running from 0 to 1."""
    t = e.op("aten::linspace", e.const(0.0), e.const(1.0), num)
    return e.op("aten::sum", e.mul(g, e.sub(e.const(1.0), t))), e.op("aten::sum", e.mul(g, t)), None


register(
    "aten::linspace(Number start, Number stop, int num) -> Tensor",
    impl=_linspace,
    infer=_linspace_rule,
    effect=Effect.RAISES,
    py=(np.linspace,),
    batch=Batch.LANES,
    defaults={"num": 50},
    shape=lambda types, consts: [(const_dim(types[2], consts[2]),)],
    vjp=_linspace_vjp,
)

# -- indexing ---------------------------------------------------------------------------------------------


def _getitem(x, *index, checked=None):
    """An element: a NumPy scalar of a narrow dtype as it is, else the Python scalar (``element_type``)."""
    value = x[index]
    return value if x.dtype.name in NARROW_SCALARS else value.item()


def _getitem_rule(t, *index, checked=None):
    _array(t, "indexing")
    _ints(index, "an index")
    if len(index) != t.rank:
        raise OpTypeError(f"getitem needs {t.rank} indices, got {len(index)}")
    return element_type(t.dtype)


def _getitem_vjp(e, g, out, x, *index, checked=None):
    """One element's adjoint, added in place where it was read."""
    return (e.scatter(lambda e, acc: e.add_at(acc, list(index), g)),) + (None,) * len(index)


def _element_view(b, x, indices):
    """The (B,) view of element ``x[indices]`` of every example."""
    for i in indices:
        x = b.op("aten::select", x, i, dim=1)
    return x


def _getitem_batch(b, node, ins):
    x, *indices = ins
    if any(b.batched(i) for i in indices):
        return b.lanes(node, ins)
    view = _element_view(b, x, indices)
    want = scalar_dtype(node.output.type)
    # a scalar read is a copy: a later write into the array must not change it
    return [b.op("aten::clone", view) if view.type.dtype == want else b.op("aten::to", view, dtype=want)]


def _setitem_batch(b, node, ins):
    x, *indices, value = ins
    if any(b.batched(i) for i in indices):
        return b.lanes(node, ins)
    view = _element_view(b, x, indices)
    b.node("aten::copy_", [view, b.masked(value, view, 0)], [])
    return []


register(
    "aten::getitem(Tensor self, int... indices, *, int[] checked) -> Number",
    impl=_getitem,
    batch=Batch.custom(_getitem_batch),
    infer=_getitem_rule,
    effect=Effect.RAISES,
    shape=lambda types, consts, checked=None: [None],
    vjp=_getitem_vjp,
)


def _setitem(x, *index_and_value, checked=None):
    x[index_and_value[:-1]] = index_and_value[-1]


def _setitem_rule(t, *rest, checked=None):
    _array(t, "index assignment")
    *index, value = rest
    _ints(index, "an index")
    if len(index) != t.rank:
        raise OpTypeError(f"setitem needs {t.rank} indices, got {len(index)}")
    if not value.is_scalar:
        raise OpTypeError(f"cannot assign {value} to an array element")
    return []


register(
    "aten::setitem(Tensor self, int... indices_and_value, *, int[] checked) -> ()",
    impl=_setitem,
    batch=Batch.custom(_setitem_batch),
    numpy_scalars="last",
    infer=_setitem_rule,
    effect=Effect.WRITES,
    shape=no_outputs,
)


def _select(x, index, *, dim, checked=None, axis=None):
    n = x.shape[dim]
    if not -n <= index < n:  # NumPy's message, its axis the indexed array's (``axis``: x[0, :, j] names 2)
        raise IndexError(f"index {index} is out of bounds for axis {dim if axis is None else axis} with size {n}")
    return x[(slice(None),) * dim + (index,)]


def _select_rule(t, index, *, dim, checked=None, axis=None):
    _array(t, "indexing")
    _ints([index], "an index")
    if not 0 <= dim < t.rank:
        raise OpTypeError(f"too many indices for array: array is {t.rank}-dimensional")
    shape = t.shape[:dim] + t.shape[dim + 1 :]
    return TensorType(t.dtype, None, shape)


def _select_shape(types, consts, *, dim, checked=None, axis=None):
    """The selected dimension goes (the index only decides whether it raises)."""
    shape = shape_of(types[0])
    if shape is None or not 0 <= dim < len(shape):
        return [None]
    return [shape[:dim] + shape[dim + 1 :]]


def _shifted_view_batch(b, node, ins):
    """select/slice at the same index for every example: the same view one dimension further in."""
    return [b.op(node.kind, *ins, **dict(node.attrs, dim=node.attrs["dim"] + 1))]


# ``axis``: where it differs from ``dim``, the axis of the array the user indexed that errors name (NumPy's:
# x[i, j] of a 3-d array selects dim 0 twice, j's axis is 1)
register(
    "aten::select(Tensor self, int index, *, int dim, int[] checked, int axis) -> Tensor",
    impl=_select,
    infer=_select_rule,
    batch=Batch.custom(_shifted_view_batch, view=True),
    effect=Effect.RAISES,
    shape=_select_shape,
    vjp=lambda e, g, out, x, index, dim, checked=None, axis=None: (
        e.scatter(lambda e, acc: e.add_into(e.op("aten::select", acc, index, dim=dim), g)),
        None,
    ),
)


def _slice(x, start, stop, step, *, dim):
    return x[(slice(None),) * dim + (slice(start, stop, step),)]


def _slice_rule(t, start, stop, step, *, dim):
    _array(t, "slicing")
    for b in (start, stop, step):
        if b not in (INT, NONE):
            raise OpTypeError(f"slice bounds must be int or None, got {b}")
    if not 0 <= dim < t.rank:
        raise OpTypeError(f"too many indices for array: array is {t.rank}-dimensional")
    return TensorType(t.dtype, t.rank)


def _slice_length(n, start, stop, step) -> int | None:
    """The length of ``range(n)[start:stop:step]`` (Python's slice rules), None if it raises."""
    if step == 0:
        return None
    return len(range(*slice(start, stop, step).indices(n)))


def _slice_shape(types, consts, *, dim):
    """The sliced dimension's length when its size and all bounds are known (None bounds count as known);
    ``x[:]`` and ``x[::-1]`` keep it even when unknown."""
    shape = shape_of(types[0])
    if shape is None or not 0 <= dim < len(shape):
        return [None]
    bounds = []
    for t, c in zip(types[1:4], consts[1:4]):
        if t == NONE:
            bounds.append(None)
        elif t == INT and c is not None and not isinstance(c, tuple):
            bounds.append(int(c))
        else:
            return [shape[:dim] + (None,) + shape[dim + 1 :]]
    n = shape[dim]
    if n is None:
        start, stop, step = bounds
        keeps = start is None and stop is None and step in (None, 1, -1)
        length = None if not keeps else n
    else:
        length = _slice_length(n, *bounds)
    return [shape[:dim] + (length,) + shape[dim + 1 :]]


register(
    "aten::slice(Tensor self, int? start, int? stop, int? step, *, int dim) -> Tensor",
    impl=_slice,
    batch=Batch.custom(_shifted_view_batch, view=True),
    infer=_slice_rule,
    effect=Effect.RAISES,
    shape=_slice_shape,
    vjp=lambda e, g, out, x, start, stop, step, dim: (
        e.scatter(lambda e, acc: e.add_into(e.op("aten::slice", acc, start, stop, step, dim=dim), g)),
        None,
        None,
        None,
    ),
)


def _copy_(dst, src):
    dst[...] = src


def _copy_rule(dst, src):
    """``dst[...] = src``: ``src`` broadcast to ``dst``'s shape; as NumPy's assignment, ``src`` may have more
    dimensions when the extra leading ones have length 1 (checked at run time)."""
    _array(dst, "slice assignment")
    if isinstance(src, TensorType):
        _array(src, "slice assignment")
    elif not src.is_scalar:
        raise OpTypeError(f"cannot assign {src} to an array slice")
    return []


def masked_write(b, x, value, rank):
    """``x[...] = value`` for the active examples (``value`` aligned to ``x``'s per-example rank)."""
    if b.batched(value):
        value = b.align(value, rank)
    if b.mask is None and not b.batched(value):
        return False
    b.node("aten::copy_", [x, b.masked(value, x, rank)], [])
    return True


def _copy_batch(b, node, ins):
    dst, src = ins
    if b.batched(src) and node.inputs[1].type.rank > node.inputs[0].type.rank:
        # each example's source drops its leading length-1 axes (NumPy's assignment): one example at a time
        return b.lanes(node, ins)
    if not masked_write(b, dst, src, node.inputs[0].type.rank):
        b.node(node.kind, ins, [])
    return []


register(
    "aten::copy_(Tensor self, Number|Tensor src) -> ()",
    impl=_copy_,
    infer=_copy_rule,
    effect=Effect.WRITES,
    shape=no_outputs,
    batch=Batch.custom(_copy_batch),
)


def _fill_(x, value):
    x.fill(value)


def _fill_rule(dst, value):
    _array(dst, "fill")
    if not value.is_scalar:
        raise OpTypeError(f"fill() needs an int, float or bool value, got {value}")
    return []


register(
    "aten::fill_(Tensor self, Number value) -> ()",
    impl=_fill_,
    infer=_fill_rule,
    effect=Effect.WRITES,
    numpy_scalars="last",
    methods=("fill",),
    shape=no_outputs,
    batch=Batch.custom(_copy_batch),
)

# -- reductions: np.sum(x), x.sum(), np.sum(x, axis=1) ------------------------------------------------------


def _reduction(fn):
    def impl(x, *, axis=None):
        return fn(x, axis=axis)

    infer_sample = by_sample(impl)

    def rule(t, *, axis=None):
        if not isinstance(t, TensorType):
            raise OpTypeError(f"{fn.__name__}() needs an array, got {t}")
        return scalar_result(infer_sample(t, axis=axis))

    return impl, rule


REDUCTIONS = [
    ("sum", np.sum, ()),
    ("prod", np.prod, ()),
    ("mean", np.mean, ()),
    ("max", np.max, (np.amax,)),
    ("min", np.min, (np.amin,)),
    ("any", np.any, ()),
    ("all", np.all, ()),
    ("argmax", np.argmax, ()),
    ("argmin", np.argmin, ()),
]


def _reduction_shape(types, consts, *, axis=None):
    """Without an axis a reduction gives a scalar; with one, that dimension goes (negative axes count from
    the end)."""
    shape = shape_of(types[0])
    if axis is None or shape is None:
        return [None]
    k = axis + len(shape) if axis < 0 else axis
    if not 0 <= k < len(shape):
        return [None]
    return [shape[:k] + shape[k + 1 :]]


# A full sum's adjoint is the same for every element: it stays a scalar (the transform broadcasts it where an
# array is needed), so the backward of np.mean((x - y) ** 2) allocates nothing for it.
def _sum_vjp(e, g, out, x, axis=None):
    return (g if axis is None else e.expand_reduced(g, x, axis),)


def _mean_vjp(e, g, out, x, axis=None):
    count = e.op("aten::numel", x) if axis is None else e.dim_size(x, axis)
    return (e.div(g, count) if axis is None else e.expand_reduced(e.div(g, count), x, axis),)


def _prod_vjp(e, g, out, x, axis=None):
    """d prod / d x_i is the product of the others: prod / x_i where the line has no zero; where it has one,
    that zero's adjoint is the product of the rest and the others' is 0; with two or more, all are 0."""
    zero = e.op("aten::eq", x, e.const(0.0))
    ones = e.op("aten::where", zero, e.const(1.0), x)
    others = e.expand_reduced(e.op("aten::prod", ones, axis=axis), x, axis)  # the product, zeros as ones
    zeros = e.expand_reduced(e.op("aten::sum", zero, axis=axis), x, axis)  # how many zeros the line has
    at_zero = e.mul(others, e.op("aten::eq", zeros, e.const(1)))
    elsewhere = e.mul(e.div(others, ones), e.op("aten::eq", zeros, e.const(0)))
    return (e.mul(e.expand_reduced(g, x, axis), e.op("aten::where", zero, at_zero, elsewhere)),)


def _extremum_vjp(e, g, out, x, axis=None):
    """The elements equal to the extremum share its adjoint equally (as JAX: max of [1, 3, 3] gives [0, .5, .5]),
    so that the gradient's sum is the derivative along x + t (each got all of it)."""
    hit = e.op("aten::eq", x, e.expand_reduced(out, x, axis))
    count = e.op("aten::sum", hit, axis=axis)  # 0 only where the extremum is NaN: no element gets anything
    count = e.op("prim::max", count, e.const(1)) if axis is None else e.op("aten::maximum", count, e.const(1))
    return (e.mul(e.expand_reduced(e.div(g, count), x, axis), hit),)


_REDUCTION_VJPS = {
    "sum": _sum_vjp,
    "mean": _mean_vjp,
    "max": _extremum_vjp,
    "min": _extremum_vjp,
    "prod": _prod_vjp,
    "any": ZERO_DERIVATIVE,
    "all": ZERO_DERIVATIVE,
}

for _name, _fn, _more in REDUCTIONS:
    _i, _r = _reduction(_fn)
    register(
        f"aten::{_name}(Tensor self, *, int? axis) -> Number|Tensor",
        impl=_i,
        infer=_r,
        effect=Effect.RAISES,
        py=(_fn,) + _more,
        methods=(_name,),
        reduction=True,
        shape=_reduction_shape,
        batch=Batch.REDUCTION,
        vjp=_REDUCTION_VJPS.get(_name),
    )
