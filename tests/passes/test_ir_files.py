"""IR tests as files, the way LLVM's lit runs ``opt``: each ``tests/filecheck/*.ir`` holds a graph as the printer
writes it and, in whole-line comments, what to run and what to expect:

    # RUN: scriptc dump %s --passes=licm
    # ARGS: (2, 5, 4)
    # CHECK: %m : int = aten::mul(%a, %b)

``RUN`` is the ``scriptc dump`` command line (``%s``: the file); its output is checked with FileCheck against the
file's ``CHECK`` lines (at least one that is not ``CHECK-NOT``). Each ``ARGS`` line is a tuple of Python numbers
(``float("nan")`` allowed): the reference interpreter runs the graph before and after the passes on it, and both
must compute the same thing. The output must verify and parse back to the same text.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from scriptc.cli import main
from scriptc.ir.parser import parse
from tests.passes.test_passes import assert_same_outcome, check_graph, outcome
from tests.util import filecheck

FILES = sorted((Path(__file__).resolve().parents[1] / "filecheck").glob("*.ir"))


def directives(text: str, name: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(rf"^\s*#\s*{name}:(.*)$", text, re.M)]


def test_there_are_ir_files():
    assert len(FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_ir_file(path: Path):
    text = path.read_text()
    (run,) = directives(text, "RUN")
    argv = shlex.split(run.replace("%s", str(path)))
    assert argv[:2] == ["scriptc", "dump"], run
    checks = [line for line in text.splitlines() if re.match(r"\s*#\s*CHECK", line)]
    assert any(not re.match(r"\s*#\s*CHECK-NOT:", line) for line in checks), "only CHECK-NOT lines: cannot fail"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv[1:]) == 0
    filecheck(out.getvalue(), "\n".join(checks))
    check_graph(parse(out.getvalue()))  # the output verifies and prints back to the same text
    args_lines = directives(text, "ARGS")
    if args_lines:
        before, after = parse(text), parse(out.getvalue())
        for line in args_lines:
            args = eval(line, {"__builtins__": {}}, {"float": float})  # a tuple of numbers, written by us
            assert_same_outcome(outcome(before, args), outcome(after, args), f"{path.name} on {args!r}")
