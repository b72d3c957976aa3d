"""Reverse-mode differentiation as a graph-to-graph transform on the SSA IR.

``gradient_graph(src, argnums, with_value)`` builds a new Graph with ``src``'s parameters: first the forward
(``src``'s nodes, copied), then the backward, which walks the nodes in reverse and applies each operator's
derivative rule (``OpDef.vjp``, declared beside the operator in ``scriptc/ops``), accumulating one adjoint per
float value. Structured control flow is handled block by block, with recomputation instead of saving every
intermediate:

- ``prim::If``: the backward is an If on the same condition whose branch recomputes the forward of the branch
  taken and runs its adjoint; it returns the adjoints of the outer values the branch used.
- ``prim::Loop``: the forward appends each iteration's block parameters (the index and carried values) to a
  tape (one list per parameter, as long as the trip count); the backward is a loop over the iterations in
  reverse that restores them from the tape, recomputes the body's forward and runs its adjoint, carrying the
  adjoints of the carried values and of the outer values the body used.

Assumptions: the graph is inlined (no prim::CallFunction), returns one float, and writes no array in place.
Values of type float and float arrays are differentiable; ints, bools and the outputs of comparisons are not.
Broadcasting: an element-wise operator's operand adjoint is summed over broadcast axes back to its shape.
"""
from __future__ import annotations

from ..errors import CompileError
from ..ir.core import Block, Graph, Node, Value
from ..ir.registry import lookup
from ..ir.types import BOOL, FLOAT, INT, ListType, TensorType, TupleType
from ..ir.registry import type_of

FLOAT_DTYPES = ("float64", "float32", "float16")
_SKIP_ON_RECOMPUTE = {"prim::Print"}    # printing happens once, in the forward


def differentiable(v: Value) -> bool:
    t = v.type
    return t == FLOAT or (isinstance(t, TensorType) and t.dtype in FLOAT_DTYPES)


class Emitter:
    """Appends typed nodes to a block; what derivative rules build their adjoints with."""

    def __init__(self, block: Block, source=None):
        self.block, self.source = block, source

    def op(self, kind: str, *inputs: Value, **attrs) -> Value:
        types = lookup(kind).result_types([v.type for v in inputs], attrs)
        node = Node(kind, inputs, [(t, None) for t in types], attrs, source=self.source)
        self.block.append(node)
        return node.outputs[0] if node.outputs else None

    def node(self, kind, inputs, types, attrs=None) -> Node:
        node = Node(kind, inputs, [(t, None) for t in types], attrs or {}, source=self.source)
        return self.block.append(node)

    def const(self, value) -> Value:
        return self.node("prim::Constant", [], [type_of(value)], {"value": value}).output

    def add(self, a, b):
        return self.op("aten::add", a, b)

    def sub(self, a, b):
        return self.op("aten::sub", a, b)

    def mul(self, a, b):
        return self.op("aten::mul", a, b)

    def div(self, a, b):
        return self.op("aten::div", a, b)

    def neg(self, a):
        return self.op("aten::neg", a)

    @staticmethod
    def differentiable(v: Value) -> bool:
        return differentiable(v)

    def log_or_zero(self, x: Value) -> Value:
        """log(x) where x > 0, else 0 (the factor of d(x**y)/dy; where x <= 0 it only matters for y's
        adjoint at points where x**y is not smooth)."""
        if isinstance(x.type, TensorType):
            pos = self.op("aten::gt", x, self.const(0.0))
            safe = self.op("aten::where", pos, x, self.const(1.0))
            return self.op("aten::log", safe)
        pos = self.op("aten::gt", x, self.const(0.0))
        node = self.node("prim::If", [pos], [FLOAT])
        then, other = node.add_block(), node.add_block()
        then.add_return(Emitter(then).op("aten::log", x))
        other.add_return(Emitter(other).const(0.0))
        return node.output

    def zeros_like(self, v: Value) -> Value:
        if isinstance(v.type, TensorType):
            return self.op("aten::zeros_like", v, dtype=v.type.dtype)
        return self.const(0.0)

    def dim_size(self, x: Value, axis: int) -> Value:
        return self.op("prim::TupleIndex", self.op("aten::size", x), index=axis)

    def expand_reduced(self, g: Value, x: Value, axis) -> Value:
        """``g`` (a reduction of ``x`` over ``axis``, or over everything) broadcast back to ``x``'s shape."""
        if axis is not None and x.type.rank > 1:   # a rank-1 reduction over its axis is a scalar already
            shape = self.node("prim::TupleUnpack", [self.op("aten::size", x)], [INT] * x.type.rank).outputs
            k = axis % x.type.rank
            dims = list(shape[:k]) + [self.const(1)] + list(shape[k + 1:])
            g = self.op("aten::reshape", g, *dims)
        return self.add(self.zeros_like(x), g)

    def sum_to(self, g: Value, like: Value) -> Value:
        """The adjoint of a broadcast: ``g`` summed over the axes along which ``like`` was broadcast."""
        if not isinstance(g.type, TensorType):
            return g
        if not isinstance(like.type, TensorType):
            return self.op("aten::sum", g)
        for _ in range(g.type.rank - like.type.rank):
            g = self.op("aten::sum", g, axis=0)
        return self._sum_size_one_axes(g, like)

    def _sum_size_one_axes(self, g: Value, like: Value) -> Value:
        """Sum (keeping the axis) where ``like`` has length 1 and ``g`` does not: known only at run time."""
        rank = like.type.rank
        if rank == 0:
            return g
        like_shape = self.node("prim::TupleUnpack", [self.op("aten::size", like)], [INT] * rank).outputs
        for k in range(rank):
            g_shape = self.node("prim::TupleUnpack", [self.op("aten::size", g)], [INT] * rank).outputs
            one = self.const(1)
            cond = self.op("aten::__and__", self.op("aten::eq", like_shape[k], one),
                           self.op("aten::ne", g_shape[k], one))
            node = self.node("prim::If", [cond], [g.type])
            then, other = node.add_block(), node.add_block()
            e = Emitter(then)
            if rank == 1:   # like has shape (1,) here
                then.add_return(e.add(e.zeros_like(like), e.op("aten::sum", g)))
            else:
                summed = e.op("aten::sum", g, axis=k)
                dims = list(g_shape[:k]) + [e.const(1)] + list(g_shape[k + 1:])
                then.add_return(e.op("aten::reshape", summed, *dims))
            other.add_return(g)
            g = node.output
        return g


def _outer_values(node: Node) -> list[Value]:
    """Differentiable values defined outside ``node`` that its blocks use, in first-use order."""
    inside, used = set(), {}

    def visit(block: Block):
        for p in block.params:
            inside.add(id(p))
        for n in block.nodes:
            for v in n.inputs:
                used.setdefault(id(v), v)
            for b in n.blocks:
                visit(b)
            for o in n.outputs:
                inside.add(id(o))
        for v in block.returns:
            used.setdefault(id(v), v)

    for b in node.blocks:
        visit(b)
    return [v for k, v in used.items() if k not in inside and differentiable(v)]


class Adjoints:
    """The adjoint of each source value (by id) accumulated so far, as values of the block being built."""

    def __init__(self, e: Emitter):
        self.e, self.of = e, {}

    def add(self, src: Value, contribution: Value | None) -> None:
        if contribution is None or not differentiable(src):
            return
        prior = self.of.get(id(src))
        self.of[id(src)] = contribution if prior is None else self.e.add(prior, contribution)

    def get(self, src: Value) -> Value | None:
        return self.of.get(id(src))

    def get_or_zero(self, src: Value, primal: Value) -> Value:
        a = self.get(src)
        return a if a is not None else self.e.zeros_like(primal)


class Transform:
    def __init__(self, graph: Graph):
        self.graph = graph

    # -- forward ---------------------------------------------------------------------------------------
    def forward(self, src: Block, dst: Block, vmap: dict, recompute: bool, tape_loops: bool) -> dict:
        """Copy ``src``'s nodes to the end of ``dst``; loops directly in ``src`` record their tapes when
        ``tape_loops``. Returns the tapes per loop node (by id)."""
        tapes = {}
        for node in src.nodes:
            if recompute and node.kind in _SKIP_ON_RECOMPUTE:
                continue
            if node.kind == "prim::Loop" and tape_loops:
                tapes[id(node)] = self.taped_loop(node, dst, vmap, recompute)
            else:
                self.copy_node(node, dst, vmap, recompute)
        return tapes

    def copy_node(self, node: Node, dst: Block, vmap: dict, recompute: bool) -> Node:
        new = Node(node.kind, [vmap.get(id(v), v) for v in node.inputs], [(o.type, _hint(o)) for o in node.outputs],
                   dict(node.attrs), source=node.source)
        dst.append(new)
        for o, n in zip(node.outputs, new.outputs):
            vmap[id(o)] = n
        for b in node.blocks:
            nb = new.add_block()
            for p in b.params:
                vmap[id(p)] = nb.add_param(p.type, _hint(p))
            self.forward(b, nb, vmap, recompute, tape_loops=False)
            for r in b.returns:
                nb.add_return(vmap.get(id(r), r))
        return new

    def taped_loop(self, node: Node, dst: Block, vmap: dict, recompute: bool) -> list[Value]:
        """The loop, appending each iteration's block parameters to one list each (the tape)."""
        e = Emitter(dst, node.source)
        body = node.blocks[0]
        tapes = [e.node("prim::ListConstruct", [], [ListType(p.type)], {"elem": str(p.type)}).output
                 for p in body.params]
        new = Node("prim::Loop", [vmap.get(id(v), v) for v in node.inputs],
                   [(o.type, _hint(o)) for o in node.outputs], source=node.source)
        dst.append(new)
        nb = new.add_block()
        for p, tape in zip(body.params, tapes):
            vmap[id(p)] = q = nb.add_param(p.type, _hint(p))
            Emitter(nb).node("aten::append", [tape, q], [])
        self.forward(body, nb, vmap, recompute, tape_loops=False)
        for r in body.returns:
            nb.add_return(vmap.get(id(r), r))
        for o, n in zip(node.outputs, new.outputs):
            vmap[id(o)] = n
        return tapes

    # -- backward --------------------------------------------------------------------------------------
    def backward(self, src: Block, dst: Block, vmap: dict, seeds: list, recompute: bool) -> Adjoints:
        """Emit ``src``'s forward into ``dst``, then its adjoint given ``seeds`` (one adjoint or None per
        return of ``src``). Returns the adjoints of ``src``'s parameters and of the outer values it uses."""
        tapes = self.forward(src, dst, vmap, recompute, tape_loops=True)
        e = Emitter(dst)
        adj = Adjoints(e)
        for r, s in zip(src.returns, seeds):
            adj.add(r, s)
        for node in reversed(src.nodes):
            outs = [adj.get(o) for o in node.outputs]
            if all(a is None for a in outs):
                continue
            e.source = node.source
            if node.kind == "prim::If":
                self.backward_if(node, dst, vmap, outs, adj)
            elif node.kind == "prim::Loop":
                self.backward_loop(node, dst, vmap, outs, adj, tapes[id(node)])
            else:
                self.backward_op(node, e, vmap, outs, adj)
        return adj

    def backward_op(self, node: Node, e: Emitter, vmap: dict, outs: list, adj: Adjoints) -> None:
        if not any(differentiable(v) for v in node.inputs):
            return
        if node.kind == "prim::TupleIndex" or node.kind == "prim::TupleUnpack":
            raise self.error(node, "tuples")
        op = lookup(node.kind)
        if op.vjp is None:
            raise self.error(node, f"the operator {node.kind}")
        if len(node.outputs) != 1:
            raise self.error(node, f"the operator {node.kind}")
        inputs = [vmap.get(id(v), v) for v in node.inputs]
        contributions = op.vjp(e, outs[0], vmap[id(node.output)], *inputs, **node.attrs)
        for src, primal, c in zip(node.inputs, inputs, contributions):
            if c is not None and differentiable(src):
                if op.elementwise:
                    c = e.sum_to(c, primal)
                if c.type != primal.type and primal.type == FLOAT and c.type in (INT, BOOL):
                    c = e.op("aten::Float", c)
                adj.add(src, c)

    def backward_if(self, node: Node, dst: Block, vmap: dict, outs: list, adj: Adjoints) -> None:
        outer = _outer_values(node)
        e = Emitter(dst, node.source)
        back = e.node("prim::If", [vmap[id(node.inputs[0])]], [vmap.get(id(v), v).type for v in outer])
        for branch in node.blocks:
            nb = back.add_block()
            branch_adj = self.backward(branch, nb, dict(vmap), outs, recompute=True)
            for v in outer:
                nb.add_return(branch_adj.get_or_zero(v, vmap.get(id(v), v)))
        for v, a in zip(outer, back.outputs):
            adj.add(v, a)

    def backward_loop(self, node: Node, dst: Block, vmap: dict, outs: list, adj: Adjoints, tapes) -> None:
        body = node.blocks[0]
        carried = body.params[1:]
        diff = [k for k, p in enumerate(carried) if differentiable(p)]
        outer = _outer_values(node)
        e = Emitter(dst, node.source)
        trips = e.op("aten::list_len", tapes[0])
        init = [outs[k] if outs[k] is not None else e.zeros_like(vmap[id(node.outputs[k])]) for k in diff]
        init += [e.zeros_like(vmap.get(id(v), v)) for v in outer]
        back = e.node("prim::Loop", [trips, e.const(True), *init], [v.type for v in init])
        nb = back.add_block()
        k_param = nb.add_param(INT, "k")
        carried_adj = [nb.add_param(v.type, "adj") for v in init[:len(diff)]]
        outer_acc = [nb.add_param(v.type, "acc") for v in init[len(diff):]]
        b = Emitter(nb, node.source)
        last = b.sub(b.sub(trips, b.const(1)), k_param)
        inner = dict(vmap)
        for p, tape in zip(body.params, tapes):
            inner[id(p)] = b.op("aten::list_getitem", tape, last)
        seeds = [None] * len(body.returns)
        for k, a in zip(diff, carried_adj):
            seeds[1 + k] = a
        body_adj = self.backward(body, nb, inner, seeds, recompute=True)
        b2 = Emitter(nb, node.source)
        nb.add_return(b2.const(True))
        for k in diff:
            nb.add_return(body_adj.get_or_zero(carried[k], inner[id(carried[k])]))
        for v, acc in zip(outer, outer_acc):
            a = body_adj.get(v)
            nb.add_return(acc if a is None else b2.add(acc, a))
        for k, a in zip(diff, back.outputs[:len(diff)]):
            adj.add(node.inputs[2 + k], a)
        for v, a in zip(outer, back.outputs[len(diff):]):
            adj.add(v, a)

    @staticmethod
    def error(node: Node, what: str) -> CompileError:
        return CompileError(f"grad: {what} is not differentiable", node.source,
                            "scriptc.grad differentiates float arithmetic, math functions, element-wise array "
                            "operations, sum/mean/max/min, if and loops")


def _hint(v: Value) -> str | None:
    return None if v.name.isdigit() else v.name


def gradient_graph(src: Graph, argnums: tuple, with_value: bool, single: bool) -> Graph:
    """The graph of ``grad(f, argnums)`` (or ``value_and_grad``) for ``src``, an inlined graph of ``f``."""
    g = Graph(src.name + "_grad")
    vmap = {}
    for p in src.inputs:
        vmap[id(p)] = g.add_input(p.type, _hint(p))
    t = Transform(g)
    e = Emitter(g.block)
    (result,) = src.outputs
    seed = e.const(1.0)
    adj = t.backward(src.block, g.block, vmap, [seed], recompute=False)
    e = Emitter(g.block)
    grads = []
    for k in argnums:
        p = src.inputs[k]
        grads.append(adj.get_or_zero(p, vmap[id(p)]))
    out = grads[0] if single else e.node("prim::TupleConstruct", grads, [TupleType(tuple(v.type for v in grads))]).output
    if with_value:
        value = vmap.get(id(result), result)
        out = e.node("prim::TupleConstruct", [value, out], [TupleType((value.type, out.type))]).output
    g.block.add_return(out)
    return g
