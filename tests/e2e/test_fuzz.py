"""Differential fuzzing: random restricted programs, scriptc vs CPython.

Every generated program (see ``fuzzgen.py``) is written to a real module file,
imported, run under CPython, then compiled with ``scriptc.script`` and run both
compiled and through ``.interpret``.  Return values (element type and value;
floats compared by ``repr`` so ``-0.0 != 0.0`` and ``nan == nan``), printed
text, and raised exception types must all match CPython exactly.

Set SCRIPTC_FUZZ_EXAMPLES to change the bounded CI count; the ``slow`` variant
(``pytest -m slow``) runs many more.  On a failure the message holds the
generated source and args, plus an automatically reduced reproducer
(SCRIPTC_FUZZ_REDUCE_SECONDS, default 60; 0 disables).  SCRIPTC_FUZZ_SHRINK=1
re-enables Hypothesis' own (slow) shrinking.
"""

import ast
import math
import os
import traceback

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings

import scriptc

from tests import fuzzgen

CI_EXAMPLES = int(os.environ.get("SCRIPTC_FUZZ_EXAMPLES", "80"))
SLOW_EXAMPLES = int(os.environ.get("SCRIPTC_FUZZ_SLOW_EXAMPLES", "3000"))
# SCRIPTC_FUZZ_PRINTS=0: programs without print() (e.g. while a backend lacks it)
PRINTS = os.environ.get("SCRIPTC_FUZZ_PRINTS", "1") != "0"
REDUCE_SECONDS = float(os.environ.get("SCRIPTC_FUZZ_REDUCE_SECONDS", "60"))

_SUPPRESS = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    HealthCheck.large_base_example,
]


def _same(expected, got):
    if type(expected) is not type(got):
        return False
    if isinstance(expected, float):
        return repr(expected) == repr(got)  # distinguishes -0.0, nan == nan
    if isinstance(expected, tuple):
        return len(expected) == len(got) and all(map(_same, expected, got))
    return expected == got


def _describe(outcome):
    if outcome[0] == "ok":
        return f"returned {outcome[1]!r}"
    exc = outcome[2]
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return f"raised {outcome[1].__name__}: {exc}\n{tb}"


def _context(prog, args):
    return (
        "\n--- generated source ---\n"
        + prog.source
        + f"--- args ---\n{args!r}\n"
        + f"--- reproduce ---\nfn(*{args!r})\n"
    )


def find_mismatch(prog, args):
    """Run ``prog(*args)`` under CPython and scriptc.

    Returns None when they agree, else ``(signature, message)``; the signature
    is a short category used to keep a reduced test case failing "the same way".
    """
    fn = fuzzgen.load(prog)
    expected, expected_out = fuzzgen.run_captured(fn, args)
    try:
        compiled = scriptc.script(fn)
    except scriptc.CompileError as e:
        return ("CompileError", f"scriptc.CompileError on a valid program: {e}")
    except Exception as e:  # internal compiler crash
        return (
            f"compile crash {type(e).__name__}",
            "scriptc.script crashed:\n" + "".join(traceback.format_exception(type(e), e, e.__traceback__)),
        )

    for label, call in (("compiled f(*args)", compiled), ("f.interpret(*args)", compiled.interpret)):
        got, got_out = fuzzgen.run_captured(call, args)
        if expected[0] == "exc":
            ok = got[0] == "exc" and got[1] is expected[1]
        else:
            ok = got[0] == "ok" and _same(expected[1], got[1])
        if not ok:
            sig = f"{label} result: " + (got[1].__name__ if got[0] == "exc" else "value")
            return (sig, f"{label}: result mismatch\n  CPython: {_describe(expected)}\n  scriptc: {_describe(got)}")
        if got_out != expected_out:
            return (f"{label} stdout", f"{label}: stdout mismatch\n  CPython: {expected_out!r}\n  scriptc: {got_out!r}")
    return None


def _valid_under_cpython(prog, args):
    """The reducer may only keep programs that CPython runs cleanly, in range,
    returning values of the annotated types."""
    try:
        if not fuzzgen.in_range(prog, args):
            return False
        fn = fuzzgen.load(prog)
        outcome, _ = fuzzgen.run_captured(fn, args)
    except Exception:  # noqa: BLE001 - SyntaxError, NameError, ...
        return False
    if outcome[0] != "ok" or not isinstance(outcome[1], tuple):
        return False
    ann = ast.parse(prog.source).body[0].returns
    want = [ast.unparse(e) for e in ann.slice.elts] if isinstance(ann.slice, ast.Tuple) else [ast.unparse(ann.slice)]
    return [type(v).__name__ for v in outcome[1]] == want


def reduce_case(prog, args, signature, time_limit=REDUCE_SECONDS):
    def still_fails(src):
        cand = fuzzgen.Program(src, prog.params, prog.ret_types)
        if not _valid_under_cpython(cand, args):
            return False
        res = find_mismatch(cand, args)
        return res is not None and res[0] == signature

    return fuzzgen.reduce_source(prog.source, still_fails, time_limit)


def _is_final_run():
    try:
        from hypothesis.control import current_build_context

        return bool(current_build_context().is_final)
    except Exception:  # noqa: BLE001 - not inside Hypothesis / API changed
        return True


def check_program(prog, args):
    """Assert that scriptc agrees with CPython on ``prog(*args)``."""
    # Programs are built to stay in range; this is the guarantee (64-bit ints).
    assume(fuzzgen.in_range(prog, args))
    res = find_mismatch(prog, args)
    if res is None:
        return
    signature, message = res
    message += _context(prog, args)
    if REDUCE_SECONDS > 0 and _is_final_run():
        reduced = reduce_case(prog, args, signature)
        if reduced != prog.source:
            red = fuzzgen.Program(reduced, prog.params, prog.ret_types)
            message += (
                "\n=== automatically reduced reproducer (same failure) ===\n"
                + find_mismatch(red, args)[1]
                + _context(red, args)
            )
    pytest.fail(message, pytrace=False)


# Hypothesis' own shrinker is slow on these programs (minutes); by default we
# skip it and run the AST reducer above once, on the final failing example.
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + (
    [Phase.shrink] if os.environ.get("SCRIPTC_FUZZ_SHRINK") == "1" else []
)


@settings(
    max_examples=CI_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SUPPRESS,
    phases=_PHASES,
    report_multiple_bugs=False,
)
@given(fuzzgen.cases(prints=PRINTS))
def test_interpreter_matches_cpython(case):
    check_program(*case)


@pytest.mark.slow
@settings(
    max_examples=SLOW_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SUPPRESS,
    phases=_PHASES,
    report_multiple_bugs=False,
)
@given(fuzzgen.cases(prints=PRINTS))
def test_interpreter_matches_cpython_slow(case):
    check_program(*case)


@settings(
    max_examples=CI_EXAMPLES // 2,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SUPPRESS,
    phases=_PHASES,
    report_multiple_bugs=False,
)
@given(fuzzgen.cases(extended=True, prints=PRINTS))
def test_extended_matches_cpython(case):
    """Beyond the core subset: maybe-unbound locals and loop variables read
    after the loop (UnboundLocalError must match), tuple unpacking, ``**``,
    bitwise operators."""
    check_program(*case)


@pytest.mark.slow
@settings(
    max_examples=SLOW_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SUPPRESS,
    phases=_PHASES,
    report_multiple_bugs=False,
)
@given(fuzzgen.cases(extended=True, prints=PRINTS))
def test_extended_matches_cpython_slow(case):
    check_program(*case)


# ---------------------------------------------------------------------------
# The generator itself must not silently degrade into trivial programs.


def _features(source):
    tree = ast.parse(source)
    fn = tree.body[0]
    found = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.For):
            found.add("for")
            if len(node.iter.args) == 3:
                found.add("range3")
        elif isinstance(node, ast.While):
            found.add("while")
        elif isinstance(node, ast.Break):
            found.add("break")
        elif isinstance(node, ast.Continue):
            found.add("continue")
        elif isinstance(node, ast.Return) and node is not fn.body[-1]:
            found.add("early_return")
        elif isinstance(node, ast.If) and node.orelse:
            found.add("else")
        elif isinstance(node, ast.AugAssign):
            found.add("augassign")
        elif isinstance(node, ast.IfExp):
            found.add("ifexp")
        elif isinstance(node, ast.BoolOp):
            found.add("boolop")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            found.add("floordiv_mod")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found.add("truediv")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            found.add(node.func.id)  # print, abs, min, max, int, float
            if node.func.id == "print" and node.keywords:
                found.add("print_kw")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found.add("math." + node.func.attr)

    # nesting depth of loops
    def depth(node, d=0):
        here = d + isinstance(node, (ast.For, ast.While))
        return max([here] + [depth(c, here) for c in ast.iter_child_nodes(node)])

    if depth(fn) >= 2:
        found.add("nested_loops")
    return found


REQUIRED = (
    "for",
    "range3",
    "while",
    "break",
    "continue",
    "early_return",
    "else",
    "augassign",
    "ifexp",
    "boolop",
    "floordiv_mod",
    "truediv",
    "print",
    "print_kw",
    "abs",
    "min",
    "max",
    "int",
    "float",
    "math.floor",
    "math.ceil",
    "math.sqrt",
    "nested_loops",
)


def test_generator_produces_rich_programs():
    cases = []

    @settings(max_examples=200, deadline=None, derandomize=True, database=None, suppress_health_check=_SUPPRESS)
    @given(fuzzgen.cases())
    def collect(case):
        cases.append(case)

    collect()
    assert len(cases) >= 150
    counts = {k: 0 for k in REQUIRED}
    in_range = 0
    for prog, args in cases:
        feats = _features(prog.source)
        for k in REQUIRED:
            counts[k] += k in feats
        # valid, terminating, non-raising under plain CPython
        fn = fuzzgen.load(prog)
        outcome, _ = fuzzgen.run_captured(fn, args)
        assert outcome[0] == "ok", _describe(outcome) + _context(prog, args)
        assert [type(v).__name__ for v in outcome[1]] == prog.ret_types
        in_range += fuzzgen.in_range(prog, args)
    rare = {k: c for k, c in counts.items() if c < 0.05 * len(cases)}
    assert not rare, f"constructs too rare in {len(cases)} programs: {rare}"
    assert in_range >= 0.9 * len(cases), f"only {in_range}/{len(cases)} in range"


def test_harness_captures_and_loads(tmp_path):
    prog = fuzzgen.Program(
        "def fn(a: int, x: float) -> tuple[int, float]:\n"
        "    print(a, x, sep='|', end='!')\n"
        "    return (a + 1, x * 2.0)\n",
        [("a", "int"), ("x", "float")],
        ["int", "float"],
    )
    fn = fuzzgen.load(prog, tmp_path)
    import inspect

    assert "print(a, x" in inspect.getsource(fn)
    outcome, out = fuzzgen.run_captured(fn, (3, -0.0))
    assert outcome == ("ok", (4, -0.0)) and out == "3|-0.0!"
    assert _same((4, -0.0), outcome[1]) and not _same((4, 0.0), outcome[1])
    assert _same((math.nan,), (float("nan"),)) and not _same((1,), (1.0,))
    big = fuzzgen.Program(
        "def fn(a: int) -> tuple[int]:\n    for i in range(7):\n        a = a * a\n    return (a,)\n",
        [("a", "int")],
        ["int"],
    )
    assert fuzzgen.in_range(big, (3,)) is False
    assert fuzzgen.in_range(big, (1,)) is True
