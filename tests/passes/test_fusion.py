"""Fusion: element-wise groups become one prim::FusionGroup and one loop with no intermediate arrays."""

import numpy as np
import pytest

import scriptc
from scriptc.ops.interpreter import interpret
from scriptc.backend.llvm import compile_graph
from scriptc.backend.llvm.lowering.arrays import allocation_count
from scriptc.ir import parse, print_graph, verify
from scriptc.passes.fusion import fuse
from tests.util import assert_matches_python, filecheck


@scriptc.script
def chain(x: np.ndarray) -> np.ndarray:
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.5 * x


def test_chain_is_exactly_one_fusion_group():
    text = str(chain.graph_for(np.ones(10)))
    filecheck(
        text,
        """
CHECK: graph(%x : Double(10)):
CHECK-NOT: aten::
CHECK: %{{.+}} : Double(10) = prim::FusionGroup[subgraph=prim::FusionGroup_0](%x)
CHECK-NOT: aten::
CHECK: return
CHECK: with prim::FusionGroup_0 = graph(%x : Double(10)):
CHECK: aten::neg
CHECK: aten::exp
CHECK: aten::sin
CHECK: aten::add
""",
    )
    assert text.count("prim::FusionGroup[") == 1


def test_fused_chain_allocates_only_its_output():
    x = np.linspace(-2, 2, 10_000)
    chain(x)
    before = allocation_count()
    y = chain(x)
    assert allocation_count() - before == 1
    assert np.allclose(y, chain.py_func(x), rtol=1e-15, atol=0)


@scriptc.script
def dot_like(x: np.ndarray, y: np.ndarray) -> float:
    return np.sum(np.exp(x) * y)


def test_reduction_of_a_fused_producer_fuses():
    filecheck(
        str(dot_like.graph_for(np.ones(3), np.ones(3))),
        """
CHECK: %{{.+}} : float = prim::FusionGroup[subgraph=prim::FusionGroup_0](%x, %y)
CHECK: with prim::FusionGroup_0 = graph(
CHECK: aten::exp
CHECK: aten::mul
CHECK: aten::sum
""",
    )
    x, y = np.linspace(0, 1, 1001), np.linspace(1, 2, 1001)
    before = allocation_count()
    dot_like(x, y)
    dot_like(x, y)
    assert allocation_count() == before  # no array at all
    assert_matches_python(dot_like, x, y, rtol=1e-13)


@scriptc.script
def guarded(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    a = x * 2.0
    y[0] = 5.0  # a write between the producer and its consumer
    return a + y


def test_no_fused_read_crosses_a_write():
    g = guarded.graph_for(np.ones(3), np.ones(3))
    assert "prim::FusionGroup" not in str(g)
    assert_matches_python(guarded, np.arange(3.0), np.arange(3.0))


@scriptc.script
def broadcast_mixed(x: np.ndarray, row: np.ndarray, k: int) -> np.ndarray:
    return np.where(x > 0.5, x * row, -row) + k


@scriptc.script
def narrow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x * 3 + y) // 2 - x


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "int16"])
def test_fused_intermediates_round_to_their_dtype(dtype):
    rng = np.random.default_rng(1)
    x = (rng.random(50) * 100).astype(dtype)
    y = (rng.random(50) * 100).astype(dtype)
    assert "prim::FusionGroup" in str(narrow.graph_for(x, y))
    assert_matches_python(narrow, x, y)


def test_broadcasting_and_layouts_inside_a_group():
    x = np.random.default_rng(2).random((4, 6))
    row = np.linspace(0, 1, 6)
    for args in [(x, row), (x.T.copy().T, row[::-1]), (x[::-1, ::2], row[::2])]:
        assert_matches_python(broadcast_mixed, *args, 3)


def test_fused_graph_interprets_like_the_original_and_round_trips():
    g = chain.frontend_graph_for(np.ones(3))
    fused = chain._compile(chain._bind((np.ones(3),), {})[0])
    fuse(fused)
    verify(fused)
    assert print_graph(parse(print_graph(fused))) == print_graph(fused)
    x = np.linspace(-1, 1, 9)
    assert np.array_equal(interpret(g, [x]), interpret(fused, [x]))
    # vectorized exp/sin (libmvec) are within 4 ulp of libm's
    assert np.allclose(compile_graph(fused)(x), interpret(fused, [x]), rtol=1e-15, atol=0)


def test_simd_math_is_used_for_float64_groups_and_stays_accurate():
    from scriptc.backend.llvm.runtime.engine import engine

    if "exp" not in engine().vector_math:
        pytest.skip("no libmvec on this machine: float64 groups stay scalar")
    x = np.linspace(-4, 4, 1003)  # not a multiple of the vector width: the scalar loop finishes the tail
    asm = chain.inspect_asm(x)
    assert "_ZGV" in chain.inspect_llvm(x)  # a libmvec variant is called
    assert "ymm" in asm or "zmm" in asm
    y, ref = chain(x), chain.py_func(x)
    ulp = np.abs(y - ref) / np.spacing(np.abs(ref))
    assert ulp.max() <= 4


@scriptc.script
def carried(x: np.ndarray, n: int) -> np.ndarray:
    k = 1
    for _ in range(n):  # a carried scalar that may raise: no time-loop fusion (test_fusion2.py)
        x = x + 1.0
        k = n // k
    return x * k


def test_loop_carried_update_reuses_its_buffer():
    x = np.random.default_rng(4).random((2, 3))
    filecheck(
        str(carried.graph_for(x, 3)),
        """
CHECK: prim::Loop
CHECK: prim::FusionGroup[subgraph={{.*}}, reuse=0](%x
""",
    )
    carried(x, 5)
    before = allocation_count()
    y = carried(x, 1000)
    # the first iteration copies the caller's array, then in place; one more for x * k
    assert allocation_count() - before == 2
    assert np.array_equal(y, carried.py_func(x, 1000)) and not np.shares_memory(x, y)


@scriptc.script
def aliased(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    y = x + 0.0
    keep = y
    for _ in range(n):
        y = y + 1.0
    return keep, y


def test_buffer_reuse_never_writes_a_buffer_someone_else_sees():
    assert_matches_python(aliased, np.arange(4.0), 3)


@scriptc.script
def lone_exp(z: np.ndarray) -> np.ndarray:
    return np.exp(z)


@scriptc.script
def lone_sqrt(z: np.ndarray) -> np.ndarray:
    return np.sqrt(z)


def test_a_lone_library_math_function_runs_in_the_fused_loop():
    # np.exp alone is a group of one (its loop calls the SIMD variants); np.sqrt, one instruction, stays alone
    z = np.linspace(-3.0, 3.0, 1001)
    filecheck(
        str(lone_exp.graph_for(z)),
        """
        CHECK: prim::FusionGroup
        CHECK: aten::exp
        CHECK: return
    """,
    )
    filecheck(
        str(lone_sqrt.graph_for(np.abs(z))),
        """
        CHECK-NOT: prim::FusionGroup
        CHECK: aten::sqrt
        CHECK: return
    """,
    )
    for x in (z, z[::2]):  # contiguous: SIMD; strided: the scalar loop (NumPy's own SIMD exp is the oracle)
        got, want = lone_exp(x), lone_exp.interpret(x)
        assert np.max(np.abs(got - want) / want) < 4 * np.finfo(np.float64).eps  # within 4 ulp
