"""Element-wise operators, reductions and in-place updates on arrays, as NumPy computes them.

Element-wise operators run one loop nest over the broadcast shape (a single flat loop, which LLVM vectorizes,
when every operand is C-contiguous and of the output's shape). Operands are widened to a register kind
(double, i64, i1) and the result narrowed to the output dtype, which gives NumPy's results for integers (they
wrap at their width) and correctly rounded float32 arithmetic. NumPy's rules where Python's differ: integer
division and modulo by zero give 0, float division by zero gives inf/nan, ``maximum``/``minimum`` propagate
NaN, ``bool + bool`` is ``or``. Float sums and means are NumPy's pairwise summation (summation.py); the other
reductions accumulate sequentially.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ....ir.registry import REGISTRY, lookup
from ....ir.types import TensorType, result_dtype, scalar_dtype

from .array_value import Arr, ELEM, F32, INT_RANGE, kind_of, shape_text
from .common import COMPARE, F64, I1, I8P, I64, INT64_MIN, NO_VECTORIZE, f64, i64
from .rules import lowers_array
from ..runtime.errors import LoweringError
from . import conversions, elements, fused, scalar_ops, sum_reductions, summation, views

ELEMENTWISE = [name for name, op in REGISTRY.items() if op.elementwise]
INPLACE = [name for name, op in REGISTRY.items() if "inplace_of" in op.extra]
REDUCTIONS = [name for name, op in REGISTRY.items() if op.extra.get("reduction")]
_RAISING: set = set()  # element-wise kernels whose element code raises: lowered inline


_CASTS = ("sitofp", "uitofp", "fpext", "fptrunc", "fptosi", "fptoui", "zext", "sext", "trunc", "bitcast")


class Operand:
    """An operand position of a shared element-wise kernel (``call_elementwise_kernel``)."""

    __slots__ = ("type",)

    def __init__(self, t):
        self.type = t


def folded(x):
    """A register value made of constants by casts (``x ** 2`` on floats: sitofp(2)) as the constant it is,
    so that a kernel compiled for it sees a constant (``x * x`` for ``x ** 2``, as NumPy's square); else ``x``."""
    if getattr(x, "opname", None) in _CASTS:
        inner = folded(x.operands[0])
        if (
            isinstance(inner, ir.Constant)
            and isinstance(inner.constant, (int, float))
            and not isinstance(inner.constant, bool)
        ):
            value = inner.constant
            if x.opname in ("sitofp", "fpext") or (x.opname == "uitofp" and value >= 0):
                return ir.Constant(x.type, float(value))
            if x.opname == "fptrunc" and x.type == F32:
                return ir.Constant(x.type, float(np.float32(value)))
    return x


def reduction_dtype(kind: str, src: TensorType, axis) -> str:
    """The dtype NumPy gives this reduction (int32 sums are int64, int means are float64, ...)."""
    impl = REGISTRY[kind].impl
    return np.asarray(impl(np.ones((1,) * src.rank, src.dtype), axis=axis)).dtype.name


def element_name(node) -> str:
    """The element operation of an element-wise node: its operator, ``pow_scalar`` for an array to a Python
    scalar power (NumPy's fast powers apply), ``clip_arrays`` for a clip with an array bound."""
    op = node.kind.split("::")[1]
    if op == "pow" and not isinstance(node.inputs[1].type, TensorType):
        return "pow_scalar"
    if op == "clip" and any(isinstance(v.type, TensorType) for v in node.inputs[1:]):
        return "clip_arrays"  # NumPy's generic clip loop (a bound is an array) takes the bound on a tie
    return op


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def zero_d_elementwise(ctx, node, op: str):
    """An element-wise operator on 0-d arrays: NumPy gives a scalar of the loop's dtype (here a Python
    scalar of that value, as reading ``x[()]`` gives), computed as one element of the loop."""
    as_1d = [TensorType(v.type.dtype, 1) if isinstance(v.type, TensorType) else v.type for v in node.inputs]
    out = lookup(node.kind).result_types(as_1d, node.attrs)[0]
    out = out.dtype if isinstance(out, TensorType) else scalar_dtype(out)  # (numbers only: np.clip)
    dtype = result_dtype(*as_1d) if op in COMPARE or op in elements.PREDICATES else out
    scalars = {
        k: weak_scalar(ctx, op, k, *ctx.scalar_operand(v), dtype)
        for k, v in enumerate(node.inputs)
        if not isinstance(v.type, TensorType)
    }
    kind, x = element_of(ctx, node, dtype, scalars)(
        lambda v: (kind_of(v.type.dtype), ctx.load_element(ctx.element_ptr(ctx.arr(v), []), v.type.dtype))
    )
    kind, x = fused.round_through(ctx, kind, x, out)  # as stored in the result's dtype (float16: rounded)
    return [ctx.scalar_result(x, kind, node.output.type)]


def element_of(ctx, node, dtype: str, scalars: dict, inputs=None):
    """``element(load)`` of an element-wise node: its operands (arrays through ``load``, Python scalars from
    ``scalars``, by position) cast to the loop's kind, the operation, NumPy's rounding. ``inputs``: what
    ``load`` is given for each operand (the node's inputs)."""
    op = node.kind.split("::")[1]
    compute = kind_of(dtype)

    def element(load):
        args = []
        for k, v in enumerate(inputs or node.inputs):
            kind, x = load(v) if isinstance(v.type, TensorType) else scalars[k]
            want = "b" if op == "where" and k == 0 else compute
            args.append(conversions.cast(ctx, x, kind, want))
        return in_loop_precision(ctx, *element_op(ctx, element_name(node), args, compute, dtype), dtype)

    return element


def call_elementwise_kernel(ctx, node, dtype: str, out: Arr, arrays: list[Arr], scalars: dict) -> bool:
    """Run an element-wise node's loops as a call to a kernel compiled once per process for its operator,
    dtypes, ranks and constant operands (the others are arguments), as NumPy calls a ufunc's inner loop:
    inline, each operator was a loop nest LLVM optimized again in every function (~40 ms each). The
    shapes were checked and broadcast here; the kernel cannot raise. False where it cannot be so: a
    library or GPU module (the code stays inline there) or an operation that raises (integer powers)."""
    if ctx.mod.target.standalone:
        return False
    rank = out.t.rank
    scalars = {k: (kind, folded(x)) for k, (kind, x) in scalars.items()}
    params = [k for k, (_, x) in sorted(scalars.items()) if not isinstance(x, ir.Constant)]
    operands = [
        f"{v.type.dtype}{v.type.rank}"
        if isinstance(v.type, TensorType)
        else f"{scalars[k][0]}.{scalars[k][1].type}"
        if k in params
        else str(scalars[k][1])
        for k, v in enumerate(node.inputs)
    ]
    attrs = [f"{name}={value}" for name, value in sorted(node.attrs.items())]
    key = ("ew", node.kind.split("::")[1], *attrs, dtype, f"{out.t.dtype}{rank}", *operands)
    if key in _RAISING:
        return False
    types = [I8P, *[I64] * (2 * rank)]
    for a in arrays:
        types += [I8P, *[I64] * a.t.rank]
    types += [scalars[k][1].type for k in params]

    def build(lowering, fn):
        fn.args[0].add_attribute("noalias")  # the output is a new array: no operand reads it
        args = iter(fn.args)
        null = ir.Constant(I8P, None)
        data = next(args)
        shape = [next(args) for _ in range(rank)]
        kernel_out = Arr(out.t, [null, data, *shape, *[next(args) for _ in range(rank)]])
        views = []
        for a in arrays:
            data = next(args)
            views.append(Arr(a.t, [null, data, *shape[rank - a.t.rank :], *[next(args) for _ in a.shape]]))
        own = dict(scalars)
        own.update({k: (scalars[k][0], next(args)) for k in params})
        lowering.node = node  # (what an unsupported operator's LoweringError names)
        # one operand per position, never the node's values: the kernel serves every node of this key,
        # and one that reads a value twice (s * s) must not make it read one argument twice
        operands = [Operand(v.type) for v in node.inputs]
        elementwise_loops(
            lowering, kernel_out, operands, views, element_of(lowering, node, dtype, own, operands), broadcast=False
        )
        lowering.b.ret_void()

    try:
        kernel = summation.call_compiled_once(ctx, key, ir.FunctionType(ir.VoidType(), types), build)
    except summation.KernelRaises:
        _RAISING.add(key)
        return False
    args = [out.data, *out.shape, *out.strides]
    for a in arrays:
        args += [a.data, *broadcast_strides(ctx, a, out.shape)]
    ctx.b.call(kernel, args + [scalars[k][1] for k in params])
    return True


def broadcast_strides(ctx, a: Arr, shape: list) -> list:
    """The strides reading ``a`` broadcast to ``shape`` (checked already): 0 where ``a`` has length 1."""
    b = ctx.b
    pad = len(shape) - a.t.rank
    return [
        b.select(b.icmp_signed("==", d, shape[pad + k]), s, i64(0)) for k, (d, s) in enumerate(zip(a.shape, a.strides))
    ]


def loop_dtype(ctx, node) -> str:
    """The dtype NumPy's ufunc loop computes in: the operands' common dtype (Python scalars weak), which
    is the result's dtype except for comparisons."""
    op = node.kind.split("::")[1]
    if op in COMPARE or op in elements.PREDICATES:
        return result_dtype(*[v.type for v in node.inputs])
    return node.output.type.dtype


def weak_scalar(ctx, op: str, position: int, kind: str, x, dtype: str):
    """A Python scalar operand as NumPy 2's ufunc sees it (NEP 50): converted to the loop's dtype first,
    so ``float32_array * 0.1`` multiplies by float32(0.1). A Python int out of an integer dtype's range is
    NumPy's OverflowError, except where NumPy compares it exactly (comparisons), casts it (``np.where``)
    or treats it as no bound (``np.clip``). Call it outside the element loop: the check runs once."""
    k = kind_of(dtype)
    if k == "f" and op == "where" and kind == "i":  # np.where casts the int (as int64) to the dtype directly
        return "f", conversions.from_memory(ctx, conversions.to_memory(ctx, x, kind, dtype), dtype)
    if k == "f":
        return "f", conversions.round_float(ctx, conversions.cast(ctx, x, kind, "f"), dtype)
    if k == "b" or kind != "i" or dtype not in INT_RANGE or op in COMPARE or op == "where":
        return kind, x
    b = ctx.b
    lo, hi = INT_RANGE[dtype]
    if op == "clip":  # numpy's _clip drops a bound beyond the dtype's range on its own side
        x = (
            b.select(b.icmp_signed("<", x, i64(lo)), i64(lo), x)
            if position == 1
            else b.select(b.icmp_signed(">", x, i64(hi)), i64(hi), x)
        )
    bad = b.or_(b.icmp_signed("<", x, i64(lo)), b.icmp_signed(">", x, i64(hi)))
    ctx.raise_with(bad, OverflowError, f"Python integer {{0}} out of bounds for {dtype}", [x])
    return kind, x


def in_loop_precision(ctx, kind, x, dtype: str):
    """An operator's double result rounded as NumPy's loop for ``dtype`` rounds it: float32 loops round
    to float32, and float16 loops compute in float32 too (then round again to float16 when stored)."""
    if kind == "f" and dtype in ("float32", "float16"):
        return kind, conversions.round_float(ctx, x, "float32")
    return kind, x


def broadcast_shape(ctx, arrays: list[Arr], rank: int) -> list:
    """NumPy's broadcast of the operands' shapes, or ValueError naming them."""
    return broadcast_dims(ctx, [a.shape for a in arrays], rank)


def broadcast_dims(ctx, shapes: list[list], rank: int) -> list:
    """``broadcast_shape`` of operands given by their dimensions (registers)."""
    b = ctx.b
    shape = [i64(1)] * rank
    bad = ir.Constant(I1, 0)
    for dims in shapes:
        pad = rank - len(dims)
        for k, d in enumerate(dims):
            cur = shape[pad + k]
            if isinstance(cur, ir.Constant) and cur.constant == 1:
                shape[pad + k] = d  # the first operand with this axis: no clash, its length
                continue
            clash = b.and_(
                b.icmp_signed("!=", d, cur), b.and_(b.icmp_signed("!=", d, i64(1)), b.icmp_signed("!=", cur, i64(1)))
            )
            bad = b.or_(bad, clash)
            shape[pad + k] = b.select(b.icmp_signed("==", d, i64(1)), cur, d)
    if len(shapes) > 1:
        parts, first = [], 0
        for dims in shapes:
            parts.append(shape_text(len(dims), first) if dims else "()")
            first += len(dims)
        ctx.raise_with(
            bad,
            ValueError,
            "operands could not be broadcast together with shapes " + " ".join(parts) + " ",
            [d for dims in shapes for d in dims],
        )
    return shape


def group_shapes(ctx, node, sub, stop=None) -> dict:
    """The shapes (registers) of a fusion group's array values, its operations broadcast one by one in
    program order: a shape error names the first operation whose operands do not broadcast, as NumPy, which
    runs them one by one, names it. ``stop``: the node to end before (a reduction)."""
    dims = {
        id(p): ctx.arr(outer).shape for p, outer in zip(sub.inputs, node.inputs) if isinstance(outer.type, TensorType)
    }
    for n in sub.nodes:
        if n is stop:
            break
        if n.kind == "prim::Constant" or len(n.outputs) != 1 or not isinstance(n.output.type, TensorType):
            continue
        dims[id(n.output)] = broadcast_dims(
            ctx, [dims[id(v)] for v in n.inputs if isinstance(v.type, TensorType)], n.output.type.rank
        )
    return dims


def elementwise_loops(ctx, out: Arr, inputs, arrays: list[Arr], element, broadcast: bool = True) -> None:
    """Store ``element(load)`` into every element of ``out``; ``load(value)`` reads that operand's element
    (kind, register) at the current index. ``broadcast=False``: the arrays are views of the output's shape
    already (``call_elementwise_kernel``)."""

    def store(kind, x, flat, index):
        if flat is not None:
            ptr = ctx.b.bitcast(ctx.b.gep(out.data, [ctx.b.mul(flat, i64(out.itemsize))]), elem_ptr_type(ctx, out))
        else:
            ptr = ctx.element_ptr(out, index)
        ctx.store_element(ptr, x, kind, out.t.dtype)

    broadcast_loops(ctx, out.shape, inputs, arrays, element, store, out=out, broadcast=broadcast)


def all_flat(ctx, shape: list, arrays: list[Arr]):
    """i1: every array is C-contiguous with exactly this shape (one flat index reaches all of them)."""
    b = ctx.b
    same = ir.Constant(I1, 1)
    for a in arrays:
        same = b.and_(same, views.is_c_contiguous(ctx, a))
        if a.t.rank != len(shape):
            return ir.Constant(I1, 0)
        for d, e in zip(a.shape, shape):
            same = b.and_(same, b.icmp_signed("==", d, e))
    return same


def broadcast_loops(
    ctx,
    shape: list,
    inputs,
    arrays: list[Arr],
    element,
    sink,
    out: Arr | None = None,
    flat_start=None,
    flat: bool = True,
    broadcast: bool = True,
    checked: bool = False,
):
    """Run ``sink(kind, x, flat_index | None, index | None)`` with ``(kind, x) = element(load)`` for every
    index of ``shape``: one flat loop when every array is C-contiguous with exactly this shape (and so is
    ``out``), else a loop nest reading broadcast operands (only that with ``flat=False``: the caller has
    handled the flat case). ``checked``: the arrays are known to broadcast to ``shape`` (it is theirs)."""
    b = ctx.b
    by_value = {id(v): a for v, a in zip([v for v in inputs if isinstance(v.type, TensorType)], arrays)}

    def nested():
        strides = {
            id(a): broadcast_to(ctx, a, shape, None if checked else "") if broadcast else a.strides for a in arrays
        }

        def body(index):
            def load(v):
                a = by_value[id(v)]
                view = Arr(a.t, [a.mi, a.data, *a.shape, *strides[id(a)]])
                ptr = ctx.element_ptr(view, index[len(index) - a.t.rank :])
                return kind_of(a.t.dtype), ctx.load_element(ptr, a.t.dtype)

            kind, x = element(load)
            sink(kind, x, None, index)

        # in one dimension the nest runs only when an operand is strided or broadcast (stride 0): a vector
        # loop LLVM versions on unit strides would never run, and not making one saves a third of a simple
        # operator's LLVM time
        ctx.loop_nest(shape, body, inner_hints=(NO_VECTORIZE,) if len(shape) == 1 else ())

    if not flat:
        nested()
        return
    same = all_flat(ctx, shape, arrays + ([out] if out is not None else []))
    n = ctx.element_count(shape)
    with b.if_else(same, likely=True) as (flat_case, nested_case):
        with flat_case:
            with ctx.for_range(n, flat_start) as i:

                def load(v, i=i):
                    a = by_value[id(v)]
                    ptr = b.bitcast(b.gep(a.data, [b.mul(i, i64(a.itemsize))]), elem_ptr_type(ctx, a))
                    return kind_of(a.t.dtype), ctx.load_element(ptr, a.t.dtype)

                kind, x = element(load)
                sink(kind, x, i, None)
        with nested_case:
            nested()


def elem_ptr_type(ctx, a: Arr):
    return ELEM[a.t.dtype].as_pointer()


def element_op(ctx, op: str, args: list, k: str, dtype: str = "float64"):
    """Apply ``op`` to register values of kind ``k`` (``dtype``: the float loop's precision): (result kind,
    result), by the operator's element rule (elements.py)."""
    return elements.element(ctx, op, args, k, dtype)


def lower_raising_inplace(ctx, node, dst: Arr, dtype: str):
    """``x **= y`` on integers, which raises at a negative exponent, leaving the elements written before it
    as NumPy leaves them. NumPy walks the target in memory order (``in_memory_order``); where the operand
    shares memory with the target without being the very same view, it computes into a temporary written
    back only when every element succeeded: so nothing is written when any exponent is negative, which is
    checked first here (then no element raises, and the operand is read from a copy as usual)."""
    b = ctx.b
    other = node.inputs[1]
    compute = kind_of(dtype)
    message = "Integers to negative integer powers are not allowed."
    if isinstance(other.type, TensorType):
        src = ctx.arr(other)
        strides = broadcast_to(ctx, src, dst.shape, "in place")
        apart = b.or_(b.not_(ctx.overlaps(src, dst)), ctx.same_view(src, dst))
        slots = ctx.alloca_leaves(src.t)
        ctx.store_leaves(slots, src.leaves)
        with b.if_then(b.not_(apart), likely=False):

            def check(index):
                y = ctx.load_element(
                    ctx.element_ptr(
                        Arr(src.t, [src.mi, src.data, *src.shape, *strides]), index[len(index) - src.t.rank :]
                    ),
                    src.t.dtype,
                )
                ctx.raise_if(
                    b.icmp_signed("<", conversions.cast(ctx, y, kind_of(src.t.dtype), "i"), i64(0)), ValueError, message
                )

            ctx.loop_nest(dst.shape, check)
            copy = ctx.alloc(TensorType(src.t.dtype, src.t.rank), src.shape)
            ctx.copy_into(copy, src)
            ctx.store_leaves(slots, copy.leaves)
        source = Arr(src.t, ctx.load_leaves(slots))
        pad = dst.t.rank - src.t.rank
        full = Arr(TensorType(src.t.dtype, dst.t.rank), [source.mi, source.data, *dst.shape, *[i64(0)] * pad, *strides])
        target, operand = ctx.in_memory_order(dst, [full])
    else:
        src = source = None
        scalar = weak_scalar(ctx, "pow", 1, *ctx.scalar_operand(other), dtype)
        (target,) = ctx.in_memory_order(dst, [])

    def body(index):
        x = ctx.load_element(ctx.element_ptr(target, index), dst.t.dtype)
        if src is not None:
            ky, y = kind_of(src.t.dtype), ctx.load_element(ctx.element_ptr(operand, index), src.t.dtype)
        else:
            ky, y = scalar
        args = [conversions.cast(ctx, x, kind_of(dst.t.dtype), compute), conversions.cast(ctx, y, ky, compute)]
        kind, r = in_loop_precision(ctx, *element_op(ctx, "pow", args, compute, dtype), dtype)
        ctx.store_element(ctx.element_ptr(target, index), r, kind, dst.t.dtype)

    ctx.loop_nest(target.shape, body)
    if src is not None:
        ctx.release_temp(source, src)
    return []


def vector_minmax(ctx, name: str, a: Arr, out_index: list, reduce_dims: list, acc, exact_body) -> None:
    """A float64 max/min over ``reduce_dims`` into ``acc``, vectorized: LLVM vectorizes ``maxnum``/``minnum``
    under ``nnan nsz`` flags, which here are promises kept, because the loop also records whether any
    element is NaN and the result is used only when none is and it is not zero. Then it is exactly NumPy's
    (equal nonzero values have equal bits). A NaN (NumPy's result is the first NaN) or a zero result (its sign
    is that of the last zero, NumPy's maximum keeping the later of equal values) runs ``exact_body``, the
    sequential loop, again from the start."""
    b = ctx.b
    fn = ctx.mod.intrinsic("maxnum" if name == "max" else "minnum")
    best, seen_nan = ctx.alloca(F64), ctx.alloca(I1)
    b.store(f64(float("-inf") if name == "max" else float("inf")), best)
    b.store(ir.Constant(I1, 0), seen_nan)

    def body(inner):
        index = list(out_index)
        for d, i in zip(reduce_dims, inner):
            index.insert(d, i)
        x = ctx.load_element(ctx.element_ptr(a, index), "float64")
        b.store(b.call(fn, [b.load(best), x], fastmath=("nnan", "nsz")), best)
        b.store(b.or_(b.load(seen_nan), scalar_ops.isnan(ctx, x)), seen_nan)

    ctx.loop_nest([a.shape[d] for d in reduce_dims], body)
    found = b.load(best)
    # (a select, not an ``and``: with a NaN seen, ``found`` is poison and must not be looked at)
    usable = b.select(b.load(seen_nan), ir.Constant(I1, 0), b.fcmp_ordered("!=", found, f64(0.0)))
    with b.if_else(usable) as (then, otherwise):
        with then:
            b.store(found, acc)
        with otherwise:
            ctx.loop_nest([a.shape[d] for d in reduce_dims], exact_body)


def check_nonempty(ctx, name: str, count) -> None:
    """NumPy's ValueError for reductions without an identity over no elements."""
    empty = ctx.b.icmp_signed("==", count, i64(0))
    if name in ("max", "min"):
        what = "maximum" if name == "max" else "minimum"
        ctx.raise_if(empty, ValueError, f"zero-size array to reduction operation {what} which has no identity")
    elif name in ("argmax", "argmin"):
        ctx.raise_if(empty, ValueError, f"attempt to get {name} of an empty sequence")


def round_to(ctx, value, kind, dtype):
    """A value as the scalar NumPy returns: rounded through ``dtype`` (float32 sums), in register kind."""
    k = kind_of(dtype)
    value = conversions.cast(ctx, value, kind, k)
    if k == "f":
        value = conversions.round_float(ctx, value, dtype)
    return k, value


def reduction_init(ctx, name, k):
    if name in ("sum", "mean", "any"):
        return {"f": f64(0.0), "b": ir.Constant(I1, 0)}.get(k, i64(0))
    if name in ("prod", "all"):
        return {"f": f64(1.0), "b": ir.Constant(I1, 1)}.get(k, i64(1))
    if name in ("max", "argmax"):
        return {"f": f64(float("-inf")), "b": ir.Constant(I1, 0)}.get(k, i64(INT64_MIN))
    return {"f": f64(float("inf")), "b": ir.Constant(I1, 1)}.get(k, i64(2**63 - 1))


def reduction_step(ctx, name, acc, x, k, res: str):
    """(new accumulator, whether x became the best so far (arg reductions) or None); ``res``: the
    reduction's result dtype."""
    b = ctx.b
    if name in ("sum", "mean"):
        return (b.fadd(acc, x) if k == "f" else b.or_(acc, x) if k == "b" else b.add(acc, x)), None
    if name == "prod":
        if k == "f" and res == "float32":  # NumPy multiplies in float32, one product at a time
            return conversions.round_float(ctx, b.fmul(acc, x), res), None
        return (b.fmul(acc, x) if k == "f" else b.and_(acc, x) if k == "b" else b.mul(acc, x)), None
    if name == "any":
        return b.or_(acc, x), None
    if name == "all":
        return b.and_(acc, x), None
    greater = name in ("max", "argmax")
    if k == "f":
        # NaN wins and stays; otherwise better values replace: for argmax/argmin strictly (the first index of
        # equals), for max/min also equal ones, as NumPy's maximum(acc, x) returns x on a tie (-0.0 vs 0.0);
        # its float16 loop keeps the first
        strict = name.startswith("arg") or res == "float16"
        better = b.or_(
            b.fcmp_ordered((">" if greater else "<") + ("" if strict else "="), x, acc),
            b.and_(scalar_ops.isnan(ctx, x), b.not_(scalar_ops.isnan(ctx, acc))),
        )
    elif k == "b":
        better = b.icmp_unsigned(">" if greater else "<", x, acc)
    else:
        better = b.icmp_signed(">" if greater else "<", x, acc)
    return b.select(better, x, acc), (better if name.startswith("arg") else None)


# -- lowering rules ----------------------------------------------------------------------------------------------------


# -- element-wise -----------------------------------------------------------------------------------
@lowers_array(*ELEMENTWISE)
def lower_elementwise(ctx, node):
    op = node.kind.split("::")[1]
    out_t = node.output.type
    if not isinstance(out_t, TensorType):
        if all(v.type.rank == 0 for v in node.inputs if isinstance(v.type, TensorType)):
            return zero_d_elementwise(ctx, node, op)
        raise LoweringError(node.kind, f"an array operand giving {out_t} is not supported", node.source)
    arrays = [ctx.arr(v) for v in node.inputs if isinstance(v.type, TensorType)]
    shape = broadcast_shape(ctx, arrays, out_t.rank)
    out = ctx.alloc(out_t, shape)
    dtype = loop_dtype(ctx, node)
    scalars = {
        k: weak_scalar(ctx, op, k, *ctx.scalar_operand(v), dtype)
        for k, v in enumerate(node.inputs)
        if not isinstance(v.type, TensorType)
    }
    if not call_elementwise_kernel(ctx, node, dtype, out, arrays, scalars):
        elementwise_loops(ctx, out, node.inputs, arrays, element_of(ctx, node, dtype, scalars))
    return [out.leaves]


# -- in place: x += y -------------------------------------------------------------------------------
@lowers_array(*INPLACE)
def lower_inplace(ctx, node):
    op = REGISTRY[node.kind].extra["inplace_of"]
    dst = ctx.arr(node.inputs[0])
    other = node.inputs[1]
    # the loop's dtype (a 0-d operand asked as 1-d: NumPy's 0-d result is a scalar, its loop the same)
    dtype = (
        lookup(op)
        .result_types(
            [TensorType(v.type.dtype, 1) if isinstance(v.type, TensorType) else v.type for v in node.inputs], {}
        )[0]
        .dtype
    )
    compute = kind_of(dtype)
    name = op.split("::")[1]
    if name == "pow" and compute == "i":  # an element may raise: NumPy's order and temporaries matter
        return lower_raising_inplace(ctx, node, dst, dtype)
    if isinstance(other.type, TensorType):
        src0 = ctx.arr(other)
        src = ctx.unaliased(src0, dst)
        strides = broadcast_to(ctx, src, dst.shape, "in place")
        view = Arr(src.t, [src.mi, src.data, *src.shape, *strides])
    else:
        src0 = src = None
        scalar = weak_scalar(ctx, name, 1, *ctx.scalar_operand(other), dtype)

    def body(index):
        x = ctx.load_element(ctx.element_ptr(dst, index), dst.t.dtype)
        if src is not None:
            y = ctx.load_element(ctx.element_ptr(view, index[len(index) - src.t.rank :]), src.t.dtype)
            ky = kind_of(src.t.dtype)
        else:
            ky, y = scalar
        args = [conversions.cast(ctx, x, kind_of(dst.t.dtype), compute), conversions.cast(ctx, y, ky, compute)]
        op_name = "pow_scalar" if name == "pow" and src is None else name  # x **= s: NumPy's fast powers
        kind, r = in_loop_precision(ctx, *element_op(ctx, op_name, args, compute, dtype), dtype)
        ctx.store_element(ctx.element_ptr(dst, index), r, kind, dst.t.dtype)

    ctx.loop_nest(dst.shape, body)
    if src is not None:
        ctx.release_temp(src, src0)
    return []


# -- reductions -----------------------------------------------------------------------------------
@lowers_array(*REDUCTIONS)
def lower_reduction(ctx, node):
    b = ctx.b
    name = node.kind.split("::")[1]
    a = ctx.arr(node.inputs[0])
    axis = node.attrs.get("axis")
    res = reduction_dtype(node.kind, a.t, axis)
    if summation.pairwise_reducible(name, a.t.dtype):
        return sum_reductions.lower_pairwise_reduction(ctx, node, name, a, axis, res)
    if axis is not None:
        axis %= a.t.rank
    reduce_dims = list(range(a.t.rank)) if axis is None else [axis]
    keep = [d for d in range(a.t.rank) if d not in reduce_dims]
    out_t = node.output.type
    out = ctx.alloc(out_t, [a.shape[d] for d in keep]) if isinstance(out_t, TensorType) else None
    count = ctx.element_count([a.shape[d] for d in reduce_dims])
    check_nonempty(ctx, name, count)
    kind = kind_of(a.t.dtype)
    acc_kind = kind_of(res) if name not in ("argmax", "argmin", "max", "min") else kind
    if name == "mean":
        acc_kind = "f"
    result_slot = []

    def reduce_at(out_index):
        acc = ctx.alloca(F64 if acc_kind == "f" else I1 if acc_kind == "b" else I64)
        pos = ctx.alloca(I64)
        b.store(reduction_init(ctx, name, acc_kind), acc)
        b.store(i64(0), pos)
        counter = ctx.alloca(I64)
        b.store(i64(0), counter)

        def body(inner):
            index = list(out_index)
            for d, i in zip(reduce_dims, inner):
                index.insert(d, i)
            x = conversions.cast(ctx, ctx.load_element(ctx.element_ptr(a, index), a.t.dtype), kind, acc_kind)
            cur = b.load(acc)
            new, better = reduction_step(ctx, name, cur, x, acc_kind, res)
            b.store(new, acc)
            if better is not None:
                b.store(b.select(better, b.load(counter), b.load(pos)), pos)
            b.store(b.add(b.load(counter), i64(1)), counter)

        if name in ("max", "min") and acc_kind == "f" and a.t.dtype == "float64":
            vector_minmax(ctx, name, a, out_index, reduce_dims, acc, body)
        else:
            ctx.loop_nest([a.shape[d] for d in reduce_dims], body)
        value = b.load(pos) if name in ("argmax", "argmin") else b.load(acc)
        rkind = "i" if name in ("argmax", "argmin") else acc_kind
        if name == "mean":
            value = b.fdiv(value, b.sitofp(count, F64))
        if out is not None:
            ctx.store_element(ctx.element_ptr(out, out_index), value, rkind, out_t.dtype)
        else:
            result_slot.append(round_to(ctx, value, rkind, res))

    if out is not None:
        ctx.loop_nest(out.shape, reduce_at)
        return [out.leaves]
    reduce_at([])
    kind_out, value = result_slot[0]
    return [ctx.scalar_result(value, kind_out, out_t)]


# -- broadcasting one array to a shape ---
def broadcast_to(ctx, src: Arr, shape: list, what: str | None):
    """Strides that read ``src`` broadcast to ``shape`` (0 where src has length 1), or NumPy's ValueError
    (``what`` None: the caller knows that src broadcasts to shape)."""
    b = ctx.b
    lead = max(src.t.rank - len(shape), 0)  # a copy's source may have extra leading dimensions of length 1
    pad = len(shape) - src.t.rank + lead
    strides = [
        b.select(b.icmp_signed("==", d, shape[pad + k]), s, i64(0))
        for k, (d, s) in enumerate(zip(src.shape[lead:], src.strides[lead:]))
    ]
    if what is None:
        return strides
    bad = ir.Constant(I1, 0)
    for d in src.shape[:lead]:
        bad = b.or_(bad, b.icmp_signed("!=", d, i64(1)))
    for k, d in enumerate(src.shape[lead:]):
        out = shape[pad + k]
        bad = b.or_(bad, b.and_(b.icmp_signed("!=", d, out), b.icmp_signed("!=", d, i64(1))))
    if what == "in place" and src.t.rank:  # x += y: NumPy's two messages, the output operand named
        inplace_broadcast_errors(ctx, src, shape, bad)
        return strides
    message = (
        (
            f"could not broadcast input array from shape {shape_text(src.t.rank, 0)} into shape "
            f"{shape_text(len(shape), src.t.rank)}"
        )
        if what == "copy"
        else what
    )
    if src.t.rank:
        ctx.raise_with(bad, ValueError, message, [*src.shape, *shape])
    return strides


def inplace_broadcast_errors(ctx, src: Arr, shape: list, bad) -> None:
    """``x op= y`` with y not broadcastable to x: shapes that do not broadcast together, or whose broadcast
    shape is not x's (NumPy's wording for each)."""
    b, n, pad = ctx.b, len(shape), len(shape) - src.t.rank
    clash = ir.Constant(I1, 0)
    wide = list(shape)
    for k, d in enumerate(src.shape):
        out = shape[pad + k]
        clash = b.or_(
            clash,
            b.and_(
                b.icmp_signed("!=", d, out), b.and_(b.icmp_signed("!=", d, i64(1)), b.icmp_signed("!=", out, i64(1)))
            ),
        )
        wide[pad + k] = b.select(b.icmp_signed("==", out, i64(1)), d, out)
    together = shape_text(n, 0)
    ctx.raise_with(
        clash,
        ValueError,
        f"operands could not be broadcast together with shapes {together} {shape_text(src.t.rank, n)} {together} ",
        [*shape, *src.shape],
    )
    ctx.raise_with(
        bad,
        ValueError,
        f"non-broadcastable output operand with shape {shape_text(n, 0)} doesn't "
        f"match the broadcast shape {shape_text(n, n)}",
        [*shape, *wide],
    )
