"""Error cases: CPython raises, the compiled function must raise the same
exception type."""

import math

import numpy as np
import scriptc

from . import raises


@scriptc.script
def err_floordiv_zero(n: int) -> int:
    return 1 // n


raises(err_floordiv_zero, ZeroDivisionError, lambda: (0,))


@scriptc.script
def err_mod_zero(n: int) -> int:
    s = 0
    for i in range(3):
        s += i
    return s % n


raises(err_mod_zero, ZeroDivisionError, lambda: (0,))


@scriptc.script
def err_float_div_zero(x: float) -> float:
    return 1.0 / x


raises(err_float_div_zero, ZeroDivisionError, lambda: (0.0,))


@scriptc.script
def err_true_div_zero_in_loop(n: int, d: int) -> float:
    s = 0.0
    for i in range(n):
        print(i)
        if i == 3:
            s += i / d
    return s


raises(err_true_div_zero_in_loop, ZeroDivisionError, lambda: (5, 0))


@scriptc.script
def err_index_read_oob(x: np.ndarray, i: int) -> float:
    return x[i]


raises(err_index_read_oob, IndexError, lambda: (np.arange(5.0), 5))


@scriptc.script
def err_negative_index_oob(x: np.ndarray, i: int) -> float:
    return x[i] + 1.0


raises(err_negative_index_oob, IndexError, lambda: (np.arange(5.0), -6))


@scriptc.script
def err_index_write_oob(x: np.ndarray, i: int):
    x[i] = 1.0


raises(err_index_write_oob, IndexError, lambda: (np.zeros(4), 10))


@scriptc.script
def err_index_2d_oob(a: np.ndarray) -> float:
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1] + 1):
            s += a[i, j]
    return s


raises(err_index_2d_oob, IndexError, lambda: (np.zeros((2, 3)),))


@scriptc.script
def err_sqrt_negative(x: float) -> float:
    return math.sqrt(x)


raises(err_sqrt_negative, ValueError, lambda: (-1.0,))


@scriptc.script
def err_log_zero(x: float) -> float:
    return math.log(x)


raises(err_log_zero, ValueError, lambda: (0.0,))


@scriptc.script
def err_range_zero_step(step: int) -> int:
    s = 0
    for i in range(0, 5, step):
        s += i
    return s


raises(err_range_zero_step, ValueError, lambda: (0,))


@scriptc.script
def err_int_of_inf(x: float) -> int:
    return int(x * 10.0)


raises(err_int_of_inf, OverflowError, lambda: (1e308,))


@scriptc.script
def err_int_of_nan(x: float) -> int:
    y = x * 10.0
    return int(y - y)


raises(err_int_of_nan, ValueError, lambda: (1e308,))
