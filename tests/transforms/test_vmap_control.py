"""scriptc.vmap on control flow that depends on mapped values (masking), writes, lists, errors, the batched graph
(FileCheck), and random programs from the fuzz generator."""

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import scriptc

from tests import fuzzgen
from tests.modules import load_module
from tests.e2e.test_fuzz_arrays import close, program as array_program
from tests.transforms.test_vmap import check, stack
from tests.util import assert_same_array, filecheck, run_captured

rng = np.random.default_rng(7)


# -- if / while / for on batched conditions ------------------------------------------------------------------
@scriptc.script
def piecewise(x: float, k: int) -> float:
    if x > 1.0:
        return x * 2.0
    elif x > 0.0:
        y = math.exp(x) - k
    else:
        y = -x
        if k > 2:
            y = y * k
    return y + 0.5


def test_if_elif_else_and_early_return():
    check(piecewise, rng.standard_normal(64) * 2, rng.integers(0, 5, 64), rtol=4e-15)  # vectorized exp
    check(piecewise, rng.standard_normal(16), 3, in_axes=(0, None), rtol=4e-15)


@scriptc.script
def escape_time(cr: float, ci: float, limit: int) -> int:
    zr, zi = 0.0, 0.0
    n = 0
    while zr * zr + zi * zi <= 4.0 and n < limit:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n += 1
    return n


def test_mandelbrot_escape_loop_runs_until_every_example_is_done():
    """A while on a batched condition: each example stops at its own iteration (finished ones are frozen)."""
    cr, ci = np.meshgrid(np.linspace(-2.0, 0.6, 24), np.linspace(-1.2, 1.2, 16))
    rows = scriptc.vmap(scriptc.vmap(escape_time, in_axes=(0, 0, None)), in_axes=(0, 0, None))
    got = rows(cr, ci, 60)
    want = np.array([[escape_time.py_func(a, b, 60) for a, b in zip(ra, rb)] for ra, rb in zip(cr, ci)])
    assert_same_array(got, want)
    assert len(set(want.ravel())) > 10


@scriptc.script
def loops(x: np.ndarray, n: int, c: float) -> tuple[float, int]:
    s = 0.0
    count = 0
    for i in range(n):
        if x[i] < 0.0:
            continue
        j = 0
        while j < i and s < c:
            s += x[j] * 0.5
            j += 1
        if s > 3.0 * c:
            break
        s += x[i]
        count += j
    return s, count


def test_for_with_mapped_trip_count_continue_break_nested_while():
    check(loops, rng.standard_normal((32, 8)), rng.integers(0, 9, 32), rng.random(32) * 2)


@scriptc.script
def first_above(x: np.ndarray, t: float) -> int:
    for i in range(len(x)):
        if x[i] > t:
            return i
    return -1


def test_return_from_inside_a_loop():
    check(first_above, rng.random((20, 10)), rng.random(20))


# -- writes ------------------------------------------------------------------------------------------------
@scriptc.script
def fill(x: np.ndarray) -> np.ndarray:
    y = np.zeros(5)
    y[0] = x[1]
    y[1:3] = x[:2] * 2.0
    y += 1.0
    r = y[3:]
    r[0] = x[0] - 1.0  # through a view
    if x[0] > 0.5:
        y[4] = 7.0
        y[0:2] -= x[2]
    k = 0
    while k < 5 and y[k] < 2.0:
        y[k] = -y[k]
        k += 1
    return y


def test_writes_masked_by_conditions():
    """Arrays written with mapped values get one copy per example; writes under a mapped condition only touch
    the examples that take it."""
    check(fill, rng.random((40, 3)) * 2)


@scriptc.script
def normalize_in_place(x: np.ndarray, shift: float) -> float:
    total = np.sum(x)
    x -= shift
    if total > 1.5:
        x[0] = 0.0
    return total


def test_writes_reach_mapped_arguments_as_the_loop_does():
    xs, ys = rng.random((6, 4)), None
    ys = xs.copy()
    got = scriptc.vmap(normalize_in_place, in_axes=(0, None))(xs, 0.25)
    want = np.array([normalize_in_place.py_func(y, 0.25) for y in ys])
    assert_same_array(got, want)
    assert_same_array(xs, ys)


@scriptc.script
def collect(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    acc: list[float] = []
    rows = [x[:2] * 0.0]
    for i in range(n):
        acc.append(x[i] * 2.0)
        rows.append(x[i : i + 2] + i)
    rows[0] = -rows[1]
    return np.array(acc), np.stack(rows, axis=1)


def test_lists_of_mapped_values():
    check(collect, rng.random((5, 4)), 2, in_axes=(0, None))
    with pytest.raises(IndexError):  # rows[1] of a one-row list, as per example
        scriptc.vmap(collect, in_axes=(0, None))(rng.random((5, 4)), 0)


@scriptc.script
def list_builtins(x: np.ndarray, n: int, c: float) -> tuple[float, float, float, bool, bool]:
    acc: list[float] = []
    for i in range(n):
        acc.append(x[i] * 2.0)
    return sum(acc), min(acc), max(acc), c in acc, 3.0 in acc


def test_list_builtins_fold_left_to_right_per_example():
    """sum/min/max/in over a list of batched values: Python's order and its ties and NaN (min keeps the first
    of equal values, NaN is never found)."""
    x = np.array([[1.0, 3.0, 2.0], [0.5, 0.5, -1.0], [math.nan, 1.0, 2.0], [-0.0, 0.0, 1.5]])
    check(list_builtins, x, 3, np.array([6.0, 1.0, math.nan, 0.0]), in_axes=(0, None, 0))
    with pytest.raises(ValueError, match="empty"):
        scriptc.vmap(list_builtins, in_axes=(0, None, 0))(x, 0, np.zeros(4))


@scriptc.script
def int_power(a: int, n: int, out: np.ndarray) -> int:
    if n >= 0:
        m = a**n
        if m > 5:
            out[0] = 1.0
        return m
    return -1


def test_integer_power_under_a_mask_does_not_raise_for_other_examples():
    """a ** n raises for a negative n; the examples that skip the branch must not make it raise."""
    check(int_power, np.array([2, 3, 4, 5]), np.array([3, -1, 0, -5]), np.zeros((4, 2)))


@scriptc.script
def zero_d(x: np.ndarray):
    return x * 2.0 + np.sum(x)


def test_examples_of_a_1d_array_for_an_array_parameter_are_0d_arrays():
    xs = rng.random(5)
    want = stack([zero_d.py_func(np.asarray(v)) for v in xs], 0)  # (native code cannot run 0-d * float yet)
    assert_same_array(scriptc.vmap(zero_d)(xs), want)
    assert_same_array(scriptc.vmap(zero_d).interpret(xs), want)


def test_writes_through_a_mapped_axis_reach_the_caller():
    xs = rng.random((4, 6))
    ys = xs.copy()
    scriptc.vmap(normalize_in_place, in_axes=(1, None))(xs, 0.5)
    for k in range(6):
        normalize_in_place.py_func(ys[:, k], 0.5)
    assert_same_array(xs, ys)


@scriptc.script
def prange_rows(x: np.ndarray, c: float) -> np.ndarray:
    n = x.shape[0]
    out = np.zeros(n)
    for i in scriptc.prange(n):
        out[i] = np.sum(x[i] * c)
    return out


@scriptc.script
def prange_sum(x: np.ndarray) -> float:
    s = 0.0
    for i in scriptc.prange(len(x)):
        s += x[i] * 2.0
    return s


def test_prange_loops():
    """A prange writing rows stays parallel; one carrying a batched reduction runs sequentially, in CPython's
    order (the per-example native prange adds in chunks, docs/parallel-and-gpu.md)."""
    check(prange_rows, rng.random((4, 50, 3)), rng.random(4))
    v = scriptc.vmap(prange_rows, in_axes=(None, 0))
    check(prange_rows, rng.random((50, 3)), rng.random(4), in_axes=(None, 0))
    assert "parallel=1" in str(v.graph_for(rng.random((50, 3)), rng.random(4)))
    xs = rng.random((4, 300))
    assert_same_array(scriptc.vmap(prange_sum)(xs), np.array([prange_sum.py_func(x) for x in xs]))


# -- indexing at mapped positions, per-example operators ------------------------------------------------
@scriptc.script
def gather(x: np.ndarray, i: int) -> tuple[float, np.ndarray]:
    return x[i, 0] * 2.0, x[i]


def test_index_that_differs_between_examples():
    check(gather, rng.random((5, 6, 2)), np.array([0, 5, -1, 2, 3]))
    check(gather, rng.random((6, 2)), np.array([0, 5, -1, 2, 3]), in_axes=(None, 0))
    with pytest.raises(IndexError):
        scriptc.vmap(gather)(rng.random((2, 6, 2)), np.array([0, 6]))


@scriptc.script
def factorial(n: int) -> int:
    if n <= 1:
        return 1
    return n * factorial(n - 1)


def test_recursive_calls_run_per_example():
    check(factorial, np.array([0, 1, 3, 5, 7, 12]))


@scriptc.script
def draw(key: np.ndarray) -> np.ndarray:
    return scriptc.random.uniform(key, (3,))


def test_vmap_over_random_keys():
    keys = scriptc.random.split(scriptc.random.key(0), 4)
    got = check(draw, keys, python=False)
    assert_same_array(got, np.stack([scriptc.random.uniform(k, (3,)) for k in keys]))


def test_empty_batch():
    @scriptc.script
    def f(x: np.ndarray, y: float) -> np.ndarray:
        if y > 0.0:
            return x * y
        return x

    assert scriptc.vmap(f)(np.zeros((0, 3)), np.zeros(0)).shape == (0, 3)


# -- errors ----------------------------------------------------------------------------------------------
@scriptc.script
def prints_when_positive(x: float) -> float:
    if x > 0.0:
        print("positive")
    return x


@scriptc.script
def prints_value(x: float) -> float:
    print(x)
    return x


@scriptc.script
def writes_argument(x: float, y: np.ndarray) -> float:
    y[0] = x
    return x


@scriptc.script
def writes_argument_when(x: float, y: np.ndarray) -> float:
    if x > 0.5:
        y[0] = 1.0
    return x


@scriptc.script
def appends_when(x: np.ndarray, c: float) -> int:
    acc: list[float] = []
    for v in x:
        if v > c:
            acc.append(v)
    return len(acc)


@pytest.mark.parametrize(
    "fn, args, in_axes, text, line",
    [
        (
            prints_when_positive,
            (rng.random(3),),
            0,
            "print under a condition that depends on a mapped value",
            'print("',
        ),
        (prints_value, (rng.random(3),), 0, "print of a value that differs between examples", "print(x)"),
        (writes_argument, (rng.random(3), np.zeros(2)), (0, None), "which is not mapped", "y[0] = x"),
        (writes_argument_when, (rng.random(3), np.zeros(2)), (0, None), "under a condition", "y[0] = 1.0"),
        (appends_when, (rng.random((3, 4)), rng.random(3)), 0, "append() on a list under a condition", "acc.append(v)"),
    ],
)
def test_compile_errors_point_at_the_line(fn, args, in_axes, text, line):
    with pytest.raises(scriptc.CompileError) as info:
        scriptc.vmap(fn, in_axes=in_axes)(*args)
    message = str(info.value)
    assert text in message and line in message and "^" in message, message
    assert info.value.filename.endswith("test_vmap_control.py") and info.value.lineno > 0


@scriptc.script
def too_big(x: float) -> float:
    if x > 0.9:
        raise ValueError(f"too big: {x}")
    return x * 2.0


def test_raise_under_a_mapped_condition():
    """A raise runs when some example reaches it, with the first such example's message."""
    check(too_big, rng.random(8) * 0.8)
    for run in (scriptc.vmap(too_big), scriptc.vmap(too_big).interpret):
        with pytest.raises(ValueError, match="too big: 0.95"):
            run(np.array([0.1, 0.95, 0.3, 0.99]))


@scriptc.script
def add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y


def test_argument_errors_are_jax_like():
    x, y = np.zeros((3, 2)), np.zeros((4, 2))
    with pytest.raises(
        ValueError,
        match="inconsistent sizes for array axes to be mapped: axis 0 of argument 'x' "
        "has size 3, axis 0 of argument 'y' has size 4",
    ):
        scriptc.vmap(add)(x, y)
    with pytest.raises(ValueError, match="along axis 2, which implies that its rank should be at least 3"):
        scriptc.vmap(add, in_axes=(0, 2))(x, x)
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        scriptc.vmap(add, in_axes=None)(x, x)
    with pytest.raises(ValueError, match=r"len\(in_axes\)=1, len\(args\)=2"):
        scriptc.vmap(add, in_axes=(0,))(x, x)
    with pytest.raises(ValueError, match="rank should be at least 1, but is only 0"):
        scriptc.vmap(too_big)(0.5)
    with pytest.raises(ValueError, match="out_axes is None"):
        scriptc.vmap(add, out_axes=None)(x, x)
    with pytest.raises(TypeError, match="by position"):
        scriptc.vmap(add)(x, y=x)
    with pytest.raises(TypeError, match="is mapped .in_axes 0. but is a list"):
        scriptc.vmap(add)([1.0, 2.0], x)
    with pytest.raises(TypeError, match="needs a scripted function"):
        scriptc.vmap(lambda x: x)


# -- the batched graph -------------------------------------------------------------------------------------
@scriptc.script
def branch(x: float) -> float:
    if x > 0.0:
        y = x * 2.0
    else:
        y = math.exp(x) - 1.0
    return y


def test_batched_branch_becomes_where():
    """Both sides run for every example (element-wise, as JAX does) and np.where picks per example."""
    filecheck(
        str(scriptc.vmap(branch).frontend_graph_for(np.zeros(4))),
        """
CHECK: graph(%x : Double(*)):
CHECK: %[[C:.+]] : Bool(*) = aten::gt(%x
CHECK-NOT: prim::If
CHECK: %[[T:.+]] : Double(*) = aten::mul(%x
CHECK: %[[EXP:.+]] : Double(*) = aten::exp(%x)
CHECK: %[[E:.+]] : Double(*) = aten::sub(%[[EXP]]
CHECK: %[[R:.+]] : Double(*) = aten::where(%[[C]], %[[T]], %[[E]])
CHECK: return (%[[R]])
""",
    )


@scriptc.script
def guarded(x: np.ndarray, i: int) -> float:
    if i < len(x):
        y = x[i] * 2.0
    else:
        y = -1.0
    return y


def test_branch_that_may_raise_runs_only_when_some_example_takes_it():
    """x[i] could raise for the examples that do not take the branch: the branch runs only if some example
    takes it, and x[i] (at an index that differs between examples) runs per example, the others reading the
    first taking example's operands; the result is then selected."""
    filecheck(
        str(scriptc.vmap(guarded).frontend_graph_for(np.zeros((3, 4)), np.zeros(3, dtype=np.int64))),
        """
CHECK: %[[C:.+]] : Bool(*) = aten::lt(%i
CHECK: %[[ANY:.+]] : bool = aten::any(%[[C]])
CHECK-NEXT: %[[T:.+]] : Double(*) = prim::If(%[[ANY]])
CHECK: %[[FIRST:.+]] : int = aten::argmax(%[[C]])
CHECK: %[[LANES:.+]] : Long(*) = aten::where(%[[C]], %{{.+}}, %[[FIRST]])
CHECK: prim::Loop(
CHECK: %[[K:.+]] : int = aten::getitem(%[[LANES]], %lane)
CHECK: aten::getitem(%{{.+}}, %{{.+}})
CHECK: %[[R:.+]] : Double(*) = aten::where(%[[C]], %[[T]],
""",
    )
    check(guarded, rng.random((6, 4)), np.array([0, 4, 9, -1, 3, 2]))


def test_batched_while_carries_an_active_mask():
    filecheck(
        str(scriptc.vmap(escape_time, in_axes=(0, 0, None)).frontend_graph_for(np.zeros(3), np.zeros(3), 5)),
        """
CHECK: = prim::Loop(%{{.+}}, %{{.+}}, %[[A0:.+]], %
CHECK-NEXT: block0(%{{.+}} : int, %[[A:.+]] : Bool(*),
CHECK: aten::where(%[[A]],
CHECK: %[[GO:.+]] : Bool(*) = aten::__and__(%[[A]],
CHECK: %[[ANY:.+]] : bool = aten::any(%[[GO]])
CHECK: -> (%[[ANY]], %[[GO]],
""",
    )


# -- random programs ---------------------------------------------------------------------------------------
EXAMPLES = int(os.environ.get("SCRIPTC_FUZZ_VMAP_EXAMPLES", "16"))  # the extended programs: 2/5 as many
FUZZ_SETTINGS = dict(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)


def check_program_batched(prog, data):
    """A random scalar program (branches, loops, early exits) vmapped over a batch of four argument tuples:
    each example's results are CPython's, bit for bit; where examples raise, the batched call raises the same
    exception. Programs of at most 25 lines: each branch of a batched program becomes array operators, and
    LLVM's time on the many small fusion groups of a 60-line program is minutes."""
    assume(len(prog.source.splitlines()) <= 25)
    batch = [data.draw(fuzzgen.args_for(prog.params)) for _ in range(4)]
    for args in batch:
        assume(fuzzgen.in_range(prog, args))
    fn = scriptc.script(fuzzgen.load(prog))
    expected = [fuzzgen.run_captured(fn.py_func, args)[0] for args in batch]
    columns = [np.array([a[k] for a in batch]) for k in range(len(prog.params))]
    v = scriptc.vmap(fn)
    errors = {e[1] for e in expected if e[0] == "exc"}
    for run in (v, v.interpret):
        if errors:
            with pytest.raises(tuple(errors)):
                run(*columns)
            continue
        got, want = run(*columns), stack([e[1] for e in expected], 0)
        assert isinstance(got, tuple) and len(got) == len(want), prog.source
        for g, w in zip(got, want):
            assert (
                g.dtype == w.dtype
                and np.array_equal(g, w, equal_nan=True)
                and np.array_equal(np.signbit(g), np.signbit(w))
            ), f"{prog.source}\n{batch}\n{g} != {w}"


@settings(max_examples=EXAMPLES, **FUZZ_SETTINGS)
@given(fuzzgen.programs(prints=False), st.data())
def test_fuzz_programs_batched_match_per_example(prog, data):
    check_program_batched(prog, data)


@settings(max_examples=EXAMPLES * 2 // 5, **FUZZ_SETTINGS)
@given(fuzzgen.programs(extended=True, prints=False), st.data())
def test_fuzz_extended_programs_batched(prog, data):
    """With locals unbound on some paths (UnboundLocalError), tuple swaps, ** and bitwise operators."""
    check_program_batched(prog, data)


@settings(max_examples=EXAMPLES, **FUZZ_SETTINGS)
@given(array_program())
def test_fuzz_array_expressions_batched(tmp_path_factory, case):
    """Random element-wise array expressions (test_fuzz_arrays.py's generator: dtypes, broadcasting, a time loop)
    vmapped over three examples: NumPy's per-example results, within that fuzzer's tolerances (vectorized math
    is within a few ulp), integers exactly."""
    dtype, source, (x, y, row, n) = case
    mod = load_module(tmp_path_factory.mktemp("vmap_arrays"), source)
    batch = [(x, y, row), (y, x, row[::-1].copy()), (x[::-1].copy(), y[::-1].copy(), row)]
    stacked = [np.stack([b[k] for b in batch]) for k in range(3)]
    expected = [run_captured(mod.f.py_func, *example, n) for example in batch]
    v = scriptc.vmap(mod.f, in_axes=(0, 0, 0, None))
    if any(e[2] is not None for e in expected):
        with pytest.raises(tuple({type(e[2]) for e in expected if e[2] is not None})):
            v(*stacked, n)
        return
    want = np.stack([np.asarray(e[0]) for e in expected])
    for got in (v(*stacked, n), v.interpret(*stacked, n)):
        assert close(got, want, dtype), f"{source}\nnative/interpreted={got!r}\nnumpy={want!r}"
