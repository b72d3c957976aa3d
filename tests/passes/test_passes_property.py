"""Property tests of the classic passes: on random programs (``fuzzgen``) and on the differential corpus, the
reference interpreter gives the same result, printed text, exception (type and message) and array mutations
before and after each pass alone and after the whole list; the graph verifies after every pass.

SCRIPTC_PASS_EXAMPLES sets the bounded CI count; the ``slow`` variant (``pytest -m slow``) runs
SCRIPTC_PASS_SLOW_EXAMPLES."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings

import scriptc

from tests import fuzzgen
from tests.passes.test_passes import PIPELINE, apply, frontend, outcome

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import corpus  # noqa: E402  (the same module objects test_corpus.py uses: compiled once)

CI_EXAMPLES = int(os.environ.get("SCRIPTC_PASS_EXAMPLES", "16"))
SLOW_EXAMPLES = int(os.environ.get("SCRIPTC_PASS_SLOW_EXAMPLES", "1500"))

SINGLE = [
    "inline",
    "constant-propagation",
    "dce",
    "cse",
    "canonicalize",
    "licm",
    "unswitch",
    "unroll",
    "dead-loop-carried",
]
CONFIGS = [[p] for p in SINGLE] + [
    PIPELINE,
    ["unroll", "constant-propagation", "canonicalize", "cse", "licm", "dead-loop-carried", "dce"],
]

_SETTINGS = dict(
    deadline=None,
    derandomize=True,
    database=None,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
)


def check_case(case):
    prog, args = case
    assume(fuzzgen.in_range(prog, args))
    fn = fuzzgen.load(prog)
    try:
        compiled = scriptc.script(fn)
        graph = frontend(compiled, *args)
    except scriptc.CompileError:
        assume(False)  # the frontend's problem, reported by test_fuzz
    expected = [outcome(graph, args)]
    for passes in CONFIGS:
        try:
            apply(passes, graph, [args], expected)
        except AssertionError as e:
            raise AssertionError(f"{passes}: {e}\n--- source ---\n{prog.source}--- args ---\n{args!r}") from None


@settings(max_examples=CI_EXAMPLES, **_SETTINGS)
@given(fuzzgen.cases())
def test_passes_preserve_interpreter_on_random_programs(case):
    check_case(case)


@settings(max_examples=CI_EXAMPLES // 2, **_SETTINGS)
@given(fuzzgen.cases(extended=True))
def test_passes_preserve_interpreter_on_extended_programs(case):
    check_case(case)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, **_SETTINGS)
@given(fuzzgen.cases())
def test_passes_preserve_interpreter_on_random_programs_slow(case):
    check_case(case)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, **_SETTINGS)
@given(fuzzgen.cases(extended=True))
def test_passes_preserve_interpreter_on_extended_programs_slow(case):
    check_case(case)


# -- the differential corpus -------------------------------------------------------------------------------
corpus.load_all()
ALL_CASES = list(corpus.CASES) + list(corpus.ERROR_CASES)


@pytest.mark.parametrize("c", ALL_CASES, ids=lambda c: c.id)
def test_pipeline_preserves_interpreter_on_corpus(c):
    args = c.args_factory()
    graph = frontend(c.fn, *args)  # every corpus function compiles (its errors are run-time errors)
    apply(PIPELINE, graph, [args])
