"""Random restricted-program generator for fuzzing scriptc against CPython.

The main entry point is the Hypothesis strategy :func:`cases`, which draws a
:class:`Program` (source text of one ``def fn(...)``) together with an argument
tuple for it.  Helpers in this module load a program from a real file (so that
``inspect.getsource`` works), run a callable with stdout captured, and check
dynamically that a program stays inside scriptc's 64-bit integer range.

Generated programs are deterministic, terminate quickly, and (by construction)
never raise under CPython:

* every variable has a fixed type (int or float); all locals are initialised at
  the top of the body with a literal of their type;
* ``//``, ``%`` and ``/`` divisors are guarded (``abs(d) + 1`` etc.);
* ``range`` bounds are small and steps are nonzero literals; ``while`` loops are
  driven by a dedicated counter with a literal bound;
* integer growth is kept in check with ``% 1000003``-style wrapping guided by a
  static magnitude estimate.  The estimate is a heuristic; :func:`in_range`
  gives the guarantee (tests ``assume`` it).
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import importlib.util
import io
import itertools
import math
import os
import sys
import tempfile
from dataclasses import dataclass, field

from hypothesis import strategies as st

# ---------------------------------------------------------------------------
# Limits

INT_LIMIT = 2**62  # no int value (final or intermediate) may exceed this
LEAF_INT_BOUND = 2**20  # heuristic magnitude assumed for an int variable
LEAF_FLOAT_BOUND = 2.0**20
ASSIGN_INT_BOUND = 2**31  # wrap int assignments whose estimate exceeds this
ASSIGN_FLOAT_BOUND = 2.0**31
MAX_STMTS = 40  # statement budget per program
MAX_DEPTH = 3  # nesting depth of compound statements

# Constructs outside the brief's core subset; off by default.
LOOP_ELSE = False  # ``while ...: ... else: ...``

WRAP_MODULI = (1000003, 65537, 1009, 97)
STRINGS = ("x", "val:", "a b", "", "loop", "->", "ok", "i=")
FLOAT_LITERALS = (
    "0.5",
    "1.0",
    "2.0",
    "-1.5",
    "0.1",
    "3.25",
    "-0.25",
    "10.0",
    "0.0",
    "-0.0",
    "1e-3",
    "7.5",
    "0.3",
    "-2.0",
    "100.0",
)
INT_NAMES = ("a", "b", "c")
FLOAT_NAMES = ("x", "y", "z")


@dataclass
class Program:
    source: str
    params: list  # [(name, type_name)]
    ret_types: list = field(default_factory=list)

    def __repr__(self):  # readable in Hypothesis' falsifying-example output
        return "Program(source=\n" + self.source + "\n)"


# ---------------------------------------------------------------------------
# Generator


class _Gen:
    """One program's generation state; all randomness comes from ``draw``."""

    def __init__(self, draw, extended=False, prints=True):
        self.draw = draw
        self.ext = extended
        self.prints = prints
        self.budget = MAX_STMTS
        self.while_counters = set()

    # -- primitive choices --------------------------------------------------
    def integers(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def choice(self, seq):
        return seq[self.draw(st.integers(0, len(seq) - 1))]

    def chance(self, p):
        # integers-based so it shrinks towards "no"
        return self.draw(st.integers(0, 999)) < int(p * 1000)

    def weighted(self, options):
        """options: list of (weight, value); shrinks toward the first."""
        total = sum(w for w, _ in options)
        r = self.draw(st.integers(0, total - 1))
        for w, v in options:
            if r < w:
                return v
            r -= w
        raise AssertionError

    # -- scope helpers --------------------------------------------------------
    def int_leaves(self, scope):
        return scope["ints"] + scope["loopvars"] + sorted(scope["maybe"])

    # -- int expressions: return (text, bound) -----------------------------
    def int_expr(self, scope, depth):
        if depth <= 0 or self.chance(0.3):
            return self.int_leaf(scope)
        kind = self.weighted(
            [
                (6, "arith"),
                (3, "floordiv"),
                (3, "mod"),
                (1, "neg"),
                (2, "abs"),
                (2, "minmax"),
                (2, "cond"),
                (1, "int_of_float"),
                (1, "floorceil"),
                (1, "litdiv"),
            ]
            + ([(1, "pow"), (2, "bit")] if self.ext else [])
        )
        d = depth - 1
        if kind == "arith":
            op = self.choice(("+", "-", "*"))
            (left, bl), (r, br) = self.int_expr(scope, d), self.int_expr(scope, d)
            if op == "*":
                if bl * br > INT_LIMIT // 4:
                    m = self.choice(WRAP_MODULI[2:])
                    r, br = f"({r}) % {m}", m
                    if bl * br > INT_LIMIT // 4:
                        left, bl = f"({left}) % {m}", m
                return f"({left} * {r})", bl * br
            return f"({left} {op} {r})", bl + br
        if kind == "floordiv":
            (left, bl), (r, _) = self.int_expr(scope, d), self.int_expr(scope, d)
            if self.chance(0.3):
                return f"(({left}) // (-1 - abs({r})))", bl + 1
            return f"(({left}) // (abs({r}) + 1))", bl + 1
        if kind == "mod":
            (left, _), (r, br) = self.int_expr(scope, d), self.int_expr(scope, d)
            if self.chance(0.3):
                return f"(({left}) % (-1 - abs({r})))", br + 1
            return f"(({left}) % (abs({r}) + 1))", br + 1
        if kind == "pow":
            e, b = self.int_expr(scope, d)
            k = self.integers(0, 3)
            if k >= 2 and b > 1009:
                e, b = f"({e}) % {self.choice((1009, 97, 10))}", 1009
            return f"(({e}) ** {k})", b**k
        if kind == "bit":
            op = self.choice(("&", "|", "^", "<<", ">>"))
            (left, bl), (r, br) = self.int_expr(scope, d), self.int_expr(scope, d)
            if op in ("<<", ">>"):
                k = self.integers(0, 9)
                if op == "<<" and bl > 2**40:
                    left, bl = f"({left}) % 65537", 65537
                return f"(({left}) {op} {k})", (bl << k if op == "<<" else bl)
            return f"(({left}) {op} ({r}))", 2 * max(bl, br)
        if kind == "litdiv":
            left, bl = self.int_expr(scope, d)
            k = self.choice((2, 3, 7, 10, -2, -3, -7, 1000003))
            op = self.choice(("//", "%"))
            return f"(({left}) {op} {k})" if k > 0 else f"(({left}) {op} ({k}))", (bl if op == "//" else abs(k))
        if kind == "neg":
            e, b = self.int_expr(scope, d)
            return f"-({e})", b
        if kind == "abs":
            e, b = self.int_expr(scope, d)
            return f"abs({e})", b
        if kind == "minmax":
            fn = self.choice(("min", "max"))
            n = self.weighted([(4, 2), (1, 3)])
            parts = [self.int_expr(scope, d) for _ in range(n)]
            return f"{fn}({', '.join(p for p, _ in parts)})", max(b for _, b in parts)
        if kind == "cond":
            c = self.bool_expr(scope, d)
            (left, bl), (r, br) = self.int_expr(scope, d), self.int_expr(scope, d)
            return f"({left} if {c} else {r})", max(bl, br)
        if kind == "int_of_float":
            e, b = self.float_expr(scope, d)
            if b > 2.0**52:
                return f"int(({e}) % 1000.0)", 1000
            return f"int({e})", int(b) + 1
        if kind == "floorceil":
            fn = self.choice(("math.floor", "math.ceil"))
            e, b = self.float_expr(scope, d)
            if b > 2.0**52:
                return f"{fn}(({e}) % 1000.0)", 1000
            return f"{fn}({e})", int(b) + 1
        raise AssertionError(kind)

    def int_leaf(self, scope):
        kind = self.weighted([(5, "var"), (3, "lit"), (1, "bool")])
        if kind == "var" and self.int_leaves(scope):
            return self.choice(self.int_leaves(scope)), LEAF_INT_BOUND
        if kind == "bool" and scope["bools"]:
            # int(bool) keeps things typed but exercises the conversion
            return f"int({self.choice(scope['bools'])})", 1
        v = self.weighted([(8, None), (1, 1000), (1, -1000003)])
        if v is None:
            v = self.integers(-10, 10)
        return (f"({v})" if v < 0 else str(v)), abs(v)

    # -- float expressions ----------------------------------------------------
    def float_expr(self, scope, depth):
        if depth <= 0 or self.chance(0.3):
            return self.float_leaf(scope)
        kind = self.weighted(
            [
                (6, "arith"),
                (3, "div"),
                (2, "floordiv"),
                (2, "mod"),
                (1, "neg"),
                (2, "abs"),
                (2, "minmax"),
                (2, "cond"),
                (2, "of_int"),
                (1, "sqrt"),
                (1, "mixed"),
                (1, "intdiv"),
            ]
            + ([(1, "pow")] if self.ext else [])
        )
        d = depth - 1
        if kind == "arith":
            op = self.choice(("+", "-", "*"))
            (left, bl), (r, br) = self.float_expr(scope, d), self.float_expr(scope, d)
            if op == "*":
                if bl * br > 2.0**100:
                    r, br = f"(({r}) % 100.0)", 100.0
                return f"({left} * {r})", bl * br
            return f"({left} {op} {r})", bl + br
        if kind == "div":
            (left, bl), (r, _) = self.float_expr(scope, d), self.float_expr(scope, d)
            if self.chance(0.3):
                return f"(({left}) / {self.choice(('3.0', '0.1', '-7.0', '2.0'))})", bl * 10
            return f"(({left}) / (abs({r}) + 1.0))", bl
        if kind == "floordiv":
            (left, bl), (r, _) = self.float_expr(scope, d), self.float_expr(scope, d)
            if self.chance(0.3):
                return f"(({left}) // {self.choice(('0.1', '-0.5', '3.0', '2.5'))})", bl * 10 + 1
            return f"(({left}) // (abs({r}) + 1.0))", bl + 1
        if kind == "mod":
            (left, _), (r, br) = self.float_expr(scope, d), self.float_expr(scope, d)
            if self.chance(0.3):
                k = self.choice(("0.1", "-0.5", "3.0", "2.5", "-1.0"))
                return f"(({left}) % ({k}))", 3.0
            if self.chance(0.3):
                return f"(({left}) % (-1.0 - abs({r})))", br + 1
            return f"(({left}) % (abs({r}) + 1.0))", br + 1
        if kind == "neg":
            e, b = self.float_expr(scope, d)
            return f"-({e})", b
        if kind == "abs":
            e, b = self.float_expr(scope, d)
            return f"abs({e})", b
        if kind == "minmax":
            fn = self.choice(("min", "max"))
            (left, bl), (r, br) = self.float_expr(scope, d), self.float_expr(scope, d)
            return f"{fn}({left}, {r})", max(bl, br)
        if kind == "cond":
            c = self.bool_expr(scope, d)
            (left, bl), (r, br) = self.float_expr(scope, d), self.float_expr(scope, d)
            return f"({left} if {c} else {r})", max(bl, br)
        if kind == "of_int":
            e, b = self.int_expr(scope, d)
            return f"float({e})", float(b)
        if kind == "sqrt":
            e, b = self.float_expr(scope, d)
            return f"math.sqrt(abs({e}))", math.sqrt(b) + 1
        if kind == "mixed":  # int operand promoted to float
            op = self.choice(("+", "-", "*"))
            (left, bl), (r, br) = self.float_expr(scope, d), self.int_expr(scope, d)
            if op == "*" and bl * br > 2.0**100:
                r, br = f"({r}) % 101", 101
            if self.chance(0.5):
                left, r = r, left
            return f"({left} {op} {r})", (bl * br if op == "*" else bl + br)
        if kind == "pow":
            e, b = self.float_expr(scope, d)
            if self.chance(0.5):
                return f"(abs({e}) ** {self.choice(('0.5', '1.5', '0.25'))})", b**1.5 + 1
            return f"((({e}) % 100.0) ** {self.integers(0, 3)})", 1e6
        if kind == "intdiv":  # int / int -> float
            (left, bl), (r, _) = self.int_expr(scope, d), self.int_expr(scope, d)
            return f"(({left}) / (abs({r}) + 1))", float(bl)
        raise AssertionError(kind)

    def float_leaf(self, scope):
        if scope["floats"] and self.chance(0.65):
            return self.choice(scope["floats"]), LEAF_FLOAT_BOUND
        lit = self.choice(FLOAT_LITERALS)
        return (f"({lit})" if lit.startswith("-") else lit), abs(float(lit))

    # -- bool expressions -----------------------------------------------------
    def bool_expr(self, scope, depth):
        kind = self.weighted([(8, "cmp"), (2, "andor"), (1, "not"), (1, "chain"), (1, "param"), (1, "cmp_mixed")])
        d = max(depth - 1, 0)
        if kind == "andor" and depth > 0:
            op = self.choice(("and", "or"))
            return f"({self.bool_expr(scope, d)} {op} {self.bool_expr(scope, d)})"
        if kind == "not" and depth > 0:
            return f"(not {self.bool_expr(scope, d)})"
        if kind == "param" and scope["bools"]:
            return self.choice(scope["bools"])
        op = self.choice(("<", "<=", ">", ">=", "==", "!="))
        if kind == "chain":
            op2 = self.choice(("<", "<="))
            a, b, c = (self.int_expr(scope, min(d, 1))[0] for _ in range(3))
            return f"({a} {op2} {b} {op} {c})"
        if kind == "cmp_mixed":
            left, r = self.int_expr(scope, min(d, 1))[0], self.float_expr(scope, min(d, 1))[0]
            return f"({left} {op} {r})"
        if self.chance(0.6):
            left, r = self.int_expr(scope, min(d, 2))[0], self.int_expr(scope, min(d, 2))[0]
        else:
            left, r = self.float_expr(scope, min(d, 2))[0], self.float_expr(scope, min(d, 2))[0]
        return f"({left} {op} {r})"

    # -- assignments ------------------------------------------------------------
    def wrap_int(self, e, b):
        if b <= ASSIGN_INT_BOUND and not self.chance(0.15):
            return e
        m = self.choice(WRAP_MODULI)
        if self.chance(0.3):
            return f"({e}) % {2 * m + 1} - {m}"
        return f"({e}) % {m}"

    def wrap_float(self, e, b):
        if b <= ASSIGN_FLOAT_BOUND and not self.chance(0.1):
            return e
        return f"({e}) % {self.choice(('1000.0', '97.5', '65536.0'))}"

    def assign(self, scope):
        targets_i = list(scope["ints"])
        forvars = [v for v in scope["loopvars"] if not v.startswith("w")]
        if forvars and self.chance(0.05):
            targets_i.append(self.choice(forvars))  # rebinding a for-loop var
        is_int = self.chance(0.55) if scope["floats"] else True
        aug = self.chance(0.35)
        if is_int:
            t = self.choice(targets_i)
            if aug:
                op = self.weighted([(3, "+="), (3, "-="), (1, "*="), (2, "//="), (2, "%=")])
                e, b = self.int_expr(scope, 2)
                if op in ("+=", "-="):
                    if b > 1009:
                        e = f"({e}) % {self.choice((1009, 97, 10))}"
                    return f"{t} {op} {e}"
                if op == "*=":
                    return f"{t} *= ({e}) % 3 - 1"
                return f"{t} {op} (abs({e}) + 1)" if self.chance(0.7) else f"{t} {op} (-1 - abs({e}))"
            e, b = self.int_expr(scope, 3)
            return f"{t} = {self.wrap_int(e, b)}"
        t = self.choice(scope["floats"])
        if aug:
            op = self.weighted([(3, "+="), (3, "-="), (2, "*="), (2, "/="), (1, "//="), (1, "%=")])
            e, b = self.float_expr(scope, 2)
            if op in ("+=", "-="):
                if b > 1000 and not self.chance(0.25):
                    e = f"({e}) % {self.choice(('100.0', '7.5', '1024.0'))}"
                return f"{t} {op} {e}"
            if op == "*=":
                return f"{t} *= {self.choice(('0.5', '-1.0', '1.5', '-0.75', '2.0'))}"
            return f"{t} {op} (abs({e}) + 1.0)" if self.chance(0.7) else f"{t} {op} (-1.0 - abs({e}))"
        e, b = self.float_expr(scope, 3)
        return f"{t} = {self.wrap_float(e, b)}"

    # -- printing ---------------------------------------------------------------
    def print_stmt(self, scope):
        n = self.integers(0, 3)
        items = []
        for _ in range(n):
            k = self.weighted([(4, "var"), (2, "str"), (1, "iexpr"), (1, "fexpr"), (1, "bool")])
            if k == "var":
                pool = scope["ints"] + scope["floats"] + scope["loopvars"] + sorted(scope["maybe"])
                items.append(self.choice(pool))
            elif k == "str":
                items.append(repr(self.choice(STRINGS)))
            elif k == "iexpr":
                items.append(self.int_expr(scope, 1)[0])
            elif k == "fexpr":
                items.append(self.float_expr(scope, 1)[0])
            else:
                items.append(self.bool_expr(scope, 0))
        if self.chance(0.2):
            items.append(f"sep={self.choice(('', ', ', '|', chr(10)))!r}")
        if self.chance(0.2):
            items.append(f"end={self.choice(('', ';', chr(10) + '--' + chr(10), ' '))!r}")
        return f"print({', '.join(items)})"

    # -- statements ----------------------------------------------------------------
    def ret_stmt(self, scope):
        return f"return {scope['ret']}"

    def block(self, scope, depth, in_loop, indent, min_len=1):
        """Return list of source lines (already indented)."""
        lines = []
        n = self.integers(min_len, 5)
        for idx in range(n):
            if self.budget <= 0:
                break
            last = idx == n - 1
            lines.extend(self.stmt(scope, depth, in_loop, indent, last))
        if not lines:
            lines.append(indent + "pass")
        return lines

    def stmt(self, scope, depth, in_loop, indent, last):
        self.budget -= 1
        opts = [(10, "assign"), (3 if self.prints else 0, "print"), (1, "pass")]
        if self.ext:
            opts += [(2, "late"), (1, "unpack")]
        if depth < MAX_DEPTH:
            opts += [(4, "if"), (4, "for"), (2, "while")]
        if in_loop:
            opts += [(3, "ifbreak"), (3, "ifcontinue")]
            if last:
                opts += [(1, "break"), (1, "continue")]
        if depth > 0 or in_loop or self.chance(0.4):
            opts += [(1, "ifreturn")]
        if last and depth > 0:
            opts += [(1, "return")]
        kind = self.weighted(opts)
        ind2 = indent + "    "
        if kind == "assign":
            return [indent + self.assign(scope)]
        if kind == "late":  # a local bound only on some paths (may be unbound)
            e, b = self.int_expr(scope, 2)
            scope["maybe"].add("u0")
            return [indent + f"u0 = {self.wrap_int(e, b)}"]
        if kind == "unpack":
            t1, t2 = self.choice(scope["ints"]), self.choice(scope["ints"])
            if t1 == t2:
                t2 = self.choice(scope["floats"] or scope["ints"])
            typ = "int" if t2 in scope["ints"] else "float"
            e1 = self.wrap_int(*self.int_expr(scope, 2))
            e2 = (
                self.wrap_int(*self.int_expr(scope, 2)) if typ == "int" else self.wrap_float(*self.float_expr(scope, 2))
            )
            if t1 != t2 and self.chance(0.4):  # the classic swap
                e1, e2 = (t2, t1) if typ == "int" else (e1, e2)
            return [indent + f"{t1}, {t2} = {e1}, {e2}"]
        if kind == "print":
            return [indent + self.print_stmt(scope)]
        if kind == "pass":
            return [indent + "pass"]
        if kind in ("break", "continue"):
            return [indent + kind]
        if kind == "return":
            return [indent + self.ret_stmt(scope)]
        if kind in ("ifbreak", "ifcontinue", "ifreturn"):
            what = {"ifbreak": "break", "ifcontinue": "continue"}.get(kind)
            lines = [indent + f"if {self.bool_expr(scope, 2)}:"]
            if self.chance(0.4):
                lines.append(
                    ind2 + self.assign(scope) if self.chance(0.5) or not self.prints else ind2 + self.print_stmt(scope)
                )
            lines.append(ind2 + (what if what else self.ret_stmt(scope)))
            return lines
        if kind == "if":
            before = set(scope["maybe"])
            after = set(before)

            def branch():
                sub = dict(scope, maybe=set(before))
                out = self.block(sub, depth + 1, in_loop, ind2)
                after.update(sub["maybe"])
                return out

            lines = [indent + f"if {self.bool_expr(scope, 2)}:"]
            lines += branch()
            for _ in range(self.weighted([(3, 0), (2, 1), (1, 2)])):
                lines.append(indent + f"elif {self.bool_expr(scope, 2)}:")
                lines += branch()
            if self.chance(0.5):
                lines.append(indent + "else:")
                lines += branch()
            scope["maybe"].update(after)
            return lines
        if kind == "for":
            var = "ijk"[len(scope["loopvars"])]
            rng = self.range_args(scope)
            inner = dict(scope, loopvars=scope["loopvars"] + [var], maybe=set(scope["maybe"]) - {var})
            lines = [indent + f"for {var} in range({rng}):"]
            lines += self.block(inner, depth + 1, True, ind2)
            if self.ext:  # after the loop: bound iff it ran at least once
                scope["maybe"].update(inner["maybe"] | {var})
            return lines
        if kind == "while":
            w = f"w{depth}"
            self.while_counters.add(w)
            bound = self.integers(0, 6)
            cond = f"{w} < {bound}"
            if self.chance(0.4):
                cond += f" and {self.bool_expr(scope, 1)}"
            inner = dict(scope, loopvars=scope["loopvars"] + [w], maybe=set(scope["maybe"]))
            lines = [indent + f"{w} = {self.integers(-1, 1)}", indent + f"while {cond}:", ind2 + f"{w} += 1"]
            lines += self.block(inner, depth + 1, True, ind2)
            scope["maybe"].update(inner["maybe"])
            if LOOP_ELSE and self.chance(0.15):  # while/else
                lines.append(indent + "else:")
                lines += self.block(scope, depth + 1, in_loop, ind2)
            return lines
        raise AssertionError(kind)

    def range_arg(self, scope, lo, hi):
        """An int expression whose value lies in [lo, hi] (hi - lo <= 8)."""
        k = self.weighted([(3, "lit"), (2, "mod"), (1, "var")])
        if k == "lit" or not self.int_leaves(scope):
            v = self.integers(lo, hi)
            return f"({v})" if v < 0 else str(v)
        if k == "var":
            v = self.choice(self.int_leaves(scope))
            lo_s = f"({lo})" if lo < 0 else str(lo)
            return f"min(max({v}, {lo_s}), {hi})"
        e = self.int_expr(scope, 1)[0]
        m = hi - lo + 1
        return f"({e}) % {m}" + (f" - {-lo}" if lo < 0 else f" + {lo}" if lo > 0 else "")

    def range_args(self, scope):
        """Arguments for ``range``: at most ~12 iterations, usually >= 1."""
        n = self.weighted([(3, 1), (3, 2), (2, 3)])
        odd = self.chance(0.15)  # occasionally allow empty/"backwards" ranges
        if n == 1:
            return self.range_arg(scope, -2, 6) if odd else self.range_arg(scope, 0, 7)
        lo, hi = (self.range_arg(scope, -3, 3), self.range_arg(scope, 2, 8))
        if odd:
            lo, hi = hi, lo
        if n == 2:
            return f"{lo}, {hi}"
        step = self.choice((1, 2, 3, -1, -2, -3))
        if step < 0:
            lo, hi = hi, lo
        return f"{lo}, {hi}, {step}"


@st.composite
def programs(draw, extended=False, prints=True):
    """Strategy for :class:`Program` (source text of ``def fn(...)``).

    ``extended=True`` adds constructs beyond the core subset: locals bound only
    on some paths and for-loop variables read after their loop (either may be
    unbound at run time: UnboundLocalError), tuple unpacking/swaps, ``**`` and
    bitwise operators."""
    g = _Gen(draw, extended, prints)
    n_int_params = g.integers(1, 3)
    n_float_params = g.integers(0, 2)
    has_bool = g.chance(0.3)
    params = [(n, "int") for n in INT_NAMES[:n_int_params]]
    params += [(n, "float") for n in FLOAT_NAMES[:n_float_params]]
    if has_bool:
        params.append(("p", "bool"))
    n_int_locals = g.integers(1, 3)
    n_float_locals = g.integers(0 if n_float_params else 1, 3)
    int_locals = [f"i{k}" for k in range(n_int_locals)]
    float_locals = [f"f{k}" for k in range(n_float_locals)]
    ints = [n for n, t in params if t == "int"] + int_locals
    floats = [n for n, t in params if t == "float"] + float_locals
    # while counters are determined after generating the body; reserve names
    # in the return tuple by generating the body with a placeholder.
    placeholder = "__RET__"
    scope = {
        "ints": ints,
        "floats": floats,
        "loopvars": [],
        "bools": ["p"] if has_bool else [],
        "ret": placeholder,
        "maybe": set(),
    }
    body = g.block(scope, 0, False, "    ", min_len=2)
    while g.budget > 0 and g.chance(0.6):
        body += g.block(scope, 0, False, "    ")
    counters = sorted(g.while_counters)
    ret_ints = ints + counters
    ret_vars = ret_ints + floats
    ret = "(" + ", ".join(ret_vars) + ("," if len(ret_vars) == 1 else "") + ")"
    ret_types = ["int"] * len(ret_ints) + ["float"] * len(floats)
    init = []
    for v in int_locals:
        x = g.integers(-20, 20)
        init.append(f"    {v} = {x}")
    for v in counters:
        init.append(f"    {v} = 0")
    for v in float_locals:
        init.append(f"    {v} = {g.choice(FLOAT_LITERALS)}")
    sig = ", ".join(f"{n}: {t}" for n, t in params)
    ann = f"tuple[{', '.join(ret_types)}]"
    lines = [f"def fn({sig}) -> {ann}:"] + init
    lines += [ln.replace(placeholder, ret) for ln in body]
    lines.append(f"    return {ret}")
    return Program("\n".join(lines) + "\n", params, ret_types)


def args_for(params):
    """Strategy for an argument tuple matching ``params``."""
    parts = []
    for _, t in params:
        if t == "int":
            parts.append(st.one_of(st.integers(-10, 10), st.integers(-1000, 1000)))
        elif t == "float":
            parts.append(
                st.one_of(
                    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 2.5, -3.75]),
                    st.floats(-1000.0, 1000.0, allow_nan=False, allow_infinity=False),
                )
            )
        else:
            parts.append(st.booleans())
    return st.tuples(*parts)


@st.composite
def cases(draw, extended=False, prints=True):
    """Strategy for ``(Program, args)``; ``prints=False`` generates no print()."""
    prog = draw(programs(extended, prints))
    args = draw(args_for(prog.params))
    return prog, args


# ---------------------------------------------------------------------------
# Loading and running


MODULE_HEADER = "import math\nimport numpy as np\nimport scriptc\n\n\n"
_tmpdir = None
_counter = itertools.count()


def load(prog, directory=None):
    """Write ``prog`` to a real file, import it, and return the plain ``fn``."""
    global _tmpdir
    if directory is None:
        if _tmpdir is None:
            import atexit
            import shutil

            _tmpdir = tempfile.mkdtemp(prefix="scriptc_fuzz_")
            atexit.register(shutil.rmtree, _tmpdir, True)
        directory = _tmpdir
    n = next(_counter)
    name = f"scriptc_fuzzprog_{os.getpid()}_{n}"
    path = os.path.join(str(directory), name + ".py")
    with open(path, "w") as fh:
        fh.write(MODULE_HEADER + prog.source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.fn


try:
    _libc = ctypes.CDLL(None)
except OSError:  # pragma: no cover
    _libc = None


def _fflush():
    if _libc is not None:
        try:
            _libc.fflush(None)
        except Exception:  # pragma: no cover
            pass


def run_captured(func, args):
    """Call ``func(*args)``; return (('ok', value) | ('exc', type), stdout_text).

    Captures both ``sys.stdout`` writes and writes to file descriptor 1 (native
    code printing through libc), in case the compiled code prints natively.
    """
    sys.stdout.flush()
    _fflush()
    saved_fd = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as tf:
        os.dup2(tf.fileno(), 1)
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                try:
                    outcome = ("ok", func(*args))
                except Exception as e:  # noqa: BLE001 - compared by type
                    outcome = ("exc", type(e), e)
        finally:
            _fflush()
            os.dup2(saved_fd, 1)
            os.close(saved_fd)
        tf.seek(0)
        native = tf.read().decode("utf-8", "replace")
    return outcome, buf.getvalue() + native


# ---------------------------------------------------------------------------
# Dynamic range check


class _OutOfRange(Exception):
    pass


def _chk(v):
    if type(v) is int:
        if not -INT_LIMIT <= v <= INT_LIMIT:
            raise _OutOfRange(v)
    elif type(v) is float:
        if not math.isfinite(v):
            raise _OutOfRange(v)
    return v


class _Instrument(ast.NodeTransformer):
    def _wrap(self, node):
        self.generic_visit(node)
        return ast.Call(ast.Name("_chk", ast.Load()), [node], [])

    visit_BinOp = visit_UnaryOp = visit_Call = _wrap

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        tgt_load = ast.Name(node.target.id, ast.Load())
        value = ast.Call(ast.Name("_chk", ast.Load()), [ast.BinOp(tgt_load, node.op, node.value)], [])
        return ast.Assign([node.target], value)


def in_range(prog, args):
    """True iff running ``prog`` on ``args`` under CPython keeps every int
    intermediate within +-2**62 and every float finite, and does not raise."""
    tree = _Instrument().visit(ast.parse(prog.source))
    ast.fix_missing_locations(tree)
    g = {"math": math, "_chk": _chk, "__builtins__": __builtins__}
    exec(compile(tree, "<fuzz-check>", "exec"), g)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            g["fn"](*args)
    except _OutOfRange:
        return False
    except Exception:  # noqa: BLE001 - e.g. UnboundLocalError: compared as an outcome
        return True
    return True


# ---------------------------------------------------------------------------
# Test-case reduction (delta debugging on the AST)


def _stmt_lists(tree):
    for node in ast.walk(tree):
        for fld in ("body", "orelse"):
            lst = getattr(node, fld, None)
            if isinstance(lst, list) and lst and isinstance(lst[0], ast.stmt):
                yield node, fld, lst


_SIMPLE_CONSTS = (0, 1, 0.0, 1.0)


def _candidates(tree):
    """Yield zero-argument callables, each applying one simplification to ``tree``."""
    fn = tree.body[0]
    for owner, fld, lst in list(_stmt_lists(tree)):
        for i, s in enumerate(lst):
            if owner is fn and i == len(lst) - 1:
                continue  # keep the final return

            def delete(lst=lst, i=i, owner=owner, fld=fld):
                del lst[i]
                if not lst and fld == "body":
                    lst.append(ast.Pass())

            yield delete
            if isinstance(s, (ast.If, ast.For, ast.While)):
                for part in ("body", "orelse"):
                    if getattr(s, part):

                        def inline(lst=lst, i=i, s=s, part=part):
                            lst[i : i + 1] = getattr(s, part)

                        yield inline
                if s.orelse:

                    def drop_else(s=s):
                        s.orelse = []

                    yield drop_else
            if isinstance(s, ast.For) and len(s.iter.args) > 1:

                def fewer_args(s=s):
                    s.iter.args = s.iter.args[1:2] if len(s.iter.args) == 2 else s.iter.args[:2]

                yield fewer_args
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
                call = s.value
                for j in range(len(call.args)):

                    def drop_arg(call=call, j=j):
                        del call.args[j]

                    yield drop_arg
                for j in range(len(call.keywords)):

                    def drop_kw(call=call, j=j):
                        del call.keywords[j]

                    yield drop_kw
    # drop one element from every returned tuple (and the return annotation)
    ret_tuples = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)]
    ann = fn.returns
    if ret_tuples and isinstance(ann, ast.Subscript) and isinstance(ann.slice, ast.Tuple):
        width = len(ann.slice.elts)
        if width > 1 and all(len(t.elts) == width for t in ret_tuples):
            for k in range(width):

                def drop_ret(k=k):
                    for t in ret_tuples:
                        del t.elts[k]
                    del ann.slice.elts[k]

                yield drop_ret
    # expressions: replace by a sub-expression or a small constant
    for node in ast.walk(fn):
        for fld, val in ast.iter_fields(node):
            if fld in ("annotation", "returns", "func") or isinstance(node, ast.arguments):
                continue
            vals = val if isinstance(val, list) else [val]
            for j, e in enumerate(vals):
                if (
                    not isinstance(e, ast.expr)
                    or isinstance(e, (ast.Name, ast.Constant))
                    or isinstance(node, ast.Tuple)
                    or isinstance(e, ast.Tuple)
                ):
                    continue
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.For)) and fld == "target":
                    continue
                reps = [
                    c
                    for c in ast.iter_child_nodes(e)
                    if isinstance(c, ast.expr)
                    and not (isinstance(e, ast.Call) and c is e.func)
                    and not isinstance(c, (ast.Attribute, ast.Tuple))
                ]
                reps += [ast.Constant(k) for k in _SIMPLE_CONSTS]
                for r in reps:

                    def replace(node=node, fld=fld, j=j, r=r, is_list=isinstance(val, list)):
                        if is_list:
                            getattr(node, fld)[j] = r
                        else:
                            setattr(node, fld, r)

                    yield replace


def reduce_source(source, still_fails, time_limit=60.0):
    """Greedily simplify ``source`` while ``still_fails(new_source)`` holds."""
    import time

    deadline = time.monotonic() + time_limit
    best = source
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        k = 0
        while time.monotonic() < deadline:
            tree = ast.parse(best)
            cands = _candidates(tree)
            try:
                for _ in range(k):
                    next(cands)
                apply = next(cands)
            except StopIteration:
                break
            try:
                apply()
                new = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
            except Exception:  # noqa: BLE001
                k += 1
                continue
            if new != best and len(new) <= len(best) and still_fails(new):
                best = new
                changed = True
            else:
                k += 1
    return best
