"""FileCheck tests of the classic passes: IR text in, one pass, FileCheck on the printed IR out.

Every test also verifies the graph after the pass, checks that its text parses back to the same text, and (where
arguments are given) that the reference interpreter computes the same result, printed text, exception and array
mutations before and after the pass. Graphs built by the frontend from the functions below are run through the
passes the same way. Cases that are IR text and tuples of numbers only are files: tests/filecheck/*.ir
(tests/passes/test_ir_files.py)."""

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
def test_constprop_frontend():
    apply("constant-propagation", fe_maybe_unbound.graph, [(3, True), (3, False)])
    apply("constant-propagation", fe_caller.graph, [(10, 1.5), (40, -2.0)])


# ======================================================================================================= dce
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


def test_dce_frontend():
    apply(["inline", "dce"], fe_caller.graph, [(10, 1.5), (40, -2.0)])
    apply(["dce"], frontend(fe_array_loop, np.zeros(4), 3), [(np.arange(4.0), 3)])


# ======================================================================================================= cse
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


def test_cse_frontend():
    apply(["inline", "cse"], fe_caller.graph, [(10, 1.5), (40, -2.0)])
    apply(["cse"], frontend(fe_array_loop, np.zeros(4), 3), [(np.arange(4.0), 3)])


# ============================================================================================== canonicalize
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


def test_canonicalize_frontend():
    apply(["canonicalize"], fe_caller.graph, [(10, 1.5), (40, -2.0)])
    apply(["canonicalize", "dce"], frontend(fe_array_loop, np.zeros(4), 3), [(np.arange(4.0), 3)])
    apply(["canonicalize"], fe_maybe_unbound.graph, [(3, True), (3, False)])


# ====================================================================================================== licm
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
