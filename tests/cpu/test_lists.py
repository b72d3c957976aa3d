"""Typed lists (list[int], list[float], list[bool], list[np.ndarray]) against CPython: every construct run
natively and in the reference interpreter, comparing results (values and types), printed text, exceptions
(type and message) and the mutation of list arguments; negative tests for what stays unsupported."""

import copy
import math
from typing import List

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import scriptc
from scriptc.backend.llvm.lowering.lists import list_counts
from tests.modules import load_module
from tests.util import run_captured


def same(a, b) -> bool:
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.array_equal(a, b, equal_nan=True)
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a != a and b != b) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def check(fn, *args):
    """Compiled (native and interpreted) vs CPython on deep copies of ``args``."""
    want_args = copy.deepcopy(args)
    want = run_captured(fn.py_func, *want_args)
    for runner in (fn, fn.interpret):
        got_args = copy.deepcopy(args)
        got = run_captured(runner, *got_args)
        if want[2] is not None:
            assert type(got[2]) is type(want[2]) and str(got[2]) == str(want[2]), (got[2], want[2])
        else:
            assert got[2] is None, f"unexpected {got[2]!r}"
            assert same(want[0], got[0]), (got[0], want[0])
        assert got[1] == want[1], (got[1], want[1])
        assert same(list(want_args), list(got_args)), (got_args, want_args)


# -- locals: literals, append, pop, insert, len, indexing, iteration, in ------------------------------------


@scriptc.script
def build(n: int) -> int:
    xs = [1, 2, 3]
    ys: list[float] = []
    flags: List[bool] = [True]
    for i in range(n):
        xs.append(i * 2)
        ys.append(i / 2)
        flags.append(i % 3 == 0)
    total = 0
    for v in xs:
        total += v
    print(xs, ys, flags, len(xs), len(ys), xs[-1], xs[0])
    return total


@pytest.mark.parametrize("n", [0, 1, 5, 40])
def test_literals_append_iterate(n):
    check(build, n)


@scriptc.script
def methods(n: int, i: int) -> int:
    xs = [10, 20, 30]
    for k in range(n):
        xs.insert(k - 2, k)
    a = xs.pop()
    b = xs.pop(i)
    xs[i] = 7
    xs[-1] += 5
    print(xs, a, b, 7 in xs, 8 not in xs, 2.0 in xs)
    return len(xs)


@pytest.mark.parametrize("n,i", [(0, 0), (3, 1), (3, -2), (6, 4), (1, 5), (0, -4), (2, -9)])
def test_methods_and_errors(n, i):
    check(methods, n, i)


@scriptc.script
def pop_all(n: int) -> int:
    xs = [1]
    for k in range(n):
        xs.pop()
    return len(xs)


@scriptc.script
def read_at(i: int) -> float:
    xs = [0.5, 1.5]
    return xs[i]


@scriptc.script
def store_at(i: int) -> bool:
    xs = [True, False]
    xs[i] = False
    return xs[0]


@pytest.mark.parametrize("n", [0, 1, 2])
def test_pop_from_empty(n):
    check(pop_all, n)


@pytest.mark.parametrize("i", [-3, -2, -1, 0, 1, 2, 100])
def test_index_errors(i):
    check(read_at, i)
    check(store_at, i)


@scriptc.script
def growing(n: int) -> int:
    xs = [1]
    count = 0
    for v in xs:  # CPython's list iterator sees the elements appended while it runs
        if v < n:
            xs.append(v + 1)
        count += 1
    return count


def test_iteration_sees_appends():
    check(growing, 50)


@scriptc.script
def slices(a: int, b: int, c: int) -> int:
    xs = [0, 1, 2, 3, 4, 5, 6, 7]
    ys = xs[a:b:c]
    zs = xs[a:]
    ws = xs[:b]
    ws.append(99)  # a slice is a new list
    print(ys, zs, ws, xs[::-1], xs + ys, ys * 2)
    return len(ys)


@pytest.mark.parametrize("a,b,c", [(0, 8, 1), (1, 6, 2), (-1, -9, -1), (7, 0, -3), (10, 20, 1), (2, 3, 0)])
def test_slices(a, b, c):
    check(slices, a, b, c)


@scriptc.script
def aliasing(n: int) -> int:
    xs = [1, 2]
    ys = xs  # the same list
    for i in range(n):
        ys.append(i)
    k = len(xs)
    xs.append(5)
    return k + len(ys)


def test_aliasing():
    check(aliasing, 4)


@scriptc.script
def reductions(n: int) -> float:
    xs = [((i * 7) % 5) - 2.5 for i in range(n)]
    ints = [(i * 7) % 5 for i in range(n)]
    bools = [i % 2 == 0 for i in range(n)]
    print(sum(ints), sum(bools), min(ints), max(ints), min(xs), max(xs), min(bools), max(bools))
    return sum(xs)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_sum_min_max(n):
    check(reductions, n)


@scriptc.script
def sorting(n: int) -> float:
    xs = [((i * 37) % 11) * 0.5 - 2.0 for i in range(n)]
    ys = [(i * 13) % 7 - 3 for i in range(n)]
    bs = [i % 3 == 0 for i in range(n)]
    print(sorted(xs), sorted(ys, reverse=True), sorted(bs), sorted(xs, reverse=True))
    return xs[0] if n > 0 else 0.0


@pytest.mark.parametrize("n", [0, 1, 2, 9, 40])
def test_sorted(n):
    check(sorting, n)


@scriptc.script
def sort_values(xs: list[float], rev: bool) -> list[float]:
    if rev:
        return sorted(xs, reverse=True)
    return sorted(xs)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([-1.5, -0.0, 0.0, 1.0, 2.5, 1e300, -1e300]), max_size=30), st.booleans())
def test_sorted_property(xs, rev):
    """Python's sort is stable: -0.0 and 0.0 stay in input order."""
    check(sort_values, xs, rev)


# -- comprehensions ------------------------------------------------------------------------------------------


@scriptc.script
def comprehensions(n: int, x: np.ndarray) -> float:
    v = 100
    sq = [v * v for v in range(n)]
    ev = [v for v in range(1, n, 2) if v % 3 != 0]
    fl = [float(e) * 2.0 for e in x if e > 0.0]
    again = [s + 1 for s in sq if s > 4]
    print(sq, ev, fl, again, v)
    return sum(fl)


@pytest.mark.parametrize("n", [0, 4, 11])
def test_comprehensions(n):
    check(comprehensions, n, np.linspace(-1.0, 2.0, 7))


# -- passing lists in and out --------------------------------------------------------------------------------


@scriptc.script
def mutate(xs: list[int], k: int) -> list[int]:
    xs.append(k)
    xs[0] = 9
    if k > 2:
        xs.pop(1)
    return [x + 1 for x in xs]


@scriptc.script
def scale(xs: list[float], f: float) -> float:
    for i in range(len(xs)):
        xs[i] = xs[i] * f
    return sum(xs)


@scriptc.script
def same_list(xs: list[bool]) -> list[bool]:
    xs.append(True)
    return xs


@pytest.mark.parametrize("k", [1, 5])
def test_reflection(k):
    check(mutate, [1, 2, 3], k)
    check(scale, [1.0, 2.5, -3.0], 2.0)
    check(same_list, [False])


def test_returned_list_is_the_callers():
    a = [True]
    assert same_list(a) is a and a == [True, True]
    b = [1, 2]
    out = mutate(b, 1)
    assert b == [9, 2, 1] and out == [10, 3, 2]


def test_untouched_elements_keep_their_objects():
    xs = [1, 2.5]  # an int in a list[float] is read as a float; unchanged, it stays the caller's int
    scale(xs, 1.0)
    assert xs == [1, 2.5] and type(xs[0]) is int


def test_argument_errors():
    with pytest.raises(TypeError, match="must be a list"):
        mutate((1, 2), 1)
    with pytest.raises(TypeError, match="element 1 is float"):
        mutate([1, 2.0], 1)
    with pytest.raises(TypeError, match="element 0 is str"):
        scale(["a"], 1.0)


def test_raise_inside_reflects_and_frees():
    @scriptc.script
    def bad(xs: list[int]) -> int:
        xs.append(4)
        return xs[10]

    before = list_counts()
    a = [1]
    with pytest.raises(IndexError, match="list index out of range"):
        bad(a)
    assert a == [1, 4]
    alloc, free = list_counts()
    assert alloc - before[0] == free - before[1]


def test_no_list_leaks():
    before = list_counts()
    for n in range(5):
        build(n)
        methods(3, 1)
        slices(1, 6, 2)
        sorting(9)
        comprehensions(5, np.ones(3))
        mutate([1, 2, 3], 4)
    alloc, free = list_counts()
    assert alloc - before[0] == free - before[1] > 0


# -- lists of arrays -----------------------------------------------------------------------------------------


@scriptc.script
def arrays_list(xs: list[np.ndarray], n: int) -> np.ndarray:
    rows = []
    for i in range(n):
        rows.append(xs[i % len(xs)] * float(i))
    xs.append(rows[0])
    xs[0][0] = 42.0  # writes through to the caller's array
    total = np.zeros(3)
    for r in rows:
        total += r
    return total


def test_list_of_arrays():
    a, b = np.arange(3.0), np.ones(3)
    check(arrays_list, [a, b], 4)
    xs = [a.copy(), b.copy()]
    first = xs[0]
    arrays_list(xs, 2)
    assert xs[0] is first and first[0] == 42.0 and len(xs) == 3


@scriptc.script
def stack_rows(n: int) -> np.ndarray:
    rows = [np.full(3, float(i)) for i in range(n)]
    m = np.array(rows)
    c = np.concatenate(rows)
    s = np.stack([rows[0], rows[-1]], axis=1)
    t = np.concatenate((m, m), axis=1)
    print(m.shape, c.shape, s.shape, t.shape)
    return m


@pytest.mark.parametrize("n", [1, 4])
def test_array_from_lists(n):
    check(stack_rows, n)


@scriptc.script
def array_of_scalars(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ints = np.array([1, 2, n])
    mixed = np.array([1, 2.5, n])
    bools = np.array([True, n > 2])
    print(ints, mixed, bools)
    return ints, mixed, bools, np.array([v * 0.5 for v in range(n)])


@pytest.mark.parametrize("n", [1, 3])
def test_np_array_of_scalars(n):
    check(array_of_scalars, n)


@scriptc.script
def from_pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([a, b, a])


@scriptc.script
def concat_pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.concatenate([a, b, a], axis=1)


@scriptc.script
def stack_pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.stack([a, b], axis=-1)


@pytest.mark.parametrize(
    "shapes",
    [((2, 3), (2, 4)), ((2, 3), (3, 3)), ((2, 3), (2, 3)), ((3,), (4,)), ((1, 2, 3), (1, 2, 4)), ((0, 2), (0, 2))],
)
@pytest.mark.parametrize("fn", [from_pair, concat_pair, stack_pair])
def test_numpy_errors(shapes, fn):
    if fn is concat_pair and len(shapes[0]) == 1:  # a constant axis out of range: at compile time
        with pytest.raises(scriptc.CompileError, match="axis 1 is out of bounds for array of dimension 1"):
            fn(np.zeros(shapes[0]), np.zeros(shapes[1]))
        return
    check(fn, np.arange(np.prod(shapes[0]), dtype=np.float64).reshape(shapes[0]), np.zeros(shapes[1]))


@scriptc.script
def empty_concat(n: int) -> np.ndarray:
    xs = [np.zeros(2)]
    xs.pop()
    for i in range(n):
        xs.append(np.ones(2))
    return np.concatenate(xs)


def test_empty_concatenate():
    check(empty_concat, 0)
    check(empty_concat, 2)


@scriptc.script
def arrays_scalar(n: int, k: int) -> float:
    rows = [np.full(3, float(i)) for i in range(n)]
    m = np.array(rows)
    c = np.concatenate(rows)
    s = np.stack([rows[0], rows[-1]], axis=1)
    rows.pop()
    rows[0] = m[1]
    rows.insert(0, c[0:3])
    xs = rows[1:] + rows * 2
    return np.sum(m) + np.sum(c) + np.sum(s) + float(len(xs)) + xs[k][0]


def test_array_list_memory():
    """Arrays held by lists are freed with the list, on the normal and on the error path."""
    from scriptc.backend.llvm.lowering.arrays import allocation_count, free_count

    a0, f0 = allocation_count(), free_count()
    l0 = list_counts()
    for k in (0, 3, 100, -100):
        check(arrays_scalar, 4, k)
    assert allocation_count() - a0 == free_count() - f0 > 0
    alloc, free = list_counts()
    assert alloc - l0[0] == free - l0[1] > 0


# -- the IR -------------------------------------------------------------------------------------------------


def test_ir_types_print_and_parse():
    from scriptc.ir.parser import parse
    from scriptc.ir.printer import print_graph
    from scriptc.ir.types import FLOAT, INT, ListType, TensorType, parse_type

    for t in (ListType(INT), ListType(FLOAT), ListType(TensorType("float32", 2))):
        assert parse_type(str(t)) == t
    assert str(ListType(TensorType("float64", 1))) == "Double(*)[]"
    g = build.graph
    text = print_graph(g)
    assert "int[] = prim::ListConstruct" in text and 'float[] = prim::ListConstruct[elem="float"]()' in text
    assert print_graph(parse(text)) == text


def test_passes_keep_two_literals_apart():
    @scriptc.script
    def two(n: int) -> int:
        a = [1, 2]
        b = [1, 2]
        for i in range(n):
            a.append(i)
            c = [0]  # a new list every iteration: never hoisted
            c.append(i)
            b.append(len(c))
        return len(a) * 100 + len(b) + len(b) * len(a)

    check(two, 3)
    text = str(two.graph_for(3))
    assert text.count("prim::ListConstruct") >= 3


# -- what stays unsupported ------------------------------------------------------------------------------------


def _error(tmp_path, src: str):
    mod = load_module(tmp_path, src)
    with pytest.raises(scriptc.CompileError) as e:
        scriptc.script(mod.f)(1)
    return e.value


@pytest.mark.parametrize(
    "body,message,hint",
    [
        (
            "    xs = []\n    return len(xs)",
            "the element type of the empty list 'xs' is not known here",
            "xs: list[int] = []",
        ),
        ("    xs = []\n    return 0", "cannot tell the element type of this empty list", "xs: list[int] = []"),
        (
            "    xs = [1, 2]\n    xs.append(0.5)\n    return 0",
            "cannot store a float in a list of an int",
            "list[float]",
        ),
        (
            "    xs = [1, 2]\n    xs += [3]\n    return 0",
            "augmented assignment to a list is not supported",
            "xs.append(v)",
        ),
        ("    xs = [[1], [2]]\n    return 0", "list elements must all have one type", None),
        ("    xs = [1]\n    xs.sort()\n    return 0", "list method 'sort' is not supported", "append, insert and pop"),
        (
            "    return len([i * j for i in range(n) for j in range(n)])",
            "list comprehensions with more than one 'for' are not supported",
            "nest explicit for loops",
        ),
        ("    xs = [1, 2]\n    xs[0:1] = [3]\n    return 0", "assigning to a list slice is not supported", None),
    ],
)
def test_compile_errors(tmp_path, body, message, hint):
    err = _error(tmp_path, f"def f(n: int) -> int:\n{body}\n")
    text = str(err)
    assert message in text, text
    assert ".py:" in text and "^" in text
    if hint:
        assert hint in text, text


def test_compile_error_location(tmp_path):
    err = _error(tmp_path, "def f(n: int) -> int:\n    xs = [1, 2]\n    xs.append(0.5)\n    return 0\n")
    assert ".py:6:15: error: cannot store a float in a list of an int" in str(err)  # 3 header lines


# -- calls between scripted functions, results through the native entry point ----------------------------------


@scriptc.script
def squares(n: int) -> list[int]:
    return [i * i for i in range(n)]


@scriptc.script
def total(xs: list[int]) -> int:
    xs.append(1)
    return sum(xs)


@scriptc.script
def caller(n: int) -> tuple[int, list[int]]:
    ys = squares(n)
    t = total(ys)  # the callee's append is seen here: the same list
    return t, ys


@scriptc.script
def array_rows(n: int) -> list[np.ndarray]:
    return [np.ones(2) * float(i) for i in range(n)]


@pytest.mark.parametrize("n", [0, 3])
def test_calls_and_list_results(n):
    for _ in range(2):  # the second call goes through the JIT entry point
        check(squares, n)
        check(caller, n)
        check(array_rows, n)


# -- the passes keep what the interpreter computes on list programs --------------------------------------------

PASS_CASES = [
    (build, (5,)),
    (methods, (3, 1)),
    (methods, (1, 5)),
    (growing, (20,)),
    (slices, (1, 6, 2)),
    (aliasing, (4,)),
    (reductions, (7,)),
    (sorting, (9,)),
    (comprehensions, (6, np.linspace(-1, 2, 7))),
    (mutate, ([1, 2, 3], 5)),
    (arrays_list, ([np.arange(3.0), np.ones(3)], 4)),
    (stack_rows, (4,)),
    (arrays_scalar, (4, 3)),
    (caller, (3,)),
]


@pytest.mark.parametrize("fn,args", PASS_CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(PASS_CASES)])
def test_passes_preserve_list_programs(fn, args):
    from tests.passes.test_passes_property import CONFIGS
    from tests.passes.test_passes import apply, frontend

    graph = frontend(fn, *copy.deepcopy(args))
    for passes in CONFIGS:
        apply(passes, graph, [args])


def test_np_array_of_nested_number_literals(tmp_path):
    """np.array([[...], [...]]) of number literals is NumPy's array (dtype by NumPy's promotion), a new writable
    one each call; ragged or non-literal rows are CompileErrors (the hint names np.stack)."""
    from tests.modules import load_module

    m = load_module(
        tmp_path,
        """
        @scriptc.script
        def flip(theta: float, v: np.ndarray) -> np.ndarray:
            m = np.array([[1.0, 0.0], [0.0, -1.0]])
            m[0, 1] = theta
            return m @ v

        @scriptc.script
        def literals():
            return np.array([[1, 2, 3], [4, 5, 6]]), np.array(((1, 2.5), (True, -4))), np.array([[[True], [False]]])
    """,
    )
    v = np.array([1.0, 2.0])
    for theta in (0.5, 0.7):  # the second call sees the literal again, not the first call's write
        np.testing.assert_array_equal(m.flip(theta, v), m.flip.py_func(theta, v))
    for got, want in zip(m.literals(), m.literals.py_func()):
        assert got.dtype == want.dtype and got.flags.writeable
        np.testing.assert_array_equal(got, want)
    for body, message in (
        ("np.array([[1.0, 2.0], [3.0]])", "inhomogeneous shape"),
        ("np.array([[a, 1.0], [2.0, a]])", "only number literals"),
    ):
        with pytest.raises(scriptc.CompileError, match=message):
            load_module(tmp_path, f"@scriptc.script\ndef f(a: float) -> np.ndarray:\n    return {body}\n").f(1.0)


@scriptc.script
def scale_first(xs: list[np.ndarray], n: int) -> int:
    for _ in range(n):
        xs[0] *= 2.0  # ndarray.__imul__: the array the list holds, in place
        xs[1] -= 1.0
    return len(xs)


def test_augmented_assignment_to_a_list_element_updates_the_array_in_place():
    """As CPython: xs[i] op= v is the array's in-place operator, seen through every reference to the array (it
    put a new array in the list: the caller's array, and the same array twice in the list, kept their values)."""
    for run in (scale_first.py_func, scale_first, scale_first.interpret):
        a, b = np.ones(2), np.zeros(3)
        xs = [a, b]
        assert run(xs, 2) == 2 and xs[0] is a and xs[1] is b
        np.testing.assert_array_equal(a, [4.0, 4.0])
        np.testing.assert_array_equal(b, [-2.0, -2.0, -2.0])
        same = np.ones(1)
        run([same, same], 1)
        np.testing.assert_array_equal(same, [1.0])  # (1 * 2) - 1


@scriptc.script
def append_to_both(xs: list[int], ys: list[int]) -> int:
    xs.append(1)
    ys.append(2)
    return len(ys)


def test_a_list_passed_twice_is_one_list():
    """f(a, a): both parameters are the caller's one list (native code made two and copied the second back
    over the first: 2 and [0, 2] where CPython gives 3 and [0, 1, 2])."""
    for run in (append_to_both.py_func, append_to_both, append_to_both.interpret):
        a = [0]
        assert run(a, a) == 3 and a == [0, 1, 2]


@scriptc.script
def rows_of(x: np.ndarray, n: int) -> np.ndarray:
    xs: list[np.ndarray] = []  # typed by its appends, as an unannotated [] is
    for i in range(n):
        xs.append(x * float(i))
    return np.stack(xs)


def test_an_annotated_empty_list_of_arrays_is_typed_by_its_use():
    """It was refused: 'expected a list (Tensor[]) as annotated, got a list (None[])'."""
    x = np.arange(3.0)
    for run in (rows_of, rows_of.interpret):
        np.testing.assert_array_equal(run(x, 2), rows_of.py_func(x, 2))


@scriptc.script
def count_arrays(xs: list[np.ndarray]) -> int:
    return len(xs)


def test_a_long_list_of_arrays_comes_back_in_one_pass(monkeypatch):
    """Each array of a list argument comes back as the caller's own object, found by its data pointer: the
    arguments were scanned once per element (quadratic: 570 ms a call for 1,000 arrays)."""
    from scriptc.backend.llvm.runtime import native

    xs = [np.ones(3) for _ in range(300)]
    count_arrays(xs)
    scans = []
    real = native._arrays_in
    monkeypatch.setattr(native, "_arrays_in", lambda args: scans.append(1) or real(args))
    before = list(xs)
    assert count_arrays(xs) == 300
    assert len(scans) <= 2 and all(a is b for a, b in zip(xs, before))


@scriptc.script
def append_many(xs: list[int], k: int) -> int:
    for _ in range(50):
        xs.append(k)
    return len(xs)


def test_threads_appending_to_one_list_lose_nothing():
    """Each call copies the list in and back: threads sharing one list copied back their own copies over each
    other's appends (CPython's append is atomic). Calls with lists now run one at a time."""
    import threading
    from tests.util import run_threads_interleaved

    shared = [0]
    append_many(shared, -1)

    def work(k):
        for _ in range(20):
            append_many(shared, k)

    run_threads_interleaved([threading.Thread(target=work, args=(k,)) for k in range(4)])
    assert len(shared) == 1 + 50 + 4 * 20 * 50
    assert sorted(shared[51:]) == sorted([k for k in range(4) for _ in range(20 * 50)])
