"""The parts of reverse mode that handle arrays written in place (``memory.py`` says which), as a mixin of
``autodiff.Transform``:

- forward: reads of written arrays inside loops and branches go on tapes (``read``), and a recomputation
  replays them from the tape and skips the writes. A read directly in the body of a loop of the function's
  top level (the common case) has a tape of its own in that loop, read back at the iteration the backward is
  at, like the loop's carried values; any other read goes on a tape read at a cursor (one per read, in an int64
  array): a loop records the cursors at the start of each iteration (``starts``), a branch before it runs
  (``snap``), so that the backward puts them back before recomputing that iteration or branch;
- backward: each written float array has a shadow buffer holding its adjoint (``shadows``); adjoints of its
  views go to the same view of the shadow (``region``); writes take their adjoint from the shadow
  (``backward_write``).
"""

from __future__ import annotations

from ..ir.core import Block, Graph, Node, Value
from ..ir.registry import REGISTRY
from .emitter import Emitter, Scatter
from .memory import ELEMENT_WRITES, MemoryPlan, is_write


class InPlaceMixin:
    mem: MemoryPlan

    def plan_memory(self, src: Graph) -> None:
        self.mem = MemoryPlan(src)
        self.depth: dict[int, int] = {}
        self.read_keys: dict[tuple, int] = {}  # (node id, input index or -1) -> read number
        self.read_types: list = []
        self.has_reads: set[int] = set()  # loops and ifs with cursor-taped reads inside
        self.local_reads: dict[int, list] = {}  # top-level loop -> [(read key, type)] directly in its body
        self.local_tapes: dict[tuple, Value] = {}  # read key -> the loop's tape of it
        self.local_index: dict[tuple, Value] = {}  # read key -> the iteration the backward recomputes
        self.shadows: dict[int, Value] = {}  # root (source value id) -> its adjoint buffer
        self.node_inputs: dict[int, list] = {}  # a node's inputs as copied (snapshots in place of arrays)
        self._number(src.block, 0, [])

    def _number(self, block: Block, depth: int, enclosing: list) -> None:
        self.depth[id(block)] = depth
        for node in block.nodes:
            keys = []
            if self.mem.is_scalar_read(node):
                keys.append(((id(node), -1), node.output.type))
            keys += [((id(node), k), node.inputs[k].type.erase_shape()) for k in self.mem.reads(node)]
            if depth == 1 and keys and enclosing[0].kind == "prim::Loop":
                self.local_reads.setdefault(id(enclosing[0]), []).extend(keys)
            elif depth and keys:
                for key, t in keys:
                    self.read_keys[key] = len(self.read_types)
                    self.read_types.append(t)
                self.has_reads.update(id(n) for n in enclosing)
            for b in node.blocks:
                self._number(b, depth + 1, enclosing + [node])

    def make_tapes(self, e: Emitter) -> None:
        """The read tapes and their cursors, at the top of the gradient graph."""
        self.cursors = e.op("aten::zeros", e.const(len(self.read_types)), dtype="int64") if self.read_types else None
        self.read_tapes = [self.new_tape(e, t) for t in self.read_types]

    # -- forward ---------------------------------------------------------------------------------------
    def skip_on_recompute(self, node: Node) -> bool:
        return (self.mem.active and is_write(node)) or self.skip_list_write(node)

    def copy_reads(self, node: Node, dst: Block, vmap: dict, recompute: bool, depth: int) -> bool:
        """Emit ``node``'s reads of written arrays; True when that was all of it (a scalar read)."""
        if not (self.mem.active or self.mem.list_reads):
            return False
        e = Emitter(dst, node.source)
        if self.mem.is_scalar_read(node):
            inputs = [vmap.get(id(v), v) for v in node.inputs]
            vmap[id(node.output)] = self.read(
                e,
                node,
                -1,
                lambda: e.node(node.kind, inputs, [node.output.type], dict(node.attrs)).output,
                recompute,
                depth,
                replay=self.replays(node),
            )
            return True
        ks = self.mem.reads(node)
        if ks:
            inputs = [vmap.get(id(v), v) for v in node.inputs]
            for k in ks:
                inputs[k] = self.read(e, node, k, lambda k=k: e.clone(inputs[k]), recompute, depth)
            self.node_inputs[id(node)] = inputs
        return False

    def read(self, e: Emitter, node: Node, k: int, make, recompute: bool, depth: int, replay: bool = True) -> Value:
        """The value a read saw in the forward: made (and taped) in the forward, replayed from its tape in a
        recomputation, or made again there when ``replay`` is False (a list the recomputation makes anew)."""
        if not depth:  # straight-line code of the function: never recomputed
            return make()
        key = (id(node), k)
        if key in self.local_tapes:
            if recompute:
                return e.op("aten::list_getitem", self.local_tapes[key], self.local_index[key]) if replay else make()
            v = make()
            e.node("aten::append", [self.local_tapes[key], v], [])
            return v
        r = self.read_keys[key]
        at = e.op("aten::getitem", self.cursors, e.const(r), checked=[0])
        e.node("aten::setitem", [self.cursors, e.const(r), e.add(at, e.const(1))], [], {"checked": [0]})
        if recompute:
            return e.op("aten::list_getitem", self.read_tapes[r], at) if replay else make()
        v = make()
        e.node("aten::append", [self.read_tapes[r], v], [])
        return v

    def local_tapes_for(self, e: Emitter, loop: Node) -> None:
        """The tapes of the reads directly in a top-level loop's body, made before the loop."""
        for key, t in self.local_reads.get(id(loop), ()):
            self.local_tapes[key] = self.new_tape(e, t)

    def replay_local_reads(self, loop: Node, index: Value) -> None:
        for key, _ in self.local_reads.get(id(loop), ()):
            self.local_index[key] = index

    def cursor_snapshot(self, e: Emitter, node: Node) -> Value | None:
        return e.clone(self.cursors) if id(node) in self.has_reads else None

    def restore_cursors(self, e: Emitter, snap: Value | None) -> None:
        if snap is not None:
            e.node("aten::copy_", [self.cursors, snap], [])

    # -- backward --------------------------------------------------------------------------------------
    def make_shadows(self, src: Block, e: Emitter, vmap: dict, inputs=()) -> None:
        """Adjoint buffers for the written float arrays made in ``src`` (or passed in as ``inputs``)."""
        if not self.mem.active:
            return
        made = list(inputs) + [o for n in src.nodes for o in n.outputs]
        for v in made:
            if self.mem.is_root(v) and self.active(v):
                self.shadows[id(v)] = e.zeros_like(vmap.get(id(v), v))

    def region(self, v: Value, e: Emitter, vmap: dict) -> Value:
        """The part of its root's shadow that holds the adjoint of ``v`` (the same views, taken of it)."""
        r = self.shadows[id(self.mem.root(v))]
        for view in self.mem.view_path(v):
            rest = [vmap.get(id(x), x) for x in view.inputs[1:]]
            r = e.node(view.kind, [r, *rest], [view.output.type], dict(view.attrs)).output
        return r

    def redirect(self, v: Value, c, e: Emitter, vmap: dict) -> bool:
        """A contribution to a written array goes into its shadow."""
        if not (self.mem.active and self.mem.member(v) and self.active(v)):
            return False
        region = self.region(v, e, vmap)
        if isinstance(c, Scatter):
            c.write(e, region)
        else:
            e.add_into(region, c)
        return True

    def in_memory(self, node: Node) -> bool:
        """A node whose adjoint is in memory: a write, or a loop or branch holding one."""
        if not self.mem.active:
            return False
        if is_write(node):
            return self.mem.member(node.inputs[0]) and self.active(node.inputs[0])
        return any(self.in_memory(n) for b in node.blocks for n in b.nodes)

    def output_from_memory(self, node: Node, e: Emitter, vmap: dict):
        """For a node making a written array: None for a view (its adjoint is already in place); for a new
        array, a copy of its shadow, the adjoint its derivative rule passes on."""
        if not (self.mem.active and node.outputs and self.mem.member(node.output)):
            return False, None
        if self.mem.view_path(node.output) or not self.active(node.output):
            return True, None
        return True, e.clone(self.region(node.output, e, vmap))

    def backward_write(self, node: Node, e: Emitter, vmap: dict, adj) -> None:
        inputs = self.node_inputs.get(id(node)) or [vmap.get(id(v), v) for v in node.inputs]
        region = self.region(node.inputs[0], e, vmap)
        zero = e.const(0.0)
        if node.kind in ELEMENT_WRITES:
            *index, value = inputs[1:]
            adj.add(node.inputs[-1], e.op("aten::getitem", region, *index), value)
            e.node("aten::setitem", [region, *index, zero], [])
        elif node.kind == "aten::copy_":
            g = e.clone(region)
            e.node("aten::fill_", [region, zero], [])
            adj.add(node.inputs[1], e.sum_to(g, inputs[1]), inputs[1])
        elif node.kind == "aten::fill_":
            adj.add(node.inputs[1], e.op("aten::sum", region), inputs[1])
            e.node("aten::fill_", [region, zero], [])
        elif node.kind == "aten::masked_put_":
            g = e.op("aten::masked_select", region, inputs[1])
            e.node("aten::masked_put_", [region, inputs[1], zero], [])
            adj.add(node.inputs[2], e.sum_to(g, inputs[2]), inputs[2])
        elif node.kind == "aten::index_put_":
            indices, attrs = inputs[2:], dict(node.attrs)
            g = e.op("aten::index", region, *indices, **attrs)
            # of a repeated index only the last write stays, and only its value gets the adjoint (as JAX's
            # scatter): each write's number, stored the same way, tells which one stayed
            numbers = e.op("aten::arange", e.const(0), e.op("aten::numel", g), e.const(1))
            numbers = e.reshape_like(numbers, g)
            stayed = e.op("aten::zeros_like", region, dtype="int64")
            e.node("aten::index_put_", [stayed, numbers, *indices], [], attrs)
            won = e.op("aten::eq", e.op("aten::index", stayed, *indices, **attrs), numbers)
            g = e.op("aten::where", won, g, e.const(0.0))
            e.node("aten::index_put_", [region, zero, *indices], [], attrs)
            adj.add(node.inputs[1], e.sum_to(g, inputs[1]), inputs[1])
        elif node.kind == "aten::index_add_":  # x + (v added at the indices): x's adjoint passes through
            g = e.op("aten::index", region, *inputs[2:], **dict(node.attrs))
            adj.add(node.inputs[1], e.sum_to(g, inputs[1]), inputs[1])
        else:  # x op= y: x's new value is op(x's old value, y), stored in place
            kind = REGISTRY[node.kind].extra["inplace_of"]
            old, other = inputs[0], inputs[1]
            g = e.clone(region)
            c_old, c_other = REGISTRY[kind].vjp(e, g, e.op(kind, old, other), old, other)
            if c_old is None:
                e.node("aten::fill_", [region, zero], [])
            else:
                e.node("aten::copy_", [region, e.sum_to(c_old, old)], [])
            if c_other is not None:
                adj.add(node.inputs[1], e.sum_to(c_other, other), other)
