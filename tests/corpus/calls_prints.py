"""Calls between @scriptc.script functions (helpers are module-level and
decorated) and print() formatting: ints, floats, specials, bools, arrays,
sep/end, f-strings with format specs."""

import math

import numpy as np
import scriptc

from . import case, rng

OFFSET = 3
GAIN = 0.5
FLAG = False


# ---------------------------------------------------------------- helpers


@scriptc.script
def h_square(x: float) -> float:
    return x * x


@scriptc.script
def h_gcd(a: int, b: int) -> int:
    while b != 0:
        a, b = b, a % b
    return a


@scriptc.script
def h_lcm(a: int, b: int) -> int:
    return a // h_gcd(a, b) * b


@scriptc.script
def h_dot(x: np.ndarray, y: np.ndarray) -> float:
    s = 0.0
    for i in range(len(x)):
        s += x[i] * y[i]
    return s


@scriptc.script
def h_fill(x: np.ndarray, v: float):
    for i in range(x.shape[0]):
        x[i] = v + i


@scriptc.script
def h_clamp(v: float, lo: float, hi: float) -> float:
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@scriptc.script
def h_minmax(x: np.ndarray):
    lo = x[0]
    hi = x[0]
    for v in x:
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


@scriptc.script
def h_report(i: int, v: float):
    print(f"[{i}] v={v:.4f}")


@scriptc.script
def h_is_prime(n: int) -> bool:
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


@scriptc.script
def h_step(u: np.ndarray, dt: float) -> np.ndarray:
    return u + dt * (1.0 - u) * GAIN


@scriptc.script
def h1(x: int) -> int:
    return x * 2 + OFFSET


@scriptc.script
def h2(x: int) -> int:
    return h1(x) - h1(x - 1)


@scriptc.script
def h3(x: int) -> int:
    return h2(h1(x)) * h1(h2(x))


# ---------------------------------------------------------------- callers


@scriptc.script
def call_square_sum(x: float, n: int) -> float:
    s = 0.0
    for i in range(n):
        s += h_square(x + i)
    return s


case(call_square_sum, lambda: (1.5, 4))


@scriptc.script
def call_lcm(a: int, b: int):
    print(h_gcd(a, b), h_lcm(a, b))
    return h_lcm(a, b) + h_gcd(b, a)


case(call_lcm, lambda: (12, 18))
case(call_lcm, lambda: (7, 13))


@scriptc.script
def call_norm(x: np.ndarray) -> float:
    return math.sqrt(h_dot(x, x))


case(call_norm, lambda: (rng(0).random(6),))


@scriptc.script
def call_fill_mutates(x: np.ndarray, v: float) -> float:
    h_fill(x, v)
    h_fill(x[1:3], -v)  # through a view
    return x[4] - x[0]


case(call_fill_mutates, lambda: (np.zeros(5), 2.5))


@scriptc.script
def call_clamp_array(x: np.ndarray) -> np.ndarray:
    y = np.empty(len(x))
    for i in range(len(x)):
        y[i] = h_clamp(x[i], -0.5, 0.5)
    return y


case(call_clamp_array, lambda: (rng(0).standard_normal(8),))


@scriptc.script
def call_minmax(x: np.ndarray) -> float:
    lo, hi = h_minmax(x)
    return (hi - lo) / 2.0


case(call_minmax, lambda: (rng(0).random(9),))


@scriptc.script
def call_report_loop(x: np.ndarray):
    for i in range(len(x)):
        h_report(i, x[i])
    print("done")


case(call_report_loop, lambda: (rng(0).random(4),))


@scriptc.script
def call_count_primes(n: int) -> int:
    c = 0
    for k in range(n):
        if h_is_prime(k):
            c += 1
    return c


case(call_count_primes, lambda: (60,))


@scriptc.script
def call_step_loop(u: np.ndarray, dt: float, n: int) -> np.ndarray:
    for _ in range(n):
        u = h_step(u, dt)
    return u


case(call_step_loop, lambda: (np.zeros(4), 0.1, 5))


@scriptc.script
def call_chain(x: int) -> int:
    return h3(x) + h2(x) + h1(x)


case(call_chain, lambda: (4,))


# ---------------------------------------------------------------- prints


@scriptc.script
def print_ints(a: int, b: int):
    print(a, b, 0, -0, a * b, 10**18, -9223372036854775807, 2**62)
    print(a // b, a % b)
    print()


case(print_ints, lambda: (7, -12))


@scriptc.script
def print_floats(a: float, b: float):
    print(a + b, a * 3.0, 1.0 - 0.9)
    print(1e16, 1e15, 123456789012345678.0, 1e22, 1e-5, 1.5e-7, 0.0001)
    print(100.0, 2.0**60, 1.0 / 3.0, 2.0 / 3.0, -0.0, 0.0 * -1.0)
    print(5e-324, 1.7976931348623157e308, 2.2250738585072014e-308)
    print(a * 1e308 * 1e10, -a * 1e308 * 1e10, a * 1e308 * 1e10 * 0.0)
    print(float(7), 3.0, -2.5, 1e100, 12345.678)


case(print_floats, lambda: (0.1, 0.2))


@scriptc.script
def print_bools(n: int, x: float):
    print(True, False, n > 2, x < 0.0, not n, n == 3 and x > 2.0)
    print(n > 2, bool(n), bool(0.0))


case(print_bools, lambda: (3, 2.5))


@scriptc.script
def print_arrays(a: np.ndarray, k: np.ndarray, r: np.ndarray):
    print(a)
    print(k)
    print(r)
    print(a > 2.0)
    print(a.T)
    print(k * 1000000)
    print(r.astype(np.float32))
    print(k.astype(np.int32), np.zeros(3, dtype=np.int64))
    print(np.zeros(0))
    print(np.arange(2000))
    print(np.ones((2, 2, 2)))


case(print_arrays, lambda: (np.arange(6.0).reshape((2, 3)), np.arange(5), rng(0).random(4)))


@scriptc.script
def print_array_specials(x: np.ndarray, big: float):
    print(x)
    print(np.minimum(x, 1e300), x * 0.5, -x)
    print(x[0], x[1], x[5], x[6], x[7], x[1] * big, x[5] + x[4])
    y = np.zeros(3)
    inf = big * 10.0
    y[0] = inf
    y[1] = -inf
    y[2] = inf - inf
    print(y, y[2], y[2] == y[2])


case(print_array_specials, lambda: (np.array([1.0, -0.0, 0.0, 1e-20, 1e20, np.inf, -np.inf, np.nan]), 1e308))


@scriptc.script
def print_mixed_strings(n: int, x: float, a: np.ndarray):
    print("n =", n, "x =", x)
    print("array:", a, "sum:", a.sum())
    print("shape", a.shape, "ndim", a.ndim)
    print("x[1] is", a[1], "and n*x is", n * x)


case(print_mixed_strings, lambda: (3, 2.5, np.arange(3.0)))


@scriptc.script
def print_sep_end(n: int, x: float, b: bool):
    print(n, x, b, sep=", ")
    print(n, x, sep="")
    print("a", "b", "c", sep=" | ", end=" <end>\n")
    print(n, end="")
    print(x, end=" ")
    print(b)
    for i in range(4):
        print(i, end=" ")
    print()
    print("x", "y", sep="\n")
    print(sep="-", end="!\n")
    print("multi\nline\ttab")


case(print_sep_end, lambda: (1, 2.5, True))


@scriptc.script
def print_end_expr(n: int):
    # end= given by an expression rather than a literal
    for i in range(n):
        print(i, end=" " if i < n - 1 else "\n")
    print("a", "b", sep="+" if n > 2 else "-")


case(print_end_expr, lambda: (4,))


@scriptc.script
def print_fstrings(n: int, x: float, b: bool, a: np.ndarray):
    print(f"n={n} x={x} b={b}")
    print(f"{x:.3f} {x:8.2f}| {x:e} {x:.2e} {x:g} {x:+.1f}")
    print(f"{n:5d}|{n:<5d}|{n:^7d}|{n:05d}|{n:+d}|{n:x}")
    print(f"{x:>10}|{x:<10.4}|{-x:.0f}|{2.5:.0f}|{0.125:.2f}")
    print(f"{a}", f"{a.sum()}", f"{n * x:.1%}")
    print(f"{n}{n}", f"{{literal}}", f"{b and n > 3}")  # noqa: F541
    print(f"{1e16}", f"{-0.0}", f"{0.1 + 0.2}", f"{x * 1e308 * 10.0}")


case(print_fstrings, lambda: (42, 3.14159265358979, True, np.arange(3)))


@scriptc.script
def print_array_elements(x: np.ndarray, k: int):
    for i in range(len(x)):
        print(x[i], x[i] * k, f"{x[i]:.5f}")
    print(np.sum(x) > 1.0, x[0] < x[1])
    m = np.arange(4)
    print(m[k], m[k] * 3, m[-1] // 2)


case(print_array_elements, lambda: (rng(0).random(3), 2))


@scriptc.script
def print_math(x: float):
    print(math.sqrt(x), math.exp(1.0), math.log(10.0), math.pi)
    print(math.floor(-x * 1.5), math.ceil(x * 1.5), math.fabs(-x))
    print(f"{math.pi:.10f} {math.e:.3e}")


case(print_math, lambda: (2.0,))


@scriptc.script
def print_in_nested_loops(n: int) -> int:
    total = 0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            print(i * j, end=" ")
            total += i * j
        print()
        if total > 10:
            print("early exit", total)
            return total
    return -1


case(print_in_nested_loops, lambda: (5,))


@scriptc.script
def print_globals(f: bool):
    print(OFFSET, GAIN, FLAG, f == FLAG)
    if not FLAG and OFFSET > 2:
        print("ok", OFFSET * GAIN)


case(print_globals, lambda: (FLAG,))


@scriptc.script
def str_format_calls(n: int, x: float, b: bool):
    s = "{} and {:.3f} {!r} {{braces}} {:>6}".format(n, x, b, n * 2)
    t = "{1}-{0}-{1:+}".format(n, x)
    u = f"{n:>{6}}|{x:{'>'}10.2e}"  # constant fields in a spec
    print(s, t, u)
    return n


case(str_format_calls, lambda: (42, 3.14159, True))
case(str_format_calls, lambda: (-7, -0.0, False))


@scriptc.script
def dtype_in_messages(x: np.ndarray) -> int:
    print(f"dtype {x.dtype} {x.dtype.name!r} [{x.dtype.name:>9}]")  # constant per signature
    if x.shape[0] > 5:
        raise ValueError(f"bad dtype {x.dtype} for {x.shape[0]}")
    return x.shape[0]


case(dtype_in_messages, lambda: (np.ones(3, np.float32),))


@scriptc.script
def text_and_pow_builtins(n: int, x: float, b: bool, a: np.ndarray) -> float:
    print(str(n), repr(x), str(b), format(x, ".3f"), format(n, ">5"), str(), str(a))
    print(pow(n, 2), pow(x, 0.5), pow(2, 10), pow(b, 3))
    return pow(x, n)


case(text_and_pow_builtins, lambda: (3, 2.5, True, np.arange(3.0)))
case(text_and_pow_builtins, lambda: (-2, 1e20, False, np.ones(2)))
