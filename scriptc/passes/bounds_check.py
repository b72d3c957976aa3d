"""Bounds-check elimination: prove array indices in bounds and mark those accesses unchecked.

An induction-variable range analysis bounds every int value the loops compute. A loop's iteration number ``p`` of
``prim::Loop(T, ...)`` is in ``[0, T - 1]`` whenever its body runs (below every upper bound of T less one: ``range(n
- 1 - i)`` with ``i >= 0`` runs below ``n - 1``); ``for i in range(lo, hi, step)`` derives ``i = __derive_index(p,
lo, step)``, which lies in ``[lo, hi - 1]`` for a positive constant step (and in ``[hi + 1, lo]`` for a negative
one); ``reversed(range(lo, hi, k))``, k > 0, derives ``__derive_index(p, __range_last(lo, hi, k), -k)``, in ``[lo,
hi - 1]`` too. Bounds go through ``+``/``-`` of constants. A lower bound is a constant; an upper bound is
*symbolic*: ``v <= atom + c`` where the atom is a canonical int value. Dimensions are canonical too: ``len(x)``,
``x.shape[k]`` and the k-th name of ``n, m = x.shape`` name "dimension k of x"; a dimension of ``np.empty(n)`` /
``np.zeros((n, m))`` is the int value it was created with (``n``, ``m``: an array that exists has exactly those
dimensions; so is ``np.linspace(a, b, n)``'s and ``np.arange(n)``'s, and ``x.size`` of a 1-d array is its dimension
0); of ``*_like(y)``, ``y.copy()`` it is y's; of the row ``x[i]`` (``aten::select``) it is x's next dimension; a
loop-carried array (``a, b = b, a`` buffer swaps) has its initial value's dimensions when every iteration provably
keeps them (an inductive invariant, see ``solve_carried_arrays``).

An index ``v`` on axis k of array ``a`` is proven when ``lo(v) >= 0`` and some upper bound ``atom + c`` of ``v``
has the atom of a's dimension k, ``dim = atom + d``, with ``c <= d - 1``: then ``0 <= v < dim`` and neither
the IndexError check nor the negative-index wrap is needed. ``aten::getitem`` / ``aten::setitem`` /
``aten::select`` get ``checked=[...]``, one flag per index (0: proven, no check; 1: checked); nodes with no
proven index get no attribute. The native lowering skips the check and the wrap where the flag is 0; the
interpreter ignores the attribute (a proven access never raises).

Conditions count too: in the then-branch of ``if j >= 0`` (and ``a and b`` chains) j >= 0; a loop-carried int
is bounded by what both the loop's first and its back-edge condition say about it (``while j >= 0 and ...``),
and one that only decreases stays at or below its initial value. An access still unproven because its bound is
another value than its dimension (``for j in range(n)`` over ``d[i, j]`` with ``n = d.shape[0]``) gets its
outermost loop *versioned*: ``if n < d.shape[1] + 1: <loop, proven> else: <loop, checked>`` (the guard is a
fact in the then-branch), so square inputs run unchecked and others raise exactly where they did.

Why this is sound (what it assumes):
- SSA: an array reassigned in a loop, a reshape, another array of the same name are different values, with
  different dimension atoms. A loop-carried int is bounded only by what holds on entry *and* on every back edge,
  ``prim::If`` outputs not at all; a loop-carried array keeps known dimensions only when its next value provably
  has its initial ones. Rebinding the loop variable in the body is a new value (``i.1 = i + 1``) whose bounds
  follow from i's. ``break`` and a ``while`` condition only end a loop earlier.
- A fact from a condition holds only inside the branch it guards (never in the else branch, never after).
- An array value's shape never changes (no operator resizes in place).
- Bounds are exact integer facts only while nothing wraps modulo 2**64: constants are limited to
  ``|c| < 2**20`` and every proof compares with a dimension, which is far below 2**62.
- It runs before ``unroll``: the unrolled copies keep the attribute, and their indices are the same values.
"""

from __future__ import annotations

from ..ir.builder import Builder
from ..ir.clone import clone_node_before
from ..ir.core import Block, Graph, Node, Value
from ..ir.types import BOOL, INT, TensorType, TupleType
from .analysis import constant_value, is_constant
from .manager import register

SMALL = 1 << 20
INDEX_OPS = ("aten::getitem", "aten::setitem", "aten::select")
CREATE_OPS = ("aten::zeros", "aten::ones", "aten::empty")
SAME_SHAPE_OPS = ("aten::zeros_like", "aten::ones_like", "aten::empty_like", "aten::full_like", "aten::clone")


def _reversed_range_first(start: Value) -> Value | None:
    """The ``lo`` of range(lo, hi, k), k a positive constant, when ``start`` is its last element (where
    reversed() of it starts: ``aten::__range_last``)."""
    n = start.node
    if n is None or n.kind != "aten::__range_last" or (small_int(n.inputs[2]) or 0) <= 0:
        return None
    return n.inputs[0]


def small_int(v: Value) -> int | None:
    if is_constant(v) and v.type == INT:
        c = constant_value(v)
        if isinstance(c, int) and -SMALL < c < SMALL:
            return c
    return None


def size_element(v: Value) -> tuple[Value, int] | None:
    """(array, k) when ``v`` is dimension k of an array: ``x.shape[k]`` (``prim::TupleIndex`` of ``aten::size``)
    or the k-th name of ``n, m = x.shape`` (``prim::TupleUnpack`` of it)."""
    n = v.node
    if n is None or n.kind not in ("prim::TupleIndex", "prim::TupleUnpack"):
        return None
    src = n.inputs[0].node
    if src is None or src.kind != "aten::size":
        return None
    return src.inputs[0], (n.attrs["index"] if n.kind == "prim::TupleIndex" else n.outputs.index(v))


class RangeAnalysis:
    """Memoized bounds of int values: ``lower(v)`` a constant or None, ``upper(v)`` a set of ``(atom, c)``
    meaning ``v <= atom + c`` (atom None: a constant bound), ``term(v)`` the exact ``(atom, c)`` with
    ``v == atom + c``."""

    def __init__(self):
        self._lower: dict[int, int | None] = {}
        self._upper: dict[int, frozenset] = {}
        self.loop_of_iteration: dict[int, Node] = {}
        # loop-carried arrays (block parameter or loop output) -> their initial value, for those whose every
        # iteration keeps the initial dimensions (see solve_carried_arrays)
        self.carried_init: dict[int, Value] = {}
        # loop-carried int block parameters -> (loop, carried index)
        self.carried_int: dict[int, tuple[Node, int]] = {}
        # loop outputs of carried ints -> (initial value, next value)
        self.carried_out: dict[int, tuple[Value, Value]] = {}

    # -- loop-carried ints: what the loop condition and the update keep ----------------------------------
    def _entry_facts(self, p: Value):
        """(initial value, facts of the first condition, next value, facts of the back-edge condition)."""
        loop, m = self.carried_int[id(p)]
        body = loop.blocks[0]
        init, nxt = loop.inputs[1 + m], body.returns[m]
        return init, facts(loop.inputs[1]), nxt, facts(body.returns[0])

    def carried_lower(self, p: Value) -> int | None:
        """The body runs for p only when the loop condition held, for the initial value (first iteration) or
        for the next value (every later one): a lower bound both conditions give holds in the body."""
        init, first, nxt, again = self._entry_facts(p)
        a = [k for v, kind, k in first if v is init and kind == "lo"]
        b = [k for v, kind, k in again if v is nxt and kind == "lo"]
        if a and b:
            return min(max(a), max(b))
        return None

    def carried_upper(self, p: Value) -> set:
        init, first, nxt, again = self._entry_facts(p)
        a = {bound for v, kind, bound in first if v is init and kind == "up"}
        b = {bound for v, kind, bound in again if v is nxt and kind == "up"}
        out = {(atom, max(c, c2)) for atom, c in a for atom2, c2 in b if atom == atom2}
        # a counter that only goes down (p - c, c >= 0) stays at or below its initial value; the lower bound
        # from the condition rules out wrapping below INT64_MIN
        atom, c = self.term(nxt)
        if atom is p and c <= 0 and self.carried_lower(p) is not None:
            out |= set(self.upper(init))
        return out

    # -- exact terms and canonical atoms --------------------------------------------------------------
    def term(self, v: Value) -> tuple:
        c = small_int(v)
        if c is not None:
            return (None, c)
        n = v.node
        if n is not None and n.kind in ("aten::add", "aten::sub") and all(x.type == INT for x in n.inputs):
            a, b = n.inputs
            cb = small_int(b)
            if cb is not None:
                atom, ca = self.term(a)
                c = ca + cb if n.kind == "aten::add" else ca - cb
                if -SMALL < c < SMALL:
                    return (atom, c)
            ca = small_int(a)
            if ca is not None and n.kind == "aten::add":
                atom, c = self.term(b)
                if -SMALL < ca + c < SMALL:
                    return (atom, ca + c)
        if n is not None and (n.kind == "aten::len" or n.kind == "aten::numel" and n.inputs[0].type.rank == 1):
            return self.dim_term(n.inputs[0], 0)
        dim = size_element(v)
        if dim is not None:
            return self.dim_term(*dim)
        return (v, 0)

    def dim_term(self, a: Value, k: int) -> tuple:
        """The exact term of dimension k of array value a."""
        if id(a) in self.carried_init:
            return self.dim_term(self.carried_init[id(a)], k)
        n = a.node
        if n is not None:
            if n.kind in CREATE_OPS and k < len(n.inputs):
                return self.term(n.inputs[k])
            if n.kind == "aten::full" and k + 1 < len(n.inputs):
                return self.term(n.inputs[k + 1])
            if n.kind == "aten::linspace":  # (start, stop, num): num elements (a negative num raises)
                return self.term(n.inputs[2])
            if (
                n.kind == "aten::arange"
                and small_int(n.inputs[0]) == 0
                and small_int(n.inputs[2]) == 1
                and n.inputs[1].type == INT
            ):  # np.arange(n): max(n, 0) elements, n whenever one is indexed
                return self.term(n.inputs[1])
            if n.kind in SAME_SHAPE_OPS:
                return self.dim_term(n.inputs[0], k)
            if n.kind == "aten::select":
                dim = n.attrs["dim"]
                return self.dim_term(n.inputs[0], k if k < dim else k + 1)
        return (("dim", a, k), 0)

    # -- bounds ---------------------------------------------------------------------------------------
    def lower(self, v: Value) -> int | None:
        if id(v) not in self._lower:
            self._lower[id(v)] = None  # cycles (none in SSA outside loop params) stay unbounded
            self._lower[id(v)] = self._compute_lower(v)
        return self._lower[id(v)]

    def upper(self, v: Value) -> frozenset:
        if id(v) not in self._upper:
            self._upper[id(v)] = frozenset()
            self._upper[id(v)] = frozenset(b for b in self._compute_upper(v) if -SMALL < b[1] < SMALL)
        return self._upper[id(v)]

    def _compute_lower(self, v: Value) -> int | None:
        c = small_int(v)
        if c is not None:
            return c
        if id(v) in self.loop_of_iteration:
            return 0
        if id(v) in self.carried_int:
            return self.carried_lower(v)
        if id(v) in self.carried_out:
            init, nxt = self.carried_out[id(v)]
            a, b = self.lower(init), self.lower(nxt)
            return min(a, b) if a is not None and b is not None else None
        n = v.node
        if n is None or v.type != INT:
            return None
        if n.kind in ("aten::len", "aten::numel") or size_element(v) is not None:
            return 0
        if n.kind in ("aten::add", "aten::sub") and all(x.type == INT for x in n.inputs):
            a, b = n.inputs
            la = self.lower(a)
            if n.kind == "aten::add":
                lb = self.lower(b)
                return la + lb if la is not None and lb is not None else None
            cb = small_int(b)
            return la - cb if la is not None and cb is not None else None
        if n.kind == "aten::__derive_index":
            _, start, step = n.inputs
            s = small_int(step)
            if s is not None and s > 0:
                return self.lower(start)
            if s is not None and s < 0:
                first = _reversed_range_first(start)
                if first is not None:  # reversed(range(lo, hi, k)): down from its last element to lo
                    return self.lower(first)
                stop = self.range_stop(n)
                ls = self.lower(stop) if stop is not None else None
                return ls + 1 if ls is not None else None
        return None

    def _compute_upper(self, v: Value) -> set:
        if v.type != INT:
            return set()
        out = {self.term(v)}
        if id(v) in self.carried_int:
            return out | self.carried_upper(v)
        if id(v) in self.carried_out:  # the initial value or the last next value
            init, nxt = self.carried_out[id(v)]
            # atoms common to both are values defined before the loop (or constants): the same after it
            return out | {
                (atom, max(c, c2)) for atom, c in self.upper(init) for atom2, c2 in self.upper(nxt) if atom == atom2
            }
        loop = self.loop_of_iteration.get(id(v))
        if loop is not None:  # below every bound of the trip count (range(n - 1 - i): n - 2 for i >= 0)
            return out | {(atom, c - 1) for atom, c in self.upper(loop.inputs[0])}
        n = v.node
        if n is None:
            return out
        if n.kind in ("aten::add", "aten::sub") and all(x.type == INT for x in n.inputs):
            a, b = n.inputs
            if n.kind == "aten::add":
                out |= self._plus(self.upper(a), self.upper(b))
            else:
                lb = self.lower(b)
                if lb is not None:
                    out |= {(atom, c - lb) for atom, c in self.upper(a)}
        elif n.kind == "aten::__derive_index":
            _, start, step = n.inputs
            s = small_int(step)
            stop = self.range_stop(n)
            if s is not None and s > 0 and stop is not None:
                out |= {(atom, c - 1) for atom, c in self.upper(stop)}
            elif s is not None and s < 0 and _reversed_range_first(start) is not None:
                # reversed(range(lo, hi, k)): down from its last element, below hi (the body runs: not empty)
                out |= {(atom, c - 1) for atom, c in self.upper(start.node.inputs[1])}
            elif s is not None and s < 0:
                out |= self.upper(start)
        return out

    @staticmethod
    def _plus(ua: frozenset, ub: frozenset) -> set:
        """a + b <= (atom + ca) + cb, where one of the two bounds is a constant."""
        out = set()
        for atom_a, ca in ua:
            for atom_b, cb in ub:
                if atom_b is None:
                    out.add((atom_a, ca + cb))
                elif atom_a is None:
                    out.add((atom_b, ca + cb))
        return out

    def range_stop(self, derive: Node) -> Value | None:
        """The ``hi`` of ``range(lo, hi, step)`` when ``derive`` is that loop's ``__derive_index(p, lo, step)``."""
        p, start, step = derive.inputs
        loop = self.loop_of_iteration.get(id(p))
        trips = loop.inputs[0].node if loop is not None else None
        if trips is None or trips.kind != "aten::__range_length":
            return None
        lo, hi, st = trips.inputs
        if self.term(lo) != self.term(start) or self.term(st) != self.term(step):
            return None
        return hi

    # -- proofs ---------------------------------------------------------------------------------------
    def in_bounds(self, index: Value, array: Value, axis: int, at: Node | None = None) -> bool:
        """0 <= index < dimension ``axis`` of ``array`` (at node ``at``: also what the conditions of the
        ``if`` branches it is in say about the index)."""
        lo, up = self.lower(index), set(self.upper(index))
        guards = guard_facts(at) if at is not None else []
        for v, kind, bound in guards:
            if v is index and kind == "lo":
                lo = bound if lo is None else max(lo, bound)
            elif v is index:
                up.add(bound)
        if lo is None or lo < 0:
            return False
        dim_atom, d = self.dim_term(array, axis)
        # a guard ``atom <= dim + e`` (loop versioning) bounds what is bounded by atom
        for v, kind, (atom2, c2) in [f for f in guards if f[1] == "up"]:
            tv, cv = self.term(v)  # v = tv + cv <= atom2 + c2
            up |= {(atom2, c + c2 - cv) for atom, c in list(up) if atom == tv and atom is not None}
        return any(atom == dim_atom and c <= d - 1 for atom, c in up)


def facts(cond: Value) -> list[tuple[Value, str, object]]:
    """What ``cond`` being true says about int values: ``(v, "lo", k)`` for v >= k, ``(v, "up", (atom, c))``
    for v <= atom + c. Comparisons with a constant or a term, ``and`` (a prim::If whose else branch is false)."""
    n = cond.node
    if n is None:
        return []
    if n.kind in ("aten::ge", "aten::gt", "aten::le", "aten::lt") and all(x.type == INT for x in n.inputs):
        a, b = n.inputs
        if n.kind in ("aten::le", "aten::lt"):  # a < b is b > a
            a, b = b, a
        strict = n.kind in ("aten::gt", "aten::lt")
        out = []
        kb = small_int(b)
        if kb is not None:
            out.append((a, "lo", kb + 1 if strict else kb))
        ka = small_int(a)
        if ka is not None:
            out.append((b, "up", (None, ka - 1 if strict else ka)))
        if kb is None and ka is None:
            atom, c = RangeAnalysis().term(a)
            out.append((b, "up", (atom, c - 1 if strict else c)))
        return out
    if n.kind == "aten::__and__" and all(x.type == BOOL for x in n.inputs):
        return facts(n.inputs[0]) + facts(n.inputs[1])
    if n.kind == "prim::If" and len(n.outputs) == 1 and cond.type == n.inputs[0].type:
        then_value, else_value = n.blocks[0].returns[0], n.blocks[1].returns[0]
        if else_value is n.inputs[0] or (small_bool(else_value) is False):
            return facts(n.inputs[0]) + facts(then_value)
    return []


def small_bool(v: Value):
    if is_constant(v) and isinstance(constant_value(v), bool):
        return constant_value(v)
    return None


def guard_facts(node: Node) -> list:
    """The facts of the conditions of every ``if`` whose then-branch (transitively) holds ``node``."""
    out = []
    block = node.block
    while block is not None and block.owner is not None:
        owner = block.owner
        if owner.kind == "prim::If" and block is owner.blocks[0]:
            out += facts(owner.inputs[0])
        block = owner.block
    return out


def carried_arrays(graph: Graph) -> list[tuple[Value, Value, Value, Value]]:
    """(block parameter, loop output, initial value, next value) of every loop-carried array of known rank."""
    out = []
    for n in graph.walk():
        if n.kind != "prim::Loop" or not n.blocks:
            continue
        body = n.blocks[0]
        for c, param in enumerate(body.params[1:]):
            t = param.type
            if isinstance(t, TensorType) and t.rank is not None:
                out.append((param, n.outputs[c], n.inputs[2 + c], body.returns[1 + c]))
    return out


def solve_carried_arrays(graph: Graph) -> RangeAnalysis:
    """The analysis, with the loop-carried arrays whose dimensions never change known to have their initial
    value's. Optimistic: assume all of them keep their dimensions, drop one whose next value's dimensions
    (computed under the assumptions) differ from the initial ones, and start again until none is dropped; what
    remains is an inductive invariant (iteration 0 has the initial value; each back edge keeps the dimensions).
    The terms compared belong to values defined outside the loop, so they are the same in every iteration."""
    candidates = carried_arrays(graph)
    dropped: set[int] = set()
    while True:
        analysis = RangeAnalysis()
        _collect_loops(graph, analysis)
        for param, output, init, _ in candidates:
            if id(param) not in dropped:
                analysis.carried_init[id(param)] = init
                analysis.carried_init[id(output)] = init
        bad = next(
            (
                param
                for param, _, init, nxt in candidates
                if id(param) not in dropped
                and any(analysis.dim_term(nxt, k) != analysis.dim_term(init, k) for k in range(param.type.rank))
            ),
            None,
        )
        if bad is None:
            return analysis
        dropped.add(id(bad))


def index_axes(node: Node) -> list[tuple[Value, int]]:
    """(index value, axis of the array it indexes) of an indexing node."""
    if node.kind == "aten::select":
        return [(node.inputs[1], node.attrs["dim"])]
    indices = node.inputs[1:-1] if node.kind == "aten::setitem" else node.inputs[1:]
    return [(v, k) for k, v in enumerate(indices)]


def _collect_loops(graph: Graph, analysis: RangeAnalysis) -> None:
    for n in graph.walk():
        if n.kind == "prim::Loop" and n.blocks and n.blocks[0].params:
            analysis.loop_of_iteration[id(n.blocks[0].params[0])] = n
            for m, p in enumerate(n.blocks[0].params[1:], start=1):
                if p.type == INT:
                    analysis.carried_int[id(p)] = (n, m)
                    analysis.carried_out[id(n.outputs[m - 1])] = (n.inputs[1 + m], n.blocks[0].returns[m])


MAX_VERSIONED_NODES = 300


def defined_before(v: Value, loop: Node) -> bool:
    """Whether v is available just before ``loop`` (defined in an enclosing block, earlier)."""
    owner = v.owning_block
    node, block = loop, loop.block
    while block is not None:
        if block is owner:
            return v.node is None or block.nodes.index(v.node) < block.nodes.index(node)
        node = block.owner
        block = node.block if node is not None else None
    return False


def available(atom, loop: Node) -> bool:
    """Whether an atom (an int value, or ``("dim", array, k)``) can be computed just before ``loop``."""
    if isinstance(atom, tuple):
        arr = atom[1]
        return isinstance(arr.type, TensorType) and arr.type.rank is not None and defined_before(arr, loop)
    return isinstance(atom, Value) and atom.type == INT and defined_before(atom, loop)


def version_guards(analysis: RangeAnalysis, loop: Node) -> list[tuple[Value, tuple, int]]:
    """``(atom, dim atom, e)``: the checks ``atom < dim + e`` before ``loop`` that prove the accesses in it
    bounded by another value than their dimension (``for j in range(n)`` reading ``d[i, j]`` with n = d.shape[0])."""
    out = []
    for n in loop.walk():
        if n is loop or n.kind not in INDEX_OPS or not isinstance(n.inputs[0].type, TensorType):
            continue
        for (v, axis), flag in zip(index_axes(n), n.attrs.get("checked", [1] * len(index_axes(n)))):
            if not flag:
                continue
            lo = analysis.lower(v)
            guards = guard_facts(n)
            lo = (
                max([lo] + [k for w, kind, k in guards if w is v and kind == "lo"])
                if lo is not None
                else max([k for w, kind, k in guards if w is v and kind == "lo"], default=None)
            )
            if lo is None or lo < 0:
                continue
            dim_atom, d = analysis.dim_term(n.inputs[0], axis)
            if not available(dim_atom, loop):
                continue
            for atom, c in analysis.upper(v):
                if atom != dim_atom and available(atom, loop) and -SMALL < d - c < SMALL:
                    out.append((atom, dim_atom, d - c))
                    break
    unique = []
    for g in out:
        if g not in unique:
            unique.append(g)
    return unique[:4]


def version_loop(loop: Node, guards) -> None:
    """``if all guards: <loop, proven> else: <loop>``: the copy runs where the guards hold."""
    block = loop.block
    before_loop = Builder.before(loop)

    def emit(kind: str, inputs, out_type, attrs=None) -> Value:
        return before_loop.op(kind, inputs, [out_type], attrs).output

    cond = None
    for atom, dim_atom, e in guards:
        values = []
        for a in (atom, dim_atom):
            if isinstance(a, tuple):
                _, arr, k = a
                sizes = emit("aten::size", [arr], TupleType((INT,) * arr.type.rank))
                values.append(emit("prim::TupleIndex", [sizes], INT, {"index": k}))
            else:
                values.append(a)
        atom, dim = values
        const = emit("prim::Constant", [], INT, {"value": e})
        bound = emit("aten::add", [dim, const], INT)
        ok = emit("aten::lt", [atom, bound], BOOL)
        if cond is not None:
            ok = emit("aten::__and__", [cond, ok], BOOL)
        cond = ok
    branch = before_loop.op(
        "prim::If", [cond], [o.type for o in loop.outputs], source=loop.source, hints=[o.name for o in loop.outputs]
    )
    proven, checked = branch.add_block(), branch.add_block()
    value_map: dict = {}
    copy = clone_node_before(loop, proven, None, value_map)
    for old, new, out in zip(loop.outputs, copy.outputs, branch.outputs):
        old.replace_all_uses_with(out)
        proven.add_return(new)
    block.nodes.remove(loop)
    loop.block = checked
    checked.nodes.append(loop)
    for old in loop.outputs:
        checked.add_return(old)


def version_loops(graph: Graph, analysis: RangeAnalysis) -> list[Node]:
    """Version the outermost loops whose remaining checks a guard before them would remove."""
    versioned = []

    def visit(block: Block) -> None:
        for n in list(block.nodes):
            if n.kind == "prim::Loop":
                guards = version_guards(analysis, n)
                if guards and sum(1 for _ in n.walk()) <= MAX_VERSIONED_NODES:
                    version_loop(n, guards)
                    versioned.append(n)
                    continue
            for b in n.blocks:
                visit(b)

    visit(graph.block)
    return versioned


def mark(graph: Graph) -> bool:
    analysis = solve_carried_arrays(graph)
    changed = False
    for n in graph.walk():
        if n.kind not in INDEX_OPS or not isinstance(n.inputs[0].type, TensorType):
            continue
        flags = [0 if analysis.in_bounds(v, n.inputs[0], axis, n) else 1 for v, axis in index_axes(n)]
        if 0 in flags and n.attrs.get("checked") != flags:
            n.attrs["checked"] = flags
            changed = True
    return changed


@register("bounds-check")
def run(graph: Graph) -> bool:
    """Marks array accesses whose indices an induction-variable range analysis proves in bounds
    (checked=[0, ...]): native code skips their IndexError check and negative-index wrap."""
    changed = mark(graph)
    if version_loops(graph, solve_carried_arrays(graph)):
        mark(graph)
        changed = True
    return changed
