"""The command line: scriptc dump FILE:FUNC [--types ...]."""

import subprocess
import sys

import pytest

from scriptc.cli import main, parse_arg_type
from scriptc.ir import FLOAT, TensorType
from tests.util import filecheck

SOURCE = """import numpy as np

def kernel(x: np.ndarray, n: int) -> float:
    s = 0.0
    for i in range(n):
        s += x[i, 0]
    return s

def broken(x: int) -> int:
    return {x}
"""


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "kern.py"
    path.write_text(SOURCE)
    return path


def test_parse_arg_types():
    assert parse_arg_type("float") == FLOAT
    assert parse_arg_type("float64[2,3]") == TensorType("float64", None, (2, 3))
    assert parse_arg_type("int32[*]") == TensorType("int32", 1)


def test_dump_specialized(src, capsys):
    assert main(["dump", f"{src}:kernel", "--types", "float64[4,2]", "int", "--no-opt"]) == 0
    filecheck(
        capsys.readouterr().out,
        """
CHECK: graph(%x : Double(4, 2),
CHECK-NEXT: %n : int):
CHECK: prim::Loop(%n,
CHECK: aten::getitem(%x, %i,
""",
    )


def test_dump_runs_the_pipeline_with_instrumentation(src, capsys):
    assert (
        main(["dump", f"{src}:kernel", "--types", "float64[4,2]", "int", "--print-after", "unroll", "--time-passes"])
        == 0
    )
    filecheck(
        capsys.readouterr().out,
        """
CHECK: // -----// IR after unroll //----- //
CHECK: graph(%x : Double(4, 2),
CHECK: aten::getitem(%x,
CHECK: Pass execution timing report
CHECK: inline
CHECK: fusion
""",
    )
    with pytest.raises(SystemExit, match="unknown pass 'nonsense'"):
        main(["dump", f"{src}:kernel", "--types", "float64[4,2]", "int", "--passes", "dce,nonsense"])


def test_dump_reports_compile_errors_without_traceback(src, capsys):
    assert main(["dump", f"{src}:broken"]) == 1
    err = capsys.readouterr().err
    assert "kern.py:10:12: error: sets are not supported" in err and "Traceback" not in err


def test_python_dash_m_scriptc(src):
    r = subprocess.run(
        [sys.executable, "-m", "scriptc", "dump", f"{src}:kernel", "--types", "float32[*,*]", "int"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "graph(%x : Float(*, *)," in r.stdout


def test_dump_llvm_and_asm(src, capsys):
    assert main(["dump", f"{src}:kernel", "--types", "float64[*,*]", "int", "--emit=llvm"]) == 0
    filecheck(
        capsys.readouterr().out,
        """
CHECK: define {{.*}}@{{.*}}kernel
CHECK: load double
""",
    )
    assert main(["dump", f"{src}:kernel", "--types", "float64[*,*]", "int", "--emit=asm"]) == 0
    out = capsys.readouterr().out
    assert "kernel" in out and ("ret" in out or "jmp" in out)
