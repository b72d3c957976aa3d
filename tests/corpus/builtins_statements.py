"""Builtins and statements a numba/TorchScript user writes first: enumerate/zip/reversed, sum/any/all of
arrays, round/divmod, math predicates, isinstance, assert/raise, defaults and keywords, recursion."""

import math

import numpy as np
import scriptc

from . import case, raises, rng


@scriptc.script
def weighted_positions(x: np.ndarray) -> float:
    total = 0.0
    for i, v in enumerate(x, start=1):
        total += i * v
    return total


case(weighted_positions, lambda: (rng(1).random(9),))


@scriptc.script
def dot_by_zip(x: np.ndarray, y: np.ndarray) -> float:
    s = 0.0
    for a, b in zip(x, y):
        s += a * b
    return s


case(dot_by_zip, lambda: (rng(2).random(7), rng(3).random(5)))


@scriptc.script
def horner_reversed(coef: np.ndarray, x: float) -> float:
    acc = 0.0
    for c in reversed(coef):
        acc = acc * x + c
    return acc


case(horner_reversed, lambda: (rng(4).standard_normal(6), 0.7))


@scriptc.script
def countdown(n: int) -> int:
    out = 0
    for k in reversed(range(2, n, 3)):
        out = out * 10 + k % 10
        print(k)
    return out


case(countdown, lambda: (17,))


@scriptc.script
def summary(x: np.ndarray, m: np.ndarray):
    return sum(x), any(m), all(m), round(sum(x), 3), round(sum(x)), divmod(len(x), 4)


case(summary, lambda: (rng(5).standard_normal(11), rng(6).random(11) < 0.3))


@scriptc.script
def clean_mean(x: np.ndarray) -> float:
    total = 0.0
    count = 0
    for v in x:
        if math.isfinite(v) and not math.isclose(v, 0.0, abs_tol=1e-12):
            total += v
            count += 1
    assert count > 0, f"no usable values among {len(x)}"
    return total / count


case(clean_mean, lambda: (np.array([1.0, np.nan, 2.5, np.inf, 0.0, -4.0]),))
raises(clean_mean, AssertionError, lambda: (np.array([np.nan, 0.0]),))


@scriptc.script
def checked_sqrt(x: float, strict: bool = True) -> float:
    if x < 0.0:
        if strict:
            raise ValueError(f"negative input {x}")
        return 0.0
    return math.sqrt(x)


@scriptc.script
def uses_checked_sqrt(x: float) -> float:
    return checked_sqrt(x, strict=False) + checked_sqrt(abs(x))


case(uses_checked_sqrt, lambda: (-2.25,))
raises(checked_sqrt, ValueError, lambda: (-1.0, True))  # the property tests bind args positionally


@scriptc.script
def ackermann_small(m: int, n: int) -> int:
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann_small(m - 1, 1)
    return ackermann_small(m - 1, ackermann_small(m, n - 1))


case(ackermann_small, lambda: (2, 3))


@scriptc.script
def gcd_table(n: int) -> int:
    s = 0
    for i in range(1, n):
        for j in range(1, n):
            s += math.gcd(i, j) * (1 if isinstance(i, int) else 0)
    return s + math.factorial(n % 10)


case(gcd_table, lambda: (12,))


@scriptc.script
def over_a_tuple(a: np.ndarray, b: np.ndarray, k: int) -> float:
    s = 0.0
    for v in (a, b):  # unrolled: the elements may differ in type
        s += v.sum()
    for i, v in enumerate((a.max(), 2.5, k), start=1):
        if i == 2:
            continue
        s += v * i
    return s


case(over_a_tuple, lambda: (rng(4).random(5), np.arange(3.0), 7))


@scriptc.script
def first_over_in_zip(ws: tuple[float, float, float], xs: tuple[int, int, int], limit: float) -> float:
    s = 0.0
    for w, x in zip(ws, xs):
        if w > limit:
            break
        s += w * x
    for w in ws:
        if w < 0.0:
            return w
    return s


case(first_over_in_zip, lambda: ((1.5, 2.0, 3.5), (4, 5, 6), 2.5))
case(first_over_in_zip, lambda: ((1.5, -2.0, 0.5), (4, 5, 6), 9.0))


@scriptc.script
def tuple_by_index(a: np.ndarray, b: np.ndarray, w: tuple[float, float, float], i: int) -> np.ndarray:
    pair = (a, b)
    s = np.zeros_like(a)
    for k in range(len(pair)):
        s += pair[k] * w[k - 1]  # an index known at run time; negative from the end
    return s * w[i]


case(tuple_by_index, lambda: (rng(5).random(4), np.arange(4.0), (0.5, -1.5, 2.0), -2))
raises(tuple_by_index, IndexError, lambda: (np.ones(2), np.ones(2), (1.0, 2.0, 3.0), 3))


@scriptc.script
def first_truthy_of_mixed(a: float, c: bool, x: np.ndarray, y: np.ndarray) -> float:
    n = 0
    for v in (a, c):  # v is a float, then a bool: never read after the loop, so no error
        if v:
            break
        n += 1
    s = 0.0
    for arr in (x, y):  # arrays of two dtypes
        s += arr.sum()
        if s > 1.0:
            return s + n
    return -s


case(first_truthy_of_mixed, lambda: (0.0, True, np.ones(2), np.arange(3)))
case(first_truthy_of_mixed, lambda: (1.5, False, np.zeros(2), np.zeros(3, np.int64)))


@scriptc.script
def first_above_two(a: int, b: float) -> float:
    for v in (a, b):  # v widens to float: an int not bound on every path, converted but unread
        if v > 2.0:
            return v
    return -1.0


case(first_above_two, lambda: (0, 0.5))


@scriptc.script
def bound_on_some_paths(n: int) -> float:
    if n > 10:
        x = 0.5
    elif n > 0:
        x = n
    return x


case(bound_on_some_paths, lambda: (12,))
raises(bound_on_some_paths, UnboundLocalError, lambda: (0,))


@scriptc.script
def sum_of_mixed_tuple(a: np.ndarray, b: np.ndarray, k: int) -> float:
    s = 0.0
    for v in (a, b, k):  # isinstance is known for each element: only the branch taken is compiled
        s = s + v if isinstance(v, int) else s + np.sum(v * 1)
        if not isinstance(v, int):
            s += v.max()
    return s


case(sum_of_mixed_tuple, lambda: (rng(6).random(4), np.arange(3, dtype=np.int32), 5))


@scriptc.script
def tuples_grown_in_place(x: int, y: float):
    t = (1, 2)
    t += (x,)  # a new tuple bound to t, as CPython makes it
    u = (y, -y)
    u *= 2
    return t, u


case(tuples_grown_in_place, lambda: (3, 1.5))


@scriptc.script
def empty_constructors(n: int):
    i, x, b = int(), float(), bool()
    for k in range(n):
        i += k
        x += 0.5
        b = not b
    return i, x, b


case(empty_constructors, lambda: (3,))


@scriptc.script
def membership_in_tuples(x: int, y: float, t: tuple[int, float]):
    return x in (1, 2, 3), y not in (0.5, 2), x in t, y in (), True in (1, 2), 2.0 in (1, 2)


case(membership_in_tuples, lambda: (2, 0.5, (2, 3.5)))
case(membership_in_tuples, lambda: (5, 3.0, (1, 5.0)))
case(membership_in_tuples, lambda: (0, float("nan"), (0, 0.0)))


@scriptc.script
def truth_of_tuples_and_lists(x: int, xs: list[int]):
    t = (x,)
    r = 0
    if t:  # a tuple is true when not empty (known when compiling)
        r += 1
    if ():
        r += 10
    if xs:  # a list when not empty
        r += 100
    while xs:
        xs.pop()
        r += 1000
    return r, not xs


case(truth_of_tuples_and_lists, lambda: (1, [1, 2]))
case(truth_of_tuples_and_lists, lambda: (0, []))
