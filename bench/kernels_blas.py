"""Matrix products: ``a @ b`` on square float64 matrices, 256x256 and 512x512.

scriptc calls OpenBLAS (the scipy-openblas64 build); NumPy calls its own bundled OpenBLAS, numba scipy's,
torch its own (oneDNN/MKL or OpenBLAS), jax XLA's Eigen. Every BLAS runs on one thread, as the other rows do: the
arguments' setup pins the threads of every BLAS loaded in the process to 1 (threadpoolctl when installed, else
NumPy's OpenBLAS directly) and scriptc's with ``scriptc.set_num_threads(1)``; the runner pins torch and XLA.
"""

import glob
import os

import numpy as np

from .kernels import Kernel, allclose


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b


def _pin_blas_threads() -> None:
    """One BLAS thread for every peer: a matmul table of single-threaded code, like the rest of the table."""
    try:
        import scriptc

        scriptc.set_num_threads(1)
    except Exception:  # noqa: BLE001 - scriptc missing or without OpenBLAS: its row says so
        pass
    try:
        import scipy.linalg  # noqa: F401  (loads the BLAS numba's matmul calls, so that the limit reaches it)
    except ImportError:
        pass
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        return
    except ImportError:
        pass
    import ctypes

    for path in glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "libscipy_openblas*.so*")):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn(1)
                break


def _square_args(n_full: int, n_quick: int):
    def make(quick):
        _pin_blas_threads()
        rng = np.random.default_rng(20240601)
        n = n_quick if quick else n_full
        return rng.standard_normal((n, n)), rng.standard_normal((n, n))

    return make


def torch_versions() -> dict:
    import torch

    def matmul_t(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b

    return {"matmul_256": matmul_t, "matmul_512": matmul_t}


def jax_versions() -> dict:
    def matmul_j(a, b):
        return a @ b

    return {"matmul_256": matmul_j, "matmul_512": matmul_j}


# quick: n / 10**(1/3) (a tenth of the multiply-adds), rounded
KERNELS = [
    Kernel(
        "matmul_256",
        "`a @ b` on square float64 matrices: BLAS dgemm on one thread",
        _square_args(256, 120),
        lambda q: f"{120 if q else 256}x{120 if q else 256} float64",
        matmul,
        eager={"numpy": matmul},
        numba=matmul,
        check=allclose(rtol=1e-10, atol=1e-10),
    ),
    Kernel(
        "matmul_512",
        "`a @ b` on square float64 matrices: BLAS dgemm on one thread",
        _square_args(512, 240),
        lambda q: f"{240 if q else 512}x{240 if q else 512} float64",
        matmul,
        eager={"numpy": matmul},
        numba=matmul,
        check=allclose(rtol=1e-10, atol=1e-10),
    ),
]
