"""Scalar corner cases: int/float comparisons beyond 2**53, float modulo with
infinities, evaluation order and single evaluation of operands, range
bounds evaluated once, loop-variable rebinding, nested tuples."""

import math

import numpy as np  # noqa: F401
import scriptc

from . import case

BIG = 9007199254740993  # 2**53 + 1: not representable as a float
N_CONST = 4


@scriptc.script
def int_float_compare(k: int, x: float):
    # Python compares int and float exactly (no rounding of the int)
    print(k == x, k > x, k >= x, k != x, x < k)
    print(k - 1 == x, float(k) == x, k + 0.0 == x)
    print(BIG == 2.0**53, BIG > 2.0**53, min(BIG, k), max(x, 2.0))


case(int_float_compare, lambda: (9007199254740993, 9007199254740992.0))


@scriptc.script
def float_mod_inf(x: float, big: float):
    inf = big * 10.0
    print(x % inf, -x % inf, x % -inf, -x % -inf)
    print(x // inf, -x // inf, x // -inf, -x // -inf)
    print(0.0 % inf, 0.0 // inf)


case(float_mod_inf, lambda: (5.0, 1e308))


@scriptc.script
def big_int_arith(a: int, b: int):
    print(a // b, a % b, -a // b, -a % b, a // -b, a % -b)
    print(a + b, abs(-a), -a - 1, a - a, float(a), int(float(a)))
    print(a / b, float(a) / b, a / float(b))


case(big_int_arith, lambda: (4611686018427387903, 1000003))


@scriptc.script
def int_to_float_rounding(k: int) -> float:
    # int -> float rounds to nearest even
    return float(k) + 0.0 * k


case(int_to_float_rounding, lambda: (9007199254740995,))


@scriptc.script
def h_trace(v: int) -> int:
    print("eval", v)
    return v


@scriptc.script
def eval_order_args(a: int, b: int):
    print(h_trace(a), h_trace(b), h_trace(a + b))
    s = h_trace(a) - h_trace(b) * h_trace(2)
    print("s", s)


case(eval_order_args, lambda: (3, 4))


@scriptc.script
def short_circuit_calls(a: int, b: int) -> bool:
    r = h_trace(a) > 0 and h_trace(b) > 0
    q = h_trace(a) > 0 or h_trace(b) > 0
    t = not (h_trace(b) > 5) or h_trace(a) == 1
    return r and q and t


case(short_circuit_calls, lambda: (0, 7))
case(short_circuit_calls, lambda: (2, 7))


@scriptc.script
def chained_compare_once(a: int, b: int, c: int):
    # the middle operand is evaluated once; evaluation stops at the first False
    print(a < h_trace(b) < c)
    print(a > h_trace(b) < h_trace(c))


case(chained_compare_once, lambda: (1, 2, 3))


@scriptc.script
def cond_expr_one_branch(c: bool) -> int:
    return h_trace(1) if c else h_trace(2)


case(cond_expr_one_branch, lambda: (True,))
case(cond_expr_one_branch, lambda: (False,))


@scriptc.script
def range_bound_evaluated_once(n: int) -> int:
    count = 0
    for i in range(n):
        n = n - 1  # does not shorten the loop
        count += 1
    return count * 100 + n


case(range_bound_evaluated_once, lambda: (6,))


@scriptc.script
def range_args_evaluated_once(n: int) -> int:
    s = 0
    for i in range(h_trace(1), h_trace(n), h_trace(2)):
        s += i
    return s


case(range_args_evaluated_once, lambda: (9,))


@scriptc.script
def reverse_ranges(n: int):
    for i in range(n - 1, -1, -1):
        print(i, end=" ")
    print()
    for i in range(n, 0, -n):
        print(i, end=" ")
    print()
    for i in range(-n, n, n - 1):
        print(i, end=" ")
    print()
    for i in range(0, -1):
        print("never")
    for i in range(2, 3, -7):
        print("never")


case(reverse_ranges, lambda: (5,))


@scriptc.script
def while_complex_cond(n: int) -> int:
    i = 0
    j = n
    while (i < j and not i * j > 40) or i == 0:
        i += 1
        j -= 1
        if i % 2 == 1 and j % 3 == 0:
            continue
    return i * 1000 + j


case(while_complex_cond, lambda: (20,))


@scriptc.script
def return_from_while_in_for(n: int) -> int:
    for i in range(n):
        k = i
        while k > 0:
            if k * i == 12:
                return i * 100 + k
            k -= 1
        if i > 10:
            break
    return -1


case(return_from_while_in_for, lambda: (20,))


@scriptc.script
def break_while_continue_for(n: int) -> int:
    total = 0
    for i in range(n):
        j = 0
        while True:
            j += 1
            if j > i:
                break
            total += j
        if total % 2 == 0:
            continue
        total += 100
    return total


case(break_while_continue_for, lambda: (8,))


@scriptc.script
def rotate_tuple(a: int, b: float, c: bool):
    x = a
    y = a + 1
    z = a + 2
    for _ in range(4):
        x, y, z = y, z, x
        print(x, y, z)
    p, q = b, c
    q, p = c, b
    print(p, q)
    return (x, (y, z)), (b, c)


case(rotate_tuple, lambda: (1, 2.5, True))


@scriptc.script
def globals_as_sizes() -> int:
    s = 0
    for i in range(N_CONST):
        for j in range(i, N_CONST):
            s += i * N_CONST + j
    return s + BIG // 2**40


case(globals_as_sizes, lambda: ())


@scriptc.script
def float_pow_corners(x: float):
    print(x**0.0, 0.0**0.0, (-x) ** 2.0, (-x) ** 3.0, 1.0**1e308)
    print(x**-2.0, (-2.0) ** -1.0, 0.0**2.5, x**0.5, 2.0**-1074.0)
    print(math.pow(-2.0, 3.0), math.pow(x, 0.5), math.sqrt(0.0), math.sqrt(-0.0))


case(float_pow_corners, lambda: (1.5,))


@scriptc.script
def int_pow_corners(a: int):
    print(a**0, a**1, a**2, (-a) ** 3, 0**5, (-1) ** 63, 3**39)
    k = 2
    k **= 10
    print(k, 2**62 // 3)


case(int_pow_corners, lambda: (7,))


@scriptc.script
def truncation_and_floor(x: float):
    print(int(x), int(-x), math.floor(x), math.floor(-x), math.ceil(x), math.ceil(-x))
    print(int(x + 0.5), x // 1.0, -x // 1.0, x % 1.0, -x % 1.0)
    print(math.floor(-0.0), math.ceil(-0.5), int(-0.5), 1e18 // 7.0)


case(truncation_and_floor, lambda: (2.5,))
case(truncation_and_floor, lambda: (1e15 + 0.5,))


@scriptc.script
def float_repr_corners(x: float):
    print(x, x * 3.0, x / 7.0, x * 1e20, x * 1e21, x * 1e-4, x * 1e-5)
    print(x * 123456789.0, x * 1234567890123456.0, x * 12345678901234567.0)
    print(float(2**62) * 2.0, float(-(2**53)), 4.35, 0.1 * 3, 1.0 / 7.0)
    print(x * 5e-324, 1.0 - 2.0**-53, 1.0 + 2.0**-52)


case(float_repr_corners, lambda: (1.0,))


@scriptc.script
def abs_min_max_corners(x: float, n: int):
    print(abs(-0.0), abs(x - x), min(0.0, -0.0), max(0.0, -0.0), min(-0.0, 0.0))
    print(max(n, -n, 3), min(n, -n, 3), max(x, -x, 0.5), abs(-n), abs(True + 0))
    print(min(n, n), max(-x, x))


case(abs_min_max_corners, lambda: (0.25, 6))


@scriptc.script
def bool_ops_corners(a: bool, b: bool):
    print(a and b, a or b, not a, a == b, a != b, a < b, a + b, a * 3, -a, ~a)
    print(int(a) + int(b), float(a), a and 3 > 2, b or a)


case(bool_ops_corners, lambda: (True, False))


@scriptc.script
def int_and_or_values(a: int, b: int):
    # and/or return one of their operands
    print(a and b, a or b, b and a, b or a, a > 0 and b > 0, a > 100 or b > 0)


case(int_and_or_values, lambda: (0, 5))
case(int_and_or_values, lambda: (3, 0))


@scriptc.script
def collatz_with_globals(n: int):
    best = 0
    where = 0
    for s in range(1, n):
        m = s
        k = 0
        while m != 1 and k < 1000:
            if m % 2:
                m = 3 * m + 1
            else:
                m //= 2
            k += 1
        if k > best:
            best, where = k, s
    print(f"best start {where:4d} takes {best:>4} steps")
    return where, best


case(collatz_with_globals, lambda: (200,))


@scriptc.script
def int_true_division_rounding(a: int, b: int):
    # Python's int / int is correctly rounded even beyond 2**53
    print(a / b, -a / b, a / 1, (a + 2) / 3, 2**62 / 3)


case(int_true_division_rounding, lambda: (9007199254740993, 3))


@scriptc.script
def int_passed_for_float(x: float):
    # an int argument for a float parameter stays an int in CPython
    print(x, x * 2, x / 2, x // 2)
    return x + 1


case(int_passed_for_float, lambda: (3,))


@scriptc.script
def bool_passed_for_int(n: int):
    # a bool passed for an int is the int 0 or 1 (documented: print(n) shows 1 where CPython shows True)
    print(n + 1, -n, n * 7)
    return n - 2


case(bool_passed_for_int, lambda: (True,))


@scriptc.script
def h_float_square(x: float) -> float:
    return x * x


@scriptc.script
def int_literal_to_float_helper(n: int):
    print(h_float_square(3), h_float_square(n), h_float_square(2.5))


case(int_literal_to_float_helper, lambda: (4,))


@scriptc.script
def maybe_defined(n: int) -> int:
    if n > 0:
        y = n * 2
    if n > 5:
        z = 1
    else:
        z = 2
    return y + z


case(maybe_defined, lambda: (3,))


@scriptc.script
def local_shadows_global(n: int) -> int:
    N_CONST = n * 3
    return N_CONST + 1


case(local_shadows_global, lambda: (5,))


@scriptc.script
def elif_chain_pass(n: int) -> int:
    s = 0
    for i in range(n):
        if i % 5 == 0:
            pass
        elif i % 5 == 1:
            s += 1
        elif i % 5 == 2:
            s -= 2
        elif i % 5 == 3 and i > 5:
            s *= 2
        else:
            s += 10
        while False:
            pass
    return s


case(elif_chain_pass, lambda: (17,))


@scriptc.script
def mixed_int_float_compare(x: float, n: int):
    print(x < 3, n == 3.0, x == n, 3 <= x < 4, n / 2 == 1.5, n // 2 == 1.0)
    print(-7.5 % 2, 7.5 // -2, n % 2.5, -n // 2.0)


case(mixed_int_float_compare, lambda: (3.0, 3))


@scriptc.script
def math_corners(x: float):
    inf = x * 1e308 * 10.0
    nan = inf - inf
    print(math.sqrt(inf), math.exp(-inf), math.log(inf), math.fabs(-inf), math.tanh(inf))
    print(math.pow(1.0, nan), math.pow(nan, 0.0), nan**0.0, 1.0**nan, math.exp(nan))
    print(math.floor(-x), math.ceil(x / 3.0), math.sqrt(x), math.log(x * x))
    print(math.sin(0.0), math.sin(-0.0), math.tan(-0.0), math.tanh(-0.0))


case(math_corners, lambda: (1.0,))


@scriptc.script
def literal_int_expressions(n: int) -> int:
    smallest = -(2**63)  # int expressions of literals are CPython's exact values
    return (
        smallest + (1 << 61) * 2 - 7 // 2 + (-7) % 3 + ~5 + 2**62 + n * (10**18 // 3) + 2**5000 // 2**4990
    )  # big intermediates, exact as CPython's


case(literal_int_expressions, lambda: (4,))
