"""scriptc.grad through arrays written in place (element and slice assignment, ``x op= y``, ``fill``, writes
through views, in loops and branches), against finite differences of CPython on fresh copies; the refusals
(a written array rebound in a loop, arguments sharing memory); and the forward's effects happening once."""

from __future__ import annotations

import copy
import math
import textwrap

import numpy as np
import pytest

import scriptc
from scriptc.ir.printer import print_graph
from tests.transforms.test_grad import assert_close, central_difference
from tests.util import filecheck


@scriptc.script
def prefix_recurrence(x: np.ndarray) -> float:
    out = np.zeros(x.shape[0])
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] * 0.5 + math.sin(x[i]) * out[i - 1] + x[i]
    return np.sum(out * out)


@scriptc.script
def inplace_arithmetic(x: np.ndarray, y: np.ndarray) -> float:
    z = x.copy()
    z += y
    z *= x
    z[1:3] = y[:2] * 3.0
    z /= 2.0 + y
    row = z[1:]
    row -= 0.5
    return np.sum(z**2) + z[0]


@scriptc.script
def sort_like_sweeps(a: np.ndarray, n: int) -> float:
    b = a.copy()
    for t in range(n):
        for i in range(1, b.shape[0]):
            if b[i] > b[i - 1]:
                b[i] = b[i] * b[i - 1]
            else:
                b[i - 1] += 0.1 * b[i]
    return np.sum(b)


@scriptc.script
def writes_its_argument(x: np.ndarray, w: float) -> float:
    for i in range(x.shape[0]):
        x[i] = x[i] * w + 1.0
    x.fill(x[0] + x[-1])
    return np.sum(x) * w


@scriptc.script
def matrix_rows(a: np.ndarray) -> float:
    m = np.zeros((3, 3))
    for i in range(3):
        m[i] = a[i] * 2.0
        m[i, i] = m[i, i] + 1.0
    m[:, 0] = m[:, 1] * m[:, 2]
    return np.sum(m @ m.T)


@scriptc.script
def masked_update(x: np.ndarray, t: float) -> float:
    y = x * 1.5
    y[y > t] = t
    y[x < 0.0] += x[x < 0.0] * x[x < 0.0]
    return np.sum(np.exp(y))


rng = np.random.default_rng(5)
CASES = [
    (prefix_recurrence, (rng.random(7),)),
    (inplace_arithmetic, (rng.random(5) + 1.0, rng.random(5))),
    (sort_like_sweeps, (rng.random(6), 3)),
    (writes_its_argument, (rng.random(4), 0.7)),
    (matrix_rows, (rng.random((3, 3)),)),
    (masked_update, (rng.normal(size=8), 0.9)),
]


@pytest.mark.parametrize("fn, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradients_through_writes(fn, args):
    argnums = tuple(k for k, a in enumerate(args) if isinstance(a, (float, np.ndarray)))
    g = scriptc.grad(fn, argnums=argnums)
    native, interpreted = g(*copy.deepcopy(args)), g.interpret(*copy.deepcopy(args))

    def fresh(*a):
        return fn.py_func(*copy.deepcopy(a))

    for k, got, oracle in zip(argnums, native, interpreted):
        assert_close(got, oracle, 1e-12)
        assert_close(got, central_difference(fresh, list(args), k))


def test_the_forward_writes_the_callers_array_as_the_function_does():
    x, w = rng.random(4), 0.7
    expected = x.copy()
    writes_its_argument.py_func(expected, w)
    scriptc.grad(writes_its_argument, argnums=(0, 1))(x, w)
    np.testing.assert_array_equal(x, expected)


def test_arguments_sharing_a_written_array_are_refused():
    @scriptc.script
    def shift(a: np.ndarray, b: np.ndarray) -> float:
        for i in range(1, a.shape[0]):
            a[i] = b[i - 1] + 1.0
        return a[-1] + b[-1]

    x = np.zeros(5)
    with pytest.raises(ValueError, match="'a' and 'b' share memory"):
        scriptc.grad(shift, argnums=(0, 1))(x, x)
    with pytest.raises(ValueError, match="share memory"):
        scriptc.grad(shift, argnums=(0, 1))(x, x[::-1])
    ga, gb = scriptc.grad(shift, argnums=(0, 1))(np.zeros(5), np.zeros(5))
    assert_close(gb, [0.0, 0.0, 0.0, 1.0, 1.0])


def test_a_written_array_rebound_in_a_loop_is_refused():
    @scriptc.script
    def swap(x: np.ndarray) -> float:
        a = x.copy()
        b = x.copy()
        for _ in range(3):
            a[0] = b[1] * 2.0
            a, b = b, a
        return np.sum(a)

    with pytest.raises(scriptc.CompileError, match="written in place is rebound in a loop"):
        scriptc.grad(swap)(np.ones(3))


def test_printing_happens_once(capfd):
    @scriptc.script
    def noisy(x: np.ndarray) -> float:
        s = 0.0
        for i in range(x.shape[0]):
            print("step", i)
            x[i] = x[i] * 2.0
            s += x[i]
        return s

    scriptc.grad(noisy)(np.ones(3))
    assert capfd.readouterr().out == "step 0\nstep 1\nstep 2\n"


def test_reads_in_a_loop_are_taped_and_the_recomputation_skips_writes():
    g = scriptc.grad(prefix_recurrence)
    text = print_graph(g.frontend_graph_for(np.ones(4)))
    filecheck(
        text,
        textwrap.dedent("""
        CHECK: %[[OUT:.+]] : Double(*) = aten::zeros
        CHECK: %[[TAPE:.+]] : float[] = prim::ListConstruct
        CHECK: prim::Loop
        CHECK: aten::getitem(%[[OUT]]
        CHECK: aten::append(%[[TAPE]]
        CHECK: aten::setitem(%[[OUT]]
        CHECK: %[[SHADOW:.+]] : Double(*) = aten::zeros_like[{{.*}}](%[[OUT]])
        CHECK: prim::Loop
        CHECK: aten::list_getitem(%[[TAPE]]
        CHECK-NOT: aten::setitem(%[[OUT]]
        CHECK: aten::getitem(%[[SHADOW]]
        CHECK: aten::setitem(%[[SHADOW]]
        CHECK: return
    """),
    )
