"""Every construct outside the subset is a CompileError at decoration time (or, for errors that depend on array
dtypes, at the first call), naming file:line:col, showing the line with a caret, and giving a reason."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc
from tests.modules import load_module

# Line numbers below count the 3 header lines (imports) written before each source.


def compile_error(tmp_path, source, *args) -> scriptc.CompileError:
    mod = load_module(tmp_path, source.replace("@s\n", ""))
    with pytest.raises(scriptc.CompileError) as info:
        f = scriptc.script(mod.f)
        if args:
            f(*args)
    return info.value


CASES = [
    # (source of f, line, col, message fragment, call args or None)
    (
        "def f(x: int) -> int:\n    y = {v for v in range(x)}\n    return x\n",
        5,
        9,
        "set comprehensions are not supported",
    ),
    (
        "def f(x: int) -> int:\n    try:\n        x = 1\n    except ValueError:\n        pass\n    return x\n",
        5,
        5,
        "try/except is not supported",
    ),
    ("def f(x: int) -> int:\n    d = {1: 2}\n    return x\n", 5, 9, "dicts are not supported"),
    ("def f(x: int) -> int:\n    y = iter(x)\n    return x\n", 5, 9, "'iter' is not supported"),
    ("def f(x: int) -> int:\n    y = lambda a: a\n    return x\n", 5, 9, "lambdas are not supported"),
    (
        "def f(x: int) -> int:\n    if x > 0:\n        y = 1\n    else:\n        y = (1, 2)\n    return y\n",
        9,
        12,
        "'y' is an int on one path and (int, int) on another",
    ),  # where it is read: unread, it is no error
    # an unannotated parameter is typed by the argument passed: the error comes at the call
    ("def f(x) -> int:\n    for i in x:\n        pass\n    return 1\n", 5, 14, "for loops over an int", 3),
    (
        "def f(x: int):\n    if x > 0:\n        return 1\n    return (1, 2)\n",
        7,
        5,
        "this return gives (int, int), but the return at line 6 gives an int",
    ),
    ("def f(x: int) -> int:\n    if x > 0:\n        return 1\n", 5, 5, "can reach the end of its body"),
    ("def f(x: np.ndarray) -> float:\n    return x.foo\n", 5, 12, "array attribute 'foo' is not supported"),
    ("def f(x: int) -> int:\n    return np.foo(x)\n", 5, 12, "'np' has no attribute 'foo'"),
    (
        "def f(a: float) -> float:\n    return np.add(a, 1.0)\n",
        5,
        12,
        "np.add() of two numbers gives a NumPy scalar by NumPy's rules",
    ),
    ("def f(x: np.ndarray) -> np.ndarray:\n    return np.power(x, 2)\n", 5, 12, "'np.power' is not supported"),
    # the ranks, not the shapes of the type rule's sample values ((1,) and (1, 1))
    (
        "def f(x: np.ndarray, y: np.ndarray):\n    x += y\n    return x\n",
        5,
        5,
        "broadcasting an array of rank 2 cannot be written into the array of rank 1 in place",
        np.zeros(3),
        np.ones((2, 3)),
    ),
    ("def f(x: int) -> int:\n    for i in x:\n        pass\n    return x\n", 5, 14, "for loops over an int"),
    (
        "def f(x: np.ndarray) -> float:\n    if x:\n        return 1.0\n    return 0.0\n",
        5,
        8,
        "truth value of an array is ambiguous",
    ),
    ("def f(x: str) -> int:\n    return 1\n", 4, 10, "unsupported annotation 'str'"),
    (
        "def f(x: int) -> int:\n    y = x if x > 0 else 1.5\n    s = 'a' if x > 0 else x\n    return x\n",
        6,
        9,
        "is a str on one path and an int on another",
    ),
    ("def f(x: int) -> int:\n    global g\n    return x\n", 5, 5, "'global' statements are not supported"),
    (
        "def f(x: int) -> int:\n    with open('a') as fh:\n        pass\n    return x\n",
        5,
        5,
        "'with' statements are not supported",
    ),
    ("def f(x: int) -> int:\n    return x is None\n", 5, 12, "'is' comparisons are not supported"),
    ("def f(x: int) -> int:\n    return min(x, 1.5)\n", 5, 12, "min() of an int and a float"),
    ("def f(x: np.ndarray) -> float:\n    return x[0, 1, 2]\n", 5, 12, "too many indices for array", np.zeros((2, 2))),
    ("def f(x: np.ndarray) -> np.ndarray:\n    x += 1.5\n    return x\n", 5, 5, "cannot cast", np.zeros(3, np.int64)),
    ("def f(x: int) -> int:\n    return 99999999999999999999\n", 5, 12, "does not fit in a 64-bit int"),
    (
        "def f(t: tuple[int, int], n: int) -> int:\n    s = 0\n    for i, v in zip(range(n), t):\n        s += v\n"
        "    return s\n",
        6,
        31,
        "a tuple ((int, int)) is zipped only with other tuples, and enumerated alone",
    ),
    (
        "def f(a: float, c: bool) -> float:\n    for v in (a, c):\n        if v:\n            break\n    return v\n",
        8,
        12,
        "'v' is a float on one path and a bool on another",
    ),
    (
        "def f(t: tuple[int, float], i: int) -> float:\n    return t[i]\n",
        5,
        14,
        "the elements of (int, float) differ in type: it can only be indexed by an int constant",
    ),
    (
        "def f(x: float) -> float:\n    return x + 10 ** 30\n",
        5,
        16,
        "'10 ** 30' is 1000000000000000000000000000000, which does not fit in a 64-bit int",
    ),
    ("def f(x: int) -> int:\n    return x + 2 ** 10 ** 9\n", 5, 16, "'2 ** 10 ** 9' is an int that does not fit"),
    (
        "def f(x: np.ndarray) -> np.ndarray:\n    return x * -(1 << 70)\n",
        5,
        16,
        "'-(1 << 70)' is -1180591620717411303424, which does not fit",
    ),
    (
        "def f(x: int) -> int:\n    s = 0\n    for i in range(x):\n        s = (s, 1)\n    return 1\n",
        6,
        5,
        "'s' is an int before the loop and (int, int) after an iteration",
    ),
    ("def f(x: int) -> bool:\n    s = f'{x}'\n    return s == '3'\n", 6, 12, "comparisons of str are not supported"),
    ("def f(x: int) -> int:\n    print('n=' + f'{x}')\n    return x\n", 5, 11, "operators on str are not supported"),
    ("def f(x: int) -> int:\n    print('%d items' % x)\n    return x\n", 5, 11, "operators on str are not supported"),
    ("def f(x: int) -> int:\n    return int(f'{x}')\n", 5, 12, "int() of a str is not supported except of a constant"),
    ("def f(x: int) -> int:\n    t = (x, 1) * x\n    return x\n", 5, 9, "repeated a constant number of times"),
    ("def f(x: int) -> int:\n    t = (x, 1) + x\n    return x\n", 5, 9, "can only concatenate tuple to tuple"),
    ("def f(x: int) -> int:\n    return min(x, 2, key=abs)\n", 5, 12, "min() with key= is not supported"),
    ("def f(x: float) -> float:\n    return math.hypot(x, x, x)\n", 5, 12, "math.hypot() of 3 arguments"),
    ("def f(x: float) -> float:\n    return math.hypot(x)\n", 5, 12, "math.hypot() of 1 argument is not"),
    ("def f(x: int) -> int:\n    return pow(x, 2, 7)\n", 5, 12, "a modulus is not supported"),
    ("def f(x: int) -> tuple:\n    return x, x\n", 4, 18, "a bare 'tuple' annotation does not say what it holds"),
    ("def f(xs: list) -> int:\n    return 1\n", 4, 11, "a bare 'list' annotation does not say what it holds"),
    (
        "def f(x: int) -> int:\n    raise SystemExit(x)\n",
        5,
        11,
        "raising SystemExit (a BaseException that is not an Exception) is not supported",
    ),
    (
        "def f(x: np.ndarray) -> float:\n    i = np.where(x > 0)\n    return 1.0\n",
        5,
        9,
        "np.where(condition) with one argument",
        np.zeros(3),
    ),
    (
        "def f(x: int) -> int:\n    print('{} {}'.format(x))\n    return x\n",
        5,
        11,
        "Replacement index 1 out of range for positional args tuple",
    ),
    (
        "def f(x: int) -> int:\n    print('{0} {}'.format(x, x))\n    return x\n",
        5,
        11,
        "cannot switch from manual field specification to automatic field numbering",
    ),
    ("def f(x: int) -> int:\n    print('{n}'.format(n=x))\n    return x\n", 5, 11, "takes positional arguments here"),
    (
        "def f(x: int) -> int:\n    print(f'{x:>{x}}')\n    return x\n",
        5,
        11,
        "format specs computed at run time are not supported",
    ),
    (
        "def f(a: int, b: int) -> bool:\n    return [a, b] == [a, b]\n",
        5,
        12,
        "operators on lists (int[]) are not supported: index, iterate or compare their elements",
    ),
    # the schema calls NumPy's array 'self' (TorchScript's name), which the user never wrote
    ("def f(x: np.ndarray) -> float:\n    return np.sum()\n", 5, 12, "np.sum() missing its array argument"),
    ("def f(x: np.ndarray) -> np.ndarray:\n    return np.clip(x, 0.0)\n", 5, 12, "np.clip() missing argument"),
    (
        "def f(x: int) -> int:\n    e = ValueError('x')\n    raise e\n",
        5,
        9,
        "an exception is made only where it is raised",
    ),
    ("def f(x: int) -> int:\n    return int('ff', 16)\n", 5, 12, "int() with a base is not supported"),
    (
        "def f(x: np.ndarray) -> float:\n    return np.std(x, ddof=1)\n",
        5,
        12,
        "np.std() of a 0-d array is not supported",
        np.array(2.5),
    ),
    ("def f(x: np.ndarray) -> int:\n    print(x.dtype)\n    return 1\n", 5, 11, "'x.dtype' is a dtype", np.ones(2)),
    (
        "def f(x: np.ndarray, a: np.ndarray) -> np.ndarray:\n    for _ in range(3):\n        x = x * 0.5 + a\n"
        "    return x\n",
        5,
        5,
        "an array (Double(*)) before the loop and an array (Double(*, *))",
        np.ones(3),
        np.ones((2, 1)),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[3][:40] for c in CASES])
def test_rejected_construct(tmp_path, case):
    source, line, col, fragment, *args = case
    e = compile_error(tmp_path, source, *args)
    assert e.lineno == line and e.col == col, f"at {e.lineno}:{e.col}, expected {line}:{col}\n{e}"
    assert fragment in e.reason, str(e)
    text = str(e)
    first, src_line, caret = text.split("\n")[:3]
    assert first.endswith(f"mod_{first.split('mod_')[1].split('.py')[0]}.py:{line}:{col}: error: {e.reason}")
    assert caret.index("^") == col - 1 + 4, text  # the caret sits under the offending column
    assert src_line.strip() and len(src_line) > col


def test_error_has_hint_for_known_rewrites(tmp_path):
    e = compile_error(tmp_path, "def f(x: int) -> int:\n    y = (v for v in range(x))\n    return x\n")
    assert "hint: write an explicit loop" in str(e)


def test_plain_python_callee_suggests_decorating(tmp_path):
    e = compile_error(tmp_path, "def g(a):\n    return a\ndef f(x: int) -> int:\n    return g(x)\n")
    assert "decorate 'g' with @scriptc.script" in str(e)


def test_caret_spans_the_offending_range(tmp_path):
    e = compile_error(tmp_path, "def f(x: int) -> int:\n    d = {1: 2}\n    return x\n")
    assert str(e).split("\n")[2].strip() == "^" * len("{1: 2}")


def test_recursion_is_compiled(tmp_path):
    mod = load_module(
        tmp_path, "@scriptc.script\ndef f(x: int) -> int:\n    if x < 1:\n        return 0\n    return f(x - 1)\n"
    )
    assert mod.f(3) == 0 == mod.f.interpret(3)  # more in test_statements.py


def test_helper_defined_after_its_caller(tmp_path):
    mod = load_module(
        tmp_path,
        "@scriptc.script\ndef f(x: int) -> int:\n    return g(x) + 1\n"
        "@scriptc.script\ndef g(x: int) -> int:\n    return 2 * x\n",
    )
    assert mod.f(3) == 7


def test_undefined_name_is_reported_when_called(tmp_path):
    mod = load_module(tmp_path, "@scriptc.script\ndef f(x: int) -> int:\n    return nowhere(x)\n")
    with pytest.raises(scriptc.CompileError, match="name 'nowhere' is not defined") as info:
        mod.f(1)
    assert (info.value.lineno, info.value.col) == (6, 12)


def test_no_source_is_a_compile_error():
    ns = {}
    exec("def f(x: int) -> int:\n    return x\n", ns)
    with pytest.raises(scriptc.CompileError, match="cannot find the source"):
        scriptc.script(ns["f"])


def test_array_changing_dtype_in_a_loop_hints_the_conversion(tmp_path):
    source = (
        "def f(x: np.ndarray, n: int) -> np.ndarray:\n    for _ in range(n):\n        x = x * 0.5 + 1\n    return x\n"
    )
    e = compile_error(tmp_path, source, np.arange(4), 3)
    assert "'x' is an array (Long(*)) before the loop and an array (Double(*)) after an iteration" in str(e)
    assert "hint: convert it before the loop: x = x.astype(np.float64)" in str(e)
    fixed = load_module(tmp_path, source.replace("    for _", "    x = x.astype(np.float64)\n    for _"))
    f = scriptc.script(fixed.f)
    assert np.array_equal(f(np.arange(4), 3), fixed.f(np.arange(4), 3))


def test_uint64_results_hint_the_conversion(tmp_path):
    e = compile_error(
        tmp_path, "def f(x: np.ndarray) -> np.ndarray:\n    return np.cumsum(x)\n", np.arange(3, dtype=np.uint8)
    )
    assert "unsupported result dtype uint64 (scriptc has no uint64: convert first, e.g. x.astype(np.int64))" in str(e)


def test_int_and_float_of_a_bad_str_raise_where_they_run(tmp_path):
    """int("abc") on a path never taken compiles; taken, it raises CPython's ValueError (native, interpreter)."""
    mod = load_module(
        tmp_path,
        """
        @scriptc.script
        def f(n: int) -> float:
            if n > 100:
                return int("abc") + float("1x")
            return n + int("42") + float("1e-3")
    """,
    )
    assert mod.f(3) == mod.f.interpret(3) == mod.f.py_func(3)
    for run in (mod.f, mod.f.interpret, mod.f.py_func):
        with pytest.raises(ValueError, match=r"^invalid literal for int\(\) with base 10: 'abc'"):
            run(101)


def test_module_level_tuples_are_constants_and_big_ints_are_errors(tmp_path):
    mod = load_module(
        tmp_path,
        """
        COEFFS = (1.0, -2.0, 0.5)
        NESTED = ((1, 2), (3.5, True))
        BIG = 2 ** 70

        @scriptc.script
        def horner(x: float) -> float:
            a, b, c = COEFFS
            return (a * x + b) * x + c + NESTED[1][0] + NESTED[0][1] + len(COEFFS)

        def big(x: int) -> int:
            return x + BIG
    """,
    )
    assert mod.horner(2.0) == mod.horner.interpret(2.0) == mod.horner.py_func(2.0)
    with pytest.raises(scriptc.CompileError, match="'BIG' is 1180591620717411303424, which does not fit in a 64-bit"):
        scriptc.script(mod.big)


def test_what_is_not_a_def_is_a_type_error_saying_what_to_do():
    """Builtins, partials, staticmethod objects, other decorators' wrappers, methods and a bad cache= raised
    internal AttributeErrors and inspect's TypeErrors."""
    import functools
    import math

    def g(a: float, b: float) -> float:
        return a + b

    for obj, hint in (
        (math.sqrt, "sqrt has no Python source"),
        (np.exp, "exp has no Python source"),
        (functools.partial(g, 1.0), "decorate the function itself"),
        (staticmethod(g), "put @staticmethod above @scriptc.script"),
        (functools.lru_cache(g), "on the def itself, below other decorators"),
        (3, "not an int"),
    ):
        with pytest.raises(TypeError, match="scriptc.script takes a function defined with def") as e:
            scriptc.script(obj)
        assert hint in str(e.value)
    with pytest.raises(TypeError, match="cache must be True, False or a directory"):
        scriptc.script(g, cache=3)
    with pytest.raises(TypeError, match="A.m' is a method"):

        class A:
            @scriptc.script
            def m(self, x: float) -> float:
                return x


def test_a_compile_error_pickles_as_it_reads(tmp_path):
    """A process pool sends errors back pickled: unpickling rendered the text again, prefixed 'error: '."""
    import pickle

    e = compile_error(tmp_path, "def f(x: int) -> int:\n    d = {1: 2}\n    return x\n")
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is type(e) and str(again) == str(e)
    assert (again.reason, again.lineno, again.col, again.hint) == (e.reason, e.lineno, e.col, e.hint)


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 2**63 - 1)
    | st.sampled_from([0, 1, 1023, 1024, 1023 * 1024 + 512, 1024**2 - 1, 999.5 * 1024**3, 2**63 - 1]).map(int)
)
def test_the_size_in_a_memory_error_is_written_as_numpy_writes_it(nbytes):
    from numpy._core._exceptions import _ArrayMemoryError  # NumPy's message: the oracle
    from scriptc.backend.llvm.runtime.errors import size_text

    want = str(_ArrayMemoryError((nbytes,), np.dtype(np.uint8)))
    assert want == f"Unable to allocate {size_text(nbytes)} for an array with shape ({nbytes},) and data type uint8"


def test_a_rank_change_in_a_loop_is_not_told_to_change_dtype(tmp_path):
    source = (
        "def f(x: np.ndarray, a: np.ndarray) -> np.ndarray:\n    for _ in range(3):\n        x = x * 0.5 + a\n"
        "    return x\n"
    )
    e = compile_error(tmp_path, source, np.ones(3), np.ones((2, 1)))
    assert "keeps its rank" in str(e) and "astype" not in str(e)
    e = compile_error(tmp_path, source.replace("0.5", "1"), np.ones(3, np.int64), np.ones(3))
    assert "x = x.astype(np.float64)" in str(e)
