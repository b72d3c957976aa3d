"""Function transforms (issue 10), the seed articles' workloads: scriptc.grad against jax.jit(grad), torch.func
(functorch) and torch eager autograd, single-threaded.

- ``grad_loss``: the gradient of article 001's loss (mean squared error of ``a * x + b``) with respect to
  ``(a, b)``, 1,000 points, one call.
- ``gd_train``: article 001's training run, 10,000 epochs of full-batch gradient descent with the gradient taken
  inside the loop: scriptc compiles the loop with ``grad`` in it, jax runs ``lax.fori_loop`` (the article's
  fastest), torch runs the article's eager loop (``loss.backward()`` and an update).
- ``per_sample_grads``: article 000's per-sample gradients of a linear model's loss, ``vmap(grad(loss),
  in_axes=(None, 0, 0))`` over 1,000 examples of 64 features (torch.func.vmap for torch).
- ``mlp_epoch``: one epoch of article 002's digits MLP (1,437 images, batches of 32, value_and_grad and Adam in
  one compiled step called from a Python loop, as the article runs ``jax.jit``'s step); torch runs the same
  functional step through torch.func eagerly.

Torch versions here run eagerly (``TORCH_EAGER``): torch.func and autograd are not TorchScript. The MLP epoch
is a Python loop over a compiled step for every implementation (``JAX_DRIVERS``: jax.jit applies to the step).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from .kernels import Kernel, allclose

_SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "samples")
TORCH_EAGER = {"grad_loss", "gd_train", "per_sample_grads", "mlp_epoch"}
JAX_DRIVERS = {"mlp_epoch"}  # a Python loop over a jitted step, as article 002 runs it


def _rng():
    return np.random.default_rng(20261123)


def _scripted():
    """scriptc versions, built on first use (the runner times the first call, compile included)."""
    import scriptc

    @scriptc.script
    def loss(a: float, b: float, x: np.ndarray, y: np.ndarray) -> float:
        return np.mean((a * x + b - y) ** 2)

    grad_ab = scriptc.grad(loss, argnums=(0, 1))

    @scriptc.script
    def train(x: np.ndarray, y: np.ndarray, epochs: int, lr: float) -> tuple[float, float]:
        a = 1.0
        b = 0.0
        for _ in range(epochs):
            ga, gb = grad_ab(a, b, x, y)
            a -= lr * ga
            b -= lr * gb
        return a, b

    @scriptc.script
    def example_loss(w: np.ndarray, example: np.ndarray, target: float) -> float:
        return (np.dot(example, w) - target) ** 2

    return loss, grad_ab, train, example_loss


_CACHE: dict = {}


def _get(name):
    if not _CACHE:
        loss, grad_ab, train, example_loss = _scripted()
        _CACHE.update(grad=grad_ab, train=train, example_loss=example_loss)
    return _CACHE[name]


def grad_loss(a, b, x, y):
    return _get("grad")(a, b, x, y)


def gd_train(x, y, epochs, lr):
    return _get("train")(x, y, epochs, lr)


def per_sample_grads(w, xs, ys):
    if "per_sample" not in _CACHE:
        import scriptc

        _CACHE["per_sample"] = scriptc.vmap(scriptc.grad(_get("example_loss")), in_axes=(None, 0, 0))
    return _CACHE["per_sample"](w, xs, ys)


def _mlp():
    if _SAMPLES not in sys.path:
        sys.path.insert(0, _SAMPLES)
    import mlp_digits

    return mlp_digits


def mlp_epoch(state, x, onehot, batch):
    step = _mlp().train_step
    total = 0.0
    for k in range(len(x) // batch):
        state, value = step(state, x[k * batch : (k + 1) * batch], onehot[k * batch : (k + 1) * batch], 1e-3)
        total += value
    return total


# Python drivers of compiled code: the runner calls them as they are instead of scripting them
grad_loss.driver = gd_train.driver = per_sample_grads.driver = mlp_epoch.driver = True


def _numpy_grad(a, b, x, y):
    err = a * x + b - y
    return 2.0 * np.mean(err * x), 2.0 * np.mean(err)


def _numpy_train(x, y, epochs, lr):
    a, b = 1.0, 0.0
    for _ in range(epochs):
        ga, gb = _numpy_grad(a, b, x, y)
        a, b = a - lr * ga, b - lr * gb
    return a, b


def _numpy_per_sample(w, xs, ys):
    return 2.0 * (xs @ w - ys)[:, None] * xs


def _linreg_data(n):
    rng = _rng()
    x = rng.random(n)
    return x, 3.0 * x + 2.0 + 0.5 * rng.standard_normal(n)


def _grad_args(quick):
    return (1.0, 0.0) + _linreg_data(100 if quick else 1000)


def _train_args(quick):
    return _linreg_data(100 if quick else 1000) + ((1000 if quick else 10_000), 1e-2)


def _per_sample_args(quick):
    rng = _rng()
    n = 100 if quick else 1000
    return rng.standard_normal(64), rng.standard_normal((n, 64)), rng.standard_normal(n)


def _mlp_args(quick):
    mlp = _mlp()
    import scriptc

    x_train, y_train, _, _ = mlp.digits(n=300 if quick else None)
    state = mlp.init_state(scriptc.random.key(0), [64, 128, 256, 10])
    return state, x_train, np.eye(10)[y_train], 32


def _mlp_numpy(state, x, onehot, batch):
    """The reference: the same step through the reference interpreter (NumPy); the sum of the epoch's losses."""
    step = _mlp().train_step.interpret
    total = 0.0
    for k in range(len(x) // batch):
        state, value = step(state, x[k * batch : (k + 1) * batch], onehot[k * batch : (k + 1) * batch], 1e-3)
        total += value
    return total


KERNELS = [
    Kernel(
        "grad_loss",
        "gradient of 001's mean squared error w.r.t. (a, b), one call",
        _grad_args,
        lambda q: f"{100 if q else 1000} points",
        grad_loss,
        eager={"numpy": _numpy_grad},
        check=allclose(rtol=1e-12, atol=1e-12),
    ),
    Kernel(
        "gd_train",
        "001's training run: grad inside a compiled 10,000-epoch loop",
        _train_args,
        lambda q: f"{100 if q else 1000} points, {1000 if q else 10_000} epochs",
        gd_train,
        eager={"numpy": _numpy_train},
        check=allclose(rtol=1e-9, atol=1e-12),
    ),
    Kernel(
        "per_sample_grads",
        "000's per-sample gradients: vmap(grad(loss), in_axes=(None, 0, 0))",
        _per_sample_args,
        lambda q: f"{100 if q else 1000} examples x 64",
        per_sample_grads,
        eager={"numpy": _numpy_per_sample},
        check=allclose(rtol=1e-10, atol=1e-12),
    ),
    Kernel(
        "mlp_epoch",
        "one epoch of 002's digits MLP: value_and_grad + Adam per batch of 32",
        _mlp_args,
        lambda q: f"{240 if q else 1437} images",
        mlp_epoch,
        eager={"numpy": _mlp_numpy},
        check=allclose(rtol=1e-6, atol=1e-9),
    ),
]


def jax_versions() -> dict:
    import jax
    import jax.numpy as jnp
    from jax import lax

    def loss(a, b, x, y):
        return jnp.mean((a * x + b - y) ** 2)

    grad_ab = jax.grad(loss, argnums=(0, 1))

    def train(x, y, epochs, lr):
        def epoch(_, ab):
            ga, gb = grad_ab(ab[0], ab[1], x, y)
            return ab[0] - lr * ga, ab[1] - lr * gb

        one, zero = jnp.ones((), x.dtype), jnp.zeros((), x.dtype)
        return lax.fori_loop(0, epochs, epoch, (one, zero))

    def example_loss(w, example, target):
        return (jnp.dot(example, w) - target) ** 2

    def per_sample(w, xs, ys):
        return jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(w, xs, ys)

    step = jax.jit(_jax_mlp_step(jax, jnp))

    def mlp(state, x, onehot, batch):  # a Python loop over a jitted step, as article 002 runs it
        t, p, m, v = 0, _params_tree(state.params), *[_params_tree(q) for q in (state.m, state.v)]
        total = 0.0
        for k in range(len(x) // batch):
            (t, p, m, v), value = step(
                (t, p, m, v), x[k * batch : (k + 1) * batch], onehot[k * batch : (k + 1) * batch]
            )
            total += value
        return total

    return {"grad_loss": grad_ab, "gd_train": train, "per_sample_grads": per_sample, "mlp_epoch": mlp}


def _params_tree(p):
    return [(layer.w, layer.b) for layer in p]


def _jax_mlp_step(jax, jnp):
    def logp(p, x):
        h = jnp.maximum(x @ p[0][0] + p[0][1], 0.0)
        h = jnp.maximum(h @ p[1][0] + p[1][1], 0.0)
        logits = h @ p[2][0] + p[2][1]
        s = logits - jnp.max(logits, axis=1, keepdims=True)
        return s - jnp.log(jnp.sum(jnp.exp(s), axis=1, keepdims=True))

    def loss(p, x, onehot):
        return -jnp.mean(jnp.sum(logp(p, x) * onehot, axis=1))

    def step(state, x, onehot):
        t, p, m, v = state
        value, g = jax.value_and_grad(loss)(p, x, onehot)
        t = t + 1
        tree = jax.tree_util.tree_map
        m = tree(lambda m, g: 0.9 * m + 0.1 * g, m, g)
        v = tree(lambda v, g: 0.999 * v + 0.001 * (g * g), v, g)
        p = tree(lambda p, m, v: p - 1e-3 * (m / (1.0 - 0.9**t)) / (jnp.sqrt(v / (1.0 - 0.999**t)) + 1e-8), p, m, v)
        return (t, p, m, v), value

    return step


def torch_versions() -> dict:
    import torch
    from torch.func import grad, vmap

    def loss(a, b, x, y):
        return torch.mean((a * x + b - y) ** 2)

    def grad_ab(a, b, x, y):  # functorch, as article 000 uses it
        return grad(loss, argnums=(0, 1))(torch.tensor(a, dtype=x.dtype), torch.tensor(b, dtype=x.dtype), x, y)

    def train(x, y, epochs, lr):  # article 001's PyTorch loop: backward() and an update
        a = torch.tensor(1.0, dtype=x.dtype, requires_grad=True)
        b = torch.tensor(0.0, dtype=x.dtype, requires_grad=True)
        for _ in range(epochs):
            a.grad = b.grad = None
            loss(a, b, x, y).backward()
            with torch.no_grad():
                a -= lr * a.grad
                b -= lr * b.grad
        return a.detach(), b.detach()

    def example_loss(w, example, target):
        return (torch.dot(example, w) - target) ** 2

    def per_sample(w, xs, ys):
        return vmap(grad(example_loss), in_dims=(None, 0, 0))(w, xs, ys)

    def logp(p, x):
        h = torch.relu(x @ p[0][0] + p[0][1])
        h = torch.relu(h @ p[1][0] + p[1][1])
        return torch.log_softmax(h @ p[2][0] + p[2][1], dim=1)

    def mlp_loss(p, x, onehot):
        return -torch.mean(torch.sum(logp(p, x) * onehot, dim=1))

    def mlp(state, x, onehot, batch):
        p = [[torch.as_tensor(a) for a in layer] for layer in _params_tree(state.params)]
        m = [[torch.zeros_like(a) for a in layer] for layer in p]
        v = [[torch.zeros_like(a) for a in layer] for layer in p]
        total = 0.0
        for k in range(len(x) // batch):
            xs, oh = x[k * batch : (k + 1) * batch], onehot[k * batch : (k + 1) * batch]
            value, g = torch.func.grad_and_value(mlp_loss)(p, xs, oh)[::-1]
            t = k + 1
            for i in range(3):
                for j in range(2):
                    m[i][j] = 0.9 * m[i][j] + 0.1 * g[i][j]
                    v[i][j] = 0.999 * v[i][j] + 0.001 * (g[i][j] * g[i][j])
                    p[i][j] = p[i][j] - 1e-3 * (m[i][j] / (1.0 - 0.9**t)) / (
                        torch.sqrt(v[i][j] / (1.0 - 0.999**t)) + 1e-8
                    )
            total += float(value)
        return total

    return {"grad_loss": grad_ab, "gd_train": train, "per_sample_grads": per_sample, "mlp_epoch": mlp}
