"""Lowering of scalar IR graphs to LLVM IR.

Calling convention. Every graph becomes

    internal i32 @<prefix>.<graph>(<scalar leaves of the inputs>, {<leaves of the output>}* %out)

returning 0 or an error code (``errors.ERROR_TABLE``) and storing its result through ``%out``. Values are
lists of LLVM scalars ("leaves"): ``int`` is i64, ``float`` double, ``bool`` i1, ``NoneType`` no leaf, a tuple
the concatenation of its elements' leaves. In memory (the out struct) a bool is an i8. One external entry
point per compiled graph takes i8 for bools and calls the internal function (``ModuleLowering.entry``).

Semantics are CPython's, exactly: ints wrap at 64 bits, ``//`` and ``%`` floor, ``/`` on ints is correctly
rounded, comparisons between ints and floats are exact, float ``//``/``%``/``**`` follow Objects/floatobject.c
and the math functions Modules/mathmodule.c (``math_1``: a NaN from a non-NaN argument is a domain error, an
infinity from a finite argument a range error or a domain error). No fast-math flags anywhere.
"""
from __future__ import annotations

from llvmlite import ir

from ...ir.core import Block, Graph, Node, Value
from ...ir.types import BOOL, FLOAT, INT, NONE, TupleType, Type
from ...ops.arith import COMPLEX_POWER
from .engine import LIBM_PREFIX
from .errors import ERROR_TABLE, LoweringError

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F64 = ir.DoubleType()

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
TWO63 = 9223372036854775808.0


def i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def f64(v: float) -> ir.Constant:
    return ir.Constant(F64, v)


def i1(v: bool) -> ir.Constant:
    return ir.Constant(I1, int(bool(v)))


def i32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


# -- types -----------------------------------------------------------------------------------------------

def leaves(t: Type) -> list[Type]:
    """The scalar types a value of type ``t`` is made of, in order; TypeError if not lowerable."""
    if t == INT or t == FLOAT or t == BOOL:
        return [t]
    if t == NONE:
        return []
    if isinstance(t, TupleType):
        return [x for e in t.elems for x in leaves(e)]
    raise TypeError(str(t))


def is_lowerable(t: Type) -> bool:
    try:
        leaves(t)
        return True
    except TypeError:
        return False


def reg_type(t: Type) -> ir.Type:
    return {INT: I64, FLOAT: F64, BOOL: I1}[t]


def mem_type(t: Type) -> ir.Type:
    return {INT: I64, FLOAT: F64, BOOL: I8}[t]


def out_struct(t: Type) -> ir.LiteralStructType:
    return ir.LiteralStructType([mem_type(x) for x in leaves(t)])


# Operators this backend lowers (anything else is a LoweringError). Filled by the decorator below.
_HANDLERS: dict[str, str] = {}


def handles(*kinds):
    def deco(fn):
        for k in kinds:
            _HANDLERS[k] = fn.__name__
        return fn
    return deco


ARITH = ("add", "sub", "mul", "div", "floordiv", "remainder", "pow")
COMPARE = {"eq": ("==", "oeq"), "ne": ("!=", "une"), "lt": ("<", "olt"), "le": ("<=", "ole"),
           "gt": (">", "ogt"), "ge": (">=", "oge")}
BITWISE = ("__and__", "__or__", "__xor__")
# math functions called in libm, with math_1's can_overflow flag (an infinite result from a finite argument is
# OverflowError("math range error") when set, else ValueError("math domain error"))
MATH1 = {"exp": True, "expm1": True, "sinh": True, "cosh": True, "log": False, "log2": False, "log10": False,
         "log1p": False, "sin": False, "cos": False, "tan": False, "asin": False, "acos": False, "atan": False,
         "tanh": False}
UNSUPPORTED_DETAIL = {
    "prim::Print": "printing is not supported in native code yet",
    "aten::format": "strings are not supported in native code yet",
}


def check_graph(graph: Graph, seen=None) -> None:
    """Raise LoweringError for the first node (in program order, callees included) whose operator or types
    the backend does not lower. Operators are checked before types so that the error names the culprit
    (``prim::Print``, not the string constant feeding it)."""
    seen = set() if seen is None else seen
    if id(graph) in seen:
        return
    seen.add(id(graph))
    for node in graph.walk():
        if node.kind not in _HANDLERS:
            detail = UNSUPPORTED_DETAIL.get(node.kind)
            if detail is None:
                bad = [v.type for v in list(node.inputs) + list(node.outputs) if not is_lowerable(v.type)]
                detail = (f"values of type {bad[0]} are not supported by the native scalar backend yet" if bad
                          else "operator not supported by the native scalar backend yet")
            raise LoweringError(node.kind, detail, node.source)
        if node.kind == "prim::CallFunction":
            check_graph(node.attrs["fn"], seen)
    for v in graph.inputs:
        if not is_lowerable(v.type):
            raise LoweringError(f"graph input %{v.name}", f"values of type {v.type} are not supported by the "
                                                          f"native scalar backend yet")
    for node in graph.walk():
        for v in list(node.outputs) + [p for b in node.blocks for p in b.params]:
            if not is_lowerable(v.type):
                raise LoweringError(node.kind, f"values of type {v.type} are not supported by the native "
                                               f"scalar backend yet", node.source)
    for v in graph.outputs:
        if not is_lowerable(v.type):
            raise LoweringError("prim::Return", f"returning {v.type} is not supported by the native scalar "
                                                f"backend yet")


# -- module ----------------------------------------------------------------------------------------------

class ModuleLowering:
    """One LLVM module: the compiled graph, its callees, helper functions and libm declarations."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.module = ir.Module(name=prefix)
        self._functions: dict[int, ir.Function] = {}
        self._names: set[str] = set()
        self._decls: dict[str, ir.Function] = {}

    def unique(self, base: str) -> str:
        name, k = f"{self.prefix}.{base}", 0
        while name in self._names:
            k += 1
            name = f"{self.prefix}.{base}.{k}"
        self._names.add(name)
        return name

    def function_for(self, graph: Graph) -> ir.Function:
        fn = self._functions.get(id(graph))
        if fn is None:
            lowering = FunctionLowering(self, graph)
            fn = self._functions[id(graph)] = lowering.function
            lowering.lower()
        return fn

    def entry(self, graph: Graph) -> str:
        """An external ``i32 name(<args, bools as i8>, out*)`` calling the graph's function."""
        inner = self.function_for(graph)
        in_types = [t for v in graph.inputs for t in leaves(v.type)]
        out_t = out_struct(graph.outputs[0].type)
        fnty = ir.FunctionType(I32, [mem_type(t) for t in in_types] + [out_t.as_pointer()])
        fn = ir.Function(self.module, fnty, self.unique(f"entry.{graph.name}"))
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        args = [b.icmp_unsigned("!=", a, ir.Constant(I8, 0)) if t == BOOL else a
                for a, t in zip(fn.args[:-1], in_types)]
        b.ret(b.call(inner, args + [fn.args[-1]]))
        return fn.name

    # -- declarations ----------------------------------------------------------------------------------
    def libm(self, name: str, nargs: int = 1, fnty: ir.FunctionType | None = None) -> ir.Function:
        """A libm function under its private name (see engine.py: LLVM must not know what it computes)."""
        key = LIBM_PREFIX + name
        fn = self._decls.get(key)
        if fn is None:
            fn = ir.Function(self.module, fnty or ir.FunctionType(F64, [F64] * nargs), key)
            fn.attributes.add("nounwind")
            self._decls[key] = fn
        return fn

    def intrinsic(self, name: str) -> ir.Function:
        """``llvm.<name>.f64`` (sqrt floor ceil trunc fabs copysign: exact operations)."""
        key = f"llvm.{name}.f64"
        fn = self._decls.get(key)
        if fn is None:
            nargs = 2 if name == "copysign" else 1
            fn = self.module.declare_intrinsic(f"llvm.{name}", [F64], ir.FunctionType(F64, [F64] * nargs))
            self._decls[key] = fn
        return fn

    def helper(self, name: str) -> ir.Function:
        fn = self._decls.get(name)
        if fn is None:
            fn = self._decls[name] = getattr(self, f"_build_{name}")()
        return fn

    def _build_ipow(self) -> ir.Function:
        """i64 ipow(i64 base, i64 exp), exp >= 0: square and multiply, wrapping at 64 bits."""
        fn = ir.Function(self.module, ir.FunctionType(I64, [I64, I64]), self.unique("ipow"))
        fn.linkage = "internal"
        base, exp = fn.args
        entry, loop, body, done = (fn.append_basic_block(n) for n in ("entry", "loop", "body", "done"))
        b = ir.IRBuilder(entry)
        b.branch(loop)
        b.position_at_end(loop)
        acc, p, e = b.phi(I64, "acc"), b.phi(I64, "p"), b.phi(I64, "e")
        b.cbranch(b.icmp_signed("==", e, i64(0)), done, body)
        b.position_at_end(body)
        odd = b.trunc(e, I1)
        acc2 = b.select(odd, b.mul(acc, p), acc)
        p2 = b.mul(p, p)
        e2 = b.lshr(e, i64(1))
        b.branch(loop)
        acc.add_incoming(i64(1), entry), acc.add_incoming(acc2, body)
        p.add_incoming(base, entry), p.add_incoming(p2, body)
        e.add_incoming(exp, entry), e.add_incoming(e2, body)
        b.position_at_end(done)
        b.ret(acc)
        return fn

    def _build_int_truediv(self) -> ir.Function:
        """double int_truediv(i64 a, i64 b), b != 0: a / b correctly rounded, as CPython's long_true_divide.

        Fast path when both magnitudes are <= 2**53 (exact as doubles: one rounding in fdiv). Otherwise long
        division to a 64-bit quotient q (top bit set) scaled by 2**-s, with the remainder as a sticky bit in
        bit 0 (well below the rounding position), converted with one correctly rounded uitofp."""
        fn = ir.Function(self.module, ir.FunctionType(F64, [I64, I64]), self.unique("int_truediv"))
        fn.linkage = "internal"
        a, bb = fn.args
        entry, fast, slow, loop, body, done = (fn.append_basic_block(n) for n in
                                               ("entry", "fast", "slow", "loop", "body", "done"))
        b = ir.IRBuilder(entry)
        zero = i64(0)
        a_neg, b_neg = b.icmp_signed("<", a, zero), b.icmp_signed("<", bb, zero)
        ua = b.select(a_neg, b.sub(zero, a), a)
        ub = b.select(b_neg, b.sub(zero, bb), bb)
        lim = i64(2 ** 53)
        small = b.and_(b.icmp_unsigned("<=", ua, lim), b.icmp_unsigned("<=", ub, lim))
        small = b.or_(small, b.icmp_unsigned("==", ua, zero))
        b.cbranch(small, fast, slow)
        b.position_at_end(fast)
        b.ret(b.fdiv(b.sitofp(a, F64), b.sitofp(bb, F64)))
        b.position_at_end(slow)
        q0, r0 = b.udiv(ua, ub), b.urem(ua, ub)
        b.branch(loop)
        b.position_at_end(loop)
        q, r, s = b.phi(I64, "q"), b.phi(I64, "r"), b.phi(I64, "s")
        b.cbranch(b.icmp_unsigned(">=", q, i64(INT64_MIN)), done, body)
        b.position_at_end(body)
        r2 = b.shl(r, i64(1))                                   # r < ub <= 2**63: no overflow
        bit = b.icmp_unsigned(">=", r2, ub)
        r3 = b.select(bit, b.sub(r2, ub), r2)
        q2 = b.or_(b.shl(q, i64(1)), b.zext(bit, I64))
        s2 = b.add(s, i64(1))
        b.branch(loop)
        q.add_incoming(q0, slow), q.add_incoming(q2, body)
        r.add_incoming(r0, slow), r.add_incoming(r3, body)
        s.add_incoming(zero, slow), s.add_incoming(s2, body)
        b.position_at_end(done)
        sticky = b.zext(b.icmp_unsigned("!=", r, zero), I64)
        d = b.uitofp(b.or_(q, sticky), F64)
        scale = b.bitcast(b.shl(b.sub(i64(1023), s), i64(52)), F64)   # 2**-s, s <= 127: a normal double
        res = b.fmul(d, scale)
        neg = b.xor(a_neg, b_neg)
        b.ret(b.select(neg, b.fneg(res), res))
        return fn


# -- functions -------------------------------------------------------------------------------------------

class FunctionLowering:
    """Lowers one graph to one LLVM function: a visitor over nodes, blocks become basic blocks."""

    def __init__(self, mod: ModuleLowering, graph: Graph):
        self.mod, self.graph = mod, graph
        self.in_types = [t for v in graph.inputs for t in leaves(v.type)]
        self.out_type = graph.outputs[0].type
        self.out_struct = out_struct(self.out_type)
        fnty = ir.FunctionType(I32, [reg_type(t) for t in self.in_types] + [self.out_struct.as_pointer()])
        self.function = ir.Function(mod.module, fnty, mod.unique(graph.name))
        self.function.linkage = "internal"
        self.function.attributes.add("nounwind")
        self.env: dict[int, list] = {}
        self.entry_block = self.function.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry_block)
        self.node: Node | None = None

    # -- values ------------------------------------------------------------------------------------------
    def get(self, v: Value) -> list:
        return self.env[id(v)]

    def scalar(self, v: Value):
        (x,) = self.env[id(v)]
        return x

    def bind(self, v: Value, vals: list) -> None:
        assert len(vals) == len(leaves(v.type)), (v, vals)
        self.env[id(v)] = list(vals)

    def lower(self) -> None:
        args = list(self.function.args[:-1])
        for v in self.graph.inputs:
            n = len(leaves(v.type))
            self.bind(v, args[:n])
            args = args[n:]
        (result,) = self.lower_block(self.graph.block)
        self.store_out(self.function.args[-1], result, self.out_type)
        self.b.ret(i32(0))

    def store_out(self, ptr, vals, t: Type) -> None:
        for k, (x, lt) in enumerate(zip(vals, leaves(t))):
            if lt == BOOL:
                x = self.b.zext(x, I8)
            self.b.store(x, self.b.gep(ptr, [i32(0), i32(k)], inbounds=True))

    def lower_block(self, block: Block) -> list[list]:
        outer = self.node
        for node in block.nodes:
            self.node = node
            outs = getattr(self, _HANDLERS[node.kind])(node)
            self.node = node      # nested blocks moved it
            for v, vals in zip(node.outputs, outs):
                self.bind(v, vals)
        self.node = outer
        return [self.get(v) for v in block.returns]

    def alloca(self, ty):
        with self.b.goto_block(self.entry_block):
            self.b.position_at_start(self.entry_block)
            return self.b.alloca(ty)

    # -- errors ------------------------------------------------------------------------------------------
    def raise_if(self, cond, exc_type: type, *args) -> None:
        """If ``cond`` (i1) holds, return the error code for ``exc_type(*args)`` raised by the current node."""
        if isinstance(cond, ir.Constant) and cond.constant == 0:
            return
        code = ERROR_TABLE.code(exc_type, args, self.node)
        with self.b.if_then(cond, likely=False):
            self.b.ret(i32(code))

    # -- conversions -------------------------------------------------------------------------------------
    def to_f64(self, x, t: Type):
        if t == FLOAT:
            return x
        if t == INT:
            return self.b.sitofp(x, F64)
        if t == BOOL:
            return self.b.uitofp(x, F64)
        raise AssertionError(t)

    def to_i64(self, x, t: Type):
        if t == INT:
            return x
        if t == BOOL:
            return self.b.zext(x, I64)
        raise AssertionError(t)

    def convert(self, vals: list, src: Type, dst: Type) -> list:
        """Convert a value passed where another type is declared (call arguments): int/bool -> float etc."""
        if src == dst:
            return vals
        if isinstance(src, TupleType) and isinstance(dst, TupleType) and len(src.elems) == len(dst.elems):
            out = []
            for s, d in zip(src.elems, dst.elems):
                n = len(leaves(s))
                out += self.convert(vals[:n], s, d)
                vals = vals[n:]
            return out
        if dst == FLOAT and src in (INT, BOOL):
            return [self.to_f64(vals[0], src)]
        if dst == INT and src == BOOL:
            return [self.to_i64(vals[0], src)]
        raise LoweringError(self.node.kind, f"cannot pass {src} where {dst} is expected", self.node.source)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def isinf(self, x):
        return self.b.fcmp_ordered("==", self.fabs(x), f64(float("inf")))

    def isfinite(self, x):
        return self.b.fcmp_ordered("<", self.fabs(x), f64(float("inf")))

    def fabs(self, x):
        return self.b.call(self.mod.intrinsic("fabs"), [x])

    def floor(self, x):
        return self.b.call(self.mod.intrinsic("floor"), [x])

    def copysign(self, x, y):
        return self.b.call(self.mod.intrinsic("copysign"), [x, y])

    def fmod(self, x, y):
        return self.b.call(self.mod.libm("fmod", 2), [x, y])

    def is_odd_integer(self, y):
        """DOUBLE_IS_ODD_INTEGER: fmod(fabs(y), 2.0) == 1.0"""
        return self.b.fcmp_ordered("==", self.fmod(self.fabs(y), f64(2.0)), f64(1.0))

    def float_to_int_wrapping(self, x):
        """An integral, finite double as an int, wrapped to 64 bits as the interpreter wraps big ints."""
        b = self.b
        in_range = b.fcmp_ordered("<", self.fabs(x), f64(TWO63))
        small = b.fptosi(b.select(in_range, x, f64(0.0)), I64)
        bits = b.bitcast(x, I64)
        e = b.sub(b.and_(b.lshr(bits, i64(52)), i64(0x7FF)), i64(1075))      # x = m * 2**e, e >= 11 here
        m = b.or_(b.and_(bits, i64((1 << 52) - 1)), i64(1 << 52))
        e_ok = b.icmp_signed("<", e, i64(64))
        big = b.select(e_ok, b.shl(m, b.select(e_ok, e, i64(0))), i64(0))
        big = b.select(b.icmp_signed("<", bits, i64(0)), b.sub(i64(0), big), big)
        return b.select(in_range, small, big)

    def check_float_to_int(self, x):
        self.raise_if(self.isnan(x), ValueError, "cannot convert float NaN to integer")
        self.raise_if(self.isinf(x), OverflowError, "cannot convert float infinity to integer")

    # -- structure ---------------------------------------------------------------------------------------
    @handles("prim::Constant")
    def lower_constant(self, node):
        value = node.attrs.get("value")

        def flat(val, t):
            if t == NONE:
                return []
            if t == INT:
                return [i64((int(val) - INT64_MIN) % 2 ** 64 + INT64_MIN)]
            if t == FLOAT:
                return [f64(float(val))]
            if t == BOOL:
                return [i1(val)]
            return [x for e, et in zip(val, t.elems) for x in flat(e, et)]
        return [flat(value, node.output.type)]

    @handles("prim::Uninitialized")
    def lower_uninitialized(self, node):
        return [[ir.Constant(reg_type(t), ir.Undefined) for t in leaves(node.output.type)]]

    @handles("prim::AssertBound")
    def lower_assert_bound(self, node):
        defined = self.scalar(node.inputs[0])
        name = node.attrs["name"]
        self.raise_if(self.b.not_(defined), UnboundLocalError,
                      f"cannot access local variable '{name}' where it is not associated with a value")
        return []

    @handles("prim::TupleConstruct")
    def lower_tuple_construct(self, node):
        return [[x for v in node.inputs for x in self.get(v)]]

    @handles("prim::TupleUnpack")
    def lower_tuple_unpack(self, node):
        vals, outs = self.get(node.inputs[0]), []
        for v in node.outputs:
            n = len(leaves(v.type))
            outs.append(vals[:n])
            vals = vals[n:]
        return outs

    @handles("prim::TupleIndex")
    def lower_tuple_index(self, node):
        t = node.inputs[0].type
        index = node.attrs["index"] % len(t.elems)
        start = sum(len(leaves(e)) for e in t.elems[:index])
        n = len(leaves(t.elems[index]))
        return [self.get(node.inputs[0])[start:start + n]]

    def _phis(self, types: list[Type], block, name: str):
        with self.b.goto_block(block):
            return [self.b.phi(reg_type(t), name) for t in types]

    @handles("prim::If")
    def lower_if(self, node):
        b = self.b
        cond = self.scalar(node.inputs[0])
        then_bb = b.append_basic_block("if.then")
        else_bb = b.append_basic_block("if.else")
        merge_bb = b.append_basic_block("if.end")
        b.cbranch(cond, then_bb, else_bb)
        incoming = []
        for blk, bb in zip(node.blocks, (then_bb, else_bb)):
            b.position_at_end(bb)
            results = [self.convert(r, v.type, o.type) for r, v, o in zip(self.lower_block(blk), blk.returns,
                                                                           node.outputs)]
            incoming.append(([x for r in results for x in r], b.block))
            b.branch(merge_bb)
        b.position_at_end(merge_bb)
        types = [t for v in node.outputs for t in leaves(v.type)]
        phis = [b.phi(reg_type(t), "if") for t in types]
        for vals, pred in incoming:
            for phi, x in zip(phis, vals):
                phi.add_incoming(x, pred)
        return self._split(phis, node.outputs)

    @staticmethod
    def _split(vals, values):
        outs = []
        for v in values:
            n = len(leaves(v.type))
            outs.append(list(vals[:n]))
            vals = vals[n:]
        return outs

    @handles("prim::Loop")
    def lower_loop(self, node):
        """header: i, cond, carried = phi; run the body while cond and i < max_trips."""
        b = self.b
        max_trips, cond0, *carried = node.inputs
        body = node.blocks[0]
        init = [x for v, p in zip(carried, body.params[1:]) for x in self.convert(self.get(v), v.type, p.type)]
        types = [t for p in body.params[1:] for t in leaves(p.type)]
        pre = b.block
        header = b.append_basic_block("loop.header")
        body_bb = b.append_basic_block("loop.body")
        exit_bb = b.append_basic_block("loop.exit")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64, "trip")
        cond = b.phi(I1, "cond")
        phis = [b.phi(reg_type(t), "carried") for t in types]
        go = b.select(cond, b.icmp_signed("<", i, self.scalar(max_trips)), i1(False))
        b.cbranch(go, body_bb, exit_bb)
        b.position_at_end(body_bb)
        self.bind(body.params[0], [i])
        for p, vals in zip(body.params[1:], self._split(phis, body.params[1:])):
            self.bind(p, vals)
        cond1, *carried1 = self.lower_block(body)
        carried1 = [self.convert(r, v.type, p.type) for r, v, p in zip(carried1, body.returns[1:], body.params[1:])]
        latch = b.block
        i_next = b.add(i, i64(1))
        b.branch(header)
        i.add_incoming(i64(0), pre), i.add_incoming(i_next, latch)
        cond.add_incoming(self.scalar(cond0), pre), cond.add_incoming(cond1[0], latch)
        for phi, x0, x1 in zip(phis, init, [x for r in carried1 for x in r]):
            phi.add_incoming(x0, pre)
            phi.add_incoming(x1, latch)
        b.position_at_end(exit_bb)
        return self._split(phis, node.outputs)

    @handles("prim::CallFunction")
    def lower_call(self, node):
        callee: Graph = node.attrs["fn"]
        fn = self.mod.function_for(callee)
        args = []
        for v, p in zip(node.inputs, callee.inputs):
            args += self.convert(self.get(v), v.type, p.type)
        out_t = callee.outputs[0].type
        struct = out_struct(out_t)
        out = self.alloca(struct)
        status = self.b.call(fn, args + [out])
        with self.b.if_then(self.b.icmp_signed("!=", status, i32(0)), likely=False):
            self.b.ret(status)
        vals = []
        for k, t in enumerate(leaves(out_t)):
            x = self.b.load(self.b.gep(out, [i32(0), i32(k)], inbounds=True))
            vals.append(self.b.trunc(x, I1) if t == BOOL else x)
        return [self.convert(vals, out_t, node.output.type)]

    # -- arithmetic --------------------------------------------------------------------------------------
    @handles(*(f"aten::{n}" for n in ARITH))
    def lower_arith(self, node):
        op = node.kind.split("::")[1]
        (a, b), (ta, tb) = [self.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
        out = node.output.type
        B = self.b
        if op in ("add", "sub", "mul"):
            if out == FLOAT:
                fa, fb = self.to_f64(a, ta), self.to_f64(b, tb)
                return [[{"add": B.fadd, "sub": B.fsub, "mul": B.fmul}[op](fa, fb)]]
            ia, ib = self.to_i64(a, ta), self.to_i64(b, tb)
            return [[{"add": B.add, "sub": B.sub, "mul": B.mul}[op](ia, ib)]]
        if op == "div":
            if ta != FLOAT and tb != FLOAT:
                ia, ib = self.to_i64(a, ta), self.to_i64(b, tb)
                self.raise_if(B.icmp_signed("==", ib, i64(0)), ZeroDivisionError, "division by zero")
                return [[B.call(self.mod.helper("int_truediv"), [ia, ib])]]
            fa, fb = self.to_f64(a, ta), self.to_f64(b, tb)
            self.raise_if(B.fcmp_ordered("==", fb, f64(0.0)), ZeroDivisionError, "float division by zero")
            return [[B.fdiv(fa, fb)]]
        if op in ("floordiv", "remainder"):
            if out == INT:
                ia, ib = self.to_i64(a, ta), self.to_i64(b, tb)
                msg = "integer division or modulo by zero" if op == "floordiv" else "integer modulo by zero"
                self.raise_if(B.icmp_signed("==", ib, i64(0)), ZeroDivisionError, msg)
                return [[self.int_floordiv(ia, ib) if op == "floordiv" else self.int_mod(ia, ib)]]
            fa, fb = self.to_f64(a, ta), self.to_f64(b, tb)
            msg = "float floor division by zero" if op == "floordiv" else "float modulo"
            self.raise_if(B.fcmp_ordered("==", fb, f64(0.0)), ZeroDivisionError, msg)
            return [[self.float_floordiv(fa, fb) if op == "floordiv" else self.float_mod(fa, fb)]]
        if op == "pow":
            if out == FLOAT:
                return [[self.float_pow(self.to_f64(a, ta), self.to_f64(b, tb))]]
            ia, ib = self.to_i64(a, ta), self.to_i64(b, tb)
            negative = B.icmp_signed("<", ib, i64(0))
            if ta == INT and tb == INT:
                self.raise_if(negative, ValueError, "integers to negative integer powers are not allowed")
            elif ta == BOOL and tb == INT:
                # True ** -n is the float 1.0 (an int once stored), False ** -n divides by zero
                self.raise_if(B.and_(negative, B.not_(a)), ZeroDivisionError,
                              "0.0 cannot be raised to a negative power")
                ib = B.select(negative, i64(0), ib)
            return [[B.call(self.mod.helper("ipow"), [ia, ib])]]
        raise AssertionError(op)

    def int_floordiv(self, a, b):
        """Python's a // b on i64 (b != 0); INT64_MIN // -1 wraps to INT64_MIN without trapping."""
        B = self.b
        minus1 = B.icmp_signed("==", b, i64(-1))
        safe = B.select(minus1, i64(1), b)
        q, r = B.sdiv(a, safe), B.srem(a, safe)
        fix = B.and_(B.icmp_signed("!=", r, i64(0)), B.icmp_signed("<", B.xor(r, b), i64(0)))
        q = B.sub(q, B.zext(fix, I64))
        return B.select(minus1, B.sub(i64(0), a), q)

    def int_mod(self, a, b):
        B = self.b
        safe = B.select(B.icmp_signed("==", b, i64(-1)), i64(1), b)
        r = B.srem(a, safe)
        fix = B.and_(B.icmp_signed("!=", r, i64(0)), B.icmp_signed("<", B.xor(r, b), i64(0)))
        return B.select(fix, B.add(r, b), r)

    def float_mod(self, vx, wx):
        """float_rem (Objects/floatobject.c), wx != 0."""
        B = self.b
        mod = self.fmod(vx, wx)
        nonzero = B.fcmp_unordered("!=", mod, f64(0.0))          # C truthiness: NaN is true
        flip = B.xor(B.fcmp_ordered("<", wx, f64(0.0)), B.fcmp_ordered("<", mod, f64(0.0)))
        adjusted = B.select(flip, B.fadd(mod, wx), mod)
        return B.select(nonzero, adjusted, self.copysign(f64(0.0), wx))

    def float_floordiv(self, vx, wx):
        """_float_div_mod (Objects/floatobject.c), wx != 0: the floor quotient."""
        B = self.b
        mod = self.fmod(vx, wx)
        div = B.fdiv(B.fsub(vx, mod), wx)
        nonzero = B.fcmp_unordered("!=", mod, f64(0.0))
        flip = B.xor(B.fcmp_ordered("<", wx, f64(0.0)), B.fcmp_ordered("<", mod, f64(0.0)))
        div = B.select(B.and_(nonzero, flip), B.fsub(div, f64(1.0)), div)
        fl = self.floor(div)
        fl = B.select(B.fcmp_ordered(">", B.fsub(div, fl), f64(0.5)), B.fadd(fl, f64(1.0)), fl)
        zero = self.copysign(f64(0.0), B.fdiv(vx, wx))
        return B.select(B.fcmp_unordered("!=", div, f64(0.0)), fl, zero)

    def float_pow(self, x, y):
        """float_pow (Objects/floatobject.c), every special case in order, then libm pow."""
        B = self.b
        inf, zero, one = f64(float("inf")), f64(0.0), f64(1.0)
        y_zero = B.fcmp_ordered("==", y, zero)
        x_nan, y_nan = self.isnan(x), self.isnan(y)
        y_inf, x_inf = self.isinf(y), self.isinf(x)
        x_zero = B.fcmp_ordered("==", x, zero)
        x_neg = B.fcmp_ordered("<", x, zero)
        y_odd = self.is_odd_integer(y)
        y_pos = B.fcmp_ordered(">", y, zero)
        y_neg = B.fcmp_ordered("<", y, zero)
        ax = self.fabs(x)
        # the cases, as nested selects from the last to the first
        general = B.not_(B.or_(B.or_(B.or_(y_zero, x_nan), B.or_(y_nan, y_inf)), B.or_(x_inf, x_zero)))
        self.raise_if(B.and_(B.and_(B.not_(B.or_(B.or_(B.or_(y_zero, x_nan), B.or_(y_nan, y_inf)), x_inf)),
                                    x_zero), y_neg),
                      ZeroDivisionError, "0.0 cannot be raised to a negative power")
        fractional = B.fcmp_ordered("!=", y, self.floor(y))
        p = B.call(self.mod.libm("pow", 2), [ax, y])
        # CPython computes the complex power (complex_pow: OverflowError when its modulus overflows), and
        # scriptc's ** raises for a complex result
        complex_result = B.and_(general, B.and_(x_neg, fractional))
        self.raise_if(B.and_(complex_result, self.isinf(p)), OverflowError, "complex exponentiation")
        self.raise_if(complex_result, ValueError, COMPLEX_POWER)
        negate = B.and_(x_neg, y_odd)
        p = B.select(B.fcmp_ordered("==", ax, one), one, p)
        p = B.select(negate, B.fneg(p), p)
        self.raise_if(B.and_(general, self.isinf(p)), OverflowError, 34, "Numerical result out of range")
        r = p
        # x == 0.0: odd ? x : 0.0
        r = B.select(x_zero, B.select(y_odd, x, zero), r)
        # x infinite
        r = B.select(x_inf, B.select(y_pos, B.select(y_odd, x, ax), B.select(y_odd, self.copysign(zero, x), zero)),
                     r)
        # y infinite
        y_inf_r = B.select(B.fcmp_ordered("==", ax, one), one,
                           B.select(B.icmp_unsigned("==", y_pos, B.fcmp_ordered(">", ax, one)), self.fabs(y), zero))
        r = B.select(y_inf, y_inf_r, r)
        r = B.select(y_nan, B.select(B.fcmp_ordered("==", x, one), one, y), r)
        r = B.select(x_nan, x, r)
        r = B.select(y_zero, one, r)
        return r

    @handles("aten::float_power")
    def lower_math_pow(self, node):
        """math.pow (Modules/mathmodule.c math_pow_impl): IEEE specials by hand, libm pow for finite**finite;
        NaN from finite arguments or 0.0**negative is a domain error, other infinities a range error."""
        B = self.b
        x, y = [self.to_f64(self.scalar(v), v.type) for v in node.inputs]
        zero, one = f64(0.0), f64(1.0)
        finite = B.and_(self.isfinite(x), self.isfinite(y))
        p = B.call(self.mod.libm("pow", 2), [x, y])
        p_nan, p_inf = self.isnan(p), self.isinf(p)
        x_zero = B.fcmp_ordered("==", x, zero)
        self.raise_if(B.and_(finite, B.or_(p_nan, B.and_(p_inf, x_zero))), ValueError, "math domain error")
        self.raise_if(B.and_(finite, B.and_(p_inf, B.not_(x_zero))), OverflowError, "math range error")
        ax = self.fabs(x)
        y_pos, y_neg = B.fcmp_ordered(">", y, zero), B.fcmp_ordered("<", y, zero)
        # y infinite (x finite or not, x not NaN)
        r_yinf = B.select(B.fcmp_ordered("==", ax, one), one,
                          B.select(B.and_(y_pos, B.fcmp_ordered(">", ax, one)), y,
                                   B.select(B.and_(y_neg, B.fcmp_ordered("<", ax, one)), B.fneg(y), zero)))
        # x infinite
        odd_y = B.and_(self.isfinite(y), self.is_odd_integer(y))
        r_xinf = B.select(y_pos, B.select(odd_y, x, ax),
                          B.select(B.fcmp_ordered("==", y, zero), one,
                                   B.select(odd_y, self.copysign(zero, x), zero)))
        r = B.select(self.isinf(y), r_yinf, p)
        r = B.select(self.isinf(x), r_xinf, r)
        r = B.select(self.isnan(y), B.select(B.fcmp_ordered("==", x, one), one, y), r)
        r = B.select(self.isnan(x), B.select(B.fcmp_ordered("==", y, zero), one, x), r)
        return [[r]]

    @handles("aten::neg")
    def lower_neg(self, node):
        (a,), (ta,) = [self.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
        if node.output.type == FLOAT:
            return [[self.b.fneg(self.to_f64(a, ta))]]
        return [[self.b.sub(i64(0), self.to_i64(a, ta))]]

    @handles("aten::bitwise_not")
    def lower_bitwise_not(self, node):
        a, ta = self.scalar(node.inputs[0]), node.inputs[0].type
        if node.output.type == BOOL:
            return [[self.b.not_(a)]]
        return [[self.b.xor(self.to_i64(a, ta), i64(-1))]]

    @handles("aten::__not__")
    def lower_not(self, node):
        a, ta = self.scalar(node.inputs[0]), node.inputs[0].type
        if ta == BOOL:
            return [[self.b.not_(a)]]
        if ta == INT:
            return [[self.b.icmp_signed("==", a, i64(0))]]
        return [[self.b.fcmp_ordered("==", a, f64(0.0))]]

    @handles(*(f"aten::{n}" for n in BITWISE))
    def lower_bitwise(self, node):
        op = node.kind.split("::")[1]
        (a, b), (ta, tb) = [self.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
        fn = {"__and__": self.b.and_, "__or__": self.b.or_, "__xor__": self.b.xor}[op]
        if node.output.type == BOOL:
            return [[fn(a, b)]]
        return [[fn(self.to_i64(a, ta), self.to_i64(b, tb))]]

    @handles("aten::__lshift__", "aten::__rshift__")
    def lower_shift(self, node):
        B = self.b
        (a, b), (ta, tb) = [self.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
        a, b = self.to_i64(a, ta), self.to_i64(b, tb)
        self.raise_if(B.icmp_signed("<", b, i64(0)), ValueError, "negative shift count")
        big = B.icmp_signed(">=", b, i64(64))
        if node.kind == "aten::__lshift__":
            return [[B.select(big, i64(0), B.shl(a, B.select(big, i64(0), b)))]]
        return [[B.ashr(a, B.select(big, i64(63), b))]]

    @handles(*(f"aten::{n}" for n in COMPARE))
    def lower_compare(self, node):
        op = node.kind.split("::")[1]
        (a, b), (ta, tb) = [self.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
        ipred, fpred = COMPARE[op]
        B = self.b
        if FLOAT not in (ta, tb):
            return [[B.icmp_signed(ipred, self.to_i64(a, ta), self.to_i64(b, tb))]]
        if ta == INT and tb == FLOAT:
            return [[self.compare_int_float(ipred, a, b)]]
        if ta == FLOAT and tb == INT:
            swapped = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[ipred]
            return [[self.compare_int_float(swapped, b, a)]]
        fa, fb = self.to_f64(a, ta), self.to_f64(b, tb)      # bools convert exactly
        if fpred == "une":
            return [[B.fcmp_unordered("!=", fa, fb)]]
        return [[B.fcmp_ordered(ipred, fa, fb)]]

    def compare_int_float(self, pred: str, a, f):
        """``a <pred> f`` for an i64 and a double, exactly (float_richcompare): no rounding of ``a``."""
        B = self.b
        in_range = B.and_(B.fcmp_ordered(">=", f, f64(-TWO63)), B.fcmp_ordered("<", f, f64(TWO63)))
        fs = B.select(in_range, f, f64(0.0))
        ft = B.call(self.mod.intrinsic("trunc"), [fs])
        t = B.fptosi(ft, I64)
        frac = B.fsub(fs, ft)
        same = B.icmp_signed("==", a, t)
        lt = B.or_(B.icmp_signed("<", a, t), B.and_(same, B.fcmp_ordered(">", frac, f64(0.0))))
        gt = B.or_(B.icmp_signed(">", a, t), B.and_(same, B.fcmp_ordered("<", frac, f64(0.0))))
        eq = B.and_(same, B.fcmp_ordered("==", frac, f64(0.0)))
        lt = B.select(in_range, lt, B.fcmp_ordered(">=", f, f64(TWO63)))
        gt = B.select(in_range, gt, B.fcmp_ordered("<", f, f64(-TWO63)))
        eq = B.select(in_range, eq, i1(False))
        return {"<": lambda: lt, ">": lambda: gt, "==": lambda: eq, "!=": lambda: B.not_(eq),
                "<=": lambda: B.or_(lt, eq), ">=": lambda: B.or_(gt, eq)}[pred]()

    # -- conversions -------------------------------------------------------------------------------------
    @handles("aten::Int")
    def lower_int(self, node):
        a, ta = self.scalar(node.inputs[0]), node.inputs[0].type
        if ta != FLOAT:
            return [[self.to_i64(a, ta)]]
        B = self.b
        self.check_float_to_int(a)
        in_range = B.and_(B.fcmp_ordered(">=", a, f64(-TWO63)), B.fcmp_ordered("<", a, f64(TWO63)))
        self.raise_if(B.not_(in_range), OverflowError, "int too large to convert to a 64-bit int")
        return [[B.fptosi(a, I64)]]

    @handles("aten::Float")
    def lower_float(self, node):
        return [[self.to_f64(self.scalar(node.inputs[0]), node.inputs[0].type)]]

    @handles("aten::Bool")
    def lower_bool(self, node):
        a, ta = self.scalar(node.inputs[0]), node.inputs[0].type
        if ta == BOOL:
            return [[a]]
        if ta == INT:
            return [[self.b.icmp_signed("!=", a, i64(0))]]
        return [[self.b.fcmp_unordered("!=", a, f64(0.0))]]

    @handles("prim::max", "prim::min", "aten::maximum", "aten::minimum")
    def lower_minmax(self, node):
        """prim::max(a, b) is Python's max: ``b if b > a else a``; aten::maximum is np.maximum on scalars:
        NaN if either is NaN, else ``a if a > b else b``."""
        B = self.b
        (a, b), (ta, tb) = [self.scalar(v) for v in node.inputs], [v.type for v in node.inputs]
        out = node.output.type
        is_max = node.kind.endswith("max") or node.kind.endswith("maximum")
        if out == FLOAT:
            a, b = self.to_f64(a, ta), self.to_f64(b, tb)
            gt = (lambda x, y: B.fcmp_ordered(">", x, y)) if is_max else (lambda x, y: B.fcmp_ordered("<", x, y))
        elif out == INT:
            a, b = self.to_i64(a, ta), self.to_i64(b, tb)
            gt = (lambda x, y: B.icmp_signed(">", x, y)) if is_max else (lambda x, y: B.icmp_signed("<", x, y))
        else:
            gt = (lambda x, y: B.icmp_unsigned(">", x, y)) if is_max else (lambda x, y: B.icmp_unsigned("<", x, y))
        if node.kind.startswith("prim::"):
            return [[B.select(gt(b, a), b, a)]]
        r = B.select(gt(a, b), a, b)
        if out == FLOAT:
            r = B.select(self.isnan(a), a, r)
        return [[r]]

    # -- ranges --------------------------------------------------------------------------------------------
    @handles("aten::__range_length")
    def lower_range_length(self, node):
        """len(range(lo, hi, step)) wrapped to 64 bits as the interpreter wraps it; exact without i128: for
        step > 0 and lo < hi the length is (hi - lo - 1) // step + 1 with hi - lo < 2**64 as an unsigned."""
        B = self.b
        lo, hi, step = [self.to_i64(self.scalar(v), v.type) for v in node.inputs]
        self.raise_if(B.icmp_signed("==", step, i64(0)), ValueError, "range() arg 3 must not be zero")
        pos = B.icmp_signed(">", step, i64(0))
        nonempty = B.select(pos, B.icmp_signed("<", lo, hi), B.icmp_signed(">", lo, hi))
        span = B.select(pos, B.sub(hi, lo), B.sub(lo, hi))                   # unsigned, > 0 when nonempty
        mag = B.select(pos, step, B.sub(i64(0), step))                        # unsigned |step|
        safe_mag = B.select(nonempty, mag, i64(1))
        n = B.add(B.udiv(B.sub(span, i64(1)), safe_mag), i64(1))
        return [[B.select(nonempty, n, i64(0))]]

    @handles("aten::__derive_index")
    def lower_derive_index(self, node):
        i, start, step = [self.to_i64(self.scalar(v), v.type) for v in node.inputs]
        return [[self.b.add(start, self.b.mul(i, step))]]

    # -- math ------------------------------------------------------------------------------------------------
    def math_1(self, x, r, can_overflow: bool):
        """Modules/mathmodule.c math_1: NaN from non-NaN is a domain error; inf from finite a range error
        (can_overflow) or a domain error."""
        B = self.b
        self.raise_if(B.and_(self.isnan(r), B.not_(self.isnan(x))), ValueError, "math domain error")
        overflow = B.and_(self.isinf(r), self.isfinite(x))
        if can_overflow:
            self.raise_if(overflow, OverflowError, "math range error")
        else:
            self.raise_if(overflow, ValueError, "math domain error")
        return r

    @handles(*(f"aten::{n}" for n in MATH1))
    def lower_math1(self, node):
        name = node.kind.split("::")[1]
        x = self.to_f64(self.scalar(node.inputs[0]), node.inputs[0].type)
        r = self.b.call(self.mod.libm(name, 1), [x])
        return [[self.math_1(x, r, MATH1[name])]]

    @handles("aten::sqrt")
    def lower_sqrt(self, node):
        x = self.to_f64(self.scalar(node.inputs[0]), node.inputs[0].type)
        r = self.b.call(self.mod.intrinsic("sqrt"), [x])       # IEEE sqrt: the same bits as libm's
        return [[self.math_1(x, r, False)]]

    @handles("aten::fabs")
    def lower_fabs(self, node):
        return [[self.fabs(self.to_f64(self.scalar(node.inputs[0]), node.inputs[0].type))]]

    @handles("aten::abs")
    def lower_abs(self, node):
        a, ta = self.scalar(node.inputs[0]), node.inputs[0].type
        if node.output.type == FLOAT:
            return [[self.fabs(self.to_f64(a, ta))]]
        a = self.to_i64(a, ta)
        return [[self.b.select(self.b.icmp_signed("<", a, i64(0)), self.b.sub(i64(0), a), a)]]

    @handles("aten::floor", "aten::ceil", "aten::trunc")
    def lower_rounding(self, node):
        a, ta = self.scalar(node.inputs[0]), node.inputs[0].type
        if ta != FLOAT:
            return [[self.to_i64(a, ta)]]
        name = node.kind.split("::")[1]
        r = self.b.call(self.mod.intrinsic(name), [a])
        if node.output.type == FLOAT:
            return [[r]]
        self.check_float_to_int(a)
        return [[self.float_to_int_wrapping(r)]]

    @handles("aten::atan2")
    def lower_atan2(self, node):
        """m_atan2 (Modules/mathmodule.c): C99 special cases, then libm atan2."""
        B = self.b
        y, x = [self.to_f64(self.scalar(v), v.type) for v in node.inputs]
        pi = 3.141592653589793
        x_pos_sign = B.fcmp_ordered("==", self.copysign(f64(1.0), x), f64(1.0))
        r = B.call(self.mod.libm("atan2", 2), [y, x])
        r = B.select(B.or_(self.isinf(x), B.fcmp_ordered("==", y, f64(0.0))),
                     B.select(x_pos_sign, self.copysign(f64(0.0), y), self.copysign(f64(pi), y)), r)
        y_inf_r = B.select(self.isinf(x),
                           B.select(x_pos_sign, self.copysign(f64(0.25 * pi), y), self.copysign(f64(0.75 * pi), y)),
                           self.copysign(f64(0.5 * pi), y))
        r = B.select(self.isinf(y), y_inf_r, r)
        r = B.select(B.or_(self.isnan(x), self.isnan(y)), f64(float("nan")), r)
        return [[r]]

    @handles("aten::copysign")
    def lower_copysign(self, node):
        x, y = [self.to_f64(self.scalar(v), v.type) for v in node.inputs]
        return [[self.copysign(x, y)]]

    @handles("aten::fmod")
    def lower_math_fmod(self, node):
        """math.fmod: fmod(x, +-inf) is x for finite x; a NaN from non-NaN arguments is a domain error."""
        B = self.b
        x, y = [self.to_f64(self.scalar(v), v.type) for v in node.inputs]
        r = self.fmod(x, y)
        self.raise_if(B.and_(self.isnan(r), B.not_(B.or_(self.isnan(x), self.isnan(y)))), ValueError,
                      "math domain error")
        return [[B.select(B.and_(self.isinf(y), self.isfinite(x)), x, r)]]

    @handles("aten::hypot")
    def lower_hypot(self, node):
        """math.hypot(x, y): CPython 3.11's vector_norm for two coordinates (not libm's hypot, which rounds
        differently): power-of-two scaling, Veltkamp-Dekker squaring, Neumaier summation, one correction step
        of the square root; tiny (subnormal) maxima divide by the maximum instead. Operation order verbatim."""
        B = self.b
        a, b = [self.fabs(self.to_f64(self.scalar(v), v.type)) for v in node.inputs]
        zero, one, t27 = f64(0.0), f64(1.0), f64(134217729.0)
        found_nan = B.or_(self.isnan(a), self.isnan(b))
        mx = B.select(B.fcmp_ordered(">", a, zero), a, zero)
        mx = B.select(B.fcmp_ordered(">", b, mx), b, mx)
        e_ptr = self.alloca(I32)
        B.call(self.mod.libm("frexp", fnty=ir.FunctionType(F64, [F64, I32.as_pointer()])), [mx, e_ptr])
        max_e = B.load(e_ptr)
        scale = B.call(self.mod.libm("ldexp", fnty=ir.FunctionType(F64, [F64, I32])), [one, B.neg(max_e)])

        def split(x):
            t = B.fmul(x, t27)
            hi = B.fsub(t, B.fsub(t, x))
            return hi, B.fsub(x, hi)

        def neumaier(csum, frac, x):
            new = B.fadd(csum, x)
            return new, B.fadd(frac, B.fadd(B.fsub(csum, new), x))

        csum, f1, f2, f3 = one, zero, zero, zero
        for v in (a, b):
            hi, lo = split(B.fmul(v, scale))
            csum, f1 = neumaier(csum, f1, B.fmul(hi, hi))
            csum, f2 = neumaier(csum, f2, B.fmul(B.fmul(f64(2.0), hi), lo))
            f3 = B.fadd(f3, B.fmul(lo, lo))
        sqrt = self.mod.intrinsic("sqrt")
        h = B.call(sqrt, [B.fadd(B.fsub(csum, one), B.fadd(B.fadd(f1, f2), f3))])
        hi, lo = split(h)
        csum, f1 = neumaier(csum, f1, B.fmul(B.fneg(hi), hi))
        csum, f2 = neumaier(csum, f2, B.fmul(B.fmul(f64(-2.0), hi), lo))
        csum, f3 = neumaier(csum, f3, B.fmul(B.fneg(lo), lo))
        x = B.fadd(B.fsub(csum, one), B.fadd(B.fadd(f1, f2), f3))
        scaled = B.fdiv(B.fadd(h, B.fdiv(x, B.fmul(f64(2.0), h))), scale)
        # max_e < -1023: divide by the maximum
        csum, f1 = one, zero
        for v in (a, b):
            q = B.fdiv(v, mx)
            csum, f1 = neumaier(csum, f1, B.fmul(q, q))
        tiny = B.fmul(mx, B.call(sqrt, [B.fadd(B.fsub(csum, one), f1)]))
        r = B.select(B.icmp_signed(">=", max_e, i32(-1023)), scaled, tiny)
        r = B.select(B.fcmp_ordered("==", mx, zero), mx, r)
        r = B.select(found_nan, f64(float("nan")), r)
        r = B.select(self.isinf(mx), mx, r)
        return [[r]]
