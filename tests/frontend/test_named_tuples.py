"""typing.NamedTuple classes as parameters, results and locals of scripted functions: compiled code, the
interpreter and CPython agree on values, printed text and the class of what is returned; fields by name,
construction with keywords and defaults, ``_replace``, nesting, loops and branches; the errors."""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import pytest

import scriptc
from scriptc.ir.parser import parse
from scriptc.ir.printer import print_graph


class Params(NamedTuple):
    w: np.ndarray
    b: float


class TrainState(NamedTuple):
    step: int
    params: Params
    lr: float = 0.5


class Pair(NamedTuple):
    lo: int
    hi: int


@scriptc.script
def sgd_step(state: TrainState, g: np.ndarray) -> TrainState:
    p = state.params
    new = Params(w=p.w - state.lr * g, b=p.b * 0.5)
    return state._replace(step=state.step + 1, params=new)


@scriptc.script
def init(n: int) -> TrainState:
    return TrainState(0, Params(np.zeros(n), 1.0))


@scriptc.script
def run(state: TrainState, g: np.ndarray, steps: int) -> TrainState:
    for _ in range(steps):
        state = sgd_step(state, g)
        if state.step % 2 == 0:
            state = state._replace(lr=state.lr * 0.5)
    return state


@scriptc.script
def unpack_and_print(p: Pair) -> int:
    lo, hi = p
    print(p, p.lo, p[1])
    return hi - lo


@scriptc.script
def swap(p: Pair) -> Pair:
    return Pair(hi=p.lo, lo=p.hi)


@scriptc.script
def plain_tuple_in(t: tuple[float, np.ndarray], k: int) -> tuple[float, np.ndarray]:
    a, x = t
    return a * k, x + t[0]


def same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def state():
    return TrainState(3, Params(np.arange(4.0), 2.0))


@pytest.mark.parametrize(
    "fn, make",
    [
        (sgd_step, lambda: (state(), np.ones(4))),
        (init, lambda: (5,)),
        (run, lambda: (state(), np.full(4, 0.25), 5)),
        (run, lambda: (state()._replace(lr=1), np.ones(4), 3)),
        (swap, lambda: (Pair(1, 9),)),
        (plain_tuple_in, lambda: ((1.5, np.arange(3.0)), 2)),
    ],
)
def test_compiled_interpreted_and_cpython_agree(fn, make):
    expected = fn.py_func(*make())
    same(fn(*make()), expected)
    same(fn(*make()), expected)  # the second call goes through the JIT entry point
    same(fn.interpret(*make()), expected)


def test_printing_and_unpacking(capfd):
    assert unpack_and_print(Pair(2, 7)) == 5
    compiled = capfd.readouterr().out
    unpack_and_print.py_func(Pair(2, 7))
    assert compiled == capfd.readouterr().out == "Pair(lo=2, hi=7) 2 7\n"


def test_a_returned_state_is_an_instance_of_the_class():
    s = run(state(), np.ones(4), 2)
    assert isinstance(s, TrainState) and isinstance(s.params, Params)
    assert s._fields == ("step", "params", "lr")


def test_arguments_are_checked():
    with pytest.raises(TypeError, match="argument 'p' must be Pair, not tuple"):
        swap((1, 2))
    with pytest.raises(TypeError, match=r"argument 'state.params.w' must be a numpy.ndarray"):
        sgd_step(TrainState(0, Params([1.0], 1.0)), np.ones(1))
    with pytest.raises(TypeError, match="must be TrainState"):
        sgd_step(Params(np.ones(1), 1.0), np.ones(1))


def test_unannotated_parameter_takes_a_named_tuple():
    @scriptc.script
    def total(p):
        return p.lo + p.hi

    assert total(Pair(3, 4)) == 7
    assert total.signatures == [f"{Pair.__module__}.Pair(lo: int, hi: int)"]


def test_the_graph_prints_field_names_and_parses_back():
    g = sgd_step.graph_for(state(), np.ones(4))
    text = print_graph(g)
    m = TrainState.__module__
    assert f"{m}.TrainState(step: int, params: {m}.Params(w: Double(*), b: float), lr: float)" in text
    assert re.search(r'prim::TupleConstruct\[named="[\w.]*Params"\]', text)
    assert print_graph(parse(text)) == text
    assert "state.params" in sgd_step.code and "Params(" in sgd_step.code


@pytest.mark.parametrize(
    "body, message",
    [
        ("return p.middle", "'Pair' has no field 'middle'"),
        ("return Pair(1)", "Pair\\(\\) missing required argument 'hi'"),
        ("return Pair(1, 2, 3)", "takes 2 arguments, 3 given"),
        ("return Pair(1, 2.5)", "field 'hi' must be an int, got a float"),
        ("return p._asdict()", "NamedTuple method '_asdict' is not supported"),
        ("return p._replace(mid=1)", "got unexpected field name 'mid'"),
    ],
)
def test_errors_name_the_line(tmp_path, body, message):
    src = tmp_path / "nt_errors.py"
    src.write_text(
        "import scriptc\nfrom tests.frontend.test_named_tuples import Pair\n\n"
        f"@scriptc.script\ndef f(p: Pair):\n    {body}\n"
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("nt_errors", src)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(scriptc.CompileError, match=message) as e:
        spec.loader.exec_module(module)
        module.f(Pair(1, 2))
    assert "nt_errors.py:6:" in str(e.value)


@scriptc.script
def shapes_match(a: np.ndarray, b: np.ndarray) -> tuple[bool, bool]:
    return a.shape == b.shape, a.shape != b.shape


@scriptc.script
def tuple_equalities(p: Pair, x: int, y: float) -> tuple[bool, bool, bool, bool, bool, bool]:
    t = (y, x)
    return ((x, y) == (y, x), (x, (y, 1)) == (x, (y, 1)), p == Pair(x, 2), (x, y) == (x, y, 0), (x, y) != x, t == t)


@pytest.mark.parametrize(
    "args",
    [
        (np.ones((2, 3)), np.ones((2, 3))),
        (np.ones((2, 3)), np.ones((3, 2))),
        (np.ones(3), np.ones((3, 1))),
        (np.ones(0), np.ones(0)),
    ],
)
def test_shapes_compare_as_tuples(args):
    want = shapes_match.py_func(*args)
    assert shapes_match(*args) == want and shapes_match.interpret(*args) == want


@pytest.mark.parametrize("args", [(Pair(1, 2), 1, 1.0), (Pair(3, 2), 3, 2.5), (Pair(0, 0), -1, float("nan"))])
def test_tuple_equality_is_element_by_element(args):
    want = tuple_equalities.py_func(*args)
    assert tuple_equalities(*args) == want and tuple_equalities.interpret(*args) == want


def test_tuples_of_arrays_and_tuple_order_are_errors(tmp_path):
    from tests.modules import load_module

    for body, message in (
        ("return (a, 1) == (b, 1)", "tuples holding arrays cannot be compared"),
        ("return a.shape < b.shape", "tuples compare with == and != only"),
    ):
        with pytest.raises(scriptc.CompileError, match=message):  # at decoration, or else at the call
            m = load_module(tmp_path, f"@scriptc.script\ndef f(a: np.ndarray, b: np.ndarray) -> bool:\n    {body}\n")
            m.f(np.ones(2), np.ones(2))


@scriptc.script
def tuple_arithmetic(p: Pair, x: int, y: float):
    t = (x, y, p.lo, p.hi)
    return (
        (x, y) + (p.hi,),
        (x, 1) * 2,
        3 * (y,),
        (x,) * -1,
        p + (y,),
        ((x, y) + ()) * 0,
        t[1:],
        t[::-1],
        t[-3:-1],
        t[5:],
        p[:1],
        t[::2][1:],
    )


@pytest.mark.parametrize("args", [(Pair(1, 2), 3, 0.5), (Pair(-1, 0), 0, float("inf"))])
def test_tuples_concatenate_repeat_and_slice(args):
    want = tuple_arithmetic.py_func(*args)
    assert tuple_arithmetic(*args) == want and tuple_arithmetic.interpret(*args) == want
