"""Parallel loops (``prim::Loop`` with ``parallel=1``, frontend/parallel.py) on the thread pool (pool.py).

A parallel loop of ``trips`` iterations is cut into ``n = min(threads, trips, MAX_THREADS)`` contiguous chunks
(a static block schedule: chunk ``c`` runs iterations ``[c*q + min(c, r), ...)`` with ``q, r = divmod(trips,
n)``). Its body becomes a *kernel*: a separate graph ``kernel(lo, hi, captured..., accumulators...)`` running the
body over ``[lo, hi)`` as a sequential loop, lowered like any graph (its own reference ownership and unwinding),
with atomic reference counts (several threads may take views of one array). A trampoline ``chunk(ctx, c)``
reads the captured values from a context struct on the caller's stack, runs the kernel on chunk ``c`` and
stores its status, its partial results and, on error, a copy of its thread's error payload in slot ``c``.

Reductions: chunk 0 starts from the value before the loop, every other chunk from the identity of its kind (add:
0 or -0.0, mul: 1, max: the smallest value, min: the largest); the caller combines the partial results in chunk
order with the same operation. With one thread there is one chunk and the result is the sequential loop's, bit
for bit; with n threads a float sum is added in another order than the sequential loop (the last bits may
differ), but always in the same order for the same n. Errors: a chunk stops at its first failing iteration; the
caller raises the error of the lowest failing chunk, which holds the lowest failing iteration of the loop.

A parallel loop runs as the plain sequential loop (loop.py's lowering) when it is nested in another parallel
loop's kernel, when its body calls another scripted function (callees count references non-atomically),
touches strs or lists (Python objects and list headers are not thread-safe) or calls into Python (an operator
registered ``calls_python``, ``round(x, n)``: a worker would wait for the GIL that a caller holding it waits on),
or when its reductions are not recognised (the ``reduce`` attribute does not match the carried values).
"""

from __future__ import annotations

import math

from llvmlite import ir

from ....ir.builder import Builder
from ....ir.clone import clone_nodes_into
from ....ir.core import Graph, Node, Value
from ....ir.registry import REGISTRY
from ....ir.types import FLOAT, INT, NONE, STR, ListType, TupleType
from .common import F64, I8P, I32, I64, i32, i64, out_struct, process_global, reg_type
from ..runtime.text_builder import TextBuilder
from ..runtime.errors import PAYLOAD_SLOTS
from ..runtime.pool import CHUNK_FN, MAX_THREADS, RUN_SYMBOL, THREADS_SYMBOL, ensure_runtime
from . import arrays

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
IDENTITY = {
    ("add", INT): 0,
    ("add", FLOAT): -0.0,
    ("mul", INT): 1,
    ("mul", FLOAT): 1.0,
    ("max", INT): INT64_MIN,
    ("max", FLOAT): -math.inf,
    ("min", INT): INT64_MAX,
    ("min", FLOAT): math.inf,
}


def parallel_plan(node: Node) -> list[str] | None:
    """The reduction kinds of a parallel loop the pool can run, or None (run it sequentially)."""
    if not node.attrs.get("parallel"):
        return None
    body = node.blocks[0]
    kinds = list(node.attrs.get("reduce", []))
    params = body.params[1:]
    if len(kinds) != len(params) or any((k, p.type) not in IDENTITY for k, p in zip(kinds, params)):
        return None
    for n in body.walk():
        if n.kind == "prim::CallFunction" or REGISTRY.get(n.kind) and REGISTRY[n.kind].extra.get("calls_python"):
            return None  # (a worker calling into Python would wait for the GIL that the caller holds)
        for v in list(n.inputs) + list(n.outputs):
            if _python_object(v.type):
                return None
    return kinds


def _python_object(t) -> bool:
    if t == STR or isinstance(t, ListType):
        return True
    return isinstance(t, TupleType) and any(_python_object(e) for e in t.elems)


def captured_values(body) -> list[Value]:
    """Values the body (nested blocks included) uses but does not define, in first-use order."""
    defined, out = set(), {}

    def visit(block):
        defined.update(map(id, block.params))
        for n in block.nodes:
            for v in n.inputs:
                if id(v) not in defined:
                    out.setdefault(id(v), v)
            for b in n.blocks:
                visit(b)
            defined.update(map(id, n.outputs))
        for v in block.returns:
            if id(v) not in defined:
                out.setdefault(id(v), v)

    visit(body)
    return list(out.values())


def kernel_graph(node: Node, captured: list[Value], name: str) -> Graph:
    """``kernel(lo, hi, captured..., accumulators...)``: the loop body over iterations ``[lo, hi)``."""
    body = node.blocks[0]
    g = Graph(name)
    lo, hi = g.add_input(INT, "lo"), g.add_input(INT, "hi")
    value_map = {id(v): g.add_input(v.type, v.name) for v in captured}
    accs = [g.add_input(p.type, p.name) for p in body.params[1:]]
    top = Builder.at_end(g.block)
    trips = top.op("aten::sub", [hi, lo], [INT], hints="trips").output
    true = top.constant(True)
    loop = top.op(
        "prim::Loop",
        [trips, true] + accs,
        [p.type for p in body.params[1:]],
        source=node.source,
        hints=[p.name for p in body.params[1:]],
    )
    inner = Builder.add_block(loop, [(INT, "j")])
    j = inner.params[0]
    value_map[id(body.params[0])] = Builder.at_end(inner).op("aten::add", [lo, j], [INT], hints="i").output
    for p in body.params[1:]:
        value_map[id(p)] = inner.add_param(p.type, p.name)
    for r in clone_nodes_into(body, inner, None, value_map):
        inner.add_return(r)
    outs = loop.outputs
    if not outs:
        result = top.op("prim::Constant", [], [NONE], {"value": None}).output
    elif len(outs) == 1:
        result = outs[0]
    else:
        result = top.op("prim::TupleConstruct", outs, [TupleType([v.type for v in outs])]).output
    g.block.add_return(result)
    return g


# -- parallel loops, and the atomic reference-count runtime their kernels use (functions of ``ctx``) -----


def lower_parallel_loop(ctx, node: Node, kinds: list[str]):
    if not ctx.mod.target.standalone:
        ensure_runtime()  # an exported library includes its own copy of the pool (export.py)
    b = ctx.b
    body = node.blocks[0]
    params = body.params[1:]
    inits = [x for v, p in zip(node.inputs[2:], params) for x in ctx.convert(ctx.get(v), v.type, p.type)]
    captured = captured_values(body)
    kernel, kernel_out = kernel_function(ctx, node, captured)
    cap_vals = [x for v in captured for x in ctx.get(v)]
    idents = [constant_leaf(ctx, IDENTITY[(k, p.type)], p.type) for k, p in zip(kinds, params)]
    acc_types = [reg_type(p.type) for p in params]
    part_t = out_struct(kernel_out, ctx.mod.module)
    ctx_t = ctx.mod.struct_type(
        "parallel.ctx.t",
        [I64, I64]
        + [x.type for x in cap_vals]
        + acc_types
        + acc_types
        + [I32.as_pointer(), I64.as_pointer(), part_t.as_pointer()],
    )
    with b.goto_entry_block():
        packed = b.alloca(ctx_t, name="parallel.ctx")
        status = b.alloca(ir.ArrayType(I32, MAX_THREADS), name="parallel.status")
        payloads = b.alloca(ir.ArrayType(I64, MAX_THREADS * PAYLOAD_SLOTS), name="parallel.payloads")
        parts = b.alloca(ir.ArrayType(part_t, MAX_THREADS), name="parallel.parts")
    trips = ctx.scalar(node.inputs[0])
    threads = b.load(mod_global(ctx, THREADS_SYMBOL, I64))
    n = smin(ctx, smin(ctx, threads, i64(MAX_THREADS)), trips)
    status0 = b.gep(status, [i32(0), i32(0)])
    fields = (
        [trips, n]
        + cap_vals
        + inits
        + idents
        + [status0, b.gep(payloads, [i32(0), i32(0)]), b.gep(parts, [i32(0), i32(0)])]
    )
    for k, x in enumerate(fields):
        b.store(x, b.gep(packed, [i32(0), i32(k)], inbounds=True))
    pre = b.block
    run_bb, combine_bb, done_bb = (b.append_basic_block(f"parallel.{x}") for x in ("run", "combine", "done"))
    b.cbranch(b.icmp_signed(">", trips, i64(0)), run_bb, done_bb)
    b.position_at_end(run_bb)
    trampoline = chunk_trampoline(ctx, kernel, ctx_t, len(cap_vals), len(acc_types))
    run = mod_function(ctx, RUN_SYMBOL, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64]))
    b.call(run, [b.bitcast(trampoline, I8P), b.bitcast(packed, I8P), n])
    # combine in chunk order; the first failing chunk raises (its payload copied to this thread's)
    head = b.block
    b.branch(combine_bb)
    b.position_at_end(combine_bb)
    c = b.phi(I64, "chunk")
    accs = [b.phi(t, "acc") for t in acc_types]
    code = b.load(b.gep(status, [i32(0), c]))
    with b.if_then(b.icmp_signed("!=", code, i32(0)), likely=False):
        mine = b.call(ctx.mod.helper("payload"), [])
        theirs = b.gep(payloads, [i32(0), b.mul(c, i64(PAYLOAD_SLOTS))])
        for k in range(PAYLOAD_SLOTS):
            b.store(b.load(b.gep(theirs, [i64(k)])), b.gep(mine, [i64(k)]))
        if ctx.interruptible:  # chunks stopped at Ctrl-C: Python's handler runs here, once
            with b.if_then(b.icmp_signed("==", code, i32(ctx.interrupt_code())), likely=False):
                ctx.run_interrupt_check()
        ctx.fail(code)
    part = b.gep(parts, [i32(0), c])
    first = b.icmp_signed("==", c, i64(0))
    merged = []
    for k, (kind, p, acc) in enumerate(zip(kinds, params, accs)):
        x = b.load(b.gep(part, [i32(0), i32(k)]))
        merged.append(b.select(first, x, combine(ctx, kind, p.type, acc, x)))
    c1 = b.add(c, i64(1))
    latch = b.block
    more = b.icmp_signed("<", c1, n)
    after = b.append_basic_block("parallel.combined")
    b.cbranch(more, combine_bb, after)
    c.add_incoming(i64(0), head)
    c.add_incoming(c1, latch)
    for phi, m, x0 in zip(accs, merged, inits):
        phi.add_incoming(ir.Constant(phi.type, ir.Undefined), head)
        phi.add_incoming(m, latch)
    b.position_at_end(after)
    b.branch(done_bb)
    b.position_at_end(done_bb)
    results = []
    for x0, m in zip(inits, merged):
        phi = b.phi(x0.type)
        phi.add_incoming(x0, pre)
        phi.add_incoming(m, after)
        results.append(phi)
    return ctx._split(results, node.outputs)


def smin(ctx, x, y):
    return ctx.b.select(ctx.b.icmp_signed("<", x, y), x, y)


def constant_leaf(ctx, value, t):
    return ir.Constant(F64, value) if t == FLOAT else i64(value)


def combine(ctx, kind: str, t, a, x):
    b = ctx.b
    if kind == "add":
        return b.fadd(a, x) if t == FLOAT else b.add(a, x)
    if kind == "mul":
        return b.fmul(a, x) if t == FLOAT else b.mul(a, x)
    # Python's max(a, x) is x only if x > a (min: x < a), so NaNs and ties keep the earlier value
    op = ">" if kind == "max" else "<"
    better = b.fcmp_ordered(op, x, a) if t == FLOAT else b.icmp_signed(op, x, a)
    return b.select(better, x, a)


def mod_global(ctx, name: str, ty):
    g = ctx.mod.module.globals.get(name)
    if g is None:
        g = ir.GlobalVariable(ctx.mod.module, ty, name)
    return g


def mod_function(ctx, name: str, fnty):
    fn = ctx.mod.module.globals.get(name)
    return fn if fn is not None else ir.Function(ctx.mod.module, fnty, name)


def kernel_function(ctx, node: Node, captured: list[Value]):
    graph = kernel_graph(node, captured, f"{ctx.graph.name}.prange")
    lowering = type(ctx)(ctx.mod, graph)
    lowering.nogil = ctx.nogil
    lowering.in_parallel_kernel = lowering.atomic_refcounts = True
    lowering.lower()
    return lowering.function, graph.outputs[0].type


def chunk_trampoline(ctx, kernel: ir.Function, ctx_t, n_caps: int, n_accs: int) -> ir.Function:
    """``void chunk(i8* ctx, i64 c)``: run the kernel on chunk ``c``; store its status, partial results and
    (on error) this thread's payload in slot ``c``."""
    fn = ir.Function(ctx.mod.module, CHUNK_FN, ctx.mod.unique("prange.chunk"))
    fn.linkage = "internal"
    b = TextBuilder(fn.append_basic_block("entry"))
    packed = b.bitcast(fn.args[0], ctx_t.as_pointer())
    c = fn.args[1]

    def field(k):
        return b.load(b.gep(packed, [i32(0), i32(k)], inbounds=True))

    trips, n = field(0), field(1)
    caps = [field(2 + k) for k in range(n_caps)]
    inits = [field(2 + n_caps + k) for k in range(n_accs)]
    idents = [field(2 + n_caps + n_accs + k) for k in range(n_accs)]
    base = 2 + n_caps + 2 * n_accs
    status, payloads, parts = field(base), field(base + 1), field(base + 2)
    q, r = b.sdiv(trips, n), b.srem(trips, n)
    lo = b.add(b.mul(c, q), b.select(b.icmp_signed("<", c, r), c, r))
    hi = b.add(b.add(lo, q), b.zext(b.icmp_signed("<", c, r), I64))
    first = b.icmp_signed("==", c, i64(0))
    accs = [b.select(first, x0, e) for x0, e in zip(inits, idents)]
    code = b.call(kernel, [lo, hi] + caps + accs + [b.gep(parts, [c])])
    b.store(code, b.gep(status, [c]))
    with b.if_then(b.icmp_signed("!=", code, i32(0)), likely=False):
        mine = b.call(ctx.mod.helper("payload"), [])
        theirs = b.gep(payloads, [b.mul(c, i64(PAYLOAD_SLOTS))])
        for k in range(PAYLOAD_SLOTS):
            b.store(b.load(b.gep(mine, [i64(k)])), b.gep(theirs, [i64(k)]))
    b.ret_void()
    return fn


# -- the atomic runtime (kernels: several threads retain and release one array) ------------------------
def build_rt_retain_atomic(ctx, key):
    fn = ir.Function(ctx.mod.module, ir.FunctionType(ir.VoidType(), [I8P]), key)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    b = TextBuilder(fn.append_basic_block())
    with b.if_then(b.icmp_unsigned("!=", fn.args[0], ir.Constant(I8P, None))):
        b.atomic_rmw("add", b.bitcast(fn.args[0], I64.as_pointer()), i64(1), "monotonic")
    b.ret_void()
    return fn


def build_rt_release_atomic(ctx, key):
    fn = ir.Function(ctx.mod.module, ir.FunctionType(ir.VoidType(), [I8P]), key)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    b = TextBuilder(fn.append_basic_block())
    with b.if_then(b.icmp_unsigned("!=", fn.args[0], ir.Constant(I8P, None))):
        old = b.atomic_rmw("sub", b.bitcast(fn.args[0], I64.as_pointer()), i64(1), "acq_rel")
        with b.if_then(b.icmp_signed("==", old, i64(1))):
            b.call(ctx._libc("free", ir.VoidType(), [I8P]), [fn.args[0]])
            counter = process_global(ctx.mod.module, "scriptc.frees", arrays.FREES_ADDRESS, I64)
            b.atomic_rmw("add", counter, i64(1), "monotonic")
    b.ret_void()
    return fn


def build_rt_alloc_atomic(ctx, key):
    """``alloc`` (arrays.py) with the allocation counter updated atomically."""
    fn = ir.Function(ctx.mod.module, ir.FunctionType(I8P, [I64]), key)
    fn.linkage = "internal"
    b = TextBuilder(fn.append_basic_block())
    size = b.and_(b.add(fn.args[0], i64(arrays.HEADER + 63)), i64(-64))
    p = ctx.allocate_block(b, fn, size)
    with b.if_then(b.icmp_unsigned("!=", p, ir.Constant(I8P, None))):
        b.store(i64(1), b.bitcast(p, I64.as_pointer()))
        counter = process_global(ctx.mod.module, "scriptc.allocations", arrays.ALLOCATIONS_ADDRESS, I64)
        b.atomic_rmw("add", counter, i64(1), "monotonic")
    b.ret(p)
    return fn
