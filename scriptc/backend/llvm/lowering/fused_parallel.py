"""Large element-wise fusion groups on scriptc's thread pool (pool.py).

When every operand and the result are C-contiguous with the result's shape and the group has at least
``PARALLEL_MIN`` elements, the flat index range is cut into chunks, each a multiple of 64 elements, and the
pool's threads run them. A chunk runs exactly the code the sequential loop runs for its elements: the SIMD loop
(simd.py) for elements below ``n - n % lanes`` and the scalar loop for the rest, so every element is computed by
the same instructions as on one thread and the result is bit-identical. Chunks allocate nothing, and a group
whose element code can raise (an integer power with a negative exponent) stays sequential (the range checks of
Python scalar operands run before, on the calling thread), so chunks need no error or reference-count handling.
"""

from __future__ import annotations

import itertools

from llvmlite import ir

from ....ir.types import TensorType
from .array_value import ELEM, Arr, kind_of
from .common import I8P, I64, i32, i64, leaves
from ..runtime.pool import CHUNK_FN, MAX_THREADS, RUN_SYMBOL, THREADS_SYMBOL, ensure_runtime
from ..runtime.folding import FoldingBuilder
from ..runtime.text_builder import TextBuilder
from . import array_math, fused, parallel, simd

PARALLEL_MIN = 1 << 18  # elements; below this a region's wake-up costs more than it saves
CHUNK_ALIGN = 64  # a multiple of every SIMD width, so chunk boundaries never split a vector


# -- helpers: functions of the lowering (``ctx``, a FunctionLowering) --------------------------------


def parallel_flat_group(ctx, node, sub, out: Arr, arrays: list[Arr], shape, scalars):
    """Emit the chunked path for a reduction-free group whose operands are all flat: the pool's threads run
    the chunks of a large group, a small one is the single chunk ``chunk(ctx, 0)`` called here (one copy of
    the group's flat loops in the module, not two). An i1 that is true where it ran (else the caller's
    strided loops run), or None when the group cannot run in chunks (code with no thread pool, or element
    code that can raise, such as an integer power with a negative exponent)."""
    if not ctx.mod.target.parallel:
        return None
    b = ctx.b
    values = [out.data] + [
        x for v in _operands(node) for x in ([ctx.arr(v).data] if isinstance(v.type, TensorType) else ctx.get(v))
    ]
    scalar_keys = list(scalars)
    values += [scalars[k][1] for k in scalar_keys]
    ctx_t = ctx.mod.struct_type("fused.ctx.t", [I64, I64] + [x.type for x in values])
    vec = simd.simd_vector(ctx, sub)
    chunk = fused_chunk_function(
        ctx, node, sub, out.t, ctx_t, scalar_keys, {k: kind for k, (kind, _) in scalars.items()}, vec
    )
    if chunk is None:
        return None
    if not ctx.mod.target.standalone:
        ensure_runtime()
    n = ctx.element_count(shape)
    flat = array_math.all_flat(ctx, shape, arrays + [out])
    with b.if_then(flat, likely=True):
        threads = b.load(parallel.mod_global(ctx, THREADS_SYMBOL, I64))
        pool = b.and_(b.icmp_signed(">=", n, i64(PARALLEL_MIN)), b.icmp_signed(">", threads, i64(1)))
        with b.goto_entry_block():
            packed = b.alloca(ctx_t, name="fused.ctx")
        chunks = b.select(
            pool,
            parallel.smin(
                ctx,
                parallel.smin(ctx, threads, i64(MAX_THREADS)),
                b.sdiv(b.add(n, i64(CHUNK_ALIGN - 1)), i64(CHUNK_ALIGN)),
            ),
            i64(1),
        )
        for k, x in enumerate([n, chunks] + values):
            b.store(x, b.gep(packed, [i32(0), i32(k)], inbounds=True))
        with b.if_else(pool) as (on_pool, here):
            with on_pool:
                run = parallel.mod_function(ctx, RUN_SYMBOL, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64]))
                b.call(run, [b.bitcast(chunk, I8P), b.bitcast(packed, I8P), chunks])
            with here:
                b.call(chunk, [b.bitcast(packed, I8P), i64(0)])
    return flat


def fused_chunk_function(ctx, node, sub, out_t: TensorType, ctx_t, scalar_keys, scalar_kinds, vec):
    """``void chunk(i8* ctx, i64 c)``: the group's elements of chunk ``c``."""
    fn = ir.Function(ctx.mod.module, CHUNK_FN, ctx.mod.unique("fused.chunk"))
    fn.linkage = "internal"
    fn.attributes.add("noinline")  # called in two places (the pool, and directly): kept as one copy
    low = type(ctx).into(ctx.mod, fn, node, nogil=ctx.nogil, graph=getattr(ctx, "graph", None))
    body = fn.append_basic_block("body")
    TextBuilder(low.entry_block).branch(body)
    b = low.b = FoldingBuilder(body)
    packed = b.bitcast(fn.args[0], ctx_t.as_pointer())
    fields = itertools.count()

    def field():
        return b.load(b.gep(packed, [i32(0), i32(next(fields))], inbounds=True))

    n, chunks, out_data = field(), field(), field()
    # of a flat array only its data is read (its shape is the result's, its strides C-contiguous)
    for v in _operands(node):
        low.env[id(v)] = (
            [ir.Constant(I8P, None), field()] + [i64(0)] * (2 * v.type.rank)
            if isinstance(v.type, TensorType)
            else [field() for _ in leaves(v.type)]
        )
    scalars = {k: (scalar_kinds[k], field()) for k in scalar_keys}
    c = fn.args[1]
    lanes = vec.count if vec is not None else None
    # one chunk (a small group, called directly) is everything: no division on that path
    whole = b.block
    with b.if_then(b.icmp_signed(">", chunks, i64(1)), likely=False):
        per = b.sdiv(b.add(n, b.sub(chunks, i64(1))), chunks)
        per = b.mul(b.sdiv(b.add(per, i64(CHUNK_ALIGN - 1)), i64(CHUNK_ALIGN)), i64(CHUNK_ALIGN))
        lo_c = b.mul(c, per)
        hi_c = parallel.smin(low, n, b.add(lo_c, per))
        split = b.block
    lo, hi = b.phi(I64, "lo"), b.phi(I64, "hi")
    lo.add_incoming(i64(0), whole), lo.add_incoming(lo_c, split)
    hi.add_incoming(n, whole), hi.add_incoming(hi_c, split)
    vend = parallel.smin(low, hi, b.sub(n, b.srem(n, i64(lanes)))) if lanes else lo
    vstart = parallel.smin(low, lo, vend) if lanes else lo
    out = Arr(out_t, [ir.Constant(I8P, None), out_data] + [i64(0)] * (2 * out_t.rank))
    if lanes:
        with low.for_range(b.sdiv(b.sub(vend, vstart), i64(lanes))) as k:
            i = b.add(vstart, b.mul(k, i64(lanes)))
            env = simd.simd_values(low, node, sub, i, vec)
            simd.simd_store(low, out_data, i, env[id(sub.outputs[0])])
    start = smax(low, lo, vend) if lanes else lo
    by_value = {id(v): low.arr(v) for v in node.inputs if isinstance(v.type, TensorType)}
    with low.for_range(hi, start) as i:
        env = {}
        for p, outer in zip(sub.inputs, node.inputs):
            if isinstance(outer.type, TensorType):
                a = by_value[id(outer)]
                ptr = b.bitcast(b.gep(a.data, [b.mul(i, i64(a.itemsize))]), ELEM[a.t.dtype].as_pointer())
                env[id(p)] = (kind_of(a.t.dtype), low.load_element(ptr, a.t.dtype))
        for m in sub.nodes:
            if m.kind != "prim::Constant":
                fused.fused_element_node(low, m, env, scalars)
        kind, x = env[id(sub.outputs[0])]
        fused.store_sink(low, out)(kind, x, i, None)
    b.ret_void()
    if low._unwind_bb is not None:  # the element code can raise: not on the pool (the function is dead)
        b.position_at_end(low._unwind_bb)
        b.ret_void()
        return None
    return fn


def smax(ctx, x, y):
    return ctx.b.select(ctx.b.icmp_signed(">", x, y), x, y)


def _operands(node) -> list:
    """A group's distinct operands, in order: the context holds an array's data pointer, a scalar's leaves."""
    return list({id(v): v for v in node.inputs}.values())
