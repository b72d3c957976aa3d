"""Explicit SIMD for fused float64 and float32 groups: when every operand is contiguous, the group runs W elements
at a time on LLVM vectors, calling glibc's libmvec for exp/log/sin/... (its double variants for float64, its float
variants for float32; within 4 ulp, as NumPy's own SIMD loops), and the scalar loop finishes the last n % W
elements. W is the widest libmvec variant the CPU runs: 8 doubles or 16 floats with AVX-512, 4 or 8 with AVX2, 2
or 4 with SSE. A float32 group (every array operand float32, Python scalars rounded to float32 first, as NumPy's
ufuncs convert them) computes in float32: its exact operations (+ - * /, sqrt, comparisons, where, maximum,
minimum, ...) give the scalar loop's bits, which rounds each double result to float32 (double has more than twice
float's precision, so that rounding is the float32 operation's). Groups using anything else (integers, float16,
floor division, ...) stay scalar. A group ending in a full sum computes its elements the same way
(summation.py), so it sums what the element-wise loop stores: ``simd_width`` (float64 groups only) is what its
callers that load and store doubles ask; ``simd_vector`` gives the vector type of either kind of group."""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ....ir.core import is_constant
from ....ir.types import FLOAT, INT, TensorType
from ....ops.mathfns import C_MATH
from .common import F64, INTRINSIC as SCALAR_INTRINSIC, i64
from .array_value import F32
from ..runtime.engine import engine
from . import array_math, elements, scalar_ops

ARITH = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
INTRINSIC = SCALAR_INTRINSIC | {"abs"}
LIBMVEC = {c.name for c in C_MATH.values() if c.nargs == 1 and c.vector}
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
OTHER = {"neg", "maximum", "minimum", "where", "pow"}
ELEMENT = {"float64": F64, "float32": F32}
SUFFIX = {"float64": "", "float32": "f"}  # libmvec's name of a function's variant (engine.vector_math)
# float32 functions computed by libmvec's double variant, two half vectors widened and the results rounded to
# float32 (as the scalar loop rounds libm's double result): glibc's float variant of log is within 4 ulp of the
# correctly rounded value, as NumPy's own float32 log is, but the two err in opposite directions near 1 (7 ulp
# apart, measured over 4M arguments); the others' float variants were within 4 ulp of NumPy's, and twice as fast
THROUGH_DOUBLE = {"log"}


def splat_constant(v) -> float | None:
    """The number a vector repeats when it is the ``splat`` of a constant (see array_math.constant_number)."""
    if isinstance(v, ir.ShuffleVector) and isinstance(v.operands[0], ir.InsertElement):
        return elements.constant_number(v.operands[0].operands[1])
    if isinstance(v, ir.Constant) and isinstance(v.constant, list):
        values = {elements.constant_number(c) for c in v.constant}
        return values.pop() if len(values) == 1 else None
    return None


def lane_value(value, element) -> float:
    """A Python number as a lane of ``element`` holds it (float32: rounded once, to nearest)."""
    x = float(value)
    if element == F32:
        with np.errstate(over="ignore"):
            x = float(np.float32(x))
    return x


def vector_dtype(vec: ir.VectorType) -> str:
    return "float32" if vec.element == F32 else "float64"


def itemsize(vec: ir.VectorType) -> int:
    """Bytes per lane (the arrays' item size, and the alignment their data has)."""
    return 4 if vec.element == F32 else 8


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def simd_width(ctx, sub, stop=None) -> int | None:
    """Lanes for a float64 group (its nodes before ``stop``, a reduction ending it), or None when it must
    stay scalar or is not float64 (callers that load and store doubles)."""
    vec = simd_vector(ctx, sub, stop, dtypes=("float64",))
    return vec.count if vec is not None else None


def simd_vector(ctx, sub, stop=None, dtypes=("float64", "float32")) -> ir.VectorType | None:
    """The vector type this group runs on (its nodes before ``stop``), or None when it must stay scalar:
    its array operands and results all have one dtype of ``dtypes``."""
    vm = engine().vector_math
    dtype = next((v.type.dtype for v in sub.inputs if isinstance(v.type, TensorType)), None)
    if dtype not in dtypes or f"exp{SUFFIX[dtype]}" not in vm:
        return None
    suffix = SUFFIX[dtype]
    lanes = vm[f"exp{suffix}"][0][1]
    for v in sub.inputs:
        if isinstance(v.type, TensorType):
            if v.type.dtype != dtype:
                return None
        elif v.type not in (FLOAT, INT):
            return None
    for n in sub.nodes:
        if n is stop:
            break
        op = n.kind.split("::")[1]
        if n.kind == "prim::Constant":
            if n.output.type not in (FLOAT, INT):
                return None
            continue
        t = n.output.type
        if not isinstance(t, TensorType):
            return None
        if op in COMPARE:
            if not all(u.user.kind == "aten::where" and u.index == 0 for u in n.output.uses):
                return None
            continue
        if t.dtype != dtype:
            return None
        if op == "pow" and not isinstance(n.inputs[1].type, TensorType) and not is_constant(n.inputs[1]):
            return None  # a variable Python scalar exponent: NumPy's fast powers are decided per call
        if op == "where" and dtype == "float32" and any(v.type == INT for v in n.inputs[1:]):
            return None  # np.where casts an int to float32 directly (weak_scalar), not through double
        if op in LIBMVEC or op == "pow":
            variant, width = (op, lanes // 2) if suffix and op in THROUGH_DOUBLE else (op + suffix, lanes)
            if not any(width == w for _, w in vm.get(variant, [])):
                return None
        elif op not in ARITH and op not in INTRINSIC and op not in OTHER:
            return None
    return ir.VectorType(ELEMENT[dtype], lanes)


def simd_loop(ctx, node, sub, out, arrays, shape):
    """Emit the vector loop when possible; the index the scalar loop starts from (0 if none ran)."""
    vec = simd_vector(ctx, sub)
    if vec is None:
        return None
    b = ctx.b
    lanes = vec.count
    n = ctx.element_count(shape)
    flat = array_math.all_flat(ctx, shape, arrays + [out])
    end = b.select(flat, b.sub(n, b.srem(n, i64(lanes))), i64(0))
    chunks = b.sdiv(end, i64(lanes))
    with ctx.for_range(chunks) as c:
        i = b.mul(c, i64(lanes))
        env = simd_values(ctx, node, sub, i, vec)
        simd_store(ctx, out.data, i, env[id(sub.outputs[0])])
    return end


def simd_pointer(ctx, data, i, vec):
    """Pointer to the vector of elements i..i+lanes-1 of the contiguous data ``data`` (an i8*)."""
    b = ctx.b
    return b.bitcast(b.gep(data, [b.mul(i, i64(itemsize(vec)))]), vec.as_pointer())


def simd_load(ctx, data, i, vec):
    return ctx.b.load(simd_pointer(ctx, data, i, vec), align=itemsize(vec))


def simd_store(ctx, data, i, x) -> None:
    ctx.b.store(x, simd_pointer(ctx, data, i, x.type), align=itemsize(x.type))


def simd_scalar(ctx, x, t, vec):
    """A Python scalar operand (register ``x`` of type ``t``) as a vector of the group's element type:
    converted as ``weak_scalar`` converts it for a float loop (an int through double; float32: rounded)."""
    x = scalar_ops.to_f64(ctx, x, t)
    if vec.element == F32:
        c = elements.constant_number(x)
        x = ir.Constant(F32, lane_value(c, F32)) if c is not None else ctx.b.fptrunc(x, F32)
    return splat(ctx, x, vec)


def simd_values(ctx, node, sub, i, vec, stop=None) -> dict:
    """The group's values (by id of the subgraph value) at elements i..i+lanes-1 of its contiguous
    operands, for the nodes before ``stop``."""
    env = {}
    for p, outer in zip(sub.inputs, node.inputs):
        if isinstance(outer.type, TensorType):
            env[id(p)] = simd_load(ctx, ctx.arr(outer).data, i, vec)
        else:
            env[id(p)] = simd_scalar(ctx, ctx.scalar(outer), outer.type, vec)
    for m in sub.nodes:
        if m is stop:
            break
        if m.kind == "prim::Constant":
            env[id(m.output)] = simd_constant(ctx, m, vec)
            continue
        env[id(m.output)] = simd_op(ctx, m.kind.split("::")[1], [env[id(v)] for v in m.inputs], vec)
    return env


def simd_constant(ctx, m, vec):
    return ir.Constant(vec, [lane_value(m.attrs.get("value", 0), vec.element)] * vec.count)


def splat(ctx, x, vec):
    b = ctx.b
    one = b.insert_element(ir.Constant(vec, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return b.shuffle_vector(
        one, ir.Constant(vec, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), vec.count), None)
    )


def simd_op(ctx, op, args, vec):
    b = ctx.b
    if op in ARITH:
        return getattr(b, ARITH[op])(*args)
    if op == "neg":
        return b.fneg(args[0])
    if op in COMPARE:
        pred = COMPARE[op]
        return (b.fcmp_unordered if pred == "!=" else b.fcmp_ordered)(pred, *args)
    if op == "where":
        return b.select(*args)
    if op in ("maximum", "minimum"):
        x, y = args
        keep = b.fcmp_ordered(">" if op == "maximum" else "<", x, y)  # equal values: the second (NumPy)
        return b.select(b.or_(keep, b.fcmp_unordered("uno", x, x)), x, y)
    if op == "pow" and splat_constant(args[1]) in elements.FAST_POWERS:  # NumPy's fast powers (array_math)
        x, c = args[0], splat_constant(args[1])
        if c == 0.5:
            return simd_op(ctx, "sqrt", [x], vec)
        return b.fdiv(ir.Constant(vec, [1.0] * vec.count), x) if c == -1.0 else b.fmul(x, x) if c == 2.0 else x
    decls = ctx.mod._decls
    if op in INTRINSIC:
        name = f"llvm.{'fabs' if op == 'abs' else op}.v{vec.count}{'f32' if vec.element == F32 else 'f64'}"
        if name not in decls:
            decls[name] = ir.Function(ctx.mod.module, ir.FunctionType(vec, [vec]), name)
        return b.call(decls[name], args)
    if vec.element == F32 and op in THROUGH_DOUBLE:
        return simd_through_double(ctx, op, args, vec)
    suffix = SUFFIX[vector_dtype(vec)]
    vname = next(name for name, w in engine().vector_math[op + suffix] if w == vec.count)
    if vname not in decls:
        decls[vname] = ir.Function(ctx.mod.module, ir.FunctionType(vec, [vec] * len(args)), vname)
    return b.call(decls[vname], args)


def simd_through_double(ctx, op, args, vec):
    """A float vector's function by the double variant of half its width: each half widened (exactly),
    computed, rounded to float32; the halves joined."""
    b = ctx.b
    half = vec.count // 2
    halves = ir.VectorType(F64, half)
    mask = ir.VectorType(ir.IntType(32), half)
    results = []
    for k in range(2):
        pick = ir.Constant(mask, list(range(k * half, (k + 1) * half)))
        wide = [b.fpext(b.shuffle_vector(a, ir.Constant(vec, ir.Undefined), pick), halves) for a in args]
        results.append(b.fptrunc(simd_op(ctx, op, wide, halves), ir.VectorType(F32, half)))
    return b.shuffle_vector(
        results[0], results[1], ir.Constant(ir.VectorType(ir.IntType(32), vec.count), list(range(vec.count)))
    )
