"""FileCheck tests of the classic passes: IR text in, one pass, FileCheck on the printed IR out.

Every test also verifies the graph after the pass, checks that its text parses back to the same text, and (where
arguments are given) that the reference interpreter computes the same result, printed text, exception and array
mutations before and after the pass. Graphs built by the frontend from the functions below are run through the
passes the same way."""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import math
import textwrap

import numpy as np
import pytest

import scriptc
from scriptc.ops.interpreter import interpret
from scriptc.ir import FLOAT, parse, print_graph, verify
from scriptc.ir.clone import clone_graph
from scriptc.passes import PASSES

from tests.util import filecheck

MY_PASSES = ("inline", "constant_propagation", "dce", "cse", "canonicalize", "licm", "unroll", "dead_loop_carried")
for _m in MY_PASSES:  # registers them (scriptc.passes imports them once the pipeline lists them)
    importlib.import_module(f"scriptc.passes.{_m}")

PIPELINE = [
    "inline",
    "canonicalize",
    "constant-propagation",
    "cse",
    "licm",
    "unroll",
    "dead-loop-carried",
    "canonicalize",
    "constant-propagation",
    "cse",
    "dce",
]


# -- helpers shared with test_passes_property -------------------------------------------------------------
def outcome(graph, args):
    """(kind, value or exception type and text, stdout, args after the call) of interpreting ``graph``."""
    args = copy.deepcopy(list(args))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            res = ("ok", interpret(graph, args))
        except Exception as e:  # noqa: BLE001 - compared by type and message
            res = ("exc", type(e), str(e))
    return res, buf.getvalue(), args


def same(a, b) -> bool:
    """Exactly the same value: type, -0.0 vs 0.0, nan positions, array dtype/shape/contents/sign bits."""
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            return False
        return a.dtype.kind not in "fc" or np.array_equal(np.signbit(a), np.signbit(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def assert_same_outcome(before, after, where=""):
    (r1, out1, args1), (r2, out2, args2) = before, after
    assert r1[0] == r2[0], f"{where}: {r1!r} became {r2!r}"
    if r1[0] == "ok":
        assert same(r1[1], r2[1]), f"{where}: result {r1[1]!r} became {r2[1]!r}"
    else:
        assert r1[1:] == r2[1:], f"{where}: exception {r1[1:]!r} became {r2[1:]!r}"
    assert out1 == out2, f"{where}: printed {out1!r} became {out2!r}"
    assert all(same(x, y) for x, y in zip(args1, args2)), f"{where}: arguments mutated differently"


def frontend(fn, *args):
    """The graph as the frontend built it (``graph_for`` may run the whole pipeline)."""
    if hasattr(fn, "frontend_graph_for"):
        return fn.frontend_graph_for(*args)
    return fn.graph_for(*args)


def check_graph(graph):
    verify(graph)
    text = print_graph(graph)
    again = parse(text)
    verify(again)
    assert print_graph(again) == text, "printed IR does not parse back to the same text"
    return text


def apply(passes, graph, args_list=(), expected=None):
    """Run ``passes`` on a copy of ``graph``; check each step and the interpreter on every args tuple
    (``expected``: the outcomes of ``graph`` on them, when already known)."""
    if isinstance(passes, str):
        passes = [passes]
    g = clone_graph(graph)
    changed = False
    for p in passes:
        changed |= bool(PASSES[p].run(g))
        check_graph(g)
    for k, args in enumerate(args_list):
        before = expected[k] if expected is not None else outcome(graph, args)
        assert_same_outcome(before, outcome(g, args), f"{passes} on {args!r}")
    return g, changed


def run_text(passes, text, checks=None, args_list=()):
    g = parse(textwrap.dedent(text))
    verify(g)
    out, changed = apply(passes, g, args_list)
    if checks is not None:
        filecheck(print_graph(out), textwrap.dedent(checks))
    return out, changed


# -- frontend functions --------------------------------------------------------------------------------------
@scriptc.script
def fe_helper(a: int, b: int) -> int:
    if a > b:
        return a - b
    return a + b


@scriptc.script
def fe_caller(n: int, x: float) -> float:
    s = 0.0
    for i in range(2, n, 3):
        if i == 7:
            break
        s = s + x * 1.0 + fe_helper(i, n)
    return s


@scriptc.script
def fe_printer(a: int) -> int:
    print("in", a)
    return a * 2


@scriptc.script
def fe_calls_printer(a: int) -> int:
    print("before")
    b = fe_printer(a) + fe_printer(a + 1)
    print("after", b)
    return b


@scriptc.script
def fe_array_loop(x: np.ndarray, n: int) -> float:
    t = 0.0
    for i in range(n):
        x[i] = x[i] + 1.0
        t += x.sum() + x[i] * 1.0
    return t


@scriptc.script
def fe_invariant(a: int, b: int, n: int) -> int:
    s = 0
    k = 0
    for i in range(n):
        c = a * b + 3
        s = s + c + i
        k = k + 1
    return s


@scriptc.script
def fe_divides(a: int, b: int, n: int) -> int:
    s = 0
    for i in range(n):
        s = s + a // b
    return s


@scriptc.script
def fe_counter(n: int, x: float) -> float:
    unused = 0
    y = x
    for i in range(n):
        unused = unused + i * 2
        y = y * 0.5 + 1.0
    return y


@scriptc.script
def fe_maybe_unbound(n: int, p: bool) -> int:
    if p:
        v = n + 1
    w = 0
    for i in range(3):
        w = w + i
    if True:
        w = w + v
    return w


@scriptc.script
def fe_early_exit(n: int) -> int:
    s = 0
    for i in range(n):
        if s > 20:
            break
        s = s + i
    return s


# ================================================================================================== inline
CALLER = """
graph(%a : int,
      %b : int):
  %r : int = prim::CallFunction[fn=helper](%a, %b)
  %s : int = aten::mul(%r, %a)
  return (%s)
with helper = graph(%a : int,
                    %b : int):
  %0 : bool = aten::gt(%a, %b)
  %1 : int = aten::sub(%a, %b)
  return (%1)
"""


def test_inline_replaces_call_by_callee_body():
    g, changed = run_text(
        "inline",
        CALLER,
        """
        CHECK-NOT: prim::CallFunction
        CHECK: aten::gt(%a, %b)
        CHECK: %[[R:.*]] : int = aten::sub(%a, %b)
        CHECK: aten::mul(%[[R]], %a)
        CHECK-NOT: with helper
    """,
        args_list=[(5, 3), (-2, 9)],
    )
    assert changed


def test_inline_leaves_callee_graph_untouched():
    g = parse(textwrap.dedent(CALLER))
    callee = g.nodes[0].attrs["fn"]
    before = print_graph(callee)
    apply("inline", g)
    PASSES["inline"].run(g)
    assert print_graph(callee) == before


def test_inline_callees_of_callees():
    text = """
    graph(%x : float):
      %r : float = prim::CallFunction[fn=outer](%x)
      return (%r)
    with outer = graph(%y : float):
      %1 : float = prim::CallFunction[fn=inner](%y)
      %2 : float = prim::CallFunction[fn=inner](%1)
      return (%2)
    with inner = graph(%z : float):
      %c : float = prim::Constant[value=2.5]()
      %m : float = aten::mul(%z, %c)
      return (%m)
    """
    run_text(
        "inline",
        text,
        """
        CHECK-NOT: CallFunction
        CHECK: aten::mul(%x,
        CHECK: aten::mul(
        CHECK: return
    """,
        args_list=[(1.5,), (-0.0,)],
    )


def test_inline_frontend_keeps_print_order():
    g = fe_calls_printer.graph
    out, changed = apply("inline", g, [(3,), (-7,)])
    assert changed
    filecheck(
        print_graph(out),
        textwrap.dedent("""
        CHECK: prim::Print
        CHECK: prim::Print
        CHECK: prim::Print
        CHECK: prim::Print
        CHECK-NOT: prim::CallFunction
    """),
    )
    apply(["inline"], fe_caller.graph, [(10, 1.5), (40, -2.0), (0, 1.0)])


# ==================================================================================== constant-propagation
def test_constprop_folds_scalar_chains():
    run_text(
        "constant-propagation",
        """
    graph(%x : int):
      %a : int = prim::Constant[value=6]()
      %b : int = prim::Constant[value=7]()
      %c : int = aten::mul(%a, %b)
      %d : float = aten::div(%c, %b)
      %e : bool = aten::gt(%d, %a)
      %f : int = aten::add(%x, %c)
      %s : str = aten::format[fmt="{}-{}"](%c, %e)
      %t : (int, str) = prim::TupleConstruct(%f, %s)
      return (%t)
    """,
        """
        CHECK: prim::Constant[value=42]()
        CHECK: prim::Constant[value=6.0]()
        CHECK: prim::Constant[value=0]()
        CHECK: aten::add(%x,
        CHECK: prim::Constant[value="42-False"]()
        CHECK-NOT: aten::mul
        CHECK-NOT: aten::format
    """,
        args_list=[(1,)],
    )


def test_constprop_wraps_ints_like_the_interpreter():
    run_text(
        "constant-propagation",
        """
    graph():
      %a : int = prim::Constant[value=4611686018427387904]()
      %b : int = prim::Constant[value=2]()
      %c : int = aten::mul(%a, %b)
      return (%c)
    """,
        """
        CHECK: prim::Constant[value=-9223372036854775808]()
        CHECK-NOT: aten::mul
    """,
        args_list=[()],
    )


def test_constprop_must_not_fold_raising_arrays_or_io():
    run_text(
        "constant-propagation",
        r"""
    graph():
      %a : int = prim::Constant[value=1]()
      %z : int = prim::Constant[value=0]()
      %m : float = prim::Constant[value=-1.0]()
      %q : int = aten::floordiv(%a, %z)
      %r : float = aten::sqrt(%m)
      %x : Double(*) = aten::zeros[dtype="float64"](%a)
       = prim::Print[sep=" ", end="\n"](%a)
      %t : (int, float) = prim::TupleConstruct(%q, %r)
      return (%t)
    """,
        """
        CHECK: aten::floordiv(%a, %z)
        CHECK: aten::sqrt(%m)
        CHECK: aten::zeros
        CHECK: prim::Print
    """,
        args_list=[()],
    )


def test_constprop_does_not_fold_float_signs_wrong():
    run_text(
        "constant-propagation",
        """
    graph():
      %a : float = prim::Constant[value=-0.0]()
      %b : float = prim::Constant[value=0.0]()
      %c : float = aten::add(%a, %b)
      %d : float = aten::mul(%a, %b)
      %t : (float, float) = prim::TupleConstruct(%c, %d)
      return (%t)
    """,
        """
        CHECK: prim::Constant[value=0.0]()
        CHECK: prim::Constant[value=-0.0]()
        CHECK: prim::TupleConstruct
    """,
        args_list=[()],
    )


def test_constprop_control_flow():
    run_text(
        "constant-propagation",
        """
    graph(%x : int):
      %t : bool = prim::Constant[value=1]()
      %zero : int = prim::Constant[value=0]()
      %y : int = prim::If(%t)
        block0():
          %1 : int = aten::add(%x, %x)
          -> (%1)
        block1():
          -> (%x)
      %w : int = prim::Loop(%zero, %t, %y)
        block0(%i : int, %acc : int):
          %2 : int = aten::floordiv(%acc, %zero)
          -> (%t, %2)
      return (%w)
    """,
        """
        CHECK-NOT: prim::If
        CHECK-NOT: prim::Loop
        CHECK: %[[S:.*]] : int = aten::add(%x, %x)
        CHECK: return (%[[S]])
    """,
        args_list=[(3,), (-4,)],
    )


def test_constprop_assert_bound():
    out, _ = run_text(
        "constant-propagation",
        """
    graph(%x : int):
      %t : bool = prim::Constant[value=1]()
      %f : bool = prim::Constant[value=0]()
       = prim::AssertBound[name="v"](%t)
       = prim::AssertBound[name="w"](%f)
      return (%x)
    """,
        """
        CHECK-NOT: name="v"
        CHECK: prim::AssertBound[name="w"](%f)
    """,
        args_list=[(1,)],
    )


def test_constprop_frontend():
    apply("constant-propagation", fe_maybe_unbound.graph, [(3, True), (3, False)])
    apply("constant-propagation", fe_caller.graph, [(10, 1.5), (40, -2.0)])


# ======================================================================================================= dce
def test_dce_removes_unused_pure_nodes():
    run_text(
        "dce",
        """
    graph(%x : int,
          %y : float):
      %a : int = aten::add(%x, %x)
      %b : bool = aten::lt(%x, %a)
      %c : float = aten::mul(%y, %y)
      %k : int = prim::Constant[value=3]()
      %d : int = aten::floordiv(%x, %k)
      %u : int = prim::Uninitialized()
      return (%y)
    """,
        """
        CHECK-NOT: aten::add
        CHECK-NOT: aten::lt
        CHECK-NOT: aten::mul
        CHECK-NOT: aten::floordiv
        CHECK-NOT: prim::Uninitialized
        CHECK: return (%y)
    """,
        args_list=[(3, 1.0)],
    )


def test_dce_must_keep_raising_writing_and_io_nodes():
    run_text(
        "dce",
        r"""
    graph(%x : int,
          %arr : Double(*)):
      %d : int = aten::floordiv(%x, %x)
      %e : float = aten::getitem(%arr, %x)
      %v : float = prim::Constant[value=1.5]()
       = aten::setitem(%arr, %x, %v)
       = prim::Print[sep=" ", end="\n"](%x)
      %n : NoneType = prim::Constant()
      return (%n)
    """,
        """
        CHECK: aten::floordiv(%x, %x)
        CHECK: aten::getitem(%arr, %x)
        CHECK: aten::setitem
        CHECK: prim::Print
    """,
        args_list=[(0, np.zeros(3)), (1, np.zeros(3)), (5, np.zeros(3))],
    )


def test_dce_prunes_if_outputs_and_dead_structures():
    run_text(
        "dce",
        """
    graph(%c : bool,
          %x : int):
      %a : int, %b : int = prim::If(%c)
        block0():
          %1 : int = aten::add(%x, %x)
          %2 : int = aten::sub(%x, %x)
          -> (%1, %2)
        block1():
          -> (%x, %x)
      %t : bool = prim::Constant[value=1]()
      %l : int = prim::Loop(%x, %t, %x)
        block0(%i : int, %acc : int):
          %3 : int = aten::add(%acc, %i)
          -> (%t, %3)
      return (%b)
    """,
        """
        CHECK: %b : int = prim::If(%c)
        CHECK-NOT: aten::add
        CHECK: aten::sub
        CHECK-NOT: prim::Loop
    """,
        args_list=[(True, 3), (False, 4)],
    )


def test_dce_keeps_possibly_endless_while_loop():
    run_text(
        "dce",
        """
    graph(%x : int):
      %big : int = prim::Constant[value=9223372036854775807]()
      %t : bool = prim::Constant[value=1]()
      %l : int = prim::Loop(%big, %t, %x)
        block0(%i : int, %acc : int):
          %3 : int = aten::add(%acc, %i)
          %4 : bool = aten::lt(%3, %x)
          -> (%4, %3)
      return (%x)
    """,
        """
        CHECK: prim::Loop(%big
    """,
        args_list=[(0,)],
    )


def test_dce_frontend():
    apply(["inline", "dce"], fe_caller.graph, [(10, 1.5), (40, -2.0)])
    apply(["dce"], frontend(fe_array_loop, np.zeros(4), 3), [(np.arange(4.0), 3)])


# ======================================================================================================= cse
def test_cse_merges_identical_pure_nodes():
    run_text(
        "cse",
        """
    graph(%x : int,
          %y : int):
      %a : int = aten::add(%x, %y)
      %b : int = aten::add(%x, %y)
      %c : int = aten::floordiv(%a, %y)
      %d : int = aten::floordiv(%b, %y)
      %e : int = aten::mul(%c, %d)
      return (%e)
    """,
        """
        CHECK: %a : int = aten::add(%x, %y)
        CHECK-NOT: aten::add
        CHECK: %c : int = aten::floordiv(%a, %y)
        CHECK-NOT: aten::floordiv
        CHECK: aten::mul(%c, %c)
    """,
        args_list=[(7, 2), (1, 0)],
    )


def test_cse_respects_dominance():
    run_text(
        "cse",
        """
    graph(%p : bool,
          %x : int):
      %a : int = aten::mul(%x, %x)
      %r : int = prim::If(%p)
        block0():
          %b : int = aten::mul(%x, %x)
          %c : int = aten::sub(%x, %a)
          -> (%c)
        block1():
          %d : int = aten::sub(%x, %a)
          -> (%d)
      %e : int = aten::sub(%x, %a)
      %f : int = aten::add(%r, %e)
      return (%f)
    """,
        """
        CHECK: %a : int = aten::mul(%x, %x)
        CHECK: block0():
        CHECK-NOT: aten::mul
        CHECK: %c : int = aten::sub(%x, %a)
        CHECK: block1():
        CHECK: %d : int = aten::sub(%x, %a)
        CHECK: %e : int = aten::sub(%x, %a)
    """,
        args_list=[(True, 3), (False, 3)],
    )


def test_cse_must_not_merge_array_reads_across_writes_or_array_results():
    run_text(
        "cse",
        """
    graph(%x : Double(*),
          %i : int):
      %a : float = aten::getitem(%x, %i)
      %v : float = prim::Constant[value=2.0]()
       = aten::setitem(%x, %i, %v)
      %b : float = aten::getitem(%x, %i)
      %c : float = aten::getitem(%x, %i)
      %one : int = prim::Constant[value=1]()
      %z1 : Double(*) = aten::zeros[dtype="float64"](%one)
      %z2 : Double(*) = aten::zeros[dtype="float64"](%one)
      %w : float = prim::Constant[value=5.0]()
      %zero : int = prim::Constant[value=0]()
       = aten::setitem(%z1, %zero, %w)
      %s : float = aten::sum(%z2)
      %t : (float, float, float, float) = prim::TupleConstruct(%a, %b, %c, %s)
      return (%t)
    """,
        """
        CHECK: %a : float = aten::getitem(%x, %i)
        CHECK: aten::setitem
        CHECK: %b : float = aten::getitem(%x, %i)
        CHECK-NOT: %c : float
        CHECK: %z1 : Double(*) = aten::zeros
        CHECK: %z2 : Double(*) = aten::zeros
        CHECK: prim::TupleConstruct(%a, %b, %b, %s)
    """,
        args_list=[(np.array([1.0, 3.0]), 1)],
    )


def test_cse_array_reads_not_merged_into_loop_that_writes():
    run_text(
        "cse",
        """
    graph(%x : Double(*),
          %n : int):
      %z : int = prim::Constant[value=0]()
      %a : float = aten::getitem(%x, %z)
      %t : bool = prim::Constant[value=1]()
      %r : float = prim::Loop(%n, %t, %a)
        block0(%i : int, %acc : float):
          %b : float = aten::getitem(%x, %z)
          %c : float = aten::add(%acc, %b)
           = aten::setitem(%x, %z, %c)
          -> (%t, %c)
      return (%r)
    """,
        """
        CHECK: block0
        CHECK: %b : float = aten::getitem(%x, %z)
    """,
        args_list=[(np.array([1.0, 2.0]), 4)],
    )


def test_cse_keeps_signed_zero_and_types_apart():
    run_text(
        "cse",
        """
    graph():
      %a : float = prim::Constant[value=0.0]()
      %b : float = prim::Constant[value=-0.0]()
      %c : int = prim::Constant[value=1]()
      %d : bool = prim::Constant[value=1]()
      %e : float = prim::Constant[value=0.0]()
      %t : (float, float, int, bool, float) = prim::TupleConstruct(%a, %b, %c, %d, %e)
      return (%t)
    """,
        """
        CHECK: prim::TupleConstruct(%a, %b, %c, %d, %a)
    """,
        args_list=[()],
    )


def test_cse_frontend():
    apply(["inline", "cse"], fe_caller.graph, [(10, 1.5), (40, -2.0)])
    apply(["cse"], frontend(fe_array_loop, np.zeros(4), 3), [(np.arange(4.0), 3)])


# ============================================================================================== canonicalize
def test_canonicalize_exact_scalar_identities():
    run_text(
        ["canonicalize", "dce"],
        """
    graph(%x : int,
          %y : float,
          %p : bool):
      %one : int = prim::Constant[value=1]()
      %zero : int = prim::Constant[value=0]()
      %fone : float = prim::Constant[value=1.0]()
      %fzero : float = prim::Constant[value=0.0]()
      %a : int = aten::mul(%x, %one)
      %b : int = aten::add(%zero, %a)
      %c : int = aten::sub(%b, %zero)
      %d : float = aten::mul(%fone, %y)
      %e : float = aten::sub(%d, %fzero)
      %f : float = aten::div(%e, %one)
      %g : float = aten::neg(%f)
      %h : float = aten::neg(%g)
      %n1 : bool = aten::__not__(%p)
      %n2 : bool = aten::__not__(%n1)
      %t : (int, float, bool) = prim::TupleConstruct(%c, %h, %n2)
      return (%t)
    """,
        """
        CHECK-NOT: aten::mul
        CHECK-NOT: aten::add
        CHECK-NOT: aten::sub
        CHECK-NOT: aten::div
        CHECK-NOT: aten::neg
        CHECK-NOT: aten::__not__
        CHECK: prim::TupleConstruct(%x, %y, %p)
    """,
        args_list=[(5, -0.0, True), (-9223372036854775808, float("nan"), False), (0, 2.5, True)],
    )


def test_canonicalize_must_not_touch_float_plus_zero_or_array_ops():
    run_text(
        ["canonicalize", "dce"],
        """
    graph(%y : float,
          %x : Double(*),
          %k : int):
      %fzero : float = prim::Constant[value=0.0]()
      %izero : int = prim::Constant[value=0]()
      %fone : float = prim::Constant[value=1.0]()
      %nzero : float = prim::Constant[value=-0.0]()
      %a : float = aten::add(%y, %fzero)
      %b : float = aten::add(%izero, %y)
      %c : float = aten::sub(%y, %nzero)
      %d : float = aten::mul(%k, %fone)
      %z : Double(*) = aten::mul(%x, %fone)
      %t : (float, float, float, float, Double(*)) = prim::TupleConstruct(%a, %b, %c, %d, %z)
      return (%t)
    """,
        """
        CHECK: %a : float = aten::add(%y, %fzero)
        CHECK: %b : float = aten::add(%izero, %y)
        CHECK: %c : float = aten::sub(%y, %nzero)
        CHECK: %d : float = aten::mul(%k, %fone)
        CHECK: %z : Double(*) = aten::mul(%x, %fone)
    """,
        args_list=[(-0.0, np.array([1.0, -0.0]), 3)],
    )


def test_canonicalize_control_flow():
    run_text(
        ["canonicalize", "dce"],
        """
    graph(%x : int,
          %p : bool):
      %f : bool = prim::Constant[value=0]()
      %t : bool = prim::Constant[value=1]()
      %one : int = prim::Constant[value=1]()
      %zero : int = prim::Constant[value=0]()
      %a : int = prim::If(%f)
        block0():
          -> (%zero)
        block1():
          %1 : int = aten::mul(%x, %x)
          -> (%1)
      %b : int = prim::Loop(%zero, %t, %a)
        block0(%i : int, %acc : int):
          -> (%t, %i)
      %c : int = prim::Loop(%one, %t, %b)
        block0(%j : int, %acc2 : int):
          %2 : int = aten::add(%acc2, %j)
          %3 : int = aten::sub(%2, %x)
          -> (%f, %3)
      %q : bool = prim::If(%p)
        block0():
          -> (%t)
        block1():
          -> (%f)
      %r : (int, bool) = prim::TupleConstruct(%c, %q)
      return (%r)
    """,
        """
        CHECK-NOT: prim::If
        CHECK-NOT: prim::Loop
        CHECK: aten::mul(%x, %x)
        CHECK: aten::sub
        CHECK: prim::TupleConstruct({{.*}}, %p)
    """,
        args_list=[(3, True), (-2, False)],
    )


def test_canonicalize_knows_an_ifs_condition_inside_its_blocks():
    # the shape a while loop's first test takes (`while n < maxit and ...` with n = 0): the else-block's
    # copy of the condition is False, so the If is the condition itself and a loop it starts there never runs
    run_text(
        ["canonicalize", "constant-propagation", "dce"],
        """
    graph(%m : int,
          %x : float):
      %zero : int = prim::Constant[value=0]()
      %big : int = prim::Constant[value=100]()
      %c : bool = aten::lt(%zero, %m)
      %first : bool = prim::If(%c)
        block0():
          %t : bool = prim::Constant[value=1]()
          -> (%t)
        block1():
          -> (%c)
      %r : float = prim::If(%c)
        block0():
          -> (%x)
        block1():
          %y : float = prim::Loop(%big, %c, %x)
            block0(%i : int, %acc : float):
              %h : float = aten::mul(%acc, %acc)
              -> (%c, %h)
          -> (%y)
      %out : (bool, float) = prim::TupleConstruct(%first, %r)
      return (%out)
    """,
        """
        CHECK: %c : bool = aten::lt(%zero, %m)
        CHECK-NOT: prim::Loop
        CHECK-NOT: aten::mul
        CHECK: prim::TupleConstruct(%c, %x)
    """,
        args_list=[(3, 1.5), (0, 1.5), (-2, 0.5)],
    )


def test_unswitch_leaves_an_if_that_folding_left_dead():
    # a while loop's first test folded to its condition leaves an If nothing uses: no copy of the loop for it
    out, changed = run_text(
        ["canonicalize", "constant-propagation", "unswitch", "dce"],
        """
    graph(%m : int,
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %zero : int = prim::Constant[value=0]()
      %four : int = prim::Constant[value=4]()
      %c : bool = aten::lt(%zero, %m)
      %r : int = prim::Loop(%n, %t, %zero)
        block0(%k : int, %acc : int):
          %first : bool = prim::If(%c)
            block0():
              %s : int = aten::mul(%zero, %zero)
              %l : bool = aten::lt(%s, %four)
              -> (%l)
            block1():
              -> (%c)
          %w : int = prim::Loop(%m, %first, %acc)
            block0(%i : int, %a : int):
              %a2 : int = aten::add(%a, %k)
              -> (%t, %a2)
          -> (%t, %w)
      return (%r)
    """,
        """
        CHECK-COUNT-2: prim::Loop
        CHECK-NOT: prim::Loop
    """,
        args_list=[(3, 4), (0, 4), (-1, 2)],
    )


def test_canonicalize_keeps_loops_that_may_run_more_or_less():
    run_text(
        "canonicalize",
        """
    graph(%x : int,
          %p : bool):
      %t : bool = prim::Constant[value=1]()
      %one : int = prim::Constant[value=1]()
      %two : int = prim::Constant[value=2]()
      %b : int = prim::Loop(%one, %p, %x)
        block0(%i : int, %acc : int):
          %1 : int = aten::add(%acc, %x)
          -> (%t, %1)
      %c : int = prim::Loop(%two, %t, %b)
        block0(%j : int, %acc2 : int):
          %2 : int = aten::add(%acc2, %j)
          -> (%t, %2)
      return (%c)
    """,
        """
        CHECK: prim::Loop(%one, %p, %x)
        CHECK: prim::Loop(%two, %t
    """,
        args_list=[(3, True), (3, False)],
    )


def test_canonicalize_frontend():
    apply(["canonicalize"], fe_caller.graph, [(10, 1.5), (40, -2.0)])
    apply(["canonicalize", "dce"], frontend(fe_array_loop, np.zeros(4), 3), [(np.arange(4.0), 3)])
    apply(["canonicalize"], fe_maybe_unbound.graph, [(3, True), (3, False)])


# ====================================================================================================== licm
def test_licm_hoists_invariant_pure_nodes():
    run_text(
        "licm",
        """
    graph(%a : int,
          %b : int,
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %z : int = prim::Constant[value=0]()
      %s : int = prim::Loop(%n, %t, %z)
        block0(%i : int, %acc : int):
          %k : int = prim::Constant[value=3]()
          %m : int = aten::mul(%a, %b)
          %c : int = aten::add(%m, %k)
          %d : int = aten::add(%acc, %c)
          %e : int = aten::add(%d, %i)
          -> (%t, %e)
      return (%s)
    """,
        """
        CHECK: %m : int = aten::mul(%a, %b)
        CHECK: %c : int = aten::add(%m, %k)
        CHECK: prim::Loop
        CHECK: block0
        CHECK-NOT: aten::mul
        CHECK: aten::add(%acc, %c)
    """,
        args_list=[(2, 5, 4), (2, 5, 0)],
    )


def test_licm_must_not_hoist_raising_io_or_array_making_nodes():
    run_text(
        "licm",
        r"""
    graph(%a : int,
          %b : int,
          %n : int,
          %x : Double(*)):
      %t : bool = prim::Constant[value=1]()
      %z : int = prim::Constant[value=0]()
      %s : int = prim::Loop(%n, %t, %z)
        block0(%i : int, %acc : int):
          %q : int = aten::floordiv(%a, %b)
          %g : float = aten::getitem(%x, %z)
          %y : Double(*) = aten::zeros_like[dtype="float64"](%x)
           = prim::Print[sep=" ", end="\n"](%a)
          %d : int = aten::add(%acc, %q)
          -> (%t, %d)
      return (%s)
    """,
        """
        CHECK: prim::Loop
        CHECK: block0
        CHECK: aten::floordiv(%a, %b)
        CHECK: aten::getitem(%x, %z)
        CHECK: aten::zeros_like
        CHECK: prim::Print
    """,
        args_list=[(7, 0, 0, np.zeros(0)), (7, 2, 3, np.ones(2))],
    )


def test_licm_must_not_hoist_ops_on_maybe_unbound_locals():
    # hoisted above its AssertBound, `v % 5` would raise TypeError on the unbound marker, not UnboundLocalError
    run_text(
        ["licm", "dce", "dead-loop-carried"],
        """
    graph(%n : int,
          %p : bool):
      %u : int = prim::Uninitialized()
      %one : int = prim::Constant[value=1]()
      %v : int = prim::If(%p)
        block0():
          -> (%one)
        block1():
          -> (%u)
      %t : bool = prim::Constant[value=1]()
      %k : int = prim::Constant[value=5]()
      %s : int = prim::Loop(%n, %t, %one)
        block0(%i : int, %acc : int):
           = prim::AssertBound[name="v"](%p)
          %m : int = aten::remainder(%v, %k)
          %d : int = aten::add(%acc, %m)
          -> (%t, %d)
      return (%one)
    """,
        """
        CHECK: prim::Loop
        CHECK: prim::AssertBound
        CHECK: aten::remainder(%v, %k)
    """,
        args_list=[(2, False), (2, True), (0, False)],
    )


def test_licm_carried_value_returned_unchanged_is_the_initial_value():
    # `for i in range(n): x = x` then `x += 1.0`: the write after the loop goes to the caller's array, so the
    # loop's result must be %x itself (time-loop fusion would otherwise make it a new array)
    run_text(
        "licm",
        """
    graph(%x : Double(*),
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %z : int = prim::Constant[value=0]()
      %x.2 : Double(*), %s : int = prim::Loop(%n, %t, %x, %z)
        block0(%i : int, %x.1 : Double(*), %acc : int):
          %d : int = aten::add(%acc, %i)
          %g : float = aten::getitem(%x.1, %z)
          -> (%t, %x.1, %d)
      %one : float = prim::Constant[value=1.0]()
       = aten::add_(%x.2, %one)
      return (%s)
    """,
        """
        CHECK: %s : int = prim::Loop(%n, %t, %z)
        CHECK-NEXT: block0(%i : int, %acc : int):
        CHECK: aten::getitem(%x, %z)
        CHECK: -> (%t, %d)
        CHECK: aten::add_(%x, %one)
    """,
        args_list=[(np.zeros(2), 3), (np.ones(3), 0)],
    )


def test_licm_nested_loops_hoist_through_both():
    run_text(
        "licm",
        """
    graph(%a : int,
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %z : int = prim::Constant[value=0]()
      %s : int = prim::Loop(%n, %t, %z)
        block0(%i : int, %acc : int):
          %s2 : int = prim::Loop(%n, %t, %acc)
            block0(%j : int, %acc2 : int):
              %m : int = aten::mul(%a, %a)
              %d : int = aten::add(%acc2, %m)
              -> (%t, %d)
          -> (%t, %s2)
      return (%s)
    """,
        """
        CHECK: %m : int = aten::mul(%a, %a)
        CHECK: prim::Loop
        CHECK: prim::Loop
    """,
        args_list=[(3, 4), (3, -1)],
    )


def test_licm_shape_queries_hoisted_despite_writes():
    run_text(
        "licm",
        """
    graph(%x : Double(*),
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %z : int = prim::Constant[value=0]()
      %v : float = prim::Constant[value=1.0]()
      %s : int = prim::Loop(%n, %t, %z)
        block0(%i : int, %acc : int):
          %k : int = aten::numel(%x)
          %g : float = aten::getitem(%x, %z)
           = aten::setitem(%x, %z, %v)
          %d : int = aten::add(%acc, %k)
          -> (%t, %d)
      return (%s)
    """,
        """
        CHECK: %k : int = aten::numel(%x)
        CHECK: prim::Loop
        CHECK: aten::getitem
    """,
        args_list=[(np.zeros(3), 2)],
    )


def test_licm_frontend():
    g, changed = apply(["licm"], fe_invariant.graph, [(2, 3, 5), (2, 3, 0), (-4, 7, 3)])
    assert changed
    apply(["licm"], fe_divides.graph, [(7, 0, 0), (7, 2, 3), (7, 0, 2)])
    apply(["inline", "licm"], fe_caller.graph, [(10, 1.5), (40, -2.0)])
    apply(["licm"], frontend(fe_array_loop, np.zeros(4), 3), [(np.arange(4.0), 3)])


# ==================================================================================================== unroll
def test_unroll_full_constant_trip_count():
    run_text(
        ["unroll", "constant-propagation"],
        """
    graph(%x : int):
      %t : bool = prim::Constant[value=1]()
      %three : int = prim::Constant[value=3]()
      %s : int = prim::Loop(%three, %t, %x)
        block0(%i : int, %acc : int):
          %d : int = aten::mul(%acc, %i)
          %e : int = aten::add(%d, %x)
          -> (%t, %e)
      return (%s)
    """,
        """
        CHECK-NOT: prim::Loop
        CHECK: aten::add
        CHECK: aten::mul
        CHECK: aten::add
        CHECK: aten::mul
        CHECK: aten::add
    """,
        args_list=[(3,), (-5,)],
    )


def test_unroll_partial_by_four_with_runtime_trip_count():
    g, changed = run_text(
        "unroll",
        """
    graph(%x : float,
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %s : float = prim::Loop(%n, %t, %x)
        block0(%i : int, %acc : float):
          %k : float = prim::Constant[value=3.0]()
          %d : float = aten::mul(%acc, %k)
          %e : float = aten::add(%d, %i)
          -> (%t, %e)
      return (%s)
    """,
        """
        CHECK: prim::max(%n,
        CHECK: aten::floordiv
        CHECK: aten::remainder
        CHECK: prim::Loop[unrolled=4]
        CHECK-COUNT-4: aten::mul(%{{(acc|e)[.0-9]*}}, %k
        CHECK-NOT: aten::mul(%{{(acc|e)[.0-9]*}}, %k
        CHECK: prim::Loop[unrolled=4]
        CHECK: aten::add(%i,
    """,
        args_list=[(1.5, n) for n in (-9, -1, 0, 1, 3, 4, 5, 7, 8, 9, 16, 17, 23)],
    )
    assert changed
    again, changed_again = apply("unroll", g, [(1.5, 9)])  # its loops are marked: not unrolled again
    assert not changed_again and print_graph(again) == print_graph(g)


def test_unroll_leaves_loops_without_a_float_sum_to_llvm():
    # an int sum or stores only: LLVM vectorizes the loop whole (versioned on unit strides); copies by 4 would
    # be interleaved accesses with strides of 4 times a run-time value
    g, changed = run_text(
        "unroll",
        """
    graph(%x : int,
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %s : int = prim::Loop(%n, %t, %x)
        block0(%i : int, %acc : int):
          %k : int = prim::Constant[value=3]()
          %d : int = aten::mul(%acc, %k)
          %e : int = aten::add(%d, %i)
          -> (%t, %e)
      return (%s)
    """,
        """
        CHECK: %s : int = prim::Loop(%n, %t, %x)
        CHECK-NEXT: block0(%i : int, %acc : int):
        CHECK: aten::mul(%acc, %k)
        CHECK: -> (%t, %e)
        CHECK-NEXT: return (%s)
    """,
        args_list=[(1, n) for n in (-1, 0, 5, 9)],
    )
    assert not changed


def test_unroll_must_not_unroll_loops_with_computed_condition():
    run_text(
        "unroll",
        """
    graph(%x : int):
      %t : bool = prim::Constant[value=1]()
      %three : int = prim::Constant[value=3]()
      %s : int = prim::Loop(%three, %t, %x)
        block0(%i : int, %acc : int):
          %e : int = aten::add(%acc, %i)
          %c : bool = aten::lt(%e, %three)
          -> (%c, %e)
      return (%s)
    """,
        """
        CHECK: prim::Loop(%three, %t, %x)
    """,
        args_list=[(0,), (10,)],
    )


def test_unroll_frontend_array_writes():
    g = frontend(fe_array_loop, np.zeros(20), 3)
    out, changed = apply(
        ["unroll", "constant-propagation", "dce"],
        g,
        [(np.arange(20.0), n) for n in (0, 3, 8, 11, 17)] + [(np.arange(3.0), 5)],
    )
    assert changed
    apply(["unroll"], fe_early_exit.graph, [(n,) for n in (0, 5, 30)])
    apply(["unroll", "canonicalize", "constant-propagation"], fe_invariant.graph, [(2, 3, n) for n in (-2, 0, 9)])


# ========================================================================================= dead-loop-carried
def test_dead_loop_carried_removes_unused_counter():
    run_text(
        "dead-loop-carried",
        """
    graph(%x : float,
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %z : int = prim::Constant[value=0]()
      %h : float = prim::Constant[value=0.5]()
      %y : float, %k : int = prim::Loop(%n, %t, %x, %z)
        block0(%i : int, %acc : float, %cnt : int):
          %a : float = aten::mul(%acc, %h)
          %c : int = aten::add(%cnt, %i)
          -> (%t, %a, %c)
      return (%y)
    """,
        """
        CHECK: %y : float = prim::Loop(%n, %t, %x)
        CHECK: block0(%i : int, %acc : float):
        CHECK-NOT: aten::add
        CHECK: -> (%t, %a)
    """,
        args_list=[(1.0, 3), (2.0, 0)],
    )


def test_dead_loop_carried_cycle_of_two():
    run_text(
        "dead-loop-carried",
        """
    graph(%n : int):
      %t : bool = prim::Constant[value=1]()
      %z : int = prim::Constant[value=0]()
      %l : int, %a : int, %b : int = prim::Loop(%n, %t, %z, %z, %z)
        block0(%i : int, %live : int, %pa : int, %pb : int):
          %na : int = aten::add(%pb, %i)
          %nb : int = aten::sub(%pa, %i)
          %nl : int = aten::add(%live, %i)
          -> (%t, %nl, %na, %nb)
      return (%l)
    """,
        """
        CHECK: %l : int = prim::Loop(%n, %t, %z)
        CHECK-NOT: aten::sub
    """,
        args_list=[(4,)],
    )


def test_dead_loop_carried_must_keep_raising_updates_and_used_values():
    run_text(
        "dead-loop-carried",
        r"""
    graph(%n : int,
          %d : int):
      %t : bool = prim::Constant[value=1]()
      %one : int = prim::Constant[value=1]()
      %l : int, %s : int, %p : int, %c : int = prim::Loop(%n, %t, %one, %one, %one, %one)
        block0(%i : int, %pl : int, %ps : int, %pp : int, %pc : int):
          %nl : int = aten::add(%pl, %i)
          %ns : int = aten::floordiv(%ps, %d)
          %np : int = aten::add(%pp, %one)
           = prim::Print[sep=" ", end="\n"](%pp)
          %nc : int = aten::add(%pc, %i)
          %cond : bool = aten::lt(%nc, %n)
          -> (%cond, %nl, %ns, %np, %nc)
      return (%l)
    """,
        """
        CHECK: %l : int, %s : int, %p : int, %c : int = prim::Loop
        CHECK: aten::floordiv
    """,
        args_list=[(3, 0), (3, 2), (0, 0)],
    )


def test_dead_loop_carried_frontend():
    g, changed = apply(["dead-loop-carried"], fe_counter.graph, [(3, 1.0), (0, -0.0)])
    assert changed
    (loop,) = [n for n in g.nodes if n.kind == "prim::Loop"]
    assert [o.type for o in loop.outputs] == [FLOAT]  # only y is still carried
    apply(["dead-loop-carried"], fe_divides.graph, [(7, 0, 2), (7, 2, 2)])
    apply(["dead-loop-carried"], fe_invariant.graph, [(2, 3, 5)])


# ================================================================================================== pipeline
@pytest.mark.parametrize(
    "fn, args_list",
    [
        (fe_caller, [(10, 1.5), (40, -2.0), (0, 1.0)]),
        (fe_calls_printer, [(3,), (-1,)]),
        (fe_invariant, [(2, 3, 5), (1, 1, 0), (2, 3, 17)]),
        (fe_divides, [(7, 0, 0), (7, 0, 2), (7, 2, 9)]),
        (fe_counter, [(3, 1.0), (12, -0.0)]),
        (fe_maybe_unbound, [(3, True), (3, False)]),
        (fe_early_exit, [(0,), (30,)]),
    ],
)
def test_full_pipeline_on_frontend_graphs(fn, args_list):
    apply(PIPELINE, frontend(fn, *args_list[0]), args_list)


def test_pipeline_on_arrays():
    g = frontend(fe_array_loop, np.zeros(3), 1)
    apply(PIPELINE, g, [(np.arange(12.0), n) for n in (0, 5, 12)] + [(np.arange(3.0), 4)])


def test_passes_registered_with_docstrings():
    for name in ("inline", "constant-propagation", "dce", "cse", "canonicalize", "licm", "unroll", "dead-loop-carried"):
        assert name in PASSES and len(PASSES[name].doc) > 40, name
    for m in MY_PASSES:
        assert importlib.import_module(f"scriptc.passes.{m}").__doc__


def test_clone_graph_keeps_names_and_semantics():
    g = fe_caller.graph
    c = clone_graph(g)
    assert print_graph(c) == print_graph(g)
    verify(c)
    assert math.isclose(interpret(c, [10, 1.5]), interpret(g, [10, 1.5]))


# -- unswitch ------------------------------------------------------------------------------------------------
def test_unswitch_copies_the_loop_into_both_branches_of_an_invariant_if():
    run_text(
        "unswitch",
        """
    graph(%x : Double(*),
          %y : Double(*),
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %one : int = prim::Constant[value=1]()
      %sx : (int) = aten::size(%x)
      %dx : int = prim::TupleUnpack(%sx)
      %c : bool = aten::eq(%dx, %one)
      %r : Double(*) = prim::Loop(%n, %t, %y)
        block0(%i : int, %acc : Double(*)):
          %g : Double(*) = aten::mul(%acc, %x)
          %h : Double(*) = prim::If(%c)
            block0():
              %s : float = aten::sum(%g)
              %z : Double(*) = aten::zeros_like[dtype="float64"](%x)
              %w : Double(*) = aten::add(%z, %s)
              -> (%w)
            block1():
              -> (%g)
          %k : Double(*) = aten::add(%h, %acc)
          -> (%t, %k)
      return (%r)
    """,
        """
        CHECK: %[[C:.+]] : bool = aten::eq
        CHECK: %r : Double(*) = prim::If(%[[C]])
        CHECK-NEXT: block0():
        CHECK: prim::Loop
        CHECK-NOT: prim::If
        CHECK: aten::sum
        CHECK: block1():
        CHECK: prim::Loop
        CHECK-NOT: prim::If
        CHECK-NOT: aten::sum
        CHECK: return (%r)
    """,
        args_list=[
            (np.array([0.5]), np.array([1.0, 2.0]), 3),
            (np.array([0.5, 2.0]), np.array([1.0, 2.0]), 3),
            (np.array([0.5]), np.array([1.0, 2.0]), 0),
        ],
    )


def test_unswitch_leaves_ifs_on_conditions_computed_in_the_loop():
    out, changed = run_text(
        "unswitch",
        """
    graph(%a : float,
          %n : int):
      %t : bool = prim::Constant[value=1]()
      %z : float = prim::Constant[value=0.0]()
      %r : float = prim::Loop(%n, %t, %z)
        block0(%i : int, %acc : float):
          %c : bool = aten::gt(%acc, %a)
          %h : float = prim::If(%c)
            block0():
              -> (%a)
            block1():
              %one : float = prim::Constant[value=1.5]()
              %w : float = aten::add(%acc, %one)
              -> (%w)
          -> (%t, %h)
      return (%r)
    """,
        """
        CHECK: prim::Loop
        CHECK: prim::If
    """,
        args_list=[(2.0, 5), (-1.0, 3)],
    )
    assert not changed


def test_canonicalize_makes_a_broadcast_shape_once_per_block():
    """Two queries of one broadcast's shape share its expansion, and a third (of a broadcast of it) reuses the
    operand's size and the comparison with 1: a gradient asks for the same shapes many times (the MLP training
    step's first canonicalize made 1,007 nodes, 808 with this)."""
    run_text(
        "canonicalize",
        """
    graph(%x : Double(*, *),
          %y : Double(*)):
      %q : Double(*, *) = aten::sub(%x, %y)
      %s1 : (int, int) = aten::size(%q)
      %w : Double(*, *) = aten::add(%q, %y)
      %s2 : (int, int) = aten::size(%q)
      %s3 : (int, int) = aten::size(%w)
      %r : ((int, int), (int, int), (int, int)) = prim::TupleConstruct(%s1, %s2, %s3)
      return (%r)
    """,
        """
        CHECK: aten::size(%x)
        CHECK: aten::size(%y)
        CHECK: %[[GROW:.*]] : int = aten::Int
        CHECK: %[[S:.*]] : (int, int) = prim::TupleConstruct
        CHECK-NOT: aten::size(%y)
        CHECK: aten::mul(%{{.*}}, %[[GROW]])
        CHECK-NOT: aten::size(%y)
        CHECK: %r : ((int, int), (int, int), (int, int)) = prim::TupleConstruct(%[[S]], %[[S]], %{{.*}})
    """,
        args_list=[(np.ones((2, 3)), np.ones(3)), (np.ones((2, 1)), np.ones(4)), (np.ones((0, 1)), np.ones(5))],
    )


def test_canonicalize_reads_an_element_wise_results_shape_from_its_operands():
    run_text(
        "canonicalize",
        """
    graph(%x : Double(*, *),
          %y : Double(*)):
      %a : float = prim::Constant[value=2.0]()
      %p : Double(*, *) = aten::mul(%x, %a)
      %n : int = aten::numel(%p)
      %q : Double(*, *) = aten::sub(%p, %y)
      %s : (int, int) = aten::size(%q)
      %r : (int, (int, int)) = prim::TupleConstruct(%n, %s)
      return (%r)
    """,
        """
        CHECK: aten::numel(%x)
        CHECK: aten::size(%x)
        CHECK: aten::size(%y)
        CHECK: %r : (int, (int, int)) = prim::TupleConstruct
    """,
        args_list=[(np.ones((2, 3)), np.ones(3)), (np.ones((2, 1)), np.ones(4)), (np.ones((0, 1)), np.ones(5))],
    )
