"""A scriptc kernel applied to a chunked array with ``dask.array.map_blocks``.

The kernel is compiled with ``nogil=True`` (threads run it at once) and ``cache=True`` (worker processes load
its machine code from ``__pycache__`` instead of compiling it again). Run:

    python samples/dask_blocks.py            # 4000 x 4000, 16 blocks; prints the speedups

It runs the kernel on Dask's threaded scheduler with one thread and with every core, then on a
``distributed.LocalCluster`` of worker processes, and checks each result against NumPy.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # workers import the kernel by name
from dask_kernels import logistic_orbit, logistic_orbit_numpy  # noqa: E402

R, STEPS = 3.7, 200


def blocks(n: int, chunk: int):
    import dask.array as da

    x = da.random.default_rng(0).uniform(0.1, 0.9, size=(n, n), chunks=(chunk, chunk))
    return x, x.map_blocks(logistic_orbit, R, STEPS, dtype=np.float64)


def threaded(n: int, chunk: int, workers: int) -> tuple[np.ndarray, np.ndarray, float]:
    x, y = blocks(n, chunk)
    start = time.perf_counter()
    result = y.compute(scheduler="threads", num_workers=workers)
    return x.compute(), result, time.perf_counter() - start


def on_cluster(n: int, chunk: int, workers: int) -> tuple[np.ndarray, np.ndarray, float]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        x, y = blocks(n, chunk)
        start = time.perf_counter()
        result = client.compute(y).result()
        return x.compute(), result, time.perf_counter() - start


def main(n: int = 4000, chunk: int = 1000) -> None:
    cores = os.cpu_count() or 1
    logistic_orbit(np.full((2, 2), 0.5), R, STEPS)  # compile (or load from the cache) once
    x, one, t1 = threaded(n, chunk, 1)
    assert np.array_equal(one, logistic_orbit_numpy(x, R, STEPS))
    _, many, tn = threaded(n, chunk, cores)
    assert np.array_equal(many, one)
    print(f"threads: 1 thread {t1 * 1e3:.0f} ms, {cores} threads {tn * 1e3:.0f} ms: {t1 / tn:.2f}x")
    _, clustered, tc = on_cluster(n, chunk, cores)
    assert np.array_equal(clustered, one)
    print(f"LocalCluster, {cores} worker processes: {tc * 1e3:.0f} ms: {t1 / tc:.2f}x over one thread")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
