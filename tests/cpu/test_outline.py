"""Outlining (backend/llvm/lowering/outline.py): in a function with many loop nests, fusion groups, fused loops and
matrix products become functions of their own. The results, errors and reference counts must be those of the inline
lowering; small kernels keep their nodes inline."""

from __future__ import annotations

import gc
import re
import sys

import numpy as np
import pytest

import scriptc
from scriptc.backend.llvm.lowering import outline


def many_groups(x: np.ndarray, w: np.ndarray, n: int) -> tuple[np.ndarray, float]:
    h = np.tanh(x @ w + 0.5)
    g = np.exp(-h * h) * 2.0 - h
    t = 0.0
    for i in range(n):
        g = g * 0.5 + np.sin(g)
        t += np.sum(g * g) / (i + 1)
    r = np.maximum(g, 0.0) @ w.T
    return r - np.mean(r), t + float(np.max(np.abs(h)))


def two_outputs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.exp(x) + 1.0
    b = a * a - x
    return a, b


def one_group(x: np.ndarray) -> np.ndarray:
    return np.exp(x) * 2.0 + 1.0


def defined_functions(f, *args) -> list[str]:
    return re.findall(r"^define .*?@\"?([\w.]+)\"?\(", f.inspect_llvm(*args), re.M)


@pytest.fixture
def outline_everything(monkeypatch):
    monkeypatch.setattr(outline, "OUTLINE_MIN", 1)


def test_big_functions_call_their_loop_nests_small_ones_inline_them():
    x, w = np.random.default_rng(0).random((4, 3)), np.random.default_rng(1).random((3, 3))
    big = scriptc.script(many_groups)
    assert outline.outlinable_count(big.graph_for(x, w, 3)) >= outline.OUTLINE_MIN
    names = defined_functions(big, x, w, 3)
    assert any(".FusionGroup" in n for n in names) and any(".matmul" in n for n in names), names
    small = scriptc.script(one_group)
    assert not any(".FusionGroup" in n for n in defined_functions(small, x))


@pytest.mark.parametrize("n", [0, 1, 4])
def test_outlined_results_equal_the_interpreter(n):
    rng = np.random.default_rng(n)
    x, w = rng.random((5, 3)), rng.random((3, 3))
    f = scriptc.script(many_groups)
    got, want = f(x, w, n), f.interpret(x, w, n)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=1e-15)
    assert got[1] == pytest.approx(want[1], rel=1e-13)


def test_multi_output_group_outlined(outline_everything):
    x = np.linspace(-1.0, 1.0, 7)
    f = scriptc.script(two_outputs)
    assert any(".FusionGroup" in n for n in defined_functions(f, x))
    a, b = f(x)
    np.testing.assert_array_equal(a, np.exp(x) + 1.0)
    np.testing.assert_array_equal(b, (np.exp(x) + 1.0) ** 2 - x)


def test_an_error_in_an_outlined_node_is_raised_with_its_line_and_leaks_nothing(outline_everything):
    f = scriptc.script(many_groups)
    x, w = np.ones((2, 3)), np.ones((3, 3))
    f(x, w, 1)
    bad = np.ones((4, 4))
    before = sys.getrefcount(x), sys.getrefcount(bad)
    for _ in range(3):
        with pytest.raises(ValueError, match="matmul: Input operand 1 has a mismatch") as info:
            f(x, bad, 1)
    assert info.value.__notes__ == [
        f"raised by aten::matmul in native code at test_outline.py:"
        f"{many_groups.__code__.co_firstlineno + 1}:17: h = np.tanh(x @ w + 0.5)"
    ]
    assert (sys.getrefcount(x), sys.getrefcount(bad)) == before


def many_live_arrays(x: np.ndarray, i: int) -> float:
    # twenty-one arrays held at once, then an IndexError: the unwind block releases them through one call
    a = x + 0.5
    b0, b1, b2, b3, b4 = np.sin(x), np.cos(x), np.exp(x), np.sqrt(x), np.tanh(x)
    c0, c1, c2, c3, c4 = b0 @ x, b1 @ x, b2 @ x, b3 @ x, b4 @ x
    d0, d1, d2, d3, d4 = (
        np.sum(b0, axis=0),
        np.sum(b1, axis=0),
        np.sum(b2, axis=0),
        np.sum(b3, axis=0),
        np.sum(b4, axis=1),
    )
    e0, e1, e2, e3, e4 = c0 * 2.0, c1 * 3.0, c2 * 4.0, c3 * 5.0, c4 * 6.0
    t = a[i, 0]
    return (
        t
        + float(np.sum(c0 + c1 + c2 + c3 + c4 + e0 + e1 + e2 + e3 + e4))
        + float(np.sum(d0 + d1 + d2 + d3 + d4))
        + float(np.sum(b0 + b1 + b2 + b3 + b4))
    )


@pytest.mark.parametrize("slots", ["array", "table"])
@pytest.mark.parametrize("everything", [False, True])
def test_many_held_arrays_are_freed_when_raising(everything, slots, monkeypatch):
    """The unwind block releases many arrays by one call: their slots are one stack array where the function
    was expected to hold many, else a table of the slots' addresses (unwind.py)."""
    from tests.cpu.test_raise_memory import check_frees_on_raise
    from scriptc.backend.llvm.lowering import lower, unwind

    if everything:
        monkeypatch.setattr(outline, "OUTLINE_MIN", 1)
    # the function expected to hold many arrays, or none (a slot each, then a table of more than 16)
    monkeypatch.setattr(lower, "_arrays_in", (lambda t: 100) if slots == "array" else (lambda t: 0))
    x = np.random.default_rng(2).random((3, 3))
    f = scriptc.script(many_live_arrays)
    assert f(x, 1) == pytest.approx(many_live_arrays(x, 1), rel=1e-12)
    assert f.inspect_llvm(x, 1).count("release_slots") >= 2  # one call, not a release per slot
    text = f.native_for_types(f._bind((x, 1), {})[0]).unoptimized_ir
    assert bool(re.search(r"alloca i8\*, i64 (1\d|[2-9]\d)", text)) == (slots == "array")
    assert bool(re.search(r"alloca \[\d+ x i8\*\*\]", text)) == (slots == "table")
    assert unwind.UNWIND_INLINE_SLOTS < 20
    check_frees_on_raise(f, many_live_arrays, x, 7, min_allocations=12)


def groups_of_several_arities(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    a = x * 2.0 + 1.0
    w = np.sum(a)  # (a reduction between the groups keeps them apart)
    b = x * y + w
    v = np.sum(b)
    c = x * y - z * v
    u = np.sum(c)
    return a + b + c * u


def test_outlined_nodes_that_cannot_raise_each_get_their_own_function(outline_everything):
    # their graphs are dropped once lowered; a graph made later must not be taken for one of them
    x, y, z = np.linspace(0.0, 1.0, 5), np.linspace(1.0, 2.0, 5), np.linspace(-1.0, 0.0, 5)
    thresholds = gc.get_threshold()
    gc.set_threshold(1)  # collect often, so that a dropped graph's memory (and id) is reused at once
    try:
        for _ in range(3):
            f = scriptc.script(groups_of_several_arities)
            np.testing.assert_allclose(f(x, y, z), groups_of_several_arities(x, y, z), rtol=1e-14)
    finally:
        gc.set_threshold(*thresholds)


@scriptc.script
def dense(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.maximum(x @ w, 0.0)


def three_layers(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return dense(dense(dense(x, w), w), w)


def test_equal_nodes_share_one_outlined_function(outline_everything):
    x, w = np.random.default_rng(3).random((4, 3)), np.random.default_rng(4).random((3, 3))
    f = scriptc.script(three_layers)
    names = defined_functions(f, x, w)
    assert sum(".matmul" in n for n in names) == 1, names  # one line, one type: one function
    np.testing.assert_allclose(f(x, w), f.interpret(x, w), rtol=1e-14)
    with pytest.raises(ValueError, match="matmul") as info:
        f(x, np.ones((4, 4)))
    assert info.value.__notes__[0].endswith(
        f"test_outline.py:{dense.py_func.__code__.co_firstlineno + 2}:23: return np.maximum(x @ w, 0.0)"
    )


@scriptc.script
def momentum(p: np.ndarray, g: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = 0.9 * m + 0.1 * g
    return p - 0.01 * m / (np.sqrt(m * m) + 1e-8), m


def update_three(
    w: np.ndarray, v: np.ndarray, u: np.ndarray, gw: np.ndarray, gv: np.ndarray, gu: np.ndarray, m: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    w1, mw = momentum(w, gw, m)
    v1, mv = momentum(v, gv, m)
    u1, mu = momentum(u, gu, m)
    return w1, v1, u1, mw + mv + mu


def test_groups_equal_but_for_their_values_names_share_a_function(outline_everything):
    # an optimizer's update inlined once per parameter: each call's groups name their values after its
    # arguments, which must not make them different code
    args = [np.random.default_rng(k).random((3, 4)) for k in range(7)]
    f = scriptc.script(update_three)
    groups = [n for n in defined_functions(f, *args) if re.search(r"\.FusionGroup(\.\d+)?$", n)]
    assert len(groups) == 3, groups  # the moment's update, the parameter's, the sum: not one per call
    for got, want in zip(f(*args), f.interpret(*args)):
        np.testing.assert_array_equal(got, want)


def on_two_lines(x: np.ndarray, w: np.ndarray, v: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    a = np.maximum(x @ w, 0.0) + np.exp(y + z)
    b = np.maximum(x @ v, 0.0) + np.exp(y + x)
    return a + b + np.var(x) + np.std(x)


def test_equal_nodes_on_several_lines_share_a_function_and_raise_at_their_own(monkeypatch):
    rng = np.random.default_rng(5)
    x, w, v, y, z = (rng.random((3, 3)) for _ in range(5))
    bad = [
        (x, w, np.ones((4, 4)), y, z),
        (x, np.ones((4, 4)), v, y, z),
        (x, w, v, y, np.ones((2, 3))),
        (np.ones((3, 2)), np.ones((2, 3)), np.ones((2, 3)), np.ones((3, 3)), np.ones((3, 3))),
    ]

    def errors(f):
        found = []
        for args in bad:
            with pytest.raises(ValueError) as info:
                f(*args)
            found.append((str(info.value), info.value.__notes__))
        return found

    inline = errors(scriptc.script(on_two_lines))  # too few nodes to outline
    monkeypatch.setattr(outline, "OUTLINE_MIN", 1)
    f = scriptc.script(on_two_lines)
    names = defined_functions(f, x, w, v, y, z)
    assert sum(".matmul" in n for n in names) == 1, names
    np.testing.assert_allclose(f(x, w, v, y, z), on_two_lines(x, w, v, y, z), rtol=1e-14)
    assert errors(f) == inline
    first = on_two_lines.__code__.co_firstlineno
    assert [notes[0].split(" at ")[1].split(": ")[0] for _, notes in inline[:2]] == [
        f"test_outline.py:{first + 2}:20",
        f"test_outline.py:{first + 1}:20",
    ]  # each product's own line


def prange_rows(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    for i in scriptc.prange(x.shape[0]):
        row = np.exp(x[i]) * 2.0 + 1.0
        out[i] = np.sin(row) + row @ x.T[:, 0 : x.shape[1]].T[0]
    return out


def test_a_prange_body_keeps_its_nodes(outline_everything):
    x = np.random.default_rng(5).random((6, 6))
    f = scriptc.script(prange_rows)
    np.testing.assert_allclose(f(x), f.interpret(x), rtol=1e-13)
    assert not any(".prange." in n and ("FusionGroup" in n or "matmul" in n) for n in defined_functions(f, x))
