"""``for i in scriptc.prange(...)``: checks that the iterations are independent, and emits the parallel loop.

A prange loop is emitted as a ``prim::Loop`` with the attributes ``parallel=1`` and ``reduce=[...]`` (one kind
per carried value: "add", "mul", "max" or "min"), so every pass and the interpreter treat it as the sequential
loop it is equivalent to, and a backend may instead run its iterations at once: the body is a function of the
iteration number (block parameter 0, 0 <= k < trip count) and the reduction accumulators, with no other state
crossing iterations. A backend splits the iterations into contiguous blocks, runs each block from the
reduction's identity (the first block from the value before the loop) and combines the partial results in
block order with the same operation (backend/llvm/lowering/parallel.py; a GPU backend maps the trip count to a grid).

What the body may do (checked here, on the AST, before emission):
- write arrays (the user promises that iterations write different elements), assign variables local to an
  iteration, raise (the error of the lowest failing iteration is raised);
- update a scalar defined before the loop only as a reduction: ``s += e``, ``s -= e`` (both "add"), ``s *= e``,
  ``s = max(s, e)``, ``s = min(s, e)``, with ``s`` read nowhere else in the body, one kind per variable;
- not ``break``, ``return`` or ``print`` (CompileErrors with a hint), nor rebind a variable defined outside.
A variable first assigned in the body is local to an iteration: it is not bound after the loop (reading it
there is a CompileError). The loop variable after the loop holds the last iteration's value, as with ``range``.
"""

from __future__ import annotations

import ast
import builtins

from ..ir.types import FLOAT, INT, TensorType
from ..parallel import prange
from .scopes import carried_names, load_counts, stores

SEQUENTIAL_HINT = "iterations of a prange loop run in any order and at once; use range() for this loop"
AUG_KINDS = {ast.Add: "add", ast.Sub: "add", ast.Mult: "mul"}
REDUCTION_FORMS = "s += e, s -= e, s *= e, s = max(s, e) or s = min(s, e)"


class ParallelMixin:
    """Mixin of FunctionEmitter: ``prange`` loops."""

    def is_prange(self, it) -> bool:
        """Whether a for loop's iterable is a call of scriptc.prange (under any name: ``pr = scriptc.prange``)."""
        if not (isinstance(it, ast.Call) and _dotted_name(it.func)):
            return False  # (only a name or module.name is looked up: nothing is evaluated twice)
        name = it.func.id if isinstance(it.func, ast.Name) else it.func.attr
        try:
            obj = getattr(self.visit(it.func), "obj", None)
        except Exception:  # an unresolvable numba.prange: give the hint below
            obj = None
        if obj is prange:
            return True
        if name != "prange":
            return False
        raise self.fn.error(
            f"'{ast.unparse(it.func)}' is not scriptc's prange",
            it.func,
            "use scriptc.prange (from scriptc import prange); numba.prange is not supported",
        )

    def emit_prange(self, node: ast.For) -> None:
        if node.orelse:
            raise self.fn.error("'for ... else' is not supported", node)
        if not isinstance(node.target, ast.Name):
            raise self.fn.error("the target of a prange loop must be a name", node.target)
        self.check_prange_statements(node.body)
        target = node.target.id
        names = carried_names(node, self.function_loads, lambda n: n in self.env.vars)
        carried, kinds = [], []
        for name in names:
            if name == target:
                continue
            if name not in self.env.vars:
                continue  # local to an iteration: not bound after the loop (reading it there is an error)
            kind = self.reduction_kind(node, name)
            if kind is not None:
                carried.append(name)
                kinds.append(kind)
        trips, element = self.range_plan(node.iter)
        self.emit_loop(
            node,
            trips,
            self.const(True),
            prefix=lambda i: self.assign(node.target, element(i), node),
            next_cond=None,
            hint=target,
            names=carried,
            attrs={"parallel": 1, "reduce": kinds},
        )
        for name in carried:
            if self.env.vars[name].type not in (INT, FLOAT):
                raise self.fn.error(
                    f"'{name}' is {self.describe(self.env.vars[name].type)}: a prange reduction "
                    "must be an int or a float",
                    node,
                )
        if target in self.env.vars or self.function_loads[target] > load_counts(node.body)[target]:
            self.bind_last_iteration(node, trips, element)

    def bind_last_iteration(self, node: ast.For, trips, element) -> None:
        """As after a range loop: the target holds the last iteration's value (unchanged when none ran)."""
        ran = self.op("aten::gt", [trips, self.const(0)], at=node)

        def last():
            self.assign(node.target, element(self.op("aten::sub", [trips, self.const(1)], at=node)), node)

        self.emit_if(ran, last, lambda: None, node)

    def check_prange_statements(self, body: list) -> None:
        """break (of the prange loop itself), return and print are CompileErrors."""

        def walk(n, in_inner_loop):
            if isinstance(n, ast.Break) and not in_inner_loop:
                raise self.fn.error("'break' is not allowed in a prange loop", n, SEQUENTIAL_HINT)
            if isinstance(n, ast.Return):
                raise self.fn.error("'return' is not allowed in a prange loop", n, SEQUENTIAL_HINT)
            if isinstance(n, ast.Call) and self.is_print(n.func):
                raise self.fn.error(
                    "print() is not allowed in a prange loop",
                    n,
                    "iterations run at once, so their output would interleave: store the values "
                    "in an array and print them after the loop",
                )
            inner = in_inner_loop or isinstance(n, (ast.For, ast.While))
            for child in ast.iter_child_nodes(n):
                if not isinstance(child, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
                    walk(child, inner)

        for s in body:
            walk(s, False)

    def is_print(self, func) -> bool:
        if not isinstance(func, ast.Name) or func.id != "print" or func.id in self.env.vars:
            return False
        try:
            return getattr(self.visit(func), "obj", None) is builtins.print
        except Exception:
            return False

    def reduction_kind(self, loop: ast.For, name: str) -> str | None:
        """The reduction kind of a variable the body assigns and the loop would carry; None for an array
        updated in place (``a += b`` writes the array, the name keeps its value). Anything else is an error."""
        before = self.env.vars.get(name)
        writes = [
            s
            for s in ast.walk(ast.Module(body=loop.body, type_ignores=[]))
            if isinstance(s, ast.stmt) and name in stores(_targets(s))
        ]
        if isinstance(before.type, TensorType) and all(isinstance(s, ast.AugAssign) for s in writes):
            return None
        kinds = set()
        for s in writes:
            kind = _reduction(s, name)
            if kind is None:
                raise self.fn.error(
                    f"'{name}' is defined outside the prange loop: the loop may only update it "
                    f"as a reduction ({REDUCTION_FORMS.replace('s', name)})",
                    s,
                    "iterations of a prange loop run in any order; write per-iteration results into an array",
                )
            kinds.add(kind)
        if len(kinds) > 1:
            raise self.fn.error(
                f"'{name}' is updated by more than one kind of reduction in a prange loop ({', '.join(sorted(kinds))})",
                writes[0],
                "use one of " + REDUCTION_FORMS,
            )
        reads = load_counts(loop.body)[name]
        if reads != len(writes):
            use = next(
                n
                for n in ast.walk(ast.Module(body=loop.body, type_ignores=[]))
                if isinstance(n, ast.Name)
                and n.id == name
                and isinstance(n.ctx, ast.Load)
                and not any(n in ast.walk(s) for s in writes)
            )
            raise self.fn.error(
                f"'{name}' is a reduction of the prange loop and cannot be read in its body",
                use,
                "its value in an iteration depends on which iterations ran before",
            )
        return kinds.pop()


def _targets(s: ast.stmt) -> list:
    """The assignment targets of a statement (not of statements nested in it)."""
    if isinstance(s, ast.Assign):
        return s.targets
    if isinstance(s, (ast.AugAssign, ast.AnnAssign)):
        return [s.target]
    if isinstance(s, ast.For):
        return [s.target]
    return []


def _reduction(s: ast.stmt, name: str) -> str | None:
    """The kind of reduction statement ``s`` is for ``name``, or None."""

    def free_of_name(e):
        return name not in load_counts(e)

    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
        kind = AUG_KINDS.get(type(s.op))
        return kind if kind and free_of_name(s.value) else None
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        call = s.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in ("max", "min")
            and len(call.args) == 2
            and not call.keywords
        ):
            first, other = call.args
            if isinstance(first, ast.Name) and first.id == name and free_of_name(other):
                return call.func.id
    return None


def _dotted_name(node) -> bool:
    """``name`` or ``a.b.name``: looking it up evaluates nothing."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)
