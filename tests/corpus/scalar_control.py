"""Scalar control flow: loops, nested loops, break/continue/early return,
while loops, integer algorithms, floor division / modulo semantics."""

import math

import numpy as np
import scriptc

from . import case

LIMIT = 50
SCALE = 2.5
VERBOSE = True
NEG_OFFSET = -7


@scriptc.script
def sum_range(n: int) -> int:
    s = 0
    for i in range(n):
        s += i
    return s


case(sum_range, lambda: (10,))
case(sum_range, lambda: (0,))


@scriptc.script
def range_forms():
    for i in range(3):
        print(i, end=" ")
    print()
    for i in range(2, 6):
        print(i, end=" ")
    print()
    for i in range(1, 20, 4):
        print(i, end=" ")
    print()
    for i in range(10, 0, -3):
        print(i, end=" ")
    print()
    for i in range(-2, -11, -2):
        print(i, end=" ")
    print()
    for i in range(5, 0):
        print("never", i)
    for i in range(0, 10, -1):
        print("never", i)
    for i in range(-3, 3):
        print(i, end=",")
    print("|")


case(range_forms, lambda: ())


@scriptc.script
def nested_triangle(n: int) -> int:
    count = 0
    for i in range(n):
        for j in range(i):
            for k in range(j, i):
                count += i * j - k
    return count


case(nested_triangle, lambda: (6,))


@scriptc.script
def find_factor_pair(n: int, target: int):
    # early return from inside a doubly nested loop
    for i in range(2, n):
        for j in range(i, n):
            if i * j == target:
                return i, j
            if i * j > target:
                break
    return -1, -1


case(find_factor_pair, lambda: (100, 391))
case(find_factor_pair, lambda: (10, 97))


@scriptc.script
def pythagorean_triple(limit: int):
    for c in range(1, limit):
        for b in range(1, c):
            for a in range(1, b):
                if a * a + b * b == c * c and a + b + c > 20:
                    return a, b, c
    return 0, 0, 0


case(pythagorean_triple, lambda: (30,))


@scriptc.script
def break_continue(n: int) -> int:
    total = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        if i % 7 == 0:
            print("skip", i)
            continue
        total += i
        if total > LIMIT * 3:
            print("break at", i)
            break
    return total


case(break_continue, lambda: (40,))


@scriptc.script
def break_inner_only(n: int) -> int:
    hits = 0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            if (i + j) % 3 == 0:
                continue
            hits += 1
        print(i, hits)
    return hits


case(break_inner_only, lambda: (5,))


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


case(collatz_steps, lambda: (27,))
case(collatz_steps, lambda: (1,))


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


case(collatz_longest, lambda: (30,))


@scriptc.script
def gcd(a: int, b: int) -> int:
    a = abs(a)
    b = abs(b)
    while b:
        a, b = b, a % b
    return a


case(gcd, lambda: (1071, 462))
case(gcd, lambda: (-48, 18))
case(gcd, lambda: (0, 5))


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


case(count_primes, lambda: (100,))


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


case(is_prime, lambda: (97,))
case(is_prime, lambda: (91,))
case(is_prime, lambda: (1,))


@scriptc.script
def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


case(fib, lambda: (90,))
case(fib, lambda: (0,))


@scriptc.script
def fib_float_ratio(n: int) -> float:
    a = 1.0
    b = 1.0
    for _ in range(n):
        a, b = b, a + b
    return b / a


case(fib_float_ratio, lambda: (20,))


@scriptc.script
def int_floordiv_mod_table():
    for a in range(-7, 8, 3):
        for b in range(-3, 4):
            if b == 0:
                continue
            print(a, b, a // b, a % b, a / b)


case(int_floordiv_mod_table, lambda: ())


@scriptc.script
def float_floordiv_mod(x: float, y: float):
    print(x // y, x % y)
    print(-x // y, -x % y)
    print(x // -y, x % -y)
    print((x + 0.25) // y, (x + 0.25) % y)


case(float_floordiv_mod, lambda: (7.5, -2.0))
case(float_floordiv_mod, lambda: (-0.0, 2.0))
case(float_floordiv_mod, lambda: (4.0, -2.0))


@scriptc.script
def augmented_ops(n: int, x: float):
    k = n
    k += 4
    k -= 1
    k *= 3
    k //= 4
    k %= 5
    k **= 3
    y = x
    y += 1.5
    y -= 0.25
    y *= 3.0
    y /= 2.0
    y //= 0.5
    y %= 3.0
    y **= 2.0
    return k, y


case(augmented_ops, lambda: (3, 2.5))


@scriptc.script
def arith_mix(a: int, b: int, x: float):
    p = a**2 + b**3
    q = a / b
    r = a * x - b / x
    s = x**3 - (-2) ** 3
    t = 2**62 + 2**61
    u = 0**0 + a**0
    v = 2.0**0.5
    w = -a // 2 + (-a) % 4
    return p, q, r, s, t, u, v, w


case(arith_mix, lambda: (7, -3, 2.5))


@scriptc.script
def unary_ops(n: int, x: float, b: bool):
    print(-n, +n, ~n, ~(-n), not n, not 0)
    print(-x, +x, not x, not 0.0)
    print(not b, not not b, -(-x))


case(unary_ops, lambda: (5, 2.75, True))


@scriptc.script
def conversions(x: float, n: int):
    print(int(x), int(-x), int(0.9), int(-0.9), int(n))
    print(float(n), float(-n), float(x))
    print(bool(n), bool(0), bool(x), bool(0.0), bool(-0.0))
    print(abs(x), abs(n), abs(-n), abs(-0.0))
    print(math.floor(x), math.ceil(x), math.floor(-x), math.ceil(-x))
    print(min(n, 3), max(n, 3), min(x, 1.5, -2.0), max(x, -9.5))
    print(int(True), float(False), int(2.0) + int(x))


case(conversions, lambda: (-3.7, 7))


@scriptc.script
def chained_compare(a: int, b: int, c: int):
    print(a < b < c, a <= b > c, a < b == c, a != b != c)
    print(a < b < c < 4, 0 <= a <= b <= c <= 3)
    print(a == b, a >= c, c > b >= a)


case(chained_compare, lambda: (1, 2, 3))
case(chained_compare, lambda: (3, 2, 2))


@scriptc.script
def short_circuit(n: int):
    # the right operands must not be evaluated when short-circuited
    print(n != 0 and 10 // n > 2)
    print(n == 0 or 10 % n == 1)
    if n > 0 and 12 // n == 4:
        print("four")
    if not (n == 0 or 5 // n < 1):
        print("small n")
    print(n and 7, n or 9, 0 or n, 5 and 0)


case(short_circuit, lambda: (0,))
case(short_circuit, lambda: (3,))


@scriptc.script
def conditional_expr(n: int) -> int:
    s = 0
    for i in range(n):
        s += i if i % 3 == 0 else -1 if i % 3 == 1 else 2 * i
        print(i % 2 == 0, s)
    return s


case(conditional_expr, lambda: (12,))


@scriptc.script
def while_true_break(n: int) -> int:
    k = 1
    while True:
        k = k * 2
        if k > n:
            break
    return k


case(while_true_break, lambda: (1000,))


@scriptc.script
def while_continue(n: int) -> int:
    i = 0
    s = 0
    while i < n:
        i += 1
        if i % 3 == 0:
            continue
        s += i
    return s


case(while_continue, lambda: (20,))


@scriptc.script
def nested_while(n: int) -> int:
    i = 0
    total = 0
    while i < n:
        j = i
        while j < n:
            if (i * j) % 5 == 4:
                return total * 100 + i * 10 + j
            total += j
            j += 1
        i += 1
    return total


case(nested_while, lambda: (4,))


@scriptc.script
def loop_var_after_loop(n: int) -> int:
    for i in range(n):
        i = i * 10  # rebinding does not affect the iteration
        print(i)
    return i


case(loop_var_after_loop, lambda: (5,))


@scriptc.script
def math_functions(x: float):
    print(math.sqrt(x), math.exp(x), math.log(x))
    print(math.sin(x), math.cos(x), math.tan(x), math.tanh(x))
    print(math.floor(x * 3.3), math.ceil(x * 3.3), math.fabs(-x))
    print(math.pow(x, 3.5), math.pow(x, -1.0), math.pi, math.e)
    print(math.pi * x, math.e**x)


case(math_functions, lambda: (2.0,))
case(math_functions, lambda: (0.5,))


@scriptc.script
def globals_read(n: int) -> float:
    acc = 0.0
    for i in range(n):
        if VERBOSE and i % 4 == 0:
            print("i =", i)
        acc += SCALE * (i + NEG_OFFSET)
    if acc > LIMIT:
        return acc
    return -acc


case(globals_read, lambda: (10,))


@scriptc.script
def special_floats(big: float, one: float):
    inf = big * 10.0
    ninf = -inf
    nan = inf - inf
    print(inf, ninf, nan)
    print(nan == nan, nan != nan, nan < one, nan > one, inf > big)
    print(max(nan, one), max(one, nan), min(nan, one), min(one, nan))
    print(inf + one, one / inf, -one / inf, inf * 0.0)


case(special_floats, lambda: (1e308, 1.0))


@scriptc.script
def bool_arith(a: int, b: int, c: int) -> int:
    count = 0
    count += a < b
    count += b < c
    count += a > c
    t = (a < b) + (b < c)
    return count * 10 + t


case(bool_arith, lambda: (1, 3, 7))


@scriptc.script
def largest_prime_factor(n: int) -> int:
    f = 2
    last = 1
    while n > 1:
        if n % f == 0:
            last = f
            n //= f
            while n % f == 0:
                n //= f
        f += 1
        if f * f > n and n > 1:
            last = n
            break
    return last


case(largest_prime_factor, lambda: (600851475,))


@scriptc.script
def newton_sqrt(a: float, tol: float):
    x = a
    it = 0
    while abs(x * x - a) > tol and it < 100:
        x = 0.5 * (x + a / x)
        it += 1
    return x, it


case(newton_sqrt, lambda: (2.0, 1e-12))


@scriptc.script
def bisection(hi: float, lo: float, target: float) -> float:
    # solve x**3 = target on [lo, hi]
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if mid * mid * mid < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


case(bisection, lambda: (1.0, 0.0, 0.25))


@scriptc.script
def int_of_float_in_a_loop(n: int, x: float) -> int:
    s = 0
    for i in range(n):
        s += int(x) + i  # int(x) may raise: it is not hoisted where a loop that never runs would raise
    return s


case(int_of_float_in_a_loop, lambda: (0, math.nan))
case(int_of_float_in_a_loop, lambda: (0, 1e300))
case(int_of_float_in_a_loop, lambda: (4, -2.5))


@scriptc.script
def first_of_a_huge_range(a: int, b: int, step: int) -> int:
    for i in range(a, b, step):  # 2**63 elements or more: it runs (a trip count that wrapped ran none)
        if i % 3 == 2:
            return i
    for i in reversed(range(a, b, step)):
        return i
    return 0


case(first_of_a_huge_range, lambda: (-(2**63), 2**63 - 1, 1))
case(first_of_a_huge_range, lambda: (2**63 - 1, -(2**63), -1))
case(first_of_a_huge_range, lambda: (-(2**63), 2**63 - 1, 2**62))
case(first_of_a_huge_range, lambda: (0, 3, 3))


@scriptc.script
def loops_with_else(n: int, t: tuple[int, int, int], m: int) -> int:
    count = 0
    k = 2
    while k < n:
        for d in range(2, k):
            if k % d == 0:
                break
        else:
            count += 1  # no divisor: the inner loop ended without a break
        k += 1
    else:
        count += 1000
    for v in t:  # (unrolled over a tuple)
        if v < 0:
            break
        count += v
    else:
        count *= 2
    while m > 0:
        if m % 7 == 0:
            return -count  # a return skips the else
        m -= 1
    else:
        print("else", count)
    return count


case(loops_with_else, lambda: (30, (1, 2, 3), 5))
case(loops_with_else, lambda: (2, (1, -2, 3), 0))
case(loops_with_else, lambda: (12, (5, 5, 5), 9))


@scriptc.script
def binary_search(x: np.ndarray, v: float) -> int:
    lo, hi = 0, x.shape[0] - 1
    while lo <= hi:  # no break: its else always runs, so every path returns
        mid = (lo + hi) // 2
        if x[mid] == v:
            return mid
        if x[mid] < v:
            lo = mid + 1
        else:
            hi = mid - 1
    else:
        return -(lo + 1)


@scriptc.script
def first_multiple(n: int, d: int) -> int:
    for i in range(1, n):
        if i % d == 0:
            return i
    else:
        return -1


for _v in (0.0, 1.0, 4.0, 7.0, 9.0):
    case(binary_search, lambda v=_v: (np.array([1.0, 3.0, 5.0, 7.0]), v))
case(first_multiple, lambda: (10, 4))
case(first_multiple, lambda: (3, 5))


@scriptc.script
def over_method_results(x: np.ndarray) -> float:
    s = 0.0
    for v in x.copy():  # a method's result as the iterable (was "array attribute 'copy'")
        s += v
    for k, row in enumerate(x.reshape(2, -1)):
        s += row[0] * k
    for v in x.flatten():
        s += v * v
    return s


case(over_method_results, lambda: (np.arange(6.0),))


@scriptc.script
def merge_sort(a: np.ndarray) -> np.ndarray:
    # annotated with the bare np.ndarray: the recursive calls' results are typed as the array argument
    n = a.shape[0]
    if n <= 1:
        return a.copy()
    m = n // 2
    left, right = merge_sort(a[:m]), merge_sort(a[m:])
    out = np.empty(n)
    i = j = 0
    for k in range(n):
        if j >= right.shape[0] or i < left.shape[0] and left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


case(merge_sort, lambda: (np.random.default_rng(3).random(37),))
case(merge_sort, lambda: (np.array([2.0, -0.0, 0.0, 1.0]),))
