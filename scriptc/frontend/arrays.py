"""Array constructs built from existing operators, as a mixin of FunctionEmitter: ``keepdims=True``, boolean
masks and integer arrays in indices, ``x.dtype`` comparisons, and the statistics NumPy itself composes from ufuncs and
reductions (``np.var``/``np.std`` as ``numpy/_core/_methods.py`` ``_var``, ``np.median`` as
``numpy/lib/_function_base_impl.py`` ``_median`` with a sort for the partition, ``np.linalg.norm`` as
``numpy/linalg/_linalg.py`` ``norm``).

Emitting NumPy's own decomposition makes the results follow the element-wise and reduction lowering exactly
(the same operators, in the same order, with the same intermediate dtypes). Everything here needs the
arrays' dtypes and ranks: the generic graph raises NeedsSpecialization.
"""

from __future__ import annotations

import ast
import copy
import math

import numpy as np

from ..ir.arrayconst import frozen
from ..ir.core import constant_value, is_constant
from ..ir.registry import NeedsSpecialization
from ..ir.types import BOOL, DTYPE_NAMES, INT, ListType, TensorType
from . import matrices
from .values import Static


def _is_array(v) -> bool:
    return not isinstance(v, (tuple, str)) and isinstance(v.type, TensorType)


def _known(v, what) -> TensorType:
    t = v.type
    if isinstance(t, TensorType) and (t.dtype is None or t.rank is None):
        raise NeedsSpecialization(what)
    return t


VIEW_OPS = {"aten::select", "aten::slice", "aten::unsqueeze", "aten::numpy_T", "aten::reshape", "aten::diagonal"}


class ArrayFrontend:
    # -- keepdims -------------------------------------------------------------------------------------------
    def reduce_with_keepdims(self, op, args, node, what):
        """A reduction called with ``keepdims=``: the reduction, then its reduced dimensions put back with
        length 1 (a view of the result for one axis, a new array for all)."""
        keep = next(k for k in node.keywords if k.arg == "keepdims")
        keepdims = self.const_eval(keep.value)
        if not isinstance(keepdims, bool):
            raise self.fn.error("keepdims must be True or False", keep.value)
        call = copy.copy(node)
        call.keywords = [k for k in node.keywords if k.arg != "keepdims"]
        result = self.bind_op(op, args, call, what)
        if not keepdims:
            return result
        return self.keep_dims(result, args[0], result.node.attrs.get("axis"), op.impl, node)

    def keep_dims(self, result, x, axis, impl, node):
        t = _known(x, "keepdims")
        if axis is not None and isinstance(result.type, TensorType):
            return self.op("aten::unsqueeze", [result], {"dim": axis % t.rank}, at=node)
        dtype = np.asarray(impl(np.ones((1,) * t.rank, t.dtype), axis=axis)).dtype.name
        if dtype not in DTYPE_NAMES:
            raise self.fn.error(f"unsupported result dtype {dtype}", node)
        ones = [self.const(1)] * t.rank
        return self.op("aten::full", [result] + ones, {"dtype": dtype}, at=node)

    # -- np.newaxis and boolean masks in indices --------------------------------------------------------------
    def is_newaxis(self, part) -> bool:
        if isinstance(part, ast.Constant):
            return part.value is None
        if isinstance(part, ast.Attribute) or isinstance(part, ast.Name) and part.id not in self.locals:
            r = self.visit(part)
            return isinstance(r, Static) and r.obj is None
        return False

    def mask_index(self, base, values, parts, node):
        """The boolean mask of ``base[m]``, or None when no index is a bool array."""
        arrays = [k for k, v in enumerate(values) if _is_array(v)]
        if not arrays:
            return None
        k = arrays[0]
        mask = values[k]
        if mask.type.dtype is None:
            raise NeedsSpecialization("boolean index")
        if mask.type.dtype != "bool":
            return None
        if len(values) != 1:
            raise self.fn.error(
                "a boolean mask must be the only index",
                parts[k],
                "index with x[m] where m has the shape of x (or of its first dimensions)",
            )
        return mask

    def array_index(self, base, values, parts, node):
        """``base[..., i, ...]`` with integer arrays: (the view the arrays index, the arrays, the view's axis of
        the first one, the axes of ``base`` they index), or None when no index is an array. NumPy's rule for
        where the arrays' broadcast shape goes: in place of the arrays when they (and the ints among them) are
        next to each other, first otherwise; so the ints and slices become views first, and the axes of
        arrays that are not adjacent move to the front."""
        arrays = [k for k, v in enumerate(values) if _is_array(v)]
        if not arrays:
            return None
        if any(isinstance(v, str) for v in values):
            k = next(k for k, v in enumerate(values) if isinstance(v, str))
            raise self.fn.error(
                "np.newaxis with integer array indices is not supported", parts[k], "add the axis on the result"
            )
        advanced = [k for k, v in enumerate(values) if _is_array(v) or not isinstance(v, tuple)]
        adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
        axes = [k for k in range(len(values)) if _is_array(values[k])]
        view = base
        if not adjacent:  # the indexed axes first, in order, then the others
            order = advanced + [k for k in range(base.type.rank) if k not in advanced]
            view = self.op("aten::permute", [base], {"dims": order}, at=node)
            values = [values[k] for k in advanced] + [values[k] for k in order[len(advanced) :] if k < len(values)]
        dim, first = 0, None
        for v in values:
            if _is_array(v):
                first = dim if first is None else first
                dim += 1
            elif v == ():
                dim += 1
            elif isinstance(v, tuple):
                view = self.op("aten::slice", [view, *v], {"dim": dim}, at=node)
                dim += 1
            else:
                view = self.op("aten::select", [view, v], {"dim": dim}, at=node)
        return view, [v for v in values if _is_array(v)], first, axes

    def index_read(self, plan, node):
        view, arrays, dim, axes = plan
        return self.op("aten::index", [view, *arrays], {"dim": dim, "axes": axes}, at=node)

    def index_store(self, plan, value, node):
        view, arrays, dim, axes = plan
        self.emit("aten::index_put_", [view, value, *arrays], {"dim": dim, "axes": axes}, at=node)

    def index_augassign(self, plan, kind, value_node, node):
        # x[i] += v as NumPy computes it: x[i] read (a copy), updated in place, written back (buffered: a
        # repeated index adds once; np.add.at adds each time)
        selected = self.index_read(plan, node)
        self.emit(f"aten::{kind}_", [selected, self.expr(value_node)], at=node)
        self.index_store(plan, selected, node)

    def call_take(self, node):
        """``np.take(a, indices, axis=None)``: ``a[..., indices]`` along ``axis``, of the flattened array without
        one."""
        bound = matrices.arguments(self, node, ["a", "indices", "axis"], 2)
        a = self.expr(bound["a"])
        t = _known(a, "np.take")
        indices = self.index_list(self.expr(bound["indices"]), bound["indices"])
        if not _is_array(indices):
            raise self.fn.error("np.take() takes an array of indices here", bound["indices"], "index with a[i]")
        _known(indices, "np.take")
        axis = self.const_eval(bound["axis"]) if bound.get("axis") is not None else None
        if axis is None:
            if t.rank != 1:
                a = self.op("aten::reshape", [a, self.op("aten::numel", [a], at=node)], at=node)
            axis = 0
        elif type(axis) is not int:
            raise self.fn.error("np.take(): axis must be an int constant", bound["axis"])
        elif not -t.rank <= axis < t.rank:
            raise self.fn.error(f"axis {axis} is out of bounds for array of dimension {t.rank}", bound["axis"])
        axis %= max(t.rank, 1)
        return self.index_read((a, [indices], axis, [axis]), node)

    def call_add_at(self, node):
        """``np.add.at(a, indices, b)``: ``b`` added at ``a[indices]``, unbuffered (a repeated index adds each
        time). ``indices``: an integer array, or a tuple of ints, slices and integer arrays."""
        bound = matrices.arguments(self, node, ["a", "indices", "b"], 3)
        a = self.expr(bound["a"])
        if not _is_array(a):
            raise self.fn.error("np.add.at() needs an array to add into", bound["a"])
        _known(a, "np.add.at")
        where = bound["indices"]
        parts = where.elts if isinstance(where, ast.Tuple) else [where]
        kind, plan = self.index_plan(a, parts, node)
        if kind != "array":
            raise self.fn.error("np.add.at() takes integer array indices here", where, "for ints and slices, use +=")
        view, arrays, dim, axes = plan
        self.emit("aten::index_add_", [view, self.expr(bound["b"]), *arrays], {"dim": dim, "axes": axes}, at=node)
        return self.const(None)

    # -- diagonals ----------------------------------------------------------------------------------------------
    def call_diagonal(self, node, base=None):
        """``np.diagonal(a, offset=0, axis1=0, axis2=1)`` and ``a.diagonal(...)``: a read-only view, as NumPy's
        (writing into it is the CompileError NumPy's ValueError would be at run time)."""
        params = ["a", "offset", "axis1", "axis2"]
        bound = matrices.arguments(self, node, params[1:] if base is not None else params, 0 if base else 1)
        a = base if base is not None else self.expr(bound["a"])
        return self.diagonal_of(a, bound, node, "np.diagonal")

    def diagonal_of(self, a, bound, node, what):
        if not _is_array(a):
            raise self.fn.error(f"{what}() needs an array here", node)
        t = _known(a, what)
        if t.rank < 2:
            raise self.fn.error("diag requires an array of at least two dimensions", node)
        attrs = {}
        for name, default in (("offset", 0), ("axis1", 0), ("axis2", 1)):
            v = self.const_eval(bound[name]) if bound.get(name) is not None else default
            if type(v) is not int:
                raise self.fn.error(f"{what}(): {name} must be an int constant", bound[name])
            attrs[name] = v
        for name in ("axis1", "axis2"):
            if not -t.rank <= attrs[name] < t.rank:
                raise self.fn.error(
                    f"{name}: axis {attrs[name]} is out of bounds for array of dimension {t.rank}", bound[name]
                )
            attrs[name] %= t.rank
        if attrs["axis1"] == attrs["axis2"]:
            raise self.fn.error("axis1 and axis2 cannot be the same", node)
        return self.op("aten::diagonal", [a], attrs, at=node)

    def call_diag(self, node):
        """``np.diag(v, k=0)``: the k-th diagonal of a 2-d array (a read-only view); for a 1-d array, the 2-d
        array with ``v`` on its k-th diagonal and zeros elsewhere."""
        bound = matrices.arguments(self, node, ["v", "k"])
        v = self.expr(bound["v"])
        if not _is_array(v):
            raise self.fn.error("np.diag() needs an array here", bound["v"], "convert the value with np.asarray first")
        t = _known(v, "np.diag")
        if t.rank == 2:
            return self.diagonal_of(v, {"offset": bound.get("k")}, node, "np.diag")
        if t.rank != 1:
            raise self.fn.error("Input must be 1- or 2-d.", bound["v"])
        k = self.const_eval(bound["k"]) if bound.get("k") is not None else 0
        if type(k) is not int:
            raise self.fn.error("np.diag(): k must be an int constant", bound["k"])
        n = self.op("aten::len", [v], at=node)
        size = self.op("aten::add", [n, self.const(abs(k))], at=node)
        out = self.op("aten::zeros", [size, size], {"dtype": t.dtype}, at=node)
        i = self.op("aten::arange", [self.const(0), n, self.const(1)], at=node)
        rows, cols = (self.op("aten::add", [i, self.const(s)], at=node) for s in (max(0, -k), max(0, k)))
        self.emit("aten::index_put_", [out, v, rows, cols], {"dim": 0, "axes": [0, 1]}, at=node)
        return out

    def call_trace(self, node, base=None):
        """``np.trace(a, offset=0, axis1=0, axis2=1)`` and ``a.trace(...)``: the sum of the diagonal along its
        last axis, as NumPy's (its dtype: np.sum's)."""
        params = ["a", "offset", "axis1", "axis2"]
        bound = matrices.arguments(self, node, params[1:] if base is not None else params, 0 if base else 1)
        a = base if base is not None else self.expr(bound["a"])
        d = self.diagonal_of(a, bound, node, "np.trace")
        return self.reduction("aten::sum", d, None if d.type.rank == 1 else d.type.rank - 1, node)

    def index_list(self, v, part):
        """A list of ints or bools in an index (``x[[0, 2]]``) is the array NumPy makes of it."""
        if isinstance(v.type, ListType) and v.type.elem in (INT, BOOL):
            dtype = "int64" if v.type.elem == INT else "bool"
            return self.op("aten::list_to_array", [v], {"dtype": dtype, "rank": 1}, at=part)
        return v

    def mask_read(self, base, mask, node):
        return self.op("aten::masked_select", [base, mask], at=node)

    def mask_store(self, base, mask, value, node):
        self.emit("aten::masked_put_", [base, mask, value], at=node)

    def mask_augassign(self, base, mask, kind, value_node, node):
        # NumPy's x[m] += v: the selected copy (made, and the mask checked, before v is evaluated, as CPython
        # reads x[m] first) is updated in place (with its casting rule: a float into an int array is an error),
        # then written back
        selected = self.op("aten::masked_select", [base, mask], at=node)
        self.emit(f"aten::{kind}_", [selected, self.expr(value_node)], at=node)
        self.emit("aten::masked_put_", [base, mask, selected], at=node)

    # -- x.dtype ----------------------------------------------------------------------------------------------
    def dtype_attribute(self, base, node):
        if base.type.dtype is None:
            raise NeedsSpecialization("x.dtype")
        return Static(np.dtype(base.type.dtype))

    def fold_dtype_compare(self, node):
        """``x.dtype == np.float64``, ``x.dtype.kind != "f"``, ``x.dtype.kind in "iu"``,
        ``x.dtype in (np.float32, np.float64)``: a bool constant for this signature, as Python computes it (None
        when ``node`` is not such a comparison)."""
        if len(node.ops) != 1:
            return None
        op, left, right = node.ops[0], node.left, node.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)) and self.mentions_dtype(left):
            a = self.static_operand(left)
            within = (
                [self.static_operand(e) for e in right.elts]
                if isinstance(right, (ast.Tuple, ast.List))
                else self.static_operand(right)
            )
            try:
                found = a in within
            except TypeError as e:  # (a dtype in a str)
                raise self.fn.error(f"{ast.unparse(node)}: TypeError: {e}", node) from None
            return self.const(found if isinstance(op, ast.In) else not found)
        if not isinstance(op, (ast.Eq, ast.NotEq)) or not any(self.mentions_dtype(n) for n in (left, right)):
            return None
        equal = bool(self.static_operand(left) == self.static_operand(right))
        return self.const(equal if isinstance(op, ast.Eq) else not equal)

    @staticmethod
    def mentions_dtype(n) -> bool:
        return isinstance(n, ast.Attribute) and (
            n.attr == "dtype" or isinstance(n.value, ast.Attribute) and n.value.attr == "dtype"
        )

    def static_operand(self, n):
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Call) and not n.keywords and len(n.args) == 1:
            f = self.visit(n.func)
            if isinstance(f, Static) and f.obj is np.dtype:
                return np.dtype(self.dtype_of(n.args[0]))
        r = self.visit(n)
        if not isinstance(r, Static):
            raise self.fn.error(f"'{ast.unparse(n)}' must be a dtype or a constant to compare with a dtype", n)
        return r.obj

    # -- module-level arrays: constants frozen at compile time ------------------------------------------------
    def array_constant(self, a: np.ndarray, node):
        if a.dtype.name not in DTYPE_NAMES:
            raise self.fn.error(f"'{ast.unparse(node)}' is an array of unsupported dtype {a.dtype}", node)
        cache = self.__dict__.setdefault("_frozen_arrays", {})
        if id(a) not in cache:  # one copy per compile, however often it is read
            cache[id(a)] = (a, frozen(a))
        value = cache[id(a)][1]
        return self.const(value, TensorType(value.dtype.name, value.ndim))

    def check_writable(self, inputs, at):
        """A write into an array constant (or a view of one) is a CompileError."""
        if not inputs or not isinstance(inputs[0].type, TensorType):
            return
        v = inputs[0]
        while v.node is not None and v.node.kind in VIEW_OPS:
            if v.node.kind == "aten::diagonal":
                raise self.fn.error(
                    "the diagonal np.diagonal returns is a read-only view (NumPy: assignment destination is read-only)",
                    at,
                    "copy it first: d = np.diagonal(x).copy()",
                )
            v = v.node.inputs[0]
        if v.node is not None and v.node.kind == "prim::Constant" and isinstance(v.type, TensorType):
            raise self.fn.error(
                "global arrays are read-only constants in scripted functions", at, "copy it first: y = TABLE.copy()"
            )

    # -- np.var, np.std ---------------------------------------------------------------------------------------
    def stat_arguments(self, node, base, allowed, second="axis"):
        """(x, {keyword: ast node}) for ``np.f(x, axis, ...)`` or ``x.f(axis, ...)`` (``second`` names the
        parameter after x)."""
        args = list(node.args)
        x = base if base is not None else self.expr(args.pop(0)) if args else None
        if x is None:
            raise self.fn.error(f"{ast.unparse(node.func)}() needs an array", node)
        kw = self.keywords(node, allowed)
        if len(args) > 1:
            raise self.fn.error(f"{ast.unparse(node.func)}(): pass arguments after {second} by keyword", node)
        if args:
            kw.setdefault(second, args[0])
        if not isinstance(x.type, TensorType):
            raise self.fn.error(f"{ast.unparse(node.func)}() needs an array", node)
        return x, kw

    def axis_of(self, kw, t, node):
        axis = self.const_eval(kw["axis"]) if "axis" in kw else None
        if axis is None:
            return None
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise self.fn.error("axis must be an int constant or None", kw["axis"])
        if not -t.rank <= axis < t.rank:
            raise self.fn.error(f"axis {axis} is out of bounds for array of dimension {t.rank}", kw["axis"])
        return axis % t.rank

    def flag(self, kw, name):
        value = self.const_eval(kw[name]) if name in kw else False
        if not isinstance(value, bool):
            raise self.fn.error(f"{name} must be True or False", kw[name])
        return value

    def flatten(self, base, node):
        """``x.flatten()``: always a new C-ordered 1-D array (a copy, reshaped: a view of the copy)."""
        if node.args or node.keywords:
            raise self.fn.error("flatten() takes no arguments here (C order)", node)
        copy = self.op("aten::clone", [base], at=node)
        return self.op("aten::reshape", [copy, self.const(-1)], at=node)

    def transpose(self, base, node, given=0):
        """``x.transpose()``, ``np.transpose(x)``: the axes reversed, as ``x.T`` (a view); explicit axes are
        refused."""
        if base is None or len(node.args) > given or node.keywords:
            raise self.fn.error("transpose() with axes is not supported", node, "write x.T (all axes reversed)")
        return self.op("aten::numpy_T", [base], at=node)

    def call_var(self, node, base=None, root=False):
        x, kw = self.stat_arguments(node, base, {"axis", "ddof", "keepdims"})
        t = _known(x, "np.var")
        if t.rank == 0:
            raise self.fn.error(
                f"np.{'std' if root else 'var'}() of a 0-d array is not supported", node, "pass x.reshape(1)"
            )
        axis, keepdims = self.axis_of(kw, t, node), self.flag(kw, "keepdims")
        ddof = self.expr(kw["ddof"]) if "ddof" in kw else self.const(0)
        if ddof.type not in (INT, BOOL):
            raise self.fn.error("ddof must be an int", kw["ddof"])
        dtype = t.dtype
        if np.dtype(dtype).kind in "iub":  # _var: bool and int arrays are computed in float64
            x, dtype = self.op("aten::to", [x], {"dtype": "float64"}, at=node), "float64"
        count = self.reduce_count(x, axis, node)
        total = self.keep_dims(self.reduction("aten::sum", x, axis, node), x, axis, np.sum, node)
        mean = self.divide_by_count(total, count, dtype, node)
        dev = self.op("aten::sub", [x, mean], at=node)
        squares = self.op("aten::mul", [dev, dev], at=node)
        ssd = self.keep_dims(self.reduction("aten::sum", squares, axis, node), squares, axis, np.sum, node)
        dof = self.op("prim::max", [self.op("aten::sub", [count, ddof], at=node), self.const(0)], at=node)
        result = self.divide_by_count(ssd, dof, dtype, node)
        if root:
            result = self.op("aten::sqrt", [result], at=node)
        return self.drop_kept(result, t.rank, axis, keepdims, node)

    def reduction(self, kind, x, axis, node):
        return self.op(kind, [x], {"axis": axis}, at=node)

    def reduce_count(self, x, axis, node):
        if axis is None:
            return self.op("aten::numel", [x], at=node)
        return self.op("prim::TupleIndex", [self.op("aten::size", [x], at=node)], {"index": axis}, at=node)

    def divide_by_count(self, a, count, dtype, node):
        """NumPy's ``true_divide(a, intp count)``: computed in float64 (the count is a NumPy integer, not a weak
        Python scalar), then cast to the array's dtype."""
        if dtype == "float64":
            return self.op("aten::div", [a, count], at=node)
        wide = self.op("aten::to", [a], {"dtype": "float64"}, at=node)
        return self.op("aten::to", [self.op("aten::div", [wide, count], at=node)], {"dtype": dtype}, at=node)

    def drop_kept(self, result, rank, axis, keepdims, node):
        """From a result with every reduced dimension kept (length 1) to NumPy's result without them."""
        if keepdims:
            return result
        if axis is None or rank == 1:  # a scalar, as every reduction to one value gives
            return self.op("aten::getitem", [result] + [self.const(0)] * rank, at=node)
        return self.op("aten::select", [result, self.const(0)], {"dim": axis}, at=node)

    # -- np.median -------------------------------------------------------------------------------------------
    def call_median(self, node):
        x, kw = self.stat_arguments(node, None, {"axis", "keepdims"})
        t = _known(x, "np.median")
        axis, keepdims = self.axis_of(kw, t, node), self.flag(kw, "keepdims")
        along = 0 if axis is None else axis
        ordered = self.op("aten::sort", [x], {"axis": axis}, at=node)
        n = self.reduce_count(ordered, along, node)
        lo = self.op("aten::floordiv", [self.op("aten::sub", [n, self.const(1)]), self.const(2)], at=node)
        hi = self.op("aten::add", [self.op("aten::floordiv", [n, self.const(2)]), self.const(1)], at=node)
        middle = self.op("aten::slice", [ordered, lo, hi, self.const(None)], {"dim": along}, at=node)
        result = self.reduction("aten::mean", middle, along, node)
        if np.dtype(t.dtype).kind == "f":  # _median_nancheck: a NaN (sorted last) anywhere gives that NaN
            last = self.op("aten::sub", [n, self.const(1)], at=node)

            def nan_check():
                if result.type.is_scalar:
                    top = self.op("aten::getitem", [ordered, last], at=node)
                    return self.emit_if(self.op("aten::isnan", [top], at=node), lambda: top, lambda: result, node)
                top = self.op("aten::select", [ordered, last], {"dim": along}, at=node)
                return self.op("aten::where", [self.op("aten::isnan", [top], at=node), top, result], at=node)

            empty = self.op("aten::eq", [n, self.const(0)], at=node)
            result = self.emit_if(empty, lambda: result, nan_check, node)
        if keepdims:
            result = self.keep_dims(result, x, axis, np.mean, node)
        return result

    # -- np.linalg.norm ---------------------------------------------------------------------------------------
    def call_norm(self, node):
        x, kw = self.stat_arguments(node, None, {"ord", "axis", "keepdims"}, second="ord")
        if "axis" in kw:
            raise self.fn.error(
                "np.linalg.norm() with axis= is not supported",
                kw["axis"],
                "write it out, e.g. np.sqrt(np.sum(x * x, axis=1))",
            )
        t = _known(x, "np.linalg.norm")
        order = self.signed_constant(kw["ord"]) if "ord" in kw else None
        keepdims = self.flag(kw, "keepdims")
        dtype = t.dtype
        if np.dtype(dtype).kind in "iub":
            x, dtype = self.op("aten::to", [x], {"dtype": "float64"}, at=node), "float64"
        if order is None or order in ("f", "fro") and t.rank == 2 or order == 2 and t.rank == 1:
            flat = self.op("aten::reshape", [x, self.const(-1)], at=node) if t.rank != 1 else x
            squared = self.op("aten::dot", [flat, flat], at=node)
            result = self.scalar_in_dtype("aten::sqrt", squared, dtype, node)
        elif t.rank == 1 and order in (1, math.inf, -math.inf) and not isinstance(order, bool):
            magnitude = self.op("aten::abs", [x], at=node)
            kind = {1: "aten::sum", math.inf: "aten::max", -math.inf: "aten::min"}[order]
            result = self.reduction(kind, magnitude, None, node)
        else:
            raise self.fn.error(
                f"np.linalg.norm() with ord={order!r} of a {t.rank}-d array is not supported",
                node,
                "supported: vectors with ord None, 2, 1, np.inf, -np.inf; matrices with ord None or 'fro'",
            )
        if keepdims:
            ones = [self.const(1)] * t.rank
            result = self.op("aten::full", [result] + ones, {"dtype": dtype}, at=node)
        return result

    def bool_power(self, left, right, node):
        """The base of ``left ** right``. NumPy computes ``bool_array ** 2`` (a Python int 2) as ``np.square``,
        whose bool loop gives int8, where other int powers give int64: the base is cast to int8 first. With
        an int exponent known only at run time the dtype would hang on its value: an error."""
        if right.type != INT or not isinstance(left.type, TensorType) or left.type.dtype != "bool":
            return left
        if not is_constant(right):
            raise self.fn.error(
                f"'{ast.unparse(node)}': NumPy's dtype for a bool array to an int power depends on "
                "the exponent's value (** 2 is np.square: int8; other powers give int64)",
                node,
                hint="convert the array first, e.g. b.astype(np.int64) ** k",
            )
        return self.op("aten::to", [left], {"dtype": "int8"}, at=node) if constant_value(right) == 2 else left

    def signed_constant(self, n):
        """A constant, also negated: ``-np.inf``."""
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            value = self.const_eval(n.operand)
            if isinstance(value, (int, float)):
                return -value
        return self.const_eval(n)

    def scalar_in_dtype(self, kind, value, dtype, node):
        """``kind`` of a scalar computed as NumPy computes it on a scalar of ``dtype`` (float32 results are
        rounded to float32): through a one-element array."""
        if dtype == "float64":
            return self.op(kind, [value], at=node)
        one = self.op("aten::full", [value, self.const(1)], {"dtype": dtype}, at=node)
        return self.op("aten::getitem", [self.op(kind, [one], at=node), self.const(0)], at=node)


ARRAY_CALLS = {
    **matrices.CALLS,
    np.transpose: lambda self, node: self.transpose(self.expr(node.args[0]) if node.args else None, node, given=1),
    np.var: lambda self, node: self.call_var(node),
    np.std: lambda self, node: self.call_var(node, root=True),
    np.median: lambda self, node: self.call_median(node),
    np.linalg.norm: lambda self, node: self.call_norm(node),
    np.take: lambda self, node: self.call_take(node),
    np.diagonal: lambda self, node: self.call_diagonal(node),
    np.diag: lambda self, node: self.call_diag(node),
    np.trace: lambda self, node: self.call_trace(node),
    np.add.at: lambda self, node: self.call_add_at(node),
}
ARRAY_METHODS = {
    "var": lambda self, base, node: self.call_var(node, base),
    "std": lambda self, base, node: self.call_var(node, base, root=True),
    "flatten": lambda self, base, node: self.flatten(base, node),
    "transpose": lambda self, base, node: self.transpose(base, node),
    "diagonal": lambda self, base, node: self.call_diagonal(node, base),
    "trace": lambda self, base, node: self.call_trace(node, base),
}
