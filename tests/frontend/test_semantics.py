"""Python's and NumPy's rules, checked against CPython running the same function (the oracle)."""

import math

import numpy as np
import pytest

import scriptc
from tests.util import assert_matches_python, run_captured

INT64_MAX = 2**63 - 1


@scriptc.script
def floor_ops(a: int, b: int) -> tuple[int, int, float]:
    return a // b, a % b, a / b


@scriptc.script
def float_floor_ops(a: float, b: float) -> tuple[float, float]:
    return a // b, a % b


@pytest.mark.parametrize("a, b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (5, 0), (-1, 0)])
def test_int_floor_division_and_modulo(a, b):
    assert_matches_python(floor_ops, a, b)


@pytest.mark.parametrize("a, b", [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-0.0, 1.0), (1.0, 0.0), (1e308, 1e-308)])
def test_float_floor_division_and_modulo(a, b):
    assert_matches_python(float_floor_ops, a, b)


@scriptc.script
def loop_variable(n: int) -> int:
    for i in range(n):
        i = i * 10  # rebinding does not change the next iteration
    return i


def test_loop_variable_keeps_last_value_and_is_unbound_after_empty_loop():
    assert_matches_python(loop_variable, 4)
    assert loop_variable(4) == 30
    _, _, exc = run_captured(loop_variable, 0)
    assert isinstance(exc, UnboundLocalError) and "'i'" in str(exc)


@scriptc.script
def guarded_division(a: int, b: int) -> bool:
    return b != 0 and a // b > 2 or b == 0


@scriptc.script
def or_value(a: int, b: int) -> int:
    return a or b


def test_and_or_short_circuit():
    for a, b in [(9, 0), (9, 2), (1, 3)]:
        assert_matches_python(guarded_division, a, b)
    for a, b in [(0, 5), (3, 5)]:
        assert_matches_python(or_value, a, b)


@scriptc.script
def mixed(n: int) -> float:
    s = 0
    for i in range(n):
        s += i / 2
    return s


def test_int_promoted_to_float_where_python_makes_a_float():
    assert_matches_python(mixed, 5)
    assert mixed.graph.outputs[0].type == scriptc.ir.FLOAT


@scriptc.script
def scale(x: np.ndarray) -> np.ndarray:
    return x * 2.5 + 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
def test_numpy2_promotion_of_arrays_with_python_scalars(dtype):
    x = np.arange(5).astype(dtype)
    assert_matches_python(scale, x)
    assert scale(x).dtype == scale.py_func(x).dtype


@scriptc.script
def int_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x / y


def test_array_true_division_of_ints_is_float64():
    assert_matches_python(int_div, np.arange(1, 5), np.arange(2, 6, dtype=np.int32))


@scriptc.script
def respecialize(x: np.ndarray) -> float:
    s = 0.0
    for i in range(len(x)):
        s += x[i]
    return s


def test_new_dtype_or_rank_compiles_a_new_specialization():
    respecialize(np.ones(3))
    respecialize(np.ones(3, np.float32))
    respecialize(np.ones(3, np.int32))
    assert len(respecialize._graphs) == 3
    with pytest.raises(scriptc.CompileError, match="'s' is a float before the loop and an array"):
        respecialize(np.ones((2, 2)))


@scriptc.script
def mutate(x: np.ndarray, v: float):
    x[0] = v
    x[1:3] += 1.0
    y = x[2:]
    y[0] = -v


def test_mutation_through_views_is_visible_to_the_caller():
    x = np.zeros(5)
    mutate(x, 4.0)
    assert x.tolist() == [4.0, 1.0, -4.0, 0.0, 0.0]
    assert_matches_python(mutate, np.arange(5.0), 2.0)


@scriptc.script
def reads(x: np.ndarray, i: int) -> float:
    return x[i]


def test_negative_indices_wrap_and_out_of_bounds_raise():
    x = np.arange(4.0)
    assert reads(x, -1) == 3.0
    with pytest.raises(IndexError, match="out of bounds"):
        reads(x, 4)
    with pytest.raises(IndexError):
        reads(x, -5)


@scriptc.script
def zero_div(a: float) -> float:
    return 1.0 / a


@scriptc.script
def domain(a: float) -> float:
    return math.sqrt(a)


def test_scalar_errors_are_pythons():
    with pytest.raises(ZeroDivisionError):
        zero_div(0.0)
    with pytest.raises(ValueError, match="math domain error"):
        domain(-1.0)


@scriptc.script
def wrap(a: int) -> int:
    return a + 1


def test_int_is_64_bit_and_wraps():
    assert wrap(INT64_MAX) == -(2**63)


@scriptc.script
def prints(x: float, n: int, b: bool, a: np.ndarray):
    print(x, n, b, a)
    print(0.1 + 0.2, 1e16, -0.0, 1.0 / 3.0, math.inf, -math.inf, sep=", ", end=";\n")
    print("value:", f"{x:.2f}|{n:>5}|{x!r}|{b}")
    print((x, n))


def test_print_matches_cpython_text():
    assert_matches_python(prints, 2.5, -3, True, np.linspace(0, 1, 4))
    assert_matches_python(prints, float("nan"), 0, False, np.arange(3, dtype=np.int32))


def test_arguments_are_checked_against_annotations():
    with pytest.raises(TypeError, match="argument 'a' must be a numpy.ndarray, not list"):
        prints(1.0, 1, True, [1, 2])
    with pytest.raises(TypeError, match="argument 'n' must be int, not float"):
        prints(1.0, 1.5, True, np.zeros(1))
    with pytest.raises(TypeError, match="missing 3 required positional arguments: .n., .b. and .a."):
        prints(1.0)
    with pytest.raises(TypeError, match="unsupported dtype complex128"):
        prints(1.0, 1, True, np.zeros(2, complex))


def test_int_passed_for_float_parameter_stays_an_int():
    assert zero_div(2) == 0.5
    assert_matches_python(prints, 3, 1, True, np.zeros(2))  # prints 3, not 3.0
    assert zero_div.graph_for(2).inputs[0].type == scriptc.ir.INT


@scriptc.script
def vectorized(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    z = np.where(x > 0.5, np.exp(-x * x) * np.sin(3.0 * x), np.maximum(x, y)) + 0.5 * x
    return z, np.sum(z), np.mean(x.reshape(2, 3), axis=0)


def test_vectorized_numpy_expressions():
    rng = np.random.default_rng(0)
    assert_matches_python(vectorized, rng.random(6), rng.random(6))


@scriptc.script
def make_arrays(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    a = np.zeros((n, 2), dtype=np.float32)
    b = np.full(n, 7)
    c = np.arange(1, n, 2)
    d = np.ones_like(a, dtype=np.int64)
    return a, b, c, d


def test_array_creation():
    assert_matches_python(make_arrays, 5)


@scriptc.script
def matmul(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    return a @ b, np.dot(b[:, 0], b[:, 1])


def test_matmul_and_dot():
    rng = np.random.default_rng(1)
    assert_matches_python(matmul, rng.random((3, 4)), rng.random((4, 2)), rtol=1e-13)  # BLAS sums in another order


@scriptc.script
def endless(n: int) -> int:
    k = 0
    while True:
        k += 1
        if k * k > n:
            return k


def test_while_true_left_by_return():
    assert_matches_python(endless, 50)


@scriptc.script
def tuple_swap(a: int, b: int) -> tuple[int, int]:
    a, b = b, a
    t = (a, b)
    c, d = t
    return d, c


def test_tuple_unpacking_and_swap():
    assert_matches_python(tuple_swap, 1, 2)


GLOBAL_SCALE = 3


@scriptc.script
def uses_global(x: float) -> float:
    return x * GLOBAL_SCALE


def test_global_constants_are_captured_at_compile_time():
    assert uses_global(2.0) == 6.0


@scriptc.script
def iterate(x: np.ndarray) -> float:
    s = 0.0
    for v in x:
        s = s * 0.5 + v
    return s


def test_for_over_array_elements():
    assert_matches_python(iterate, np.arange(6.0))


@scriptc.script
def chained(a: int, b: int, c: int) -> bool:
    return a < b <= c


def test_chained_comparison():
    for args in [(1, 2, 2), (1, 2, 1), (3, 2, 5)]:
        assert_matches_python(chained, *args)


@scriptc.script
def continue_and_break(n: int) -> int:
    total = 0
    i = 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        if i > 7:
            break
        total += i
    return total


def test_continue_and_break_in_while():
    for n in (0, 3, 20):
        assert_matches_python(continue_and_break, n)


def test_range_step_zero_raises_value_error(tmp_path):
    from tests.modules import load_module

    mod = load_module(
        tmp_path,
        "@scriptc.script\ndef f(n: int) -> int:\n    s = 0\n    for i in range(0, 5, n):\n"
        "        s += i\n    return s\n",
    )
    assert_matches_python(mod.f, 0)
    assert_matches_python(mod.f, -2)


@scriptc.script
def wrapping_ops(a: int, b: int):
    return divmod(a, b), a << b if b >= 0 else 0, a + b


@pytest.mark.parametrize("a, b", [(-(2**63), -1), (1, 2**62), (3, 64), (3, 63), (-5, 70), (7, 3)])
def test_the_interpreter_wraps_ints_as_native_code(a, b):
    """The oracle keeps native code's 64-bit rules: divmod's quotient wraps, << by 64 or more is 0 (it made
    the huge int first: MemoryError for 1 << 2**62), an int argument beyond 64 bits is an OverflowError (it was
    wrapped silently)."""
    assert wrapping_ops.interpret(a, b) == wrapping_ops(a, b)
    for fn in (wrapping_ops, wrapping_ops.interpret):
        with pytest.raises(OverflowError, match="int too large to convert to a 64-bit int"):
            fn(1, 2**70)


@scriptc.script
def ufuncs_of_scalars(a, b):
    return (
        np.floor(a),
        np.ceil(b),
        np.trunc(a),
        np.abs(a),
        np.maximum(a, b),
        np.minimum(b, a),
        np.sqrt(abs(a)),
        np.exp(b),
    )


@pytest.mark.parametrize("a, b", [(5, 2), (True, 2), (True, False), (-3, 2.5), (2.5, True), (-0.0, -7)])
def test_ufuncs_of_python_scalars_give_numpys_kind(a, b):
    """NumPy's loop decides the result's kind: np.maximum(5, 2) is an int (it was 5.0), np.floor(2.5) a float
    (math.floor's would be an int), np.abs(True) a bool; float results are float64's (np.exp(True), float16 in
    NumPy, is math.exp's: documented)."""
    want = [w.item() for w in ufuncs_of_scalars.py_func(a, b)]
    for got in (ufuncs_of_scalars(a, b), ufuncs_of_scalars.interpret(a, b)):
        kinds = [type(g) for g in got]
        assert kinds[:6] == [type(w) for w in want][:6], (kinds, want)
        assert got[:6] == tuple(want[:6]) and all(type(g) is float for g in got[6:])
        exact = (math.sqrt(abs(a)), math.exp(b))  # the documented math counterparts, to the bit
        assert got[6:] == exact, (got[6:], exact)


@scriptc.script
def roundings(x: float) -> tuple[float, float, float]:
    return np.floor(x), np.ceil(x), np.trunc(x)


def test_numpy_rounding_of_a_float_is_numpys_float():
    """np.floor/ceil/trunc of a float went through math's int: 1e300 gave 0.0, 1e20 7.8e18, -0.3's ceiling
    0.0, and NaN and inf raised. NumPy's are floats, whatever the value."""
    for x in (1e300, 1e20, -1e20, 2.0**63, -0.3, 0.3, -0.0, 0.0, 2.5, -2.5, math.nan, math.inf, -math.inf):
        want = tuple(float(f(x)) for f in (np.floor, np.ceil, np.trunc))
        for got in (roundings(x), roundings.interpret(x)):
            assert [g.hex() for g in got] == [w.hex() for w in want], (x, got, want)


@scriptc.script
def rounded_integers(x: np.ndarray):
    return np.floor(x), np.ceil(x + x), np.trunc(x)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "uint32", "bool"])
def test_numpy_rounding_of_integer_arrays_is_the_array(dtype):
    # NumPy 2 keeps integers (and bools) as they are: natively a LoweringError, where the interpreter ran it
    x = np.arange(-3, 4).astype(dtype)
    want = rounded_integers.py_func(x)
    for got in (rounded_integers(x), rounded_integers.interpret(x)):
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and np.array_equal(g, w)


@scriptc.script
def clip_numbers(x, lo, hi):
    return np.clip(x, lo, hi)


def test_clip_of_numbers_is_numpys():
    """np.clip of three numbers, natively a LoweringError: NumPy's loop on one element (its kind, NaN anywhere
    wins, a -0.0/0.0 tie keeps x, unlike np.minimum's)."""
    import itertools

    values = [3, -2, 2.5, -0.0, 0.0, math.nan, True, False]
    for x, lo, hi in itertools.product(values, repeat=3):
        want = np.clip(x, lo, hi).item()
        for got in (clip_numbers(x, lo, hi), clip_numbers.interpret(x, lo, hi)):
            assert type(got) is type(want) and (got == want or got != got and want != want), (x, lo, hi)
            assert not isinstance(want, float) or math.copysign(1, got) == math.copysign(1, want), (x, lo, hi)


@scriptc.script
def truth_chains(n: int, x: float) -> int:
    k = 0
    if n and x > 0:  # as a value, an int on one path and a bool on the other: a CompileError
        k += 1
    if n or x:
        k += 10
    while n and k < 100:
        k += abs(n)
    assert n or x or k >= 0, "never"
    return k + (5 if x and n else 7)


def test_and_or_of_mixed_kinds_as_a_condition():
    for n in (0, 1, 3, -2):
        for x in (0.0, -1.5, 2.0):
            assert truth_chains(n, x) == truth_chains.interpret(n, x) == truth_chains.py_func(n, x), (n, x)


@scriptc.script
def power_in_place(x: np.ndarray, y: np.ndarray) -> None:
    x **= y


def test_a_raising_power_with_an_overlapping_exponent_writes_nothing():
    """NumPy computes into a temporary when the operand shares memory with the target (not being the same view)
    and keeps none of it when an element raises; the corpus cannot pass overlapping arguments (deepcopy)."""
    for run in (power_in_place, power_in_place.interpret, power_in_place.py_func):
        b = np.array([2, 3, 2, -1, 2, 2])
        with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
            run(b[1:], b[:-1])
        assert b.tolist() == [2, 3, 2, -1, 2, 2]
        b = np.array([2, 3, 2, 1, 2, 2])
        run(b[1:], b[:-1])  # no error: the exponents as they were before any write
        assert b.tolist() == [2, 9, 8, 1, 2, 4]
