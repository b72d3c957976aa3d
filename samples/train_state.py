"""Article 003 (jax/flax's design against object orientation): state lives outside the model. The random state
is a key passed in and split explicitly, never a hidden generator; the training state is a NamedTuple that each
step takes and returns, never an object mutated in place. So a run is a pure function of its seed: running it
twice prints the same numbers, which the sample checks.

A two-layer network fits a noisy sine with dropout on its hidden layer; dropout masks come from keys split off
the state's key at every step, inside the compiled step.

    python samples/train_state.py [steps] [seed]
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np

import scriptc


class Params(NamedTuple):
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray


class TrainState(NamedTuple):
    step: int
    params: Params
    key: np.ndarray  # where this run's randomness comes from next


@scriptc.script
def predict(p: Params, x: np.ndarray, dropout_key: np.ndarray, rate: float) -> np.ndarray:
    h = np.tanh(x @ p.w1 + p.b1)
    if rate > 0.0:  # training: drop hidden units, scaling the kept ones (inverted dropout)
        keep = scriptc.random.bernoulli(dropout_key, 1.0 - rate, (h.shape[0], h.shape[1]))
        h = np.where(keep, h / (1.0 - rate), 0.0)
    return h @ p.w2 + p.b2


@scriptc.script
def loss(p: Params, x: np.ndarray, y: np.ndarray, dropout_key: np.ndarray, rate: float) -> float:
    return np.mean((predict(p, x, dropout_key, rate) - y) ** 2)


@scriptc.script
def sgd(p: Params, g: Params, lr: float) -> Params:
    return Params(p.w1 - lr * g.w1, p.b1 - lr * g.b1, p.w2 - lr * g.w2, p.b2 - lr * g.b2)


@scriptc.script
def train_step(s: TrainState, x: np.ndarray, y: np.ndarray, lr: float, rate: float) -> tuple[TrainState, float]:
    keys = scriptc.random.split(s.key)  # one key to carry on, one for this step's dropout
    value, g = scriptc.value_and_grad(loss)(s.params, x, y, keys[1], rate)
    return TrainState(s.step + 1, sgd(s.params, g, lr), keys[0]), value


@scriptc.script
def init(key: np.ndarray, hidden: int) -> TrainState:
    keys = scriptc.random.split(key, 3)
    params = Params(
        scriptc.random.normal(keys[0], (1, hidden)),
        np.zeros(hidden),
        scriptc.random.normal(keys[1], (hidden, 1)) / np.sqrt(hidden),
        np.zeros(1),
    )
    return TrainState(0, params, keys[2])


def dataset(key: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    k1, k2 = scriptc.random.split(key)
    x = scriptc.random.uniform(k1, (n, 1), minval=-2.0, maxval=2.0)
    return x, np.sin(3.0 * x) + 0.1 * scriptc.random.normal(k2, (n, 1))


def run(seed: int, steps: int, report_every: int) -> list[str]:
    """Train from ``seed``; the lines printed (also returned, to compare runs)."""
    data_key, init_key = scriptc.random.split(scriptc.random.key(seed))
    x, y = dataset(data_key, 256)
    state = init(init_key, 32)
    lines = []
    for _ in range(steps):
        state, value = train_step(state, x, y, 0.05, 0.1)
        if state.step % report_every == 0:
            test = loss(state.params, x, y, state.key, 0.0)  # no dropout when evaluating
            lines.append(f"step {state.step:5d}  train loss {value:.6f}  loss without dropout {test:.6f}")
            print(lines[-1])
    lines.append(f"final key {state.key.tolist()}  w2 checksum {float(np.sum(state.params.w2)):.12f}")
    print(lines[-1])
    return lines


def main(steps: int = 2000, seed: int = 0) -> None:
    print(f"seed {seed}, first run:")
    first = run(seed, steps, max(steps // 5, 1))
    print(f"seed {seed}, second run:")
    second = run(seed, steps, max(steps // 5, 1))
    print("the two runs printed the same numbers:", first == second)


if __name__ == "__main__":
    main(*(int(v) for v in sys.argv[1:3]))
