"""Mandelbrot set with scriptc.prange: rows are independent, so they run on every core.

Prints the time on one thread, on all threads, and the speedup. Run: python samples/prange_mandelbrot.py
"""

import time

import numpy as np

import scriptc
from scriptc import prange


@scriptc.script
def mandelbrot(height: int, width: int, max_iter: int) -> np.ndarray:
    out = np.zeros((height, width), dtype=np.int64)
    for y in prange(height):
        ci = -1.5 + 3.0 * y / height
        for x in range(width):
            cr = -2.0 + 3.0 * x / width
            zr = 0.0
            zi = 0.0
            k = 0
            while k < max_iter and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                k += 1
            out[y, x] = k
    return out


def best_time(repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        mandelbrot(600, 800, 200)
        best = min(best, time.perf_counter() - t)
    return best


if __name__ == "__main__":
    threads = scriptc.get_num_threads()
    reference = mandelbrot(600, 800, 200)
    scriptc.wait_optimized()  # the first call ran the quick tier's code: time the optimized code
    scriptc.set_num_threads(1)
    one = best_time()
    assert np.array_equal(mandelbrot(600, 800, 200), reference)
    scriptc.set_num_threads(threads)
    many = best_time()
    print(f"1 thread: {one * 1e3:.1f} ms, {threads} threads: {many * 1e3:.1f} ms, speedup {one / many:.2f}x")
