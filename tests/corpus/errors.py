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


@scriptc.script
def err_zero_pow_negative(x: float) -> float:
    return x**-1.0


raises(err_zero_pow_negative, ZeroDivisionError, lambda: (0.0,))


@scriptc.script
def err_math_pow_domain(x: float) -> float:
    return math.pow(x, -1.0)


raises(err_math_pow_domain, ValueError, lambda: (0.0,))


@scriptc.script
def err_exp_overflow(x: float) -> float:
    return math.exp(x)


raises(err_exp_overflow, OverflowError, lambda: (1000.0,))


@scriptc.script
def err_float_pow_overflow(x: float) -> float:
    return x**10000.0


raises(err_float_pow_overflow, OverflowError, lambda: (2.0,))


@scriptc.script
def h_divide(a: int, b: int) -> int:
    return a // b


@scriptc.script
def err_in_helper(n: int) -> int:
    s = 0
    for i in range(n, -1, -1):
        s += h_divide(10, i)
    return s


raises(err_in_helper, ZeroDivisionError, lambda: (3,))


@scriptc.script
def err_after_mutation(x: np.ndarray) -> float:
    # the argument is partly updated and some text printed before the error
    for i in range(len(x) + 1):
        x[i] = i * 2.0
        print("set", i)
    return x[0]


raises(err_after_mutation, IndexError, lambda: (np.zeros(3),))


@scriptc.script
def err_max_of_empty(x: np.ndarray) -> float:
    return np.max(x)


raises(err_max_of_empty, ValueError, lambda: (np.zeros(0),))


@scriptc.script
def err_broadcast_mismatch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


raises(err_broadcast_mismatch, ValueError, lambda: (np.zeros(3), np.zeros(4)))


@scriptc.script
def err_matmul_mismatch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b


raises(err_matmul_mismatch, ValueError, lambda: (np.zeros((2, 3)), np.zeros((2, 3))))


@scriptc.script
def err_reshape_size(x: np.ndarray, n: int) -> np.ndarray:
    return x.reshape((n, 4))


raises(err_reshape_size, ValueError, lambda: (np.zeros(10), 3))


@scriptc.script
def err_slice_assign_length(x: np.ndarray, y: np.ndarray):
    x[1:4] = y


raises(err_slice_assign_length, ValueError, lambda: (np.zeros(6), np.ones(2)))


@scriptc.script
def err_negative_dimension(n: int) -> np.ndarray:
    return np.zeros(n - 5)


raises(err_negative_dimension, ValueError, lambda: (2,))


@scriptc.script
def err_too_big_to_fill(n: int, m: int) -> np.ndarray:
    return np.ones((n, m))  # (its size in bytes wrapped around 64 bits: a tiny buffer, filled)


raises(err_too_big_to_fill, ValueError, lambda: (2**32, 2**32))
raises(err_too_big_to_fill, ValueError, lambda: (3037000500, 3037000500))


@scriptc.script
def err_too_big_with_a_zero_dimension(n: int, k: int):
    x = np.full((n, 0, n), k, dtype=np.int16)  # NumPy checks the dimensions other than 0 (and so refuses it)
    y = np.empty((n, n), dtype=np.int8)
    y[n - 1, n - 1] = 1
    return x.shape, y.shape


raises(err_too_big_with_a_zero_dimension, ValueError, lambda: (2**40, 7))


@scriptc.script
def err_list_too_long(n: int) -> int:
    ys = [1, 2, 3] * (n // 4)  # 2**61: the length times 3 wraps; 2**62 + 8: its size in bytes would
    xs = [0.0] * n
    return len(xs) + len(ys)


raises(err_list_too_long, MemoryError, lambda: (2**61,))
raises(err_list_too_long, MemoryError, lambda: (2**62 + 8,))


@scriptc.script
def err_int_of_nan_unused(x: float) -> int:
    y = int(x)  # noqa: F841  (its result unused: the conversion still raises)
    return 1


raises(err_int_of_nan_unused, ValueError, lambda: (math.nan,))
raises(err_int_of_nan_unused, OverflowError, lambda: (-math.inf,))


@scriptc.script
def err_math_pow_negative_base(x: float) -> float:
    return math.pow(x, 0.5)


raises(err_math_pow_negative_base, ValueError, lambda: (-2.0,))


@scriptc.script
def err_float_floordiv_zero(x: float, y: float) -> float:
    return x // y


raises(err_float_floordiv_zero, ZeroDivisionError, lambda: (1.5, 0.0))


@scriptc.script
def err_float_mod_zero(x: float, y: float) -> float:
    return x % y


raises(err_float_mod_zero, ZeroDivisionError, lambda: (1.5, 0.0))


@scriptc.script
def err_floor_of_inf(x: float) -> int:
    return math.floor(x * 10.0)


raises(err_floor_of_inf, OverflowError, lambda: (1e308,))


@scriptc.script
def err_unbound_loop_var(n: int) -> int:
    for i in range(n):
        pass
    return i


raises(err_unbound_loop_var, UnboundLocalError, lambda: (0,))


@scriptc.script
def err_unbound_branch_var(n: int) -> int:
    if n > 0:
        y = 1
    return y


raises(err_unbound_branch_var, UnboundLocalError, lambda: (0,))


@scriptc.script
def err_unpack_too_many(x: np.ndarray) -> float:
    a, b = x
    return float(a + b)


raises(err_unpack_too_many, ValueError, lambda: (np.arange(3.0),))


@scriptc.script
def err_unpack_too_few(x: np.ndarray) -> float:
    a, b, c = x
    return float(a + b + c)


raises(err_unpack_too_few, ValueError, lambda: (np.arange(2.0),))


@scriptc.script
def err_dtype_in_message(x: np.ndarray) -> int:
    if x.shape[0] > 5:
        raise ValueError(f"bad dtype {x.dtype} for {x.shape[0]}")
    return 0


raises(err_dtype_in_message, ValueError, lambda: (np.ones(7, np.int16),))
