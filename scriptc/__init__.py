"""scriptc: a script-mode compiler for numerical Python.

    @scriptc.script
    def f(x: np.ndarray) -> np.ndarray: ...
"""
from . import ops as _ops  # noqa: F401  (fills the operator registry)
from .errors import CompileError
from .function import ScriptFunction, script

__all__ = ["CompileError", "ScriptFunction", "script"]
__version__ = "0.1.0"
