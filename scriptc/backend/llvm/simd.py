"""Explicit SIMD for fused float64 groups: when every operand is contiguous, the group runs W elements at a
time on LLVM vectors, calling glibc's libmvec for exp/log/sin/... (within 4 ulp, as NumPy's own SIMD loops),
and the scalar loop finishes the last n % W elements. W is the widest libmvec variant the CPU runs (8 doubles
with AVX-512). Groups using anything else (integers, float32, floor division, ...) stay scalar. A group ending
in a full sum computes its elements the same way (summation.py), so it sums what the element-wise loop stores."""
from __future__ import annotations

from llvmlite import ir

from ...ir.core import is_constant
from ...ir.types import FLOAT, INT, TensorType
from .common import F64, i64
from .array_math import FAST_POWERS, INTRINSIC as SCALAR_INTRINSIC, constant_number
from .engine import engine
from .symbols import LIBM_UNARY

ARITH = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
INTRINSIC = SCALAR_INTRINSIC | {"abs"}
LIBMVEC = set(LIBM_UNARY)
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
OTHER = {"neg", "maximum", "minimum", "where", "pow"}


def splat_constant(v) -> float | None:
    """The number a vector repeats when it is the ``splat`` of a constant (see array_math.constant_number)."""
    if isinstance(v, ir.ShuffleVector) and isinstance(v.operands[0], ir.InsertElement):
        return constant_number(v.operands[0].operands[1])
    if isinstance(v, ir.Constant) and isinstance(v.constant, list):
        values = {constant_number(c) for c in v.constant}
        return values.pop() if len(values) == 1 else None
    return None


class SimdOps:
    """Mixin of FunctionLowering."""

    def simd_width(self, sub, stop=None) -> int | None:
        """Lanes for this group (its nodes before ``stop``, a reduction ending it), or None when it must stay
        scalar."""
        vm = engine().vector_math
        if "exp" not in vm:
            return None
        lanes = vm["exp"][0][1]
        for v in sub.inputs:
            if isinstance(v.type, TensorType):
                if v.type.dtype != "float64":
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
            if t.dtype != "float64":
                return None
            if op == "pow" and not isinstance(n.inputs[1].type, TensorType) and not is_constant(n.inputs[1]):
                return None     # a variable Python scalar exponent: NumPy's fast powers are decided per call
            if op in LIBMVEC or op == "pow":
                if not any(lanes == w for _, w in vm.get(op, [])):
                    return None
            elif op not in ARITH and op not in INTRINSIC and op not in OTHER:
                return None
        return lanes

    def simd_loop(self, node, sub, out, arrays, shape):
        """Emit the vector loop when possible; the index the scalar loop starts from (0 if none ran)."""
        lanes = self.simd_width(sub)
        if lanes is None:
            return None
        b = self.b
        vec = ir.VectorType(F64, lanes)
        n = self.size(shape)
        flat = self.all_flat(shape, arrays + [out])
        end = b.select(flat, b.sub(n, b.srem(n, i64(lanes))), i64(0))
        chunks = b.sdiv(end, i64(lanes))
        with self.for_range(chunks) as c:
            i = b.mul(c, i64(lanes))
            env = self.simd_values(node, sub, i, vec)
            ptr = b.bitcast(b.gep(out.data, [b.mul(i, i64(8))]), vec.as_pointer())
            b.store(env[id(sub.outputs[0])], ptr, align=8)
        return end

    def simd_values(self, node, sub, i, vec, stop=None) -> dict:
        """The group's values (by id of the subgraph value) at elements i..i+lanes-1 of its contiguous
        operands, for the nodes before ``stop``."""
        b = self.b
        env = {}
        for p, outer in zip(sub.inputs, node.inputs):
            if isinstance(outer.type, TensorType):
                a = self.arr(outer)
                ptr = b.bitcast(b.gep(a.data, [b.mul(i, i64(8))]), vec.as_pointer())
                env[id(p)] = b.load(ptr, align=8)
            else:
                env[id(p)] = self.splat(self.to_f64(self.scalar(outer), outer.type), vec)
        for m in sub.nodes:
            if m is stop:
                break
            if m.kind == "prim::Constant":
                env[id(m.output)] = ir.Constant(vec, [float(m.attrs.get("value", 0))] * vec.count)
                continue
            env[id(m.output)] = self.simd_op(m.kind.split("::")[1], [env[id(v)] for v in m.inputs], vec)
        return env

    def splat(self, x, vec):
        b = self.b
        one = b.insert_element(ir.Constant(vec, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
        return b.shuffle_vector(one, ir.Constant(vec, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32),
                                                                                               vec.count), None))

    def simd_op(self, op, args, vec):
        b = self.b
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
            keep = b.fcmp_ordered(">" if op == "maximum" else "<", x, y)   # equal values: the second (NumPy)
            return b.select(b.or_(keep, b.fcmp_unordered("uno", x, x)), x, y)
        if op == "pow" and splat_constant(args[1]) in FAST_POWERS:   # NumPy's fast powers (array_math)
            x, c = args[0], splat_constant(args[1])
            if c == 0.5:
                return self.simd_op("sqrt", [x], vec)
            return b.fdiv(ir.Constant(vec, [1.0] * vec.count), x) if c == -1.0 else b.fmul(x, x) if c == 2.0 else x
        decls = self.mod._decls
        if op in INTRINSIC:
            name = f"llvm.{'fabs' if op == 'abs' else op}.v{vec.count}f64"
            if name not in decls:
                decls[name] = ir.Function(self.mod.module, ir.FunctionType(vec, [vec]), name)
            return b.call(decls[name], args)
        vname = next(name for name, w in engine().vector_math[op] if w == vec.count)
        if vname not in decls:
            decls[vname] = ir.Function(self.mod.module, ir.FunctionType(vec, [vec] * len(args)), vname)
        return b.call(decls[vname], args)

