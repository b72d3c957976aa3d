"""Matrix products (``@``, ``np.matmul``, ``np.dot``) in native code."""
from __future__ import annotations

from ...ir.types import TensorType, result_dtype
from .arrays import kind_of
from .common import F64, I64, f64, handles_array, i64
from .errors import LoweringError


class MatmulOps:
    """Mixin of FunctionLowering."""

    # -- matrix products --------------------------------------------------------------------------------
    @handles_array("aten::matmul", "aten::dot")
    def lower_matmul(self, node):
        b = self.b
        x, y = (self.arr(v) for v in node.inputs)
        rx, ry = x.t.rank, y.t.rank
        if not (1 <= rx <= 2 and 1 <= ry <= 2):
            raise LoweringError(node.kind, "only 1-d and 2-d operands are supported in native code", node.source)
        out_t = node.output.type
        res = out_t.dtype if isinstance(out_t, TensorType) else result_dtype(x.t, y.t)
        k = "i" if kind_of(res) == "b" else kind_of(res)   # bool products accumulate as ints
        inner_x, inner_y = x.shape[-1], y.shape[0]
        if node.kind == "aten::matmul":
            message = ("matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                       "(n?,k),(k,m?)->(n?,m?) (size {1} is different from {0})")
        else:
            message = "shapes not aligned: {0} (dim %d) != {1} (dim 0)" % (rx - 1)
        self.raise_with(b.icmp_signed("!=", inner_x, inner_y), ValueError, message, [inner_x, inner_y])
        rows = [x.shape[0]] if rx == 2 else []
        cols = [y.shape[1]] if ry == 2 else []

        def dot(i, j):
            acc = self.alloca(F64 if k == "f" else I64)
            b.store(f64(0.0) if k == "f" else i64(0), acc)
            with self.for_range(inner_x) as p:
                xi = self.load_element(self.element_ptr(x, ([i] if rx == 2 else []) + [p]), x.t.dtype)
                yj = self.load_element(self.element_ptr(y, [p] + ([j] if ry == 2 else [])), y.t.dtype)
                xv, yv = self.cast(xi, kind_of(x.t.dtype), k), self.cast(yj, kind_of(y.t.dtype), k)
                cur = b.load(acc)
                b.store(b.fadd(cur, b.fmul(xv, yv)) if k == "f" else b.add(cur, b.mul(xv, yv)), acc)
            return b.load(acc)

        if not isinstance(out_t, TensorType):
            return [self.scalar_result(dot(None, None), k, out_t)]
        out = self.alloc(out_t, rows + cols)
        self.loop_nest(rows + cols, lambda index: self.store_element(
            self.element_ptr(out, index), dot(index[0] if rows else None, index[-1] if cols else None), k,
            out_t.dtype))
        return [out.leaves]
