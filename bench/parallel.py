"""prange on the CPU: one thread vs all threads (scriptc.set_num_threads), min of repeated runs.

Kernels: pairwise distances (n x d points), the mandelbrot set (rows in parallel), the fused element-wise chain
`exp(-x*x) * sin(3x) + 0.5x` on 10M float64 elements (a fusion group on the pool), and an empty parallel region
(a prange of 2 trivial iterations: the cost of publishing a region and waiting for it). Run:
    python bench/parallel.py
Timings on a shared machine are noisy: each figure is the minimum of several runs.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "samples"))

import scriptc  # noqa: E402
from scriptc import prange  # noqa: E402
from prange_mandelbrot import mandelbrot  # noqa: E402


@scriptc.script
def pairwise(x: np.ndarray) -> np.ndarray:
    n, d = x.shape
    out = np.empty((n, n))
    for i in prange(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                t = x[i, k] - x[j, k]
                s += t * t
            out[i, j] = np.sqrt(s)
    return out


@scriptc.script
def chain(x: np.ndarray) -> np.ndarray:
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.5 * x


@scriptc.script
def empty_region(a: np.ndarray) -> None:
    for i in prange(2):
        a[i] = 0.0


def best(fn, *args, repeat=7, number=1) -> float:
    fn(*args)
    scriptc.wait_optimized()  # time the optimized tier (the first call ran the quick one)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn(*args)
        times.append((time.perf_counter() - t) / number)
    return min(times)


def main() -> None:
    threads = scriptc.get_num_threads()
    x = np.random.default_rng(0).standard_normal((1000, 16))
    big = np.random.default_rng(1).standard_normal(10_000_000)
    cases = [
        ("pairwise 1000x16", pairwise, (x,), 1),
        ("mandelbrot 600x800", mandelbrot, (600, 800, 200), 1),
        ("fused chain 10M", chain, (big,), 1),
        ("empty region", empty_region, (np.zeros(2),), 20000),
    ]
    print(f"{'kernel':24} {'1 thread':>12} {f'{threads} threads':>12} {'ratio':>7}")
    for name, fn, args, number in cases:
        scriptc.set_num_threads(1)
        one = best(fn, *args, number=number)
        scriptc.set_num_threads(threads)
        many = best(fn, *args, number=number)
        unit, scale = ("us", 1e6) if number > 1 else ("ms", 1e3)
        print(f"{name:24} {one * scale:9.2f} {unit} {many * scale:9.2f} {unit} {many / one:7.2f}")


if __name__ == "__main__":
    main()
