"""Native code that raises frees what it allocated (scriptc/backend/llvm/lowering/unwind.py), and the numbers of its
messages travel per thread (errors.py).

Two kinds of checks: the native allocation counters (every array a raising call allocated is freed before the
error returns: allocations and frees move by the same amount), over many raising situations; and resident memory
staying flat over 100,000 raising calls that each allocate about 1.6 MB. Every raising call is also checked to
raise what CPython + NumPy raise, with the same message.
"""

from __future__ import annotations

import gc
import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scriptc
from scriptc.backend.llvm import compile_graph
from scriptc.backend.llvm.lowering.arrays import allocation_count, free_count
from tests.util import run_threads_interleaved


def counters() -> tuple[int, int]:
    return allocation_count(), free_count()


def python_error(f, args) -> BaseException:
    try:
        f(*args)
    except Exception as e:  # noqa: BLE001 - whatever Python raises is what native code must raise
        return e
    raise AssertionError(f"{f.__name__}{args} does not raise in Python")


def check_frees_on_raise(native, py_func, *args, min_allocations: int = 1) -> None:
    """``native(*args)`` raises Python's exception, and frees every array it allocated before returning."""
    expected = python_error(py_func, args)
    for _ in range(3):  # the first call compiles; the later ones run the entry point
        allocated, freed = counters()
        with pytest.raises(type(expected)) as info:
            native(*args)
        assert str(info.value) == str(expected)
        allocated, freed = allocation_count() - allocated, free_count() - freed
        assert allocated >= min_allocations, "the raising call should allocate before it raises"
        assert freed == allocated, f"{allocated} arrays allocated, {freed} freed"


# -- raising situations --------------------------------------------------------------------------------------


@scriptc.script
def fused_then_index(x: np.ndarray, i: int) -> float:
    y = x * 2.0
    z = y + 1.0
    return z[i]


@scriptc.script
def unfused_then_index(x: np.ndarray, i: int) -> float:
    y = x * 2.0
    z = np.exp(y[1:])
    w = y[:-1] - z
    return w[i] + y[0] + z[0]


@scriptc.script
def float_zero_division(x: np.ndarray, d: float) -> float:
    y = x + 1.0
    q = 1.0 / d
    return q + y[0]


@scriptc.script
def int_zero_division(x: np.ndarray, k: int) -> float:
    y = x * 3.0
    n = len(y)
    return n // k + y[0]


@scriptc.script
def broadcast_error(x: np.ndarray, w: np.ndarray) -> float:
    y = x * 2.0
    z = np.sqrt(y) + w
    return z[0] + y[0]


@scriptc.script
def view_then_index(x: np.ndarray, i: int) -> float:
    y = x * 2.0
    v = y[1:]
    return v[i]


@scriptc.script
def in_branch(x: np.ndarray, i: int, flag: bool) -> float:
    y = x * 2.0
    if flag:
        z = np.exp(y) + y
        return z[i]
    return y[0]


@scriptc.script
def loop_carried(x: np.ndarray, i: int, n: int) -> float:
    s = 0.0
    for k in range(n):
        x = x * 1.5
        y = x - 1.0
        if k == 3:
            s = s + y[i]
    return s


@scriptc.script
def while_carried(x: np.ndarray, i: int) -> float:
    acc = x * 1.0
    k = 0
    s = 0.0
    while k < 6:
        acc = acc + x
        k += 1
        if k == 4:
            s = acc[i]
    return s


@scriptc.script
def tuple_held(x: np.ndarray, i: int) -> float:
    t = (x * 2.0, x + 1.0)
    a = t[0]
    return a[i] + t[1][0]


@scriptc.script
def tuple_carried(x: np.ndarray, i: int, n: int) -> float:
    t = (x * 1.0, x * 2.0)
    for k in range(n):
        t = (t[1], t[0] + 1.0)
    a, b = t
    return a[i] - b[0]


@scriptc.script
def negative_int_power(x: np.ndarray, k: int) -> np.ndarray:
    a = x * 2
    b = a**k
    return b + a


@scriptc.script
def reuse_pow(x: np.ndarray, e: int, n: int) -> np.ndarray:
    a = x * 2
    for k in range(n):
        a = (a + 1) ** (e - k + 0 * x[0])  # fused update into a's buffer; raises once e - k < 0 (the element
        # read keeps the loop out of time-loop fusion)
    return a


@scriptc.script
def empty_reduction(x: np.ndarray) -> np.ndarray:
    y = x * 2.0
    return np.max(y, axis=0)


@scriptc.script
def overlapping_copy(x: np.ndarray) -> np.ndarray:
    y = x * 1.0
    y[1:] = y[:3]
    return y


@scriptc.script(nogil=True)
def nogil_index(x: np.ndarray, i: int) -> float:
    y = x * 2.0
    z = np.exp(y) - y
    return z[i] + y[0]


X = np.linspace(0.5, 2.0, 10)
XI = np.arange(10, dtype=np.int64)

RAISING = [
    (fused_then_index, (X, 10)),
    (fused_then_index, (X, -11)),
    (unfused_then_index, (X, 9)),
    (float_zero_division, (X, 0.0)),
    (int_zero_division, (X, 0)),
    (broadcast_error, (X, np.ones(3))),
    (view_then_index, (X, 9)),
    (in_branch, (X, 10, True)),
    (loop_carried, (X, 10, 6)),
    (while_carried, (X, 10)),
    (tuple_held, (X, 10)),
    (tuple_carried, (X, 10, 3)),
    (tuple_carried, (X, 10, 11)),  # more iterations than an unrolled loop would take whole
    (negative_int_power, (XI, -1)),  # raised in the loop that fills the allocated output
    (reuse_pow, (XI, 2, 5)),  # raised in a fused loop writing into a buffer it took over
    (empty_reduction, (np.zeros((0, 3)),)),  # raised after the output is allocated
    (overlapping_copy, (X,)),  # raised after the overlapping source was copied
    (nogil_index, (X, 10)),
]


@pytest.mark.parametrize("f, args", RAISING, ids=lambda v: getattr(v, "__name__", ""))
def test_raising_call_frees_everything(f, args):
    check_frees_on_raise(f, f.py_func, *args)


@pytest.mark.parametrize("f, args", RAISING, ids=lambda v: getattr(v, "__name__", ""))
def test_same_functions_still_work(f, args):
    """The functions above, called so that they do not raise, still return Python's result and free what they
    do not return."""
    ok = {
        fused_then_index: (X, 3),
        unfused_then_index: (X, 2),
        float_zero_division: (X, 2.0),
        int_zero_division: (X, 4),
        broadcast_error: (X, np.ones(10)),
        view_then_index: (X, -1),
        in_branch: (X, 3, True),
        loop_carried: (X, 2, 6),
        while_carried: (X, -1),
        tuple_held: (X, 1),
        tuple_carried: (X, 1, 11),
        negative_int_power: (XI, 2),
        reuse_pow: (XI, 2, 2),
        empty_reduction: (np.ones((2, 3)),),
        overlapping_copy: (np.ones(4),),
        nogil_index: (X, 2),
    }[f]
    f(*ok)
    allocated, freed = counters()
    got, want = f(*ok), f.py_func(*ok)
    allocated, freed = allocation_count() - allocated, free_count() - freed
    if np.asarray(got).dtype.kind == "f":  # (np.exp's vector loop calls libmvec: within 4 ulp of NumPy's)
        np.testing.assert_array_max_ulp(np.asarray(got), np.asarray(want), maxulp=4)
    else:
        np.testing.assert_array_equal(got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    if not isinstance(got, np.ndarray):
        assert freed == allocated, f"{allocated} arrays allocated, {freed} freed"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(
        [
            fused_then_index,
            unfused_then_index,
            view_then_index,
            loop_carried,
            while_carried,
            tuple_held,
            tuple_carried,
            nogil_index,
        ]
    ),
    st.integers(0, 12),
    st.integers(-14, 14),
    st.integers(0, 9),
)
def test_property_raising_or_not_frees_all_but_the_result(f, size, i, n):
    """Random sizes and indices, in or out of bounds: the native call raises what Python raises (or returns
    what it returns), and every array it allocated is freed (these functions return no array)."""
    x = np.linspace(0.5, 2.0, size)
    args = (x, i, n)[: len(f.param_names)]
    try:
        want = f.py_func(*args)
    except Exception as e:  # noqa: BLE001
        want = e
    allocated, freed = counters()
    try:
        got = f(*args)
    except Exception as e:  # noqa: BLE001
        got = e
    allocated, freed = allocation_count() - allocated, free_count() - freed
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
    else:  # exp calls the C library (SIMD), which may differ from NumPy's by an ulp (docs/language.md)
        np.testing.assert_allclose(got, want, rtol=1e-14)
    assert freed == allocated, f"{allocated} arrays allocated, {freed} freed"


def test_fused_situations_really_are_fused():
    """Keep the parametrized cases honest: these raise inside or after fused groups."""
    for f, args in [(fused_then_index, (X, 1)), (negative_int_power, (XI, 1)), (reuse_pow, (XI, 2, 5))]:
        assert "prim::FusionGroup" in str(f.graph_for(*args)), f.__name__
    assert "reuse=0" in str(reuse_pow.graph_for(XI, 2, 5))


# -- nested calls between scripted functions (compiled before the inline pass: real native calls) -------------


@scriptc.script
def inner_raises(x: np.ndarray, i: int) -> float:
    y = x * 2.0
    z = y + 1.0
    return z[i] + y[0]


@scriptc.script
def middle(x: np.ndarray, i: int) -> float:
    z = x + 1.0
    t = inner_raises(z, i)
    return t + z[0]


@scriptc.script
def outer(x: np.ndarray, i: int) -> float:
    w = x * 3.0
    s = middle(w, i)
    return s + w[1]


@scriptc.script
def make_array(x: np.ndarray) -> np.ndarray:
    return x * 2.0 + 1.0


@scriptc.script
def holds_callee_result(x: np.ndarray, i: int) -> float:
    a = make_array(x)
    b = make_array(a)
    return a[i] + b[0]


@scriptc.script
def callee_in_loop(x: np.ndarray, i: int, n: int) -> float:
    s = 0.0
    for k in range(n):
        x = make_array(x)
        if k == 2:
            s = s + inner_raises(x, i)
    return s


def real_calls(f, *args):
    nf = compile_graph(f.frontend_graph_for(*args))
    assert "call i32" in nf.unoptimized_ir, "the callee should be a real call"
    return nf


@pytest.mark.parametrize(
    "f, args",
    [
        (inner_raises, (X, 10)),
        (middle, (X, 10)),
        (outer, (X, -12)),
        (holds_callee_result, (X, 10)),
        (callee_in_loop, (X, 10, 5)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_callee_that_raises_frees_its_own_and_the_caller_its_own(f, args):
    nf = real_calls(f, *args)
    check_frees_on_raise(nf, f.py_func, *args, min_allocations=2)
    ok = (X, 1) + args[2:]
    assert nf(*ok) == f.py_func(*ok)


# -- moves into tuples, and elements of an input tuple (ownership.py: no reference taken or dropped) -----------


@scriptc.script
def pick_from(t: tuple[np.ndarray, np.ndarray], i: int) -> tuple[np.ndarray, float]:
    a, b = t  # elements of an input are borrowed
    c = t[1]
    pair = ((a, c), b * 2.0)  # borrowed elements put into a new tuple take their own references
    return pair[0][1], a[i] + pair[1][0]


@scriptc.script
def nested_moves(x: np.ndarray, i: int, n: int) -> float:
    p = (x * 2.0, x + 1.0)  # temporaries moved into p, p into q
    q = (p, x * 3.0)
    for k in range(n):
        q = ((q[0][1], q[1]), q[0][0] + 1.0)
    r, s = q
    u, v = r
    return u[i] + v[0] + s[0]


@scriptc.script
def calls_pick(x: np.ndarray, i: int) -> float:
    y = x * 2.0
    z, w = pick_from((y, x + 1.0), i)  # a real call: the callee borrows the elements of the caller's tuple
    return z[0] + w + y[1]


@scriptc.script
def returns_nested(x: np.ndarray, flag: bool) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    p = (x * 2.0, x + 1.0)
    if flag:
        p = (p[1], p[0] * 3.0)  # the old p[0] is dropped here
    return p, p[0] - 1.0


@pytest.mark.parametrize(
    "f, args",
    [(pick_from, ((X, X + 1.0), 10)), (nested_moves, (X, 10, 0)), (nested_moves, (X, -11, 3))],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_moved_and_borrowed_references_are_freed_on_raise(f, args):
    check_frees_on_raise(f, f.py_func, *args, min_allocations=1)
    ok = (args[0], 1) + args[2:]
    allocated, freed = counters()
    got, want = f(*ok), f.py_func(*ok)
    if isinstance(got, tuple):
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
        del got
    else:
        assert got == want
    assert free_count() - freed == allocation_count() - allocated


def test_callee_borrowing_tuple_elements_frees_what_it_owns():
    nf = real_calls(calls_pick, X, 10)
    check_frees_on_raise(nf, calls_pick.py_func, X, 10, min_allocations=3)
    allocated, freed = counters()
    assert nf(X, 2) == calls_pick.py_func(X, 2)
    assert free_count() - freed == allocation_count() - allocated


@pytest.mark.parametrize("flag", [False, True])
def test_returned_nested_tuples_keep_exactly_their_arrays(flag):
    """The three arrays returned stay allocated (freed too early, one would count as freed); every temporary is
    freed (one leaked would count as allocated)."""
    returns_nested(X, flag)
    allocated, freed = counters()
    (a, b), c = returns_nested(X, flag)
    assert (allocation_count() - allocated) - (free_count() - freed) == 3
    (wa, wb), wc = returns_nested.py_func(X, flag)
    for got, want in zip([a, b, c], [wa, wb, wc]):
        np.testing.assert_array_equal(got, want)


@scriptc.script
def chain_of_temporaries(x: np.ndarray, i: int) -> float:
    y = np.sin(x)  # each array dies as the next one is made
    y = np.cos(y) + 1.0
    y = np.sqrt(y) * 2.0
    y = np.tanh(y) - 0.5
    y = np.cos(y) + 1.0
    y = np.sqrt(y) * 2.0
    y = np.tanh(y) - 0.5
    return y[i]


def test_a_slot_is_reused_once_its_array_is_dropped():
    """Each array the function holds has a slot for the error path; a slot is free again when its array is
    dropped, so a chain of thirteen temporaries needs a few slots, not thirteen, and raising still frees all."""
    import re

    nf = compile_graph(chain_of_temporaries.frontend_graph_for(X, 1))  # (not fused: an array per operator)
    slots = len(re.findall(r"= alloca i8\*$", nf.unoptimized_ir, re.M)) + sum(
        map(int, re.findall(r"= alloca i8\*, i64 (\d+)$", nf.unoptimized_ir, re.M))
    )
    assert 1 <= slots <= 3
    check_frees_on_raise(nf, chain_of_temporaries.py_func, X, 10, min_allocations=13)
    assert nf(X, 2) == chain_of_temporaries.py_func(X, 2)


# -- strs --------------------------------------------------------------------------------------------------


@scriptc.script
def str_held(x: np.ndarray, i: int, n: int) -> float:
    s = f"{n} items, {n * 2} halves"
    y = x * 2.0
    v = y[i]
    print(s)
    return v


def test_strs_held_at_a_raise_are_released(capsys):
    args = (X, 10, 123456789)
    check_frees_on_raise(str_held, str_held.py_func, *args)
    assert str_held(X, 1, 7) == str_held.py_func(X, 1, 7)
    assert capsys.readouterr().out == "7 items, 14 halves\n" * 2
    gc.collect()
    blocks = sys.getallocatedblocks()
    for _ in range(3000):
        with pytest.raises(IndexError):
            str_held(*args)
    gc.collect()
    grown = sys.getallocatedblocks() - blocks
    assert grown < 500, f"{grown} Python objects left over after 3000 raising calls"


# -- resident memory over 100,000 raising calls of about 1.6 MB each -----------------------------------------

N = 200_000  # float64: 1.6 MB; np.empty leaves it untouched, so the loop costs malloc/free, not memset


@scriptc.script
def big_index(n: int, i: int) -> float:
    y = np.empty(n)
    return y[i]


@scriptc.script
def big_zero_division(n: int, d: float) -> float:
    y = np.empty(n)
    q = len(y) / d
    return q + y[0]


@scriptc.script
def big_broadcast(n: int, w: np.ndarray) -> float:
    y = np.empty(n)
    z = y + w
    return z[0]


@scriptc.script
def big_inner(n: int, i: int) -> float:
    y = np.empty(n)
    return y[i]


@scriptc.script
def big_outer(n: int, i: int) -> float:
    z = np.empty(n)
    return big_inner(n, i) + z[0]


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.parametrize("case", ["IndexError", "ZeroDivisionError", "broadcast ValueError", "callee"])
def test_memory_stays_flat_over_100000_raising_calls(case):
    f, args, exc = {
        "IndexError": (big_index, (N, N), IndexError),
        "ZeroDivisionError": (big_zero_division, (N, 0.0), ZeroDivisionError),
        "broadcast ValueError": (big_broadcast, (N, np.ones(3)), ValueError),
        "callee": (real_calls(big_outer, N, N), (N, N), IndexError),
    }[case]
    for _ in range(1000):
        try:
            f(*args)
        except exc:
            pass
    gc.collect()
    before, (allocated, freed) = resident_bytes(), counters()
    for _ in range(100_000):
        try:
            f(*args)
        except exc:
            pass
    gc.collect()
    grown = resident_bytes() - before
    allocated, freed = allocation_count() - allocated, free_count() - freed
    assert allocated >= 100_000 and freed == allocated, (allocated, freed)
    assert grown < 8 * 2**20, f"{case}: resident memory grew by {grown / 2**20:.1f} MiB"


# -- the payload is per thread ---------------------------------------------------------------------------


@scriptc.script(nogil=True)
def pick(x: np.ndarray, i: int) -> float:
    return x[i]


def test_two_nogil_threads_raising_at_once_keep_their_own_numbers():
    """Each thread raises IndexErrors whose messages carry its own index and size; with one process-wide payload
    the threads would read each other's numbers."""
    pick(np.zeros(3), 0)
    mixed, barrier = [], threading.Barrier(2)

    def run(size: int, first: int):
        x = np.zeros(size)
        barrier.wait()
        for k in range(20_000):
            i = first + k
            try:
                pick(x, i)
            except IndexError as e:
                want = f"index {i} is out of bounds for axis 0 with size {size}"
                if str(e) != want:
                    mixed.append((str(e), want))
            else:
                mixed.append(("no error", i))

    run_threads_interleaved(
        [threading.Thread(target=run, args=(5, 1000)), threading.Thread(target=run, args=(7, -(10**9)))]
    )
    assert not mixed, f"{len(mixed)} messages with another thread's numbers, e.g. {mixed[:3]}"


@scriptc.script
def nine_operands(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    d: np.ndarray,
    e: np.ndarray,
    f: np.ndarray,
    g: np.ndarray,
    h: np.ndarray,
    i: np.ndarray,
) -> np.ndarray:
    return a * b + c * d - e * f + g * h + i


def test_broadcast_error_of_many_operands():
    """A fused group's broadcast check carries every operand's dimensions into the message (18 numbers here)."""
    xs = [np.full((2, 3), k + 1.0) for k in range(9)]
    np.testing.assert_array_equal(nine_operands(*xs), nine_operands.py_func(*xs))
    xs[-1] = np.ones((2, 4))
    with pytest.raises(ValueError) as want:
        nine_operands.py_func(*xs)
    allocated, freed = counters()
    with pytest.raises(ValueError) as got:
        nine_operands(*xs)
    assert str(got.value).startswith("operands could not be broadcast together with shapes")
    assert allocation_count() - allocated == free_count() - freed
    assert "(2,4)" in str(got.value) and "(2,4)" in str(want.value)


# -- arrays an exception carries ------------------------------------------------------------------------------


@scriptc.script
def raises_its_array(x: np.ndarray, n: int):
    y = x * 2.0
    if n > 0:
        raise ValueError("bad", (y, n))
    assert n < 0, y
    return 0


@scriptc.script
def fills(n: int) -> np.ndarray:
    return np.zeros(n) + 7.0


@pytest.mark.parametrize("n", [1, 0])
def test_an_exception_keeps_its_arrays_after_native_code_freed_theirs(n):
    # the exception's array is a copy: the native array it was read from is freed as the error returns, and later
    # calls reuse that memory
    x = np.arange(1.0, 2001.0)
    expected = python_error(raises_its_array.py_func, (x, n))
    got = python_error(raises_its_array, (x, n))
    for _ in range(20):
        fills(2000)
    assert type(got) is type(expected)
    if n:  # (pytest rewrites the assert statement of this module's Python function: its message differs)
        assert str(got) == str(expected)
    got_array = got.args[1][0] if n else got.args[0]
    assert np.array_equal(got_array, x * 2.0) and got_array.flags.owndata
