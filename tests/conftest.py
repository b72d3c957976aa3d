"""Every graph the suite compiles is also printed, parsed back and printed again: the two texts must match,
and the parsed graph must verify (the printer/parser round trip on every graph the tests produce)."""

import os

os.environ["SCRIPTC_VERIFY"] = "1"  # verify the graph after every pass
# O3 before each first call, as before tiered compilation: each test runs one known tier. tests/cpu/test_tiers.py
# turns tiers on and runs the corpus in both, across fork, process pools and the on-disk cache
# (SCRIPTC_TIERS=1 runs them with tiers; tests that read the cache's statistics right after a first call then
# fail, as its entries are written when O3 lands.)
os.environ.setdefault("SCRIPTC_TIERS", "0")

# Hypothesis draws the same examples on every run (each test's are derived from its name), so that a red CI
# run is a real regression, reproducible by running the test again; `make test-slow` explores with fresh random
# draws (SCRIPTC_HYPOTHESIS=explore).
from hypothesis import settings  # noqa: E402

settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("SCRIPTC_HYPOTHESIS", "repeatable"))

import scriptc.function  # noqa: E402

pytest_plugins = ["tests.gpu_support"]  # its fixtures (emulator, counting) for every test file
from scriptc.ir import parse, print_graph, verify  # noqa: E402

ROUND_TRIPS = {"count": 0}
_verify = scriptc.function.verify


def verify_and_round_trip(graph):
    _verify(graph)
    text = print_graph(graph)
    again = parse(text)
    verify(again)
    assert print_graph(again) == text, f"round trip changed the graph:\n{text}\n---\n{print_graph(again)}"
    ROUND_TRIPS["count"] += 1
    return graph


scriptc.function.verify = verify_and_round_trip
_pipeline = scriptc.compiled.pipeline


class RoundTripPipeline:
    """The pass pipeline, with the optimized graph round-tripped too."""

    def __init__(self, *args, **kwargs):
        self.inner = _pipeline(*args, **kwargs)

    def run(self, graph):
        return verify_and_round_trip(self.inner.run(graph))


scriptc.compiled.pipeline = RoundTripPipeline
