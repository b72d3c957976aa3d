"""Python AST -> SSA IR, built directly (no stack slots): one visitor, ``visit_For``, ``visit_If``, ...

Variables live in an environment mapping names to SSA values. ``prim::If`` merges the variables its branches
assign into outputs; ``prim::Loop`` carries the variables its body assigns and that outlive an iteration
(``scopes.carried_names``). ``break``, ``continue`` and ``return`` set control flags held in the same
environment (``$brk``, ``$cont``, ``$ret`` plus the value ``$retv``); a flag that is True on every path ends
the statement list, and a flag known only at run time guards the rest of it with a ``prim::If`` - the exit
transform TorchScript applies, done during emission. A local bound on some paths only carries a bool that
``prim::AssertBound`` checks where it is read, so reading it unbound raises UnboundLocalError as in Python.
"""

from __future__ import annotations

import ast

import numpy as np

from ..errors import CompileError
from ..ir.builder import Builder
from ..ir.core import Block, Graph, Node, Value, constant_value, is_constant
from ..ir.registry import Effect, NeedsSpecialization, OpTypeError, lookup
from ..ir.types import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    ListType,
    NamedTupleType,
    NumpyScalarType,
    TensorType,
    TupleType,
    Type,
    decayed,
    exact_numpy_join,
    join,
)
from .builtin_calls import BuiltinCallsMixin, from_array
from .calls import CallsMixin
from .lists import ListsMixin
from .parallel import ParallelMixin
from .scopes import TOO_BIG, carried_names, contains, literal_int, load_counts, stores
from .tuple_loops import TupleLoopsMixin
from .source import FunctionSource
from .values import BRK, CONT, FLAGS, MISSING, RET, RETV, Static, describe  # noqa: F401  (re-exported)

BIG_INT_HINT = "scriptc ints are 64-bit and wrap on overflow; write a float (1e20) for a larger magnitude"
CONFLICT_HINT = "give a variable the same type on every path"


class Conflict:
    """What a variable holds after paths that give it types with no join (a loop variable over a tuple of mixed
    types, after a break): reading it is the CompileError, with the paths' types."""

    def __init__(self, message: str):
        self.message = message


INT64_MAX = 2**63 - 1

BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floordiv",
    ast.Mod: "remainder",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
    ast.BitAnd: "__and__",
    ast.BitOr: "__or__",
    ast.BitXor: "__xor__",
    ast.LShift: "__lshift__",
    ast.RShift: "__rshift__",
}
CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}

# Constructs outside the subset: the reason, and a hint when there is a usual rewrite.
UNSUPPORTED = {
    ast.SetComp: ("set comprehensions are not supported", None),
    ast.DictComp: ("dicts are not supported yet", "use arrays indexed by int, or tuples"),
    ast.GeneratorExp: ("generator expressions are not supported", "write an explicit loop"),
    ast.Dict: ("dicts are not supported yet", "use arrays indexed by int, or tuples"),
    ast.Set: ("sets are not supported", None),
    ast.Lambda: ("lambdas are not supported", "define a @scriptc.script function at module level"),
    ast.Try: ("try/except is not supported", None),
    ast.With: ("'with' statements are not supported", None),
    ast.Global: ("'global' statements are not supported", "module-level constants can be read without it"),
    ast.Nonlocal: ("'nonlocal' statements are not supported", None),
    ast.FunctionDef: (
        "nested function definitions are not supported",
        "define it at module level and decorate it with @scriptc.script",
    ),
    ast.ClassDef: ("class definitions are not supported", None),
    ast.Delete: ("'del' is not supported", None),
    ast.Import: ("imports inside a scripted function are not supported", "import at module level"),
    ast.ImportFrom: ("imports inside a scripted function are not supported", "import at module level"),
    ast.Yield: ("generators are not supported", None),
    ast.YieldFrom: ("generators are not supported", None),
    ast.Await: ("async code is not supported", None),
    ast.Starred: ("starred expressions are not supported", None),
    ast.NamedExpr: ("assignment expressions (:=) are not supported", None),
    ast.Match: ("'match' statements are not supported", "use if/elif"),
}
if hasattr(ast, "TryStar"):
    UNSUPPORTED[ast.TryStar] = UNSUPPORTED[ast.Try]


class Env:
    def __init__(self, vars=None, bound=None):
        self.vars: dict = dict(vars or {})  # name -> Value, or a Python bool for a control flag
        self.bound: dict = dict(bound or {})  # name -> bool Value when the name may be unbound here

    def copy(self) -> "Env":
        return Env(self.vars, self.bound)


STR_HINT = "str values are for printing and messages (f-strings); pass a flag or a number to choose a path"


class FunctionEmitter(CallsMixin, BuiltinCallsMixin, ListsMixin, ParallelMixin, TupleLoopsMixin):
    def __init__(self, fn: FunctionSource, param_types: list[Type], return_type: Type | None, resolver):
        self.fn = fn
        self.resolver = resolver
        self.graph = Graph(fn.name)
        self.block: Block = self.graph.block
        self.env = Env()
        self.param_types = param_types
        self.return_type = return_type
        self.first_return: tuple[Type, ast.AST] | None = None
        self.locals = set(stores(fn.tree.body)) | {a.arg for a in fn.tree.args.args}
        self.function_loads = load_counts(fn.tree.body)
        self.else_flags: list[str | None] = []  # per enclosing loop: the flag its break sets, if it has an else

    # -- entry ------------------------------------------------------------------------------------------
    def build(self) -> Graph:
        for arg, t in zip(self.fn.tree.args.args, self.param_types):
            self.env.vars[arg.arg] = self.graph.add_input(t, arg.arg)
        for flag in FLAGS:
            self.env.vars[flag] = False
        self.emit_body(self.fn.tree.body)
        self.check_lists_settled()
        self.graph.block.add_return(self.function_result())
        return self.graph

    def function_result(self) -> Value:
        returned = self.env.vars[RET]
        declared = self.return_type
        if RETV not in self.env.vars:  # every path that ended raised: no value is ever returned
            if returned is not True and declared not in (None, NONE):
                raise self.missing_return()
            return self.materialize(MISSING, declared or NONE) if returned is True else self.const(None)
        if returned is True:
            return self.env.vars[RETV]
        if returned is False:
            if declared not in (None, NONE):
                raise self.missing_return()
            return self.const(None)
        value = self.env.vars[RETV]
        if value.type != NONE:
            raise self.missing_return()
        return self.const(None)

    def missing_return(self):
        last = self.fn.tree.body[-1]
        return self.fn.error(
            f"'{self.fn.name}' can reach the end of its body without returning a value",
            last,
            "add a return statement on every path (Python would return None)",
        )

    # -- node construction ---------------------------------------------------------------------------
    def emit(self, kind: str, inputs, attrs=None, at=None, hint=None) -> Node:
        op = lookup(kind)
        attrs = dict(attrs or {})
        strong = op.elementwise and any(from_array(v) for v in inputs)
        inputs = [
            self.decay(v, at)
            if isinstance(v.type, NumpyScalarType) and (strong or not op.takes_numpy_scalar(k, len(inputs)))
            else v
            for k, v in enumerate(inputs)
        ]
        if op.effect == Effect.WRITES:
            self.check_writable(inputs, at)  # module-level arrays are read-only constants
        try:
            types = op.result_types([v.type for v in inputs], attrs)
        except OpTypeError as e:
            error = self.fn.error(str(e), at)
            error.python_raises = e.numpy_raises  # (then no widening of the arguments compiles it: function.py)
            raise error from None
        return Builder.at_end(self.block).op(kind, inputs, types, attrs, source=self.fn.loc(at), hints=hint)

    def op(self, kind, inputs, attrs=None, at=None) -> Value:
        return self.emit(kind, inputs, attrs, at).output

    def const(self, value, type: Type | None = None) -> Value:
        return Builder.at_end(self.block).constant(value, type)

    def in_block(self, block: Block, fn):
        saved, self.block = self.block, block
        try:
            return fn()
        finally:
            self.block = saved

    def materialize(self, v, type: Type, at=None) -> Value:
        """A Value of ``type`` for a binding: a constant for a static flag, a conversion for int -> float."""
        if v is MISSING:
            return Builder.at_end(self.block).op("prim::Uninitialized", [], [type]).output
        if isinstance(v, Conflict):
            raise self.fn.error(v.message, at, CONFLICT_HINT)
        if isinstance(v, bool):
            return self.const(v)
        return self.convert(v, type, at)

    def decay(self, v: Value, at=None) -> Value:
        """A NumPy scalar as the Python scalar holding its value (what ``int(v)`` or ``float(v)`` gives)."""
        if not isinstance(v.type, NumpyScalarType):
            return v
        return self.op("aten::Float" if v.type.decayed == FLOAT else "aten::Int", [v], at=at)

    def convert(self, v: Value, type: Type, at=None) -> Value:
        if v.type == type:
            return v
        if isinstance(type, NumpyScalarType) and v.type.is_scalar:  # a merge typed by NumPy's promotion
            return self.op("aten::numpy_scalar", [v], {"dtype": type.dtype}, at=at)
        if isinstance(v.type, NumpyScalarType) and type in (INT, FLOAT):
            return self.convert(self.decay(v, at), type, at)
        if type == FLOAT and v.type in (INT, BOOL):
            return self.op("aten::Float", [v], at=at)
        if type == INT and v.type == BOOL:  # a bool passed for an int parameter (function._accept)
            return self.op("aten::Int", [v], at=at)
        if isinstance(type, TupleType) and isinstance(v.type, TupleType) and len(type.elems) == len(v.type.elems):
            parts = self.emit("prim::TupleUnpack", [v], at=at).outputs
            named = {"named": type.qualname} if isinstance(type, NamedTupleType) else {}
            return self.op("prim::TupleConstruct", [self.convert(p, t, at) for p, t in zip(parts, type.elems)], named)
        if (
            isinstance(type, TensorType)
            and isinstance(v.type, TensorType)
            and (type.dtype is None or join(type, v.type) == type)
        ):
            return v
        raise self.fn.error(f"expected {describe(type)}, got {describe(v.type)}", at)

    def check_annotation(self, t: Type, declared: Type, at) -> None:
        """Annotations are checked, not converted: as in Python, an int is a valid ``float``."""
        tower = {BOOL: 0, INT: 1, FLOAT: 2}
        if decayed(t) in tower and declared in tower and tower[decayed(t)] <= tower[declared]:
            return  # (np.int32 passes for an int, np.float32 for a float: Python does not check them)
        if isinstance(t, TupleType) and isinstance(declared, TupleType) and len(t.elems) == len(declared.elems):
            for a, b in zip(t.elems, declared.elems):
                self.check_annotation(a, b, at)
            return
        if isinstance(t, TensorType) and isinstance(declared, TensorType) or t == declared:
            return
        if self.list_fits_annotation(t, declared):
            return
        raise self.fn.error(f"expected {describe(declared)} as annotated, got {describe(t)}", at)

    # -- variables ------------------------------------------------------------------------------------
    def read(self, name: str, at) -> Value:
        if name not in self.env.vars:
            raise self.fn.error(f"local variable '{name}' is referenced before assignment", at)
        if isinstance(self.env.vars[name], Conflict):
            raise self.fn.error(self.env.vars[name].message, at, CONFLICT_HINT)
        flag = self.env.bound.get(name)
        if flag is not None:
            self.emit("prim::AssertBound", [flag], {"name": name}, at)
        return self.env.vars[name]

    def bind(self, name: str, v: Value) -> None:
        if v.node is not None and v.name.isdigit():
            v.name = self.graph.fresh_name(name)
        self.env.vars[name] = v
        self.env.bound.pop(name, None)

    # -- statements -----------------------------------------------------------------------------------
    def emit_body(self, stmts: list) -> None:
        for i, stmt in enumerate(stmts):
            flags = [self.env.vars[f] for f in FLAGS]
            if any(f is True for f in flags):
                return  # the rest is unreachable
            pending = [name for name, f in zip(FLAGS, flags) if isinstance(f, Value)]
            if pending:
                self.emit_if(
                    self.any_of([self.env.vars[f] for f in pending]),
                    lambda: self.exit_taken(pending),
                    lambda: self.emit_after_exits(stmts[i:]),
                    None,
                )
                return
            self.visit(stmt)

    def exit_taken(self, pending: list[str]):
        if len(pending) == 1:  # the only flag that can be set is set on this path
            self.env.vars[pending[0]] = True

    def emit_after_exits(self, stmts):
        for f in FLAGS:  # on this path no exit was taken
            if isinstance(self.env.vars[f], Value):
                self.env.vars[f] = False
        self.emit_body(stmts)

    def any_of(self, flags: list[Value]) -> Value:
        acc = flags[0]
        for f in flags[1:]:
            acc = self.op("aten::__or__", [acc, f])
        return acc

    def visit(self, node):
        if type(node) in UNSUPPORTED:
            reason, hint = UNSUPPORTED[type(node)]
            raise self.fn.error(reason, node, hint)
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise self.fn.error(f"{type(node).__name__} is not supported", node)
        return method(node)

    def visit_Pass(self, node):
        pass

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant):
            return  # docstring or bare literal
        self.visit(node.value)

    def visit_Assign(self, node):
        value = self.rhs(node.value, node.targets[0])
        for target in node.targets:
            self.assign(target, value, node)

    def visit_AnnAssign(self, node):
        if node.value is None:
            return
        declared = self.resolver.annotation(self.fn, node.annotation)
        value = self.expr_as(node.value, declared)  # a list literal takes the annotated element type
        self.check_annotation(value.type, declared, node)
        self.assign(node.target, value, node)

    def rhs(self, value_node, target):
        """Evaluate the right side; a tuple assigned to a tuple target stays a list of values (a, b = b, a)."""
        if isinstance(value_node, ast.Tuple) and isinstance(target, ast.Tuple):
            return [self.expr(e) for e in value_node.elts]
        return self.expr(value_node)

    def assign(self, target, value, stmt):
        if isinstance(target, ast.Name):
            if isinstance(value, list):
                value = self.op("prim::TupleConstruct", value, at=stmt)
            self.bind(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, list):
                parts = value
            elif isinstance(value.type, TupleType):
                parts = self.emit("prim::TupleUnpack", [value], at=stmt).outputs
            elif isinstance(value.type, TensorType) and value.type.rank != 0:
                parts = self.unpack_array(value, len(target.elts), stmt)
            else:
                raise self.fn.error(f"cannot unpack {describe(value.type)}", target)
            if len(parts) != len(target.elts):
                raise self.fn.error(f"cannot unpack {len(parts)} values into {len(target.elts)} targets", target)
            for t, v in zip(target.elts, parts):
                self.assign(t, v, stmt)
        elif isinstance(target, ast.Subscript):
            if isinstance(value, list):
                value = self.op("prim::TupleConstruct", value, at=stmt)
            self.store_subscript(target, value)
        else:
            raise self.fn.error(f"cannot assign to {type(target).__name__.lower()}", target)

    def unpack_array(self, x, n: int, stmt) -> list:
        """``a, b = x`` of an array: its first axis's elements (rows), after CPython's check of their count
        (``key, sub = scriptc.random.split(key)``)."""
        length = self.op("aten::len", [x], at=stmt)

        def raising(message):
            def raise_it():
                self.emit("prim::RaiseException", [message()], {"exc": "ValueError"}, at=stmt)

            return raise_it

        def wrong_count():
            many = self.op("aten::gt", [length, self.const(n)], at=stmt)
            self.emit_if(
                many,
                raising(lambda: self.const(f"too many values to unpack (expected {n})")),
                raising(
                    lambda: self.op(
                        "aten::format",
                        [length],
                        {"fmt": f"not enough values to unpack (expected {n}, got {{}})"},
                        at=stmt,
                    )
                ),
                stmt,
            )

        self.emit_if(self.op("aten::ne", [length, self.const(n)], at=stmt), wrong_count, lambda: None, stmt)
        return [self.index_value(x, [self.const(k)], stmt) for k in range(n)]

    def visit_AugAssign(self, node):
        kind = BINOPS.get(type(node.op))
        if kind in (None, "matmul"):
            raise self.fn.error("this augmented assignment is not supported", node)
        target = node.target
        if isinstance(target, ast.Name):
            cur = self.read(target.id, target)
            rhs = self.expr(node.value)
            if isinstance(cur.type, TensorType):
                self.emit(f"aten::{kind}_", [cur, rhs], at=node)  # x += y updates the array in place
            elif isinstance(cur.type, ListType):
                raise self.fn.error(
                    "augmented assignment to a list is not supported",
                    node,
                    "use xs.append(v), or xs = xs + ys for a new list",
                )
            else:
                self.bind(target.id, self.binary(node, cur, rhs))
        elif isinstance(target, ast.Subscript):
            self.augassign_subscript(target, kind, node)
        else:
            raise self.fn.error("this augmented assignment target is not supported", target)

    def visit_If(self, node):
        cond = self.condition(node.test)
        self.emit_if(cond, lambda: self.emit_body(node.body), lambda: self.emit_body(node.orelse), node)

    def visit_Return(self, node):
        value = self.expr(node.value) if node.value is not None else self.const(None)
        if self.return_type is not None:
            self.check_annotation(value.type, self.return_type, node)
        if self.first_return is not None:
            first_type, first_node = self.first_return
            if join(first_type, value.type) is None:
                if _partly_known_arrays(first_type, value.type):
                    raise NeedsSpecialization("return")  # the call's signature decides
                raise self.fn.error(
                    f"this return gives {describe(value.type)}, but the return at line "
                    f"{self.fn.loc(first_node).line} gives {describe(first_type)}",
                    node,
                    "every return of a function must give the same type",
                )
        else:
            self.first_return = (value.type, node)
        self.env.vars[RETV] = value
        self.env.vars[RET] = True

    def visit_Break(self, node):
        self.env.vars[BRK] = True
        if self.else_flags and self.else_flags[-1] is not None:
            self.env.vars[self.else_flags[-1]] = True

    def loop_with_else(self, node, emit) -> None:
        """``emit(extra carried names)`` a loop; then its ``else`` body, which runs when the loop ended without
        a break (a flag its breaks set, carried by the loop), unless it returned."""
        breaks = contains(node.body, ast.Break, stop_at_loops=True)
        flag = f"$else{len(self.else_flags)}" if node.orelse and breaks else None
        if flag is not None:
            self.env.vars[flag] = False
        self.else_flags.append(flag)
        try:
            emit(() if flag is None else (flag,))
        finally:
            self.else_flags.pop()
        if flag is not None:
            self.emit_body([_LoopElse(flag=flag, body=node.orelse)])  # (not reached when the loop returned)
            self.env.vars.pop(flag, None)
        elif node.orelse:  # no break: the else always runs (so a return there ends every path)
            self.emit_body(node.orelse)

    def visit__LoopElse(self, node):
        broke = self.env.vars.pop(node.flag)
        if broke is False:
            return self.emit_body(node.body)
        if broke is not True:
            self.emit_if(self.op("aten::__not__", [broke]), lambda: self.emit_body(node.body), lambda: None, None)

    def visit_Continue(self, node):
        self.env.vars[CONT] = True

    def visit_While(self, node):
        def emit(extra):
            first = self.condition(node.test)
            self.emit_loop(
                node,
                self.const(INT64_MAX),
                first,
                prefix=None,
                next_cond=lambda: self.condition(node.test),
                hint="i",
                extra=extra,
            )

        self.loop_with_else(node, emit)
        endless = isinstance(node.test, ast.Constant) and node.test.value is True
        if (
            endless
            and not contains(node.body, ast.Break, stop_at_loops=True)
            and contains(node.body, (ast.Return, ast.Raise))
        ):
            self.env.vars[RET] = True  # `while True` without break is left only by return

    def visit_For(self, node):
        if self.is_prange(node.iter):
            return self.emit_prange(node)
        self.loop_with_else(node, lambda extra: self.emit_for(node, extra))

    def emit_for(self, node, extra) -> None:
        seq = self.expr(node.iter) if self.iteration_builtin(node.iter) is None else None
        steps = self.tuple_steps(node.iter, seq)
        if steps is not None:
            return self.emit_unrolled(node, steps)
        trips, prefix, hint, *conds = self.for_iteration(node, seq)
        first, next_cond = conds or (self.const(True), None)  # lists: while the index is below the length
        self.emit_loop(node, trips, first, prefix=prefix, next_cond=next_cond, hint=hint, extra=extra)

    def for_iteration(self, node, seq: Value | None = None):
        """Trip count and per-iteration prefix of ``for target in iterable`` (see ``iteration_plan``); ``seq``:
        the iterable, evaluated, when it is not a call to an iteration builtin."""
        it = node.iter
        if self.iteration_builtin(it) is None:
            seq = seq if seq is not None else self.expr(it)
            if isinstance(seq.type, ListType):  # CPython's list iterator: the length is read each time round
                return self.list_for(node, seq)
            trips, element = self.sequence_plan(seq, it)
            return trips, lambda i: self.assign(node.target, element(i), node), "iter"
        direct = self.iteration_builtin(it) is range and len(it.args) == 1
        # the iteration count is the target itself only for range(n)
        hint = "iter" if not direct else node.target.id if isinstance(node.target, ast.Name) else "i"
        trips, element = self.iteration_plan(it)
        return trips, lambda i: self.assign(node.target, element(i), node), hint

    # -- control flow ---------------------------------------------------------------------------------
    def emit_if(self, cond: Value, then_fn, else_fn, at) -> Value | None:
        """Emit ``prim::If`` with two branches and merge the environments; returns the merged value when the
        branch functions return values (conditional expressions, and/or). A condition known when compiling
        (``isinstance(v, int)``, for a loop over a tuple of mixed types) emits the branch taken alone: as in
        Python, the other is never run, so it need not type (``v + 1`` for an array ``v`` in an int branch)."""
        if is_constant(cond):
            return (then_fn if constant_value(cond) else else_fn)()
        # no outputs yet: merging the branches adds them
        node = Builder.at_end(self.block).op("prim::If", [cond], [], source=self.fn.loc(at))
        parent, before = self.block, self.env
        branches = []
        for fn in (then_fn, else_fn):
            block = node.add_block()
            self.block, self.env = block, before.copy()
            result = fn()
            branches.append((block, self.env, result))
        self.block = parent
        self.env = self.merge(node, branches, at)
        (_, _, a), (_, _, b) = branches
        if a is None:
            return None
        return self.merge_value(node, branches, [a, b], "", at)

    def value_name(self, at) -> str:
        return f"'{ast.unparse(at)}'" if isinstance(at, ast.expr) else "the value"

    def merge(self, node: Node, branches, at) -> Env:
        (tb, tenv, _), (eb, eenv, _) = branches
        out = Env()
        for name in dict.fromkeys(list(tenv.vars) + list(eenv.vars)):
            a, b = tenv.vars.get(name, MISSING), eenv.vars.get(name, MISSING)
            fa = tenv.bound.get(name, True) if a is not MISSING else False
            fb = eenv.bound.get(name, True) if b is not MISSING else False
            if a is b and fa is fb:
                out.vars[name] = a
                if fa is not True:
                    out.bound[name] = fa
                continue
            out.vars[name] = self.merge_value(node, branches, [a, b], name, at)
            if name.startswith("$") or (fa is True and fb is True):
                continue
            out.bound[name] = self.merge_value(node, branches, [fa, fb], name + ".bound", at)
        return out

    def merge_value(self, node: Node, branches, values, name: str, at) -> Value | Conflict:
        """The If's output merging a variable's (or an expression's) values on its branches; for a variable
        whose types do not join, a Conflict: an error where it is read (Python runs code that never reads it)."""
        conflict = next((v for v in values if isinstance(v, Conflict)), None)
        bound = [v for v in values if v is not MISSING and not isinstance(v, Conflict)]
        types = [binding_type(v) for v in bound]
        t = None if conflict else types[0] if len(types) == 1 else join_bindings(bound)
        if t is None and not conflict and _partly_known_arrays(*types):
            raise NeedsSpecialization(name)  # the generic graph cannot tell; the call's signature decides
        if t is None:
            message = (
                conflict.message
                if conflict
                else f"{repr(name) if name else self.value_name(at)} is {describe(types[0])} on one path and "
                f"{describe(types[1])} on another"
            )
            if name and not name.startswith("$"):
                return Conflict(message)
            raise self.fn.error(message, at, CONFLICT_HINT)
        for (block, _, _), v in zip(branches, values):
            block.add_return(self.in_block(block, lambda: self.materialize(v, t, at)))
        return node.add_output(t, self.graph.fresh_name(name.lstrip("$") or None))

    def emit_loop(
        self,
        loop: ast.For | ast.While,
        trips: Value,
        first_cond: Value,
        prefix,
        next_cond,
        hint,
        names=None,
        attrs=None,
        extra=(),
    ):
        """Emit ``prim::Loop``. Loop-carried types come from the body itself: the body is emitted again when
        a carried int becomes a float in it, or when a variable first bound in the loop must be carried.
        ``names``: the carried variables when the caller decided them (prange); ``attrs``: of the loop node;
        ``extra``: internal names carried besides (a loop's else flag)."""
        if names is None:
            names = carried_names(loop, self.function_loads, lambda n: n in self.env.vars)
            if contains(loop.body, (ast.Return, ast.Raise)):
                names += [RET, RETV]
            names += list(extra)
        before, parent = self.env, self.block
        mark, namer = len(parent.nodes), self.graph.namer_state()
        types = {n: binding_type(before.vars[n]) for n in names if n in before.vars}
        # A NumPy scalar carried from Python constants keeps its type (``s = 0.0; s += x[i]``: float32), except
        # in a prange loop, whose reductions are Python ints and floats as numba types them
        initial = {} if (attrs or {}).get("parallel") else {n: before.vars[n] for n in types}
        while True:
            carried = [n for n in names if n in types]
            end_env = self.emit_loop_once(
                loop,
                trips,
                first_cond,
                prefix,
                next_cond,
                carried,
                types,
                hint,
                lambda end: self.widen(loop, names, types, end, initial),
                attrs,
            )
            if end_env is None:
                return
            for old in reversed(parent.nodes[mark:]):
                old.destroy()
            self.graph.restore_namer(namer)
            self.env = before.copy()

    def widen(self, loop, names, types, end: Env, initial: dict) -> bool:
        """Update the carried types from the end of an iteration; True if the body must be emitted again.
        ``initial``: the values the variables had before the loop."""
        changed = False
        for n in names:
            if n not in end.vars:
                continue
            if isinstance(end.vars[n], Conflict):  # carried: read in the loop or after it
                raise self.fn.error(end.vars[n].message, loop, CONFLICT_HINT)
            t_end = binding_type(end.vars[n])
            if n not in types:
                t = t_end
            elif n in initial and types[n] == binding_type(initial[n]):
                t = join_bindings([initial[n], end.vars[n]])
            else:
                t = join(types[n], t_end)
            if t is None and _partly_known_arrays(types[n], t_end):
                raise NeedsSpecialization(n)  # the generic graph cannot tell; the call's signature decides
            if t is None:
                before = types[n]
                hint = "give a variable one type throughout the loop"
                if isinstance(before, TensorType) and isinstance(t_end, TensorType) and before.rank != t_end.rank:
                    hint = "an array keeps its rank through a loop: broadcast or reshape it before the loop"
                elif isinstance(before, TensorType) and isinstance(t_end, TensorType) and t_end.dtype:
                    hint = f"convert it before the loop: {n} = {n}.astype(np.{t_end.dtype})"
                raise self.fn.error(
                    f"'{n}' is {describe(before)} before the loop and {describe(t_end)} after an iteration", loop, hint
                )
            if types.get(n) != t:
                types[n], changed = t, True
        return changed

    def emit_loop_once(self, loop, trips, first_cond, prefix, next_cond, carried, types, hint, widen, attrs=None):
        """Emit the loop once with these carried types; returns the body's end environment if the types
        must widen (the caller discards this attempt), else None."""
        before = self.env
        flagged = [n for n in carried if not n.startswith("$") and (n not in before.vars or n in before.bound)]
        inits = [self.materialize(before.vars.get(n, MISSING), types[n], loop) for n in carried]
        inits += [before.bound.get(n, False) if n in before.vars else self.const(False) for n in flagged]
        inits = [self.const(v) if isinstance(v, bool) else v for v in inits]
        out_types = [types[n] for n in carried] + [BOOL] * len(flagged)
        # no outputs yet: they are added once the body is emitted and its carried types are final
        node = Builder.at_end(self.block).op(
            "prim::Loop", [trips, first_cond] + inits, [], attrs, source=self.fn.loc(loop)
        )
        body = node.add_block()
        iteration = body.add_param(INT, hint)
        env = Env({k: v for k, v in before.vars.items()}, dict(before.bound))
        for n in carried:
            env.vars[n] = body.add_param(types[n], n.lstrip("$"))
            env.bound.pop(n, None)
        for n in flagged:
            env.bound[n] = body.add_param(BOOL, n + ".bound")
        # a new iteration starts only when no exit was taken: the carried $ret is False here
        env.vars[BRK] = env.vars[CONT] = env.vars[RET] = False
        parent = self.block
        self.block, self.env = body, env
        if prefix is not None:
            prefix(iteration)
        self.emit_body(loop.body)
        end = self.env
        if widen(end):
            self.block, self.env = parent, before
            return end
        body.add_return(self.continue_condition(next_cond))
        for n in carried:
            body.add_return(self.materialize(end.vars.get(n, MISSING), types[n], loop))
        for n in flagged:
            f = end.bound.get(n, True) if n in end.vars else False
            body.add_return(self.const(f) if isinstance(f, bool) else f)
        self.block = parent
        self.env = before.copy()
        for n, t in zip(carried + [n + ".bound" for n in flagged], out_types):
            v = node.add_output(t, self.graph.fresh_name(n.lstrip("$")))
            if n.endswith(".bound") and n[:-6] in flagged:
                self.env.bound[n[:-6]] = v
            else:
                self.env.vars[n] = v
                if n not in flagged:
                    self.env.bound.pop(n, None)
        self.env.vars[BRK] = self.env.vars[CONT] = False
        return None

    def continue_condition(self, next_cond) -> Value:
        exits = [self.env.vars[BRK], self.env.vars[RET]]
        if any(f is True for f in exits):
            return self.const(False)
        pending = [f for f in exits if isinstance(f, Value)]
        if not pending:
            return next_cond() if next_cond else self.const(True)
        if next_cond is None:
            return self.op("aten::__not__", [self.any_of(pending)])
        return self.emit_if(self.any_of(pending), lambda: self.const(False), next_cond, None)

    # -- expressions ----------------------------------------------------------------------------------
    def expr(self, node) -> Value:
        r = self.visit(node)
        if r is None:
            raise self.fn.error(f"'{ast.unparse(node)}' returns None; it cannot be used as a value", node)
        if isinstance(r, Static):
            return self.static_value(r, node)
        if isinstance(node, ast.Name):
            self.check_list_known(r, node)
        return r

    def static_value(self, s: Static, node) -> Value:
        v = s.obj
        if isinstance(v, (bool, int, float)) and not (isinstance(v, int) and not -(2**63) <= v < 2**63):
            return self.const(v)
        if isinstance(v, np.ndarray):
            return self.array_constant(v, node)
        if type(v) is tuple:  # a module-level tuple of constants (COEFFS = (1.0, -2.0)), captured as they are
            return self.op("prim::TupleConstruct", [self.static_value(Static(e, s.path), node) for e in v], at=node)
        if isinstance(v, int):
            raise self.fn.error(f"'{ast.unparse(node)}' is {v}, which does not fit in a 64-bit int", node)
        if isinstance(v, np.dtype):
            raise self.fn.error(
                f"'{ast.unparse(node)}' is a dtype: scripted code compares dtypes "
                f"(x.dtype == np.float64) but does not hold one as a value",
                node,
                "print it outside the scripted function",
            )
        if isinstance(v, str) and s.path is None:  # x.dtype.kind, x.dtype.name: known per signature
            raise self.fn.error(
                f"'{ast.unparse(node)}' is the str {v!r}, known when compiling: scripted code "
                f"compares it but does not hold it as a value",
                node,
                f"compare it where it is used: {ast.unparse(node)} == {v!r} (or with in, against a str or a tuple)",
            )
        raise self.fn.error(
            f"'{ast.unparse(node)}' ({type(v).__name__}) cannot be used as a value here",
            node,
            "module-level int, float, bool, tuples of them and NumPy arrays can be read",
        )

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
            raise self.fn.error("integer literal does not fit in a 64-bit int", node, BIG_INT_HINT)
        if v is None or isinstance(v, (bool, int, float, str)):
            return self.const(v)
        raise self.fn.error(f"{type(v).__name__} literals are not supported", node)

    def visit_Name(self, node):
        if node.id in self.locals:
            return self.read(node.id, node)
        return Static(self.resolver.resolve_global(self.fn, node), node.id)

    def visit_Tuple(self, node):
        return self.op("prim::TupleConstruct", [self.expr(e) for e in node.elts], at=node)

    def literal(self, node) -> Value | None:
        """An int expression of literals, as CPython computes it (``-2 ** 63``); a CompileError where that is
        beyond 64 bits, and would differ from CPython's big int (``x + 10 ** 30``); None for other expressions."""
        exact = literal_int(node)
        if exact is None or exact is not TOO_BIG and -(2**63) <= exact < 2**63:
            return None if exact is None else self.const(exact)
        value = f"{exact}, which" if exact is not TOO_BIG and exact.bit_length() <= 256 else "an int that"
        raise self.fn.error(f"'{ast.unparse(node)}' is {value} does not fit in a 64-bit int", node, BIG_INT_HINT)

    def visit_BinOp(self, node):
        exact = self.literal(node)
        if exact is not None:
            return exact
        return self.binary(node, self.expr(node.left), self.expr(node.right))

    def binary(self, node, left, right):
        """``left <op> right`` for node's operator (a BinOp, or an AugAssign on a value that is not updated in
        place): on numbers and arrays, or lists and tuples as CPython makes them."""
        if isinstance(left.type, ListType) or isinstance(right.type, ListType):
            return self.list_binop(node, left, right)
        if STR in (left.type, right.type):
            raise self.fn.error(f"'{ast.unparse(node)}': operators on str are not supported", node, STR_HINT)
        if isinstance(left.type, TupleType) or isinstance(right.type, TupleType):
            return self.tuple_binop(node, left, right)
        if isinstance(node.op, ast.Pow):
            left = self.bool_power(left, right, node)
        return self.op(f"aten::{BINOPS[type(node.op)]}", [left, right], at=node)

    def visit_UnaryOp(self, node):
        operand = node.operand
        if isinstance(node.op, ast.USub) and isinstance(operand, ast.Constant) and type(operand.value) in (int, float):
            return self.visit_Constant(ast.copy_location(ast.Constant(-operand.value), node))  # the literal -1
        exact = self.literal(node)
        if exact is not None:
            return exact
        v = self.expr(operand)
        if isinstance(node.op, ast.USub):
            return self.op("aten::neg", [v], at=node)
        if isinstance(node.op, ast.UAdd):
            if isinstance(v.type, TensorType) and v.type.dtype == "bool":
                raise self.fn.error("+ of a bool array: NumPy's ufunc 'positive' has no loop for bool", node)
            return self.op("aten::Int", [v], at=node) if v.type == BOOL else v
        if isinstance(node.op, ast.Not):
            truth = self.truth(v, node.operand)
            if is_constant(truth):  # known when compiling (not isinstance(...)): so is its negation
                return self.const(not constant_value(truth))
            return self.op("aten::__not__", [truth], at=node)
        return self.op("aten::bitwise_not", [v], at=node)

    def visit_Compare(self, node):
        folded = self.fold_dtype_compare(node)  # x.dtype == np.float64: a constant per signature
        if folded is not None:
            return folded
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return self.list_in(node)
        for op in node.ops:
            if type(op) not in CMPOPS:
                raise self.fn.error(f"'{ast.unparse(node)}': only == != < <= > >= comparisons are supported", node)
        left = self.expr(node.left)
        return self.compare_chain(left, node.ops, node.comparators, node)

    def compare_chain(self, left, ops, rights, node):
        right = self.expr(rights[0])
        if STR in (left.type, right.type):
            raise self.fn.error(f"'{ast.unparse(node)}': comparisons of str are not supported", node, STR_HINT)
        if isinstance(left.type, TupleType) or isinstance(right.type, TupleType):
            if not isinstance(ops[0], (ast.Eq, ast.NotEq)):
                raise self.fn.error(f"'{ast.unparse(node)}': tuples compare with == and != only", node)
            result = self.tuple_equal(left, right, node)
            if isinstance(ops[0], ast.NotEq):
                result = self.op("aten::__not__", [result], at=node)
        else:
            result = self.op(f"aten::{CMPOPS[type(ops[0])]}", [left, right], at=node)
        if len(ops) == 1:
            return result
        # a < b < c is a < b and b < c, with b evaluated once and c only when a < b
        return self.emit_if(
            self.truth(result, node), lambda: self.compare_chain(right, ops[1:], rights[1:], node), lambda: result, node
        )

    def visit_BoolOp(self, node):
        return self.bool_chain(node.values, isinstance(node.op, ast.And), node)

    def bool_chain(self, values, is_and, node, truths: bool = False):
        """``a and b ...`` / ``a or b ...``: the operand that decides, evaluated left to right as far as needed;
        ``truths``: the operands' truths instead (``condition``)."""
        first = self.condition(values[0]) if truths else self.expr(values[0])
        if len(values) == 1:
            return first
        cond = first if truths else self.truth(first, values[0])
        rest = lambda: self.bool_chain(values[1:], is_and, node, truths)  # noqa: E731
        keep = lambda: first  # noqa: E731
        return self.emit_if(cond, rest, keep, node) if is_and else self.emit_if(cond, keep, rest, node)

    def condition(self, node) -> Value:
        """The truth of an expression used only for it (an if's, a while's, a conditional expression's test): an
        and/or chain is the chain of its operands' truths, so that ``n and x > 0`` with an int ``n`` is a bool,
        where as a value it is an int on one path and a bool on the other."""
        if isinstance(node, ast.BoolOp):
            return self.bool_chain(node.values, isinstance(node.op, ast.And), node, truths=True)
        return self.truth(self.expr(node), node)

    def visit_IfExp(self, node):
        cond = self.condition(node.test)
        return self.emit_if(cond, lambda: self.expr(node.body), lambda: self.expr(node.orelse), node)

    def truth(self, v: Value, at) -> Value:
        if v.type == BOOL:
            return v
        if v.type in (INT, FLOAT) or isinstance(v.type, NumpyScalarType):
            return self.op("aten::Bool", [v], at=at)
        if isinstance(v.type, TensorType):
            raise self.fn.error(
                "the truth value of an array is ambiguous",
                at,
                "use .any() or .all(); for element-wise logic use & | ~ or np.where",
            )
        if isinstance(v.type, TupleType):  # true when not empty: known when compiling
            return self.const(bool(v.type.elems))
        if isinstance(v.type, ListType):
            return self.op("aten::ne", [self.op("aten::list_len", [v], at=at), self.const(0)], at=at)
        raise self.fn.error(f"{describe(v.type)} cannot be used as a condition", at)

    def visit_JoinedStr(self, node):
        fmt, values = [], []
        for part in node.values:
            if isinstance(part, ast.Constant):
                fmt.append(part.value.replace("{", "{{").replace("}", "}}"))
                continue
            text = self.static_text(part)
            if text is not None:  # f"{x.dtype}": known when compiling, formatted now
                fmt.append(text.replace("{", "{{").replace("}", "}}"))
                continue
            values.append(self.expr(part.value))
            piece = "{"
            if part.conversion != -1:
                piece += "!" + chr(part.conversion)
            if part.format_spec is not None:
                piece += ":" + "".join(self.constant_spec_part(p, part) for p in part.format_spec.values)
            fmt.append(piece + "}")
        return self.op("aten::format", values, {"fmt": "".join(fmt)}, at=node)

    def static_text(self, part) -> str | None:
        """The text of an f-string field whose value is a dtype or a str known when compiling (``x.dtype``,
        ``x.dtype.name``: constant per signature), else None."""
        if (
            not isinstance(part.value, ast.Attribute)
            or part.format_spec is not None
            and not all(isinstance(p, ast.Constant) for p in part.format_spec.values)
        ):
            return None
        try:
            r = self.visit(part.value)
        except CompileError:
            return None
        if not isinstance(r, Static) or not isinstance(r.obj, (np.dtype, str)):
            return None
        value = {-1: r.obj, ord("s"): str(r.obj), ord("r"): repr(r.obj), ord("a"): ascii(r.obj)}[part.conversion]
        spec = "".join(p.value for p in part.format_spec.values) if part.format_spec is not None else ""
        return format(value, spec)

    def constant_spec_part(self, p, part) -> str:
        """A piece of an f-string's format spec: text, or a constant field in it (``f"{n:>{4}}"``)."""
        if isinstance(p, ast.Constant):
            return p.value
        if isinstance(p, ast.FormattedValue) and p.conversion == -1 and p.format_spec is None:
            try:
                return format(self.const_eval(p.value))
            except CompileError:
                pass
        raise self.fn.error(
            "format specs computed at run time are not supported",
            part,
            'write the spec as a constant, e.g. f"{x:>8.3f}"',
        )

    def visit_Attribute(self, node):
        base = self.visit(node.value)
        if isinstance(base, Static) and isinstance(base.obj, np.ndarray):  # a module-level array
            base = self.static_value(base, node.value)
        if isinstance(base, Static):
            try:
                obj = getattr(base.obj, node.attr)
            except AttributeError:
                raise self.fn.error(f"'{ast.unparse(node.value)}' has no attribute '{node.attr}'", node) from None
            if base.path is None:  # an attribute of what the argument types made (x.dtype.itemsize)
                return Static(obj)
            path = f"{base.path}.{node.attr}"
            self.resolver.seen_attribute(path, obj)
            return Static(obj, path)
        return self.array_attribute(base, node)


def binding_type(v) -> Type | None:
    return BOOL if isinstance(v, bool) else None if isinstance(v, Conflict) else v.type


def join_bindings(values: list) -> Type | None:
    """The type of a variable bound to ``values`` (Values, or a Python bool for a static flag) on paths that
    merge: their types' join, except that a NumPy scalar merging with Python constants it holds exactly keeps
    its type, as NumPy gives it after the first operation (``s = 0.0`` then ``s += x[i]`` with float32 ``x``:
    ``s`` is float32; after ``best = -1`` then ``best = x[i]`` with uint8 ``x``, ``best`` is an int)."""
    types = [binding_type(v) for v in values]
    t = types[0]
    for other in types[1:]:
        t = join(t, other) if t is not None else None
    numpy = [x for x in types if isinstance(x, NumpyScalarType)]
    if t is None or isinstance(t, NumpyScalarType) or not numpy:
        return t
    n = numpy[0]
    for other in numpy[1:]:
        n = join(n, other)
    if not isinstance(n, NumpyScalarType):
        return t
    for v, x in zip(values, types):
        if not isinstance(x, NumpyScalarType) and not (
            isinstance(v, Value) and is_constant(v) and exact_numpy_join(constant_value(v), n)
        ):
            return t
    return n


def _partly_known_arrays(a, b) -> bool:
    """Two array types (or tuples or lists holding them, in the same places) at least one of which lacks its
    dtype or rank (the generic, unspecialized graph): whether they agree depends on the call's signature."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return not (a.known and b.known)
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elems) == len(b.elems):
        return any(_partly_known_arrays(x, y) for x, y in zip(a.elems, b.elems))
    if isinstance(a, ListType) and isinstance(b, ListType):
        return _partly_known_arrays(a.elem, b.elem)
    return False


class _LoopElse(ast.stmt):
    """A loop's ``else`` body, emitted after the loop as a statement (so that a return in the loop skips it)."""

    _fields = ("flag", "body")
