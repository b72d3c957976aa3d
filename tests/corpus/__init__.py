"""Differential test corpus for scriptc.

Every corpus function is an ``@scriptc.script`` function registered here
together with a factory for its inputs.  ``tests/e2e/test_corpus.py`` runs each
case twice -- once as plain CPython, once through scriptc -- and compares
the printed text, the return value and the mutation of array arguments.

Registering a case (right after the function; scripted functions take no
other decorators)::

    @scriptc.script
    def f(x: np.ndarray, n: int) -> float: ...

    case(f, lambda: (rng().random(5), 3))

``case`` may be called several times to run the same function on several
inputs; the extra cases get the ids ``f#2``, ``f#3``, ...  ``rtol`` / ``atol`` allow a
tolerance for float results whose evaluation order may legitimately differ
(NumPy's pairwise summation and BLAS in reductions / ``@``, NumPy's SIMD
transcendental kernels); every use states why.  Without ``rtol`` the
comparison is exact (including the sign of zeros and nan positions).

``raises(f, ExcType, factory)`` registers an error case: CPython must raise
``ExcType`` and the compiled function must raise the same exception type.

Modules are imported lazily by :func:`load_all` so that a CompileError in
one module does not hide the cases of the others.
"""

import importlib
import traceback

import numpy as np

MODULES = (
    "scalar_control",
    "array_loops",
    "vectorized",
    "calls_prints",
    "edge_scalars",
    "edge_arrays",
    "errors",
    "builtins_statements",
    "loop_rebinding",
    "error_order",
    "stores",
)


class Case:
    def __init__(self, fn, args_factory, rtol=None, atol=0.0, exc=None):
        self.fn = fn
        self.args_factory = args_factory
        self.rtol = rtol
        self.atol = atol
        self.exc = exc
        self.id = None

    @property
    def name(self):
        return getattr(self.fn, "__name__", None) or self.fn.py_func.__name__

    def __repr__(self):
        return f"Case({self.id})"


CASES = []  # normal cases: outputs must match
ERROR_CASES = []  # cases where CPython raises; scriptc must raise the same type
_ids = {}


def _register(lst, c):
    n = _ids.get(c.name, 0) + 1
    _ids[c.name] = n
    c.id = c.name if n == 1 else f"{c.name}#{n}"
    lst.append(c)


def case(fn, args_factory, rtol=None, atol=0.0):
    """Register the scripted function ``fn`` with an inputs factory."""
    _register(CASES, Case(fn, args_factory, rtol=rtol, atol=atol))
    return fn


def raises(fn, exc, args_factory):
    """Register an error case: CPython raises ``exc`` on these inputs."""
    _register(ERROR_CASES, Case(fn, args_factory, exc=exc))
    return fn


def rng(seed=0):
    return np.random.default_rng(seed)


_loaded = None


def load_all():
    """Import every corpus module; return {module: traceback text} for failures."""
    global _loaded
    if _loaded is None:
        _loaded = {}
        for m in MODULES:
            try:
                importlib.import_module(f"{__name__}.{m}")
            except Exception:  # CompileError at decoration time, etc.
                _loaded[m] = traceback.format_exc()
    return _loaded
