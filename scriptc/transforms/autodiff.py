"""Reverse-mode differentiation as a graph-to-graph transform on the SSA IR.

``gradient_graph(src, argnums, with_value)`` builds a new Graph with ``src``'s parameters: first the forward
(``src``'s nodes, copied), then the backward, which walks the nodes in reverse and applies each operator's
derivative rule (``OpDef.vjp``, declared beside the operator in ``scriptc/ops``), accumulating one adjoint per
value (``adjoints.py``: arrays, floats, and tuples element by element). Structured control flow is handled block
by block, with recomputation instead of saving every intermediate:

- ``prim::If``: the backward is an If on the same condition whose branch recomputes the forward of the branch
  taken and runs its adjoint; the adjoints of the outer values the branch uses go in and come out updated.
- ``prim::Loop``: the forward appends each iteration's block parameters (the index and carried values) to a
  tape (one list per parameter, as long as the trip count); the backward is a loop over the iterations in
  reverse that restores them from the tape, recomputes the body's forward and runs its adjoint, carrying the
  adjoints of the carried values and of the outer values the body uses (an outer array read one element per
  iteration is accumulated in place, one element per iteration).
- Tuples (``prim::TupleConstruct`` / ``TupleIndex`` / ``TupleUnpack``) route adjoints element by element, so a
  NamedTuple of parameters gets a NamedTuple of gradients.

Assumptions: the graph is inlined (no prim::CallFunction) and returns one float; arrays it reads are not
written in place (``memory.py`` checks this first). Floats, float arrays and tuples of them are differentiable;
ints, bools and the outputs of comparisons are not. An element-wise operator's operand adjoint is summed over
broadcast axes back to its shape.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir.builder import Builder
from ..ir.core import Block, Graph, Node, Value
from ..ir.registry import lookup
from ..ir.types import BOOL, FLOAT, INT, ListType, TensorType, TupleType
from ..passes import PassManager
from .adjoints import Adjoints, leaf_paths
from .emitter import Emitter, differentiable
from .inplace import InPlaceMixin
from .memory import is_write
from .lists import ListMixin, activate_list

_SKIP_ON_RECOMPUTE = {"prim::Print"}  # printing happens once, in the forward
_STRUCTURAL = {"prim::TupleConstruct", "prim::TupleIndex", "prim::TupleUnpack"}

__all__ = ["differentiable", "gradient_graph"]


def active_values(src: Graph, argnums: tuple, mem) -> set[int]:
    """The values that depend on the differentiated parameters (only they need adjoints): forward from the
    parameters through every node, around loops until nothing changes, and into an array written with an
    active value (the array and its views, all of it)."""
    active = {id(src.inputs[k]) for k in argnums}
    written = set()  # roots of arrays an active value was written into
    lists = mem.lists

    def visit(block: Block) -> bool:
        changed = False
        for node in block.nodes:
            if node.kind == "prim::Loop":
                body = node.blocks[0]
                for p, init, ret in zip(body.params[1:], node.inputs[2:], body.returns[1:]):
                    if id(p) not in active and (id(init) in active or id(ret) in active):
                        active.add(id(p))
                        changed = True
            ins = any(id(v) in active or mem.member(v) and id(mem.root(v)) in written for v in node.inputs)
            for b in node.blocks:
                changed |= visit(b)
            if node.kind == "prim::Loop":
                body = node.blocks[0]
                # zero iterations give the initial values back, so a carried parameter's activity reaches out
                outs = [id(p) in active for p in body.params[1:]]
            elif node.kind == "prim::If":
                outs = [any(id(b.returns[k]) in active for b in node.blocks) for k in range(len(node.outputs))]
            else:
                outs = [ins] * len(node.outputs)
                changed |= activate_list(node, active, lists)
                if (
                    ins
                    and is_write(node)
                    and mem.member(node.inputs[0])
                    and id(mem.root(node.inputs[0])) not in written
                ):
                    written.add(id(mem.root(node.inputs[0])))
                    changed = True
            for o, a in zip(node.outputs, outs):
                if a and id(o) not in active:
                    active.add(id(o))
                    changed = True
        return changed

    while visit(src.block):
        pass
    for v_id, root in list(mem.root_of.items()):
        if id(root) in written:
            active.add(v_id)
    active.update(written)
    return active


def _outer_values(node: Node, mem, active: set) -> list[Value]:
    """Differentiable values defined outside ``node`` that its blocks use, in first-use order (not arrays
    written in place: their adjoints are in memory)."""
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
    return [
        v for k, v in used.items() if k not in inside and differentiable(v) and not mem.member(v) and id(v) in active
    ]


def _read_whole_list(v: Value):
    """The elements of a list display (``[a, b]``) that is only read whole (by np.array / np.concatenate /
    np.stack), or None: such a list cannot change between its making and its reading."""
    node = v.node
    if (
        node is None
        or node.kind != "prim::ListConstruct"
        or any(u.user.kind not in ("aten::list_to_array", "aten::concatenate", "aten::stack") for u in v.uses)
    ):
        return None
    return list(node.inputs)


def _discard(v: Value, new: set) -> None:
    """Remove the unused node making ``v`` if it is one of ``new``, then its operands' likewise."""
    node = v.node
    if node is None or id(node) not in new or any(o.uses for o in node.outputs) or node.blocks:
        return
    inputs = list(node.inputs)
    node.destroy()
    for x in inputs:
        _discard(x, new)


def _leaf_types(t) -> list:
    """A tuple's scalars and arrays, in order (lists hold those only: a tuple is taped leaf by leaf)."""
    return [x for e in t.elems for x in _leaf_types(e)] if isinstance(t, TupleType) else [t]


def _leaves_of(e: Emitter, v: Value) -> list[Value]:
    if not isinstance(v.type, TupleType):
        return [v]
    return [x for k in range(len(v.type.elems)) for x in _leaves_of(e, e.op("prim::TupleIndex", v, index=k))]


def _rebuilt(e: Emitter, t, leaves: list[Value]) -> Value:
    if not isinstance(t, TupleType):
        return leaves[0]
    parts, at = [], 0
    for elem in t.elems:
        n = len(_leaf_types(elem))
        parts.append(_rebuilt(e, elem, leaves[at : at + n]))
        at += n
    return e.tuple_like(t, parts)


def _hint(v: Value) -> str | None:
    return None if v.name.isdigit() else v.name


class Transform(InPlaceMixin, ListMixin):
    def __init__(self, graph: Graph, src: Graph, argnums: tuple):
        self.graph = graph
        self.tapes: list[Value] = []
        self.list_shadows: dict[int, Value] = {}  # a written list of the source graph (by id) -> its adjoint
        self.recomputing: Block | None = None  # the block whose forward the backward is recomputing
        self.plan_memory(src)
        self.lists = self.mem.lists
        self.active_ids = active_values(src, argnums, self.mem)

    def active(self, v: Value) -> bool:
        """``v`` needs an adjoint: it is differentiable and depends on a differentiated parameter."""
        return id(v) in self.active_ids and differentiable(v)

    def new_tape(self, e: Emitter, t) -> Value:
        tape = e.tape(t)
        self.tapes.append(tape)
        return tape

    # -- forward ---------------------------------------------------------------------------------------
    def forward(self, src: Block, dst: Block, vmap: dict, recompute: bool, tape_loops: bool) -> dict:
        """Copy ``src``'s nodes to the end of ``dst``; loops directly in ``src`` record their tapes when
        ``tape_loops``. Returns the tapes per loop node (by id)."""
        saved = {}
        depth = self.depth[id(src)]
        for node in src.nodes:
            if recompute and self.skip_on_recompute(node):
                # the write is not redone, but the backward of an in-place operator reads the operand's old
                # value: replayed from its tape, here, where the recomputation can use it
                self.copy_reads(node, dst, vmap, recompute, depth)
                continue
            if recompute and node.kind in _SKIP_ON_RECOMPUTE:
                continue
            if self.copy_reads(node, dst, vmap, recompute, depth):
                continue
            if node.kind == "prim::Loop" and tape_loops:
                saved[id(node)] = self.taped_loop(node, dst, vmap, recompute)
                continue
            if node.kind == "prim::If" and tape_loops:
                saved[id(node)] = self.cursor_snapshot(Emitter(dst), node)
            self.copy_node(node, dst, vmap, recompute)
        return saved

    def copy_node(self, node: Node, dst: Block, vmap: dict, recompute: bool) -> Node:
        inputs = list(self.node_inputs.get(id(node)) or [vmap.get(id(v), v) for v in node.inputs])
        if is_write(node):  # the write itself goes to memory, not to the snapshot of its old value
            inputs[0] = vmap.get(id(node.inputs[0]), node.inputs[0])
        new = Builder.at_end(dst).op(
            node.kind,
            inputs,
            [o.type for o in node.outputs],
            node.attrs,
            source=node.source,
            hints=[_hint(o) for o in node.outputs],
        )
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

    def taped_loop(self, node: Node, dst: Block, vmap: dict, recompute: bool) -> tuple[list[Value], Value]:
        """The loop, appending each iteration's block parameters to one list each (the tape), and the read
        cursors at each iteration's start (``starts``, when the body reads written arrays)."""
        e = Emitter(dst, node.source)
        body = node.blocks[0]
        tapes = [[self.new_tape(e, t) for t in _leaf_types(p.type)] for p in body.params]
        self.local_tapes_for(e, node)
        starts = None
        if id(node) in self.has_reads:
            t = self.cursors.type.erase_shape()
            starts = self.new_tape(e, t)
        new = Builder.at_end(dst).op(
            "prim::Loop",
            [vmap.get(id(v), v) for v in node.inputs],
            [o.type for o in node.outputs],
            source=node.source,
            hints=[_hint(o) for o in node.outputs],
        )
        nb = new.add_block()
        for p, tape in zip(body.params, tapes):
            vmap[id(p)] = q = nb.add_param(p.type, _hint(p))
            for leaf, leaf_tape in zip(_leaves_of(Emitter(nb), q), tape):
                Emitter(nb).node("aten::append", [leaf_tape, leaf], [])
        if starts is not None:
            Emitter(nb).node("aten::append", [starts, Emitter(nb).clone(self.cursors)], [])
        self.forward(body, nb, vmap, recompute, tape_loops=False)
        for r in body.returns:
            nb.add_return(vmap.get(id(r), r))
        for o, n in zip(node.outputs, new.outputs):
            vmap[id(o)] = n
        return tapes, starts

    # -- backward --------------------------------------------------------------------------------------
    def backward(
        self, src: Block, dst: Block, vmap: dict, seeds: list, recompute: bool, adj: Adjoints | None = None, inputs=()
    ) -> Adjoints:
        """Emit ``src``'s forward into ``dst``, then its adjoint given ``seeds`` (one adjoint or None per
        return of ``src``), accumulating into ``adj`` (which may come holding the outer values' adjoints).
        Returns the adjoints of ``src``'s parameters and of the outer values it uses."""
        self.recomputing = src
        saved = self.forward(src, dst, vmap, recompute, tape_loops=True)
        e = Emitter(dst)
        adj = adj or Adjoints(e)
        adj.e = e
        adj.wanted = self.active
        adj.redirect = lambda v, c: self.redirect(v, c, e, vmap)
        self.make_shadows(src, e, vmap, inputs)
        self.make_list_shadows(src, e, vmap, inputs)
        for r, s in zip(src.returns, seeds):
            adj.add(r, s, vmap.get(id(r), r))
        for node in reversed(src.nodes):
            e.source = node.source
            if node.kind in ("prim::If", "prim::Loop"):
                if (
                    any(adj.get(o) is not None for o in node.outputs)
                    or self.in_memory(node)
                    or self.touches_lists(node)
                ):
                    if node.kind == "prim::If":
                        self.backward_if(node, dst, vmap, adj, saved.get(id(node)))
                    else:
                        self.backward_loop(node, dst, vmap, adj, *saved[id(node)])
                continue
            if self.backward_list(node, e, vmap, adj):
                continue
            if is_write(node):
                if self.in_memory(node):
                    self.backward_write(node, e, vmap, adj)
                continue
            in_memory, g = self.output_from_memory(node, e, vmap)
            if in_memory:
                if g is not None:
                    self.backward_op(node, e, vmap, adj, g)
            elif any(adj.get(o) is not None for o in node.outputs):
                if node.kind in _STRUCTURAL:
                    self.backward_tuple(node, vmap, adj)
                else:
                    self.backward_op(node, e, vmap, adj)
        return adj

    def backward_op(self, node: Node, e: Emitter, vmap: dict, adj: Adjoints, g=None) -> None:
        lists = [
            v
            for v in node.inputs
            if id(v) in self.active_ids and isinstance(v.type, ListType) and differentiable(v.type.elem)
        ]
        for v in lists:
            if _read_whole_list(v) is None:
                raise self.error(
                    node,
                    f"{node.kind} of a list of float values that is not a display read whole "
                    f"(np.array([a, b]), np.concatenate([a, b]), np.stack([a, b]) carry "
                    f"gradients: a list that is appended to, indexed or passed on does not)",
                )
        if not any(self.active(v) for v in node.inputs) and not lists:
            return
        op = lookup(node.kind)
        if node.kind == "prim::CallFunction":  # calls left after inlining are recursive
            callee = getattr(node.attrs.get("fn"), "name", "a function")
            raise self.error(node, f"a recursive call (of {callee}, which calls itself)")
        if op.vjp is None or len(node.outputs) != 1:
            raise self.error(node, f"the operator {node.kind}")
        inputs = self.node_inputs.get(id(node)) or [vmap.get(id(v), v) for v in node.inputs]
        g = adj.take(node.output) if g is None else g
        out = vmap[id(node.output)]
        arrays = {id(x) for x in inputs if isinstance(x.type, TensorType)}
        if not op.elementwise or len(arrays) > 1:
            # a scalar adjoint of an array result becomes an array for other rules, and for element-wise ones
            # with several array operands: ``g * b`` must have the result's shape before it is summed to ``a``'s
            g = e.broadcast(g, out)
        first_new = len(e.block.nodes)
        try:
            contributions = op.vjp(e, g, out, *inputs, **node.attrs)
        except NotImplementedError as why:
            raise self.error(node, f"{node.kind} of {why}") from None
        new = set(map(id, e.block.nodes[first_new:]))
        for src, c in zip(node.inputs, contributions):
            if isinstance(c, Value) and not self.active(src):
                _discard(c, new)  # made by the rule for an operand that needs no adjoint
        for src, c in zip(node.inputs, contributions):
            if isinstance(c, list) and src in lists:  # a list display's elements get their stretches
                for v, piece in zip(_read_whole_list(src), c):
                    adj.add(v, piece, vmap.get(id(v), v))
        for src, primal, c in zip(node.inputs, inputs, contributions):
            if c is not None and self.active(src):
                if isinstance(c, Value):
                    if op.elementwise:
                        c = self.reduce_to(e, c, primal, out, inputs)
                    if c.type != primal.type and primal.type == FLOAT and c.type in (INT, BOOL):
                        c = e.op("aten::Float", c)
                    if (
                        isinstance(c.type, TensorType)
                        and isinstance(primal.type, TensorType)
                        and c.type.dtype != primal.type.dtype
                    ):
                        c = e.op("aten::to", c, dtype=primal.type.dtype)  # an adjoint has its primal's dtype
                adj.add(src, c, primal)

    @staticmethod
    def reduce_to(e: Emitter, c: Value, primal: Value, out: Value, inputs: list) -> Value:
        """An element-wise operator's contribution to one operand, summed over the axes the operand was
        broadcast along (none when it is the only array operand). A scalar contribution to an array stands for
        the same value in every element of the result: each element of the operand gets it once per element of
        the result it was broadcast to."""
        if not isinstance(primal.type, TensorType):
            return e.sum_to(c, primal)
        alone = all(x is primal or not isinstance(x.type, TensorType) for x in inputs)
        if alone:
            return c
        if not isinstance(c.type, TensorType):
            size = e.op("prim::max", e.op("aten::numel", primal), e.const(1))
            return e.mul(c, e.op("aten::Float", e.op("aten::floordiv", e.op("aten::numel", out), size)))
        return e.sum_to(c, primal, [x for x in inputs if x is not primal])

    def backward_tuple(self, node: Node, vmap: dict, adj: Adjoints) -> None:
        """Tuples route adjoints element by element."""
        if node.kind == "prim::TupleConstruct":
            a = adj.take(node.output)
            parts = (
                a
                if isinstance(a, list)
                else [adj.e.op("prim::TupleIndex", a, index=k) for k in range(len(node.inputs))]
            )
            for v, c in zip(node.inputs, parts):
                adj.add(v, c, vmap.get(id(v), v))
            return
        tup = node.inputs[0]
        if node.kind == "prim::TupleIndex":
            contribution = [None] * len(tup.type.elems)
            contribution[node.attrs["index"]] = adj.take(node.output)
        else:
            contribution = [adj.take(o) for o in node.outputs]
        adj.add(tup, contribution, vmap.get(id(tup), tup))

    def backward_if(self, node: Node, dst: Block, vmap: dict, adj: Adjoints, snap) -> None:
        outs = [adj.take(o) for o in node.outputs]
        outer = _outer_values(node, self.mem, self.active_ids)
        primals = [vmap.get(id(v), v) for v in outer]
        e = Emitter(dst, node.source)
        init = [adj.leaves(v, p) for v, p in zip(outer, primals)]
        init_owned = [adj.owned_leaves(v, p) for v, p in zip(outer, primals)]
        flat = [x for part in init for x in part]
        back = e.node("prim::If", [vmap[id(node.inputs[0])]], [x.type for x in flat])
        owned_out = [True] * len(flat)
        for branch in node.blocks:
            nb = back.add_block()
            self.restore_cursors(Emitter(nb), snap)
            branch_adj = Adjoints(
                Emitter(nb), owned=[id(x) for part, o in zip(init, init_owned) for x, ok in zip(part, o) if ok]
            )
            for v, p, part, o in zip(outer, primals, init, init_owned):
                branch_adj.set_leaves(v, p, part, o)
            self.backward(branch, nb, dict(vmap), outs, recompute=True, adj=branch_adj)
            returned = [
                (x, ok)
                for v, p in zip(outer, primals)
                for x, ok in zip(branch_adj.leaves(v, p), branch_adj.owned_leaves(v, p))
            ]
            for k, (x, ok) in enumerate(returned):
                nb.add_return(x)
                owned_out[k] = owned_out[k] and ok
        self._set_outer(adj, outer, primals, back.outputs, owned_out)

    def backward_loop(self, node: Node, dst: Block, vmap: dict, adj: Adjoints, tapes, starts) -> None:
        body = node.blocks[0]
        carried = body.params[1:]
        diff = [k for k, p in enumerate(carried) if self.active(p)]
        outer = _outer_values(node, self.mem, self.active_ids)
        primals = [vmap.get(id(v), v) for v in outer]
        e = Emitter(dst, node.source)
        trips = e.op("aten::list_len", tapes[0][0])
        out_adj = Adjoints(e)  # the adjoints of the loop's results, as seeds of the last iteration
        for k in diff:
            out_adj.add(node.outputs[k], adj.take(node.outputs[k]), vmap[id(node.outputs[k])])
        init = [out_adj.leaves(node.outputs[k], vmap[id(node.outputs[k])]) for k in diff]
        for v, p in zip(outer, primals):  # the outer adjoints, in buffers the loop may update in place
            init.append(
                [
                    adj.own(a, p) if isinstance(a.type, TensorType) and not ok else a
                    for a, ok in zip(adj.leaves(v, p), adj.owned_leaves(v, p))
                ]
            )
        flat = [x for part in init for x in part]
        back = e.node("prim::Loop", [trips, e.const(True), *flat], [x.type for x in flat])
        nb = back.add_block()
        k_param = nb.add_param(INT, "k")
        params = [[nb.add_param(x.type, "adj") for x in part] for part in init]
        b = Emitter(nb, node.source)
        last = b.sub(b.sub(trips, b.const(1)), k_param)
        if starts is not None:
            self.restore_cursors(b, b.op("aten::list_getitem", starts, last))
        self.replay_local_reads(node, last)
        inner = dict(vmap)
        for p, tape in zip(body.params, tapes):
            inner[id(p)] = _rebuilt(b, p.type, [b.op("aten::list_getitem", t, last) for t in tape])
        body_adj = Adjoints(
            b, owned=[id(x) for part in params[len(diff) :] for x in part if isinstance(x.type, TensorType)]
        )
        seeds = [None] * len(body.returns)
        for k, part in zip(diff, params):
            seed_table = Adjoints(b)
            seed_table.set_leaves(node.outputs[k], vmap[id(node.outputs[k])], part, [False] * len(part))
            seeds[1 + k] = seed_table.get(node.outputs[k])
        for v, p, part in zip(outer, primals, params[len(diff) :]):
            body_adj.set_leaves(v, p, part, [True] * len(part))
        self.backward(body, nb, inner, seeds, recompute=True, adj=body_adj)
        nb.add_return(Emitter(nb).const(True))
        for k in diff:
            for x in body_adj.leaves(carried[k], inner[id(carried[k])]):
                nb.add_return(x)
        for v, p in zip(outer, primals):
            for x in body_adj.leaves(v, p):
                nb.add_return(x)
        outputs = list(back.outputs)
        carried_outputs = outputs[: sum(len(part) for part in init[: len(diff)])]
        self._set_outer(
            adj,
            outer,
            primals,
            outputs[len(carried_outputs) :],
            [isinstance(x.type, TensorType) for x in outputs[len(carried_outputs) :]],
        )
        outputs = carried_outputs
        for k, part in zip(diff, init):
            values, outputs = outputs[: len(part)], outputs[len(part) :]
            table = Adjoints(e)
            table.set_leaves(
                node.inputs[2 + k], vmap.get(id(node.inputs[2 + k]), node.inputs[2 + k]), values, [False] * len(values)
            )
            adj.add(
                node.inputs[2 + k], table.get(node.inputs[2 + k]), vmap.get(id(node.inputs[2 + k]), node.inputs[2 + k])
            )

    @staticmethod
    def _set_outer(adj: Adjoints, outer, primals, values, owned) -> None:
        values, owned = list(values), list(owned)
        for v, p in zip(outer, primals):
            n = len(leaf_paths(p.type))
            adj.set_leaves(v, p, values[:n], owned[:n])
            values, owned = values[n:], owned[n:]

    @staticmethod
    def error(node: Node, what: str) -> CompileError:
        return CompileError(
            f"grad: {what} is not differentiable",
            node.source,
            "scriptc.grad differentiates float arithmetic, math functions, element-wise array "
            "operations, reductions, matrix products, indexing, tuples, if and loops",
        )


def gradient_graph(src: Graph, argnums: tuple, with_value: bool, single: bool) -> Graph:
    """The graph of ``grad(f, argnums)`` (or ``value_and_grad``) for ``src``, an inlined graph of ``f``."""
    g = Graph(src.name + "_grad")
    vmap = {}
    for p in src.inputs:
        vmap[id(p)] = g.add_input(p.type, _hint(p))
    t = Transform(g, src, argnums)
    e = Emitter(g.block)
    t.make_tapes(e)
    (result,) = src.outputs
    seed = e.const(1.0)
    adj = t.backward(src.block, g.block, vmap, [seed], recompute=False, inputs=src.inputs)
    e = Emitter(g.block)
    grads = [
        e.clone(t.region(src.inputs[k], e, vmap))
        if id(src.inputs[k]) in t.shadows
        else adj.value(src.inputs[k], vmap[id(src.inputs[k])])
        for k in argnums
    ]
    out = grads[0] if single else e.op("prim::TupleConstruct", *grads)
    if with_value:
        value = vmap.get(id(result), result)
        out = e.op("prim::TupleConstruct", value, out)
    g.block.add_return(out)
    _prune_tapes(g, t.tapes)
    return g


def _prune_tapes(graph: Graph, tapes: list[Value]) -> None:
    """Drop what the backward does not use: a tape none of whose entries is read back by a value in use (a
    loop's carried float that no derivative needs), and the recomputation made only to be taped. The index
    tape of a loop also gives the backward its trip count, so it stays."""
    changed = bool(tapes)
    while changed:
        PassManager(passes=["dce"]).run(graph)
        changed = False
        for tape in list(tapes):
            users = [u.user for u in tape.uses]
            if any(
                u.kind not in ("aten::append", "aten::list_getitem") or u.kind == "aten::list_getitem" and u.output.uses
                for u in users
            ):
                continue
            for u in users:
                u.destroy()
            tape.node.destroy()
            tapes.remove(tape)
            changed = True
