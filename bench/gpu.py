"""The GPU benchmark (run by hand where there is an NVIDIA GPU): the fused element-wise chain on 10^8 float32
elements, as effective bandwidth (bytes read + written per second) and as a fraction of the device's measured
copy bandwidth (a device-to-device copy of the same size), next to CuPy and torch.cuda when they are installed.

    python -m bench.gpu [--n 100000000] [--sweep]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import scriptc
import scriptc.cuda as cuda


@scriptc.script
def chain(x: np.ndarray) -> np.ndarray:
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.5 * x


@scriptc.script
def axpb(x: np.ndarray) -> np.ndarray:
    return x * 2.0 + 1.0


@scriptc.script
def sum_of_squares(x: np.ndarray) -> float:
    return np.sum(x * x + 1.0)


@scriptc.script
def pairwise(x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    out = np.empty((n, n))
    for i in scriptc.prange(n):
        for j in range(n):
            d = 0.0
            for k in range(x.shape[1]):
                t = x[i, k] - x[j, k]
                d += t * t
            out[i, j] = np.sqrt(d)
    return out


@scriptc.script
def pairwise_grid(x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    out = np.empty((n, n))
    for i in scriptc.prange(n):
        for j in scriptc.prange(n):
            d = 0.0
            for k in range(x.shape[1]):
                t = x[i, k] - x[j, k]
                d += t * t
            out[i, j] = np.sqrt(d)
    return out


def chain_any(xp, x):
    return xp.exp(-x * x) * xp.sin(3.0 * x) + 0.5 * x


def cupy_chain(v):
    import cupy

    return cupy.exp(-v * v) * cupy.sin(3.0 * v) + 0.5 * v


def seconds(fn, sync, number=10, repeat=5) -> float:
    """Best time per call: ``number`` back-to-back calls between synchronizations, best of ``repeat``."""
    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def copy_bandwidth(nbytes: int) -> float:
    from cuda.bindings import driver as cu

    src, dst = cuda.device_array(nbytes, np.uint8), cuda.device_array(nbytes, np.uint8)
    t = seconds(lambda: cu.cuMemcpyDtoDAsync(dst.pointer, src.pointer, nbytes, 0), cuda.synchronize)
    return 2 * nbytes / t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000_000)
    parser.add_argument("--sweep", action="store_true", help="also try block sizes and grid limits")
    args = parser.parse_args()
    n = args.n
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    dx = cuda.to_device(x)
    moved = 2 * x.nbytes  # one read, one write
    copy = copy_bandwidth(x.nbytes)
    print(f"device: {cuda.current_device().arch}, {cuda.current_device().multiprocessors} SMs; n = {n:,} float32")
    print(f"device-to-device copy: {copy / 1e9:.0f} GB/s (read + write)")
    rows = []

    def row(name, fn, sync=cuda.synchronize, nbytes=moved):
        t = seconds(fn, sync)
        rows.append((name, t, nbytes / t))
        print(f"{name:44s} {t * 1e3:8.3f} ms  {nbytes / t / 1e9:7.0f} GB/s  {nbytes / t / copy:6.1%} of copy")

    for name, fn in (("scriptc chain exp(-x*x)*sin(3x)+0.5x", chain), ("scriptc x*2+1", axpb)):
        row(name, lambda fn=fn: fn(dx))
    row("scriptc sum(x*x+1) (reads only)", lambda: sum_of_squares(dx), nbytes=x.nbytes)
    print(f"  its result {sum_of_squares(dx)!r}, NumPy's (float32, pairwise) {float(np.sum(x * x + 1.0))!r}")
    points = np.random.default_rng(1).standard_normal((4000, 3))
    dpoints = cuda.to_device(points)
    t_gpu = seconds(lambda: pairwise(dpoints), cuda.synchronize, number=3)
    t_cpu = seconds(lambda: pairwise(points), lambda: None, number=1, repeat=3)
    t_grid = seconds(lambda: pairwise_grid(dpoints), cuda.synchronize, number=3)
    same = np.allclose(pairwise(dpoints).copy_to_host(), pairwise(points), rtol=1e-13) and np.allclose(
        pairwise_grid(dpoints).copy_to_host(), pairwise(points), rtol=1e-13
    )
    print(
        f"prange pairwise 4000x3: GPU rows {t_gpu * 1e3:.2f} ms, GPU 2-D nest {t_grid * 1e3:.2f} ms, CPU prange "
        f"({scriptc.get_num_threads()} threads) {t_cpu * 1e3:.1f} ms: {t_cpu / t_grid:.0f}x; results agree: {same}"
    )
    if args.sweep:
        for threads in (128, 256, 512, 1024):
            for max_blocks in (0, -(-n // threads)):
                cuda.set_block_size(threads, max_blocks)
                row(f"  chain, {threads} threads, max {max_blocks or 'default'} blocks", lambda: chain(dx))
        cuda.set_block_size(256)
    expected = chain_any(np, x)
    got = chain(dx).copy_to_host()
    print(f"scriptc chain: max abs difference from NumPy {np.abs(got - expected).max():.2e}")
    try:
        import cupy

        cx = cupy.asarray(x)
        sync = cupy.cuda.Device().synchronize
        row("cupy chain (one kernel per operation)", lambda: chain_any(cupy, cx), sync)
        fused = cupy.fuse(cupy_chain)
        row("cupy.fuse chain", lambda: fused(cx), sync)
        row("cupy x*2+1", lambda: cx * 2.0 + 1.0, sync)
        row("cupy sum(x*x+1)", lambda: float(cupy.sum(cx * cx + 1.0)), sync, nbytes=x.nbytes)
    except ImportError:
        print("cupy: not installed")
    try:
        import torch

        tx = torch.from_numpy(x).cuda()
        sync = torch.cuda.synchronize
        row("torch.cuda chain (eager)", lambda: chain_any(torch, tx), sync)
        row("torch.cuda sum(x*x+1) (eager)", lambda: float(torch.sum(tx * tx + 1.0)), sync, nbytes=x.nbytes)
        compiled = torch.compile(lambda v: torch.exp(-v * v) * torch.sin(3.0 * v) + 0.5 * v)
        row("torch.compile chain", lambda: compiled(tx), sync)
    except ImportError:
        print("torch: not installed")
    except Exception as e:  # noqa: BLE001 -- torch.compile needs a working triton: report, go on
        print(f"torch.compile: {type(e).__name__}: {str(e).splitlines()[0]}")


if __name__ == "__main__":
    main()
