"""A raising-call loop's memory: resident-memory growth and time per call when a kernel that allocates raises
and the caller catches the error, under scriptc, NumPy/Python and numba (skipped when it is not installed).

The kernel is the one issue 7 measured: ``y = x * 2.0``, ``z = y + 1.0``, then ``z[i]`` out of bounds, on a
100,000-element array (scriptc fuses the two operators: one 800 kB allocation per call; an unfused variant
keeps both). Before native code released what it held at a raise, 2,000 calls grew the process by 1.5 GB.

    python -m bench.raise_memory [--calls N] [--size N]

This is a separate script because the kernel table (``bench/kernels.py``) times calls; it cannot express
memory, nor a Python ``try``/``except`` around the kernel.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np


def raising_kernel(x: np.ndarray, i: int) -> float:
    y = x * 2.0
    z = y + 1.0
    return z[i]


def raising_kernel_unfused(x: np.ndarray, i: int) -> float:
    y = x * 2.0
    z = np.exp(y) - y
    return z[i] + y[0]


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def measure(f, x, i, calls: int) -> tuple[float, float]:
    """(resident growth in MiB, microseconds per call) over ``calls`` raising calls, after a warm-up."""
    for _ in range(min(100, calls)):
        try:
            f(x, i)
        except IndexError:
            pass
    getattr(f, "wait_optimized", lambda: None)()  # scriptc: time its optimized tier
    gc.collect()
    before, start = resident_bytes(), time.perf_counter()
    for _ in range(calls):
        try:
            f(x, i)
        except IndexError:
            pass
    elapsed = time.perf_counter() - start
    gc.collect()
    return (resident_bytes() - before) / 2**20, elapsed / calls * 1e6


def implementations() -> list[tuple[str, object]]:
    import scriptc

    impls = [
        ("scriptc", scriptc.script(raising_kernel)),
        ("scriptc (unfused)", scriptc.script(raising_kernel_unfused)),
        ("numpy", raising_kernel),
    ]
    try:
        import numba
    except ImportError:
        print("numba: not installed, skipped")
    else:  # numba checks bounds only when asked
        impls.append(
            (f"numba {numba.__version__} @njit(boundscheck=True)", numba.njit(boundscheck=True)(raising_kernel))
        )
    return impls


def table(calls: int = 20_000, size: int = 100_000) -> str:
    """The Markdown table of every implementation's resident growth and time per call."""
    x = np.random.default_rng(7).random(size)
    lines = [
        f"{calls:,} calls raising IndexError, each allocating {size:,}-element float64 arrays first",
        "",
        "| implementation | resident growth (MiB) | µs per call |",
        "|---|---:|---:|",
    ]
    for name, f in implementations():
        grown, per_call = measure(f, x, size, calls)
        lines.append(f"| {name} | {grown:.1f} | {per_call:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=100_000)
    args = parser.parse_args(argv)
    print(table(args.calls, args.size), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
