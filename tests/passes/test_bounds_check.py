"""The bounds-check elimination pass: which accesses it proves (FileCheck on the IR after it, with the cases it
must not prove), and that compiled code still raises IndexError wherever Python does (differential tests, and a
Hypothesis property over loop bounds, offsets and array lengths)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc
from scriptc.ir import print_graph
from scriptc.passes import PassManager

from tests.modules import load_module
from tests.util import assert_matches_python, filecheck

UP_TO_BCE = ["inline", "canonicalize", "constant-propagation", "cse", "licm", "bounds-check"]


def ir_after_bce(fn, *args) -> str:
    graph = fn.frontend_graph_for(*args)
    PassManager(passes=UP_TO_BCE, verify_each=True).run(graph)
    return print_graph(graph)


def check(fn, args, checks):
    filecheck(ir_after_bce(fn, *args), textwrap.dedent(checks))
    assert_matches_python(fn, *args)
    assert_matches_python(fn, *args, runner=fn.interpret)


# -- what it proves ------------------------------------------------------------------------------------------


@scriptc.script
def recurrence(x: np.ndarray, c: float) -> np.ndarray:
    s = np.empty(len(x))
    s[0] = x[0]
    for i in range(1, len(x)):
        s[i] = s[i - 1] * c + x[i]
    return s


def test_recurrence_reads_and_writes_are_proven():
    check(
        recurrence,
        (np.arange(6.0), 0.5),
        """
        CHECK: aten::getitem(%x
        CHECK: aten::setitem(%s
        CHECK: prim::Loop
        CHECK: aten::getitem[checked=[0]](%s
        CHECK: aten::getitem[checked=[0]](%x
        CHECK: aten::setitem[checked=[0]](%s
    """,
    )


@scriptc.script
def shape_bound(x: np.ndarray) -> float:
    n = x.shape[0]
    t = 0.0
    for i in range(n):
        t += x[i]
    for v in x:
        t += v
    for i in range(n - 1, -1, -1):
        t -= x[i]
    return t


def test_shape_bound_for_in_and_reverse_range_are_proven():
    check(
        shape_bound,
        (np.arange(5.0),),
        """
        CHECK: aten::getitem[checked=[0]](%x
        CHECK: aten::getitem[checked=[0]](%x
        CHECK: aten::getitem[checked=[0]](%x
        CHECK-NOT: aten::getitem(
    """,
    )


@scriptc.script
def suffix_sums(x: np.ndarray) -> np.ndarray:
    n = len(x)
    out = np.zeros(n)
    t = 0.0
    for i in reversed(range(n)):
        t += x[i]
        out[i] = t
    for i in reversed(range(1, n, 2)):
        t -= x[i]
    return out * t


def test_reversed_range_is_proven():
    """reversed(range(lo, hi, k)), k > 0, runs down from its last element (below hi) to lo."""
    check(
        suffix_sums,
        (np.arange(5.0),),
        """
        CHECK: prim::Loop
        CHECK: aten::getitem[checked=[0]](%x
        CHECK: aten::setitem[checked=[0]](%out
        CHECK: prim::Loop
        CHECK: aten::getitem[checked=[0]](%x
    """,
    )
    for n in (0, 1, 2, 6):
        assert_matches_python(suffix_sums, np.arange(float(n)))


@scriptc.script
def reversed_past_the_end(x: np.ndarray, extra: int) -> float:
    t = 0.0
    for i in reversed(range(-1, len(x))):
        t = t * 0.5 + x[i]  # -1 wraps: the last element
    for i in reversed(range(len(x) + extra)):
        t += x[i]
    return t


def test_reversed_range_past_the_array_still_raises():
    """The upper end of a reversed range is its hi - 1: past the array, the first access raises IndexError as
    in Python (where the access is proven, it is under a guard that fails here), and -1 keeps its wrap."""
    assert "aten::getitem(%x" in ir_after_bce(reversed_past_the_end, np.arange(3.0), 1)
    for extra in (0, 1, 3):
        assert_matches_python(reversed_past_the_end, np.arange(4.0), extra)
        assert_matches_python(reversed_past_the_end, np.arange(4.0), extra, runner=reversed_past_the_end.interpret)


@scriptc.script
def stencil(x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    m = x.shape[1]
    out = np.zeros((n, m))
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            out[i, j] = x[i - 1, j] + x[i + 1][j] + x[i, j - 1] + x[i, j + 1] - 4.0 * x[i, j]
    return out


def test_nested_stencil_is_proven():
    check(
        stencil,
        (np.arange(30.0).reshape(5, 6),),
        """
        CHECK: prim::Loop
        CHECK: prim::Loop
        CHECK: aten::getitem[checked=[0, 0]](%x
        CHECK: aten::select[dim=0, checked=[0]](%x
        CHECK: aten::getitem[checked=[0]]
        CHECK: aten::getitem[checked=[0, 0]](%x
        CHECK: aten::getitem[checked=[0, 0]](%x
        CHECK: aten::getitem[checked=[0, 0]](%x
        CHECK: aten::setitem[checked=[0, 0]](%out
    """,
    )


@scriptc.script
def pairwise(x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    d = x.shape[1]
    out = np.empty((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            s = 0.0
            for k in range(d):
                t = x[i, k] - x[j, k]
                s += t * t
            out[i, j] = s
            out[j, i] = s
        out[i, i] = 0.0
    return out


def test_triangular_loops_and_created_arrays_are_proven():
    check(
        pairwise,
        (np.arange(12.0).reshape(4, 3),),
        """
        CHECK: aten::getitem[checked=[0, 0]](%x
        CHECK: aten::getitem[checked=[0, 0]](%x
        CHECK: aten::setitem[checked=[0, 0]](%out
        CHECK: aten::setitem[checked=[0, 0]](%out
        CHECK: aten::setitem[checked=[0, 0]](%out
    """,
    )


@scriptc.script
def unpacked_stencil(u: np.ndarray) -> np.ndarray:
    n, m = u.shape
    v = u.copy()
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            v[i, j] = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
    return v


def test_dimensions_unpacked_from_shape_are_dimensions():
    """``n, m = u.shape`` names u's dimensions as ``u.shape[0]`` does: the stencil is proven, with no versioned
    (checked) copy of its loops."""
    check(
        unpacked_stencil,
        (np.arange(20.0).reshape(4, 5),),
        """
        CHECK-NOT: prim::If
        CHECK: prim::Loop
        CHECK: prim::Loop
        CHECK: aten::getitem[checked=[0, 0]](%u
        CHECK: aten::getitem[checked=[0, 0]](%u
        CHECK: aten::getitem[checked=[0, 0]](%u
        CHECK: aten::getitem[checked=[0, 0]](%u
        CHECK: aten::setitem[checked=[0, 0]](%v
        CHECK-NOT: prim::If
    """,
    )
    assert_matches_python(unpacked_stencil, np.ones((2, 7)))
    assert_matches_python(unpacked_stencil, np.ones((0, 3)))


@scriptc.script
def bubble_pass_sort(x: np.ndarray):
    n = len(x)
    for i in range(n):
        for j in range(n - 1 - i):
            if x[j] > x[j + 1]:
                x[j], x[j + 1] = x[j + 1], x[j]


@scriptc.script
def by_size(x: np.ndarray) -> np.ndarray:
    s = np.empty(x.size)
    s[0] = x[0]
    for i in range(1, x.size):
        s[i] = 0.5 * s[i - 1] + x[i]
    return s


@scriptc.script
def grid_sum(a: float, b: float, n: int) -> float:
    xs = np.linspace(a, b, n + 1)
    idx = np.arange(n)
    s = xs[0] + xs[n]
    for i in range(1, n):
        s += xs[i] * idx[i]
    return s


@scriptc.script
def one_past(n: int) -> float:
    return np.linspace(0.0, 1.0, n)[n] + np.arange(n)[n - 1]


def test_trip_count_bounds_size_linspace_and_arange_are_proven():
    """A triangular loop's ``range(n - 1 - i)`` is below ``n - 1`` (i >= 0); ``x.size`` of a 1-d array,
    ``np.linspace(a, b, num)`` and ``np.arange(n)`` have known lengths: all proven, none versioned."""
    check(
        bubble_pass_sort,
        (np.array([3.0, 1.0, 2.0, -1.0]),),
        """
        CHECK-NOT: prim::If(
        CHECK: aten::getitem[checked=[0]](%x
        CHECK: aten::getitem[checked=[0]](%x
    """,
    )
    check(
        by_size,
        (np.arange(5.0),),
        """
        CHECK-NOT: prim::If(
        CHECK: aten::getitem[checked=[0]](%s
        CHECK: aten::getitem[checked=[0]](%x
        CHECK: aten::setitem[checked=[0]](%s
    """,
    )
    check(
        grid_sum,
        (0.0, 1.0, 6),
        """
        CHECK-NOT: prim::If(
        CHECK: aten::getitem[checked=[0]](%xs
        CHECK: aten::getitem[checked=[0]](%idx
    """,
    )
    assert_matches_python(by_size, np.zeros(0))  # IndexError at s[0]
    assert_matches_python(one_past, 4)  # IndexError: the index equals the length
    assert "checked" not in ir_after_bce(one_past, 4).split("aten::linspace")[1].split("\n")[1]


# -- what it must not prove ----------------------------------------------------------------------------------


@scriptc.script
def bound_from_other_array(x: np.ndarray, y: np.ndarray) -> float:
    t = 0.0
    for i in range(len(y)):
        t += x[i]
    return t


def test_bound_from_another_array_is_versioned():
    # proven only under a guard before the loop: len(y) < len(x) + 1; the other copy keeps its check
    check(
        bound_from_other_array,
        (np.arange(3.0), np.arange(3.0)),
        """
        CHECK: %[[Y:.*]] : int = prim::TupleIndex[index=0]
        CHECK: %[[X:.*]] : int = prim::TupleIndex[index=0]
        CHECK: %[[BOUND:.*]] : int = aten::add(%[[X]]
        CHECK: %[[OK:.*]] : bool = aten::lt(%[[Y]], %[[BOUND]])
        CHECK: prim::If(%[[OK]])
        CHECK: prim::Loop
        CHECK: aten::getitem[checked=[0]](%x
        CHECK: block1():
        CHECK: prim::Loop
        CHECK: aten::getitem(%x
    """,
    )
    assert_matches_python(bound_from_other_array, np.arange(3.0), np.arange(5.0))  # IndexError
    assert_matches_python(bound_from_other_array, np.arange(5.0), np.arange(3.0))


@scriptc.script
def floyd(d: np.ndarray) -> np.ndarray:
    n = d.shape[0]
    dist = d.copy()
    for k in range(n):
        for i in range(n):
            for j in range(n):
                alt = dist[i, k] + dist[k, j]
                if alt < dist[i, j]:
                    dist[i, j] = alt
    return dist


def test_square_assumption_is_versioned_and_non_square_input_still_raises():
    check(
        floyd,
        (np.arange(9.0).reshape(3, 3) % 4,),
        """
        CHECK: prim::If
        CHECK: aten::getitem[checked=[0, 0]](%dist
        CHECK: aten::getitem[checked=[0, 0]](%dist
        CHECK: aten::getitem[checked=[0, 0]](%dist
        CHECK: aten::setitem[checked=[0, 0]](%dist
        CHECK: block1():
        CHECK: aten::getitem[checked=[0, 1]](%dist
    """,
    )
    assert_matches_python(floyd, np.arange(6.0).reshape(3, 2))  # IndexError on axis 1
    assert_matches_python(floyd, np.arange(6.0).reshape(2, 3))
    assert_matches_python(floyd, np.zeros((0, 0)))


@scriptc.script
def rebinds_loop_variable(x: np.ndarray) -> float:
    t = 0.0
    for i in range(len(x)):
        i = i + 1
        t += x[i]
    return t


@scriptc.script
def off_by_one(x: np.ndarray) -> float:
    t = 0.0
    for i in range(len(x) + 1):
        t += x[i]
    for i in range(len(x)):
        t += x[i - 1]  # i - 1 == -1 wraps: keep the wrap
    for i in range(0, len(x), 2):
        t += x[i + 1]
    return t


@pytest.mark.parametrize("fn", [rebinds_loop_variable, off_by_one])
def test_indices_that_can_leave_the_range_keep_their_check(fn):
    check(
        fn,
        (np.arange(4.0),),
        """
        CHECK-NOT: checked=
        CHECK: aten::getitem(%x
        CHECK-NOT: checked=
    """,
    )
    assert_matches_python(fn, np.arange(5.0))


@scriptc.script
def reassigned_in_loop(x: np.ndarray) -> float:
    t = 0.0
    n = len(x)
    for i in range(n):
        t += x[i]
        x = x[1:]
    return t


@scriptc.script
def reshaped(x: np.ndarray) -> float:
    n = len(x)
    y = x.reshape(2, -1)
    t = 0.0
    for i in range(n):
        t += y[i, 0]
    return t


@scriptc.script
def while_counter(x: np.ndarray, n: int) -> float:
    t = 0.0
    i = 0
    while i < n:
        t += x[i]
        i += 1
    return t


@scriptc.script
def same_name_other_array(x: np.ndarray, y: np.ndarray) -> float:
    n = len(x)
    x = y
    t = 0.0
    for i in range(n):
        t += x[i]
    return t


@scriptc.script
def break_and_len_minus_one(x: np.ndarray) -> float:
    t = 0.0
    for i in range(len(x)):
        if t > 100.0:
            break
        t += x[len(x) - 1 - i] + x[len(x) - 1]
    return t


@pytest.mark.parametrize(
    "fn, args",
    [
        (reassigned_in_loop, (np.arange(4.0),)),
        (reshaped, (np.arange(4.0),)),
        (while_counter, (np.arange(4.0), 6)),
        (same_name_other_array, (np.arange(5.0), np.arange(3.0))),
    ],
)
def test_unprovable_accesses_keep_their_check_and_raise(fn, args):
    check(
        fn,
        args,
        """
        CHECK: aten::getitem(
        CHECK-NOT: checked=
    """,
    )


def test_len_minus_one_minus_i_is_not_proven_but_break_keeps_the_rest():
    # len(x) - 1 - i is not in the analysis's reach (it would need i's upper bound subtracted); nothing wrong
    # is proven, and an empty array still raises for x[len(x) - 1] -- not reached here, the loop runs no time.
    check(
        break_and_len_minus_one,
        (np.arange(30.0),),
        """
        CHECK-NOT: checked=
        CHECK: aten::getitem(%x
        CHECK-NOT: checked=
    """,
    )
    assert_matches_python(break_and_len_minus_one, np.zeros(0))


@scriptc.script
def wraps(x: np.ndarray) -> float:
    t = 0.0
    for i in range(len(x)):
        t = t * 2.0 + x[i - 1]
    return t


def test_unproven_negative_index_still_wraps_natively():
    check(
        wraps,
        (np.arange(1.0, 5.0),),
        """
        CHECK-NOT: checked=
        CHECK: aten::getitem(%x
        CHECK-NOT: checked=
    """,
    )
    assert wraps(np.arange(1.0, 5.0)) == wraps.py_func(np.arange(1.0, 5.0)) == 4.0 * 8 + 1 * 4 + 2 * 2 + 3


@scriptc.script
def swapped_buffers(x: np.ndarray, steps: int) -> np.ndarray:
    n = len(x)
    a = x.copy()
    b = np.zeros(n)
    for _ in range(steps):
        for i in range(1, n - 1):
            b[i] = 0.5 * (a[i - 1] + a[i + 1])
        t = a
        a = b
        b = t
    return a


def test_swapped_buffers_keep_their_dimensions():
    check(
        swapped_buffers,
        (np.arange(6.0), 3),
        """
        CHECK: prim::Loop
        CHECK: aten::getitem[checked=[0]](%a
        CHECK: aten::getitem[checked=[0]](%a
        CHECK: aten::setitem[checked=[0]](%b
    """,
    )


@scriptc.script
def growing_buffer(x: np.ndarray, steps: int) -> float:
    n = len(x)
    a = x.copy()
    t = 0.0
    for s in range(steps):
        for i in range(n):
            t += a[i]
        a = a[1:]
    return t


@scriptc.script
def swapped_with_other_size(x: np.ndarray, steps: int) -> float:
    n = len(x)
    a = x.copy()
    b = np.zeros(n - 1)
    t = 0.0
    for s in range(steps):
        for i in range(n):
            t += a[i]
        c = a
        a = b
        b = c
    return t


@pytest.mark.parametrize("fn", [growing_buffer, swapped_with_other_size])
def test_carried_arrays_that_change_size_keep_their_check(fn):
    check(
        fn,
        (np.arange(4.0), 1),
        """
        CHECK: aten::getitem(%a
        CHECK-NOT: checked=
    """,
    )
    assert_matches_python(fn, np.arange(4.0), 2)  # IndexError in the second step


@scriptc.script
def insertion_sort(x: np.ndarray) -> np.ndarray:
    a = x.copy()
    for i in range(1, len(a)):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


def test_while_conditions_and_a_decreasing_counter_are_proven():
    check(
        insertion_sort,
        (np.array([3.0, 1.0, 2.0, 0.5]),),
        """
        CHECK: aten::getitem[checked=[0]](%a
        CHECK: aten::getitem[checked=[0]](%a
        CHECK: prim::Loop
        CHECK: aten::getitem[checked=[0]](%a
        CHECK: aten::setitem[checked=[0]](%a
        CHECK: aten::getitem[checked=[0]](%a
        CHECK: aten::setitem[checked=[0]](%a
    """,
    )


@scriptc.script
def counting_while(x: np.ndarray) -> float:
    n = len(x)
    i = 0
    t = 0.0
    while i < n:
        t += x[i]
        i += 1
    return t


def test_while_counter_below_its_bound():
    check(
        counting_while,
        (np.arange(5.0),),
        """
        CHECK: aten::getitem(%x
    """,
    )  # i < n bounds it above, but nothing bounds the increasing counter below without more induction


@scriptc.script
def guard_on_the_wrong_branch(x: np.ndarray, j: int) -> float:
    if j >= 0:
        t = 1.0
    else:
        t = x[j]
    if j >= 1:
        t += x[j - 2]
    if j < len(x):
        t += x[j]
    return t


@scriptc.script
def decreasing_without_lower_guard(x: np.ndarray) -> float:
    j = len(x) - 1
    t = 0.0
    while t < 100.0:
        t += x[j] + 1.0
        j -= 1
    return t


@scriptc.script
def guard_too_weak(x: np.ndarray) -> float:
    j = len(x) - 1
    t = 0.0
    while j >= -1:
        t += x[j]
        j -= 1
    return t


@pytest.mark.parametrize(
    "fn, args",
    [
        (guard_on_the_wrong_branch, (np.arange(4.0), -1)),
        (guard_on_the_wrong_branch, (np.arange(4.0), 1)),
        (guard_on_the_wrong_branch, (np.arange(4.0), -7)),
        (decreasing_without_lower_guard, (np.arange(3.0),)),
        (guard_too_weak, (np.arange(3.0),)),
    ],
)
def test_guards_that_do_not_cover_the_index_keep_its_check(fn, args):
    check(
        fn,
        args,
        """
        CHECK-NOT: checked=
        CHECK: aten::getitem(%x
        CHECK-NOT: checked=
    """,
    )


# -- soundness property ------------------------------------------------------------------------------------

LOOP = """
@scriptc.script
def f(x: np.ndarray, y: np.ndarray) -> float:
    t = 0.0
    for i in range({lo}, len(x) + {hi}, {step}):
        t += x[i + {k}] * (i + 1)
    for i in range({lo}, len(y) + {hi}, {step}):
        t += x[i + {k}] * (i + 1)
    return t
"""


@settings(max_examples=40, deadline=None)
@given(
    lo=st.integers(-3, 3),
    hi=st.integers(-3, 3),
    step=st.sampled_from([-2, -1, 1, 2, 3]),
    k=st.integers(-3, 3),
    n=st.integers(0, 6),
    m=st.integers(0, 6),
)
def test_proofs_never_drop_an_index_error(tmp_path_factory, lo, hi, step, k, n, m):
    mod = load_module(tmp_path_factory.mktemp("bce"), LOOP.format(lo=lo, hi=hi, step=step, k=k))
    x, y = np.arange(float(n)) + 1.0, np.arange(float(m))
    assert_matches_python(mod.f, x, y)
    assert_matches_python(mod.f, x, y, runner=mod.f.interpret)


@scriptc.script
def partial_indexing(x: np.ndarray, y: np.ndarray, i: int, j: int, k: int):
    if k == 0:
        return np.sum(x[i, j])  # a row: the second index is x's axis 1
    if k == 1:
        return np.sum(x[0, :, j])
    if k == 2:
        return np.sum(y[None, j])  # np.newaxis names no axis of y
    x[0, :, j] = 7.0
    return np.sum(y[:, None, j])


@pytest.mark.parametrize("i, j, k", [(0, 4, 0), (-3, 0, 0), (0, 5, 1), (0, -5, 1), (0, 5, 2), (0, 9, 3), (0, 1, 3)])
def test_index_errors_name_the_indexed_arrays_axis(i, j, k):
    """Partial indexing is a chain of selects, each of the view so far: errors named the view's axis (x[i, j]
    said axis 0 for j), where NumPy names the indexed array's."""

    def run(fn):
        try:
            return float(fn(np.zeros((2, 3, 4)), np.zeros((3, 4)), i, j, k))
        except IndexError as e:
            return str(e)

    want = run(partial_indexing.py_func)
    assert run(partial_indexing) == want and run(partial_indexing.interpret) == want
