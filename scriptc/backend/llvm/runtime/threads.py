"""The number of threads parallel regions use (``SCRIPTC_NUM_THREADS``, ``scriptc.set_num_threads``), as the
process-wide value native code reads at each region (``scriptc.pool.threads``). No LLVM here: code loaded from
the on-disk cache reads it too."""

from __future__ import annotations

import ctypes
import os

import numpy as np

THREADS_SYMBOL = "scriptc.pool.threads"
# the thread count regions use (SCRIPTC_NUM_THREADS, set_num_threads); native code reads it at each region
THREADS = ctypes.c_int64(0)


def default_threads() -> int:
    text = os.environ.get("SCRIPTC_NUM_THREADS", "").strip()
    if text:
        try:
            n = int(text)
        except ValueError:
            raise ValueError(f"SCRIPTC_NUM_THREADS must be a positive integer, got {text!r}") from None
        if n < 1:
            raise ValueError(f"SCRIPTC_NUM_THREADS must be a positive integer, got {text!r}")
        return n
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# the thread counts of libraries ``scriptc.load`` loaded (their own ``scriptc.pool.threads``), kept equal to THREADS
_LOADED: list[ctypes.c_int64] = []


def set_threads(n: int) -> None:
    THREADS.value = n
    for count in _LOADED:
        count.value = n


def follow(count: ctypes.c_int64) -> None:
    """Make a loaded library's thread count the process's, now and after every ``set_num_threads`` (an invalid
    ``SCRIPTC_NUM_THREADS`` raises here as it does for scripted functions)."""
    count.value = get_threads()
    _LOADED.append(count)


def get_threads() -> int:
    if THREADS.value == 0:
        THREADS.value = default_threads()
    return THREADS.value


def address() -> int:
    """Where native code reads the thread count (set before any code reads it)."""
    get_threads()
    return ctypes.addressof(THREADS)


MAX_COUNT = 2**31 - 1  # (OpenBLAS takes a C int)


def thread_count(n) -> int:
    """``n`` as a number of threads (an int or a NumPy integer, 1 to MAX_COUNT), else TypeError/ValueError."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"the number of threads must be an int, not {type(n).__name__}")
    n = int(n)
    if not 1 <= n <= MAX_COUNT:
        raise ValueError(f"the number of threads must be between 1 and {MAX_COUNT}, got {n}")
    return n


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in parallel loops and large element-wise fusion groups (process-wide)."""
    set_threads(thread_count(n))


def get_num_threads() -> int:
    return get_threads()
