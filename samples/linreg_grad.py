"""Linear regression by gradient descent, as in article 001 (JAX vs PyTorch): ``y = a * x + b`` fitted to noisy
points by 10,000 steps of full-batch gradient descent on the mean squared error.

The gradient comes from ``scriptc.grad`` and is called inside a compiled training loop (the role of
``jax.lax.fori_loop`` in the article), so the whole run is one native function; the same loop with the
derivative written by hand runs next to it, and so does a Python loop calling a compiled step (the article's
``jax.jit``-per-step version).

    python samples/linreg_grad.py [points] [epochs]
"""

from __future__ import annotations

import sys
import time
from typing import NamedTuple

import numpy as np

import scriptc


class Params(NamedTuple):
    a: float
    b: float


@scriptc.script
def model(p: Params, x: np.ndarray) -> np.ndarray:
    return p.a * x + p.b


@scriptc.script
def loss(p: Params, x: np.ndarray, y: np.ndarray) -> float:
    return np.mean((model(p, x) - y) ** 2)


grad_loss = scriptc.grad(loss)


@scriptc.script
def update(p: Params, g: Params, lr: float) -> Params:
    return Params(p.a - lr * g.a, p.b - lr * g.b)


@scriptc.script
def step(p: Params, x: np.ndarray, y: np.ndarray, lr: float) -> Params:
    return update(p, grad_loss(p, x, y), lr)


@scriptc.script
def train(p: Params, x: np.ndarray, y: np.ndarray, lr: float, epochs: int) -> Params:
    for _ in range(epochs):
        p = update(p, grad_loss(p, x, y), lr)
    return p


@scriptc.script
def train_by_hand(a: float, b: float, x: np.ndarray, y: np.ndarray, lr: float, epochs: int) -> tuple[float, float]:
    for _ in range(epochs):
        err = a * x + b - y
        ga = 2.0 * np.mean(err * x)
        gb = 2.0 * np.mean(err)
        a = a - lr * ga
        b = b - lr * gb
    return a, b


def create_dataset(a: float, b: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random(n)
    return x, a * x + b + 0.5 * rng.standard_normal(n)


def timed(fn, *args):
    fn(*args)  # compile (and warm up) first
    scriptc.wait_optimized()  # the first call ran the quick tier's code: time the optimized code
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def main(n: int = 1000, epochs: int = 10_000) -> None:
    x, y = create_dataset(3.0, 2.0, n, seed=0)
    lr = 1e-2
    p, t_grad = timed(train, Params(1.0, 0.0), x, y, lr, epochs)
    (a, b), t_hand = timed(train_by_hand, 1.0, 0.0, x, y, lr, epochs)

    def python_loop(p):
        for _ in range(epochs):
            p = step(p, x, y, lr)
        return p

    q, t_loop = timed(python_loop, Params(1.0, 0.0))
    print(f"{n} points, {epochs} epochs, lr {lr}; true line y = 3.000 * x + 2.000")
    print(f"  scriptc.grad in a compiled loop   a = {p.a:.3f}  b = {p.b:.3f}   {t_grad * 1e3:8.1f} ms")
    print(f"  derivative written by hand        a = {a:.3f}  b = {b:.3f}   {t_hand * 1e3:8.1f} ms")
    print(f"  Python loop over a compiled step  a = {q.a:.3f}  b = {q.b:.3f}   {t_loop * 1e3:8.1f} ms")


if __name__ == "__main__":
    main(*(int(v) for v in sys.argv[1:3]))
