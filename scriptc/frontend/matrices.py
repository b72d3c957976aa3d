"""NumPy's matrix builders and rearrangers, written as NumPy writes them, from operators that exist:
``np.eye``/``np.identity``/``np.tri`` (a comparison of two ``arange``s, as ``np.tri`` is
``greater_equal.outer(arange(N), arange(-k, M - k))``), ``np.triu``/``np.tril`` (``np.where`` of that mask with a
zero of the array's dtype, as ``numpy/lib/_twodim_base_impl.py`` does), ``np.outer`` (``ravel(a)[:, None] *
ravel(b)[None, :]``), ``np.flip``/``np.fliplr``/``np.flipud`` (views with step -1), ``np.vstack``/``np.hstack``/
``np.column_stack`` (``np.concatenate`` of the parts made 2-d or 1-d as ``numpy/_core/shape_base.py`` does).

Composed this way they need no lowering, derivative or batching rule of their own: those of ``arange``, ``ge``,
``where``, ``mul``, ``slice`` and ``unsqueeze`` apply, and the dtypes are NumPy's because the operators' are.
Each function takes the emitter and the call's AST node; ``CALLS`` maps the NumPy callables onto them.
"""

from __future__ import annotations

import ast

import numpy as np

from ..ir.registry import NeedsSpecialization
from ..ir.types import INT, ListType, TensorType, TupleType


def arguments(em, node, params: list[str], required: int = 1) -> dict:
    """``{parameter: ast node}`` of a call bound as Python binds it to ``params`` (positional or keyword)."""
    name = ast.unparse(node.func)
    if len(node.args) > len(params):
        raise em.fn.error(f"{name}() takes at most {len(params)} arguments ({len(node.args)} given)", node)
    bound = dict(zip(params, node.args))
    for k in node.keywords:
        if k.arg not in params:
            raise em.fn.error(f"{name}() got an unexpected keyword argument '{k.arg}'", k.value)
        if k.arg in bound:
            raise em.fn.error(f"{name}() got multiple values for argument '{k.arg}'", k.value)
        bound[k.arg] = k.value
    missing = [p for p in params[:required] if p not in bound]
    if missing:
        raise em.fn.error(f"{name}() missing required argument '{missing[0]}'", node)
    return bound


def _array(em, ast_node, what: str, node) -> tuple:
    """(value, type) of an array argument whose rank is known (the generic graph waits for the signature)."""
    x = em.expr(ast_node)
    if not isinstance(x.type, TensorType):
        raise em.fn.error(f"{what}() needs an array here", ast_node, "convert the value with np.asarray first")
    if x.type.rank is None or x.type.dtype is None:
        raise NeedsSpecialization(what)
    return x, x.type


def _int(em, bound: dict, name: str, default=None):
    """An int argument (a value computed at run time is fine), or ``default`` when it is missing or None."""
    given = bound.get(name)
    if given is None or isinstance(given, ast.Constant) and given.value is None:
        return default
    v = em.decay(em.expr(given), given)
    if v.type != INT:
        raise em.fn.error(f"'{name}' must be an int here, not {v.type}", given)
    return v


def _dimension(em, bound: dict, name: str, node, default=None):
    """An int argument that is the length of an axis: NumPy's ValueError when negative."""
    v = _int(em, bound, name, default)
    if v is not default:
        em.raise_if_negative(v, node)
    return v


def _dtype(em, bound: dict, default: str = "float64") -> str:
    return em.dtype_of(bound["dtype"]) if bound.get("dtype") is not None else default


def _row_and_column(em, rows, columns, k, node):
    """``arange(rows)[:, None]`` and ``arange(-k, columns - k)[None, :]``: int64 operands of the outer
    comparison ``np.tri`` makes."""
    zero, one = em.const(0), em.const(1)
    i = em.op("aten::arange", [zero, rows, one], at=node)
    lo = em.op("aten::neg", [k], at=node)
    j = em.op("aten::arange", [lo, em.op("aten::sub", [columns, k], at=node), one], at=node)
    return em.op("aten::unsqueeze", [i], {"dim": 1}, at=node), em.op("aten::unsqueeze", [j], {"dim": 0}, at=node)


def _tri_mask(em, rows, columns, k, node):
    """NumPy's ``tri(rows, columns, k, dtype=bool)``: True where ``j <= i + k``."""
    i, j = _row_and_column(em, rows, columns, k, node)
    return em.op("aten::ge", [i, j], at=node)


# -- builders ---------------------------------------------------------------------------------------------------
def call_tri(em, node):
    """NumPy's ``tri`` checks no length: a negative one gives an empty axis (``arange`` of it is empty)."""
    bound = arguments(em, node, ["N", "M", "k", "dtype"])
    rows = _int(em, bound, "N")
    columns = _int(em, bound, "M", rows)
    mask = _tri_mask(em, rows, columns, _int(em, bound, "k", em.const(0)), node)
    return em.op("aten::to", [mask], {"dtype": _dtype(em, bound)}, at=node)


def call_eye(em, node):
    bound = arguments(em, node, ["N", "M", "k", "dtype", "order"])
    if bound.get("order") is not None and em.const_eval(bound["order"]) != "C":
        raise em.fn.error("np.eye() builds C-ordered arrays here (order='C')", bound["order"])
    rows = _dimension(em, bound, "N", node)
    columns = _dimension(em, bound, "M", node, rows)
    i, j = _row_and_column(em, rows, columns, _int(em, bound, "k", em.const(0)), node)
    on_diagonal = em.op("aten::eq", [i, j], at=node)  # j - k == i
    return em.op("aten::to", [on_diagonal], {"dtype": _dtype(em, bound)}, at=node)


def call_identity(em, node):
    bound = arguments(em, node, ["n", "dtype"])
    n = _dimension(em, bound, "n", node)
    i, j = _row_and_column(em, n, n, em.const(0), node)
    return em.op("aten::to", [em.op("aten::eq", [i, j], at=node)], {"dtype": _dtype(em, bound)}, at=node)


def _triangle(em, node, upper: bool):
    """``np.triu``/``np.tril``: ``where(tri(*m.shape[-2:], k), ...)`` with a zero of m's dtype."""
    bound = arguments(em, node, ["m", "k"])
    m, t = _array(em, bound["m"], ast.unparse(node.func), node)
    if t.rank == 0:
        raise em.fn.error(f"{ast.unparse(node.func)}() needs an array of at least one dimension", bound["m"])
    k = _int(em, bound, "k", em.const(0))
    shape = em.op("aten::size", [m], at=node)
    columns = em.op("prim::TupleIndex", [shape], {"index": t.rank - 1}, at=node)
    # a 1-d m is each row of a square matrix (NumPy's mask is tri(n, n), broadcast against m)
    rows = em.op("prim::TupleIndex", [shape], {"index": t.rank - 2}, at=node) if t.rank >= 2 else columns
    zero = em.op("aten::zeros", [em.const(1)], {"dtype": t.dtype}, at=node)
    if upper:  # triu: zero where tri(k - 1)
        mask = _tri_mask(em, rows, columns, em.op("aten::sub", [k, em.const(1)], at=node), node)
        return em.op("aten::where", [mask, zero, m], at=node)
    return em.op("aten::where", [_tri_mask(em, rows, columns, k, node), m, zero], at=node)


def call_outer(em, node):
    bound = arguments(em, node, ["a", "b", "out"], required=2)
    if bound.get("out") is not None:
        raise em.fn.error("np.outer() with out= is not supported", bound["out"], "assign the result: c[...] = ...")
    flat = []
    for name, dim in (("a", 1), ("b", 0)):
        v, t = _array(em, bound[name], "np.outer", node)
        if t.rank != 1:
            v = em.op("aten::reshape", [v, em.const(-1)], at=node)
        flat.append(em.op("aten::unsqueeze", [v], {"dim": dim}, at=node))
    return em.op("aten::mul", flat, at=node)


# -- rearrangers: views ------------------------------------------------------------------------------------------
def _flipped(em, x, axes, node):
    none = em.const(None)
    for axis in axes:
        x = em.op("aten::slice", [x, none, none, em.const(-1)], {"dim": axis}, at=node)
    return x


def call_flip(em, node):
    bound = arguments(em, node, ["m", "axis"])
    m, t = _array(em, bound["m"], "np.flip", node)
    axis = em.const_eval(bound["axis"]) if "axis" in bound else None
    axes = list(range(t.rank)) if axis is None else [axis] if isinstance(axis, int) else axis
    if not isinstance(axes, (list, tuple)) or not all(isinstance(a, int) and not isinstance(a, bool) for a in axes):
        raise em.fn.error("np.flip(): axis must be an int constant, a tuple of them, or None", bound["axis"])
    for a in axes:
        if not -t.rank <= a < t.rank:
            raise em.fn.error(f"axis {a} is out of bounds for array of dimension {t.rank}", bound["axis"])
    normalized = [a % t.rank for a in axes]
    if len(set(normalized)) != len(normalized):
        raise em.fn.error("repeated axis", bound["axis"])
    return _flipped(em, m, normalized, node)


def _flip_one(em, node, axis: int):
    bound = arguments(em, node, ["m"])
    what = ast.unparse(node.func)
    m, t = _array(em, bound["m"], what, node)
    if t.rank < axis + 1:
        raise em.fn.error(f"Input must be >= {axis + 1}-d.", bound["m"])
    return _flipped(em, m, [axis], node)


# -- stacking: np.concatenate of reshaped parts ---------------------------------------------------------------
def _parts(em, node, name: str):
    """The arrays of a stacking call's sequence (a list or tuple display, a tuple value), or a list value."""
    if len(node.args) != 1 or node.keywords:
        raise em.fn.error(f"{name}() takes one sequence of arrays here (dtype= and casting= are not supported)", node)
    arg = node.args[0]
    if isinstance(arg, (ast.List, ast.Tuple)):
        parts = [em.expr(e) for e in arg.elts]
    else:
        v = em.expr(arg)
        if isinstance(v.type, ListType):
            return v
        if not isinstance(v.type, TupleType):
            raise em.fn.error(f"{name}() needs a list or tuple of arrays", arg)
        parts = list(em.emit("prim::TupleUnpack", [v], at=arg).outputs)
    if not parts:
        raise em.fn.error("need at least one array to concatenate", arg)
    for part in parts:
        if not isinstance(part.type, TensorType):
            raise em.fn.error(f"{name}() joins arrays here, not {part.type}", arg, "wrap a number as np.array([x])")
        if part.type.rank is None or part.type.dtype is None:
            raise NeedsSpecialization(name)
    return parts


def _join(em, parts, axis: int, node):
    """np.concatenate of the parts in NumPy's result dtype (each part cast to it, as concatenate casts)."""
    dtype = np.result_type(*(p.type.dtype for p in parts)).name
    parts = [p if p.type.dtype == dtype else em.op("aten::to", [p], {"dtype": dtype}, at=node) for p in parts]
    listed = em.new_list(TensorType(dtype, parts[0].type.rank), parts, node)
    return em.op("aten::concatenate", [listed], {"axis": axis}, at=node)


def _stack(em, node, name: str, rank: int, reshape, axis_of, stack_axis: int):
    """``reshape(part)`` of every part, then their concatenation along ``axis_of(first part's rank)``. A list
    value (its length known at run time) is joined as it is when its arrays have ``rank`` dimensions or more,
    and stacked along ``stack_axis`` when they have one fewer (``np.vstack(rows)`` of 1-d rows is
    ``np.stack(rows)``; only the message for rows of different lengths differs: np.stack's)."""
    parts = _parts(em, node, name)
    if isinstance(parts, list):
        axis = axis_of(parts[0].type.rank)
        return _join(em, [reshape(p) for p in parts], axis, node)
    elem = parts.type.elem
    if isinstance(elem, TensorType) and elem.rank is not None and elem.rank == rank - 1:
        return em.op("aten::stack", [parts], {"axis": stack_axis}, at=node)
    if not isinstance(elem, TensorType) or elem.rank is None or elem.rank < rank:
        raise em.fn.error(
            f"{name}() of a list of {elem} is not supported (its arrays would be reshaped one by one)",
            node.args[0],
            f"pass a tuple, {name}((a, b)), or arrays of {rank - 1} or more dimensions",
        )
    return em.op("aten::concatenate", [parts], {"axis": axis_of(elem.rank)}, at=node)


def _reshaped(em, node, shape_of):
    def reshape(part):
        shape = shape_of(part)
        if shape is None:
            return part
        return em.op("aten::reshape", [part, *shape], at=node)

    return reshape


def _length(em, part, node):
    return em.op("aten::numel", [part], at=node)


def call_vstack(em, node):
    """``np.vstack``: ``atleast_2d`` of each part (a 1-d array is one row), joined along axis 0."""
    one = em.const(1)
    rows = _reshaped(em, node, lambda p: [one, _length(em, p, node)] if p.type.rank < 2 else None)
    return _stack(em, node, "np.vstack", 2, rows, lambda rank: 0, stack_axis=0)


def call_hstack(em, node):
    """``np.hstack``: ``atleast_1d`` of each part, joined along axis 0 for 1-d parts, else axis 1."""
    flat = _reshaped(em, node, lambda p: [em.const(1)] if p.type.rank == 0 else None)
    return _stack(em, node, "np.hstack", 1, flat, lambda rank: 0 if rank <= 1 else 1, stack_axis=0)


def call_column_stack(em, node):
    """``np.column_stack``: a part of fewer than two dimensions is one column, then axis 1."""
    columns = _reshaped(em, node, lambda p: [_length(em, p, node), em.const(1)] if p.type.rank < 2 else None)
    return _stack(em, node, "np.column_stack", 2, columns, lambda rank: 1, stack_axis=1)


CALLS = {
    np.vstack: call_vstack,
    np.hstack: call_hstack,
    np.column_stack: call_column_stack,
    np.eye: call_eye,
    np.identity: call_identity,
    np.tri: call_tri,
    np.triu: lambda em, node: _triangle(em, node, upper=True),
    np.tril: lambda em, node: _triangle(em, node, upper=False),
    np.outer: call_outer,
    np.flip: call_flip,
    np.fliplr: lambda em, node: _flip_one(em, node, 1),
    np.flipud: lambda em, node: _flip_one(em, node, 0),
}
