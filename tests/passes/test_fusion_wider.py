"""Wider fusion: the time loop fused into one element loop (prim::FusedLoop), and sibling consumers of one
producer sharing one fused loop with several outputs."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import scriptc
from scriptc.ops.interpreter import interpret
from scriptc.backend.llvm.lowering.arrays import allocation_count
from scriptc.ir import parse, print_graph, verify
from scriptc.passes.manager import PassManager
from tests.util import filecheck


def exactly(got, want) -> bool:
    """Bit-identical arrays (NaNs included) of the same dtype and shape."""
    got, want = np.asarray(got), np.asarray(want)
    return (
        got.dtype == want.dtype
        and got.shape == want.shape
        and np.array_equal(np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8))
    )


# -- time-loop fusion ---------------------------------------------------------------------------------------


@scriptc.script
def seed(x: np.ndarray) -> np.ndarray:
    for _ in range(1000):
        x = x + 1.0
    return x


@scriptc.script
def affine(x: np.ndarray, n: int, a: float) -> np.ndarray:
    for _ in range(n):
        x = x * a + 1.0
    return x


@scriptc.script
def coupled(x: np.ndarray, y: np.ndarray, n: int, a: float) -> np.ndarray:
    for i in range(n):
        x = x * a + y * 0.5 + i
        y = np.where(x > y, y - x, np.sqrt(np.abs(x)))
    return x + y


@scriptc.script
def with_invariant(x: np.ndarray, c: np.ndarray, n: int) -> np.ndarray:
    for i in range(n):
        x = np.maximum(x * c, x - 1.0) + 0.25 * i
    return x


@scriptc.script
def integers(x: np.ndarray, n: int) -> np.ndarray:
    for i in range(n):
        x = x * 3 + i
    return x


def test_seed_loop_becomes_one_fused_loop():
    filecheck(
        str(seed.graph_for(np.ones((2, 3)))),
        """
CHECK: graph(%x : Double(2, 3)):
CHECK-NOT: prim::Loop
CHECK: %[[N:.+]] : int = prim::Constant[value=1000]()
CHECK: %{{.+}} : Double(2, 3) = prim::FusedLoop[subgraph=prim::FusedLoop_0, carried=1](%[[N]], %x)
CHECK-NOT: prim::Loop
CHECK: with prim::FusedLoop_0 = graph(%i : int,
CHECK-NEXT: %x : Double(*, *)):
CHECK: prim::Constant[value=1.0]
CHECK: aten::add
""",
    )


def test_several_carried_arrays_are_guarded_by_a_shape_check():
    x = np.ones(5)
    filecheck(
        str(coupled.graph_for(x, x, 10, 0.5)),
        """
CHECK: %[[OK:.+]] : bool = prim::ShapesFit[carried=2](%x, %y)
CHECK: prim::If(%[[OK]])
CHECK: block0():
CHECK: prim::FusedLoop[subgraph=prim::FusedLoop_0, carried=2](%n, %x, %y, %a)
CHECK: block1():
CHECK: prim::Loop
""",
    )


@scriptc.script
def printing(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x + 1.0
        print(x)
    return x


@scriptc.script
def reads_another_element(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x + x[0]
    return x


@scriptc.script
def exits_early(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x * 0.5
        if x[0] < 0.1:
            break
    return x


@scriptc.script
def while_loop(x: np.ndarray, n: int) -> np.ndarray:
    k = 0
    while k < n:
        x = x * 0.5
        k += 1
    return x


@scriptc.script
def shrinks(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x[1:] * 2.0
    return x


@scriptc.script
def reduction_feeds_back(x: np.ndarray, n: int) -> np.ndarray:
    for _ in range(n):
        x = x - np.mean(x) * 0.5
    return x


@scriptc.script
def scalar_may_raise(x: np.ndarray, n: int) -> np.ndarray:
    k = 1
    for _ in range(n):
        x = x + 1.0
        k = n // k  # ZeroDivisionError is possible in general: the scalar must stay in a loop
    return x * k


@scriptc.script
def scalar_from_array(x: np.ndarray, n: int) -> np.ndarray:
    t = 0
    for _ in range(n):
        x = x + 1.0
        t = t + len(x)
    return x * t


@scriptc.script
def scalar_carried(x: np.ndarray, n: int) -> tuple[np.ndarray, float, int]:
    t = 0.0
    k = 0
    for _ in range(n):
        x = x * 0.9 + t
        t = t + 0.5
        k += 1
    return x, t, k


NOT_FUSED = [
    (printing, (np.ones(3), 2)),
    (reads_another_element, (np.ones(3), 2)),
    (exits_early, (np.ones(3), 2)),
    (while_loop, (np.ones(3), 2)),
    (shrinks, (np.ones(9), 2)),
    (reduction_feeds_back, (np.ones(3), 2)),
    (scalar_may_raise, (np.ones(3), 2)),
    (scalar_from_array, (np.ones(3), 2)),
]


@pytest.mark.parametrize("fn,args", NOT_FUSED, ids=[f.__name__ for f, _ in NOT_FUSED])
def test_loops_that_must_not_fuse(fn, args):
    text = str(fn.graph_for(*args))
    filecheck(
        text,
        """
CHECK-NOT: prim::FusedLoop
CHECK: prim::Loop
CHECK-NOT: prim::FusedLoop
""",
    )
    for n in (0, 1, 3):
        a = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in args[:-1]] + [n]
        b = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in args[:-1]] + [n]
        if fn is printing:
            continue
        assert exactly(fn(*a), fn.py_func(*b))


SHAPES = [(0,), (1,), (6,), (7,), (63,), (64,), (65,), (200,), (2, 3), (3, 0), (5, 33), (2, 3, 4)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100])
def test_fused_time_loop_is_bit_identical(shape, n):
    rng = np.random.default_rng(len(shape) * 100 + n)
    x = rng.standard_normal(shape)
    y = rng.standard_normal(shape)
    assert exactly(affine(x, n, 0.97), affine.py_func(x, n, 0.97))
    assert exactly(coupled(x, y, n, 1.01), coupled.py_func(x, y, n, 1.01))
    assert exactly(coupled.interpret(x, y, n, 1.01), coupled.py_func(x, y, n, 1.01))
    assert exactly(with_invariant(x, y, n), with_invariant.py_func(x, y, n))


def test_carried_scalars_join_the_fused_loop():
    x = np.linspace(-1, 1, 37)
    filecheck(
        str(scalar_carried.graph_for(x, 3)),
        """
CHECK-NOT: prim::Loop
CHECK: %x{{.*}} : Double(37), %t{{.*}} : float, %k{{.*}} : int = prim::FusedLoop[subgraph={{.+}}, carried=3](%n, %x, %t, %k)
CHECK: with prim::FusedLoop_0 = graph(%i : int,
CHECK: aten::add(%t
""",
    )
    for n in (0, 1, 9, 100):
        for v in (x, x[:0], x[::2]):
            got, want = scalar_carried(v, n), scalar_carried.py_func(v, n)
            assert exactly(got[0], want[0]) and got[1:] == want[1:] and type(got[2]) is int
            assert got[1:] == scalar_carried.interpret(v, n)[1:]


def test_zero_trips_return_the_argument_itself():
    x = np.arange(4.0)
    assert affine(x, 0, 2.0) is x and affine(x, -3, 2.0) is x
    y = affine(x, 2, 2.0)
    assert y is not x and not np.shares_memory(x, y) and exactly(x, np.arange(4.0))


def test_layouts_and_broadcast_invariants():
    rng = np.random.default_rng(3)
    x = rng.random((6, 8))
    for args in [(x, x[0]), (x, x[:, :1]), (x.T, x.T), (x[::2, ::-1], x[::2]), (x, np.float64(2.0) * x[:1, :1])]:
        c = np.ascontiguousarray(args[1]) if args[1].ndim == 0 else args[1]
        assert exactly(with_invariant(args[0], c, 11), with_invariant.py_func(args[0], c, 11))


def test_shapes_that_would_change_take_the_original_loop():
    rng = np.random.default_rng(4)
    x, c = rng.random((1, 5)), rng.random((3, 5))  # the first iteration grows x to (3, 5)
    assert exactly(with_invariant(x, c, 4), with_invariant.py_func(x, c, 4))
    with pytest.raises(ValueError, match="could not be broadcast"):
        with_invariant(rng.random((2, 5)), rng.random((3, 5)), 2)
    with pytest.raises(ValueError, match="could not be broadcast"):
        coupled(rng.random(3), rng.random(4), 2, 1.0)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float32"])
def test_scalar_path_dtypes(dtype):
    x = (np.arange(70) % 11).astype(dtype)
    assert "prim::FusedLoop" in str(integers.graph_for(x, 5))
    for n in (0, 3, 40):
        assert exactly(integers(x, n), integers.py_func(x, n))
        assert exactly(integers.interpret(x, n), integers.py_func(x, n))


def test_time_loop_allocates_exactly_one_array():
    x = np.random.default_rng(5).random(10_000)
    affine(x, 50, 0.5)
    before = allocation_count()
    y = affine(x, 50, 0.5)
    assert allocation_count() - before == 1
    assert exactly(y, affine.py_func(x, 50, 0.5))


def test_fused_loop_round_trips_and_interprets_like_the_original():
    x, y = np.linspace(-1, 1, 9), np.linspace(2, 3, 9)
    g = coupled.frontend_graph_for(x, y, 5, 0.9)
    fused = PassManager(verify_each=True).run(parse(print_graph(g)))
    assert "prim::FusedLoop" in str(fused)
    assert print_graph(parse(print_graph(fused))) == print_graph(fused)
    verify(parse(print_graph(fused)))
    for n in (0, 1, 5, 9):
        assert exactly(interpret(fused, [x, y, n, 0.9]), interpret(g, [x, y, n, 0.9]))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=3),
    st.integers(0, 30),
    st.floats(-2, 2, allow_nan=False),
    st.integers(0, 2**31),
)
def test_property_fused_time_loop_matches_numpy(shape, n, a, seed_):
    rng = np.random.default_rng(seed_)
    x, y = rng.standard_normal(shape), rng.standard_normal(shape)
    assert exactly(coupled(x, y, n, a), coupled.py_func(x, y, n, a))
    assert exactly(affine(x, n, a), affine.py_func(x, n, a))


# -- multi-output fusion ------------------------------------------------------------------------------------


@scriptc.script
def gd_epochs(x: np.ndarray, y: np.ndarray, epochs: int, lr: float) -> tuple[float, float]:
    a = 0.0
    b = 0.0
    for _ in range(epochs):
        err = a * x + b - y
        ga = np.mean(err * x)
        gb = np.mean(err)
        a -= lr * 2.0 * ga
        b -= lr * 2.0 * gb
    return a, b


@scriptc.script
def stats(x: np.ndarray, m: float) -> tuple[float, float, np.ndarray]:
    d = x - m
    return np.sum(d * d), np.max(d), np.abs(d) + 1.0


@scriptc.script
def reused_producer(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, float]:
    e = np.exp(x) - y
    return e, np.sum(e * y), np.min(e)


@scriptc.script
def foreign_array(x: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    e = x * 2.0
    return np.sum(e * z), np.sum(e)  # z is not read by the producer: its shape could differ


@scriptc.script
def write_between(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    e = x * 2.0
    s = np.sum(e)
    x[0] = 100.0
    return s, np.sum(e * x)


def test_gd_epoch_is_one_group_with_two_reductions():
    x = np.linspace(0, 1, 10)
    filecheck(
        str(gd_epochs.graph_for(x, x, 1, 0.1)),
        """
CHECK: %ga{{.*}} : float, %gb{{.*}} : float = prim::FusionGroup[subgraph=[[G:.+]]](%a{{.*}}, %x, %b{{.*}}, %y)
CHECK-NOT: aten::mean
CHECK: with [[G]] = graph(
CHECK: %[[ERR:.+]] : Double(10) = aten::sub
CHECK: %[[P:.+]] : Double(10) = aten::mul(%[[ERR]], %x)
CHECK: %[[GA:.+]] : float = aten::mean(%[[P]])
CHECK: %[[GB:.+]] : float = aten::mean(%[[ERR]])
CHECK: return (%[[GA]], %[[GB]])
""",
    )


def test_gd_epoch_matches_and_allocates_nothing():
    rng = np.random.default_rng(7)
    x = rng.random(1000)
    y = 3.0 * x + 2.0 + rng.standard_normal(1000) * 0.01
    gd_epochs(x, y, 3, 0.1)
    before = allocation_count()
    got = gd_epochs(x, y, 200, 0.1)
    assert allocation_count() == before  # no array at all, in any epoch
    assert got == gd_epochs.py_func(x, y, 200, 0.1)  # bit for bit: the means are NumPy's pairwise sums
    assert got == gd_epochs.interpret(x, y, 200, 0.1)


def test_reduction_and_elementwise_outputs_share_one_loop():
    x = np.linspace(-2, 3, 101)
    text = str(stats.graph_for(x, 0.5))
    filecheck(
        text,
        """
CHECK: %{{.+}} : float, %{{.+}} : float, %{{.+}} : Double(101) = prim::FusionGroup[subgraph=[[G:.+]]](%x, %m)
CHECK: with [[G]] = graph(
CHECK: aten::sum
CHECK: aten::max
CHECK: aten::abs
""",
    )
    assert text.count("prim::FusionGroup[") == 1
    for v in (x, x[::-3], np.array([], dtype=float)):
        if v.size == 0:
            with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
                stats(v, 0.5)
            continue
        s, mx, out = stats(v, 0.5)
        ws, wmx, wout = stats.py_func(v, 0.5)
        assert s == ws and mx == wmx and exactly(out, wout)
        assert (s, mx) == stats.interpret(v, 0.5)[:2]


def test_producer_used_elsewhere_is_one_of_the_results():
    x, y = np.linspace(0, 1, 33), np.linspace(1, 2, 33)
    filecheck(
        str(reused_producer.graph_for(x, y)),
        """
CHECK: %{{.+}} : float, %{{.+}} : float, %e{{.*}} : Double(33) = prim::FusionGroup
CHECK-NOT: prim::FusionGroup[
CHECK: return
""",
    )
    before = allocation_count()
    e, s, mn = reused_producer(x, y)
    assert allocation_count() - before == 1
    we, ws, wmn = reused_producer.py_func(x, y)
    assert np.allclose(e, we, rtol=1e-15, atol=0) and s == np.sum(e * y) and mn == np.min(e)


@scriptc.script
def raise_between(x: np.ndarray, k: int) -> tuple[float, float]:
    e = x * 2.0
    s = np.sum(e)
    q = 10 // k  # raises before np.max(e) of an empty e could
    return s, np.max(e) + q


def test_consumers_do_not_move_above_a_raise():
    filecheck(
        str(raise_between.graph_for(np.ones(3), 1)),
        """
CHECK-NOT: prim::FusionGroup
CHECK: aten::sum(%e)
CHECK: aten::floordiv
CHECK: aten::max(%e)
""",
    )
    with pytest.raises(ZeroDivisionError):
        raise_between(np.ones(0), 0)
    with pytest.raises(ValueError, match="zero-size array"):
        raise_between(np.ones(0), 1)
    assert raise_between(np.arange(4.0), 3) == raise_between.py_func(np.arange(4.0), 3)


def test_siblings_that_must_not_merge():
    for fn in (foreign_array, write_between):
        text = str(fn.graph_for(np.ones(4), np.ones(4)))
        assert not any(
            line.count("%") and "float, %" in line.split("=")[0]
            for line in text.splitlines()
            if "prim::FusionGroup[" in line
        ), text
    rng = np.random.default_rng(8)
    x, z = rng.random(5), rng.random((3, 5))
    assert np.allclose(foreign_array(x, z), foreign_array.py_func(x, z), rtol=1e-13)
    a, b = rng.random(6), rng.random(6)
    assert np.allclose(write_between(a.copy(), b), write_between.py_func(a.copy(), b), rtol=1e-13)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.integers(0, 5), st.integers(0, 2**31))
def test_property_multi_output_group_matches_the_interpreter(n, epochs, seed_):
    rng = np.random.default_rng(seed_)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    assert gd_epochs(x, y, epochs, 0.05) == gd_epochs.py_func(x, y, epochs, 0.05)
    assert gd_epochs(x, y, epochs, 0.05) == gd_epochs.interpret(x, y, epochs, 0.05)


def test_time_loop_fusion_before_and_after():
    import io

    g = parse(print_graph(affine.frontend_graph_for(np.ones(3), 5, 0.5)))
    out = io.StringIO()
    PassManager(
        ["inline", "canonicalize", "constant-propagation", "cse", "licm", "time-loop-fusion"],
        verify_each=True,
        print_after={"licm", "time-loop-fusion"},
        out=out,
    ).run(g)
    before, after = out.getvalue().split("IR after time-loop-fusion")
    filecheck(
        before,
        """
CHECK: IR after licm
CHECK: prim::Loop(%n, %{{.+}}, %x)
CHECK: aten::mul
CHECK: aten::add
CHECK-NOT: prim::FusedLoop
""",
    )
    filecheck(
        after,
        """
CHECK-NOT: prim::Loop
CHECK: %x{{.*}} : Double(*) = prim::FusedLoop[subgraph=prim::FusedLoop_0, carried=1](%n, %x, %a)
CHECK: with prim::FusedLoop_0 = graph(%i : int,
CHECK-NEXT: %x : Double(*),
CHECK-NEXT: %a : float):
CHECK: aten::mul(%x, %a)
CHECK: aten::add
CHECK: return
""",
    )


@scriptc.script
def time_loop_and_user_loop(x: np.ndarray, n: int) -> tuple[np.ndarray, float]:
    for _ in range(n):
        x = x * 0.5 + 1.0
    s = 0.0
    for i in range(n):
        s += x[i % x.shape[0]]
    return x, s


def test_loops_the_lowering_makes_are_not_runtime_unrolled_but_the_users_are():
    # the lowering's loops (time loops, element loops) are vectorized or dependent chains: LLVM's runtime
    # unrolling only grows them (and compile time); the user's loops keep LLVM's choice
    x = np.linspace(0.0, 1.0, 37)
    got, s = time_loop_and_user_loop(x.copy(), 50)
    want = x.copy()
    for _ in range(50):
        want = want * 0.5 + 1.0
    np.testing.assert_array_equal(got, want)
    assert s == sum(want[i % 37] for i in range(50))
    native = time_loop_and_user_loop.native_for_types(time_loop_and_user_loop._bind((x, 50), {})[0])
    hinted = re.findall(r"^  br label %\"(\w+)[\".:].*!llvm\.loop", native.unoptimized_ir, re.M)
    assert "time" in hinted and "for" in hinted
    user_back_edges = re.findall(r"^  br label %\"loop\.header[\w.:]*\"(.*)$", native.unoptimized_ir, re.M)
    assert user_back_edges and not any("llvm.loop" in rest for rest in user_back_edges)
    assert '!"llvm.loop.unroll.runtime.disable"' in native.unoptimized_ir
    optimized = native.llvm_ir
    assert not re.search(r"^time[\w.]*\.epil\w*:", optimized, re.M)  # no remainder copy of a time loop


@scriptc.script
def compare_arrays(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x <= y


def test_a_one_dimensional_strided_loop_is_not_vectorized_and_still_right():
    # in one dimension the loop nest runs only when an operand is strided or broadcast (else the flat loop
    # does), where a vector loop versioned on unit strides never runs: LLVM is told not to make one
    x, y = np.linspace(-1.0, 1.0, 41), np.linspace(1.0, -1.0, 41)
    for a, b in ((x, y), (x[::2], y[::2]), (x, y[:1]), (x[::-1], y)):
        np.testing.assert_array_equal(compare_arrays(a, b), a <= b)

    def no_vectorize_loops(*args):
        """How many loops of the element-wise kernel the signature calls carry vectorize.enable = false."""
        from scriptc.backend.llvm.lowering.summation import SHARED_IR

        caller = compare_arrays.native_for_types(compare_arrays._bind(args, {})[0]).unoptimized_ir
        (kernel,) = set(re.findall(r'call void @"(scriptc\.shared\.ew_le_[^"]*)"', caller))
        text = SHARED_IR[kernel]
        prop = set(re.findall(r'^(!\d+) = !\{ !"llvm\.loop\.vectorize\.enable", i1 false \}', text, re.M))
        loop_ids = re.findall(r"^(!\d+) = !\{ \1, (.*) \}$", text, re.M)
        return sum(1 for _, rest in loop_ids if prop & set(rest.split(", ")))

    assert no_vectorize_loops(x, y) == 1
    assert no_vectorize_loops(x.reshape(41, 1), y.reshape(41, 1)) == 0  # two dimensions: LLVM decides
