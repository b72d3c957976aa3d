"""Arrays rebound in loops: to themselves or another name, then written in place (the write must reach the
caller's array as in CPython: the loop's result is the same object it started with); to a scalar times
themselves, the scalar on the left; and the statements after a loop of zero trips."""

import numpy as np

import scriptc

from . import case, rng


@scriptc.script
def rebound_then_added(x: np.ndarray) -> np.ndarray:
    for i in range(3):
        x = x
    x += 1.0
    return x


case(rebound_then_added, lambda: (rng().random(4),))


@scriptc.script
def alias_rebound_then_element_set(x: np.ndarray) -> np.ndarray:
    y = x
    for i in range(3):
        y = y
    y[0] = 7.0
    return y


case(alias_rebound_then_element_set, lambda: (rng().random(4),))


@scriptc.script
def full_slice_rebound_then_slice_set(x: np.ndarray) -> np.ndarray:
    for i in range(3):
        x = x[:]
    x[1:] = 7.0
    return x


case(full_slice_rebound_then_slice_set, lambda: (rng().random(4),))


@scriptc.script
def rebound_then_floordiv_in_place(x: np.ndarray, n: int) -> np.ndarray:
    for i in range(n):
        x = x
    x //= x
    return x


case(rebound_then_floordiv_in_place, lambda: (np.arange(1, 6), 3))
case(rebound_then_floordiv_in_place, lambda: (np.arange(1, 6), 0))


@scriptc.script
def swapped_then_added(x: np.ndarray, y: np.ndarray, n: int) -> np.ndarray:
    for i in range(n):
        x, y = y, x
    x += 1.0
    return y


case(swapped_then_added, lambda: (np.zeros(3), np.ones(3), 3))
case(swapped_then_added, lambda: (np.zeros(3), np.ones(3), 2))


@scriptc.script
def rebound_beside_an_update(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    for i in range(4):
        z = z * 0.5 + 1.0
        x = x
    x -= z
    return z


case(rebound_beside_an_update, lambda: (rng().random((2, 3)), rng().random((2, 3))))


@scriptc.script
def scalar_on_the_left_in_a_loop(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    a4 = x1
    for i in range(len(x0)):
        a4 = x1 * 2.0
        x0 = 3 * x0
    return x0 + a4


case(scalar_on_the_left_in_a_loop, lambda: (rng().random(3), rng().random(3)))


@scriptc.script
def bool_on_the_left_in_a_loop(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    a4 = x1
    for i in range(len(x0)):
        a4 = x1 * 2.0
        x0 = False * x0
    return x0 + a4


case(bool_on_the_left_in_a_loop, lambda: (rng().random(3), rng().random(3)))


@scriptc.script
def list_after_a_zero_trip_time_loop(x: np.ndarray, n: int):
    for _ in range(0):
        x = x + 2.0
    for _ in range(n):
        x = x * 0.5
    lst = [x[0], 1.0]
    arrays = [x, x + 1.0]
    return lst[0] + lst[1], arrays[1], len(arrays)


case(list_after_a_zero_trip_time_loop, lambda: (rng().random(3), 0))
case(list_after_a_zero_trip_time_loop, lambda: (rng().random(3), 2))


@scriptc.script
def result_dtype_follows_the_arguments(x: np.ndarray, c: bool):
    y = np.zeros(3, np.float64)
    if c:
        y = x * 2.0
    if c:
        return y
    return np.zeros(3, np.float64)


case(result_dtype_follows_the_arguments, lambda: (rng().random(3), True))
case(result_dtype_follows_the_arguments, lambda: (rng().random(3), False))
