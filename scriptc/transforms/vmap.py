"""Batching as a graph-to-graph transform: the graph of ``scriptc.vmap(f)`` from ``f``'s per-example graph.

``vmap_graph(src, arg_types, in_axes, out_axes, names)`` builds a graph whose parameters are the arguments as
passed (mapped arrays with their batch axis where ``in_axes`` says) and whose result is the per-example results
stacked along ``out_axes``. Inside, every batched value has its batch dimension first (``BatchAnalysis`` in
``batching.py`` says which values are batched): a per-example array of shape S is an array of shape (B,) + S, a
per-example scalar a 1-D array (float64, int64 or bool). Each operator is rewritten by the batching rule declared
beside it (``OpDef.batch``; the generic kinds are implemented here, custom rules in ``scriptc/ops``).

Control flow on batched values is masked, as JAX does it:

- ``prim::If`` on a batched condition runs each branch for the examples that take it (a *mask*), skipping the
  branch when no example takes it, then selects the results with ``np.where``. Writes inside are masked
  (``y[i] = where(mask, v, y[i])``); a ``print`` is a CompileError (the batched program cannot print per example).
- A ``prim::Loop`` whose trip count or condition is batched runs while any example is active, carrying a per-example
  ``active`` mask; finished examples keep their values (``where(active, new, old)``). Loops with an unbatched trip
  count and condition stay loops.
- Operators that may raise run only where some example is active, so an error is raised when an example whose path
  reaches the operator raises it. Element-wise arithmetic on batched values follows NumPy (no ZeroDivisionError,
  math domain errors give NaN), as JAX does.

The rule kinds (``BatchRule``) and what each does are described in ``scriptc/ir/registry.py``.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir.builder import Builder
from ..ir.core import Block, Graph, Node, Value
from ..ir.registry import Effect, lookup, type_of
from ..ir.types import (
    BOOL,
    FLOAT,
    INT,
    ListType,
    NamedTupleType,
    NumpyScalarType,
    TensorType,
    TupleType,
    Type,
    python_sample,
)
from .batching import BatchAnalysis, any_batched, batched_like, is_uninitialized


class _Canonical(dict):
    """The dtype of the 1-D array holding a per-example scalar: a Python scalar's (float64, int64, bool), a NumPy
    scalar's own (np.sum of a float32 example is an np.float32: the batch is a float32 array)."""

    def __contains__(self, t):
        return isinstance(t, NumpyScalarType) or dict.__contains__(self, t)

    def __getitem__(self, t):
        return t.dtype if isinstance(t, NumpyScalarType) else dict.__getitem__(self, t)

    def get(self, t, default=None):
        return self[t] if t in self else default


CANONICAL = _Canonical({FLOAT: "float64", INT: "int64", BOOL: "bool"})
INT64_MAX = 2**63 - 1


def example_rank(t) -> int:
    return t.rank if isinstance(t, TensorType) else 0


def erase(t):
    if isinstance(t, TensorType):
        return TensorType(t.dtype, t.rank)
    if isinstance(t, TupleType):
        return tuple_like(t, [erase(e) for e in t.elems])
    return t


def construct_like(b, example: TupleType, parts) -> Value:
    """A tuple of ``parts``, through builder ``b``: an instance of ``example``'s NamedTuple class if it is one."""
    named = {"named": example.qualname} if isinstance(example, NamedTupleType) else {}
    return b.node("prim::TupleConstruct", parts, [tuple_like(example, [p.type for p in parts])], named).output


def tuple_like(example: TupleType, elems) -> TupleType:
    """A tuple type of ``elems``, a NamedTuple's when ``example`` is one (a batched Stats is a Stats)."""
    return example.with_elems(elems) if isinstance(example, NamedTupleType) else TupleType(tuple(elems))


def batched_type(t, kind=True):
    """The type of a value of per-example type ``t`` batched as ``kind`` says."""
    if isinstance(t, TupleType):
        kind = kind if isinstance(kind, tuple) else batched_like(t, kind)
        return tuple_like(t, [batched_type(e, k) for e, k in zip(t.elems, kind)])
    if not kind:
        return erase(t)
    if isinstance(t, TensorType):
        return TensorType(t.dtype, t.rank + 1)
    if isinstance(t, ListType):
        return ListType(batched_type(t.elem))
    if t in CANONICAL:
        return TensorType(CANONICAL[t], 1)
    raise CompileError(f"vmap: a {t} cannot differ between examples")


class LaneMessage:
    """An ``aten::format`` of batched values: only a ``raise`` may use it, with the first raising example's."""

    def __init__(self, node: Node, inputs: list):
        self.node, self.inputs = node, inputs


class Batcher:
    """Emits the batched graph; custom batching rules (``scriptc/ops``) receive it as ``b``."""

    def __init__(self, graph: Graph, analysis: BatchAnalysis):
        self.graph, self.an = graph, analysis
        self.env: dict[int, object] = {}  # source value -> new value
        self.kinds: dict[int, object] = {}  # new value -> kind (True, False, tuple)
        self.examples: dict[int, object] = {}  # new batched value -> its per-example type
        self.block: Block = graph.block
        self.mask: Value | None = None  # the examples active here (None: all)
        self.size: Value | None = None  # the batch size B
        self.source = None
        self.region = None  # the innermost if or loop being emitted (where errors point)
        self.unassigned: set[int] = set()  # new values of locals unassigned on every path

    # -- emitting nodes -------------------------------------------------------------------------------------
    def node(self, kind: str, inputs, types, attrs=None) -> Node:
        return Builder.at_end(self.block).op(kind, list(inputs), types, attrs, source=self.source)

    def op(self, kind: str, *inputs: Value, **attrs) -> Value | None:
        types = lookup(kind).result_types([v.type for v in inputs], attrs)
        n = self.node(kind, inputs, types, attrs)
        return n.outputs[0] if n.outputs else None

    def const(self, value) -> Value:
        return self.node("prim::Constant", [], [type_of(value)], {"value": value}).output

    def copy(self, node: Node, inputs) -> Node:
        return self.node(node.kind, inputs, [erase(o.type) for o in node.outputs], dict(node.attrs))

    # -- what operators' batching rules (scriptc/ops) build on: they see only this object, not this package --
    @staticmethod
    def batched_type(t: Type) -> Type:
        """The type holding ``t`` for every example (a scalar's 1-D array, an array with a leading axis)."""
        return batched_type(t)

    def elementwise(self, node: Node, ins: list) -> Value:
        """The operator on the whole batch at once, its operands broadcast against the batch axis."""
        from .vmap_rules import elementwise  # (vmap_rules builds on this class: imported when used)

        return elementwise(self, node, ins)

    def lanes(self, node: Node, ins: list) -> list[Value]:
        """The operator once per example, in a loop over the batch."""
        from .vmap_rules import lanes  # (vmap_rules builds on this class: imported when used)

        return lanes(self, node, ins)

    def error(self, node: Node | None, what: str, hint: str | None = None) -> CompileError:
        return CompileError(
            f"vmap: {what}", (node.source if node is not None else None) or self.source or self.region, hint
        )

    # -- batched values ------------------------------------------------------------------------------------
    def batched(self, v) -> bool:
        return isinstance(v, LaneMessage) or any_batched(self.kinds.get(id(v), False))

    def kind(self, v):
        return self.kinds.get(id(v), False)

    def mark(self, v: Value, example, kind=True) -> Value:
        self.kinds[id(v)] = kind
        if any_batched(kind):
            self.examples[id(v)] = example
        return v

    def example_type(self, v: Value):
        return self.examples.get(id(v), v.type)

    def rank(self, v: Value) -> int:
        return example_rank(self.example_type(v))

    def unpack(self, v: Value) -> list[Value]:
        return self.node("prim::TupleUnpack", [v], list(v.type.elems)).outputs

    def dims(self, v: Value) -> list[Value]:
        """The per-example dimensions of an array (ints, the batch dimension left out)."""
        dims = self.unpack(self.op("aten::size", v)) if v.type.rank else []
        return list(dims[1:] if self.batched(v) else dims)

    def product(self, values: list[Value]) -> Value:
        out = self.const(1)
        for d in values:
            out = self.op("aten::mul", out, d)
        return out

    def align(self, v: Value, rank: int) -> Value:
        """A batched value with unit dimensions inserted after the batch dimension up to per-example rank
        ``rank``, so that broadcasting against per-example operands of that rank pairs each example with
        itself."""
        have = self.rank(v)
        if have >= rank:
            return v
        for _ in range(rank - have):
            v = self.op("aten::unsqueeze", v, dim=1)
        return self.mark(v, TensorType(v.type.dtype, rank))

    def cast(self, v: Value, dtype: str) -> Value:
        if v.type.dtype == dtype:
            return v
        example = self.example_type(v)
        out = self.op("aten::to", v, dtype=dtype)
        if not self.batched(v):
            return out
        return self.mark(out, TensorType(dtype, example.rank) if isinstance(example, TensorType) else example)

    def fix_dtype(self, v: Value, example) -> Value:
        """A batched result in the dtype its per-example type asks for (a scalar's canonical dtype)."""
        want = example.dtype if isinstance(example, TensorType) else CANONICAL.get(example)
        return self.cast(v, want) if want is not None and isinstance(v.type, TensorType) else v

    def flatten(self, v: Value) -> Value:
        """A batched array as (B, elements of an example)."""
        return self.op("aten::reshape", v, self.size, self.product(self.dims(v)))

    def move_batch(self, v: Value, to: int) -> Value:
        """The batch dimension (first) moved to position ``to`` (a view)."""
        rank = v.type.rank
        if to == 0:
            return v
        dims = list(range(1, rank))
        dims.insert(to, 0)
        return self.op("aten::permute", v, dims=dims)

    def any(self, mask: Value) -> Value:
        return self.op("aten::any", mask)

    def masked(self, new: Value, old: Value, rank: int) -> Value:
        """``new`` where the examples are active, ``old`` elsewhere (``new`` itself when all are active)."""
        if self.mask is None:
            return new
        return self.op("aten::where", self.align(self.mark_mask(self.mask), rank), new, old)

    def mark_mask(self, mask: Value) -> Value:
        return self.mark(mask, BOOL)

    def broadcast(self, v: Value, example) -> Value:
        """An unbatched value made batched: the same value for every example (a new array)."""
        if isinstance(example, TupleType):
            parts = [self.broadcast(e, t) for e, t in zip(self.unpack(v), example.elems)]
            out = construct_like(self, example, parts)
            return self.mark(out, example, batched_like(example))
        if isinstance(example, TensorType):
            out = self.op("aten::empty", self.size, *self.dims(v), dtype=example.dtype)
            self.node("aten::copy_", [out, v], [])
            return self.mark(out, example)
        if example in CANONICAL:
            return self.mark(self.op("aten::full", v, self.size, dtype=CANONICAL[example]), example)
        raise self.error(
            None,
            f"a {example} would have to differ between examples",
            "vmap batches arrays and scalars; lists and strings must not depend on mapped values",
        )

    def dummy(self, example, kind) -> Value:
        """A value for a variable that is unassigned on this path (never read there)."""
        if isinstance(example, TupleType):
            kind = kind if isinstance(kind, tuple) else batched_like(example, kind)
            parts = [self.dummy(e, k) for e, k in zip(example.elems, kind)]
            return self.mark(construct_like(self, example, parts), example, kind)
        if isinstance(example, TensorType):
            v = self.op("aten::zeros", *[self.const(1)] * example.rank, dtype=example.dtype)
        elif example in CANONICAL:
            v = self.const(python_sample(example))
        else:
            v = self.node("prim::Uninitialized", [], [example]).output
        return self.coerce(v, example, kind)

    def coerce(self, v: Value, example, kind) -> Value:
        """``v`` laid out as ``kind`` asks (unbatched parts broadcast)."""
        have = self.kind(v)
        if have == kind or not any_batched(kind):
            if any_batched(have) and not any_batched(kind):
                raise AssertionError(f"vmap: {v} is batched where the analysis says it is not ({have} vs {kind})")
            return v
        if self.is_unassigned(v):
            return self.dummy(example, kind)
        if isinstance(example, TupleType):
            kind = kind if isinstance(kind, tuple) else batched_like(example, kind)
            have = have if isinstance(have, tuple) else batched_like(example, have)
            parts = [
                self.coerce(p, e, k) if not h else self.mark(p, e, h)
                for p, e, k, h in zip(self.unpack(v), example.elems, kind, have)
            ]
            out = construct_like(self, example, parts)
            return self.mark(out, example, kind)
        return self.broadcast(v, example)

    def bind(self, src: Value, new) -> None:
        """``new`` is what ``src`` becomes; laid out as the analysis says."""
        if isinstance(new, LaneMessage):
            self.env[id(src)] = new
            return
        if self.an.is_unassigned(src):
            self.unassigned.add(id(new))
        self.env[id(src)] = self.coerce(new, src.type, self.an.kind(src))

    def is_unassigned(self, v) -> bool:
        """A local that no path assigned yet (never read where it holds this value)."""
        return isinstance(v, Value) and (is_uninitialized(v) or id(v) in self.unassigned)

    def value(self, src: Value):
        return self.env.get(id(src), src)

    # -- blocks ----------------------------------------------------------------------------------------------
    def emit_block(self, block: Block) -> None:
        for node in block.nodes:
            self.source = node.source
            if node.kind in ("prim::If", "prim::Loop"):
                region, self.region = self.region, node.source or self.region
                try:
                    (self.emit_if if node.kind == "prim::If" else self.emit_loop)(node)
                finally:
                    self.region = region
            else:
                self.emit_op(node)

    def in_block(self, block: Block, mask, fn):
        saved = self.block, self.mask
        self.block, self.mask = block, mask
        try:
            return fn()
        finally:
            self.block, self.mask = saved

    def emit_op(self, node: Node) -> None:
        from .vmap_rules import emit_rule, emit_structural  # (vmap_rules builds on this class: imported when used)

        ins = [self.value(v) for v in node.inputs]
        if emit_structural(self, node, ins):
            return
        rule = lookup(node.kind).batch
        fresh = rule is not None and rule.fresh and any(self.an.batched(o) for o in node.outputs)
        if not any(self.batched(v) for v in ins) and not fresh:
            self.check_unbatched_effects(node)
            new = self.copy(node, ins)
            for o, n in zip(node.outputs, new.outputs):
                self.bind(o, self.mark(n, o.type, False))
            return
        outs = emit_rule(self, node, ins)
        for o, n in zip(node.outputs, outs):
            self.bind(o, self.mark(n, o.type, batched_like(o.type, not lookup(node.kind).batch.unbatched_result)))

    def check_unbatched_effects(self, node: Node) -> None:
        if self.mask is None:
            return
        if node.kind == "prim::Print":
            raise self.error(
                node,
                "print under a condition that depends on a mapped value",
                "the batched function runs every example at once and cannot print per example",
            )
        if node.kind == "prim::CallFunction" and _has_effects(node.attrs["fn"]):
            raise self.error(node, "a call that prints or writes, under a condition that depends on a mapped value")

    # -- if ----------------------------------------------------------------------------------------------
    def emit_if(self, node: Node) -> None:
        cond = self.value(node.inputs[0])
        if not self.batched(cond):
            self.emit_plain_if(node, cond)
            return
        c = cond
        branches = []
        for k, block in enumerate(node.blocks):
            if all(self.safe_everywhere(n) for n in block.nodes):  # nothing to skip: run it for every example
                self.in_block(self.block, None, lambda: self.emit_block(block))
                branches.append([None if self.is_unassigned(self.value(r)) else self.value(r) for r in block.returns])
                continue
            mask = c if k == 0 else self.op("aten::bitwise_not", c)
            if self.mask is not None:
                mask = self.op("aten::__and__", self.mask, mask)
            branches.append(self.guarded_branch(block, mask))
        for i, out in enumerate(node.outputs):
            a, b = branches[0][i], branches[1][i]
            kind = self.an.kind(out)
            if a is None or b is None:  # unassigned on one path: the other path's value
                v = b if a is None else a
                self.bind(out, v if v is not None else self.dummy(out.type, kind))
            elif a is b or node.blocks[0].returns[i] is node.blocks[1].returns[i]:
                self.bind(out, a)
            else:
                self.bind(out, self.select(c, a, b, out.type, node))

    def guarded_branch(self, block: Block, mask: Value) -> list:
        """The branch's results for the examples in ``mask``, computed only when some example is in it; None
        for a result the branch leaves unassigned."""
        self.mark_mask(mask)
        guard = self.node("prim::If", [self.any(mask)], [])
        then, other = guard.add_block(), guard.add_block()

        def run():
            self.emit_block(block)
            return [self.value(r) for r in block.returns]

        results = self.in_block(then, mask, run)
        out = []
        for r, v in zip(block.returns, results):
            if isinstance(v, LaneMessage):
                raise self.error(block.owner, "a string built from mapped values is used after a condition")
            if self.is_unassigned(v):
                out.append(None)
                continue
            if not r.owning_block.is_within(block):  # a value from before the branch: visible after it as it is
                out.append(v)
                continue
            then.add_return(v)
            other.add_return(self.in_block(other, None, lambda: self.dummy(r.type, self.kind(v))))
            o = guard.add_output(erase(v.type), self.graph.fresh_name(None))
            out.append(self.mark(o, self.example_type(v) if self.batched(v) else r.type, self.kind(v)))
        return out

    def safe_everywhere(self, node: Node) -> bool:
        """Whether running ``node`` for examples that do not reach it is harmless, so that its branch needs no
        guard (which would split the branch's element-wise operators from the rest, as JAX never does): pure
        operators, and element-wise ones on batched values (NumPy's array semantics do not raise; an integer
        ``**`` does, for negative exponents)."""
        if node.blocks or node.kind in ("prim::ListConstruct", "prim::CallFunction"):
            return False
        op = lookup(node.kind)
        if op.effect == Effect.PURE:
            return True
        return (
            op.effect == Effect.RAISES
            and op.elementwise
            and any(self.an.batched(v) for v in node.inputs)
            and not (
                node.kind == "aten::pow"
                and node.outputs[0].type not in (FLOAT,)
                and not (
                    isinstance(node.outputs[0].type, TensorType) and node.outputs[0].type.dtype.startswith("float")
                )
            )
        )

    def select(self, c: Value, a: Value, b: Value, example, node: Node) -> Value:
        """``where(c, a, b)`` for one per-example type (tuples element by element)."""
        if isinstance(example, TupleType):
            a_parts, b_parts = self.unpack(a), self.unpack(b)
            ka = self.kind(a) if isinstance(self.kind(a), tuple) else batched_like(example, self.kind(a))
            kb = self.kind(b) if isinstance(self.kind(b), tuple) else batched_like(example, self.kind(b))
            parts = [
                self.select(c, self.mark(x, e, kx), self.mark(y, e, ky), e, node)
                for x, y, e, kx, ky in zip(a_parts, b_parts, example.elems, ka, kb)
            ]
            out = construct_like(self, example, parts)
            return self.mark(out, example, batched_like(example))
        if not (isinstance(example, TensorType) or example in CANONICAL):
            raise self.error(node, f"a {example} chosen by a condition that depends on a mapped value")
        if isinstance(example, TensorType):
            a, b = (self.align(v, example.rank) if self.batched(v) else v for v in (a, b))
        out = self.op("aten::where", self.align(c, example_rank(example)), a, b)
        return self.mark(self.fix_dtype(out, example), example)

    def emit_plain_if(self, node: Node, cond: Value) -> None:
        new = self.node("prim::If", [cond], [])
        results = []
        for src_block in node.blocks:
            nb = new.add_block()

            def run(src_block=src_block, nb=nb):
                self.emit_block(src_block)
                rets = []
                for r, out in zip(src_block.returns, node.outputs):
                    v = self.coerce(self.value(r), out.type, self.an.kind(out))
                    nb.add_return(v)
                    rets.append(v)
                return rets

            results.append(self.in_block(nb, self.mask, run))
        for i, out in enumerate(node.outputs):
            a, b = results[0][i], results[1][i]
            t = erase(b.type if self.is_unassigned(a) else a.type)
            self.bind(out, self.mark(new.add_output(t, self.graph.fresh_name(_hint(out))), out.type, self.an.kind(out)))

    # -- loops -------------------------------------------------------------------------------------------
    def emit_loop(self, node: Node) -> None:
        body = node.blocks[0]
        trips, cond, *init = [self.value(v) for v in node.inputs]
        kinds = [self.an.kind(p) for p in body.params[1:]]
        init = [self.coerce(v, p.type, k) for v, p, k in zip(init, body.params[1:], kinds)]
        masked = self.an.is_masked(node)
        if masked:
            active = cond if self.batched(cond) else self.broadcast(cond, BOOL)
            if self.batched(trips):
                active = self.op("aten::__and__", active, self.op("aten::gt", trips, self.const(0)))
            if self.mask is not None:
                active = self.op("aten::__and__", active, self.mask)
            limit = self.const(INT64_MAX) if self.batched(trips) else trips
            loop = self.node("prim::Loop", [limit, self.any(active), active, *init], [])
        else:
            # a prange keeps running in parallel unless it carries batched values (its reductions are scalar)
            attrs = {} if any(any_batched(k) for k in kinds) else dict(node.attrs)
            loop = self.node("prim::Loop", [trips, cond, *init], [], attrs)
        nb = loop.add_block()
        i = nb.add_param(INT, _hint(body.params[0]))
        self.env[id(body.params[0])] = self.mark(i, INT, False)
        active = nb.add_param(TensorType("bool", 1), "active") if masked else None
        params = []
        for p, k in zip(body.params[1:], kinds):
            q = self.mark(nb.add_param(batched_type(p.type, k), _hint(p)), p.type, k)
            self.env[id(p)] = q
            if self.an.is_unassigned(p):
                self.unassigned.add(id(q))
            params.append(q)

        def run():
            self.emit_block(body)
            new_cond = self.value(body.returns[0])
            rets = [self.coerce(self.value(r), p.type, k) for r, p, k in zip(body.returns[1:], body.params[1:], kinds)]
            if not masked:
                return [new_cond, *rets]
            rets = [
                self.select(active, r, q, p.type, node) if r is not q else q
                for r, q, p in zip(rets, params, body.params[1:])
            ]
            go = new_cond if self.batched(new_cond) else self.broadcast(new_cond, BOOL)
            go = self.op("aten::__and__", active, go)
            if self.batched(trips):
                nxt = self.op("aten::add", i, self.const(1))
                go = self.op("aten::__and__", go, self.op("aten::lt", nxt, trips))
            return [self.any(go), go, *rets]

        for r in self.in_block(nb, self.mark_mask(active) if masked else self.mask, run):
            nb.add_return(r)
        if masked:
            loop.add_output(TensorType("bool", 1), self.graph.fresh_name("active"))
        outs = [loop.add_output(erase(v.type), self.graph.fresh_name(_hint(o))) for v, o in zip(init, node.outputs)]
        for o, n, k in zip(node.outputs, outs, kinds):
            self.bind(o, self.mark(n, o.type, k))


# -- the graph of vmap(f) -------------------------------------------------------------------------------------
def vmap_graph(src: Graph, arg_types: tuple, in_axes: tuple, out_axes, names: list[str]) -> Graph:
    """The batched graph of ``src`` (a per-example graph, inlined): parameters typed ``arg_types`` (the arguments
    as passed: mapped arrays with their batch axis at ``in_axes[k]``, None for an unmapped one), results stacked
    along ``out_axes`` (an int, None, or a tuple matching a tuple result). Batch sizes that differ between mapped
    arguments raise ValueError when the graph runs."""
    analysis = BatchAnalysis(src, [a is not None for a in in_axes], names)
    g = Graph(src.name + "_vmap")
    b = Batcher(g, analysis)
    mapped = []
    for p, t, axis, name in zip(src.inputs, arg_types, in_axes, names):
        v = g.add_input(t, _hint(p))
        if axis is None:
            b.env[id(p)] = b.mark(v, p.type, False)
            continue
        axis %= t.rank
        if axis:
            v = b.op("aten::permute", v, dims=[axis] + [d for d in range(t.rank) if d != axis])
        if not isinstance(p.type, TensorType):
            v = b.cast(v, CANONICAL[p.type])  # an example's element is a Python scalar (float32 as float64)
        b.env[id(p)] = b.mark(v, p.type)
        mapped.append((v, name, axis))
    b.size = b.op("prim::TupleIndex", b.op("aten::size", mapped[0][0]), index=0)
    for v, name, axis in mapped[1:]:
        _check_size(b, v, name, axis, mapped[0])
    b.emit_block(src.block)
    (result,) = src.outputs
    g.block.add_return(_output(b, b.value(result), result.type, out_axes))
    return g


def _check_size(b: Batcher, v: Value, name: str, axis: int, first) -> None:
    """JAX's ValueError for batch sizes that differ between the mapped arguments."""
    size = b.op("prim::TupleIndex", b.op("aten::size", v), index=0)
    check = b.node("prim::If", [b.op("aten::ne", size, b.size)], [])
    fail, _ = check.add_block(), check.add_block()  # (the else block does nothing)

    def raise_it():
        text = (
            f"vmap got inconsistent sizes for array axes to be mapped: axis {first[2]} of argument "
            f"'{first[1]}' has size {{}}, axis {axis} of argument '{name}' has size {{}}"
        )
        message = b.op("aten::format", b.size, size, fmt=text)
        b.node("prim::RaiseException", [message], [], {"exc": "ValueError"})

    b.in_block(fail, None, raise_it)


def _output(b: Batcher, v: Value, example, spec) -> Value:
    """The result with the batch axis where ``out_axes`` puts it (an unbatched result is broadcast)."""
    if isinstance(example, TupleType):
        specs = spec if isinstance(spec, tuple) else (spec,) * len(example.elems)
        if len(specs) != len(example.elems):
            raise ValueError(f"vmap out_axes {spec} does not match a result of {len(example.elems)} values")
        kind = b.kind(v) if isinstance(b.kind(v), tuple) else batched_like(example, b.kind(v))
        parts = [_output(b, b.mark(p, e, k), e, s) for p, e, k, s in zip(b.unpack(v), example.elems, kind, specs)]
        return construct_like(b, example, parts)
    if isinstance(spec, tuple):
        raise ValueError(f"vmap out_axes {spec} is a tuple, but the result is not")
    if spec is None:
        if b.batched(v):
            raise ValueError("vmap has a result that differs between examples but its out_axes is None")
        return v
    if not b.batched(v):
        v = b.broadcast(v, example)
    rank = example_rank(example) + 1
    if not -rank <= spec < rank:
        raise ValueError(f"vmap out_axes {spec} is out of range for a result of rank {rank}")
    return b.move_batch(v, spec % rank)


def _hint(v: Value) -> str | None:
    return None if v.name.isdigit() else v.name


def _has_effects(graph: Graph, seen=None) -> bool:
    """Whether calling ``graph`` may write memory or print (raising is not an effect here)."""
    seen = set() if seen is None else seen
    if id(graph) in seen:
        return False
    seen.add(id(graph))
    for n in graph.walk():
        if n.kind == "prim::CallFunction":
            if _has_effects(n.attrs["fn"], seen):
                return True
        elif lookup(n.kind).effect == Effect.WRITES or n.kind == "prim::Print":
            return True
    return False


__all__ = ["Batcher", "CANONICAL", "LaneMessage", "batched_type", "example_rank", "vmap_graph"]
