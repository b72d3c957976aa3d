"""Lowering of scalar IR graphs to LLVM IR.

Calling convention. Every graph becomes

    internal i32 @<prefix>.<graph>(<scalar leaves of the inputs>, {<leaves of the output>}* %out)

returning 0 or an error code (``errors.ERROR_TABLE``) and storing its result through ``%out``; a function
that returns an error code has released every reference it owned (unwind.py). Values are
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

from ....ir.core import Block, Graph, Node, Value
from ....ir.types import BOOL, FLOAT, INT, ListType, TensorType, TupleType, Type
from ... import ownership
from ...ownership import consumes
from .common import (
    F64,
    I1,
    I8,
    I32,
    I64,
    INT64_MIN,
    UNSUPPORTED_DETAIL,
    holds_ref,
    i1,
    i32,
    i64,
    is_lowerable,
    leaves,
    mem_type,
    out_struct,
    ref_parts,
    reg_type,
)
from .rules import rule_for
from .target import CPU, Target
from ..runtime.errors import LoweringError
from .arrays import ArrayOps
from .builtins_lower import build_stack_floor_function, stack_budget
from .interrupts import CHUNK, InterruptChecks, is_unbounded_while
from .unwind import Unwinding, build_payload_function
from .outline import Outlining
from ..runtime.folding import FoldingBuilder
from ..runtime.text_builder import TextBuilder
from . import lists, scalar_ops, strings

# the modules of operator rules: importing one registers its operators' rules (rules.py)
from . import array_math, arrayfns, constants, fused, fused_loop, fused_multi, fused_parallel  # noqa: F401
from . import masks, matmul, numpy_scalars, parallel, random_lower, simd, structure, sum_reductions, views  # noqa: F401


def check_graph(graph: Graph, seen=None) -> None:
    """Raise LoweringError for the first node (in program order, callees included) whose operator or types
    the backend does not lower. Operators are checked before types so that the error names the culprit
    (``prim::Print``, not the string constant feeding it)."""
    seen = set() if seen is None else seen
    if id(graph) in seen:
        return
    seen.add(id(graph))
    for node in graph.walk():
        if rule_for(node) is None:
            detail = UNSUPPORTED_DETAIL.get(node.kind)
            if detail is None:
                bad = [v.type for v in list(node.inputs) + list(node.outputs) if not is_lowerable(v.type)]
                detail = (
                    f"values of type {bad[0]} are not supported by the native backend yet"
                    if bad
                    else "operator not supported by the native backend yet"
                )
            raise LoweringError(node.kind, detail, node.source)
        if isinstance(node.attrs.get("axis"), (tuple, list)):
            raise LoweringError(
                node.kind,
                "a tuple of axes is not supported by the native backend yet; reduce one "
                "axis at a time: np.sum(np.sum(x, axis=1), axis=0)",
                node.source,
            )
        if node.kind == "prim::CallFunction":
            check_graph(node.attrs["fn"], seen)
    for v in graph.inputs:
        if not is_lowerable(v.type):
            raise LoweringError(
                f"graph input %{v.name}", f"values of type {v.type} are not supported by the native backend yet"
            )
    for node in graph.walk():
        for v in list(node.outputs) + [p for b in node.blocks for p in b.params]:
            if not is_lowerable(v.type):
                raise LoweringError(
                    node.kind,
                    f"values of type {v.type} are not supported by the native scalar backend yet",
                    node.source,
                )
    for v in graph.outputs:
        if not is_lowerable(v.type):
            raise LoweringError("prim::Return", f"returning {v.type} is not supported by the native scalar backend yet")


# -- module ----------------------------------------------------------------------------------------------


class ModuleLowering:
    """One LLVM module: the compiled graph, its callees, helper functions and libm declarations."""

    def __init__(self, prefix: str, nogil: bool = False, target: Target = CPU):
        self.prefix = prefix
        self.target = target
        self.nogil = nogil  # the code runs without the GIL: Python refcounts must take it
        self.stack_budget = stack_budget() if target.stack_checks else None  # C stack calls may take
        self.module = ir.Module(name=prefix, context=ir.Context())  # its named struct types are its own
        if target.triple is not None:
            self.module.triple, self.module.data_layout = target.triple, target.data_layout
        self._functions: dict[int, tuple[Graph, ir.Function]] = {}  # the graph kept: its id stays its own
        self._names: set[str] = set()
        self._decls: dict[str, ir.Function] = {}
        self._outlined: dict = {}  # structure key -> outline.Shared
        self._lowering: list[ir.Function] = []  # the functions being lowered (a caller waits on its callees)
        self.stream = None  # a streaming.KernelStream: finished functions are generated meanwhile

    def unique(self, base: str) -> str:
        name, k = f"{self.prefix}.{base}", 0
        while name in self._names:
            k += 1
            name = f"{self.prefix}.{base}.{k}"
        self._names.add(name)
        return name

    def struct_type(self, base: str, elements: list) -> ir.IdentifiedStructType:
        """A named struct type: the text spells its fields once, not at each use (a parallel loop's context of 40
        fields, read by a GEP per field, was a quarter of a large module's text)."""
        t = self.module.context.get_identified_type(self.unique(base))
        t.set_body(*elements)
        return t

    def function_for(self, graph: Graph) -> ir.Function:
        known = self._functions.get(id(graph))
        if known is not None:
            return known[1]
        lowering = FunctionLowering(self, graph)
        lowering.nogil = self.nogil
        self._functions[id(graph)] = graph, lowering.function
        self._lowering.append(lowering.function)
        lowering.lower()
        self._lowering.pop()
        return lowering.function

    def finished(self) -> None:
        """A function is finished (its text will not change): the stream may ship it."""
        if self.stream is not None:
            self.stream.functions_finished(self.module, self._lowering)

    def entry(self, graph: Graph) -> str:
        """An external ``i32 name(<args, bools as i8>, out*)`` calling the graph's function."""
        inner = self.function_for(graph)
        self.finished()
        in_types = [t for v in graph.inputs for t in leaves(v.type)]
        out_t = out_struct(graph.outputs[0].type, self.module)
        fnty = ir.FunctionType(I32, [mem_type(t) for t in in_types] + [out_t.as_pointer()])
        fn = ir.Function(self.module, fnty, self.unique(f"entry.{graph.name}"))
        b = TextBuilder(fn.append_basic_block("entry"))
        args = [
            b.icmp_unsigned("!=", a, ir.Constant(I8, 0)) if t == BOOL else a for a, t in zip(fn.args[:-1], in_types)
        ]
        b.ret(b.call(inner, args + [fn.args[-1]]))
        return fn.name

    # -- declarations ----------------------------------------------------------------------------------
    def libm(self, name: str, nargs: int = 1, fnty: ir.FunctionType | None = None) -> ir.Function:
        """A libm function under the target's name for it (on the CPU a private name, engine.py: LLVM must not
        know what it computes)."""
        key = self.target.math_symbol(name)
        fn = self._decls.get(key)
        if fn is None:
            fn = ir.Function(self.module, fnty or ir.FunctionType(F64, [F64] * nargs), key)
            fn.attributes.add("nounwind")
            self._decls[key] = fn
        return fn

    def intrinsic(self, name: str) -> ir.Function:
        """``llvm.<name>.f64`` (sqrt floor ceil trunc fabs copysign fma maxnum minnum: exact operations)."""
        key = f"llvm.{name}.f64"
        fn = self._decls.get(key)
        if fn is None:
            nargs = {"copysign": 2, "maxnum": 2, "minnum": 2, "fma": 3}.get(name, 1)
            fn = self.module.declare_intrinsic(f"llvm.{name}", [F64], ir.FunctionType(F64, [F64] * nargs))
            self._decls[key] = fn
        return fn

    def helper(self, name: str) -> ir.Function:
        fn = self._decls.get(name)
        if fn is None:
            fn = self._decls[name] = getattr(self, f"_build_{name}")()
        return fn

    def _build_payload(self) -> ir.Function:
        return build_payload_function(self)

    def _build_stack_floor(self) -> ir.Function:
        return build_stack_floor_function(self)

    def _build_ipow(self) -> ir.Function:
        """i64 ipow(i64 base, i64 exp), exp >= 0: square and multiply, wrapping at 64 bits."""
        fn = ir.Function(self.module, ir.FunctionType(I64, [I64, I64]), self.unique("ipow"))
        fn.linkage = "internal"
        base, exp = fn.args
        entry, loop, body, done = (fn.append_basic_block(n) for n in ("entry", "loop", "body", "done"))
        b = TextBuilder(entry)
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
        entry, fast, slow, loop, body, done = (
            fn.append_basic_block(n) for n in ("entry", "fast", "slow", "loop", "body", "done")
        )
        b = TextBuilder(entry)
        zero = i64(0)
        a_neg, b_neg = b.icmp_signed("<", a, zero), b.icmp_signed("<", bb, zero)
        ua = b.select(a_neg, b.sub(zero, a), a)
        ub = b.select(b_neg, b.sub(zero, bb), bb)
        lim = i64(2**53)
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
        r2 = b.shl(r, i64(1))  # r < ub <= 2**63: no overflow
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
        scale = b.bitcast(b.shl(b.sub(i64(1023), s), i64(52)), F64)  # 2**-s, s <= 127: a normal double
        res = b.fmul(d, scale)
        neg = b.xor(a_neg, b_neg)
        b.ret(b.select(neg, b.fneg(res), res))
        return fn


# -- functions -------------------------------------------------------------------------------------------


def _arrays_in(t: Type) -> int:
    """How many arrays a value of type ``t`` holds (tuples looked into)."""
    if isinstance(t, TupleType):
        return sum(map(_arrays_in, t.elems))
    return int(isinstance(t, TensorType))


class FunctionLowering(Unwinding, InterruptChecks, ArrayOps, Outlining):
    """Lowers one graph to one LLVM function: a visitor over nodes, blocks become basic blocks.

    The class is the lowering's core: values, blocks, control flow, unwinding, memory and element access. What an
    operator does is a rule function of its domain's module (``rules.py``), called with this object as ``ctx``."""

    nogil = False  # native code runs with the GIL held; true: refcount calls take the GIL themselves
    in_parallel_kernel = False  # lowering a kernel: nested parallel loops run sequentially
    atomic_refcounts = False  # retain/release/alloc through the atomic runtime functions
    compiled_once = False  # a function compiled once per process (summation.build_function): no interrupt checks

    def __init__(self, mod: ModuleLowering, graph: Graph):
        self.mod, self.graph = mod, graph
        self.in_types = [t for v in graph.inputs for t in leaves(v.type)]
        self.out_type = graph.outputs[0].type
        self.out_struct = out_struct(self.out_type, mod.module)
        fnty = ir.FunctionType(I32, [reg_type(t) for t in self.in_types] + [self.out_struct.as_pointer()])
        self.function = ir.Function(mod.module, fnty, mod.unique(graph.name))
        self.function.linkage = "internal"
        self.function.attributes.add("nounwind")
        self.env: dict[int, list] = {}
        self.entry_block = self.function.append_basic_block("entry")
        self.b = FoldingBuilder(self.entry_block)
        self.node: Node | None = None
        # each array a node makes has a slot while its operator runs, and one while it is held
        self.init_unwind(arrays=2 * sum(_arrays_in(v.type) for n in graph.walk() for v in n.outputs))

    @classmethod
    def into(
        cls, mod: ModuleLowering, function: ir.Function, node: Node, *, nogil: bool, graph: Graph | None = None
    ) -> FunctionLowering:
        """A lowering writing the element code of ``node`` (a fusion group) into ``function``, a kernel or chunk
        function whose parameters its caller binds (``env``): no graph and no result of its own."""
        self = cls.__new__(cls)
        self.mod, self.function, self.node, self.env, self.graph = mod, function, node, {}, graph
        self.nogil = nogil
        self.init_unwind()
        self.entry_block = function.append_basic_block("entry")
        self.b = FoldingBuilder(self.entry_block)
        return self

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
        self.own = ownership.analyze(self.graph)
        args = list(self.function.args[:-1])
        for v in self.graph.inputs:
            n = len(leaves(v.type))
            self.bind(v, args[:n])
            args = args[n:]
        (result,) = self.lower_block(self.graph.block)
        self.store_out(self.function.args[-1], result, self.out_type)
        self.b.ret(i32(0))
        self.finish_unwind()

    def store_out(self, ptr, vals, t: Type) -> None:
        for k, (x, lt) in enumerate(zip(vals, leaves(t))):
            if lt == BOOL:
                x = self.b.zext(x, I8)
            self.b.store(x, self.b.gep(ptr, [i32(0), i32(k)], inbounds=True))

    def lower_block(self, block: Block) -> list[list]:
        """Lower a block's nodes, taking and dropping references as ``ownership`` placed them; the error path
        releases what is held at each raise point (unwind.py)."""
        outer, outer_in_flight = self.node, self.in_flight
        self.in_flight = None
        if block is not self.graph.block:  # the graph's parameters are borrowed from the caller
            for p in block.params:
                if holds_ref(p.type):
                    self.hold(p)
        for v in self.own.drop_at_entry.get(id(block), []):
            self.release(v)
        for node in block.nodes:
            self.node = node
            self.retain_consumed(node)
            self.in_flight = []
            outs = self.lower_outlined(node) if self.outlines(node) else rule_for(node)(self, node)
            self.node = node  # nested blocks moved it
            moved = self.own.moved_into.get(id(node))
            for v, vals in zip(node.outputs, outs):
                self.bind(v, vals)
                if not holds_ref(v.type) or id(v) in self.own.borrowed:
                    continue
                if moved and node.kind == "prim::TupleConstruct":
                    self.hold_taking_over(v, node.inputs, moved)  # (the moved elements' slots: no stores)
                else:
                    self.hold(v)
            self.land_in_flight()
            self.in_flight = None
            self.drop_after(node)
        self.node, self.in_flight = outer, outer_in_flight
        results = [self.get(v) for v in block.returns]
        self.retain_consumed(block.return_node)
        self.drop_after(block.return_node)
        return results

    def retain_consumed(self, node: Node) -> None:
        for i, v in enumerate(node.inputs):
            if holds_ref(v.type) and consumes(node, i) and not self.own.moves(node, v):
                self.retain(v)

    def drop_after(self, node: Node) -> None:
        for v in self.own.after(node):
            self.release(v)
        for v in self.own.moved_into.get(id(node), ()):
            self.unhold(v)  # its reference now belongs to the consumer's result

    def retain(self, v: Value) -> None:
        """A consuming use's own reference to ``v`` (held by the consumer's result)."""
        for t, vals in ref_parts(v.type, self.get(v)):
            self.take_ref(t, vals)

    def release(self, v: Value) -> None:
        for t, vals in ref_parts(v.type, self.get(v)):
            self.release_part(t, vals)
        self.unhold(v)

    def release_part(self, t: Type, vals: list) -> None:
        """Drop one counted part (ref_parts) of a value: an array's meminfo, a str, a list."""
        if isinstance(t, TensorType):
            self.array_release(vals)
        elif isinstance(t, ListType):
            lists.list_release(self, vals, t)
        else:
            strings.str_release(self, vals)

    def alloca(self, ty):
        with self.b.goto_block(self.entry_block):
            self.b.position_at_start(self.entry_block)
            return self.b.alloca(ty)

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
            return [scalar_ops.to_f64(self, vals[0], src)]
        if dst == INT and src == BOOL:
            return [scalar_ops.to_i64(self, vals[0], src)]
        if (
            isinstance(src, TensorType)
            and isinstance(dst, TensorType)
            and (src.dtype, src.rank) == (dst.dtype, dst.rank)
        ):
            return vals  # the shapes the types know differ; the values carry the real ones
        raise LoweringError(self.node.kind, f"cannot pass {src} where {dst} is expected", self.node.source)

    def projected(self, v: Value, vals: list) -> list:
        """An element taken out of a tuple: like every node's output it owns its references (the tuple keeps
        its own until it is dropped), unless it is borrowed, as an element of a graph input is."""
        if id(v) not in self.own.borrowed:
            for part_t, part in ref_parts(v.type, vals):
                self.take_ref(part_t, part)
        return vals

    @staticmethod
    def _split(vals, values):
        outs = []
        for v in values:
            n = len(leaves(v.type))
            outs.append(list(vals[:n]))
            vals = vals[n:]
        return outs

    def lower_versioned_loop(self, node, init, types):
        """An innermost counted loop twice: in chunks when it has more than CHUNK trips, else plain (paying
        nothing into the budget: its parent loop pays one per iteration, so a nest of short loops still looks
        at the flag every CHUNK iterations of the parent, and a short loop costs one comparison more)."""
        b = self.b
        slots = [self.alloca(reg_type(t)) for t in types]
        with b.if_else(b.icmp_signed(">", self.scalar(node.inputs[0]), i64(CHUNK)), likely=False) as (long, short):
            for version, lower in ((long, self.lower_chunked_loop), (short, self.lower_plain_loop)):
                with version:
                    out = lower(node, init, types)
                    for slot, x in zip(slots, [x for vals in out for x in vals]):
                        b.store(x, slot)
        return self._split([b.load(slot) for slot in slots], node.outputs)

    def lower_plain_loop(self, node, init, types):
        b = self.b
        max_trips, cond0 = node.inputs[:2]
        body = node.blocks[0]
        unbounded = is_unbounded_while(max_trips) and not body.params[0].uses
        pre = b.block
        header = b.append_basic_block("loop.header")
        body_bb = b.append_basic_block("loop.body")
        exit_bb = b.append_basic_block("loop.exit")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64, "trip")
        cond = b.phi(I1, "cond")
        phis = [b.phi(reg_type(t), "carried") for t in types]
        if unbounded:
            go = cond  # a `while` loop: no counter to keep (2**63 - 1 trips are never reached)
        else:
            go = b.select(cond, b.icmp_signed("<", i, self.scalar(max_trips)), i1(False))
        b.cbranch(go, body_bb, exit_bb)
        b.position_at_end(body_bb)
        cond1, carried1 = self.lower_loop_body(body, i, phis)
        if unbounded and self.interruptible and not self.inside_loop(node):
            # an outermost `while`: each iteration paid into the budget (a nested one's parent pays: a counter
            # in a tight inner `while` costs it a third, as in an insertion sort)
            budget = self.interrupt_budget()
            left = b.sub(b.load(budget), i64(1))
            b.store(left, budget)
            with b.if_then(b.icmp_signed("<=", left, i64(0)), likely=False):
                b.store(i64(CHUNK), budget)
                self.check_interrupt()
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

    @staticmethod
    def inside_loop(node) -> bool:
        block = node.block
        while block is not None and block.owner is not None:
            if block.owner.kind == "prim::Loop":
                return True
            block = block.owner.block
        return False

    def lower_loop_body(self, body, i, phis):
        """The body for iteration ``i`` with carried values ``phis``: (its condition, its carried results)."""
        self.bind(body.params[0], [i])
        for p, vals in zip(body.params[1:], self._split(phis, body.params[1:])):
            self.bind(p, vals)
        cond1, *carried1 = self.lower_block(body)
        carried1 = [self.convert(r, v.type, p.type) for r, v, p in zip(carried1, body.returns[1:], body.params[1:])]
        return cond1, carried1

    def lower_chunked_loop(self, node, init, types):
        """The loop as chunks: the inner loop is the plain loop (what LLVM vectorizes: no call, no atomic load in
        it), run up to the function's remaining budget of iterations (interrupts.py); between two chunks the
        budget is paid and, where it ran out, the interrupt flag looked at. Every loop of the function draws on
        one budget, so that a nest of short loops looks at the flag as often as one long loop."""
        b = self.b
        max_trips, cond0 = node.inputs[:2]
        body = node.blocks[0]
        trips = self.scalar(max_trips)
        budget = self.interrupt_budget()
        pre = b.block
        outer, chunk, inner, body_bb, chunk_end, exit_bb = (
            b.append_basic_block(f"loop.{x}") for x in ("chunks", "chunk", "header", "body", "chunk.end", "exit")
        )
        b.branch(outer)
        b.position_at_end(outer)
        start = b.phi(I64, "chunk.start")
        cond_o = b.phi(I1, "cond")
        phis_o = [b.phi(reg_type(t), "carried") for t in types]
        b.cbranch(b.select(cond_o, b.icmp_signed("<", start, trips), i1(False)), chunk, exit_bb)
        b.position_at_end(chunk)
        with b.if_then(b.icmp_signed("<=", b.load(budget), i64(0)), likely=False):
            b.store(i64(CHUNK), budget)
            self.check_interrupt()
        room = b.sub(trips, start)
        left = b.load(budget)
        limit = b.add(start, b.select(b.icmp_signed("<", room, left), room, left))
        chunk_entry = b.block
        b.branch(inner)
        b.position_at_end(inner)
        i = b.phi(I64, "trip")
        cond = b.phi(I1, "cond")
        phis = [b.phi(reg_type(t), "carried") for t in types]
        b.cbranch(b.select(cond, b.icmp_signed("<", i, limit), i1(False)), body_bb, chunk_end)
        b.position_at_end(body_bb)
        cond1, carried1 = self.lower_loop_body(body, i, phis)
        i_next = b.add(i, i64(1))
        latch = b.block
        b.branch(inner)
        i.add_incoming(start, chunk_entry), i.add_incoming(i_next, latch)
        cond.add_incoming(cond_o, chunk_entry), cond.add_incoming(cond1[0], latch)
        for phi, outer_phi, x1 in zip(phis, phis_o, [x for r in carried1 for x in r]):
            phi.add_incoming(outer_phi, chunk_entry)
            phi.add_incoming(x1, latch)
        b.position_at_end(chunk_end)
        b.store(b.sub(b.load(budget), b.sub(i, start)), budget)
        b.branch(outer)
        start.add_incoming(i64(0), pre), start.add_incoming(i, chunk_end)
        cond_o.add_incoming(self.scalar(cond0), pre), cond_o.add_incoming(cond, chunk_end)
        for phi_o, x0, phi in zip(phis_o, init, phis):
            phi_o.add_incoming(x0, pre)
            phi_o.add_incoming(phi, chunk_end)
        b.position_at_end(exit_bb)
        return self._split(phis_o, node.outputs)
