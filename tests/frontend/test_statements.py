"""Statements a numba/TorchScript user expects: assert, raise, default parameter values and keyword
arguments, recursion, forward references; and errors a user can act on (short tracebacks, dump without
--types). Each construct runs compiled (native and through the interpreter) against CPython."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest

import scriptc
from tests.modules import load_module
from tests.util import assert_matches_python

SOURCE = """
@scriptc.script
def check(x: int) -> int:
    assert x > 0, f"x must be positive, got {x}"
    assert x != 7
    assert x != 8, x * 2
    if x > 100:
        raise ValueError(f"too big: {x} > {100}")
    if x == 50:
        raise KeyError
    if x == 51:
        raise IndexError("fifty-one")
    if x == 52:
        raise RuntimeError()
    if x == 53:
        raise NotImplementedError("not yet", x)
    if x == 54:
        raise ZeroDivisionError(f"{x / 4:.3f}")
    return x * 2


@scriptc.script
def only_raises(x: float) -> float:
    raise ArithmeticError(f"{x}")


@scriptc.script
def raise_in_loop(x: np.ndarray) -> int:
    for i in range(len(x)):
        if x[i] < 0:
            raise ValueError(f"negative at {i}: {x[i]}")
    total = 0
    while True:
        total += 1
        if total > 3:
            raise OverflowError
    return total


@scriptc.script
def else_raise(x: int) -> int:
    if x > 0:
        y = x
    else:
        raise TypeError("x must be positive")
    return y + 1


@scriptc.script
def scale(x: np.ndarray, factor: float = 2.0, shift: int = 1, flip: bool = False) -> np.ndarray:
    y = x * factor + shift
    if flip:
        y = -y
    return y


@scriptc.script
def uses_defaults(x: np.ndarray, n: int) -> np.ndarray:
    return scale(x, shift=n) + scale(x) + scale(x, 0.5, flip=True) + scale(factor=3.0, x=x)


@scriptc.script
def fib(n: int):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


@scriptc.script
def fact_rec(n: int) -> float:
    if n <= 1:
        return 1.0
    return n * fact_rec(n - 1)


@scriptc.script
def is_even(n: int) -> bool:
    if n == 0:
        return True
    return is_odd(n - 1)


@scriptc.script
def is_odd(n: int) -> bool:
    if n == 0:
        return False
    return is_even(n - 1)


@scriptc.script
def depth(n: int) -> int:
    if n == 0:
        return 0
    return depth(n - 1) + 1


@scriptc.script
def array_sum_rec(x: np.ndarray, i: int) -> float:
    if i == len(x):
        return 0.0
    return x[i] + array_sum_rec(x, i + 1)


@scriptc.script
def c(x: int) -> int:
    return a(x) + 1


@scriptc.script
def a(x: int) -> int:
    return b(x) * 2


@scriptc.script
def b(x: int) -> int:
    return x - 3
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_module(tmp_path_factory.mktemp("statements"), SOURCE)


def both(fn, *args):
    assert_matches_python(fn, *args)
    assert_matches_python(fn, *args, runner=fn.interpret)


def outcome(fn, *args, **kwargs):
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return type(e), e.args


@pytest.mark.parametrize("x", [3, -1, 0, 7, 8, 200, 50, 51, 52, 53, 54, 100])
def test_assert_and_raise_match_cpython(mod, x):
    expected = outcome(mod.check.py_func, x)
    assert outcome(mod.check, x) == expected
    assert outcome(mod.check.interpret, x) == expected


def test_assert_without_message_has_no_args(mod):
    with pytest.raises(AssertionError) as info:
        mod.check(7)
    assert info.value.args == ()
    with pytest.raises(AssertionError, match="x must be positive, got -4"):
        mod.check(-4)


def test_raise_ends_paths(mod):
    for fn in (mod.only_raises, mod.only_raises.interpret):
        assert outcome(fn, 1.5) == outcome(mod.only_raises.py_func, 1.5)
    for x in (np.array([1.0, 2.0]), np.array([1.0, -2.5])):
        both(mod.raise_in_loop, x)
    for x in (3, -3):
        both(mod.else_raise, x)


def test_defaults_and_keywords_from_python(mod):
    x = np.arange(4.0)
    for args, kwargs in [
        ((x,), {}),
        ((x, 3.0), {}),
        ((x,), {"shift": 5}),
        ((x,), {"flip": True, "factor": 1.5}),
        ((), {"x": x, "shift": 2}),
        ((x, 1.0, 2, True), {}),
    ]:
        expected = mod.scale.py_func(*args, **kwargs)
        for fn in (mod.scale, mod.scale.interpret):
            np.testing.assert_array_equal(fn(*args, **kwargs), expected)


def test_keyword_binding_errors_are_cpythons(mod):
    x = np.arange(3.0)
    for args, kwargs in [((x,), {"nope": 1}), ((x, 1.0), {"factor": 2.0}), ((), {}), ((x, 1.0, 2, True, 5), {})]:
        expected = outcome(mod.scale.py_func, *args, **kwargs)
        assert outcome(mod.scale, *args, **kwargs) == expected
        assert expected[0] is TypeError


def test_defaults_and_keywords_between_scripted_functions(mod):
    both(mod.uses_defaults, np.arange(5.0), 4)
    assert "CallFunction" not in str(mod.uses_defaults.graph_for(np.arange(5.0), 4))  # inlined


def test_recursion(mod):
    for n in (0, 1, 2, 10, 20):
        both(mod.fib, n)
        both(mod.fact_rec, n)
    for n in (0, 5, 10, 11):
        both(mod.is_even, n)
        both(mod.is_odd, n)
    both(mod.array_sum_rec, np.array([1.0, 2.5, -3.0]), 0)
    assert "prim::CallFunction[fn=fib" in str(mod.fib.graph_for(5))  # a real call in native code


def test_unannotated_recursion_takes_its_type_from_the_other_paths(mod):
    assert mod.fib(10) == 55 and type(mod.fib(10)) is int
    assert "-> (" in str(mod.fib.graph) and "%n : int" in str(mod.fib.graph)


def test_deep_recursion_raises_recursion_error_not_a_crash(mod):
    assert mod.depth(500) == 500
    for fn in (mod.depth, mod.depth.interpret):
        with pytest.raises(RecursionError, match="maximum recursion depth exceeded"):
            fn(10000)
    assert mod.depth(300) == 300  # the depth counter is back to 0 after the error


DEEP = """
import sys, threading
import scriptc

@scriptc.script
def depth(n: int) -> int:
    if n == 0:
        return 0
    return 1 + depth(n - 1)

sys.setrecursionlimit(10 ** 7)
results = []

def run(n):
    try:
        results.append(depth(n))
    except RecursionError:
        results.append("RecursionError")

run(1000)
run(5 * 10 ** 6)
run(2000)
threading.stack_size(1 << 20)       # a thread with a smaller stack than the one the code was compiled on
thread = threading.Thread(target=run, args=(10 ** 6,))
thread.start()
thread.join()
print(results)
"""


def test_recursion_past_the_c_stack_raises_even_with_a_raised_limit(tmp_path):
    """CPython's frames are not on the C stack, so sys.setrecursionlimit(10**7) let native frames overflow it:
    a segfault at depth 200,000. The thread's own stack bounds it too (run in a child: a crash is a failure,
    not the end of the suite)."""
    (tmp_path / "deep.py").write_text(DEEP)
    run = subprocess.run(
        [sys.executable, str(tmp_path / "deep.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])),
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[1000, 'RecursionError', 2000, 'RecursionError']"


def test_recursion_without_a_findable_type_asks_for_an_annotation(tmp_path):
    m = load_module(
        tmp_path,
        "@scriptc.script\ndef f(x: int, n: int):\n    if n == 0:\n"
        "        return x, x\n    a, b = f(x, n - 1)\n    return b, a\n",
    )
    with pytest.raises(scriptc.CompileError, match="cannot find the return type of recursive function 'f'") as e:
        m.f(1, 3)
    assert "annotate its return type" in e.value.hint
    m2 = load_module(
        tmp_path,
        "@scriptc.script\ndef f(x: np.ndarray, n: int) -> np.ndarray:\n    if n == 0:\n"
        "        return x\n    return f(x, n - 1) * 2.0\n",
    )
    np.testing.assert_array_equal(m2.f(np.ones(2), 3), np.full(2, 8.0))
    np.testing.assert_array_equal(m2.f.interpret(np.ones(2), 3), np.full(2, 8.0))


def test_forward_reference_two_levels_deep(mod):
    # c calls a, a calls b, and b is defined after both: decorating c used to fail with "name 'b' is not defined"
    both(mod.c, 10)
    assert mod.c(10) == 15
    assert "aten::sub" in str(mod.c.graph)


def test_default_must_match_its_annotation(tmp_path):
    with pytest.raises(scriptc.CompileError, match="default value of parameter 'n' must be int") as e:
        load_module(tmp_path, "@scriptc.script\ndef f(x: float, n: int = 1.5) -> float:\n    return x * n\n")
    assert e.value.lineno == 5


# -- errors a user can act on ------------------------------------------------------------------------------------

STATEMENT_ERRORS = [
    ("def f(x: int) -> int:\n    raise\n", "bare 'raise'", "raise ValueError"),
    ("def f(x: int) -> int:\n    raise ValueError('a') from None\n", "'raise ... from ...'", "alone"),
    ("def f(x: int) -> int:\n    raise x\n", "only builtin exception types", "ValueError"),
    ("def f(x: int) -> int:\n    raise ValueError(msg='a')\n", "must be positional", None),
    (
        "def f(x: int) -> int:\n    return g(x, y=1)\n@scriptc.script\ndef g(x: int) -> int:\n    return x\n",
        "unexpected keyword argument 'y'",
        None,
    ),
    (
        "def f(x: int) -> int:\n    return g()\n@scriptc.script\ndef g(x: int) -> int:\n    return x\n",
        "missing required argument 'x'",
        None,
    ),
]


@pytest.mark.parametrize("source,message,hint", STATEMENT_ERRORS, ids=[m for _, m, _ in STATEMENT_ERRORS])
def test_statement_errors(tmp_path, source, message, hint):
    m = load_module(tmp_path, source)
    with pytest.raises(scriptc.CompileError) as info:
        scriptc.script(m.f)(1)
    e = info.value
    assert message in e.reason
    assert e.lineno >= 4 and e.col >= 1 and e.filename.endswith(".py")
    assert hint is None or hint in (e.hint or "")


def test_compile_error_traceback_is_short(tmp_path):
    m = load_module(tmp_path, "def f(x: np.ndarray) -> float:\n    return sorted(x)\n")
    try:
        scriptc.script(m.f)
    except scriptc.CompileError as e:
        frames = traceback.extract_tb(e.__traceback__)
        assert e.__cause__ is None and e.__suppress_context__
    else:
        raise AssertionError("no CompileError")
    assert len(frames) <= 2 and frames[0].name == "test_compile_error_traceback_is_short"
    # the same on the first call, where dtype-dependent errors surface
    m2 = load_module(tmp_path, "def f(x: np.ndarray) -> float:\n    return sum(x)\n")
    g = scriptc.script(m2.f)
    try:
        g(np.zeros((2, 2)))
    except scriptc.CompileError as e:
        assert len(traceback.extract_tb(e.__traceback__)) <= 2


def test_scriptc_debug_keeps_internal_frames(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(
        "import numpy as np\nimport scriptc\n@scriptc.script\ndef f(x: np.ndarray) -> float:\n    return sorted(x)\n"
    )
    code = (
        "import runpy, sys\ntry:\n    runpy.run_path(sys.argv[1])\nexcept Exception as e:\n"
        "    import traceback; print(len(traceback.extract_tb(e.__traceback__)))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    short = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env)
    debug = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=dict(env, SCRIPTC_DEBUG="1")
    )
    assert int(debug.stdout) > int(short.stdout)


def test_graph_before_first_call(tmp_path):
    m = load_module(
        tmp_path,
        "@scriptc.script\ndef generic(x: np.ndarray, n: int) -> np.ndarray:\n"
        "    return x * n\n"
        "@scriptc.script\ndef typed(x: np.ndarray) -> float:\n    return sum(x)\n",
    )
    assert "%x : Tensor" in str(m.generic.graph)
    with pytest.raises(scriptc.function.GraphNeedsTypes, match="depends on its array arguments' dtypes"):
        m.typed.graph
    m.typed(np.zeros(3))
    assert "prim::Loop" in str(m.typed.graph)


def test_dump_without_types(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(
        "import numpy as np\nimport scriptc\n@scriptc.script\ndef generic(x: np.ndarray, n: int) -> "
        "np.ndarray:\n    return x * n\n@scriptc.script\ndef typed(x: np.ndarray) -> float:\n"
        "    return sum(x)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    ok = subprocess.run(
        [sys.executable, "-m", "scriptc", "dump", f"{path}:generic"], capture_output=True, text=True, env=env
    )
    assert ok.returncode == 0 and "%x : Tensor" in ok.stdout
    asks = subprocess.run(
        [sys.executable, "-m", "scriptc", "dump", f"{path}:typed"], capture_output=True, text=True, env=env
    )
    assert asks.returncode == 2 and "Traceback" not in asks.stderr
    assert asks.stderr.count("\n") == 1 and "--types" in asks.stderr and "float64[*]" in asks.stderr
