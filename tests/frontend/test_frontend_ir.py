"""The frontend's IR, checked as text with FileCheck directives (the structure TorchScript users expect)."""

import math

import numpy as np

import scriptc
from tests.util import filecheck


@scriptc.script
def squares(x: np.ndarray) -> np.ndarray:
    for _ in range(3):
        x = x * x
        print(x)
    return x


def test_loop_carries_the_reassigned_array():
    loop = squares.py_func.__code__.co_firstlineno + 2  # the `for` line (the first line is the decorator's)
    filecheck(
        str(squares.graph),
        f"""
CHECK: graph(%x : Tensor):
CHECK:   %[[N:.+]] : int = prim::Constant[value=3]()
CHECK:   %[[T:.+]] : bool = prim::Constant[value=1]()
CHECK:   %[[OUT:.+]] : Tensor = prim::Loop(%[[N]], %[[T]], %x)  # test_frontend_ir.py:{loop}:5
CHECK-NEXT:     block0(%_ : int, %[[X:.+]] : Tensor):
CHECK-NEXT:       %[[Y:.+]] : Tensor = aten::mul(%[[X]], %[[X]])  # test_frontend_ir.py:{loop + 1}:13
CHECK-NEXT:        = prim::Print(%[[Y]])  # test_frontend_ir.py:{loop + 2}:9
CHECK:       -> (%{{{{.+}}}}, %[[Y]])
CHECK:   return (%[[OUT]])
""",
    )


def test_graph_for_specializes_dtype_and_rank():
    x = np.ones((2, 3), np.float32)
    filecheck(
        str(squares.frontend_graph_for(x)),
        """
CHECK: graph(%x : Float(*, *)):
CHECK: Float(*, *) = prim::Loop
CHECK: Float(*, *) = aten::mul
""",
    )


@scriptc.script
def branches(a: int, b: int) -> float:
    if a > b:
        y = a / b
        z = 1
    else:
        y = 2.0
        z = 2
    return y + z


def test_if_merges_assigned_variables_into_outputs():
    filecheck(
        str(branches.graph),
        """
CHECK: %[[C:.+]] : bool = aten::gt(%a, %b)
CHECK: %y{{.*}} : float, %z{{.*}} : int = prim::If(%[[C]])
CHECK-NEXT: block0():
CHECK: aten::div(%a, %b)
CHECK: -> (
CHECK-NEXT: block1():
CHECK: -> (
CHECK: aten::add(%y
""",
    )


@scriptc.script
def countdown(n: int) -> int:
    k = 0
    while n > 0:
        n -= 1
        k += 2
    return k


def test_while_is_a_loop_with_a_condition():
    filecheck(
        str(countdown.graph),
        """
CHECK: %[[C0:.+]] : bool = aten::gt(%n, %{{.+}})
CHECK: %[[MAX:.+]] : int = prim::Constant[value=9223372036854775807]()
CHECK: %{{.+}} : int, %{{.+}} : int = prim::Loop(%[[MAX]], %[[C0]], %n, %k)
CHECK: block0(%i : int, %n.{{.+}} : int, %k.{{.+}} : int):
CHECK: %[[C:.+]] : bool = aten::gt(
CHECK: -> (%[[C]],
""",
    )


@scriptc.script
def first_negative(x: np.ndarray) -> int:
    for i in range(len(x)):
        if x[i] < 0.0:
            break
    return i


def test_break_becomes_a_flag_in_the_continue_condition():
    filecheck(
        str(first_negative.frontend_graph_for(np.zeros(3))),
        """
CHECK: prim::Loop
CHECK: aten::getitem(%x, %i)
CHECK: %brk : bool = prim::If
CHECK: %[[GO:.+]] : bool = aten::__not__(%brk)
CHECK: -> (%[[GO]],
CHECK: prim::AssertBound[name="i"]
""",
    )


@scriptc.script
def stepped(a: int, b: int) -> int:
    s = 0
    for j in range(a, b, -2):
        s += j
    return s


def test_range_with_start_and_step_derives_the_index():
    filecheck(
        str(stepped.graph),
        """
CHECK: %[[S:.+]] : int = prim::Constant[value=-2]()
CHECK: %[[N:.+]] : int = aten::__range_length(%a, %b, %[[S]])
CHECK: prim::Loop(%[[N]],
CHECK-NEXT: block0(%iter : int, %s.{{.+}} : int):
CHECK-NEXT: %j : int = aten::__derive_index(%iter, %a, %[[S]])
""",
    )


@scriptc.script
def guarded(a: int, b: int) -> bool:
    return b != 0 and a // b > 1


def test_and_short_circuits_through_if():
    filecheck(
        str(guarded.graph),
        """
CHECK: %[[NZ:.+]] : bool = aten::ne(%b,
CHECK: prim::If(%[[NZ]])
CHECK-NEXT: block0():
CHECK: aten::floordiv(%a, %b)
CHECK: block1():
CHECK-NEXT: -> (%[[NZ]])
""",
    )


@scriptc.script
def norm(a: float, b: float) -> float:
    return math.sqrt(a * a + b * b)


@scriptc.script
def pair(x: float) -> tuple[float, float]:
    return norm(x, 1.0), x


def test_calls_and_tuples():
    filecheck(
        str(pair.graph),
        """
CHECK: %[[R:.+]] : float = prim::CallFunction[fn=norm](%x, %{{.+}})
CHECK: %[[T:.+]] : (float, float) = prim::TupleConstruct(%[[R]], %x)
CHECK: return (%[[T]])
CHECK: with norm = graph(%a : float,
CHECK: aten::sqrt
""",
    )


@scriptc.script
def kernel(x: np.ndarray, y: np.ndarray, j: int):
    x += 1.0
    y[1:3] = x[:, j]
    x[0, j] = y[0] * 2.0


def test_indexing_views_and_in_place_updates():
    filecheck(
        str(kernel.frontend_graph_for(np.zeros((2, 3)), np.zeros(4), 1)),
        """
CHECK: = aten::add_(%x,
CHECK-NOT: aten::slice[dim=0](%x
CHECK: %[[C:.+]] : Double(*) = aten::select[dim=1](%x, %j)
CHECK: %[[DST:.+]] : Double(*) = aten::slice[dim=0](%y,
CHECK: = aten::copy_(%[[DST]], %[[C]])
CHECK: %[[E:.+]] : float = aten::getitem(%y,
CHECK: = aten::setitem(%x, %{{.+}}, %j,
""",
    )


@scriptc.script
def early(x: np.ndarray) -> int:
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                return i
    return -1


def test_early_return_from_nested_loops_guards_the_rest():
    filecheck(
        str(early.frontend_graph_for(np.zeros((2, 2)))),
        """
CHECK: %ret{{.*}} : bool, %retv{{.*}} : int = prim::Loop
CHECK: %ret{{.*}} : bool, %retv{{.*}} : int = prim::Loop
CHECK: %retv{{.*}} : int = prim::If(%ret
CHECK-NEXT: block0():
CHECK-NEXT: -> (%retv
CHECK-NEXT: block1():
CHECK: -> (
CHECK: return (%retv
""",
    )


@scriptc.script
def over_pair(a: np.ndarray, k: int, limit: float) -> float:
    s = 0.0
    for v in (a.sum(), k):
        if v > limit:
            break
        s += v
    return s


def test_a_loop_over_a_tuple_is_unrolled_and_a_break_guards_the_iterations_after_it():
    """One body per element, each with its element's type (the second adds an int); no prim::Loop; after a
    possible break, the next iteration runs under a prim::If of the flag."""
    filecheck(
        str(over_pair.frontend_graph_for(np.arange(3.0), 4, 1.0)),
        """
CHECK-NOT: prim::Loop
CHECK: %[[SUM:.+]] : float = aten::sum(%a
CHECK: %brk : bool = prim::If
CHECK: prim::If(%brk)
CHECK: aten::gt(%k, %limit)
CHECK: aten::add(%{{.+}}, %k)
CHECK-NOT: prim::Loop
""",
    )
    for args in ((np.arange(3.0), 4, 10.0), (np.arange(3.0), 4, 3.5), (np.arange(3.0), 4, 1.0)):
        assert over_pair(*args) == over_pair.py_func(*args)
