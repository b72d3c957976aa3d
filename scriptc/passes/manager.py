"""The pass manager: named graph-to-graph passes, a default pipeline, and LLVM-style instrumentation.

A pass is a function ``run(graph) -> bool`` that rewrites the graph in place and says whether it changed
anything; ``@register("name")`` adds it to ``PASSES``, and its docstring (what it does, what it assumes) is
what ``scriptc dump --list-passes`` shows. The manager runs a list of passes, optionally verifying after each
(tests always do), printing the IR after all or chosen passes, and timing each pass (``--time-passes``).
"""

from __future__ import annotations

import sys
import time
from typing import Callable

from ..ir.records import record, field
from ..ir.core import Graph
from ..ir.printer import print_graph
from ..ir.verifier import verify


@record
class Pass:
    name: str
    run: Callable[[Graph], bool]

    @property
    def doc(self) -> str:
        return (self.run.__doc__ or "").strip()


PASSES: dict[str, Pass] = {}


def register(name: str):
    def deco(fn):
        if name in PASSES:
            raise ValueError(f"pass {name} registered twice")
        PASSES[name] = Pass(name, fn)
        return fn

    return deco


# The default pipeline, in order; names not registered (yet) are skipped.
DEFAULT_PIPELINE = [
    "inline",
    "canonicalize",
    "constant-propagation",
    "cse",
    "licm",
    "unswitch",
    "time-loop-fusion",
    "bounds-check",
    "unroll",
    "dead-loop-carried",
    "canonicalize",
    "constant-propagation",
    "cse",
    "dce",
    "shape-inference",
    "fusion",
    "buffer-reuse",
    "dce",
]


@record
class PassManager:
    passes: list[str] = field(default_factory=lambda: list(DEFAULT_PIPELINE))
    verify_each: bool = False
    print_after: set[str] = field(default_factory=set)
    print_after_all: bool = False
    time_passes: bool = False
    out: object = None
    timings: list[tuple[str, float]] = field(default_factory=list)

    def run(self, graph: Graph) -> Graph:
        out = self.out or sys.stderr
        for name in self.passes:
            p = PASSES.get(name)
            if p is None:
                if name in DEFAULT_PIPELINE:
                    continue
                raise KeyError(f"unknown pass {name!r}; known: {', '.join(sorted(PASSES))}")
            start = time.perf_counter()
            p.run(graph)
            self.timings.append((name, time.perf_counter() - start))
            if self.verify_each:
                verify(graph)
            if self.print_after_all or name in self.print_after:
                print(f"// -----// IR after {name} //----- //", file=out)
                print(print_graph(graph), end="", file=out)
        if self.time_passes:
            print(self.timing_report(), file=out)
        return graph

    def timing_report(self) -> str:
        total = sum(t for _, t in self.timings) or 1e-12
        lines = [
            "===" + "-" * 60 + "===",
            "  Pass execution timing report",
            "===" + "-" * 60 + "===",
            f"  Total: {total * 1e3:.3f} ms",
            "   Wall time (ms)  (%)    Name",
        ]
        for name, t in self.timings:
            lines.append(f"   {t * 1e3:12.3f}  {100 * t / total:5.1f}%  {name}")
        return "\n".join(lines)
