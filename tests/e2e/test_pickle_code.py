"""Scripted functions pickle by reference (module and qualified name), so they travel to process pools;
``f.code`` prints the optimized graph as Python-like source."""

import concurrent.futures
import multiprocessing
import pickle
import textwrap
import types

import numpy as np
import pytest

import scriptc

from tests.util import filecheck


@scriptc.script
def scale(x: np.ndarray, a: float) -> np.ndarray:
    return x * a + 1.0


class Holder:
    @staticmethod
    def plain(n: int) -> int:
        return n * 2


nested = scriptc.script(Holder.plain)
Holder.nested = nested
Holder.nested.__qualname__ = "Holder.nested"


def test_pickle_is_by_reference():
    data = pickle.dumps(scale)
    assert b"scale" in data and len(data) < 200  # a name, not the code or the graph
    assert pickle.loads(data) is scale
    assert pickle.loads(pickle.dumps(Holder.nested)) is Holder.nested


def test_local_function_is_a_clear_pickling_error():
    @scriptc.script
    def local(n: int) -> int:
        return n

    with pytest.raises(pickle.PicklingError, match="define them at module level"):
        pickle.dumps(local)


def _call_in_child(args):
    x, a = args
    return scale(x, a)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_pool(method):
    xs = [np.arange(4.0) * k for k in range(3)]
    with multiprocessing.get_context(method).Pool(2) as pool:
        got = pool.map(scale.__call__, [])  # an empty map still pickles the callable's reference
        got = pool.starmap(scale, [(x, 2.0) for x in xs])
    for g, x in zip(got, xs):
        np.testing.assert_array_equal(g, x * 2.0 + 1.0)


def test_process_pool_executor():
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        got = list(ex.map(scale, [np.ones(3), np.zeros(2)], [3.0, 4.0]))
    np.testing.assert_array_equal(got[0], np.full(3, 4.0))
    np.testing.assert_array_equal(got[1], np.ones(2))


@scriptc.script
def cube(x: float) -> float:
    return x * x * x


cube_slope = scriptc.grad(cube)
cube_both = scriptc.value_and_grad(cube, argnums=(0,))
cubes = scriptc.vmap(cube)
slopes = scriptc.vmap(scriptc.grad(cube))


def test_transformed_functions_pickle_as_what_they_were_made_of():
    # grad, value_and_grad and vmap of a module-level function, called or not: the transform and the function's
    # reference travel, the compiled code stays in its process
    xs = np.array([0.5, -2.0, 3.0])
    before = [pickle.loads(pickle.dumps(f)) for f in (cube_slope, cube_both, cubes, slopes)]
    expected = [cube_slope(1.5), cube_both(1.5), cubes(xs), slopes(xs)]
    after = [pickle.loads(pickle.dumps(f)) for f in (cube_slope, cube_both, cubes, slopes)]
    for copies in (before, after):
        assert copies[0](1.5) == expected[0] == 6.75
        assert copies[1](1.5) == expected[1] == (3.375, (6.75,))
        np.testing.assert_array_equal(copies[2](xs), expected[2])
        np.testing.assert_array_equal(copies[3](xs), expected[3])
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
        assert list(ex.map(cube_slope, [1.0, 2.0])) == [3.0, 12.0]


@scriptc.script
def loops(x: np.ndarray, n: int) -> np.ndarray:
    i = 0
    while i < n:
        if i % 2 == 0:
            x = x + 1.0
        else:
            print(i)
        i += 1
    for k in range(3):
        x = np.exp(x) * 2.0
    return x


def test_code_shows_control_flow_and_fusion(capsys):
    loops(np.ones(3), 2)
    capsys.readouterr()
    filecheck(
        loops.code,
        textwrap.dedent("""
        CHECK: def loops(x: "Double(*)", n: int) -> "Double(*)":
        CHECK: while [[COND:\\w+]]:
        CHECK:   if (i_{{\\d+}} % 2) == 0:
        CHECK:     x_{{\\d+}} = x_{{\\d+}} + 1.0
        CHECK:   else:
        CHECK:     print(i_{{\\d+}})
        CHECK:   [[COND]] = i_{{\\d+}} < n
        CHECK: [[X:x_\\d+]] = x_{{\\d+}}
        CHECK-NEXT: for step in range(3):  # fused: the steps run inside one pass over the elements
        CHECK-NEXT:   [[X]] = FusedLoop_0(step, [[X]])
        CHECK-NEXT: return [[X]]
        CHECK: def FusedLoop_0({{\\w+}}: int, x: "Double(*)") -> "Double(*)":
        CHECK: return aten.exp(x) * 2.0
    """),
    )


def test_code_before_any_call_is_the_frontend_graph():
    @scriptc.script
    def count(n: int) -> int:
        s = 0
        for i in range(n):
            s += i * i
        return s

    filecheck(
        count.code,
        textwrap.dedent("""
        CHECK: def count(n: int) -> int:
        CHECK: for i in range(n):
        CHECK: s_{{\\d+}} = s_{{\\d+}} + (i * i)
        CHECK: return s_
    """),
    )


def test_code_is_python_that_computes_the_same_for_scalar_code():
    @scriptc.script
    def poly(x: float, n: int) -> float:
        acc = 0.0
        for k in range(n):
            acc = acc * x + float(k)
        return acc

    poly(1.5, 4)
    namespace = {"prim": types.SimpleNamespace(max=max), "aten": types.SimpleNamespace(Float=float)}
    source = poly.code.replace(": float", "").replace(": int", "").replace("-> float", "")
    assert "for k_1 in range(" in source  # unrolled by 4: what native code runs
    exec(source, namespace)
    for x, n in [(1.5, 4), (-2.0, 7), (0.0, 0)]:
        assert namespace["poly"](x, n) == poly(x, n)


def test_code_of_every_corpus_function(capfd):
    """Every optimized corpus graph prints as code that parses as Python (loops, ifs, fusion groups, calls)."""
    import ast
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import corpus

    corpus.load_all()
    seen = 0
    for c in corpus.CASES:
        fn = c.fn
        if not isinstance(fn, scriptc.ScriptFunction):
            continue
        args = c.args_factory()
        code = fn.code_for(*args)
        assert f"def {fn.__name__}(" in code
        ast.parse(code.replace("prim::", "prim_"))
        seen += 1
    assert seen > 150
