"""Native scalar backend (scriptc.backend.llvm): differential tests against CPython (``f.py_func``) and, where
64-bit wrapping makes CPython's exact ints differ, against the reference interpreter (``f.interpret``)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scriptc
from scriptc.backend.llvm import ERROR_TABLE, LoweringError, compile_graph

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INF, NAN = float("inf"), float("nan")


# -- functions under test ---------------------------------------------------------------------------------


@scriptc.script
def sum_range(n: int) -> int:
    s = 0
    for i in range(n):
        s += i
    return s


@scriptc.script
def range_sum(lo: int, hi: int, step: int) -> int:
    s = 0
    k = 0
    for i in range(lo, hi, step):
        s += i * (k + 1)
        k += 1
    return s * 1000 + k


@scriptc.script
def nested_triangle(n: int) -> int:
    count = 0
    for i in range(n):
        for j in range(i):
            for k in range(j, i):
                count += i * j - k
    return count


@scriptc.script
def find_factor_pair(n: int, target: int):
    for i in range(2, n):
        for j in range(i, n):
            if i * j == target:
                return i, j
            if i * j > target:
                break
    return -1, -1


@scriptc.script
def break_continue(n: int) -> int:
    total = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        if i % 7 == 0:
            continue
        total += i
        if total > 150:
            break
    return total


@scriptc.script
def collatz_steps(n: int) -> int:
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@scriptc.script
def collatz_longest(n: int):
    best = 0
    arg = 1
    for start in range(1, n + 1):
        m = start
        steps = 0
        while m != 1:
            m = m // 2 if m % 2 == 0 else 3 * m + 1
            steps += 1
        if steps > best:
            best = steps
            arg = start
    return arg, best


@scriptc.script
def gcd(a: int, b: int) -> int:
    a = abs(a)
    b = abs(b)
    while b:
        a, b = b, a % b
    return a


@scriptc.script
def count_primes(n: int) -> int:
    count = 0
    for k in range(2, n):
        is_p = True
        d = 2
        while d * d <= k:
            if k % d == 0:
                is_p = False
                break
            d += 1
        if is_p:
            count += 1
    return count


@scriptc.script
def is_prime(n: int) -> bool:
    if n < 2:
        return False
    for d in range(2, n):
        if d * d > n:
            return True
        if n % d == 0:
            return False
    return True


@scriptc.script
def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@scriptc.script
def fib_float_ratio(n: int) -> float:
    a = 1.0
    b = 1.0
    for _ in range(n):
        a, b = b, a + b
    return b / a


@scriptc.script
def int_arith(a: int, b: int):
    return a + b, a - b, a * b, a // b, a % b, a / b, -a, ~a, a & b, a | b, a ^ b


@scriptc.script
def int_compare(a: int, b: int):
    return a < b, a <= b, a == b, a != b, a > b, a >= b, max(a, b), min(a, b), abs(a)


@scriptc.script
def float_arith(x: float, y: float):
    return x + y, x - y, x * y, x / y, x // y, x % y, -x, abs(x)


@scriptc.script
def float_compare(x: float, y: float):
    return x < y, x <= y, x == y, x != y, x > y, x >= y, max(x, y), min(x, y)


@scriptc.script
def mixed(a: int, x: float):
    return a + x, x - a, a * x, a / x, x / a, a // x, a % x, a < x, a == x, x >= a, a != x, x > a


@scriptc.script
def int_pow(a: int, b: int) -> int:
    return a**b


@scriptc.script
def float_pow(x: float, y: float) -> float:
    return x**y


@scriptc.script
def bool_ops(p: bool, q: bool):
    return p and q, p or q, not p, p & q, p | q, p ^ q, ~p, p + q, p * 3, -q, p < q, max(p, q)


@scriptc.script
def conversions(x: float, a: int, p: bool):
    return float(a), bool(x), bool(a), int(p), float(p), int(x)


@scriptc.script
def math_fns(x: float):
    return (
        math.sqrt(abs(x)),
        math.exp(x / 100.0),
        math.log(abs(x) + 1.0),
        math.sin(x),
        math.cos(x),
        math.tan(x),
        math.tanh(x),
        math.floor(x),
        math.ceil(x),
        math.fabs(x),
        math.atan2(x, 3.0),
        math.atan(x),
        math.log2(abs(x) + 2.0),
        math.log10(abs(x) + 2.0),
        math.copysign(2.0, x),
        math.expm1(x / 100.0),
        math.log1p(abs(x)),
        math.trunc(x),
        math.fmod(x, 3.0),
    )


@scriptc.script
def math_one(x: float) -> float:
    return math.sqrt(x) + math.log(x)


@scriptc.script
def newton_sqrt(x: float) -> float:
    if x == 0.0:
        return 0.0
    g = x
    for _ in range(60):
        nxt = 0.5 * (g + x / g)
        if abs(nxt - g) <= 1e-15 * g:
            return nxt
        g = nxt
    return g


@scriptc.script
def polar(x: float, y: float):
    r = math.sqrt(x * x + y * y)
    return r, math.atan2(y, x)


@scriptc.script
def caller(n: int, x: float) -> float:
    total = 0.0
    for i in range(n):
        r, t = polar(x + i, x - i)
        total += r * t
    return total + fib(n) + gcd(n, 6)


@scriptc.script
def tuple_loop(n: int):
    t = (0, 1.0, True)
    for i in range(n):
        t = (t[0] + i, t[1] * 1.5, not t[2])
    a, b, c = t
    return a, (b, c), None


@scriptc.script
def unbound(n: int) -> int:
    if n > 3:
        y = n * 2
    return y + 1


@scriptc.script
def no_return(a: int):
    a += 1


@scriptc.script
def early_while(n: int) -> int:
    i = 0
    while True:
        i += 1
        if i * i > n:
            return i
        if i > 1000:
            break
    return -1


@scriptc.script
def to_int(x: float) -> int:
    return int(x)


@scriptc.script
def floor_of(x: float) -> int:
    return math.floor(x)


@scriptc.script
def exp_of(x: float) -> float:
    return math.exp(x)


@scriptc.script
def range_step(step: int) -> int:
    s = 0
    for i in range(0, 10, step):
        s += i
    return s


@scriptc.script
def shifts(a: int, b: int):
    return a << b, a >> b


@scriptc.script
def div_ii(a: int, b: int) -> float:
    return a / b


@scriptc.script
def mod_ii(a: int, b: int) -> int:
    return a % b


@scriptc.script
def fdiv_ii(a: int, b: int) -> int:
    return a // b


@scriptc.script
def div_ff(a: float, b: float) -> float:
    return a / b


@scriptc.script
def mod_ff(a: float, b: float) -> float:
    return a % b


@scriptc.script
def fdiv_ff(a: float, b: float) -> float:
    return a // b


@scriptc.script
def math_pow(x: float, y: float) -> float:
    return math.pow(x, y)


@scriptc.script
def np_minmax(x: float, a: int):
    return np.maximum(x, a), np.minimum(x, a), np.maximum(a, a + 1), np.minimum(a > 0, a < 5)


@scriptc.script
def bool_pow(p: bool, n: int) -> int:
    return p**n


@scriptc.script
def scale(x: float, k: int) -> float:
    return x * k + x / 2


@scriptc.script
def calls_with_ints(n: int):
    # an int passed for a float parameter stays an int in the callee (the callee specializes on it)
    return scale(n, 3), scale(n + 0.5, 3), scale(True, n)


@scriptc.script
def hypot(x: float, y: float) -> float:
    return math.hypot(x, y)


@scriptc.script
def prints(n: int) -> int:
    print("n is", n)
    return n


@scriptc.script
def array_sum(x: np.ndarray) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


# -- oracle -----------------------------------------------------------------------------------------------

_NATIVE = {}


def native(f, args):
    g = f.graph_for(*args)
    nf = _NATIVE.get(id(g))
    if nf is None:
        nf = _NATIVE[id(g)] = (compile_graph(g), g)
    return nf[0]


def outcome(fn, args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001
        return "raise", (type(e), str(e))


def _representable(v):
    if isinstance(v, tuple):
        return all(map(_representable, v))
    if isinstance(v, complex):
        return False
    if isinstance(v, int) and not isinstance(v, bool):
        return INT64_MIN <= v <= INT64_MAX
    return True


def same(a, b) -> bool:
    """Same type and value; NaN equals NaN and 0.0 differs from -0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def check(f, *args, oracle=None):
    """Native result (or exception type and message) equals CPython's; the interpreter's when CPython's
    exact ints do not fit 64 bits (or CPython returns a complex)."""
    got = outcome(native(f, args), args)
    if oracle is None:
        want = outcome(f.py_func, args)
        if want[0] == "ok" and not _representable(want[1]):
            oracle = "interp"
    if oracle == "interp":
        want = outcome(f.interpret, args)
    assert got[0] == want[0] and (same(got[1], want[1]) if got[0] == "ok" else got[1] == want[1]), (
        f"{f.__name__}{args}: native {got} != expected {want}"
    )


# -- differential tests -----------------------------------------------------------------------------------

EDGE_INTS = [
    0,
    1,
    -1,
    2,
    -2,
    3,
    -3,
    7,
    -7,
    10,
    -10,
    2**31,
    -(2**31),
    2**53 + 1,
    -(2**53) - 1,
    INT64_MAX,
    INT64_MIN,
    INT64_MAX - 1,
    INT64_MIN + 1,
]
EDGE_FLOATS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    1.5,
    -2.5,
    3.0,
    -3.0,
    7.25,
    -7.25,
    1e-300,
    -1e-300,
    5e-324,
    1e300,
    -1e300,
    2.0**53,
    2.0**63,
    -(2.0**63),
    2.0**64,
    INF,
    -INF,
    NAN,
    math.pi,
]


@pytest.mark.parametrize(
    "f,argsets",
    [
        (sum_range, [(0,), (1,), (10,), (-5,), (1000,)]),
        (
            range_sum,
            [
                (0, 10, 1),
                (10, 0, -3),
                (-2, -11, -2),
                (5, 0, 1),
                (0, 10, -1),
                (1, 20, 4),
                (-3, 3, 2),
                (INT64_MAX - 3, INT64_MAX, 1),
                (INT64_MIN + 2, INT64_MIN, -1),
                (0, 7, INT64_MAX),
                (0, -7, INT64_MIN),
            ],
        ),
        (nested_triangle, [(0,), (6,), (12,)]),
        (find_factor_pair, [(100, 391), (10, 97), (30, 30)]),
        (break_continue, [(0,), (10,), (40,)]),
        (collatz_steps, [(1,), (27,), (97,)]),
        (collatz_longest, [(1,), (30,), (200,)]),
        (gcd, [(1071, 462), (-48, 18), (0, 5), (5, 0), (0, 0), (INT64_MAX, 6)]),
        (count_primes, [(0,), (100,), (500,)]),
        (is_prime, [(-1,), (1,), (2,), (91,), (97,), (7919,)]),
        (fib, [(0,), (1,), (50,), (90,), (100,)]),
        (fib_float_ratio, [(0,), (20,), (2000,)]),
        (newton_sqrt, [(0.0,), (2.0,), (1e10,), (1e-10,)]),
        (caller, [(0, 1.0), (5, 0.5), (7, -2.0)]),
        (tuple_loop, [(0,), (1,), (5,)]),
        (early_while, [(0,), (50,), (10**7,)]),
        (no_return, [(3,)]),
        (conversions, [(x, a, p) for x, a, p in zip(EDGE_FLOATS[:17], EDGE_INTS, [True, False] * 9)]),
        (bool_ops, [(p, q) for p in (False, True) for q in (False, True)]),
    ],
)
def test_programs(f, argsets):
    for args in argsets:
        check(f, *args)


def test_int_ops_edge_values():
    for a in EDGE_INTS:
        for b in EDGE_INTS:
            check(int_arith, a, b)
            check(int_compare, a, b)
            check(mixed, a, float(b) + 0.5)


def test_float_ops_edge_values():
    for x in EDGE_FLOATS:
        for y in EDGE_FLOATS:
            check(float_arith, x, y)
            check(float_compare, x, y)
            check(float_pow, x, y)


def test_float_functions_specialized_on_ints_and_bools():
    # an int (or bool) passed for a float parameter stays an int: the graph specializes on it
    for a in EDGE_INTS + [True, False]:
        check(math_fns, a, oracle="interp" if a == INT64_MIN else None)  # abs(INT64_MIN) wraps
        for x in EDGE_FLOATS:
            check(float_arith, a, x)
            check(float_arith, x, a)
            check(float_pow, a, x)
            check(float_pow, x, a, oracle="interp" if isinstance(a, int) and a < 0 else None)
            check(math_pow, a, x)
            check(hypot, x, a)
        for b in [0, 1, -1, 2, -3, True, False]:
            check(float_arith, a, b)


def test_mixed_int_float_exact():
    # comparisons of ints with floats are exact in Python: 2**53 + 1 != 2.0**53
    for a in EDGE_INTS:
        for x in EDGE_FLOATS:
            check(mixed, a, x)
    assert native(mixed, (2**53 + 1, 1.0))(2**53 + 1, 2.0**53)[8] is False


def test_int_true_division_correctly_rounded():
    for a, b in [
        (2**53 + 1, 1),
        (INT64_MAX, 3),
        (INT64_MIN, 7),
        (10**18 + 1, 10**18),
        (1, INT64_MIN),
        (INT64_MAX, INT64_MIN),
        (-(2**60) - 1, 2**55 + 3),
        (0, -(2**60)),
    ]:
        check(int_arith, a, b)


def test_int_pow():
    for a in [0, 1, -1, 2, -2, 3, 10, -7, INT64_MAX, INT64_MIN]:
        for b in [0, 1, 2, 3, 10, 63, 64, 65, 100, -1, -5]:
            check(int_pow, a, b, oracle="interp" if b < 0 else None)


def test_math_functions():
    for x in EDGE_FLOATS + [0.1, -0.1, 2.0, 100.0, -100.0, 710.0, -710.0, 1e17, 4.5e15 + 0.5]:
        check(math_fns, x)


def test_shifts():
    for a in [0, 1, -1, 5, -5, INT64_MAX, INT64_MIN]:
        for b in [0, 1, 3, 62, 63, 64, 65, 1000, -1]:
            check(shifts, a, b, oracle="interp")


def test_int64_wraparound_matches_interpreter():
    check(fib, 100, oracle="interp")
    check(int_arith, INT64_MIN, -1, oracle="interp")  # INT64_MIN // -1 wraps, % is 0: no trap
    check(int_arith, INT64_MAX, INT64_MAX, oracle="interp")
    check(int_pow, 3, 100, oracle="interp")
    check(nested_triangle, 3, oracle="interp")
    check(floor_of, 1e19, oracle="interp")
    check(floor_of, -1e300, oracle="interp")
    check(floor_of, 2.0**63, oracle="interp")
    check(floor_of, -(2.0**63), oracle="interp")
    check(range_sum, INT64_MIN, INT64_MAX, INT64_MAX, oracle="interp")
    assert native(int_arith, (1, 1))(INT64_MIN, -1)[3:5] == (INT64_MIN, 0)


# -- errors: CPython's exception types and messages ---------------------------------------------------------


@pytest.mark.parametrize(
    "f,args,exc,msg",
    [
        (int_arith, (1, 0), ZeroDivisionError, "integer division or modulo by zero"),
        (float_arith, (1.0, 0.0), ZeroDivisionError, "float division by zero"),
        (fdiv_ff, (1.0, -0.0), ZeroDivisionError, "float floor division by zero"),
        (mixed, (1, 0.0), ZeroDivisionError, "float division by zero"),
        (math_one, (-1.0,), ValueError, "math domain error"),
        (math_one, (0.0,), ValueError, "math domain error"),
        (to_int, (NAN,), ValueError, "cannot convert float NaN to integer"),
        (to_int, (INF,), OverflowError, "cannot convert float infinity to integer"),
        (to_int, (-INF,), OverflowError, "cannot convert float infinity to integer"),
        (to_int, (1e300,), OverflowError, "int too large to convert to a 64-bit int"),
        (to_int, (2.0**63,), OverflowError, "int too large to convert to a 64-bit int"),
        (floor_of, (NAN,), ValueError, "cannot convert float NaN to integer"),
        (float_pow, (0.0, -1.0), ZeroDivisionError, "0.0 cannot be raised to a negative power"),
        (float_pow, (10.0, 400.0), OverflowError, "(34, 'Numerical result out of range')"),
        (exp_of, (1000.0,), OverflowError, "math range error"),
        (range_step, (0,), ValueError, "range() arg 3 must not be zero"),
        (unbound, (1,), UnboundLocalError, "cannot access local variable 'y' where it is not associated with a value"),
    ],
)
def test_errors(f, args, exc, msg):
    with pytest.raises(exc) as info:
        native(f, args)(*args)
    assert str(info.value) == msg
    check(f, *args)  # and CPython agrees


def test_int_negative_power_raises_like_scriptc():
    # CPython gives a float; scriptc's int ** int is an int and raises (scriptc.ops.arith._pow)
    with pytest.raises(ValueError) as info:
        native(int_pow, (2, 1))(2, -1)
    assert str(info.value) == "integers to negative integer powers are not allowed"
    check(int_pow, 2, -1, oracle="interp")


def test_each_division_message():
    # one op per function so that each message is reached
    for f, args, msg in [
        (div_ii, (1, 0), "division by zero"),
        (mod_ii, (1, 0), "integer modulo by zero"),
        (fdiv_ii, (1, 0), "integer division or modulo by zero"),
        (div_ff, (1.0, 0.0), "float division by zero"),
        (mod_ff, (1.0, 0.0), "float modulo"),
        (fdiv_ff, (1.0, 0.0), "float floor division by zero"),
        (div_ii, (True, False), "division by zero"),
    ]:
        with pytest.raises(ZeroDivisionError) as info:
            native(f, args)(*args)
        assert str(info.value) == msg
        check(f, *args)


def test_error_table_records_operator_and_source():
    with pytest.raises(ZeroDivisionError):
        native(fdiv_ii, (1, 1))(1, 0)
    line = fdiv_ii.py_func.__code__.co_firstlineno + 2  # decorator, def, then 'return a // b'
    entries = ERROR_TABLE.entries()
    assert any(
        e.exc_type is ZeroDivisionError
        and e.op == "aten::floordiv"
        and e.source is not None
        and e.source.line == line
        and e.source.filename.endswith("test_native_scalar.py")
        for e in entries
    )


def test_negative_base_fractional_power_matches_interpreter():
    # CPython returns a complex; scriptc's ** raises ValueError there (scriptc.ops.arith._pow), natively too
    check(float_pow, -8.0, 1.0 / 3.0, oracle="interp")
    with pytest.raises(ValueError, match="complex"):
        native(float_pow, (1.0, 1.0))(-8.0, 0.5)


def test_hypot_is_cpythons():
    # CPython's math.hypot is its own algorithm (vector_norm), not libm's hypot: it rounds differently
    for x in EDGE_FLOATS + [3.0, 4.0, 1e-310, 2.2e-308, 1.7e308, 0.1, 0.7]:
        for y in EDGE_FLOATS + [3.0, 4.0, 1e-310, 2.2e-308, 1.7e308, 0.1, 0.7]:
            check(hypot, x, y)


def test_math_pow():
    for x in EDGE_FLOATS:
        for y in EDGE_FLOATS + [2.0, 0.5, -1.0, 3.0]:
            check(math_pow, x, y)


def test_numpy_minmax_on_scalars_matches_interpreter():
    # np.maximum on scalars returns NumPy scalars in CPython; the interpreter's (and native) results are floats
    for x in EDGE_FLOATS:
        for a in [0, -1, 3, INT64_MAX]:
            check(np_minmax, x, a, oracle="interp")


def test_bool_base_negative_power():
    check(bool_pow, True, -3, oracle="interp")  # 1.0 in CPython, stored as an int
    check(bool_pow, True, 5)
    check(bool_pow, False, 0)
    check(bool_pow, False, -1)  # ZeroDivisionError, as CPython


def test_call_specialized_on_int_arguments():
    for n in [0, 3, -7, 2**53 + 1]:
        check(calls_with_ints, n)


# -- unsupported code -------------------------------------------------------------------------------------


@scriptc.script
def scalar_dot(x: np.ndarray) -> float:
    return np.dot(x, x)


def test_unsupported_array_operation_is_a_lowering_error():
    with pytest.raises(LoweringError) as info:
        compile_graph(scalar_dot.graph_for(np.zeros(())))
    assert info.value.op == "aten::dot"
    assert "test_native_scalar.py:" in str(info.value)


# -- generated code ---------------------------------------------------------------------------------------


def test_strict_floating_point_in_ir_and_asm():
    for f, args in [
        (float_arith, (1.0, 2.0)),
        (math_fns, (1.0,)),
        (newton_sqrt, (2.0,)),
        (caller, (3, 1.0)),
        (float_pow, (1.0, 2.0)),
        (hypot, (1.0, 2.0)),
        (math_pow, (1.0, 2.0)),
    ]:
        nf = native(f, args)
        ir_text = nf.llvm_ir
        assert "fmuladd" not in ir_text and "llvm.fma" not in ir_text
        for flag in (
            " fast ",
            " reassoc ",
            " contract ",
            " nnan ",
            " ninf ",
            " nsz ",
            " arcp ",
            " afn ",
            '-fp-math"="true"',
        ):
            assert flag not in ir_text, flag
        asm = nf.asm
        assert "vfmadd" not in asm and "vfnmadd" not in asm and "vfmsub" not in asm
    assert "define" in native(gcd, (1, 2)).llvm_ir


def test_callee_is_a_real_call_before_optimization():
    nf = compile_graph(caller.frontend_graph_for(1, 1.0))  # the inline pass would remove the calls
    assert nf.unoptimized_ir.count("define internal") >= 3  # caller, polar, fib, gcd
    assert "call i32" in nf.unoptimized_ir


# -- properties -------------------------------------------------------------------------------------------

ints64 = st.one_of(st.integers(INT64_MIN, INT64_MAX), st.integers(-100, 100), st.sampled_from(EDGE_INTS))
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(EDGE_FLOATS),
    st.integers(-1000, 1000).map(float),
    st.floats(-10.0, 10.0),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ints64, ints64)
def test_property_int_ops(a, b):
    check(int_arith, a, b)
    check(int_compare, a, b)


@settings(max_examples=150, deadline=None)
@given(st.integers(-(2**40), 2**40), st.integers(-3, 70))
def test_property_int_pow(a, b):
    check(int_pow, a, b, oracle="interp" if b < 0 else None)


@settings(max_examples=300, deadline=None)
@given(floats, floats)
def test_property_float_ops(x, y):
    check(float_arith, x, y)
    check(float_compare, x, y)
    check(float_pow, x, y)


@settings(max_examples=200, deadline=None)
@given(ints64, floats)
def test_property_mixed(a, x):
    check(mixed, a, x)


@settings(max_examples=200, deadline=None)
@given(floats)
def test_property_math(x):
    check(math_fns, x)


@settings(max_examples=300, deadline=None)
@given(floats, floats)
def test_property_hypot_and_math_pow(x, y):
    check(hypot, x, y)
    check(math_pow, x, y)
