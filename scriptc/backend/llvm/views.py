"""Views in native code: transposes, permutations, integer and slice indexing along one axis, reshapes. A view
shares its base's data and meminfo (and takes a reference); Python's index and slice rules, NumPy's IndexError and
reshape errors."""
from __future__ import annotations

from llvmlite import ir

from ...ir.core import constant_value, is_constant
from ...ir.types import NONE, TensorType
from .arrays import Arr, index_checked
from .common import I1, handles_array, i64


class ViewOps:
    """Mixin of FunctionLowering."""

    def view(self, a: Arr, t: TensorType, data, shape, strides) -> list:
        self.array_retain([a.mi])
        return [a.mi, data, *shape, *strides]

    def normalize_index(self, i, n, axis: int, checked: bool = True):
        """Python's negative index wrap, and NumPy's IndexError when out of bounds; an index the
        bounds-check pass proved in ``[0, n)`` (``checked=False``) is used as it is."""
        if not checked:
            return i
        b = self.b
        j = b.select(b.icmp_signed("<", i, i64(0)), b.add(i, n), i)
        bad = b.or_(b.icmp_signed("<", j, i64(0)), b.icmp_signed(">=", j, n))
        self.raise_with(bad, IndexError, f"index {{0}} is out of bounds for axis {axis} with size {{1}}", [i, n])
        return j

    @handles_array("aten::numpy_T")
    def lower_transpose(self, node):
        a = self.arr(node.inputs[0])
        return [self.view(a, node.output.type, a.data, a.shape[::-1], a.strides[::-1])]

    @handles_array("aten::permute")
    def lower_permute(self, node):
        a = self.arr(node.inputs[0])
        dims = node.attrs["dims"]
        return [self.view(a, node.output.type, a.data, [a.shape[d] for d in dims], [a.strides[d] for d in dims])]

    @handles_array("aten::select")
    def lower_select(self, node):
        a, (_, index) = self.arr(node.inputs[0]), node.inputs
        dim = node.attrs["dim"]
        j = self.normalize_index(self.scalar(index), a.shape[dim], dim, index_checked(node, 0))
        data = self.b.gep(a.data, [self.b.mul(j, a.strides[dim])])
        shape = a.shape[:dim] + a.shape[dim + 1:]
        strides = a.strides[:dim] + a.strides[dim + 1:]
        return [self.view(a, node.output.type, data, shape, strides)]

    @handles_array("aten::slice")
    def lower_slice(self, node):
        a = self.arr(node.inputs[0])
        dim = node.attrs["dim"]
        start, stop, step = [None if v.type == NONE else self.scalar(v) for v in node.inputs[1:]]
        first, length, step = self.slice_indices(start, stop, step, a.shape[dim])
        b = self.b
        data = b.gep(a.data, [b.mul(first, a.strides[dim])])
        shape = list(a.shape)
        strides = list(a.strides)
        shape[dim], strides[dim] = length, b.mul(a.strides[dim], step)
        return [self.view(a, node.output.type, data, shape, strides)]

    def slice_indices(self, start, stop, step, n):
        """PySlice_Unpack + PySlice_AdjustIndices: (first index, length, step)."""
        b = self.b
        if step is None:
            step = i64(1)
        else:
            self.raise_if(b.icmp_signed("==", step, i64(0)), ValueError, "slice step cannot be zero")
        neg = b.icmp_signed("<", step, i64(0))

        def adjust(x, default_pos, default_neg):
            if x is None:
                return b.select(neg, default_neg, default_pos)
            lo = b.select(neg, i64(-1), i64(0))
            hi = b.select(neg, b.sub(n, i64(1)), n)
            wrapped = b.add(x, n)
            under = b.select(b.icmp_signed("<", wrapped, i64(0)), lo, wrapped)
            return b.select(b.icmp_signed("<", x, i64(0)), under,
                            b.select(b.icmp_signed(">=", x, n), hi, x))

        first = adjust(start, i64(0), b.sub(n, i64(1)))
        last = adjust(stop, n, i64(-1))
        up = b.select(b.icmp_signed("<", first, last),
                      b.add(b.sdiv(b.sub(b.sub(last, first), i64(1)), b.select(neg, i64(1), step)), i64(1)), i64(0))
        down = b.select(b.icmp_signed("<", last, first),
                        b.add(b.sdiv(b.sub(b.sub(first, last), i64(1)), b.select(neg, b.neg(step), i64(1))),
                              i64(1)), i64(0))
        return first, b.select(neg, down, up), step

    @handles_array("aten::reshape")
    def lower_reshape(self, node):
        b = self.b
        a = self.arr(node.inputs[0])
        dims = [self.scalar(v) for v in node.inputs[1:]]
        total = self.size(a.shape)
        known, unknown = i64(1), i64(-1)
        for k, d in enumerate(dims):
            is_free = b.icmp_signed("==", d, i64(-1))
            unknown = b.select(is_free, i64(k), unknown)
            known = b.select(is_free, known, b.mul(known, d))
        free_dim = b.sdiv(total, b.select(b.icmp_signed("==", known, i64(0)), i64(1), known))
        dims = [b.select(b.icmp_signed("==", unknown, i64(k)), free_dim, d) for k, d in enumerate(dims)]
        # NumPy names a -1 dimension "newaxis" (known here when written as a constant)
        texts = ["newaxis" if is_constant(v) and constant_value(v) == -1 else f"{{{k + 1}}}"
                 for k, v in enumerate(node.inputs[1:])]
        message = f"cannot reshape array of size {{0}} into shape ({','.join(texts)}{',' if len(texts) == 1 else ''})"
        self.raise_with(b.icmp_signed("!=", self.size(dims), total), ValueError, message, [total, *dims])
        contiguous = self.is_c_contiguous(a)
        out_t = node.output.type
        result = self.alloca_leaves(out_t)
        with b.if_else(contiguous) as (then, otherwise):
            with then:
                self.store_leaves(result, self.view(a, out_t, a.data, dims, self.c_strides(dims, a.itemsize)))
            with otherwise:
                copy = self.alloc(TensorType(a.t.dtype, a.t.rank), a.shape)
                self.copy_into(copy, a)
                self.store_leaves(result, [copy.mi, copy.data, *dims, *self.c_strides(dims, a.itemsize)])
        return [self.load_leaves(result)]

    def is_c_contiguous(self, a: Arr):
        """NumPy's C-contiguity: strides of a row-major layout, ignoring dimensions of length 1."""
        b = self.b
        ok, expect = ir.Constant(I1, 1), i64(a.itemsize)
        for d, s in zip(reversed(a.shape), reversed(a.strides)):
            ok = b.and_(ok, b.or_(b.icmp_signed("==", d, i64(1)), b.icmp_signed("==", s, expect)))
            expect = b.mul(expect, d)
        return ok
