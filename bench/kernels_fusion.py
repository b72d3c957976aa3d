"""Wider fusion (issue 7, points 5 and 6): the time loop fused into one pass over the elements, and sibling
reductions of one producer sharing one loop.

- ``add_loop_huge``: ``x = x + 1.0`` ten times on 64M float64 (512 MB, far beyond the cache): a fused time
  loop reads and writes the array once, so it should take about as long as copying it once — compare with
  ``copy_huge`` (``np.copy`` of the same array), measured in the same run.
- ``affine_loop``: ``x = x * a + 1.0`` and ``y = y - 0.5 * x`` (two carried arrays) on 1M elements, 100 steps.
- ``gd_epoch``: vectorized full-batch gradient descent, ``err = a*x + b - y; ga = np.mean(err * x);
  gb = np.mean(err)``, 1,000 points, 10,000 epochs; numba runs the same source.

The seed loops themselves (``add_loop_small``, 2x3 x 1000, and ``add_loop_large``, 1M x 100) are rows of
``kernels.py``.
"""

import numpy as np

from .kernels import Kernel, add_loop, allclose


def copy_array(x: np.ndarray) -> np.ndarray:
    return np.copy(x)


def affine_loop(x: np.ndarray, y: np.ndarray, n: int, a: float) -> np.ndarray:
    for _ in range(n):
        x = x * a + 1.0
        y = y - 0.5 * x
    return x + y


def gd_epoch(x: np.ndarray, y: np.ndarray, epochs: int, lr: float) -> tuple[float, float]:
    a = 0.0
    b = 0.0
    for _ in range(epochs):
        err = a * x + b - y
        ga = np.mean(err * x)
        gb = np.mean(err)
        a -= lr * 2.0 * ga
        b -= lr * 2.0 * gb
    return a, b


def _rng():
    return np.random.default_rng(20240607)


_HUGE = 64 * 2**20


def _huge(quick):
    return _rng().random(_HUGE // 10 if quick else _HUGE)


def _affine_args(quick):
    rng = _rng()
    n = 100_000 if quick else 1_000_000
    return (rng.random(n), rng.random(n), 10 if quick else 100, 0.999)


def _gd_args(quick):
    n, epochs = (100, 1000) if quick else (1000, 10_000)
    rng = _rng()
    x = rng.random(n)
    return (x, 3.0 * x - 2.0 + 0.1 * rng.standard_normal(n), epochs, 0.1)


KERNELS = [
    Kernel(
        "add_loop_huge",
        "`x = x + 1.0` 10 times on 64M float64 (512 MB): the fused time loop is one pass",
        lambda q: (_huge(q), 10),
        lambda q: f"{'6.4M' if q else '64M'} float64, 10 iterations",
        add_loop,
        eager={"numpy": add_loop},
        numba=add_loop,
        check=allclose(rtol=0, atol=0),
    ),
    Kernel(
        "copy_huge",
        "`np.copy` of the same 64M float64: the bound for add_loop_huge",
        lambda q: (_huge(q),),
        lambda q: f"{'6.4M' if q else '64M'} float64",
        copy_array,
        eager={"numpy": copy_array},
        numba=copy_array,
        check=allclose(rtol=0, atol=0),
    ),
    # peers within 1e-12: XLA contracts a*x + 1 into an FMA (scriptc is bit-exact: the unit tests check that)
    Kernel(
        "affine_loop",
        "two carried arrays updated element-wise 100 times: one fused time loop",
        _affine_args,
        lambda q: f"{'1e5' if q else '1e6'} float64 x 2, {10 if q else 100} iterations",
        affine_loop,
        eager={"numpy": affine_loop},
        numba=affine_loop,
        check=allclose(rtol=1e-12, atol=1e-12),
    ),
    Kernel(
        "gd_epoch",
        "vectorized gradient-descent epochs: two means of one producer in one loop",
        _gd_args,
        lambda q: f"{100 if q else 1000} points, {1000 if q else 10_000} epochs",
        gd_epoch,
        eager={"numpy": gd_epoch},
        numba=gd_epoch,
        check=allclose(rtol=1e-9, atol=1e-12),
    ),
]


def torch_versions() -> dict:
    import torch

    def add_loop_t(x: torch.Tensor, n: int) -> torch.Tensor:
        for _ in range(n):
            x = x + 1.0
        return x

    def copy_t(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    def affine_t(x: torch.Tensor, y: torch.Tensor, n: int, a: float) -> torch.Tensor:
        for _ in range(n):
            x = x * a + 1.0
            y = y - 0.5 * x
        return x + y

    def gd_t(x: torch.Tensor, y: torch.Tensor, epochs: int, lr: float):
        a = torch.zeros((), dtype=torch.float64)
        b = torch.zeros((), dtype=torch.float64)
        for _ in range(epochs):
            err = a * x + b - y
            a = a - lr * 2.0 * torch.mean(err * x)
            b = b - lr * 2.0 * torch.mean(err)
        return a, b

    return {"add_loop_huge": add_loop_t, "copy_huge": copy_t, "affine_loop": affine_t, "gd_epoch": gd_t}


def jax_versions() -> dict:
    import jax.numpy as jnp
    from jax import lax

    def add_loop_j(x, n):
        return lax.fori_loop(0, n, lambda _, v: v + 1.0, x)

    def copy_j(x):
        return jnp.copy(x)

    def affine_j(x, y, n, a):
        def step(_, xy):
            x1 = xy[0] * a + 1.0
            return x1, xy[1] - 0.5 * x1

        x, y = lax.fori_loop(0, n, step, (x, y))
        return x + y

    def gd_j(x, y, epochs, lr):
        def epoch(_, ab):
            a, b = ab
            err = a * x + b - y
            return a - lr * 2.0 * jnp.mean(err * x), b - lr * 2.0 * jnp.mean(err)

        zero = jnp.zeros((), dtype=x.dtype)
        return lax.fori_loop(0, epochs, epoch, (zero, zero))

    return {"add_loop_huge": add_loop_j, "copy_huge": copy_j, "affine_loop": affine_j, "gd_epoch": gd_j}
