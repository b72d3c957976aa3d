"""Differential tests: every corpus function run by CPython and by scriptc
must print the same text, return the same value (same type) and mutate its
array arguments the same way.  See tests/corpus/__init__.py."""

import copy
import math
import os
import sys
import types

import numpy as np
import pytest

import scriptc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import corpus  # noqa: E402


class _CompileFailed:
    """Stands in for a corpus function whose decoration raised (CompileError,
    or an internal compiler error), so that the error is reported by that
    function's own test instead of hiding its whole module."""

    def __init__(self, fn, exc):
        self.py_func = fn
        self.__name__ = fn.__name__
        self.error = exc

    def __call__(self, *args):
        raise self.error

    interpret = __call__


def _load():
    real = scriptc.script

    def tolerant(fn):
        try:
            return real(fn)
        except Exception as e:  # noqa: BLE001
            return _CompileFailed(fn, e)

    scriptc.script = tolerant
    try:
        return corpus.load_all()
    finally:
        scriptc.script = real


LOAD_ERRORS = _load()


# ------------------------------------------------------------------ helpers


def _is_scripted(v):
    return isinstance(getattr(v, "py_func", None), types.FunctionType)


_pure_cache = {}


def pure_python(fn):
    """fn.py_func, but with every @scriptc.script function it can reach
    through its module globals replaced by its py_func, so that the
    reference output is computed by CPython alone (helpers included)."""
    py = fn.py_func
    g = py.__globals__
    key = id(g)
    if key not in _pure_cache:
        ng = dict(g)
        for name, v in g.items():
            if _is_scripted(v):
                f = v.py_func
                ng[name] = types.FunctionType(f.__code__, ng, f.__name__, f.__defaults__, f.__closure__)
        _pure_cache[key] = ng
    ng = _pure_cache[key]
    return types.FunctionType(py.__code__, ng, py.__name__, py.__defaults__, py.__closure__)


def _run(func, args, capfd):
    capfd.readouterr()
    try:
        result = func(*args)
    finally:
        sys.stdout.flush()
        out = capfd.readouterr().out
    return result, out


def _kind(v):
    if isinstance(v, (bool, np.bool_)):
        return bool
    if isinstance(v, (int, np.integer)):
        return int
    if isinstance(v, (float, np.floating)):
        return float
    return None


def assert_same(exp, act, rtol=None, atol=0.0, where="result"):
    """exp: CPython's value, act: scriptc's value."""
    if isinstance(exp, tuple):
        assert type(act) is tuple, f"{where}: expected tuple, got {type(act).__name__}: {act!r}"
        assert len(act) == len(exp), f"{where}: tuple length {len(act)} != {len(exp)}"
        for i, (e, a) in enumerate(zip(exp, act)):
            assert_same(e, a, rtol, atol, f"{where}[{i}]")
    elif isinstance(exp, np.ndarray):
        assert isinstance(act, np.ndarray), f"{where}: expected ndarray, got {type(act).__name__}: {act!r}"
        assert act.dtype == exp.dtype, f"{where}: dtype {act.dtype} != {exp.dtype}"
        assert act.shape == exp.shape, f"{where}: shape {act.shape} != {exp.shape}"
        if exp.dtype.kind in "fc":
            if rtol is None:
                ok = np.array_equal(exp, act, equal_nan=True) and np.array_equal(np.signbit(exp), np.signbit(act))
            else:
                ok = np.allclose(act, exp, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(exp, act)
        assert ok, f"{where}: arrays differ\nexpected:\n{exp!r}\nactual:\n{act!r}"
    elif exp is None:
        assert act is None, f"{where}: expected None, got {act!r}"
    elif _kind(exp) is not None:
        k = _kind(exp)
        if type(exp) in (bool, int, float):
            assert type(act) is type(exp), (
                f"{where}: expected {type(exp).__name__} {exp!r}, got {type(act).__name__} {act!r}"
            )
        else:
            # a NumPy scalar (np.float64 from a reduction or an element read)
            # may come back as the corresponding Python scalar (documented)
            assert type(act) is type(exp) or type(act) is k, (
                f"{where}: expected {type(exp).__name__} {exp!r}, got {type(act).__name__} {act!r}"
            )
        if k is float:
            if math.isnan(exp):
                assert math.isnan(act), f"{where}: expected nan, got {act!r}"
            elif rtol is None:
                assert exp == act and math.copysign(1.0, exp) == math.copysign(1.0, act), (
                    f"{where}: expected {exp!r}, got {act!r}"
                )
            else:
                assert math.isclose(exp, act, rel_tol=rtol, abs_tol=atol), (
                    f"{where}: expected {exp!r}, got {act!r} (rtol={rtol})"
                )
        else:
            assert exp == act, f"{where}: expected {exp!r}, got {act!r}"
    else:
        pytest.fail(f"{where}: unsupported value in corpus result: {exp!r}")


# -------------------------------------------------------------------- tests


@pytest.mark.parametrize("module", corpus.MODULES)
def test_corpus_module_imports(module):
    if module in LOAD_ERRORS:
        pytest.fail(f"importing corpus module {module!r} failed:\n{LOAD_ERRORS[module]}", pytrace=False)


def test_case_count():
    assert len(corpus.CASES) >= 70
    assert len(corpus.ERROR_CASES) >= 6


def check(c, runner, capfd):
    args = c.args_factory()
    a1 = copy.deepcopy(args)
    a2 = copy.deepcopy(args)
    exp, exp_out = _run(pure_python(c.fn), a1, capfd)
    act, act_out = _run(runner(c.fn), a2, capfd)
    assert act_out == exp_out, "printed text differs"
    assert_same(exp, act, c.rtol, c.atol)
    for i, (x1, x2) in enumerate(zip(a1, a2)):
        if isinstance(x1, np.ndarray):
            assert_same(x1, x2, c.rtol, c.atol, f"argument {i} after the call")


@pytest.mark.parametrize("c", corpus.CASES, ids=lambda c: c.id)
def test_compiled_matches_cpython(c, capfd):
    check(c, lambda fn: fn, capfd)


@pytest.mark.parametrize("c", corpus.CASES, ids=lambda c: c.id)
def test_interpreter_matches_cpython(c, capfd):
    check(c, lambda fn: fn.interpret, capfd)


@pytest.mark.parametrize("c", corpus.ERROR_CASES, ids=lambda c: c.id)
def test_compiled_raises_like_cpython(c, capfd):
    """Same exception type; also the same text printed and the same array
    mutations before the exception."""
    check_raises(c, c.fn, capfd)


@pytest.mark.parametrize("c", corpus.ERROR_CASES, ids=lambda c: c.id)
def test_interpreter_raises_like_cpython(c, capfd):
    check_raises(c, c.fn.interpret, capfd)


def check_raises(c, compiled, capfd):
    args = c.args_factory()
    a1 = copy.deepcopy(args)
    a2 = copy.deepcopy(args)
    capfd.readouterr()
    with pytest.raises(c.exc) as py_err:
        pure_python(c.fn)(*a1)
    sys.stdout.flush()
    exp_out = capfd.readouterr().out
    try:
        compiled(*a2)
    except Exception as e:  # noqa: BLE001
        assert type(e) is type(py_err.value), f"CPython raised {py_err.value!r}, scriptc raised {e!r}"
    else:
        pytest.fail(f"CPython raised {py_err.value!r}, scriptc raised nothing")
    finally:
        sys.stdout.flush()
        act_out = capfd.readouterr().out
    assert act_out == exp_out, "printed text before the exception differs"
    for i, (x1, x2) in enumerate(zip(a1, a2)):
        if isinstance(x1, np.ndarray):
            assert_same(x1, x2, where=f"argument {i} after the exception")
