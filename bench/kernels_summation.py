"""Summation rows: ``np.sum`` of big float64/float32 arrays (memory bandwidth of NumPy's pairwise summation,
which scriptc reproduces bit for bit) and a fused ``np.sum(np.exp(x) * y)`` (no temporary array).

numba, torch and jax sum in other orders, so results are checked to a tolerance here; tests/cpu/test_summation.py
holds scriptc to NumPy's bits.
"""

import numpy as np

from .kernels import Kernel, allclose


def sum_all(x: np.ndarray) -> float:
    return np.sum(x)


def exp_dot(x: np.ndarray, y: np.ndarray) -> float:
    return np.sum(np.exp(x) * y)


def _rng():
    return np.random.default_rng(20240601)


def _sum_args(dtype):
    def make(quick):
        return (_rng().standard_normal(1_000_000 if quick else 10_000_000).astype(dtype),)

    return make


def _exp_dot_args(quick):
    rng = _rng()
    n = 100_000 if quick else 1_000_000
    return (rng.standard_normal(n), rng.standard_normal(n))


def _size(what):
    return lambda q: f"{'1e6' if q else '1e7'} {what}"


KERNELS = [
    Kernel(
        "sum_f64",
        "`np.sum(x)`: NumPy's pairwise summation (bit for bit in scriptc), memory bandwidth",
        _sum_args(np.float64),
        _size("float64"),
        sum_all,
        eager={"numpy": sum_all},
        numba=sum_all,
        check=allclose(rtol=1e-9, atol=1e-9),
    ),
    Kernel(
        "sum_f32",
        "`np.sum(x)` of float32: pairwise float32 partial sums, memory bandwidth",
        _sum_args(np.float32),
        _size("float32"),
        sum_all,
        eager={"numpy": sum_all},
        numba=sum_all,
        check=allclose(rtol=1e-3, atol=1e-2),
    ),
    Kernel(
        "exp_dot",
        "`np.sum(np.exp(x) * y)`: a fused reduction, no temporary",
        _exp_dot_args,
        lambda q: f"{'1e5' if q else '1e6'} float64",
        exp_dot,
        eager={"numpy": exp_dot},
        numba=exp_dot,
        check=allclose(rtol=1e-9, atol=1e-9),
    ),
]


def torch_versions() -> dict:
    import torch

    def sum_t(x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x)

    def exp_dot_t(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.sum(torch.exp(x) * y)

    return {"sum_f64": sum_t, "sum_f32": sum_t, "exp_dot": exp_dot_t}


def jax_versions() -> dict:
    import jax.numpy as jnp

    def sum_j(x):
        return jnp.sum(x)

    def exp_dot_j(x, y):
        return jnp.sum(jnp.exp(x) * y)

    return {"sum_f64": sum_j, "sum_f32": sum_j, "exp_dot": exp_dot_j}
