"""What importing scriptc, decorating a function and a first call import: only what they need (each module a
cold process reads costs it time)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

KERNELS = """
import numpy as np
import scriptc

@scriptc.script
def poly(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x * 0.5 + 1.0
    return x
"""


def run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_and_decoration_load_no_pass_and_no_backend(tmp_path):
    # `import scriptc` and decorating a function (which checks it) leave the passes, the backends and LLVM to
    # the first compile: a decorated function never called costs none of them
    (tmp_path / "kernels.py").write_text(KERNELS)
    code = (
        "import sys\nsys.path.insert(0, {where!r})\nimport kernels\n"
        "print(sorted(m for m in sys.modules if m.startswith(('scriptc.passes', 'scriptc.backend', 'llvmlite'))))"
    )
    assert run(code.format(where=str(tmp_path))) == "[]\n"


def test_import_loads_no_compiler():
    # `import scriptc` is the decorator and prange; the frontend, the IR and the operator registry come with the
    # first decoration, which needs them (and `scriptc.ScriptFunction` on first use)
    code = (
        "import sys, scriptc\nprint(sorted(m for m in sys.modules if m.startswith('scriptc')))\n"
        "print(scriptc.ScriptFunction.__name__, 'scriptc.ops' in sys.modules)"
    )
    assert run(code) == "['scriptc', 'scriptc.errors', 'scriptc.parallel', 'scriptc.version']\nScriptFunction True\n"


def test_a_first_call_imports_no_optional_numpy_module(tmp_path):
    # numpy.ma (20 ms) and the like: an argument check that names them must not import them (a masked array
    # passed was made by a process that imported numpy.ma)
    (tmp_path / "kernels.py").write_text(KERNELS)
    code = (
        "import sys\nsys.path.insert(0, {where!r})\nimport numpy as np\nbefore = set(sys.modules)\n"
        "import kernels\nkernels.poly(np.arange(4.0), 3)\n"
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('numpy')))"
    )
    assert run(code.format(where=str(tmp_path))) == "[]\n"
