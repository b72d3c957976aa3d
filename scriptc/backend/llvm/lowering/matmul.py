"""Matrix products (``@``, ``np.matmul``, ``np.dot``) in native code, with NumPy's shapes, dtypes and errors.

Every product is a loop over batches of one core product C (m x n) = A (m x k) @ B (k x n): a 1-d operand is a
row (left) or a column (right) of length k. ``np.matmul`` broadcasts the leading (batch) dimensions of both
operands; ``np.dot`` pairs every leading index of ``a`` with every leading index of ``b`` (it sums over the last
axis of ``a`` and the second-to-last of ``b``).

Float products (float32 and float64 results) call OpenBLAS (blas.py) as NumPy does, choosing the routine by the
core's sizes the way NumPy's matmul loop does: no call for an empty core (zeros when k == 0), the exact outer
product when k == 1, ``?dot`` when m == n == 1, ``?gemv`` when m or n is 1, else ``?gemm``. Views are passed
without copies through the transpose flags, leading dimensions and vector increments; an operand whose core
has no such layout (both strides non-unit, a negative stride in a matrix) is first copied to a C-contiguous
temporary, and so is an operand of another dtype (NumPy casts it to the result dtype). Sums are in BLAS's order,
which is NumPy's order whenever NumPy calls the same routine of the same OpenBLAS kernels.

Integer, bool and float16 products, and float ones without OpenBLAS, run a generated triple loop (ints wrap at
64 bits and are narrowed to the result dtype; bool is "any of and"). Exported libraries (``ModuleLowering.blas``
false) do not link OpenBLAS: their float products run ``row_core``, a loop in i-k-j order whose inner
loop over a row of B and C LLVM vectorizes (each element summed in order over k, in the result dtype; 256 x 256
float64: about 3x NumPy's time with one OpenBLAS thread, where the i-j-k loop takes 50x with two), so they are not
bit-identical to NumPy's.
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.types import TensorType, result_dtype
from . import arrays, conversions, summation
from ..runtime import blas
from .array_value import ELEM, Arr, kind_of
from .common import F64, I1, I8P, I32, I64, f64, i64
from .rules import lowers_array
from ..runtime.errors import LoweringError

BLAS_DTYPES = ("float64", "float32")
MATMUL_MISMATCH = (
    "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
    "(n?,k),(k,m?)->(n?,m?) (size {1} is different from {0})"
)


def tuple_text(rank: int, first: int) -> str:
    """A template printing a shape as NumPy's error messages do: (3,), (2,3)."""
    if rank == 1:
        return f"({{{first}}},)"
    return "(" + ",".join(f"{{{first + k}}}" for k in range(rank)) + ")"


class Core:
    """One core product's operand views: A (m x k), B (k x n), C (m x n), as 2-d Arrs (data, shape, strides)."""

    __slots__ = ("a", "b", "c")

    def __init__(self, a: Arr, b: Arr, c: Arr):
        self.a, self.b, self.c = a, b, c


def view2d(dtype: str, data, rows, cols, s0, s1) -> Arr:
    return Arr(TensorType(dtype, 2), [ir.Constant(I8P, None), data, rows, cols, s0, s1])


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


# -- shapes and errors ----------------------------------------------------------------------------------
def check_core_sizes(ctx, node, x: Arr, y: Arr) -> None:
    """NumPy's ValueError when a's last dimension is not b's summed one."""
    rx, ry = x.t.rank, y.t.rank
    kx, ky = x.shape[-1], y.shape[-2] if ry >= 2 else y.shape[0]
    bad = ctx.b.icmp_signed("!=", kx, ky)
    if node.kind == "aten::matmul":
        ctx.raise_with(bad, ValueError, MATMUL_MISMATCH, [kx, ky])
        return
    message = (
        f"shapes {tuple_text(rx, 0)} and {tuple_text(ry, rx)} not aligned: "
        f"{{{rx + ry}}} (dim {rx - 1}) != {{{rx + ry + 1}}} (dim {max(ry - 2, 0)})"
    )
    ctx.raise_with(bad, ValueError, message, [*x.shape, *y.shape, kx, ky])


def matmul_batch_shape(ctx, x: Arr, y: Arr) -> list:
    """np.matmul's broadcast of the leading (batch) dimensions, with NumPy's message when they clash."""
    b = ctx.b
    rx, ry = x.t.rank, y.t.rank
    bx, by = max(rx - 2, 0), max(ry - 2, 0)
    nb = max(bx, by)
    extents, bad = [], ir.Constant(I1, 0)
    for k in range(nb):
        dx = x.shape[k - nb + bx] if k >= nb - bx else i64(1)
        dy = y.shape[k - nb + by] if k >= nb - by else i64(1)
        bad = b.or_(
            bad,
            b.and_(
                b.icmp_signed("!=", dx, dy), b.and_(b.icmp_signed("!=", dx, i64(1)), b.icmp_signed("!=", dy, i64(1)))
            ),
        )
        extents.append(b.select(b.icmp_signed("==", dx, i64(1)), dy, dx))
    if bx and by:
        ctx.raise_with(
            bad,
            ValueError,
            remapped_message(rx, ry),
            [*x.shape, *x.shape[:bx], *y.shape, *y.shape[:by], x.shape[-2], y.shape[-1]],
        )
    return extents


def matmul_batches(ctx, x: Arr, y: Arr, extents: list):
    """(batch dimensions as (extent, x stride, y stride, out dim), out shape) of np.matmul: a dimension of
    length 1 broadcasts (stride 0)."""
    b = ctx.b
    rx, ry = x.t.rank, y.t.rank
    nb = len(extents)

    def stride(a: Arr, k: int):
        j = k - nb + max(a.t.rank - 2, 0)
        if j < 0:
            return i64(0)
        return b.select(b.icmp_signed("==", a.shape[j], i64(1)), i64(0), a.strides[j])

    batch = [(extents[k], stride(x, k), stride(y, k), k) for k in range(nb)]
    shape = extents + ([x.shape[-2]] if rx >= 2 else []) + ([y.shape[-1]] if ry >= 2 else [])
    return batch, shape


def remapped_message(rx: int, ry: int) -> str:
    """NumPy's broadcast error of matmul's batch dimensions, as a template over (x shape, x batch, y shape,
    y batch, n, m)."""
    parts, first = [], 0
    for r in (rx, ry):
        dims = ",".join(f"{{{first + k}}}" for k in range(r))
        batch = ",".join([f"{{{first + r + k}}}" for k in range(r - 2)] + ["newaxis", "newaxis"])
        parts.append(f"({dims})->({batch})")
        first += 2 * r - 2
    return (
        "operands could not be broadcast together with remapped shapes [original->remapped]: "
        + " ".join(parts)
        + f"  and requested shape ({{{first}}},{{{first + 1}}})"
    )


def dot_batches(ctx, x: Arr, y: Arr):
    """np.dot: every leading index of a with every leading index of b; out is a.shape[:-1] + b.shape[:-2]
    + b.shape[-1:]."""
    rx, ry = x.t.rank, y.t.rank
    batch = [(x.shape[k], x.strides[k], i64(0), k) for k in range(rx - 2)]
    batch += [(y.shape[k], i64(0), y.strides[k], rx - 1 + k) for k in range(ry - 2)]
    shape = x.shape[:-1] + (y.shape[:-2] + y.shape[-1:] if ry >= 2 else [])
    return batch, shape


def batch_loops(ctx, batch: list, run) -> None:
    """Call ``run(x offset, y offset, [(index, out dim)])`` for every batch index (once when there is none)."""
    b = ctx.b

    def body(index):
        ox, oy = i64(0), i64(0)
        for i, (_, sx, sy, _) in zip(index, batch):
            ox, oy = b.add(ox, b.mul(i, sx)), b.add(oy, b.mul(i, sy))
        run(ox, oy, [(i, dim) for i, (*_, dim) in zip(index, batch)])

    ctx.loop_nest([extent for extent, *_ in batch], body)


def core_views(ctx, kind: str, x: Arr, y: Arr, out: Arr, res: str):
    """A function (x offset, y offset, [(index, out dim)]) -> Core for one batch index."""
    b = ctx.b
    rx, ry = x.t.rank, y.t.rank
    one, zero = i64(1), i64(0)
    m = x.shape[-2] if rx >= 2 else one
    n = y.shape[-1] if ry >= 2 else one
    k = x.shape[-1]
    xs = (x.strides[-2] if rx >= 2 else zero, x.strides[-1])
    ys = (y.strides[-2], y.strides[-1]) if ry >= 2 else (y.strides[0], zero)
    orank = len(out.strides)
    n_dim = orank - 1 if ry >= 2 else None
    m_dim = (orank - 1 - (ry >= 2) if kind == "aten::matmul" else rx - 2) if rx >= 2 else None
    cs = (out.strides[m_dim] if m_dim is not None else zero, out.strides[n_dim] if n_dim is not None else zero)

    def make(ox, oy, out_index):
        oc = zero
        for i, dim in out_index:
            oc = b.add(oc, b.mul(i, out.strides[dim]))
        return Core(
            view2d(x.t.dtype, b.gep(x.data, [ox]), m, k, *xs),
            view2d(y.t.dtype, b.gep(y.data, [oy]), k, n, *ys),
            view2d(res, b.gep(out.data, [oc]), m, n, *cs),
        )

    return make


# -- BLAS --------------------------------------------------------------------------------------------
def blas_operand(ctx, a: Arr, res: str) -> Arr:
    """``a`` itself when BLAS can read its core as it is, else a C-contiguous copy in the result dtype
    (released by the caller with release_temp)."""
    b = ctx.b
    t = TensorType(res, a.t.rank)
    if a.t.dtype != res:
        copy = ctx.alloc(t, a.shape)
        ctx.copy_into(copy, a)
        return copy
    if a.t.rank >= 2:
        rows, cols, s0, s1 = a.shape[-2], a.shape[-1], a.strides[-2], a.strides[-1]
        ok = blas_matrix_ok(ctx, rows, cols, s0, s1, a.itemsize)
    else:
        ok = blas_vector_ok(ctx, a.strides[0], a.itemsize)
    ok = b.or_(ok, b.icmp_signed("<=", ctx.element_count(a.shape), i64(1)))
    slots = ctx.alloca_leaves(t)
    ctx.store_leaves(slots, a.leaves)
    with b.if_then(b.not_(ok), likely=False):
        copy = ctx.alloc(t, a.shape)
        ctx.copy_into(copy, a)
        ctx.store_leaves(slots, copy.leaves)
    return Arr(t, ctx.load_leaves(slots))


def blas_vector_ok(ctx, s, e: int):
    b = ctx.b
    return b.and_(b.icmp_signed("!=", s, i64(0)), b.icmp_signed("==", b.srem(s, i64(e)), i64(0)))


def row_major(ctx, rows, cols, s0, s1, e: int):
    """i1: rows of unit stride one leading dimension apart (s0 / e >= cols)."""
    b = ctx.b
    return b.and_(
        b.icmp_signed("==", s1, i64(e)),
        b.and_(b.icmp_signed("==", b.srem(s0, i64(e)), i64(0)), b.icmp_signed(">=", s0, b.mul(cols, i64(e)))),
    )


def blas_matrix_ok(ctx, rows, cols, s0, s1, e: int):
    """i1: a core BLAS reads in place: row- or column-major with a leading dimension, or a single row or
    column with a usable increment (every size-1 case ends in a vector routine or the outer product)."""
    b = ctx.b
    one = i64(1)
    single_row = b.and_(
        b.icmp_signed("==", rows, one), b.or_(b.icmp_signed("==", cols, one), blas_vector_ok(ctx, s1, e))
    )
    single_col = b.and_(b.icmp_signed("==", cols, one), blas_vector_ok(ctx, s0, e))
    return b.or_(
        b.or_(row_major(ctx, rows, cols, s0, s1, e), row_major(ctx, cols, rows, s1, s0, e)),
        b.or_(single_row, single_col),
    )


def blas_function(ctx, name: str) -> ir.Function:
    decls = ctx.mod._decls
    key = blas.SYMBOL_PREFIX + name
    if key not in decls:
        t = F64 if name[0] == "d" else ir.FloatType()
        p = t.as_pointer()
        args = {
            "gemm": [I32, I32, I32, I64, I64, I64, t, p, I64, p, I64, t, p, I64],
            "gemv": [I32, I32, I64, I64, t, p, I64, p, I64, t, p, I64],
            "dot": [I64, p, I64, p, I64],
        }[name[1:]]
        fn = ir.Function(ctx.mod.module, ir.FunctionType(t if name.endswith("dot") else ir.VoidType(), args), key)
        fn.attributes.add("nounwind")
        decls[key] = fn
    return decls[key]


def shared_blas_core(ctx, c: Core, res: str) -> None:
    """``blas_core`` as a call to its code for this dtype, compiled once per process (each product site
    would otherwise carry its own copy of the routine choice and the small-size loops)."""
    args = [x.data for x in (c.a, c.b, c.c)] + [d for x in (c.a, c.b, c.c) for d in (*x.shape, *x.strides)]
    fnty = ir.FunctionType(ir.VoidType(), [I8P] * 3 + [I64] * 12)

    def build(lowering, fn):
        data, dims = fn.args[:3], fn.args[3:]
        views = [view2d(dt, data[j], *dims[4 * j : 4 * j + 4]) for j, dt in enumerate((res, res, res))]
        blas_core(lowering, Core(*views), res)
        lowering.b.ret_void()

    callee = summation.call_compiled_once(ctx, ("blas_core", res), fnty, build)
    ctx.b.call(callee, [ctx.b.bitcast(a, I8P) for a in args[:3]] + args[3:])


def blas_core(ctx, c: Core, res: str) -> None:
    """C = A @ B by the routine NumPy's matmul loop picks for these sizes (module docstring)."""
    b = ctx.b
    m, k, n = c.a.shape[0], c.a.shape[1], c.b.shape[1]
    one, zero = i64(1), i64(0)
    eq = lambda x, y: b.icmp_signed("==", x, y)  # noqa: E731
    cases = [
        (b.or_(eq(m, zero), eq(n, zero)), lambda: None),
        (eq(k, zero), lambda: arrays.fill(ctx, c.c, "f", f64(0.0))),
        (eq(k, one), lambda: loop_core(ctx, c, res)),
        (b.and_(eq(m, one), eq(n, one)), lambda: blas_dot(ctx, c, res)),
        (eq(m, one), lambda: blas_gemv(ctx, transposed(c.b), c.a, 1, c.c, 1, res)),
        (eq(n, one), lambda: blas_gemv(ctx, c.a, c.b, 0, c.c, 0, res)),
    ]
    select_case(ctx, cases, lambda: blas_gemm(ctx, c, res))


def select_case(ctx, cases: list, default) -> None:
    """Run the first case whose condition holds (else ``default``), then continue after all of them."""
    b = ctx.b
    done = b.append_basic_block("case.done")
    for cond, emit in cases:
        then, other = b.append_basic_block("case"), b.append_basic_block("case.next")
        b.cbranch(cond, then, other)
        b.position_at_end(then)
        emit()
        b.branch(done)
        b.position_at_end(other)
    default()
    b.branch(done)
    b.position_at_end(done)


def transposed(a: Arr) -> Arr:
    return view2d(a.t.dtype, a.data, a.shape[1], a.shape[0], a.strides[1], a.strides[0])


def typed(ctx, data, dtype: str):
    return ctx.b.bitcast(data, ELEM[dtype].as_pointer())


def vector(ctx, a: Arr, axis: int):
    """(pointer, increment) of one row (axis 1) or column (axis 0) of a core, as BLAS takes a vector: a
    negative increment starts at the lowest address."""
    b = ctx.b
    e = i64(a.itemsize)
    n, s = a.shape[axis], a.strides[axis]
    inc = b.select(b.icmp_signed("==", n, i64(1)), i64(1), b.sdiv(s, e))
    back = b.mul(b.sub(n, i64(1)), s)
    start = b.gep(a.data, [b.select(b.icmp_signed("<", inc, i64(0)), back, i64(0))])
    return typed(ctx, start, a.t.dtype), inc


def matrix(ctx, a: Arr):
    """(pointer, transpose flag, leading dimension) of a core with both sizes > 1 (row- or column-major)."""
    b = ctx.b
    e = a.itemsize
    rows, cols, s0, s1 = a.shape[0], a.shape[1], a.strides[0], a.strides[1]
    row = row_major(ctx, rows, cols, s0, s1, e)
    trans = b.select(row, ir.Constant(I32, blas.NO_TRANS), ir.Constant(I32, blas.TRANS))
    ld = b.sdiv(b.select(row, s0, s1), i64(e))
    return typed(ctx, a.data, a.t.dtype), trans, ld


def blas_scalar(ctx, value: float, res: str):
    return ir.Constant(F64 if res == "float64" else ir.FloatType(), value)


def blas_dot(ctx, c: Core, res: str) -> None:
    """C (1 x 1) = the dot product of A's row and B's column."""
    b = ctx.b
    px, incx = vector(ctx, c.a, 1)
    py, incy = vector(ctx, c.b, 0)
    name = "ddot" if res == "float64" else "sdot"
    value = b.call(blas_function(ctx, name), [c.a.shape[1], px, incx, py, incy])
    b.store(value, typed(ctx, c.c.data, res))


def blas_dots(ctx, c: Core, res: str) -> None:
    """Every C[i, j] by its own ?dot call (no call at all when the core is empty)."""
    b = ctx.b

    def element(index):
        i, j = index
        one = i64(1)
        row = view2d(c.a.t.dtype, b.gep(c.a.data, [b.mul(i, c.a.strides[0])]), one, c.a.shape[1], *c.a.strides)
        col = view2d(c.b.t.dtype, b.gep(c.b.data, [b.mul(j, c.b.strides[1])]), c.b.shape[0], one, *c.b.strides)
        out = view2d(
            res, b.gep(c.c.data, [b.add(b.mul(i, c.c.strides[0]), b.mul(j, c.c.strides[1]))]), one, one, *c.c.strides
        )
        blas_dot(ctx, Core(row, col, out), res)

    ctx.loop_nest([c.a.shape[0], c.b.shape[1]], element)


def blas_gemv(ctx, g: Arr, x: Arr, x_axis: int, y: Arr, y_axis: int, res: str) -> None:
    """y = G @ x for a matrix G (rows x cols, both > 1): row-major G untransposed, column-major G as the
    transpose of its row-major reading."""
    b = ctx.b
    pg, trans, ld = matrix(ctx, g)
    px, incx = vector(ctx, x, x_axis)
    py, incy = vector(ctx, y, y_axis)
    rows, cols = g.shape
    is_row = b.icmp_signed("==", trans, ir.Constant(I32, blas.NO_TRANS))
    big_m, big_n = b.select(is_row, rows, cols), b.select(is_row, cols, rows)
    fn = blas_function(ctx, "dgemv" if res == "float64" else "sgemv")
    b.call(
        fn,
        [
            ir.Constant(I32, blas.ROW_MAJOR),
            trans,
            big_m,
            big_n,
            blas_scalar(ctx, 1.0, res),
            pg,
            ld,
            px,
            incx,
            blas_scalar(ctx, 0.0, res),
            py,
            incy,
        ],
    )


def blas_gemm(ctx, c: Core, res: str) -> None:
    b = ctx.b
    pa, ta, lda = matrix(ctx, c.a)
    pb, tb, ldb = matrix(ctx, c.b)
    pc = typed(ctx, c.c.data, res)
    ldc = b.sdiv(c.c.strides[0], i64(c.c.itemsize))
    m, k, n = c.a.shape[0], c.a.shape[1], c.b.shape[1]
    fn = blas_function(ctx, "dgemm" if res == "float64" else "sgemm")
    b.call(
        fn,
        [
            ir.Constant(I32, blas.ROW_MAJOR),
            ta,
            tb,
            m,
            n,
            k,
            blas_scalar(ctx, 1.0, res),
            pa,
            lda,
            pb,
            ldb,
            blas_scalar(ctx, 0.0, res),
            pc,
            ldc,
        ],
    )


# -- the generated loops --------------------------------------------------------------------------------
def cast_operand(ctx, a: Arr, res: str) -> Arr:
    """``a``, or a copy in the result dtype (as NumPy casts an operand of another dtype)."""
    if a.t.dtype == res:
        return a
    copy = ctx.alloc(TensorType(res, a.t.rank), a.shape)
    ctx.copy_into(copy, a)
    return copy


def shared_row_core(ctx, c: Core, res: str) -> None:
    """``row_core`` as a call to its function for this dtype (one copy in the module)."""
    args = [x.data for x in (c.a, c.b, c.c)] + [d for x in (c.a, c.b, c.c) for d in (*x.shape, *x.strides)]
    fnty = ir.FunctionType(ir.VoidType(), [I8P] * 3 + [I64] * 12)

    def build(lowering, fn):
        data, dims = fn.args[:3], fn.args[3:]
        views = [view2d(res, data[j], *dims[4 * j : 4 * j + 4]) for j in range(3)]
        row_core(lowering, Core(*views), res)
        lowering.b.ret_void()

    callee = summation.call_compiled_once(ctx, ("row_core", res), fnty, build)
    ctx.b.call(callee, [ctx.b.bitcast(a, I8P) for a in args[:3]] + args[3:])


def row_core(ctx, c: Core, res: str) -> None:
    """C = A @ B for float operands of the result dtype, without BLAS (exported libraries): row i of C is
    zeroed, then C[i, :] += A[i, p] * B[p, :] for p in order. Every element is summed in the same order as
    ``loop_core`` (p ascending, from 0, no fused multiply-add), in the result dtype; the loop over j reads
    and writes consecutive elements, so LLVM vectorizes it (when B's and C's rows are contiguous: a second
    copy of the loops serves other strides). Not BLAS's blocked order: results differ from NumPy's in the
    last bits."""
    b = ctx.b
    m, k, n = c.a.shape[0], c.a.shape[1], c.b.shape[1]
    e = i64(c.c.itemsize)
    t = ELEM[res]
    zero = ir.Constant(t, 0.0)
    unit = b.and_(b.icmp_signed("==", c.b.strides[1], e), b.icmp_signed("==", c.c.strides[1], e))

    def nest(contiguous: bool):
        with ctx.for_range(m) as i:
            crow = b.gep(c.c.data, [b.mul(i, c.c.strides[0])])

            def at(base, stride, j):
                if contiguous:
                    return b.gep(b.bitcast(base, t.as_pointer()), [j])
                return b.bitcast(b.gep(base, [b.mul(j, stride)]), t.as_pointer())

            with ctx.for_range(n) as j:
                b.store(zero, at(crow, c.c.strides[1], j))
            with ctx.for_range(k) as p:
                aip = b.load(ctx.element_ptr(c.a, [i, p]))
                brow = b.gep(c.b.data, [b.mul(p, c.b.strides[0])])
                with ctx.for_range(n) as j:
                    out = at(crow, c.c.strides[1], j)
                    b.store(b.fadd(b.load(out), b.fmul(aip, b.load(at(brow, c.b.strides[1], j)))), out)

    with b.if_else(unit, likely=True) as (fast, other):
        with fast:
            nest(True)
        with other:
            nest(False)


def loop_core(ctx, c: Core, res: str) -> None:
    """C[i, j] = sum over p of A[i, p] * B[p, j], accumulated in order in the result's register kind (float16
    in float32, as NumPy's half loop)."""
    b = ctx.b
    k = "i" if kind_of(res) == "b" else kind_of(res)  # bool products accumulate as ints
    half = res == "float16"
    acc_type = ir.FloatType() if half else F64 if k == "f" else I64
    inner = c.a.shape[1]

    def operand(a: Arr, index):
        x = conversions.cast(ctx, ctx.load_element(ctx.element_ptr(a, index), a.t.dtype), kind_of(a.t.dtype), k)
        return b.fptrunc(x, acc_type) if half else x

    def element(index):
        i, j = index
        acc = ctx.alloca(acc_type)
        b.store(ir.Constant(acc_type, 0.0 if k == "f" else 0), acc)
        with ctx.for_range(inner) as p:
            xv, yv = operand(c.a, [i, p]), operand(c.b, [p, j])
            cur = b.load(acc)
            b.store(b.fadd(cur, b.fmul(xv, yv)) if k == "f" else b.add(cur, b.mul(xv, yv)), acc)
        ptr = ctx.element_ptr(c.c, [i, j])
        value = b.fpext(b.load(acc), F64) if half else b.load(acc)  # exact: one rounding to half below
        ctx.store_element(ptr, value, k, res)

    ctx.loop_nest([c.a.shape[0], c.b.shape[1]], element)


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers_array("aten::matmul", "aten::dot")
def lower_matmul(ctx, node):
    x0, y0 = (ctx.arr(v) for v in node.inputs)
    if not (x0.t.rank >= 1 and y0.t.rank >= 1):
        raise LoweringError(node.kind, "0-d operands are not supported in native code", node.source)
    out_t = node.output.type
    res = out_t.dtype if isinstance(out_t, TensorType) else result_dtype(x0.t, y0.t)
    # an exported library does not link OpenBLAS: its float products are the row loop
    rows = res in BLAS_DTYPES and not ctx.mod.target.blas
    use_blas = res in BLAS_DTYPES and not rows and blas.bind()
    check_core_sizes(ctx, node, x0, y0)
    matmul = node.kind == "aten::matmul"
    extents = matmul_batch_shape(ctx, x0, y0) if matmul else None  # raises before any temporary exists
    operand = blas_operand if use_blas else cast_operand if rows else lambda ctx, a, _: a
    x, y = operand(ctx, x0, res), operand(ctx, y0, res)
    batch, out_shape = matmul_batches(ctx, x, y, extents) if matmul else dot_batches(ctx, x, y)
    if isinstance(out_t, TensorType):
        out = ctx.alloc(out_t, out_shape)
    else:  # a scalar: the core writes its one element into a stack slot
        slot = ctx.alloca(ELEM[res])
        out = Arr(TensorType(res, 0), [ir.Constant(I8P, None), ctx.b.bitcast(slot, I8P)])
    core_at = core_views(ctx, node.kind, x, y, out, res)
    product = loop_core
    if use_blas:  # NumPy's np.dot beyond 2-d calls ?dot once per output element
        product = blas_dots if not matmul and max(x0.t.rank, y0.t.rank) > 2 else shared_blas_core
    elif rows:
        product = shared_row_core
    batch_loops(ctx, batch, lambda ox, oy, out_index: product(ctx, core_at(ox, oy, out_index), res))
    for a, a0 in ((x, x0), (y, y0)):
        if a is not a0:
            ctx.release_temp(a, a0)
    if isinstance(out_t, TensorType):
        return [out.leaves]
    value = ctx.load_element(typed(ctx, out.data, res), res)
    return [ctx.scalar_result(value, kind_of(res), out_t)]
