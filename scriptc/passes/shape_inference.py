"""Shape inference: refine array types to the dimensions that are known (``Double(*, *)`` -> ``Double(2, 3)``).

The graph's input types are the facts (callers set them first: ``infer_shapes``); every other value's shape
follows from its operator's shape rule (``OpDef.shape``, declared next to the type rule in ``scriptc/ops``),
from the values of constant scalar inputs, and from the dimensions of known shapes (``x.shape``, ``len(x)``).
Dtypes and ranks never change; only dimensions are set (an int where it is known, ``*`` where not).

Control flow: ``prim::If`` outputs join their branches' returns dimension by dimension (equal -> kept, else
unknown); ``prim::Loop`` carried values are iterated to a fixed point (start from the initial values' types,
re-analyze the body, join its returns in, until nothing changes); a variable that is unbound on one path
(``prim::Uninitialized``) does not constrain the join. ``prim::CallFunction`` (and ``prim::FusionGroup``)
analyzes a copy of the callee specialized to the argument types (the original callee graph is never modified).
"""

from __future__ import annotations

from ..ir.builder import Builder
from ..ir.core import Block, Graph, Node, Value
from ..ir.registry import REGISTRY, Effect, NeedsSpecialization, OpTypeError, shape_of
from ..ir.types import BOOL, FLOAT, INT, NONE, TensorType, TupleType, Type, join
from .manager import register

# When set (tests do), errors inside shape rules propagate instead of falling back to unknown dimensions.
STRICT = False

_UNKNOWN = object()  # an element of a partially known tuple value (x.shape with unknown dims)
_BOTTOM = object()  # the type of a value that is never read (unbound): the neutral element of join
_MAX_ROUNDS = 100  # loop fixed points converge long before (each round loses at least one dim)
_FOLDABLE = (INT, FLOAT, BOOL)
# Nodes that run another graph on their inputs, and the attribute naming it.
CALLS = {"prim::CallFunction": "fn", "prim::FusionGroup": "subgraph"}


# -- types ----------------------------------------------------------------------------------------------------


def refine(declared: Type, inferred) -> Type:
    """``declared`` with the dimensions of ``inferred`` (a type or a shape tuple); dtype and rank stay those of
    ``declared``; anything that does not fit gives ``declared`` with every dimension unknown."""
    if isinstance(declared, TensorType):
        if declared.rank is None:
            return declared
        shape = inferred.shape if isinstance(inferred, TensorType) else inferred
        if (
            isinstance(shape, tuple)
            and len(shape) == declared.rank
            and all(d is None or (type(d) is int and d >= 0) for d in shape)
        ):
            return TensorType(declared.dtype, None, shape)
        return declared.erase_shape()
    if isinstance(declared, TupleType):
        elems = (
            inferred.elems
            if isinstance(inferred, TupleType) and len(inferred.elems) == len(declared.elems)
            else [None] * len(declared.elems)
        )
        return declared.with_elems(refine(d, i) for d, i in zip(declared.elems, elems))
    return declared


def erase(t: Type) -> Type:
    """``t`` with every dimension unknown (through tuples)."""
    return refine(t, None)


def join_shapes(declared: Type, a, b) -> Type:
    """The join of two inferred types (either may be _BOTTOM), refined onto ``declared``."""
    if a is _BOTTOM:
        a, b = b, a
    if a is _BOTTOM:
        return erase(declared)
    if b is _BOTTOM:
        return refine(declared, a)
    j = join(a, b)
    return refine(declared, j) if j is not None else erase(declared)


def meet_rule(shape: tuple, rule: Type) -> tuple:
    """Fill unknown dimensions from the type rule's result (some rules carry shapes, and the verifier wants
    the declared type at least as precise as the rule's)."""
    if isinstance(rule, TensorType) and rule.shape is not None and len(rule.shape) == len(shape):
        return tuple(a if a is not None else b for a, b in zip(shape, rule.shape))
    return shape


# -- copying graphs ---------------------------------------------------------------------------------------------


def clone_graph(graph: Graph) -> Graph:
    """A deep copy of ``graph``: same names, types, attributes (referred graphs are shared), source ranges."""
    g = Graph(graph.name)
    g.restore_namer(graph.namer_state())
    vmap: dict[int, Value] = {}

    def copy_block(src: Block, dst: Block) -> None:
        for p in src.params:
            v = Value(p.type, p.name, block=dst)
            dst.params.append(v)
            vmap[id(p)] = v
        for n in src.nodes:
            # (types=[]: the copy keeps the old output names, added below)
            m = Builder.at_end(dst).op(n.kind, [vmap[id(v)] for v in n.inputs], [], n.attrs, source=n.source)
            for o in n.outputs:
                vmap[id(o)] = Value(o.type, o.name, node=m)
                m.outputs.append(vmap[id(o)])
            for b in n.blocks:
                copy_block(b, m.add_block())
        for v in src.returns:
            dst.add_return(vmap[id(v)])

    copy_block(graph.block, g.block)
    return g


def all_values(graph: Graph):
    """Every value of the graph, in a deterministic order (block parameters, then node outputs)."""

    def block(b: Block):
        yield from b.params
        for n in b.nodes:
            for sub in n.blocks:
                yield from block(sub)
            yield from n.outputs

    return list(block(graph.block))


# -- the analysis -----------------------------------------------------------------------------------------------


class ShapeInference:
    def __init__(self, graph: Graph, callees: dict | None = None):
        self.graph = graph
        self.known: dict[int, object] = {}  # id(value) -> Python value, where known
        self.callees = {} if callees is None else callees  # (id(callee), arg types) -> specialized graph
        # Unbound placeholders with a single use as a loop's initial value or a branch's result: they do not
        # constrain the join there; afterwards they take the joined type (so that the result verifies).
        self.bottom: dict[int, tuple[Value, Node, int]] = {}
        for node in graph.walk():
            if node.kind != "prim::Uninitialized" or len(node.outputs) != 1 or len(node.output.uses) != 1:
                continue
            use = node.output.uses[0]
            user = use.user
            if user.kind == "prim::Loop" and use.index >= 2:
                self.bottom[id(node.output)] = (node.output, user, use.index - 2)
            elif user.kind == "prim::Return" and user.block.owner is not None and user.block.owner.kind == "prim::If":
                self.bottom[id(node.output)] = (node.output, user.block.owner, use.index)

    def run(self) -> None:
        self.block(self.graph.block)
        for v, node, i in self.bottom.values():
            v.type = node.outputs[i].type

    def type_of(self, v: Value):
        return _BOTTOM if id(v) in self.bottom else v.type

    def block(self, block: Block) -> None:
        for node in block.nodes:
            self.node(node)

    def node(self, node: Node) -> None:
        kind = node.kind
        if kind == "prim::If":
            self.if_node(node)
        elif kind == "prim::Loop":
            self.loop_node(node)
        elif kind in CALLS:
            self.call_node(node, CALLS[kind])
        elif kind == "prim::TupleConstruct":
            node.output.type = refine(node.output.type, TupleType(tuple(v.type for v in node.inputs)))
            vals = [self.known.get(id(v), _UNKNOWN) for v in node.inputs]
            if any(x is not _UNKNOWN for x in vals):
                self.known[id(node.output)] = tuple(vals)
        elif kind in ("prim::TupleUnpack", "prim::TupleIndex"):
            self.tuple_access(node)
        else:
            self.op_node(node)

    # -- operators ------------------------------------------------------------------------------------------
    def op_node(self, node: Node) -> None:
        op = REGISTRY.get(node.kind)
        if op is None:
            for v in node.outputs:
                v.type = erase(v.type)
            return
        types = [v.type for v in node.inputs]
        if all(t in _FOLDABLE for t in types) and all(v.type in _FOLDABLE for v in node.outputs):
            self.fold(node, op)  # scalars in and out (a shape's arithmetic): no shape to find, no type to refine
            return
        consts = [self.const(v) for v in node.inputs]
        try:
            shapes = op.result_shapes(types, consts, node.attrs)
        except Exception:  # noqa: BLE001 - a rule that cannot decide leaves the dimensions unknown
            if STRICT:
                raise
            shapes = None
        try:
            rule_types = op.result_types(types, node.attrs) if op.infer is not None else []
        except (OpTypeError, NeedsSpecialization):
            rule_types = []
        if shapes is None or len(shapes) != len(node.outputs):
            shapes = [None] * len(node.outputs)
        if len(rule_types) != len(node.outputs):
            rule_types = [None] * len(node.outputs)
        for v, s, rt in zip(node.outputs, shapes, rule_types):
            t = refine(v.type, s)
            if isinstance(t, TensorType) and t.shape is not None:
                t = TensorType(t.dtype, None, meet_rule(t.shape, rt))
            v.type = t
        self.fold(node, op)

    def const(self, v: Value):
        """The value of ``v`` if known, else None (what shape rules receive)."""
        x = self.known.get(id(v), _UNKNOWN)
        if x is _UNKNOWN:
            return None
        if isinstance(x, tuple) and any(e is _UNKNOWN for e in x):
            return tuple(None if e is _UNKNOWN else e for e in x)
        return x

    def fold(self, node: Node, op) -> None:
        """Record the values of scalar results that are known: constants, dimensions of known shapes, and
        pure scalar arithmetic on known values."""
        kind = node.kind
        if kind == "prim::Constant":
            value = node.attrs.get("value")
            if value is None or isinstance(value, (bool, int, float, str, tuple)):
                self.known[id(node.output)] = value
            return
        if len(node.outputs) != 1:
            return
        out = node.output
        shape = shape_of(node.inputs[0].type) if node.inputs else None
        if kind in ("aten::size", "aten::dim", "aten::len", "aten::numel") and shape is not None:
            if kind == "aten::size":
                self.known[id(out)] = tuple(_UNKNOWN if d is None else d for d in shape)
            elif kind == "aten::dim":
                self.known[id(out)] = len(shape)
            elif kind == "aten::len":
                if shape and shape[0] is not None:
                    self.known[id(out)] = shape[0]
            elif None not in shape:
                n = 1
                for d in shape:
                    n *= d
                self.known[id(out)] = n
            return
        if out.type not in _FOLDABLE or op.impl is None or op.effect > Effect.RAISES:
            return
        if not node.inputs or not all(v.type in _FOLDABLE or v.type == NONE for v in node.inputs):
            return
        args = [self.known.get(id(v), _UNKNOWN) for v in node.inputs]
        if any(a is _UNKNOWN for a in args):
            return
        try:
            value = op.impl(*args, **node.attrs)
        except Exception:  # noqa: BLE001 - raises at run time: nothing is known about the value
            return
        if out.type == INT and isinstance(value, int) and -(2**63) <= value < 2**63:
            self.known[id(out)] = int(value)
        elif out.type == FLOAT and isinstance(value, (int, float)):
            self.known[id(out)] = float(value)
        elif out.type == BOOL and isinstance(value, bool):
            self.known[id(out)] = value

    def tuple_access(self, node: Node) -> None:
        t = node.inputs[0].type
        value = self.known.get(id(node.inputs[0]))
        if node.kind == "prim::TupleUnpack":
            index = range(len(node.outputs))
        else:
            index = [node.attrs["index"]]
        for v, i in zip(node.outputs, index):
            elem = t.elems[i] if isinstance(t, TupleType) and -len(t.elems) <= i < len(t.elems) else None
            v.type = refine(v.type, elem)
            if isinstance(value, tuple) and -len(value) <= i < len(value) and value[i] is not _UNKNOWN:
                self.known[id(v)] = value[i]

    # -- control flow ---------------------------------------------------------------------------------------
    def if_node(self, node: Node) -> None:
        for b in node.blocks:
            self.block(b)
        then, other = node.blocks
        for i, v in enumerate(node.outputs):
            v.type = join_shapes(v.type, self.type_of(then.returns[i]), self.type_of(other.returns[i]))

    def loop_node(self, node: Node) -> None:
        body = node.blocks[0]
        params = body.params[1:]
        current = [self.type_of(v) for v in node.inputs[2:]]
        for _ in range(_MAX_ROUNDS):
            for p, c in zip(params, current):
                p.type = erase(p.type) if c is _BOTTOM else refine(p.type, c)
            self.block(body)
            new = [
                c if c is _BOTTOM and r is _BOTTOM else join_shapes(p.type, c, r)
                for p, c, r in zip(params, current, map(self.type_of, body.returns[1:]))
            ]
            if new == current:
                break
            current = new
        else:  # not reached: a safe answer anyway
            current = [erase(p.type) for p in params]
            for p, c in zip(params, current):
                p.type = c
            self.block(body)
        for v, p, c in zip(node.outputs, params, current):
            v.type = p.type = erase(p.type) if c is _BOTTOM else refine(p.type, c)

    def call_node(self, node: Node, attr: str) -> None:
        callee = node.attrs.get(attr)
        args = tuple(v.type for v in node.inputs)
        if (
            not isinstance(callee, Graph)
            or len(args) != len(callee.inputs)
            or any(erase(a) != erase(p.type) for a, p in zip(args, callee.inputs))
        ):
            for v in node.outputs:
                v.type = erase(v.type)
            return
        key = (id(callee), args)
        spec = self.callees.get(key)
        if spec is None:
            spec = clone_graph(callee)
            for p, a in zip(spec.inputs, args):
                p.type = a
            self.callees[key] = callee  # a recursive call inside it keeps the unspecialized graph
            ShapeInference(spec, self.callees).run()
            if [v.type for v in all_values(spec)] == [v.type for v in all_values(callee)]:
                spec = callee  # nothing new: keep sharing the original
            self.callees[key] = spec
        node.attrs[attr] = spec
        for v, r in zip(node.outputs, spec.outputs):
            v.type = refine(v.type, r.type)


# -- entry points -----------------------------------------------------------------------------------------------


@register("shape-inference")
def shape_inference(graph: Graph) -> bool:
    """Refine array types to known dimensions (Double(*, *) -> Double(2, 3)) from the graph's input types,
    constant scalars and the operators' shape rules; joins at prim::If, fixed point at prim::Loop, callees
    specialized to their argument types. Never changes dtypes or ranks."""
    before = [v.type for v in all_values(graph)]
    callees_before = [n.attrs.get(CALLS[n.kind]) for n in graph.walk() if n.kind in CALLS]
    ShapeInference(graph).run()
    callees_after = [n.attrs.get(CALLS[n.kind]) for n in graph.walk() if n.kind in CALLS]
    return before != [v.type for v in all_values(graph)] or any(
        a is not b for a, b in zip(callees_before, callees_after)
    )


def _as_shape(s):
    if s is None:
        return None
    if hasattr(s, "shape") and not isinstance(s, tuple):
        return tuple(s.shape)
    return tuple(None if d is None else int(d) for d in s)


def infer_shapes(graph: Graph, shapes: list) -> Graph:
    """Set the array inputs' shapes (a tuple of int|None per input, or None to keep that input's type; an
    ndarray stands for its shape), then run shape inference in place. Returns ``graph``."""
    if len(shapes) != len(graph.inputs):
        raise ValueError(f"graph {graph.name} has {len(graph.inputs)} inputs, {len(shapes)} shapes given")
    for v, s in zip(graph.inputs, shapes):
        s = _as_shape(s)
        if s is None:
            continue
        if not isinstance(v.type, TensorType) or v.type.rank is None:
            raise ValueError(f"input %{v.name} : {v.type} cannot take the shape {s}")
        if len(s) != v.type.rank:
            raise ValueError(f"input %{v.name} : {v.type} has rank {v.type.rank}, shape {s} given")
        v.type = TensorType(v.type.dtype, None, s)
    shape_inference(graph)
    return graph


def specialize_shapes(graph: Graph, shapes: list) -> Graph:
    """A copy of ``graph`` with its inputs' shapes set and shapes inferred (``graph`` itself is unchanged)."""
    return infer_shapes(clone_graph(graph), shapes)
