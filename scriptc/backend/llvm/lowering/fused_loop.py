"""Lowering of ``prim::FusedLoop`` (time-loop fusion) and its guard ``prim::ShapesFit``.

A FusedLoop runs the fused element loop of ``fused.py`` once over the carried arrays' shape and, for each
element, the whole time loop in registers: load the carried elements (and the invariant operands) once, apply
the body ``trips`` times, store the results once. Each element goes through exactly the operations the
array-at-a-time loop applies to it, rounded to each intermediate's dtype as in ``fused.py``, so the results
are bit-identical.

A time loop per element is a chain of dependent operations, so one element at a time runs at the latency of
the chain. Float64 and float32 bodies that ``simd.py`` vectorizes therefore run tiles of ``UNROLL_CHAINS``
vectors at once (several independent chains in flight, no memory traffic inside the time loop); the last partial
tile runs on a stack copy padded with its last element (a real element: the padding computes nothing an element
would not).
Other bodies (integers, float16, carried scalars) run ``UNROLL_CHAINS`` elements at a time, the rest one element
at a time; operands that are not contiguous with the carried shape take the one-element loop (broadcasting as
NumPy does).

Zero trips (or fewer) return the initial arrays themselves, as Python's loop does; otherwise each carried result
is a new array of the carried shape (the pass proved, or ``prim::ShapesFit`` checked, that shapes never change).
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.types import INT, TensorType
from .array_value import kind_of, scalar_kind
from .common import I1, I64, NO_UNROLL, NO_VECTORIZE, i64
from .rules import lowers, rule_for
from . import array_math, conversions, fused, interrupts, simd

UNROLL_CHAINS = 8  # independent vector chains per tile: latency 4 x 2 FP ports on current x86


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def scalar_time_loop(ctx, node, trips) -> list:
    """The final values of the carried scalars (computed from scalars only: the pass checked)."""
    sub = node.attrs["subgraph"]
    k = node.attrs["carried"]
    inits, invariants = node.inputs[1 : 1 + k], node.inputs[1 + k :]
    scalar = [not isinstance(v.type, TensorType) for v in inits]
    if not any(scalar):
        return []
    env = {
        id(p): ctx.scalar_operand(v)
        for p, v in zip(sub.inputs[1 + k :], invariants)
        if not isinstance(v.type, TensorType)
    }
    params = [p for p, s in zip(sub.inputs[1 : 1 + k], scalar) if s]
    results = [r for r, s in zip(sub.outputs, scalar) if s]

    def step(i, vals):
        local = dict(env)
        local[id(sub.inputs[0])] = ("i", i)
        local.update({id(p): x for p, x in zip(params, vals)})
        for n in sub.nodes:
            if n.kind == "prim::Constant":
                fused.fused_element_node(ctx, n, local)
            elif not isinstance(n.output.type, TensorType):
                local[id(n.output)] = scalar_node(ctx, n, local)
        return [
            (scalar_kind(r.type), conversions.cast(ctx, local[id(r)][1], local[id(r)][0], scalar_kind(r.type)))
            for r in results
        ]

    final = time_loop(ctx, trips, [ctx.scalar_operand(v) for v, s in zip(inits, scalar) if s], step)
    return [x for _, x in final]


def fused_time_loop(ctx, node, trips):
    """The element loop with the time loop inside; the new carried arrays."""
    sub = node.attrs["subgraph"]
    k = node.attrs["carried"]
    inits, invariants = node.inputs[1 : 1 + k], node.inputs[1 + k :]
    operands = node.inputs[1:]
    arrays = [ctx.arr(v) for v in operands if isinstance(v.type, TensorType)]
    shape = ctx.arr(next(v for v in inits if isinstance(v.type, TensorType))).shape
    outs = [ctx.alloc(o.type, shape) for o in node.outputs if isinstance(o.type, TensorType)]
    start = simd_time_tiles(ctx, node, sub, trips, arrays, outs, shape)
    if start is None:
        start = scalar_time_tiles(ctx, node, sub, trips, arrays, outs, shape)
    sinks = [fused.store_sink(ctx, out) for out in outs]

    def element(load):
        env = {}
        for p, outer in zip(sub.inputs[1 + k :], invariants):
            env[id(p)] = load(outer) if isinstance(outer.type, TensorType) else ctx.scalar_operand(outer)
        carried = [load(v) if isinstance(v.type, TensorType) else ctx.scalar_operand(v) for v in inits]
        return None, time_loop(ctx, trips, carried, lambda i, vals: scalar_step(ctx, sub, env, i, vals))

    def sink(_, results, flat, index):
        arrays_only = [kx for kx, v in zip(results, inits) if isinstance(v.type, TensorType)]
        for store, (kind, x) in zip(sinks, arrays_only):
            store(kind, x, flat, index)

    array_math.broadcast_loops(ctx, shape, operands, arrays, element, sink, out=outs[0], flat_start=start)
    return outs


# -- the time loop --------------------------------------------------------------------------------------
def time_loop(ctx, trips, inits: list, step) -> list:
    """``for i in range(trips): vals = step(i, vals)`` on (kind, register) pairs; the final pairs. A long
    one runs in chunks, looking at the interrupt flag between two (interrupts.py)."""
    if not ctx.interruptible:
        return _time_loop(ctx, i64(0), trips, inits, step)
    # two copies: the plain loop for up to CHUNK trips (a time loop runs per element: no chunk bookkeeping
    # there), the chunked one for more
    b = ctx.b
    slots = [ctx.alloca(x.type) for _, x in inits]
    with b.if_else(b.icmp_signed(">", trips, i64(interrupts.CHUNK)), likely=False) as (long, short):
        with long:
            out = chunked(ctx, trips, inits, lambda lo, hi, vals: _time_loop(ctx, lo, hi, vals, step))
            for slot, (_, x) in zip(slots, out):
                b.store(x, slot)
        with short:
            out = _time_loop(ctx, i64(0), trips, inits, step)
            for slot, (_, x) in zip(slots, out):
                b.store(x, slot)
    return [(kind, b.load(slot)) for (kind, _), slot in zip(inits, slots)]


def chunked(ctx, trips, inits: list, run) -> list:
    """``run(lo, hi, vals)`` over chunks of at most CHUNK of ``range(trips)``, the interrupt flag looked at
    between two; (kind, register) pairs in and out."""
    b = ctx.b
    fn = b.function
    pre = b.block
    header, body, done = (fn.append_basic_block(n) for n in ("chunks", "chunk", "chunks.done"))
    b.branch(header)
    b.position_at_end(header)
    lo = b.phi(I64, "chunk.start")
    phis = [b.phi(x.type, "carried") for _, x in inits]
    b.cbranch(b.icmp_signed("<", lo, trips), body, done)
    b.position_at_end(body)
    with b.if_then(b.icmp_signed("!=", lo, i64(0)), likely=True):
        ctx.check_interrupt()
    room = b.sub(trips, lo)
    hi = b.add(lo, b.select(b.icmp_signed("<", room, i64(interrupts.CHUNK)), room, i64(interrupts.CHUNK)))
    new = run(lo, hi, [(kind, phi) for (kind, _), phi in zip(inits, phis)])
    latch = b.block
    b.branch(header)
    lo.add_incoming(i64(0), pre)
    lo.add_incoming(hi, latch)
    for phi, (_, x0), (_, x1) in zip(phis, inits, new):
        phi.add_incoming(x0, pre)
        phi.add_incoming(x1, latch)
    b.position_at_end(done)
    return [(kind, phi) for (kind, _), phi in zip(inits, phis)]


def _time_loop(ctx, start, trips, inits: list, step) -> list:
    b = ctx.b
    fn = b.function
    pre = b.block
    header, body, done = (fn.append_basic_block(n) for n in ("time", "time.body", "time.done"))
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(I64, "t")
    phis = [b.phi(x.type, "carried") for _, x in inits]
    b.cbranch(b.icmp_signed("<", i, trips), body, done)
    b.position_at_end(body)
    new = step(i, [(kind, phi) for (kind, _), phi in zip(inits, phis)])
    latch = b.block
    i.add_incoming(start, pre)
    i.add_incoming(b.add(i, i64(1)), latch)
    for phi, (_, x0), (_, x1) in zip(phis, inits, new):
        phi.add_incoming(x0, pre)
        phi.add_incoming(x1, latch)
    ctx.back_edge(header)
    b.position_at_end(done)
    return [(kind, phi) for (kind, _), phi in zip(inits, phis)]


def scalar_step(ctx, sub, env, i, vals) -> list:
    """One iteration of the body on one element: the next carried (kind, register) pairs."""
    k = len(vals)
    env = dict(env)
    env[id(sub.inputs[0])] = ("i", i)
    for p, (kind, x) in zip(sub.inputs[1 : 1 + k], vals):
        env[id(p)] = (kind, x)
    for n in sub.nodes:
        if isinstance(n.output.type, TensorType) or n.kind == "prim::Constant":
            fused.fused_element_node(ctx, n, env)
        else:
            env[id(n.output)] = scalar_node(ctx, n, env)
    results = []
    for r in sub.outputs:
        kind, x = env[id(r)]
        want = kind_of(r.type.dtype) if isinstance(r.type, TensorType) else scalar_kind(r.type)
        results.append((want, conversions.cast(ctx, x, kind, want)))
    return results


def scalar_node(ctx, n, env):
    """A scalar operation of the body (the pass admits only ones that cannot raise), by its own lowering."""
    for v in n.inputs:
        kind, x = env[id(v)]
        ctx.bind(v, [conversions.cast(ctx, x, kind, scalar_kind(v.type))])
    outer, ctx.node = ctx.node, n
    (vals,) = rule_for(n)(ctx, n)
    ctx.node = outer
    return scalar_kind(n.output.type), vals[0]


# -- scalar tiles: several elements' time loops interleaved --------------------------------------------------
def scalar_time_tiles(ctx, node, sub, trips, arrays, outs, shape):
    """Run ``UNROLL_CHAINS`` elements at a time (independent chains in flight) where every array is contiguous
    with the carried shape; the flat index the one-element loop starts from."""
    b = ctx.b
    k = node.attrs["carried"]
    inits, invariants = node.inputs[1 : 1 + k], node.inputs[1 + k :]
    chains = UNROLL_CHAINS
    n = ctx.element_count(shape)
    flat = array_math.all_flat(ctx, shape, arrays + outs)
    full = b.select(flat, b.sub(n, b.srem(n, i64(chains))), i64(0))
    sinks = [fused.store_sink(ctx, out) for out in outs]

    def load(v, index):
        a = ctx.arr(v)
        ptr = b.bitcast(b.gep(a.data, [b.mul(index, i64(a.itemsize))]), array_math.elem_ptr_type(ctx, a))
        return kind_of(a.t.dtype), ctx.load_element(ptr, a.t.dtype)

    with ctx.for_range(b.sdiv(full, i64(chains))) as c:
        base = b.mul(c, i64(chains))
        index = [b.add(base, i64(u)) for u in range(chains)]
        envs, state = [], []
        for u in range(chains):
            env = {}
            for p, outer in zip(sub.inputs[1 + k :], invariants):
                env[id(p)] = load(outer, index[u]) if isinstance(outer.type, TensorType) else ctx.scalar_operand(outer)
            envs.append(env)
            state += [load(v, index[u]) if isinstance(v.type, TensorType) else ctx.scalar_operand(v) for v in inits]

        def step(i, vals):
            return [kx for u in range(chains) for kx in scalar_step(ctx, sub, envs[u], i, vals[u * k : (u + 1) * k])]

        final = time_loop(ctx, trips, state, step)
        for u in range(chains):
            results = [kx for kx, v in zip(final[u * k : (u + 1) * k], inits) if isinstance(v.type, TensorType)]
            for store, (kind, x) in zip(sinks, results):
                store(kind, x, index[u], None)
    return full


# -- vector tiles -----------------------------------------------------------------------------------------
def simd_time_tiles(ctx, node, sub, trips, arrays, outs, shape):
    """Run the vector tiles (float64 or float32: simd.py) where every array is contiguous with the carried
    shape; the flat index the scalar loop starts from (None when the body is not vectorized)."""
    vec = simd.simd_vector(ctx, sub)
    if vec is None or not all(isinstance(v.type, TensorType) for v in node.inputs[1 : 1 + node.attrs["carried"]]):
        return None
    b = ctx.b
    k = node.attrs["carried"]
    chains = max(2, UNROLL_CHAINS // k)
    lanes = vec.count
    tile = chains * lanes
    n = ctx.element_count(shape)
    flat = array_math.all_flat(ctx, shape, arrays + outs)
    full = b.select(flat, b.sub(n, b.srem(n, i64(tile))), i64(0))
    operands = node.inputs[1:]

    def at(base, u):
        return b.add(base, i64(u * lanes))

    with ctx.for_range(b.sdiv(full, i64(tile))) as c:
        base = b.mul(c, i64(tile))
        vector_tile(
            ctx,
            node,
            sub,
            trips,
            vec,
            chains,
            lambda v, u: simd.simd_load(ctx, ctx.arr(v).data, at(base, u), vec),
            lambda j, u, x: simd.simd_store(ctx, outs[j].data, at(base, u), x),
        )
    rest = b.sub(n, full)
    with b.if_then(b.and_(flat, b.icmp_signed(">", rest, i64(0)))):
        # a short rest (a small array) runs one vector: a full tile would do `chains` times the work
        with b.if_else(b.icmp_signed("<=", rest, i64(lanes))) as (short, long):
            with short:
                padded_tile(ctx, node, sub, trips, vec, 1, operands, outs, full, rest)
            with long:
                padded_tile(ctx, node, sub, trips, vec, chains, operands, outs, full, rest)
    return b.select(flat, n, i64(0))


def padded_tile(ctx, node, sub, trips, vec, chains, operands, outs, full, rest):
    """The last partial tile, through stack copies padded with its last element."""
    b = ctx.b
    tile = chains * vec.count
    element = vec.element
    scratch_t = ir.ArrayType(element, tile)
    last = b.sub(rest, i64(1))
    copies = {}
    # the copies run once per call: unrolled and vectorized (32 elements), they were half of LLVM's time on
    # a small time loop, for nothing at run time
    once = (NO_UNROLL, NO_VECTORIZE)
    for v in operands:
        if isinstance(v.type, TensorType) and id(v) not in copies:
            copies[id(v)] = buf = b.bitcast(ctx.alloca(scratch_t), element.as_pointer())
            src = b.bitcast(ctx.arr(v).data, element.as_pointer())
            with ctx.for_range(i64(tile), hints=once) as j:
                pick = b.select(b.icmp_signed("<", j, rest), j, last)
                b.store(b.load(b.gep(src, [b.add(full, pick)])), b.gep(buf, [j]))
    results = [b.bitcast(ctx.alloca(scratch_t), element.as_pointer()) for _ in outs]

    def vec_ptr(data, u):
        return b.bitcast(b.gep(data, [i64(u * vec.count)]), vec.as_pointer())

    # the scratch arrays are aligned for their elements, not vectors
    align = simd.itemsize(vec)
    vector_tile(
        ctx,
        node,
        sub,
        trips,
        vec,
        chains,
        lambda v, u: b.load(vec_ptr(copies[id(v)], u), align=align),
        lambda j, u, x: b.store(x, vec_ptr(results[j], u), align=align),
    )
    for out, res in zip(outs, results):
        dst = b.bitcast(out.data, element.as_pointer())
        with ctx.for_range(rest, hints=once) as j:
            b.store(b.load(b.gep(res, [j])), b.gep(dst, [b.add(full, j)]))


def vector_tile(ctx, node, sub, trips, vec, chains, load, store):
    """``chains`` vectors of every carried array through the whole time loop; ``load(value, u)`` reads
    vector u of an array operand, ``store(j, u, x)`` writes vector u of carried result j."""
    k = node.attrs["carried"]
    inits, invariants = node.inputs[1 : 1 + k], node.inputs[1 + k :]
    env = {}
    for p, outer in zip(sub.inputs[1 + k :], invariants):
        if isinstance(outer.type, TensorType):
            env[id(p)] = [load(outer, u) for u in range(chains)]
        else:
            env[id(p)] = [simd.simd_scalar(ctx, ctx.scalar(outer), outer.type, vec)] * chains
    carried = [("v", load(v, u)) for v in inits for u in range(chains)]

    def step(i, vals):
        local = dict(env)
        local[id(sub.inputs[0])] = [simd.simd_scalar(ctx, i, INT, vec)] * chains
        for j, p in enumerate(sub.inputs[1 : 1 + k]):
            local[id(p)] = [x for _, x in vals[j * chains : (j + 1) * chains]]
        for m in sub.nodes:
            if m.kind == "prim::Constant":
                local[id(m.output)] = [simd.simd_constant(ctx, m, vec)] * chains
                continue
            op = m.kind.split("::")[1]
            local[id(m.output)] = [
                simd.simd_op(ctx, op, [local[id(v)][u] for v in m.inputs], vec) for u in range(chains)
            ]
        return [("v", x) for r in sub.outputs for x in local[id(r)]]

    final = time_loop(ctx, trips, carried, step)
    for j in range(k):
        for u in range(chains):
            store(j, u, final[j * chains + u][1])


# -- lowering rules ----------------------------------------------------------------------------------------------------


@lowers("prim::ShapesFit")
def lower_shapes_fit(ctx, node):
    b = ctx.b
    k = node.attrs["carried"]
    arrays = [ctx.arr(v) for v in node.inputs]
    shape = arrays[0].shape
    ok = ir.Constant(I1, 1)
    for a in arrays[1:k]:
        for d, e in zip(a.shape, shape):
            ok = b.and_(ok, b.icmp_signed("==", d, e))
    for a in arrays[k:]:
        if a.t.rank > len(shape):
            return [[ir.Constant(I1, 0)]]
        for d, e in zip(reversed(a.shape), reversed(shape)):
            ok = b.and_(ok, b.or_(b.icmp_signed("==", d, i64(1)), b.icmp_signed("==", d, e)))
    return [[ok]]


@lowers("prim::FusedLoop")
def lower_fused_loop(ctx, node):
    b = ctx.b
    k = node.attrs["carried"]
    trips = ctx.scalar(node.inputs[0])
    inits = node.inputs[1 : 1 + k]
    slots = [ctx.alloca_leaves(o.type) for o in node.outputs]
    with b.if_else(b.icmp_signed(">", trips, i64(0))) as (run, skip):
        with run:
            arrays = iter(fused_time_loop(ctx, node, trips))
            scalars = iter(scalar_time_loop(ctx, node, trips))
            for s, o in zip(slots, node.outputs):
                ctx.store_leaves(s, next(arrays).leaves if isinstance(o.type, TensorType) else [next(scalars)])
        with skip:
            for s, v in zip(slots, inits):
                if isinstance(v.type, TensorType):
                    ctx.array_retain(ctx.get(v))
                ctx.store_leaves(s, ctx.get(v))
    return [ctx.load_leaves(s) for s in slots]
