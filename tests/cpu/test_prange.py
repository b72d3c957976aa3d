"""scriptc.prange: parallel loops on the thread pool (frontend/parallel.py, backend/llvm/lowering/parallel.py, pool.py).

Differential: each function runs natively (on 2 threads, and on 1, 3 and 7 where it matters), in the
interpreter and as plain Python (prange is range there); reductions compare exactly with one thread (the
sequential order) and within rounding with several (partials per chunk, combined in chunk order), and are
reproducible for a fixed thread count. Errors: the CompileErrors of the prange checks with their caret, an
IndexError raised from a chunk (the lowest failing iteration's) with nothing leaked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc
from scriptc import prange
from scriptc.backend.llvm.lowering.arrays import allocation_count, free_count
from tests.frontend.test_errors import compile_error


@pytest.fixture(autouse=True)
def two_threads():
    old = scriptc.get_num_threads()
    scriptc.set_num_threads(2)
    yield
    scriptc.set_num_threads(old)


def run_all(f, *args):
    """(native, interpreted, Python) results."""
    return f(*args), f.interpret(*args), f.py_func(*args)


@scriptc.script
def square_into(a: np.ndarray, out: np.ndarray, start: int, stop: int, step: int) -> None:
    for i in prange(start, stop, step):
        t = a[i] * a[i]  # a local of the iteration
        out[i] = t + 1.0


@pytest.mark.parametrize(
    "start,stop,step",
    [(0, 100, 1), (3, 97, 7), (99, -1, -1), (90, 2, -13), (5, 5, 1), (10, 0, 1), (0, 100, 200), (-50, -1, 3)],
)
def test_array_writes_over_ranges(start, stop, step):
    a = np.linspace(-3, 3, 100)
    outs = []
    for run in (square_into, square_into.interpret, square_into.py_func):
        out = np.zeros(100)
        run(a, out, start, stop, step)
        outs.append(out)
    assert np.array_equal(outs[0], outs[2]) and np.array_equal(outs[1], outs[2])


@scriptc.script
def stop_only(out: np.ndarray, n: int) -> int:
    last = -1
    for i in prange(n):
        out[i] = 2 * i
    for i in prange(n):
        out[i] += 1
    return i if n > 0 else last


@pytest.mark.parametrize("n", [0, 1, 2, 3, 50])
def test_stop_only_and_the_loop_variable_after(n):
    outs = [np.zeros(60, np.int64) for _ in range(3)]
    results = [f(o, n) for f, o in zip((stop_only, stop_only.interpret, stop_only.py_func), outs)]
    assert results[0] == results[1] == results[2]
    assert all(np.array_equal(o, outs[2]) for o in outs)


@scriptc.script
def reductions(a: np.ndarray, lo: int, hi: int):
    s = 0.0
    d = 100.0
    p = 1.0
    k = 0
    mx = -1e300
    mn = 1e300
    imx = -(2**62)
    for i in prange(lo, hi):
        x = a[i]
        s += x
        d -= x
        p *= 1.0 + x / 1000.0
        k += i * i
        mx = max(mx, x)
        mn = min(mn, x)
        imx = max(imx, i % 17)
    return s, d, p, k, mx, mn, imx


def test_reductions_one_thread_bit_identical():
    scriptc.set_num_threads(1)
    a = np.random.default_rng(1).standard_normal(10001)
    native, interp, py = run_all(reductions, a, 0, 10001)
    assert native == interp == py


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_reductions_several_threads_deterministic(threads):
    scriptc.set_num_threads(threads)
    a = np.random.default_rng(2).standard_normal(10001)
    first = reductions(a, 0, 10001)
    assert all(reductions(a, 0, 10001) == first for _ in range(20))  # same bits every time
    py = reductions.py_func(a, 0, 10001)
    s, d, p, k, mx, mn, imx = first
    assert (k, mx, mn, imx) == py[3:]  # ints and max/min do not depend on the order
    np.testing.assert_allclose([s, d, p], py[:3], rtol=1e-12)


def test_reduction_partials_are_combined_in_chunk_order():
    scriptc.set_num_threads(3)
    a = np.array([1e16, 1.0, 1.0, -1e16, 1.0, 1.0])
    s = reductions(a, 0, 6)[0]
    # chunks [0, 2), [2, 4), [4, 6): ((1e16 + 1) + ((-0.0 + 1) - 1e16)) + ((-0.0 + 1) + 1)
    expected = ((0.0 + 1e16 + 1.0) + (-0.0 + 1.0 + -1e16)) + (-0.0 + 1.0 + 1.0)
    assert s == expected


def test_empty_and_negative_reduction_ranges():
    a = np.arange(5.0)
    for lo, hi in ((3, 3), (4, 1), (0, -5)):
        assert run_all(reductions, a, lo, hi)[0] == reductions.py_func(a, lo, hi)


@scriptc.script
def nested(a: np.ndarray) -> np.ndarray:
    n, m = a.shape
    out = np.zeros((n, m))
    for i in prange(n):  # range inside prange
        acc = 0.0
        for j in range(m):
            acc += a[i, j]
            out[i, j] = acc
    for j in range(m):  # prange inside range
        for i in prange(n):
            out[i, j] = out[i, j] * 2.0 + j
    return out


@scriptc.script
def nested_prange(a: np.ndarray) -> float:
    n, m = a.shape
    total = 0.0
    for i in prange(n):
        for j in prange(m):  # runs sequentially inside the outer loop's chunk
            total += a[i, j] * a[i, j]
    return total


def test_nested_loops():
    a = np.random.default_rng(3).standard_normal((37, 11))
    native, interp, py = run_all(nested, a)
    assert np.array_equal(native, py) and np.array_equal(interp, py)
    scriptc.set_num_threads(1)
    assert run_all(nested_prange, a)[0] == nested_prange.py_func(a)


@scriptc.script
def reduce_in_inner_loop(a: np.ndarray) -> float:
    s = 0.0
    for i in prange(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] > 0.0:
                s += a[i, j]
    return s


def test_reduction_inside_inner_loop_and_if():
    a = np.random.default_rng(4).standard_normal((64, 9))
    scriptc.set_num_threads(1)
    assert reduce_in_inner_loop(a) == reduce_in_inner_loop.py_func(a) == reduce_in_inner_loop.interpret(a)
    scriptc.set_num_threads(2)
    assert reduce_in_inner_loop(a) == pytest.approx(reduce_in_inner_loop.py_func(a), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(-20, 60), st.integers(-20, 60), st.integers(-9, 9).filter(lambda s: s != 0), st.integers(1, 5))
def test_ranges_property(start, stop, step, threads):
    scriptc.set_num_threads(threads)
    a = np.arange(-20.0, 61.0) ** 2
    f = reductions
    out_native, out_py = np.zeros(81), np.zeros(81)
    square_into(a, out_native, start + 20, stop + 20, step)
    square_into.py_func(a, out_py, start + 20, stop + 20, step)
    assert np.array_equal(out_native, out_py)
    # integer reductions are exact for every thread count
    assert f(a, start + 20, stop + 20)[3] == f.py_func(a, start + 20, stop + 20)[3]


# -- errors -----------------------------------------------------------------------------------------------------
@scriptc.script
def gather_sum(a: np.ndarray, idx: np.ndarray) -> float:
    s = 0.0
    for i in prange(len(idx)):
        row = a[idx[i]]  # a view: takes a reference to a's buffer in every iteration
        s += row[0] + row.sum()
    return s


@scriptc.script
def gather_owned(idx: np.ndarray) -> float:
    a = np.ones((100, 4)) * 2.0  # allocated here: views of it count references, from both threads at once
    s = 0.0
    for i in prange(len(idx)):
        t = a[idx[i]] * 3.0  # a temporary array per iteration
        s += t.sum()
    return s


def test_index_error_from_the_lowest_failing_iteration_and_no_leak():
    idx = np.arange(2000) % 100
    a = np.ones((100, 4))
    assert gather_sum(a, idx) == gather_sum.py_func(a, idx)
    bad = idx.copy()
    bad[1500], bad[400] = 555, 222  # in different chunks: the lower one is raised
    for f, args in ((gather_sum, (a, bad)), (gather_owned, (bad,))):
        with pytest.raises(IndexError) as want:
            f.py_func(*args)
        before = allocation_count(), free_count()
        for _ in range(50):
            with pytest.raises(IndexError) as got:
                f(*args)
            assert str(got.value) == str(want.value) == "index 222 is out of bounds for axis 0 with size 100"
        after = allocation_count(), free_count()
        assert after[0] - before[0] == after[1] - before[1]
    before = allocation_count(), free_count()
    for _ in range(20):
        assert gather_owned(idx) == gather_owned.py_func(idx)
    after = allocation_count(), free_count()
    assert after[0] - before[0] == after[1] - before[1] > 0


@pytest.mark.parametrize(
    "body,line,col,fragment,hint",
    [
        (
            "    for i in scriptc.prange(n):\n        if i > 3:\n            break\n",
            8,
            13,
            "'break' is not allowed in a prange loop",
            "use range()",
        ),
        (
            "    for i in scriptc.prange(n):\n        return i\n",
            7,
            9,
            "'return' is not allowed in a prange loop",
            "use range()",
        ),
        (
            "    for i in scriptc.prange(n):\n        print(i)\n",
            7,
            9,
            "print() is not allowed in a prange loop",
            "print them after the loop",
        ),
        (
            "    for i in scriptc.prange(n):\n        s = s + i\n",
            7,
            9,
            "'s' is defined outside the prange loop",
            "array",
        ),
        (
            "    for i in scriptc.prange(n):\n        s += i\n        a[i] = s\n",
            8,
            16,
            "'s' is a reduction of the prange loop and cannot be read",
            "depends on which iterations",
        ),
        (
            "    for i in scriptc.prange(n):\n        s += i\n        s *= 2\n",
            7,
            9,
            "more than one kind of reduction",
            "use one of",
        ),
        (
            "    for i in scriptc.prange(n):\n        t = i\n    s = t\n",
            8,
            9,
            "'t' is referenced before assignment",
            "",
        ),
        ("    for i in scriptc.prange(n):\n        s = max(i, s)\n", 7, 9, "only update it as a reduction", "array"),
        (
            "    for i in numba.prange(n):\n        a[i] = 1\n",
            6,
            14,
            "'numba.prange' is not scriptc's prange",
            "use scriptc.prange",
        ),
    ],
)
def test_compile_errors(tmp_path, body, line, col, fragment, hint):
    source = "def f(a: np.ndarray, n: int) -> int:\n    s = 0\n" + body + "    return s\n"
    e = compile_error(tmp_path, source)
    assert (e.lineno, e.col) == (line, col), str(e)
    assert fragment in e.reason and hint in str(e), str(e)
    caret = str(e).split("\n")[2]
    assert caret.index("^") == col - 1 + 4, str(e)


parallel_range = prange


@scriptc.script
def count_under_another_name(n: int) -> int:
    c = 0
    for i in parallel_range(n):
        c += i
    return c


def test_prange_under_another_name():
    """``pr = scriptc.prange``: the function is recognised, not its name (it was 'prange() can only be the
    iterable of a for loop', in a for loop)."""
    assert count_under_another_name(1000) == count_under_another_name.py_func(1000)
    assert any(n.attrs.get("parallel") for n in count_under_another_name.graph_for(10).walk())


def test_prange_outside_a_for_loop(tmp_path):
    e = compile_error(tmp_path, "def f(n: int) -> int:\n    r = scriptc.prange(n)\n    return n\n")
    assert "prange() can only be the iterable of a for loop" in e.reason


# -- threads ----------------------------------------------------------------------------------------------------
def test_set_num_threads_validates_and_reports():
    scriptc.set_num_threads(3)
    assert scriptc.get_num_threads() == 3
    with pytest.raises(ValueError):
        scriptc.set_num_threads(0)
    with pytest.raises(TypeError):
        scriptc.set_num_threads(2.0)
    for huge in (2**63, 2**64 + 3):  # (stored in an int64: they wrapped, and prange failed)
        with pytest.raises(ValueError, match="between 1 and 2147483647"):
            scriptc.set_num_threads(huge)
    scriptc.set_num_threads(np.int64(2))
    assert scriptc.get_num_threads() == 2


def test_a_body_calling_into_python_runs_sequentially(tmp_path):
    """round(x, n) of a float is Python's round, called back from native code: on the pool, a worker waited
    for the GIL that the caller, waiting for the workers, held (a hang: hence a process with a time limit).
    Such a loop runs on one thread."""
    (tmp_path / "rounding.py").write_text(
        textwrap.dedent("""
        import numpy as np, scriptc

        @scriptc.script
        def rounded_sum(x: np.ndarray) -> float:
            s = 0.0
            for i in scriptc.prange(len(x)):
                s += round(x[i], 3)
            return s

        scriptc.set_num_threads(2)
        x = np.random.default_rng(1).random(20000)
        print(rounded_sum(x) == rounded_sum.py_func(x))
    """)
    )
    out = subprocess.run(
        [sys.executable, str(tmp_path / "rounding.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.getcwd()),
    )
    assert out.stdout == "True\n", out.stderr


def test_environment_variable_sets_the_default(tmp_path):
    code = textwrap.dedent("""
        import numpy as np, scriptc
        from scriptc import prange
        print(scriptc.get_num_threads())
    """)
    env = dict(os.environ, SCRIPTC_NUM_THREADS="5", PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "5"


@scriptc.script
def spin_sum(n: int) -> float:
    s = 0.0
    for i in prange(n):
        x = 0.0
        for j in range(200):
            x += (i + j) * 1e-9
        s += x
    return s


def test_gil_released_and_concurrent_callers():
    """Two Python threads calling a prange function at once (one gets the pool, the other runs its chunks
    itself) both get the one-chunk-order results of their thread count."""
    want = spin_sum(20000)
    results = []

    def worker():
        results.append(spin_sum(20000))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [want] * 4
    from scriptc.backend.gil import releases_gil

    assert releases_gil(spin_sum.graph_for(20000))


@scriptc.script
def labelled_spin_sum(n: int) -> float:
    print("sum of", n)
    return spin_sum(n)


@scriptc.script
def serial_sum(n: int) -> float:
    s = 0.0
    for i in range(n):
        s += i
    return s


def test_only_a_parallel_graph_touching_no_str_releases_the_gil():
    from scriptc.backend.gil import releases_gil

    assert releases_gil(spin_sum.graph_for(10)) and not releases_gil(serial_sum.graph_for(10))
    assert not releases_gil(labelled_spin_sum.graph_for(10))  # prints a str; its parallel loop is inlined
    assert labelled_spin_sum(100) == spin_sum(100)
