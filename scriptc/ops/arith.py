"""Arithmetic, comparison and logical operators on Python scalars and arrays (NumPy broadcasting and NEP 50
promotion). Scalars follow Python: ``//`` and ``%`` floor, ``/`` on ints is a float, division by zero raises."""

from __future__ import annotations

import operator

import numpy as np

from ..ir.registry import (
    ZERO_DERIVATIVE,
    Batch,
    Effect,
    OpTypeError,
    broadcast_shapes,
    by_sample,
    lookup,
    no_outputs,
    register,
    shape_of,
)
from ..ir.types import BOOL, FLOAT, INT, STR, TensorType, result_dtype, scalar_type


COMPLEX_POWER = "a negative number raised to a fractional power is complex, which scriptc does not support"


def _truediv(a, b, ieee: bool = False):
    """Python's ``a / b``. ``ieee``: IEEE division on scalars (x / 0.0 is an infinity or NaN, not ZeroDivisionError),
    which derivative rules divide with: the derivative of sqrt at 0 is inf, as jax and torch give."""
    if ieee and not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.float64(a) / np.float64(b))
    return operator.truediv(a, b)


def _pow(a, b):
    if type(b) is int and type(a) is int and b < 0:
        raise ValueError("integers to negative integer powers are not allowed")
    r = a**b
    if type(r) is complex:
        raise ValueError(COMPLEX_POWER)
    return r


# Derivative rules (see ``OpDef.vjp``): adjoints of the operands, before the transform sums them over
# broadcast axes back to each operand's shape.
def _add_vjp(e, g, out, a, b):
    return g, g


def _sub_vjp(e, g, out, a, b):
    return g, e.neg(g)


def _mul_vjp(e, g, out, a, b):
    return e.mul(g, b), e.mul(g, a)


def _div_vjp(e, g, out, a, b, ieee: bool = False):
    div = e.ieee_div if ieee else e.div  # a derivative rule's IEEE division differentiates as one (grad of grad)
    return div(g, b), e.neg(div(e.mul(g, out), b))


def _remainder_vjp(e, g, out, a, b):  # a % b = a - floor(a / b) * b: the floor is piecewise constant
    return g, e.neg(e.mul(g, e.op("aten::floordiv", a, b)))


def _pow_vjp(e, g, out, a, b):
    k = e.constant_of(b)
    if k == 2:  # x ** 2, the squares of losses: 2 x
        da = e.mul(g, e.mul(a, e.const(2.0)))
    elif k == 1:
        da = g
    elif k == 0:  # x ** 0 is 1 everywhere, 0 ** 0 included
        da = e.mul(g, e.const(0.0))
    else:
        da = e.mul(g, e.mul(b, e.pow_ieee(a, e.sub(b, e.const(1)))))
    return da, (e.mul(g, e.mul(out, e.log_or_zero(a))) if e.differentiable(b) else None)


def _lshift(a, b):
    """``a << b``; ints by 64 or more give 0 (their 64-bit wrap) without making the huge int first."""
    if type(b) is int and b >= 64 and type(a) in (int, bool):
        return 0
    return operator.lshift(a, b)


# name, Python operator, ufunc used for the in-place form (``x += y`` on an array), derivative rule
BINARY = [
    ("add", operator.add, np.add, _add_vjp),
    ("sub", operator.sub, np.subtract, _sub_vjp),
    ("mul", operator.mul, np.multiply, _mul_vjp),
    ("div", _truediv, np.true_divide, _div_vjp),
    ("floordiv", operator.floordiv, np.floor_divide, ZERO_DERIVATIVE),
    ("remainder", operator.mod, np.remainder, _remainder_vjp),
    ("pow", _pow, np.power, _pow_vjp),
    ("__and__", operator.and_, np.bitwise_and, None),
    ("__or__", operator.or_, np.bitwise_or, None),
    ("__xor__", operator.xor, np.bitwise_xor, None),
    ("__lshift__", _lshift, np.left_shift, None),
    ("__rshift__", operator.rshift, np.right_shift, None),
]
COMPARE = [
    ("eq", operator.eq),
    ("ne", operator.ne),
    ("lt", operator.lt),
    ("le", operator.le),
    ("gt", operator.gt),
    ("ge", operator.ge),
]


# Batching rules (``OpDef.batch``): element-wise by default. Python's float ** on batched scalars is
# np.float_power (libm's pow, as CPython calls), not np.power (whose x ** 2 is x * x).
def _pow_batch(b, node, ins):
    if node.outputs[0].type == FLOAT and not any(isinstance(v.type, TensorType) for v in node.inputs):
        args = [b.cast(v, "float64") if b.batched(v) else v for v in ins]
        return [b.op("aten::float_power", *args)]
    base, exponent = ins
    if b.mask is not None and b.batched(exponent) and (exponent.type.dtype or "").startswith(("int", "uint")):
        # integers to negative powers raise: examples that do not run this (inactive) get exponent 1
        rank = node.inputs[1].type.rank if isinstance(node.inputs[1].type, TensorType) else 0
        exponent = b.mark(b.masked(b.align(exponent, rank), b.const(1), rank), node.inputs[1].type)
    return [b.elementwise(node, [base, exponent])]


def _inplace_batch(b, node, ins):
    """``x op= y`` with ``y`` aligned to ``x``'s examples; under a mask, computed then written where active."""
    x, y = ins
    xt, yt = node.inputs[0].type, node.inputs[1].type
    if b.batched(y):
        if not isinstance(yt, TensorType):
            y = b.cast(y, result_dtype(xt, yt))
        y = b.align(y, xt.rank)
    if b.mask is None:
        b.node(node.kind, [x, y], [])
    else:
        new = b.op(lookup(node.kind).extra["inplace_of"], x, y)
        b.node("aten::copy_", [x, b.masked(new, x, xt.rank)], [])
    return []


_BATCH = {"pow": Batch.custom(_pow_batch)}

for _name, _fn, _ufunc, _vjp in BINARY:
    register(
        f"aten::{_name}(Number|Tensor self, Number|Tensor other) -> Number|Tensor",
        batch=_BATCH.get(_name, Batch.ELEMENTWISE),
        impl=_fn,
        infer=by_sample(_fn),
        effect=Effect.RAISES,
        elementwise=True,
        ufunc=_ufunc,
        vjp=_vjp,
    )

    def _inplace(self, other, _u=_ufunc):
        _u(self, other, out=self)

    def _inplace_rule(self_t, other_t, _impl=_inplace):
        if not isinstance(self_t, TensorType):
            raise OpTypeError("in-place arithmetic needs an array on the left")
        if (
            isinstance(other_t, TensorType) and None not in (self_t.rank, other_t.rank) and other_t.rank > self_t.rank
        ):  # (the sample values' shapes would be quoted: (1,), (1, 1))
            raise OpTypeError(
                f"non-broadcastable output operand: the result of broadcasting an array of rank "
                f"{other_t.rank} cannot be written into the array of rank {self_t.rank} in place"
            )
        by_sample(_impl)(self_t, other_t)
        return []

    register(
        f"aten::{_name}_(Tensor self, Number|Tensor other) -> ()",
        impl=_inplace,
        infer=_inplace_rule,
        effect=Effect.WRITES,
        inplace_of=f"aten::{_name}",
        shape=no_outputs,
        batch=Batch.custom(_inplace_batch),
        numpy_scalars=True,
    )

for _name, _fn in COMPARE:
    register(
        f"aten::{_name}(Number|Tensor self, Number|Tensor other) -> bool|Tensor",
        impl=_fn,
        infer=by_sample(_fn),
        elementwise=True,
        vjp=ZERO_DERIVATIVE,
    )


def _scalar_only(name, fn, result=None):
    def rule(*types):
        if any(isinstance(t, TensorType) for t in types):
            raise OpTypeError(f"{name} of an array is ambiguous")
        if STR in types:
            only = ' except of a constant (int("42"))' if name in ("int()", "float()") else ""
            raise OpTypeError(f"{name} of a str is not supported{only}")
        if result is not None:
            return result
        return by_sample(fn)(*types)

    return rule


register(
    "aten::neg(Number|Tensor self) -> Number|Tensor",
    impl=operator.neg,
    infer=by_sample(operator.neg),
    elementwise=True,
    vjp=lambda e, g, out, a: (e.neg(g),),
)
register(
    "aten::bitwise_not(Number|Tensor self) -> Number|Tensor",
    impl=operator.invert,
    infer=by_sample(operator.invert),
    elementwise=True,
)
register(
    "aten::__not__(bool self) -> bool",
    impl=operator.not_,
    infer=_scalar_only("not", None, BOOL),
    batch=Batch.custom(lambda b, node, ins: [b.op("aten::bitwise_not", ins[0])]),
)


def _matmul_shape(types, consts):
    """np.matmul: 1-d operands gain and lose a dimension; leading (batch) dimensions broadcast."""
    a, b = shape_of(types[0]), shape_of(types[1])
    if a is None or b is None or not a or not b:
        return [None]
    if len(a) == 1 and len(b) == 1:
        return [()]
    if len(a) == 1:
        return [b[:-2] + b[-1:]]
    if len(b) == 1:
        return [a[:-1]]
    batch = broadcast_shapes(a[:-2], b[:-2])
    return [None if batch is None else batch + (a[-2], b[-1])]


def _dot_shape(types, consts):
    """np.dot: a 0-d operand multiplies; otherwise sum over a's last and b's second-to-last dimension."""
    a, b = shape_of(types[0]), shape_of(types[1])
    if a is None or b is None:
        return [None]
    if not a or not b:
        return [b if not a else a]
    if len(b) == 1:
        return [a[:-1]]
    return [a[:-1] + b[:-2] + b[-1:]]


def _matmul_vjp(e, g, out, a, b):
    """Vectors and matrices: the adjoint of one operand is the product of ``g`` with the other, transposed;
    a vector operand's is summed over the other's rows (an outer product where the result is a vector)."""
    ra, rb = a.type.rank, b.type.rank
    if ra > 2 or rb > 2:
        raise NotImplementedError("products of arrays of rank 3 and more")
    if ra == 1 and rb == 1:
        return e.mul(g, b), e.mul(g, a)
    if ra == 2 and rb == 1:
        return e.mul(e.unsqueeze(g, 1), e.unsqueeze(b, 0)), e.op("aten::matmul", e.op("aten::numpy_T", a), g)
    if ra == 1:
        return e.op("aten::matmul", b, g), e.mul(e.unsqueeze(a, 1), e.unsqueeze(g, 0))
    return e.op("aten::matmul", g, e.op("aten::numpy_T", b)), e.op("aten::matmul", e.op("aten::numpy_T", a), g)


def _matmul_batch(b, node, ins):
    """Each example's product as one item of a stacked matmul, with the same core shapes as the per-example
    product (a batched vector becomes a 1-row or 1-column matrix, dropped after): NumPy's and OpenBLAS's loop
    then runs the per-example routine for every example, so the results are the per-example results bit for
    bit. Unit dimensions after the batch dimension keep it aligned against the other operand's leading ones."""
    a, c = ins
    ra, rc = node.inputs[0].type.rank, node.inputs[1].type.rank
    if ra == 0 or rc == 0:
        return b.lanes(node, ins)
    batched_a, batched_c = b.batched(a), b.batched(c)
    row = batched_a and ra == 1
    col = batched_c and rc == 1
    if row:
        a = b.op("aten::unsqueeze", a, dim=1)
    if col:
        c = b.op("aten::unsqueeze", c, dim=2)
    stack_a, stack_c = max(ra - 2, 0), max(rc - 2, 0)
    width = max(stack_a, stack_c)
    for _ in range(width - stack_a if batched_a else 0):
        a = b.op("aten::unsqueeze", a, dim=1)
    for _ in range(width - stack_c if batched_c else 0):
        c = b.op("aten::unsqueeze", c, dim=1)
    out = b.op("aten::matmul", a, c)
    if col:
        out = b.op("aten::select", out, b.const(0), dim=out.type.rank - 1)
    if row:
        last = col or rc == 1  # the product's columns are gone: the row dimension is last
        out = b.op("aten::select", out, b.const(0), dim=out.type.rank - (1 if last else 2))
    return [b.fix_dtype(out, node.outputs[0].type)]


def _dot_batch(b, node, ins):
    """np.dot is np.matmul for 1-D and 2-D operands; other ranks run per example."""
    if {node.inputs[0].type.rank, node.inputs[1].type.rank} <= {1, 2}:
        return _matmul_batch(b, node, ins)
    return b.lanes(node, ins)


register(
    "aten::matmul(Tensor self, Tensor other) -> Number|Tensor",
    impl=np.matmul,
    infer=by_sample(np.matmul),
    py=(np.matmul,),
    shape=_matmul_shape,
    batch=Batch.custom(_matmul_batch),
    vjp=_matmul_vjp,
)
register(
    "aten::dot(Tensor self, Tensor other) -> Number|Tensor",
    impl=np.dot,
    infer=by_sample(np.dot),
    py=(np.dot,),
    shape=_dot_shape,
    batch=Batch.custom(_dot_batch),
    vjp=_matmul_vjp,
)  # np.dot is matmul for ranks 1 and 2

# -- conversions between scalars (int(), float(), bool()) ---------------------------------------------------
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _to_int(x):
    v = int(x)
    if not INT64_MIN <= v <= INT64_MAX:
        raise OverflowError("int too large to convert to a 64-bit int")
    return v


# Batched: casts of the examples' scalars (int() of a float truncates as astype does; NaN, inf and floats
# beyond int64 give NumPy's cast instead of CPython's error).
def _cast_batch(dtype):
    return Batch.custom(lambda b, node, ins: [b.cast(ins[0], dtype)])


register(
    "aten::Int(Number self) -> int",
    impl=_to_int,
    infer=_scalar_only("int()", None, INT),
    py=(int,),
    batch=_cast_batch("int64"),
    effect=Effect.RAISES,
    numpy_scalars=True,
)  # int(nan), int(inf), int(1e300)
register(
    "aten::Float(Number self) -> float",
    impl=float,
    infer=_scalar_only("float()", None, FLOAT),
    batch=_cast_batch("float64"),
    numpy_scalars=True,
    py=(float,),
    vjp=lambda e, g, out, a: (g,),
)
register(
    "aten::Bool(Number self) -> bool",
    impl=bool,
    infer=_scalar_only("bool()", None, BOOL),
    py=(bool,),
    batch=Batch.custom(lambda b, node, ins: [b.op("aten::ne", ins[0], b.const(0))]),
    numpy_scalars=True,
)


def _numpy_scalar(x, *, dtype, cast=False):
    """``np.int32(x)``: a Python int out of the dtype's range is NumPy's OverflowError; a NumPy scalar or a float
    converts as NumPy casts it (wrapping, rounding, truncating). ``cast``: ``x`` is an int64 or float64 NumPy
    scalar (an array's element, held as the Python scalar), cast too."""
    with np.errstate(all="ignore"):
        if cast and not isinstance(x, np.generic):
            x = np.int64(x) if isinstance(x, int) else np.float64(x)
        return np.dtype(dtype).type(x)


def _numpy_scalar_rule(t, *, dtype, cast=False):
    if not t.is_scalar:
        raise OpTypeError(f"np.{dtype}() of {t} is not a scalar conversion")
    return scalar_type(dtype)


def _numpy_scalar_batch(b, node, ins):
    """The examples' scalars cast to the dtype (an out-of-range Python int is then wrapped, as astype does)."""
    return [b.mark(b.op("aten::to", ins[0], dtype=node.attrs["dtype"]), node.outputs[0].type)]


register(
    "aten::numpy_scalar(Number self, *, str dtype, bool cast) -> Number",
    impl=_numpy_scalar,
    infer=_numpy_scalar_rule,
    effect=Effect.RAISES,
    numpy_scalars=True,
    vjp=lambda e, g, out, a, **attrs: (g,),
    batch=Batch.custom(_numpy_scalar_batch),
)
