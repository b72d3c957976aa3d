"""Article 000 (functorch, JAX-like function transforms in PyTorch), with scriptc: ``grad`` and its ``argnums``,
``vmap`` of a linear model over examples, per-sample gradients with ``vmap(grad(loss), in_axes=(None, 0, 0))``,
and nested ``vmap``. Every transformed function is compiled like a scripted one; each result is checked here
against the same computation written as a Python loop.

    python samples/functorch_basics.py
"""

from __future__ import annotations

import math

import numpy as np

import scriptc


@scriptc.script
def sin(x: float) -> float:
    return math.sin(x)


@scriptc.script
def f(x: float, y: float) -> float:
    return x * y**2 + math.exp(x)


@scriptc.script
def model(weights: np.ndarray, feature_vec: np.ndarray) -> float:
    return max(np.dot(feature_vec, weights), 0.0)  # a linear layer and ReLU, for one example


@scriptc.script
def compute_loss(weights: np.ndarray, example: np.ndarray, target: float) -> float:
    y = model(weights, example)
    return (y - target) ** 2  # the squared error of one example


@scriptc.script
def distance(a: np.ndarray, b: np.ndarray) -> float:
    return math.sqrt(np.sum((a - b) ** 2))


def main() -> None:
    rng = np.random.default_rng(0)

    # grad: the derivative of sin is cos
    x = float(rng.standard_normal())
    print(f"grad(sin)({x:.4f}) = {scriptc.grad(sin)(x):.6f}   cos(x) = {math.cos(x):.6f}")

    # argnums: partial derivatives of f(x, y) = x y^2 + e^x
    dx, dy = scriptc.grad(f, argnums=(0, 1))(1.5, 2.0)
    print(f"df/dx = {dx:.6f} (y^2 + e^x = {2.0**2 + math.exp(1.5):.6f}),  df/dy = {dy:.6f} (2xy = {6.0:.6f})")

    # vmap: the model over a batch of examples, without writing the loop
    batch_size, feature_size = 3, 5
    weights = rng.standard_normal(feature_size)
    examples = rng.standard_normal((batch_size, feature_size))
    batched = scriptc.vmap(model, in_axes=(None, 0))(weights, examples)
    looped = np.array([model(weights, e) for e in examples])
    print("vmap(model):", np.round(batched, 4), " same as the loop:", np.array_equal(batched, looped))

    # per-sample gradients: vmap of grad, the weights shared (None), examples and targets mapped (0)
    targets = rng.standard_normal(batch_size)
    per_sample = scriptc.vmap(scriptc.grad(compute_loss), in_axes=(None, 0, 0))(weights, examples, targets)
    looped = np.stack([scriptc.grad(compute_loss)(weights, e, t) for e, t in zip(examples, targets)])
    print(
        "per-sample gradients, shape",
        per_sample.shape,
        " same as the loop:",
        np.allclose(per_sample, looped, rtol=1e-14, atol=0),
    )

    # nested vmap: every pair of points, a matrix of distances
    points = rng.standard_normal((4, 2))
    pairwise = scriptc.vmap(scriptc.vmap(distance, in_axes=(None, 0)), in_axes=(0, None))(points, points)
    looped = np.array([[distance(p, q) for q in points] for p in points])
    print(
        "nested vmap: pairwise distances",
        pairwise.shape,
        " same as the loops:",
        np.allclose(pairwise, looped, rtol=1e-15, atol=0),
    )


if __name__ == "__main__":
    main()
