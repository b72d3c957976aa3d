"""Lowering rules of the structural operators: constants, tuples, ``prim::If``, ``prim::Loop`` and calls of
scripted functions (the loop drivers they use are the lowering core's, lower.py)."""

from __future__ import annotations

from llvmlite import ir

from ....ir.core import Graph
from ....ir.types import BOOL, FLOAT, INT, NONE, STR, TensorType
from .common import I1, INT64_MIN, f64, i1, i32, i64, leaves, out_struct, reg_type
from .rules import lowers
from . import builtins_lower, constants, interrupts, parallel, strings


@lowers("prim::Constant")
def lower_constant(ctx, node):
    value = node.attrs.get("value")
    if node.output.type == STR:
        return [strings.str_constant(ctx, value)]
    if isinstance(node.output.type, TensorType):
        return [constants.array_constant(ctx, node)]

    def flat(val, t):
        if t == NONE:
            return []
        if t == INT:
            return [i64((int(val) - INT64_MIN) % 2**64 + INT64_MIN)]
        if t == FLOAT:
            return [f64(float(val))]
        if t == BOOL:
            return [i1(val)]
        return [x for e, et in zip(val, t.elems) for x in flat(e, et)]

    return [flat(value, node.output.type)]


@lowers("prim::Uninitialized")
def lower_uninitialized(ctx, node):
    # zeros, not undef: an unbound array has a null meminfo, which dropping it tolerates
    return [[ir.Constant(reg_type(t), None) for t in leaves(node.output.type)]]


@lowers("prim::AssertBound")
def lower_assert_bound(ctx, node):
    defined = ctx.scalar(node.inputs[0])
    name = node.attrs["name"]
    ctx.raise_if(
        ctx.b.not_(defined),
        UnboundLocalError,
        f"cannot access local variable '{name}' where it is not associated with a value",
    )
    return []


@lowers("prim::TupleConstruct")
def lower_tuple_construct(ctx, node):
    return [[x for v in node.inputs for x in ctx.get(v)]]


@lowers("prim::TupleUnpack")
def lower_tuple_unpack(ctx, node):
    vals, outs = ctx.get(node.inputs[0]), []
    for v in node.outputs:
        n = len(leaves(v.type))
        outs.append(ctx.projected(v, vals[:n]))
        vals = vals[n:]
    return outs


@lowers("prim::TupleIndex")
def lower_tuple_index(ctx, node):
    t = node.inputs[0].type
    index = node.attrs["index"] % len(t.elems)
    start = sum(len(leaves(e)) for e in t.elems[:index])
    n = len(leaves(t.elems[index]))
    return [ctx.projected(node.output, ctx.get(node.inputs[0])[start : start + n])]


@lowers("prim::If")
def lower_if(ctx, node):
    b = ctx.b
    cond = ctx.scalar(node.inputs[0])
    then_bb = b.append_basic_block("if.then")
    else_bb = b.append_basic_block("if.else")
    merge_bb = b.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb)
    incoming = []
    for blk, bb in zip(node.blocks, (then_bb, else_bb)):
        b.position_at_end(bb)
        results = [ctx.convert(r, v.type, o.type) for r, v, o in zip(ctx.lower_block(blk), blk.returns, node.outputs)]
        incoming.append(([x for r in results for x in r], b.block))
        b.branch(merge_bb)
    b.position_at_end(merge_bb)
    types = [t for v in node.outputs for t in leaves(v.type)]
    phis = [b.phi(reg_type(t), "if") for t in types]
    for vals, pred in incoming:
        for phi, x in zip(phis, vals):
            phi.add_incoming(x, pred)
    return ctx._split(phis, node.outputs)


@lowers("prim::Loop")
def lower_loop(ctx, node):
    """header: i, cond, carried = phi; run the body while cond and i < max_trips. Where loops look at the
    interrupt flag (interrupts.py), the loop runs in chunks (``lower_chunked_loop``)."""
    kinds = None if ctx.in_parallel_kernel else parallel.parallel_plan(node)
    if kinds is not None:
        return parallel.lower_parallel_loop(ctx, node, kinds)
    max_trips, cond0, *carried = node.inputs
    body = node.blocks[0]
    init = [x for v, p in zip(carried, body.params[1:]) for x in ctx.convert(ctx.get(v), v.type, p.type)]
    types = [t for p in body.params[1:] for t in leaves(p.type)]
    unbounded = interrupts.is_unbounded_while(max_trips) and not body.params[0].uses
    if ctx.interruptible and not interrupts.at_most_one_chunk(max_trips) and not unbounded:
        if any(n.kind == "prim::Loop" for n in body.walk()):
            return ctx.lower_chunked_loop(node, init, types)
        return ctx.lower_versioned_loop(node, init, types)
    return ctx.lower_plain_loop(node, init, types)


@lowers("prim::CallFunction")
def lower_call(ctx, node):
    callee: Graph = node.attrs["fn"]
    fn = ctx.mod.function_for(callee)
    args = []
    for v, p in zip(node.inputs, callee.inputs):
        args += ctx.convert(ctx.get(v), v.type, p.type)
    out_t = callee.outputs[0].type
    struct = out_struct(out_t, ctx.mod.module)
    out = ctx.alloca(struct)
    status = builtins_lower.call_counting_depth(ctx, fn, args + [out])
    with ctx.b.if_then(ctx.b.icmp_signed("!=", status, i32(0)), likely=False):
        ctx.fail(status)  # the callee has released its own references
    vals = []
    for k, t in enumerate(leaves(out_t)):
        x = ctx.b.load(ctx.b.gep(out, [i32(0), i32(k)], inbounds=True))
        vals.append(ctx.b.trunc(x, I1) if t == BOOL else x)
    return [ctx.convert(vals, out_t, node.output.type)]
