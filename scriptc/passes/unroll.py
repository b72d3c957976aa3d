"""unroll: loop unrolling, for loops whose body returns a constant true condition (``for`` loops without
break/return): only then is the number of iterations the trip count alone, ``max(n, 0)`` when the initial
condition is true. Loops that may exit early (the body computes its condition) are left alone.

- Full unrolling: a constant trip count n <= 8 and a constant true initial condition: the loop is replaced by
  n copies of its body, iteration k using the constant k as its index, each copy's carried results feeding
  the next copy.
- Partial unrolling by ``FACTOR`` = 4 (TorchScript's scheme, which unrolls by 8), for other trip counts
  (constant or not) of loops that carry a float (a sum LLVM must keep in order, and so does not vectorize)
  and bodies of at most ``PARTIAL_MAX_BODY`` nodes. Loops carrying no float are left to LLVM's vectorizer:
  the column sums, the i-p-j matrix product, the Laplacian and a Monte Carlo count ran 1.2-7x numba's time
  unrolled by 4 here and at numba's whole. With ``m = max(n, 0)`` (a negative count
  runs no iteration, and ``-5 // 4``, ``-5 % 4`` would mislead), a main loop of ``m // 4`` iterations runs 4
  copies of the body, copy k using index ``4 * i + k``; then an epilogue loop of ``m % 4`` iterations runs the
  original body with index ``(m // 4) * 4 + j``. Both loops get the original initial condition (the body never
  changes it), the epilogue carries on from the main loop's results, and both are marked ``unrolled=4``: this
  pass leaves them alone when it runs again. By 4 rather than 8: bench kernels ran as fast (pairwise, stencil2d,
  kmeans_assign gain 3-40% from
  unrolling at all, none more from 8 than from 4) and compiled 20-50% faster.

Bodies larger than ``MAX_BODY`` nodes (nested nodes counted) are not unrolled; loops are processed innermost
first, so an unrolled inner loop counts in its outer loop's body size. Nor are bodies that still hold a loop (a
``while``, or an inner loop that was only partially unrolled) or an operation producing an array: their
iterations cost far more than the loop's own counting, so copies gain nothing at run time, while each copy of an
array operation (or of an inner loop) is a whole loop nest for LLVM to optimize: unrolling them multiplied
compile time (a power iteration's body of a matrix product, a fused reduction and a division, unrolled by 8, took
seconds in LLVM) for no speed. New trip counts and indices are plain int ops
(``prim::max``, ``aten::floordiv``/``remainder`` by the constant 4, ``aten::mul``, ``aten::add``):
constant-propagation folds them when n is a constant.
"""

from __future__ import annotations

from ..ir.builder import Builder
from ..ir.clone import clone_nodes_into
from ..ir.core import Graph, Node
from ..ir.types import FLOAT, TensorType, decayed
from .analysis import count_nodes, is_true_constant, loops_post_order, make_constant, trip_count
from .manager import register

FULL_MAX_TRIPS = 8
FACTOR = 4
MAX_BODY = 32
PARTIAL_MAX_BODY = 20


def _unrollable(loop: Node) -> bool:
    body = loop.blocks[0]
    if loop.attrs.get("parallel"):
        return False  # a prange loop stays one loop: its iterations run at once
    return (
        is_true_constant(body.returns[0])
        and count_nodes(body) <= MAX_BODY
        and not any(
            node.kind == "prim::Loop" or any(isinstance(o.type, TensorType) for o in node.outputs)
            for node in body.walk()
        )
    )


def _carries_float(loop: Node) -> bool:
    """Whether the loop carries a float: a sum kept in order, which LLVM's vectorizer leaves alone. Other loops
    stay whole for LLVM, which vectorizes them, versioned on a unit stride at run time (copies of the body by 4
    would be four interleaved accesses, each with a stride of 4 times a run-time value: gathers)."""
    return any(decayed(v.type) == FLOAT for v in loop.outputs)


def full_unroll(loop: Node, n: int) -> None:
    block = loop.block
    body = loop.blocks[0]
    at = block.nodes.index(loop)
    carried = list(loop.inputs[2:])
    for k in range(n):
        index = make_constant(block, at, k)
        at += 1
        vmap = {id(body.params[0]): index}
        vmap.update({id(p): c for p, c in zip(body.params[1:], carried)})
        before = len(block.nodes)
        rets = clone_nodes_into(body, block, at, vmap)
        at += len(block.nodes) - before
        carried = rets[1:]
    for out, c in zip(list(loop.outputs), carried):
        out.replace_all_uses_with(c)
    loop.destroy()


def partial_unroll(loop: Node) -> None:
    body = loop.blocks[0]
    src = loop.source
    before_loop = Builder.before(loop)  # the new counts and the main loop go before the loop, in order

    def op(kind, *inputs):
        return before_loop.op(kind, inputs, source=src).output

    n, cond = loop.inputs[0], loop.inputs[1]
    factor, zero = before_loop.constant(FACTOR), before_loop.constant(0)
    m = op("prim::max", n, zero)
    main_trips = op("aten::floordiv", m, factor)
    rest_trips = op("aten::remainder", m, factor)
    base = op("aten::mul", main_trips, factor)
    out_types = [o.type for o in loop.outputs]

    # main loop: FACTOR copies of the body per iteration
    main = before_loop.op("prim::Loop", [main_trips, cond, *loop.inputs[2:]], out_types, source=src)
    main.attrs["unrolled"] = loop.attrs["unrolled"] = FACTOR
    mb = Builder.add_block(main, [(p.type, p.name) for p in body.params])
    i, carried = mb.params[0], mb.params[1:]
    in_main = Builder.at_end(mb)
    true = None
    for k in range(FACTOR):
        if k == 0:
            first = in_main.op("aten::mul", [i, factor]).output
            index = first
        else:
            index = in_main.op("aten::add", [first, in_main.constant(k)]).output
        vmap = {id(body.params[0]): index}
        vmap.update({id(p): c for p, c in zip(body.params[1:], carried)})
        rets = clone_nodes_into(body, mb, None, vmap)
        true, carried = rets[0], rets[1:]
    mb.add_return(true)
    for c in carried:
        mb.add_return(c)

    # epilogue: the original loop, on the remaining iterations, indices offset by base
    loop.set_input(0, rest_trips)
    for j, o in enumerate(main.outputs):
        loop.set_input(2 + j, o)
    j_param = body.params[0]
    uses = list(j_param.uses)
    shifted = Builder.at_index(body, 0).op("aten::add", [j_param, base]).output
    for u in uses:
        u.user.set_input(u.index, shifted)


@register("unroll")
def run(graph: Graph) -> bool:
    """Unroll loops whose body returns a constant true condition: fully when the trip count is a constant
    <= 8 (and the initial condition constant true), else, when the loop carries a float, by 4 (main loop of
    max(n,0)//4 iterations running 4 body copies, epilogue loop of max(n,0)%4 iterations, both marked
    ``unrolled``), with each copy's iteration index derived exactly. Bodies over 32 nodes (20 to unroll
    partially), or holding a loop or an array operation, are left alone; innermost loops first."""
    changed = False
    for loop in loops_post_order(graph.block):
        if not _unrollable(loop):
            continue
        n = trip_count(loop)
        if n is not None and n <= FULL_MAX_TRIPS:
            if is_true_constant(loop.inputs[1]) and n >= 0:
                full_unroll(loop, n)
                changed = True
            continue
        if not loop.attrs.get("unrolled") and _carries_float(loop) and count_nodes(loop.blocks[0]) <= PARTIAL_MAX_BODY:
            partial_unroll(loop)
            changed = True
    return changed
